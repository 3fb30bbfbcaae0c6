"""``python -m httpbench``: the same command line as ``httpbench``."""

import sys

from httpbench.cli import main

sys.exit(main())
