"""``python -m streamdp.cli``: the ``streamdp`` command."""

import sys

from . import main

sys.exit(main())
