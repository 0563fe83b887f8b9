"""The stand-in's Capture-side modules import Capture's ``plugin`` module, which only the stand-in
puts on ``sys.path`` (tests/pupil_standin/__init__.py): never collected on their own."""

collect_ignore = ["network_api.py"]
