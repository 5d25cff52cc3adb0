"""The README and docs/ are for someone who has only the repository (issue 27): no paths into the
developers' shared folder, every install command with the lock, no change-log phrasing, and
every docs/ file the README and other docs link to exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "src" / "negbench").rglob("*.md")),
]


def lines():
    for p in DOCS:
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            yield p.relative_to(ROOT), n, line


def test_no_paths_into_the_developers_shared_folder():
    bad = [
        (str(p), n, line)
        for p, n, line in lines()
        if re.search(r"\.\./shared|shared/papers|shared/SPEC|SPEC\.md", line)
    ]
    assert not bad, bad


def test_every_pip_install_uses_the_lock():
    bad = [
        (str(p), n, line)
        for p, n, line in lines()
        if re.search(r"\bpip install\b", line)
        and "constraints" not in line
        and "no lock covers it" not in line
    ]
    assert not bad, bad


def test_no_change_log_phrasing():
    bad = [
        (str(p), n, line)
        for p, n, line in lines()
        if re.search(
            r"(?i)before this change|after this change|before / after|\bis now\b|"
            r"\bno longer\b|\bnow turns\b",
            line,
        )
    ]
    assert not bad, bad


def test_linked_docs_exist():
    missing = [
        (str(p), n, ref)
        for p, n, line in lines()
        for ref in re.findall(r"`(docs/[\w./-]+\.md)`", line)
        if not (ROOT / ref).is_file()
    ]
    assert not missing, missing
