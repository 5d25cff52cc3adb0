"""``python -m negbench``: the same command line as the ``negbench`` script."""

from negbench.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
