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


def test_cited_repository_paths_exist():
    """Paths into the package or the examples that the docs and the example task files name (a
    moved file once left examples/lm_eval pointing at nothing). Not checked: the folder
    adding_a_benchmark.md invents, and other projects' examples/ (LLaMA-Factory's)."""
    ours = {p.name for p in (ROOT / "examples").iterdir()}
    texts = [(p, n, line) for p, n, line in lines()] + [
        (p.relative_to(ROOT), n, line)
        for p in sorted((ROOT / "examples").rglob("*.yaml"))
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
    ]
    missing = [
        (str(p), n, ref)
        for p, n, line in texts
        for ref in re.findall(r"((?:src/negbench|examples)/[\w./-]*\w)", line)
        if "my_benchmark" not in ref
        and (ref.startswith("src/") or ref.split("/")[1] in ours)
        and not (ROOT / ref).exists()
    ]
    assert not missing, missing
