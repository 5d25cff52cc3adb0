"""``python -m negbench.cli`` is ``negbench``."""

import sys

from negbench.cli import main

sys.exit(main())
