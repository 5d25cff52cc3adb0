"""The Thunder-NUBench side of ``negbench build mcq --lang en``: where the release goes and the
loader's own validation of it (the stages and sheets are :mod:`negbench.builders.mcq`'s)."""

from __future__ import annotations

from pathlib import Path

from negbench.builders.mcq import McqLanguage
from negbench.evaluation.store import write_jsonl


def release_path(out: Path, split: str) -> tuple[Path, Path]:
    root = out / "nubench"
    return root / f"{split}.jsonl", root


def check_release(records: list[dict], split: str, path: str) -> None:
    from negbench.tasks.nubench.tasks import docs_from_objects

    docs_from_objects(records, split, path)


def write_release(path: Path, records: list[dict]) -> None:
    write_jsonl(path, records)


LANGUAGE = McqLanguage(
    "en",
    "nubench",
    "NEGBENCH_NUBENCH",
    ("demonstration", "test"),
    release_path,
    check_release,
    write_release,
)
