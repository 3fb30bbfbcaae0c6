"""``python -m httpbench``: the same command line as ``httpbench``."""

import sys

from httpbench.cli.main import main

sys.exit(main())
