"""``python -m streamdp``: the ``streamdp`` command (:func:`streamdp.cli.main`)."""

import sys

from .cli import main

sys.exit(main())
