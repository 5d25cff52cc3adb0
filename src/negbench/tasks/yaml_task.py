"""A task described in a YAML file: a user's own data, prompt and choices, without code.

``negbench run --tasks my_task.yaml`` (or ``evaluate(tasks=["my_task.yaml"])``) runs it like a
built-in task: the same few-shot draws, formulations, metrics, run folders and cache.  The file::

    task: my-negation                 # the task's name (default: the file's stem)
    summary: true/false statements, half of them negated
    dataset:
      path: statements.jsonl          # a .jsonl / .json / .csv file or a folder of <split>.jsonl
                                      # (relative to this file), or hf:owner/name (a hub dataset)
      name: null                      # the hub dataset's configuration
      splits: {test: test.jsonl, train: train.jsonl}   # instead of path: one file per split
    test_split: test
    fewshot_split: train              # default: the test split (an item is never its own shot)
    id_field: id                      # default: the record's number
    prompt: "Is this statement true or false? {{ sentence }}\\nAnswer:"     # Jinja2, over a record
    choices: ["true", "false"]        # a list, or a record field / template giving a list
    answer: "{{ 'true' if label else 'false' }}"   # a field or template: the gold index or text
    modes: [cloze, letter, next_token, generate]   # the modes it supports (default: cloze)
    default_modes: [cloze]
    metrics: [acc, acc_norm]          # of the metrics the modes compute (default: all of them)
    group_by: [negated]               # also report each metric per value of these fields
    target_delimiter: " "
    fewshot_delimiter: "\\n\\n"
    description: ""                   # text before the few-shot examples
    generation: {stop: ["\\n"], max_tokens: 16}
    shots: [0]
    seeds: [1234]
    language: en

Modes: ``cloze`` — the log-likelihood of each choice after the prompt (``acc``, ``acc_norm``);
``letter`` — the choices listed as A., B., … after the prompt, the log-likelihood of each letter
(``acc``, ``acc_norm``); ``next_token`` — one forward pass, the next-token probability of each
choice's first token (``acc``); ``generate`` — greedy generation, exact match with the gold
choice after normalisation (``exact_match``).  Every record is validated (and every prompt
rendered) before a model loads; an error names the file, the record and the field.
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

from negbench.errors import DataError, TaskError
from negbench.scoring.formulations import ChoiceLoglikelihood, Generation, NextTokenLabels
from negbench.scoring.task import Doc, ModeSpec, Rendered, Task

LETTERS = "ABCDEFGHIJ"
MODES = ("cloze", "letter", "next_token", "generate")
#: the metrics each mode computes
MODE_METRICS = {
    "cloze": ("acc", "acc_norm"),
    "letter": ("acc",),
    "next_token": ("acc",),
    "generate": ("exact_match",),
}
KEYS = (
    "task",
    "summary",
    "dataset",
    "test_split",
    "fewshot_split",
    "id_field",
    "prompt",
    "choices",
    "answer",
    "modes",
    "default_modes",
    "metrics",
    "group_by",
    "target_delimiter",
    "fewshot_delimiter",
    "description",
    "generation",
    "shots",
    "seeds",
    "language",
    "source",
)
DATASET_KEYS = ("path", "name", "splits")
GENERATION_KEYS = ("stop", "max_tokens")


@dataclass(frozen=True)
class Spec:
    """A YAML task file, checked."""

    path: Path
    name: str
    summary: str
    dataset: dict
    test_split: str
    fewshot_split: str | None
    id_field: str | None
    prompt: str
    choices: list[str] | str
    answer: str
    modes: tuple[str, ...]
    default_modes: tuple[str, ...]
    metrics: tuple[str, ...] | None
    group_by: tuple[str, ...]
    target_delimiter: str
    fewshot_delimiter: str
    description: str
    stop: tuple[str, ...]
    max_tokens: int
    shots: tuple[int, ...]
    seeds: tuple[int, ...]
    language: str
    source: str


def load_yaml_task(path: str | os.PathLike) -> Task:
    """The task a YAML file describes (read once per file version)."""
    p = Path(path)
    if not p.is_file():
        raise TaskError(
            f"task file not found: {path}",
            where="--tasks",
            fix="check the path of your YAML task file",
        )
    st = p.stat()
    return _load(str(p.resolve()), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=32)
def _load(path: str, mtime_ns: int, size: int) -> Task:
    return make_task(read_spec(Path(path)))


# -- the file ----------------------------------------------------------------------------------------
def _yaml_error(path: Path, what: str, key: str | None = None, fix: str | None = None) -> TaskError:
    return TaskError(f"{path}: {what}", where=f"{path}" + (f" ({key})" if key else ""), fix=fix)


def _read_yaml(path: Path) -> dict:
    from negbench.errors import require

    yaml = require("yaml")
    from negbench.records import read_text

    try:
        obj = yaml.safe_load(read_text(path))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise _yaml_error(
            path,
            f"not valid YAML{where} ({getattr(exc, 'problem', exc)})",
            fix="check the indentation and the quoting",
        ) from None
    if not isinstance(obj, dict):
        raise _yaml_error(path, "a task file is a mapping of keys (task, dataset, prompt, …)")
    return obj


def _str(obj: dict, key: str, path: Path, default: Any = ..., allow_empty: bool = False) -> Any:
    if key not in obj or obj[key] is None:
        if default is ...:
            raise _yaml_error(path, f"missing key '{key}'", key)
        return default
    v = obj[key]
    if not isinstance(v, str) or (not allow_empty and not v.strip()):
        raise _yaml_error(
            path,
            f"'{key}' must be a {'' if allow_empty else 'non-empty '}string, got {v!r:.60}",
            key,
        )
    return v


def _list(obj: dict, key: str, path: Path, typ: type, default: Sequence) -> tuple:
    v = obj.get(key, None)
    if v is None:
        return tuple(default)
    if isinstance(v, typ) and not isinstance(v, bool):
        v = [v]
    if (
        not isinstance(v, list)
        or not v
        or not all(isinstance(x, typ) and not isinstance(x, bool) for x in v)
    ):
        raise _yaml_error(path, f"'{key}' must be a list of {typ.__name__}s, got {v!r:.60}", key)
    if len(set(v)) < len(v):
        raise _yaml_error(path, f"'{key}' names a value twice: {v}", key)
    return tuple(v)


def read_spec(path: Path) -> Spec:
    obj = _read_yaml(path)
    unknown = [k for k in obj if k not in KEYS]
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], KEYS, n=1)
        raise _yaml_error(
            path,
            f"unknown key '{unknown[0]}'",
            unknown[0],
            fix=(f"did you mean '{close[0]}'? " if close else "") + "keys: " + ", ".join(KEYS),
        )
    ds = obj.get("dataset")
    if isinstance(ds, str):
        ds = {"path": ds}
    if not isinstance(ds, dict) or not (ds.get("path") or ds.get("splits")):
        raise _yaml_error(
            path,
            "'dataset' needs a path (a file, a folder or hf:owner/name) or splits (split: file)",
            "dataset",
        )
    bad = [k for k in ds if k not in DATASET_KEYS]
    if bad:
        raise _yaml_error(
            path,
            f"unknown dataset key '{bad[0]}'",
            "dataset",
            fix="keys: " + ", ".join(DATASET_KEYS),
        )
    if ds.get("splits") is not None and (
        not isinstance(ds["splits"], dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in ds["splits"].items())
    ):
        raise _yaml_error(path, "'dataset.splits' maps split names to files", "dataset.splits")
    modes = _list(obj, "modes", path, str, ("cloze",))
    for m in modes:
        if m not in MODES:
            raise _yaml_error(
                path, f"unknown mode '{m}'", "modes", fix="modes: " + ", ".join(MODES)
            )
    default_modes = _list(obj, "default_modes", path, str, modes[:1])
    for m in default_modes:
        if m not in modes:
            raise _yaml_error(
                path,
                f"default mode '{m}' is not one of the task's modes {list(modes)}",
                "default_modes",
            )
    metrics = obj.get("metrics")
    if metrics is not None:
        metrics = _list(obj, "metrics", path, str, ())
        known = sorted({x for m in modes for x in MODE_METRICS[m]})
        for x in metrics:
            if x not in known:
                raise _yaml_error(
                    path,
                    f"metric '{x}' is not computed by the modes {list(modes)}",
                    "metrics",
                    fix="one of " + ", ".join(known),
                )
        for m in modes:
            if not set(MODE_METRICS[m]) & set(metrics):
                raise _yaml_error(
                    path,
                    f"mode '{m}' computes none of the metrics {list(metrics)}",
                    "metrics",
                    fix=f"add one of {', '.join(MODE_METRICS[m])}",
                )
    gen = obj.get("generation") or {}
    if not isinstance(gen, dict) or any(k not in GENERATION_KEYS for k in gen):
        raise _yaml_error(
            path, "'generation' takes stop (a list of strings) and max_tokens", "generation"
        )
    stop = gen.get("stop", ["\n"])
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop):
        raise _yaml_error(
            path, "'generation.stop' must be a list of non-empty strings", "generation.stop"
        )
    max_tokens = gen.get("max_tokens", 16)
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise _yaml_error(
            path,
            f"'generation.max_tokens' must be a whole number ≥ 1, got {max_tokens!r}",
            "generation.max_tokens",
        )
    choices = obj.get("choices")
    if isinstance(choices, list):
        if (
            len(choices) < 2
            or not all(isinstance(c, str) and c.strip() for c in choices)
            or len(set(choices)) < len(choices)
        ):
            raise _yaml_error(
                path, "'choices' must list at least two different non-empty strings", "choices"
            )
    elif not isinstance(choices, str) or not choices.strip():
        raise _yaml_error(
            path,
            "missing 'choices': a list of texts, or a record field (or "
            "template) that gives the list",
            "choices",
        )
    answer = obj.get("answer")
    if not isinstance(answer, (str, int)) or isinstance(answer, bool) or str(answer).strip() == "":
        raise _yaml_error(
            path,
            "missing 'answer': the record field (or a template) giving the "
            "gold choice, as an index or as its text",
            "answer",
        )
    shots = _list(obj, "shots", path, int, (0,))
    seeds = _list(obj, "seeds", path, int, (1234,))
    if any(k < 0 for k in shots):
        raise _yaml_error(path, "'shots' must be whole numbers ≥ 0", "shots")
    test_split = _str(obj, "test_split", path, "test")
    return Spec(
        path=path,
        name=_str(obj, "task", path, path.stem),
        summary=_str(obj, "summary", path, f"a YAML task ({path.name})"),
        dataset=ds,
        test_split=test_split,
        fewshot_split=_str(obj, "fewshot_split", path, None),
        id_field=_str(obj, "id_field", path, None),
        prompt=_str(obj, "prompt", path),
        choices=choices,
        answer=str(answer),
        modes=modes,
        default_modes=default_modes,
        metrics=metrics,
        group_by=_list(obj, "group_by", path, str, ()),
        target_delimiter=_str(obj, "target_delimiter", path, " ", allow_empty=True),
        fewshot_delimiter=_str(obj, "fewshot_delimiter", path, "\n\n", allow_empty=True),
        description=_str(obj, "description", path, "", allow_empty=True),
        stop=tuple(stop),
        max_tokens=max_tokens,
        shots=shots,
        seeds=seeds,
        language=_str(obj, "language", path, "en"),
        source=_str(obj, "source", path, str(path)),
    )


# -- the data ----------------------------------------------------------------------------------------
def _split_source(spec: Spec, split: str) -> tuple[str, str | None]:
    """(file, folder or hub id; the hub split or None) of one split."""
    ds = spec.dataset
    if ds.get("splits"):
        if split not in ds["splits"]:
            raise TaskError(
                f"{spec.name}: no split '{split}' in {spec.path}",
                where="dataset.splits",
                fix="splits: " + ", ".join(ds["splits"]),
            )
        return str(spec.path.parent / ds["splits"][split]), None
    src = str(ds["path"])
    if src.startswith("hf:"):
        return src, split
    p = spec.path.parent / src
    if p.is_dir():
        for name in (f"{split}.jsonl", f"{split}.json", f"{split}.csv"):
            if (p / name).is_file():
                return str(p / name), None
        raise DataError(
            f"no {split}.jsonl / .json / .csv",
            path=str(p),
            fix=f"put the {split} split in the folder, or name the files under dataset.splits",
        )
    return str(p), None


def _read_rows(source: str, hub_split: str | None, name: str | None) -> list[tuple[str, dict]]:
    """(record name, object) of a file or a hub split."""
    if source.startswith("hf:"):
        from negbench.tasks.data_source import load_hub_dataset

        ds = load_hub_dataset(
            source[3:], str(hub_split), name, what="a task", local="use a local file"
        )
        return [(f"row {i}", dict(o)) for i, o in enumerate(ds)]
    p = Path(source)
    if not p.is_file():
        raise DataError(
            "data file not found", path=str(p), fix="dataset.path is relative to the YAML file"
        )
    from negbench.records import iter_jsonl, read_text

    if p.suffix == ".jsonl":
        return [(f"line {n}", o) for n, o in iter_jsonl(p)]
    if p.suffix == ".csv":
        rows = list(csv.DictReader(read_text(p).lstrip("\ufeff").splitlines()))
        return [(f"row {n}", dict(r)) for n, r in enumerate(rows, 1)]
    if p.suffix == ".json":
        try:
            obj = json.loads(read_text(p))
        except json.JSONDecodeError as exc:
            raise DataError(f"invalid JSON ({exc.msg} at line {exc.lineno})", path=str(p)) from None
        if isinstance(obj, dict) and isinstance(obj.get("data"), list):
            obj = obj["data"]
        if not isinstance(obj, list) or not all(isinstance(o, dict) for o in obj):
            raise DataError('expected a JSON array of objects (or {"data": [...]})', path=str(p))
        return [(f"record {i}", o) for i, o in enumerate(obj)]
    raise DataError(
        f"unsupported data file type {p.suffix!r}", path=str(p), fix="use .jsonl, .json or .csv"
    )


# -- templates ---------------------------------------------------------------------------------------
def _environment():
    from negbench.errors import require

    jinja2 = require("jinja2")
    return jinja2.Environment(
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False
    )


class Template:
    """A Jinja2 template over a record's fields (a bare field name works too)."""

    def __init__(self, text: str, key: str, spec: Spec):
        self.key, self.spec = key, spec
        env = _environment()
        import jinja2

        self.field = text.strip() if text.strip().isidentifier() and "{" not in text else None
        try:
            self.template = None if self.field else env.from_string(text)
        except jinja2.TemplateSyntaxError as exc:
            raise _yaml_error(
                spec.path,
                f"'{key}' is not a valid template (line {exc.lineno}: {exc.message})",
                key,
            ) from None

    def __call__(self, fields: dict, path: str, record: str) -> Any:
        if self.field is not None:
            if self.field not in fields:
                raise DataError(
                    f"missing field (named by '{self.key}' in {self.spec.path.name})",
                    path=path,
                    record=record,
                    field=self.field,
                )
            return fields[self.field]
        import jinja2

        assert self.template is not None
        try:
            return self.template.render(**fields)
        except jinja2.UndefinedError as exc:
            raise DataError(
                f"the '{self.key}' template of {self.spec.path.name} uses a field "
                f"the record lacks ({exc.message})",
                path=path,
                record=record,
                field=_undefined_name(exc.message),
            ) from None


def _undefined_name(message: str | None) -> str | None:
    import re

    m = re.search(r"'([^']+)' is undefined", message or "")
    return m.group(1) if m else None


# -- the task ----------------------------------------------------------------------------------------
class YamlRecords:
    """A YAML task's records: each one read, its id, choices and answer checked, its prompt
    rendered — once per split (prompts are short; rendering them here puts every template error
    before the model loads)."""

    def __init__(self, spec: Spec):
        self.spec = spec
        self.prompt = Template(spec.prompt, "prompt", spec)
        self.answer = Template(spec.answer, "answer", spec)
        self.choices = (
            None if isinstance(spec.choices, list) else Template(spec.choices, "choices", spec)
        )
        self._splits: dict[str, tuple[Doc, ...]] = {}

    def load(self, split: str) -> list[Doc]:
        if split not in self._splits:
            self._splits[split] = tuple(self._read(split))
        return list(self._splits[split])

    def _read(self, split: str) -> list[Doc]:
        spec = self.spec
        source, hub_split = _split_source(spec, split)
        rows = _read_rows(source, hub_split, spec.dataset.get("name"))
        if not rows:
            raise DataError("no records", path=source)
        docs: list[Doc] = []
        seen: dict[str, str] = {}
        for n, (rec, obj) in enumerate(rows, 1):
            rid = self._id(obj, n, source, rec)
            if rid in seen:
                raise DataError(
                    f"duplicate id {rid!r} (first at {seen[rid]})",
                    path=source,
                    record=rec,
                    field=spec.id_field or "id",
                )
            seen[rid] = rec
            choices = self._choices(obj, source, rec)
            gold = self._gold(obj, choices, source, rec)
            text = self.prompt(obj, source, rec)
            if not isinstance(text, str) or not text.strip():
                raise DataError(
                    "the prompt renders empty",
                    path=source,
                    record=rec,
                    field=self.prompt.field or "prompt",
                )
            for key in spec.group_by:
                if key not in obj:
                    raise DataError(
                        f"missing field (named by group_by in {spec.path.name})",
                        path=source,
                        record=rec,
                        field=key,
                    )
            docs.append(
                Doc(
                    rid,
                    {
                        "prompt": text,
                        "choices": choices,
                        "gold": gold,
                        "group": {k: obj[k] for k in spec.group_by},
                    },
                    source,
                )
            )
        return docs

    def _id(self, obj: dict, n: int, source: str, rec: str) -> str:
        rid: Any = obj.get(self.spec.id_field) if self.spec.id_field else n
        if (
            rid is None
            or isinstance(rid, bool)
            or not isinstance(rid, (str, int))
            or str(rid).strip() == ""
        ):
            raise DataError(
                f"expected a non-empty string or integer id, got {rid!r:.60}",
                path=source,
                record=rec,
                field=self.spec.id_field,
            )
        return str(rid)

    def _choices(self, obj: dict, source: str, rec: str) -> list[str]:
        if self.choices is None:
            return list(self.spec.choices)
        field = self.choices.field or "choices"
        v = self.choices(obj, source, rec)
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except json.JSONDecodeError:
                v = None
        if (
            not isinstance(v, list)
            or len(v) < 2
            or not all(isinstance(c, str) and c.strip() for c in v)
        ):
            raise DataError(
                "the choices must be a list of at least two non-empty strings",
                path=source,
                record=rec,
                field=field,
            )
        if len(set(v)) < len(v):
            raise DataError("two choices have the same text", path=source, record=rec, field=field)
        if len(v) > len(LETTERS):
            raise DataError(
                f"{len(v)} choices; at most {len(LETTERS)} are supported",
                path=source,
                record=rec,
                field=field,
            )
        return list(v)

    def _gold(self, obj: dict, choices: list[str], source: str, rec: str) -> int:
        """The gold choice's index, from an index or a choice's text."""
        field = self.answer.field or "answer"
        gold = self.answer(obj, source, rec)
        if isinstance(gold, str) and gold.strip().lstrip("-").isdigit() and gold not in choices:
            gold = int(gold)
        if isinstance(gold, bool):
            gold = int(gold)
        if isinstance(gold, int):
            if not 0 <= gold < len(choices):
                raise DataError(
                    f"answer {gold} is not an index into {len(choices)} choices",
                    path=source,
                    record=rec,
                    field=field,
                )
            return gold
        if gold not in choices:
            raise DataError(
                f"answer {gold!r:.60} is not one of the choices {choices}",
                path=source,
                record=rec,
                field=field,
                fix="the answer is a choice's 0-based index or its exact text",
            )
        return choices.index(gold)


def render_cloze(d: Doc) -> Rendered:
    return Rendered(d["prompt"], list(d["choices"]), d["gold"], meta=dict(d["group"]))


def render_letter(d: Doc) -> Rendered:
    lines = "".join(f"{LETTERS[i]}. {c}\n" for i, c in enumerate(d["choices"]))
    return Rendered(
        f"{d['prompt']}\n{lines}Answer:",
        list(LETTERS[: len(d["choices"])]),
        d["gold"],
        meta=dict(d["group"]),
    )


def render_generate(d: Doc) -> Rendered:
    return Rendered(d["prompt"], list(d["choices"]), d["choices"][d["gold"]], meta=dict(d["group"]))


def mode_metrics(spec: Spec, mode: str) -> tuple[str, ...]:
    return tuple(m for m in MODE_METRICS[mode] if spec.metrics is None or m in spec.metrics)


def mode_spec(spec: Spec, mode: str) -> ModeSpec:
    metrics = mode_metrics(spec, mode)
    if mode == "cloze":
        return ModeSpec(
            render_cloze,
            ChoiceLoglikelihood(target_delimiter=spec.target_delimiter, metrics=metrics),
            "log-likelihood of each choice after the prompt",
        )
    if mode == "letter":
        return ModeSpec(
            render_letter,
            ChoiceLoglikelihood(target_delimiter=spec.target_delimiter, metrics=metrics),
            "the choices listed as letters; log-likelihood of each letter",
        )
    if mode == "next_token":
        return ModeSpec(
            render_cloze,
            NextTokenLabels(label_prefix=spec.target_delimiter, metrics=metrics),
            "next-token probability of each choice's first token",
        )
    return ModeSpec(
        render_generate,
        Generation(stop=spec.stop, max_tokens=spec.max_tokens, metrics=metrics),
        "greedy generation, exact match with the gold choice",
    )


def group_metrics(spec: Spec) -> Callable[[str, list[dict]], dict] | None:
    """Each metric per value of every ``group_by`` field (e.g. ``acc_by_negated``)."""
    if not spec.group_by:
        return None
    from negbench.scoring.metrics import by_group

    def extra(mode: str, records: list[dict]) -> dict:
        return {
            f"{metric}_by_{key}": by_group(records, key, metric)
            for key in spec.group_by
            for metric in mode_metrics(spec, mode)
        }

    return extra


def make_task(spec: Spec) -> Task:
    records = YamlRecords(spec)
    return Task(
        name=spec.name,
        summary=spec.summary,
        load=records.load,
        modes={m: mode_spec(spec, m) for m in spec.modes},
        test_split=spec.test_split,
        fewshot_split=spec.fewshot_split,
        default_modes=spec.default_modes,
        default_shots=spec.shots,
        default_seeds=spec.seeds,
        description=lambda mode: spec.description,
        target_delimiter=spec.target_delimiter,
        fewshot_delimiter=spec.fewshot_delimiter,
        extra_metrics=group_metrics(spec),
        language=spec.language,
        source=spec.source,
    )


__all__ = ["load_yaml_task", "read_spec", "make_task", "MODES", "MODE_METRICS"]
