"""Tests against the real Pupil Capture v3.6, run headless in a network namespace of its own.

``python -m tests.real_capture`` installs what Capture needs (``install.sh``), makes the namespace
and runs the tests marked ``real_capture`` inside it; elsewhere they skip with one line.
"""
