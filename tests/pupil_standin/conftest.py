"""The stand-in's Capture-side modules import Capture's ``plugin`` module, which only the stand-in
puts on ``sys.path`` (tests/pupil_standin/__init__.py): never collected on their own. (The
nearest conftest's ``collect_ignore`` is the one pytest reads: recorder.py is listed here too.)"""

collect_ignore = ["network_api.py", "recorder.py"]
