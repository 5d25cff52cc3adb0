"""The Thunder-KoNUBench side of ``negbench build mcq --lang ko``: the release layout of the
official repository, the loader's own validation, and its JSON-array files (the stages and
sheets are :mod:`negbench.builders.mcq`'s)."""
from __future__ import annotations

import json
from pathlib import Path

from negbench.builders.mcq import McqLanguage
from negbench.evaluation.store import atomic_write_text


def release_path(out: Path, split: str) -> tuple[Path, Path]:
    from negbench.tasks.konubench.tasks import SPLIT_FILES
    sub, name = SPLIT_FILES[split]
    root = out / "konubench"
    return root / "dataset" / "Thunder_KoNUBench" / sub / name, root


def check_release(records: list[dict], split: str, path: str) -> None:
    from negbench.tasks.konubench.tasks import make_docs, parse_record
    make_docs([parse_record(r, path, str(i)) for i, r in enumerate(records)], path)


def write_release(path: Path, records: list[dict]) -> None:
    atomic_write_text(path, json.dumps(records, ensure_ascii=False, indent=1) + "\n")


LANGUAGE = McqLanguage("ko", "konubench", "NEGBENCH_KONUBENCH", ("train", "validation", "test"),
                       release_path, check_release, write_release)
