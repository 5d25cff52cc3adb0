"""The Thunder-KoNUBench side of ``negbench build mcq --lang ko``: the release layout of the
official repository, the loader's own validation, and its JSON-array files (the stages and
sheets are :mod:`negbench.builders.mcq`'s)."""

from __future__ import annotations

from pathlib import Path

from negbench.builders.mcq import McqLanguage
from negbench.evaluation.store import write_json


def release_path(out: Path, split: str) -> tuple[Path, Path]:
    from negbench.tasks.konubench.tasks import SPLIT_FILES

    sub, name = SPLIT_FILES[split]
    root = out / "konubench"
    return root / "dataset" / "Thunder_KoNUBench" / sub / name, root


def check_release(records: list[dict], split: str, path: str) -> None:
    from negbench.tasks.konubench.tasks import make_docs, parse_record

    make_docs([parse_record(r, path, str(i)) for i, r in enumerate(records)], path)


def write_release(path: Path, records: list[dict]) -> None:
    write_json(path, records, indent=1)


LANGUAGE = McqLanguage(
    "ko",
    "konubench",
    "NEGBENCH_KONUBENCH",
    ("train", "validation", "test"),
    release_path,
    check_release,
    write_release,
)
