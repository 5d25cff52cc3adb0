"""What a benchmark declares for ``negbench build mcq``: its construction prompts (:class:`Prompt`,
the papers' method text) and its release (:class:`McqLanguage`).  The build stages in
:mod:`negbench.builders.mcq` read these from the registry (kind ``mcq_language``); each benchmark
folder holds its own (``tasks/nubench/build_prompts.py``, ``tasks/konubench/build_prompts.py``)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping


@dataclass(frozen=True)
class Prompt:
    """One LLM stage's prompt: an optional system message and the user message template."""

    name: str
    source: str  # where it is published
    system: str | None
    user: str  # holds "{sentence}" once

    def render(self, sentence: str) -> str:
        return self.user.replace("{sentence}", sentence)

    @property
    def sha256(self) -> str:
        blob = f"{self.system or ''}\x00{self.user}".encode("utf-8")
        return hashlib.sha256(blob).hexdigest()


@dataclass(frozen=True)
class McqLanguage:
    """What the build needs from the benchmark whose release it writes (registry kind
    ``mcq_language``, registered by the benchmark's home: ``en`` Thunder-NUBench, ``ko``
    Thunder-KoNUBench): the task that loads the release, the variable pointing it there, the
    release's splits, where a split's file goes, the loader's own validation and the writer."""

    code: str
    task: str
    env: str
    splits: tuple[str, ...]
    release_path: Callable[[Path, str], tuple[Path, Path]]  # (out, split) -> (file, task source)
    check_release: Callable[[list[dict], str, str], None]  # (records, split, path)
    write_release: Callable[[Path, list[dict]], None]
    #: the paper's construction prompt of each LLM stage (verbatim; a language without a stage
    #: has no entry: Korean has no conditionals)
    prompts: Mapping[str, Prompt]
    #: the release's local-negation types (the values its loader accepts)
    local_types: tuple[str, ...]
    #: the paper's length filter in words, and whether two-sentence units are merged
    min_words: int
    merge: bool
