"""``python -m solvers``: see ``solvers.cli``."""

import sys

from solvers.cli import main

sys.exit(main())
