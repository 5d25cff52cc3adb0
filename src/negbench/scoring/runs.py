"""Saved runs → typed objects: a :class:`Run` per run folder, its units and groups, and its
per-sample records read lazily (and checked to exist) from ``samples/<unit>.jsonl``.

Nothing here needs the model: a report is a pure function of run folders.  Every problem with a
folder is a :class:`negbench.errors.NegbenchError` that names the file.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from negbench.errors import DataError, OutputError
from negbench.scoring.negation_errors import predicted_index
from negbench.records import iter_jsonl
from negbench.files import nan_for_null
from negbench.scoring.registry import REGISTRY, benchmark_of

#: results.json versions this package reads (``schema`` written by :mod:`negbench.evaluation.runner`).
RESULTS_SCHEMAS = (1,)
#: Characters of a prompt kept in the per-sample browser (the end of the context).
PROMPT_TAIL = 600
OUTPUT_HEAD = 300


@dataclass
class UnitResult:
    """One unit of a run (task × mode × shots × seed) and its saved metrics: the one unit type of
    negbench, read by reports, comparisons, the profile and :class:`negbench.Results`."""

    name: str
    task: str
    mode: str
    shots: int
    seed: int | None
    group: str
    metrics: dict[str, Any]
    chat: bool = False  # the prompts went through the model's chat template


@dataclass(frozen=True)
class GroupResult:
    """Units that differ only by seed: each numeric metric as mean / SD / n over the seeds."""

    name: str
    task: str
    mode: str
    shots: int
    units: tuple[str, ...]
    metrics: dict[str, dict[str, float]]

    def mean(self, metric: str) -> float:
        return self.metrics[metric]["mean"]


def units_of(results: dict, where: str = "results.json") -> dict[str, UnitResult]:
    """The typed units of a ``results.json`` dict; a malformed unit names itself."""
    units = {}
    for name, u in results["units"].items():
        try:
            units[name] = UnitResult(
                name,
                str(u["task"]),
                str(u["mode"]),
                int(u["shots"]),
                None if u.get("seed") is None else int(u["seed"]),
                str(u.get("group") or name),
                dict(u.get("metrics") or {}),
                bool(u.get("chat")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(
                f"malformed unit ({type(exc).__name__}: {exc})", path=where, record=f"unit {name}"
            ) from None
    return units


def groups_of(results: dict) -> dict[str, GroupResult]:
    """The typed groups of a ``results.json`` dict."""
    return {
        name: GroupResult(name, g["task"], g["mode"], g["shots"], tuple(g["units"]), g["metrics"])
        for name, g in (results.get("groups") or {}).items()
    }


@dataclass
class Run:
    """A saved run folder: ``results.json`` + ``samples/<unit>.jsonl`` (+ ``config.json``)."""

    path: Path
    results: dict
    label: str
    units: dict[str, UnitResult]
    index: int = 0
    _samples: dict[str, list[dict]] = field(default_factory=dict, repr=False)
    _views: dict[str, list[dict]] = field(default_factory=dict, repr=False)

    # -- identity --------------------------------------------------------------------------------
    @property
    def model_spec(self) -> str:
        return str(
            self.results.get("model", {}).get("spec")
            or self.results.get("config", {}).get("model")
            or "?"
        )

    @property
    def fingerprint(self) -> str | None:
        return self.results.get("model", {}).get("fingerprint")

    @property
    def adapter(self) -> str | None:
        """The LoRA adapter the run applied (a fine-tuned model), or None."""
        cfg = self.results.get("config", {}) or {}
        return (cfg.get("backend") or {}).get("adapter") or None

    @property
    def finetuned(self) -> bool:
        return bool(self.adapter)

    @property
    def base_label(self) -> str:
        """The model's short name without the adapter (rows of "after SFT" tables)."""
        return short_name(self.model_spec)

    # -- units -----------------------------------------------------------------------------------
    @property
    def groups(self) -> dict[str, GroupResult]:
        return groups_of(self.results)

    def tasks(self) -> list[str]:
        out: list[str] = []
        for u in self.units.values():
            if u.task not in out:
                out.append(u.task)
        return out

    def select(
        self, task: str | None = None, mode: str | None = None, shots: int | None = None
    ) -> list[UnitResult]:
        return [
            u
            for u in self.units.values()
            if (task is None or u.task == task)
            and (mode is None or u.mode == mode)
            and (shots is None or u.shots == shots)
        ]

    def modes(self, task: str) -> list[str]:
        out: list[str] = []
        for u in self.select(task):
            if u.mode not in out:
                out.append(u.mode)
        return out

    def shots(self, task: str, mode: str | None = None) -> list[int]:
        return sorted({u.shots for u in self.select(task, mode)})

    # -- samples ---------------------------------------------------------------------------------
    def samples_path(self, unit: str) -> Path:
        return self.path / "samples" / f"{unit}.jsonl"

    def samples(self, unit: str) -> list[dict]:
        """The per-sample records of one unit (cached); a clear error when the file is missing or
        malformed."""
        if unit not in self._samples:
            if unit not in self.units:
                raise DataError(f"run has no unit '{unit}'", path=str(self.path / "results.json"))
            self._samples[unit] = read_samples(self.samples_path(unit))
        return self._samples[unit]

    def filter_views(self, unit: str) -> list[dict]:
        """:func:`sample_view` of each of a unit's samples without its texts (prompt, output,
        choices, prediction and gold): what the sample filters of table cells read, cached while
        a report builds its tables (it filters each unit's samples for many cells; the tables
        drop the cache when built)."""
        if unit not in self._views:
            u = self.units[unit]
            bulky = ("prompt", "output", "choices", "pred", "gold")
            self._views[unit] = [
                {k: v for k, v in sample_view(self, u, r, i).items() if k not in bulky}
                for i, r in enumerate(self.samples(unit))
            ]
        return self._views[unit]

    def summary(self) -> dict:
        """The run's identity for report.json / compare.json (schema: docs/reports.md)."""
        r = self.results
        return {
            "index": self.index,
            "label": self.label,
            "path": str(self.path),
            "model": self.model_spec,
            "fingerprint": self.fingerprint,
            "adapter": self.adapter,
            "negbench": r.get("negbench"),
            "results_schema": r.get("schema"),
            "started": r.get("started"),
            "finished": r.get("finished"),
            "git": (r.get("provenance") or {}).get("git"),
            "rescored": bool(r.get("rescored")),
            "tasks": self.tasks(),
            "units": list(self.units),
        }


def metrics_as_floats(results: dict) -> dict:
    """``results`` with the metrics of its units and groups as written (a NaN read as NaN, a
    null — strict JSON's NaN — as NaN too), so old and new run folders read the same."""
    for part in ("units", "groups"):
        for u in (results.get(part) or {}).values():
            if isinstance(u, dict) and isinstance(u.get("metrics"), dict):
                u["metrics"] = nan_for_null(u["metrics"])
    return results


def short_name(spec: str) -> str:
    """``/x/y/Llama-3.1-8B`` → ``Llama-3.1-8B``; ``org/name`` → ``name``."""
    s = str(spec).rstrip("/\\")
    return re.split(r"[/\\]", s)[-1] or s


DAMAGED_FIX = (
    "the file is damaged (an interrupted copy or write?); rerun the same 'negbench run' "
    "command into a new --output folder (answered requests are cached, so it is quick)"
)


def _read_text(path: Path, what: str) -> str:
    """A file of a run folder as text; unreadable or non-UTF-8 files give a clear error (nothing
    is ever written to a run folder: a read-only one reports like any other)."""
    try:
        data = path.read_bytes()
    except PermissionError:
        raise OutputError(
            f"cannot read {what}: permission denied",
            where=str(path),
            fix="give read access to the run folder (write access is not needed)",
        ) from None
    except OSError as exc:
        raise OutputError(f"cannot read {what} ({exc.strerror or exc})", where=str(path)) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DataError(
            f"{what} is not UTF-8 text (byte 0x{data[exc.start]:02x})",
            path=str(path),
            record=f"line {line}",
            fix=DAMAGED_FIX,
        ) from None


def read_samples(path: Path) -> list[dict]:
    """The records of one ``samples/<unit>.jsonl``; a missing, unreadable or damaged file (a line
    that is not a JSON object, a truncated last line) is a :class:`DataError` naming the file and
    the line."""
    path = Path(path)
    out = []
    try:
        for n, rec in iter_jsonl(
            path,
            missing="the per-sample records of this unit are missing",
            missing_fix="a report needs samples/<unit>.jsonl of every unit in results.json; "
            "rerun the same 'negbench run' command (answers are cached)",
            fix=DAMAGED_FIX,
        ):
            bad = _bad_field(rec)
            if bad:
                raise DataError(
                    f"a per-sample record has a malformed field ({bad[1]})",
                    path=str(path),
                    record=f"line {n}",
                    field=bad[0],
                    fix=DAMAGED_FIX,
                )
            out.append(rec)
    except (UnicodeDecodeError, OSError):
        _read_text(path, "the samples file")  # the same failure, with the file and line
        raise
    return out


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float))  # bool included (an int)


#: The record fields the report reads, and what each must be when present (None is always fine).
_RECORD_FIELDS: dict[str, tuple[str, Any]] = {
    "pred": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "pred_norm": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "gold_index": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "choices": ("a list", lambda v: isinstance(v, list)),
    "scores": (
        "a list of numbers",
        lambda v: isinstance(v, list) and all(x is None or _is_num(x) for x in v),
    ),
    "probs": (
        "a list of numbers",
        lambda v: isinstance(v, list) and all(x is None or _is_num(x) for x in v),
    ),
    "meta": ("an object", lambda v: isinstance(v, dict)),
    "p_true": ("a number", _is_num),
    "acc": ("a number", _is_num),
    "acc_norm": ("a number", _is_num),
    "exact_match": ("a number", _is_num),
    "correct": ("a number", _is_num),
    "context": ("a string", lambda v: isinstance(v, str)),
    "output": ("a string", lambda v: isinstance(v, str)),
}


def _bad_field(rec: dict) -> tuple[str, str] | None:
    for k, (want, ok) in _RECORD_FIELDS.items():
        v = rec.get(k)
        if v is not None and not ok(v):
            return k, f"expected {want}, got {type(v).__name__} {json.dumps(v, default=str)[:40]}"
    return None


def _runs_inside(p: Path, n: int = 4) -> list[str]:
    try:
        return sorted(str(c) for c in p.iterdir() if (c / "results.json").is_file())[:n]
    except OSError:
        return []


def load_run(
    path: str | Path, label: str | None = None, check_samples: bool = True, index: int = 0
) -> Run:
    """Read one run folder.  ``check_samples``: every unit's samples file must exist."""
    p = Path(path)
    if not p.exists():
        raise OutputError(
            f"run folder not found: {p}",
            where=str(p),
            fix="give a folder that 'negbench run' wrote (its --output)",
        )
    if not p.is_dir():
        raise OutputError(
            f"not a run folder (a file): {p}",
            where=str(p),
            fix="give the folder that holds results.json, not a file in it",
        )
    rp = p / "results.json"
    if not rp.is_file():
        inside = _runs_inside(p)
        if inside:
            fix = "this folder holds run folders; give those, e.g. " + " ".join(inside)
        elif (p / "config.json").is_file() or (p / "samples").is_dir():
            fix = (
                "the run did not finish: rerun the same 'negbench run' command to resume it "
                "(finished shards and cached answers are kept)"
            )
        else:
            fix = "give a folder that a finished 'negbench run' wrote (its --output)"
        raise OutputError(
            f"not a negbench run folder (no results.json): {p}", where=str(rp), fix=fix
        )
    text = _read_text(rp, "results.json")
    try:
        results = json.loads(text)
    except json.JSONDecodeError as exc:
        end = exc.pos >= len(text.rstrip())
        raise DataError(
            ("results.json ends too early (truncated): " if end else "invalid JSON: ")
            + f"{exc.msg} at line {exc.lineno}, column {exc.colno}",
            path=str(rp),
            record=f"line {exc.lineno}",
            fix=DAMAGED_FIX,
        ) from None
    if not isinstance(results, dict) or not isinstance(results.get("units"), dict):
        raise DataError(
            "results.json has no 'units' object",
            path=str(rp),
            field="units",
            fix="give a folder written by 'negbench run'",
        )
    metrics_as_floats(results)  # null (strict JSON's NaN) read as NaN
    if results.get("schema") not in RESULTS_SCHEMAS:
        raise DataError(
            f"unknown results schema {results.get('schema')!r} (this negbench reads "
            f"{', '.join(map(str, RESULTS_SCHEMAS))})",
            path=str(rp),
            field="schema",
            fix="upgrade negbench to read this run",
        )
    units = units_of(results, str(rp))
    if not units:
        raise DataError("the run has no units", path=str(rp), field="units")
    run = Run(
        p,
        results,
        label or short_name(str(results.get("model", {}).get("spec") or p.name)),
        units,
        index,
    )
    if run.adapter and not label:
        run.label = f"{run.base_label}+{short_name(run.adapter)}"
    if check_samples:
        for name in units:
            sp = run.samples_path(name)
            if not sp.is_file():
                read_samples(sp)  # raises the "missing" error
    return run


def load_runs(
    paths: Iterable[str | Path],
    labels: dict[str, str] | list[str | None] | None = None,
    check_samples: bool = True,
) -> list[Run]:
    """Several runs; labels are made unique (the folder name is added on a clash)."""
    paths = list(paths)
    if not paths:
        raise OutputError("no run folder given", where="RUN", fix="give one or more run folders")
    runs = []
    for i, p in enumerate(paths):
        lab = None
        if isinstance(labels, dict):
            lab = labels.get(str(p)) or labels.get(Path(p).name)
        elif isinstance(labels, list) and i < len(labels):
            lab = labels[i]
        runs.append(load_run(p, lab, check_samples, index=i))
    seen: dict[str, int] = {}
    for r in runs:
        seen[r.label] = seen.get(r.label, 0) + 1
    for r in runs:
        if seen[r.label] > 1:
            r.label = f"{r.label} [{r.path.name}]"
    seen2: dict[str, int] = {}
    for r in runs:  # still equal (same folder name): number them
        if r.label in seen2:
            seen2[r.label] += 1
            r.label = f"{r.label} #{seen2[r.label]}"
        else:
            seen2[r.label] = 1
    return runs


# -- benchmark names and the metric behind "correct" ------------------------------------------------
def primary_metric(
    task: str, mode: str, metrics: dict | None = None, record: dict | None = None
) -> str | None:
    """The per-sample field behind "correct": the paper's metric where a paper names one
    (KoNUBench cloze: ``acc_norm``), else ``exact_match`` for generation, else ``acc``."""
    keys = set(metrics or {}) | set(record or {})
    paper = REGISTRY.get("paper_metric", benchmark_of(task)) or {}
    m = paper.get(mode)
    if m in keys:
        return m
    for m in ("exact_match", "acc", "correct"):
        if m in keys:
            return m
    return None


# -- per-sample views (what the browser, the filters and the comparisons use) -----------------------
def _short(v: Any, n: int = 200) -> Any:
    if isinstance(v, str) and len(v) > n:
        return v[:n] + "…"
    return v


def _flat_meta(meta: dict) -> dict:
    out = {}
    for k, v in (meta or {}).items():
        if isinstance(v, (str, int, float, bool)) or v is None:
            out[k] = _short(v)
        elif (
            isinstance(v, list)
            and all(isinstance(x, (str, int, float, bool)) for x in v)
            and len(v) <= 12
        ):
            out[k] = ",".join(map(str, v))
    return out


def is_correct(rec: dict, metric: str | None) -> bool | None:
    if metric and rec.get(metric) is not None:
        try:
            return float(rec[metric]) >= 0.5
        except (TypeError, ValueError):
            return None
    if "pred_bool" in rec and "label" in rec:
        return bool(rec["pred_bool"]) == bool(rec["label"])
    return None


def error_type(rec: dict, correct: bool | None) -> str | None:
    """What kind of wrong answer a record is (None when right):

    * items with ``meta.option_types`` (NUBench, KoNUBench, negation-mini): the type of the picked
      option — ``local`` / ``contradiction`` / ``paraphrase`` — or ``format`` when a generation
      names no option; judged on the error-analysis prediction (``pred``, else the generated
      ``answer``), exactly as :func:`negbench.scoring.negation_errors.error_analysis` counts;
    * True/False items (``p_true`` + ``label``, or choices True/False): ``false True`` /
      ``false False`` (the wrong label said);
    * generations: ``format`` (no answer read) or ``wrong answer``; other choice items: ``chose X``.
    """
    meta = rec.get("meta") or {}
    types = meta.get("option_types")
    if isinstance(types, list) and rec.get("gold_index") is not None:
        idx = predicted_index(rec, "pred")
        if idx is None:
            return "format"
        if idx == rec["gold_index"]:
            return None
        return str(types[idx]) if 0 <= idx < len(types) else "format"
    if correct is None or correct:
        return None
    if "pred_bool" in rec:
        return f"false {bool(rec['pred_bool'])}"
    if "answer" in rec and "pred" not in rec:
        return "format" if rec.get("answer") is None else "wrong answer"
    pred = rec.get("pred")
    choices = rec.get("choices") or []
    if pred is not None and 0 <= int(pred) < len(choices):
        c = str(choices[int(pred)])
        if c.strip().lower() in ("true", "false", "yes", "no"):
            return f"false {c.strip()}"
        return f"chose {_short(c, 40)}"
    return "wrong"


def pred_text(rec: dict) -> str | None:
    if rec.get("answer") is not None or "output" in rec:
        return None if rec.get("answer") is None else str(rec["answer"])
    if "pred_bool" in rec:
        return str(bool(rec["pred_bool"]))
    pred, choices = rec.get("pred"), rec.get("choices") or []
    if pred is not None and 0 <= int(pred) < len(choices):
        return str(choices[int(pred)])
    return None


def gold_text(rec: dict) -> str | None:
    if "label" in rec and isinstance(rec["label"], bool):
        return str(rec["label"])
    g, choices = rec.get("gold_index"), rec.get("choices") or []
    if g is not None and 0 <= int(g) < len(choices):
        return str(choices[int(g)])
    if rec.get("gold_answer") is not None:
        return str(rec["gold_answer"])
    g = rec.get("gold")
    return None if g is None else str(g)


def p_true(rec: dict) -> tuple[float, bool] | None:
    """(P(True), label) of a binary True/False-style record, for calibration: ``p_true`` +
    ``label``, or next-token ``probs`` over two choices + ``gold_index`` (P of the first choice,
    which is "True" / "yes" in the built-in tasks)."""
    if isinstance(rec.get("p_true"), (int, float)) and rec.get("label") is not None:
        return float(rec["p_true"]), bool(rec["label"])
    probs = rec.get("probs")
    if isinstance(probs, list) and len(probs) == 2 and rec.get("gold_index") in (0, 1):
        s = float(probs[0]) + float(probs[1])
        if s > 0:
            return float(probs[0]) / s, rec["gold_index"] == 0
    return None


def sample_view(run: Run, unit: UnitResult, rec: dict, i: int) -> dict:
    """A compact, flat view of one record (the per-sample browser and the filters work on it)."""
    metric = primary_metric(unit.task, unit.mode, unit.metrics, rec)
    correct = is_correct(rec, metric)
    v: dict[str, Any] = {
        "r": run.index,
        "u": unit.name,
        "i": i,
        "task": unit.task,
        "benchmark": benchmark_of(unit.task),
        "mode": unit.mode,
        "shots": unit.shots,
        "seed": unit.seed,
        "id": str(rec.get("doc_id", i)),
        "metric": metric,
        "score": rec.get(metric) if metric else None,
        "correct": correct,
        "error_type": error_type(rec, correct),
        "pred": _short(pred_text(rec), 300),
        "gold": _short(gold_text(rec), 300),
        "meta": _flat_meta(rec.get("meta") or {}),
    }
    ctx = rec.get("context")
    if isinstance(ctx, str):
        v["prompt"] = ("…" + ctx[-PROMPT_TAIL:]) if len(ctx) > PROMPT_TAIL else ctx
    if isinstance(rec.get("output"), str):
        v["output"] = _short(rec["output"], OUTPUT_HEAD)
    ch = rec.get("choices")
    if isinstance(ch, list) and ch:
        sc = rec.get("scores") or rec.get("probs")
        v["choices"] = [
            [
                _short(str(c), 160),
                (
                    round(float(sc[k]), 4)
                    if isinstance(sc, list) and k < len(sc) and isinstance(sc[k], (int, float))
                    else None
                ),
            ]
            for k, c in enumerate(ch[:10])
        ]
    pt = p_true(rec)
    if pt is not None:
        v["p_true"] = round(pt[0], 5)
    return v


def get_path(obj: Any, path: str) -> Any:
    """``a.b.c`` into nested dicts (None when absent); a key that itself holds dots (JSTS-Neg's
    flat ``M.acc``) is found too: the longest matching key wins at each level."""
    if not isinstance(obj, dict):
        return None
    if path in obj:
        return obj[path]
    parts = path.split(".")
    for i in range(len(parts) - 1, 0, -1):
        head = ".".join(parts[:i])
        if head in obj:
            found = get_path(obj[head], ".".join(parts[i:]))
            if found is not None:
                return found
    return None


def _value_of(view: dict, key: str) -> Any:
    return get_path(view, key)


def _eq(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if a is None or b is None:
        return a is None and b is None
    return str(a) == str(b)


def _match_one(actual: Any, want: Any) -> bool:
    if isinstance(want, dict) and "not" in want:
        return not _match_one(actual, want["not"])
    if isinstance(want, list):
        return any(_eq(actual, w) for w in want)
    return _eq(actual, want)


def matches(view: dict, flt: dict | None) -> bool:
    """The sample filter language (the HTML page's JavaScript implements the same): every key
    of ``flt`` must hold; a key is a view field or a dotted path (``meta.choice2_type``); a value
    is a scalar (equal), a list (one of) or ``{"not": value-or-list}``."""
    if not flt:
        return True
    return all(_match_one(_value_of(view, k), w) for k, w in flt.items())


def nanmean(xs: Iterable[float]) -> float:
    v = [
        float(x)
        for x in xs
        if x is not None and isinstance(x, (int, float)) and not math.isnan(float(x))
    ]
    return sum(v) / len(v) if v else float("nan")


# -- breakdowns ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BreakdownCell:
    """One cell of a breakdown: a value of the grouping field, its items, the metric on them and
    its 95 % interval (None: not a 0/1 metric, or a run that saved none)."""

    group: str
    n: int
    value: float | None
    ci: tuple[float, float] | None


@dataclass(frozen=True)
class Breakdown:
    """A metric per value of a field in one unit (a YAML task's ``group_by``: ``acc_by_negated``;
    KoNUBench's ``by_local_type`` …)."""

    unit: str
    name: str  # the metric's key in the unit's metrics
    metric: str  # the metric in each cell
    field: str  # what the cells are values of
    cells: tuple[BreakdownCell, ...]


def _breakdown(unit: str, name: str, v: Any) -> Breakdown | None:
    """``v`` read as a breakdown: a non-empty dict of cells each holding an integer ``n`` and a
    numeric metric; None otherwise."""
    if not isinstance(v, dict) or not v:
        return None
    metric = None
    cells = []
    for g, c in v.items():
        if not isinstance(c, dict) or not isinstance(c.get("n"), int):
            return None
        keys = [
            k
            for k, x in c.items()
            if k != "n" and not k.endswith(("_ci95", "_stderr")) and _number(x) is not None
        ]
        if not keys and metric is None:
            return None
        metric = metric or keys[0]
        raw = c.get(f"{metric}_ci95")
        ci: tuple[float, float] | None = None
        if isinstance(raw, (list, tuple)) and len(raw) == 2:
            lo, hi = _number(raw[0]), _number(raw[1])
            ci = (lo, hi) if lo is not None and hi is not None else None
        cells.append(BreakdownCell(str(g), int(c["n"]), _number(c.get(metric)), ci))
    assert metric is not None
    field = name.split("_by_", 1)[1] if "_by_" in name else name.removeprefix("by_")
    return Breakdown(unit, name, metric, field, tuple(cells))


def breakdowns(results: dict) -> list[Breakdown]:
    """Every breakdown of every unit of a run, in unit order."""
    out = []
    for uname, u in (results.get("units") or {}).items():
        for name, v in (u.get("metrics") or {}).items():
            b = _breakdown(uname, name, v)
            if b is not None:
                out.append(b)
    return out


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return None if math.isnan(float(v)) else float(v)
