"""Network I/O: the Pupil Capture stand-in, the relay, its sanitized sink and subscribers."""
