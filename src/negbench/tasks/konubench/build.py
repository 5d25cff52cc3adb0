"""The Thunder-KoNUBench side of ``negbench build mcq --lang ko``: the release layout of the
official repository, the loader's own validation, and its JSON-array files (the stages and
sheets are :mod:`negbench.builders.mcq`'s; its prompts are in ``build_prompts.py``)."""

from __future__ import annotations

from pathlib import Path

from negbench.scoring.construction import McqLanguage
from negbench.tasks.konubench.build_prompts import PROMPTS
from negbench.files import write_json


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
    prompts=PROMPTS,
    local_types=("관형절", "부사절", "명사절", "인용절", "종속절", "대등절 일부"),
    # no length filter stated; two-sentence units merged (§4.2)
    min_words=0,
    merge=True,
)
