"""Where the tests find things (tests/ is on pytest's import path, see pyproject.toml)."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
#: the repository root
ROOT = TESTS.parent
#: test data written by us (tests/data)
TEST_DATA = TESTS / "data"
#: the shared folder next to the checkout: the papers and the real releases (tests that need
#: them are skipped when they are not there)
SHARED = ROOT.parent / "shared"
