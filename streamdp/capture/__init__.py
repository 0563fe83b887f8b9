"""What the Pupil Capture plugin (``plugins/streamdp_capture.py``) needs beyond the session core:
the sink that turns releases into Capture ``events`` (:mod:`.events`), the plugin's own sanitized
endpoint (:mod:`.endpoint`), and what it watches in Capture, which notifies none of it: Pupil
Remote's server and Pupil time (:mod:`.watch`). Only numpy, scipy, pyzmq and msgpack, like the
core: ``streamdp install-plugin`` copies these modules into Capture's plugin folder."""
