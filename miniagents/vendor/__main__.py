"""`python -m miniagents.vendor DEST [--as DOTTED.NAME] [--without SHELL ...] [--zip] [--compile]` (see the shell's
docstring), and `--check DEST`."""
import sys

from . import main

sys.exit(main())
