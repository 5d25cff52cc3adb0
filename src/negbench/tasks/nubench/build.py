"""The Thunder-NUBench side of ``negbench build mcq --lang en``: where the release goes and the
loader's own validation of it (the stages and sheets are :mod:`negbench.builders.mcq`'s; its prompts are in ``build_prompts.py``)."""

from __future__ import annotations

from pathlib import Path

from negbench.scoring.construction import McqLanguage
from negbench.tasks.nubench.build_prompts import PROMPTS
from negbench.files import write_jsonl


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
    prompts=PROMPTS,
    local_types=("relative_part", "pp_part", "adverb_part", "compound_part"),
    # Listing 3: len(x.split()) >= 30; single sentences (App. K.2)
    min_words=30,
    merge=False,
)
