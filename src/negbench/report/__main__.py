import sys

from negbench.cli.report import main

sys.exit(main())
