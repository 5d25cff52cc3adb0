"""``negbench experiment notadataset-generalisation``: This is not a Dataset §6, Figure 2 — one
LoRA adapter per training subset (per pattern, or per negation type as in Table 7), each evaluated
on every subset, with the base model as the zero-shot reference row.

Layout of ``--out DIR``::

    DIR/experiment.json           the configuration (a rerun with another one is refused)
    DIR/adapters/ROW/adapter/     negbench train output of each row (negbench_train.json inside)
    DIR/cells/ROW/COLUMN/         a negbench run folder per cell (ROW = base for the base model)
    DIR/matrix.json               every cell's accuracy (and coherence), sizes, paths
    DIR/matrix.md                 the matrix as Markdown tables
    DIR/heatmap.png               the annotated heatmap

Everything is checked (subset names, empty subsets, the recipe, the model, the output folder, the
cutoff against the longest prompts) before a model is loaded or a file is written.  Training goes
through :func:`negbench.train.trainer.train` (a finished adapter of the same configuration is
reused, an unfinished one resumes from its checkpoint) and every evaluation through ``negbench
run`` itself (:func:`negbench.train.trainer.eval_run`: same session, cache and run folders);
a cell whose run folder already holds the results of this adapter and task is not run again.
See ``docs/experiments.md``.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import difflib
import io
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from negbench.errors import ModelError, NegbenchError, OptionError, OutputError, TaskError

EXPERIMENT = "notadataset-generalisation"
NAMES = {EXPERIMENT: EXPERIMENT, "notadataset-generalization": EXPERIMENT}
SCHEMA = "negbench.experiment/1"
EXPERIMENT_JSON = "experiment.json"
#: Recipe settings the experiment decides itself (per row / per column).
OWN_SETTINGS = {
    "data": "each row's training data is its subset (--patterns / --types, --sample)",
    "data_split": "rows are trained on the train split (by block, §6)",
    "eval_task": "columns are the subsets' test split (--eval-split, --eval-sample)",
    "eval_limit": "use --eval-sample N (whole test blocks of about N sentences per subset)",
}
#: Metrics kept per cell (fractions, as the runs store them).
CELL_METRICS = (
    "acc",
    "coherence_all",
    "coherence_wo_distractor",
    "coherence_w_distractor",
    "acc_affirmation",
    "acc_negation",
    "pred_true_rate",
    "brier",
)


@dataclass(frozen=True)
class Subset:
    """A row (training data spec) or a column (evaluation task spec) of the matrix."""

    key: str  # folder name: p02, verbal, all
    label: str  # shown in tables and the heatmap
    spec: str  # notadataset[...] exporter spec (rows) or task spec (columns)


@dataclass
class Plan:
    """An experiment checked against its data, before any model is loaded or file written."""

    out: Path
    model: str
    recipe: Any  # negbench.scoring.recipes.Recipe
    axis: str  # patterns | types
    rows: list[Subset]
    columns: list[Subset]
    chat: bool
    modes: list[str]
    device: str
    config: dict
    identity: dict
    n_train: dict[str, int] = field(default_factory=dict)
    n_test: dict[str, int] = field(default_factory=dict)
    threads: int | None = None
    cache: str | None = None
    overwrite: bool = False
    progress: bool = True
    resumes: bool = False

    def cell_dir(self, row: str, col: str) -> Path:
        return self.out / "cells" / row / col

    def train_dir(self, row: str) -> Path:
        return self.out / "adapters" / row


def _log_default(s: str) -> None:
    print(s, file=sys.stderr, flush=True)


# -- subsets -----------------------------------------------------------------------------------------
def parse_patterns(text: str) -> list[int]:
    """``2,4,6`` / ``#02,Part`` / ``all`` → pattern numbers (each once)."""
    from negbench.tasks.notadataset.truth_scorer import PATTERNS

    items = [x.strip() for x in str(text).split(",") if x.strip()]
    listing = ", ".join(f"{k} ({v})" for k, v in PATTERNS.items())
    if not items:
        raise OptionError(
            "--patterns names no pattern",
            where="--patterns",
            fix=f"e.g. --patterns 2,4,6, or all; patterns: {listing}",
        )
    if [x.lower() for x in items] == ["all"]:
        return list(PATTERNS)
    names = {v.lower(): k for k, v in PATTERNS.items()}
    out: list[int] = []
    for it in items:
        s = it.lower().lstrip("#")
        if s.isdigit():
            pid = int(s)
            if pid not in PATTERNS:
                raise OptionError(
                    f"there is no pattern {it} (the patterns are 1..11)",
                    where=f"--patterns {text}",
                    fix=f"patterns: {listing}",
                )
        elif s in names:
            pid = names[s]
        else:
            prefix = [k for n, k in names.items() if n.startswith(s)]
            if len(prefix) != 1:
                close = difflib.get_close_matches(s, list(names), n=1)
                what = "ambiguous pattern name" if len(prefix) > 1 else "unknown pattern"
                raise OptionError(
                    f"{what} '{it}'",
                    where=f"--patterns {text}",
                    fix=(
                        f"did you mean '{PATTERNS[names[close[0]]]}'? "
                        if close and len(prefix) <= 1
                        else ""
                    )
                    + f"patterns (number or name): {listing}",
                )
            pid = prefix[0]
        if pid in out:
            raise OptionError(
                f"pattern {pid} ({PATTERNS[pid]}) is given twice",
                where=f"--patterns {text}",
                fix="name each pattern once",
            )
        out.append(pid)
    return out


def parse_types(text: str) -> list[str]:
    """``affirmation,negation,verbal,…`` → negation types (each once)."""
    from negbench.tasks.notadataset.tasks import TYPE_NAMES

    items = [x.strip().lower().replace("-", "_") for x in str(text).split(",") if x.strip()]
    if not items:
        raise OptionError(
            "--types names no type",
            where="--types",
            fix="e.g. --types verbal,non_verbal; types: " + ", ".join(TYPE_NAMES),
        )
    out: list[str] = []
    for t in items:
        if t not in TYPE_NAMES:
            close = difflib.get_close_matches(t, TYPE_NAMES, n=1)
            raise OptionError(
                f"unknown negation type '{t}'",
                where=f"--types {text}",
                fix=(f"did you mean '{close[0]}'? " if close else "")
                + "types: "
                + ", ".join(TYPE_NAMES),
            )
        if t in out:
            raise OptionError(
                f"type '{t}' is given twice", where=f"--types {text}", fix="name each type once"
            )
        out.append(t)
    return out


def _spec(**opts: Any) -> str:
    from negbench.tasks.notadataset.tasks import canonical_name

    return canonical_name({k: str(v) for k, v in opts.items() if v is not None})


def subsets(
    axis: str,
    values: list,
    sample: int | None,
    eval_sample: int | None,
    eval_split: str,
    all_row: bool,
) -> tuple[list[Subset], list[Subset]]:
    """The rows (training subsets, train split) and columns (test subsets) of the matrix.

    Patterns: row and column *p* are pattern *p*.  Types (Table 7): row *t* trains on the
    affirmations and the negations of type *t* (``affirmation``: affirmations only,
    ``negation``: every negated sentence); column *t* tests on the sentences of type *t*, and an
    ``affirmation`` column is added when not asked for (Table 7 has one)."""
    from negbench.tasks.notadataset.truth_scorer import PATTERNS

    rows, cols = [], []
    if axis == "patterns":
        for pid in values:
            key, label = f"p{pid:02d}", f"#{pid:02d} {PATTERNS[pid]}"
            rows.append(Subset(key, label, _spec(split="train", sample=sample, patterns=pid)))
            cols.append(
                Subset(key, label, _spec(split=eval_split, sample=eval_sample, patterns=pid))
            )
        if all_row:
            rows.append(
                Subset(
                    "all",
                    "all listed patterns",
                    _spec(
                        split="train",
                        sample=sample * len(values) if sample else None,
                        patterns="+".join(str(p) for p in values),
                    ),
                )
            )
        return rows, cols
    for t in values:
        train = t if t in ("affirmation", "negation") else f"affirmation+{t}"
        label = {"affirmation": "affirmations only", "negation": "negations only"}.get(
            t, f"affirmations + {t}"
        )
        rows.append(Subset(t, label, _spec(split="train", sample=sample, types=train)))
    for t in values + ([] if "affirmation" in values else ["affirmation"]):
        cols.append(Subset(t, t, _spec(split=eval_split, sample=eval_sample, types=t)))
    if all_row:
        every = ["affirmation"] + [t for t in values if t != "affirmation"]
        rows.append(
            Subset(
                "all",
                "affirmations + all listed types",
                _spec(split="train", sample=sample, types="+".join(every)),
            )
        )
    return rows, cols


# -- checks before anything is loaded or written ---------------------------------------------------------
def _where(axis: str, key: str, what: str) -> str:
    return f"--{axis} {key.lstrip('p').lstrip('0') if axis == 'patterns' and key != 'all' else key} ({what})"


def _resolve_recipe(
    recipe: str, overrides: Iterable[str] | Mapping[str, Any] | None, max_steps: int | None
):
    from negbench.scoring.recipes import parse_set, resolve_recipe

    items = (
        [(k, v, f"override {k}") for k, v in overrides.items()]
        if isinstance(overrides, Mapping)
        else parse_set(overrides or [])
    )
    for key, _, where in items:
        if key in OWN_SETTINGS:
            raise OptionError(
                f"--set {key}: the experiment sets '{key}' itself",
                where=where,
                fix=OWN_SETTINGS[key],
            )
    r = resolve_recipe(recipe, overrides=overrides or None, max_steps=max_steps)
    from negbench.scoring.task import parse_spec

    base, _ = parse_spec(r.eval_task)
    if base != "notadataset" or not str(r.data).startswith("notadataset"):
        raise OptionError(
            f"recipe '{r.name}' is not a This-is-not-a-Dataset recipe (it trains on "
            f"'{r.data}' and evaluates on '{r.eval_task}')",
            where="--recipe",
            fix="--recipe notadataset (its hyper-parameters can be changed with --set)",
        )
    return r


def _check_out(out: Path, identity: dict, overwrite: bool) -> bool:
    """Whether ``out`` holds this experiment already (a rerun continues it)."""
    from negbench.files import check_writable_folder

    check_writable_folder(out, "--out")
    if not (out.is_dir() and any(out.iterdir())):
        return False
    meta = out / EXPERIMENT_JSON
    try:
        old = json.loads(meta.read_text(encoding="utf-8")).get("identity")
    except (OSError, ValueError, AttributeError):
        old = None
    if old is None:
        if not overwrite:
            raise OutputError(
                f"{out} is not empty and holds no negbench experiment",
                where="--out",
                fix="choose another --out, or pass --overwrite to write into it",
            )
        return False
    if old == identity:
        return True
    if not overwrite:
        diff = sorted(k for k in set(old) | set(identity) if old.get(k) != identity.get(k))
        raise OutputError(
            f"{out} holds an experiment of a different configuration (differs in: "
            f"{', '.join(diff)})",
            where="--out",
            fix="choose another --out, or pass --overwrite to redo what differs "
            "(cells that do not change are kept)",
        )
    return False


def _check_cutoff(td, recipe, tok, template: str, where: str) -> None:
    """The recipe's cutoff against the longest prompts of a row (``tokenize`` on those only:
    the full tokenisation happens in ``train``, after the earlier rows have trained)."""
    from negbench.train.data import TrainingData, tokenize

    idx = sorted(
        range(len(td.records)),
        key=lambda i: (
            -sum(len(td.records[i].get(k) or "") for k in ("instruction", "input", "output"))
        ),
    )[:16]
    probe = TrainingData(
        td.spec,
        td.split,
        [td.records[i] for i in idx],
        [td.where[i] for i in idx],
        td.n_available,
        td.source,
    )
    try:
        tokenize(probe, recipe, tok, template)
    except OptionError as exc:
        raise OptionError(exc.what, where=f"{where}; {exc.where}", fix=exc.fix) from None


def plan_experiment(
    model: str,
    out: str | Path,
    *,
    patterns: str | list | None = None,
    types: str | list | None = None,
    sample: int | None = None,
    eval_sample: int | None = None,
    eval_split: str = "test",
    max_steps: int | None = None,
    recipe: str = "notadataset",
    overrides: Iterable[str] | Mapping[str, Any] | None = None,
    all_row: bool = False,
    device: str = "auto",
    threads: int | None = None,
    cache: str | None = None,
    overwrite: bool = False,
    progress: bool = True,
) -> Plan:
    """Check everything and lay the experiment out; nothing is loaded but tokenizer and data."""
    if patterns is not None and types is not None:
        raise OptionError(
            "--patterns and --types both given: a matrix is over one of them",
            where="--patterns / --types",
            fix="run one experiment per axis (each in its own --out)",
        )
    if eval_split not in ("test", "dev"):
        raise OptionError(
            f"--eval-split {eval_split!r}",
            where="--eval-split",
            fix="test (the paper's held-out blocks) or dev",
        )
    for name, v in (
        ("--sample", sample),
        ("--eval-sample", eval_sample),
        ("--max-steps", max_steps),
    ):
        if v is not None and (not isinstance(v, int) or v < 1):
            raise OptionError(f"{name} must be a whole number ≥ 1, got {v!r}", where=name)
    if types is not None:
        axis = "types"
        values: list = parse_types(types if isinstance(types, str) else ",".join(types))
    else:
        axis = "patterns"
        values = parse_patterns(
            "all"
            if patterns is None
            else patterns
            if isinstance(patterns, str)
            else ",".join(str(p) for p in patterns)
        )
    r = _resolve_recipe(recipe, overrides, max_steps)
    if eval_sample is None and r.eval_limit:
        eval_sample = r.eval_limit
    modes = list(r.eval_modes)
    rows, cols = subsets(axis, values, sample, eval_sample, eval_split, all_row)
    # -- the model (no weights read) ---------------------------------------------------------------
    from negbench.backends.sources import resolve, source_fingerprint

    src = resolve(model)
    from negbench.backends.registry import is_encoder_decoder

    if is_encoder_decoder(model):
        raise ModelError(
            f"'{model}' is an encoder-decoder model; negbench train fine-tunes "
            "decoder-only (causal) language models",
            where="--model",
            fix="use a causal model (e.g. smollm2)",
        )
    if device != "auto":
        from negbench.backends.hf import check_device

        check_device(device)
    # -- the output folder ----------------------------------------------------------------------------
    out = Path(out).expanduser().absolute()
    config = {
        "axis": axis,
        "subsets": [s.key for s in rows if s.key != "all"],
        "all_row": all_row,
        "sample": sample,
        "eval_sample": eval_sample,
        "eval_split": eval_split,
        "max_steps": r.max_steps,
        "recipe": r.name,
        "overrides": (dict(overrides) if isinstance(overrides, Mapping) else list(overrides or [])),
        "modes": modes,
    }
    identity = {
        "experiment": EXPERIMENT,
        "axis": axis,
        "model": model,
        "model_fingerprint": source_fingerprint(src),
        "recipe": {k: v for k, v in r.identity().items() if k not in ("data", "data_split")},
        "sample": sample,
        "eval_sample": eval_sample,
        "eval_split": eval_split,
        "modes": modes,
        "eval_chat": r.eval_chat,
    }
    resumes = _check_out(out, identity, overwrite)
    # -- tokenizer, template, data -------------------------------------------------------------------
    from negbench.train.data import load_training_data, resolve_template
    from negbench.train.trainer import load_tokenizer

    tok = load_tokenizer(src)
    template = resolve_template(r, tok)
    chat = r.eval_chat == "yes" or (r.eval_chat == "auto" and template == "chat")
    n_train, n_test = {}, {}
    for s in rows:
        where = _where(axis, s.key, f"training subset {s.spec}")
        try:
            td = load_training_data(s.spec, r.data_split, r.max_samples)
        except TaskError as exc:
            raise TaskError(
                f"the training subset '{s.label}' selects nothing"
                if "selects no records" in exc.what
                else exc.what,
                where=where,
                fix="choose subsets that have train blocks in this release (negbench "
                "export 'notadataset[split=train,patterns=N]' shows them)"
                if "selects no records" in exc.what
                else exc.fix,
            ) from None
        _check_cutoff(td, r, tok, template, where)
        n_train[s.key] = len(td.records)
    from negbench.evaluation.runner import RunConfig, prepare

    for s in cols:
        where = _where(axis, s.key, f"test subset {s.spec}")
        try:
            plan = prepare(
                RunConfig(
                    model=model,
                    tasks=[s.spec],
                    modes=modes or None,
                    shots=[0],
                    chat=chat,
                    backend={"device": device},
                )
            )
        except TaskError as exc:
            w = "--set eval_modes" if exc.where == "--modes" else where
            raise TaskError(exc.what, where=w, fix=exc.fix) from None
        n = len(plan.units[0].docs) if plan.units else 0
        if not n:
            raise TaskError(
                f"the test subset '{s.label}' selects nothing in the {eval_split} split",
                where=where,
                fix="--eval-split test, or leave this subset out",
            )
        n_test[s.key] = n
    return Plan(
        out,
        model,
        r,
        axis,
        rows,
        cols,
        chat,
        modes,
        device,
        config,
        identity,
        n_train,
        n_test,
        threads,
        cache,
        overwrite,
        progress,
        resumes,
    )


# -- running ------------------------------------------------------------------------------------------------
def _adapter_fingerprint(adapter: Path) -> str:
    from negbench.backends.sources import ModelSource, source_fingerprint

    return source_fingerprint(ModelSource(str(adapter), folder=str(adapter)))


def _finished_cell(p: Plan, run: Path, task: str, adapter: Path | None) -> dict | None:
    """The results of a cell's run folder when they are this cell's (same model, task, modes,
    chat, adapter weights), else None."""
    if not (run / "results.json").is_file():
        return None
    from negbench.evaluation.store import load_results

    try:
        res = load_results(run)
    except NegbenchError:
        return None
    from negbench.train.trainer import task_with_chat

    task = task_with_chat(task, p.chat)  # the spec eval_run gives the run
    cfg = res.get("config") or {}
    backend = cfg.get("backend") or {}
    details = (res.get("model") or {}).get("details") or {}
    if (
        cfg.get("tasks") != [task]
        or cfg.get("model") != p.model
        or bool(cfg.get("chat")) != p.chat
        or (cfg.get("modes") or []) != p.modes
        or cfg.get("shots") != [0]
        or bool(backend.get("adapter")) != (adapter is not None)
    ):
        return None
    if adapter is not None and details.get("adapter") != _adapter_fingerprint(adapter):
        return None
    return res


def _cell_values(p: Plan, res: dict, run: Path) -> dict:
    units = list((res.get("units") or {}).values())
    unit = next(
        (u for u in units if not p.modes or u.get("mode") == p.modes[0]),
        units[0] if units else None,
    )
    m = (unit or {}).get("metrics") or {}
    out = {k: m.get(k) for k in CELL_METRICS if isinstance(m.get(k), (int, float))}
    out["n"] = m.get("n")
    out["mode"] = (unit or {}).get("mode")
    out["run"] = str(run.relative_to(p.out))
    return out


def _evaluate_cell(
    p: Plan, row_key: str, col: Subset, adapter: Path | None, log: Callable[[str], None]
) -> tuple[dict, bool]:
    """(cell values, whether it was computed now)."""
    from negbench.train.trainer import eval_run

    run = p.cell_dir(row_key, col.key)
    res = _finished_cell(p, run, col.spec, adapter)
    if res is not None:
        return _cell_values(p, res, run), False
    stale = (run / "results.json").is_file()  # this experiment's own folder, out of date
    import warnings

    quiet = io.StringIO()
    with contextlib.ExitStack() as stack:
        stack.enter_context(contextlib.redirect_stdout(io.StringIO()))  # its tables: in its folder
        if not p.progress:
            stack.enter_context(contextlib.redirect_stderr(quiet))
        stack.enter_context(warnings.catch_warnings())
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*")
        eval_run(
            p.recipe,
            p.model,
            col.spec,
            run,
            chat=p.chat,
            adapter=adapter,
            device=p.device,
            cache=p.cache,
            overwrite=stale or p.overwrite,
            quiet=not p.progress,
            threads=p.threads,
        )
    from negbench.evaluation.store import load_results

    res = load_results(run)
    from negbench.evaluation.run_warnings import RunWarning

    for w in res.get("warnings") or []:
        log(f"warning: {run.relative_to(p.out)}: {RunWarning.of(w).text()}")
    return _cell_values(p, res, run), True


def _train_row(p: Plan, row: Subset, log: Callable[[str], None]) -> tuple[Path, dict, bool]:
    from negbench.train.trainer import read_train_json, train

    final = p.train_dir(row.key) / "adapter"
    before = (read_train_json(final) or {}).get("finished")
    adapter = train(
        p.recipe,
        p.model,
        p.train_dir(row.key),
        data=row.spec,
        overwrite=p.overwrite,
        device=p.device,
        threads=p.threads,
        cache=p.cache,
        progress=p.progress,
        log=log,
    )
    info = read_train_json(adapter) or {}
    return adapter, info, info.get("finished") != before


def _skeleton(p: Plan) -> dict:
    r = p.recipe
    return {
        "schema": SCHEMA,
        "experiment": EXPERIMENT,
        "axis": p.axis,
        "model": p.model,
        "recipe": {"name": r.name, "paper": r.paper, "settings": r.to_dict()},
        "config": {**p.config, "chat": p.chat},
        "metric": "acc",
        "paper": (
            "This is not a Dataset §6, Figure 2 (accuracy; trained on one pattern, tested "
            "on the others)"
            if p.axis == "patterns"
            else "This is not a Dataset §6, Table 7 (training subsets by negation type)"
        ),
        "complete": False,
        "started": _now(),
        "finished": None,
        "columns": [
            {"key": c.key, "label": c.label, "task": c.spec, "n": p.n_test[c.key]}
            for c in p.columns
        ],
        "base": {"key": "base", "label": "base (zero-shot)", "cells": [None] * len(p.columns)},
        "rows": [
            {
                "key": s.key,
                "label": s.label,
                "train_data": s.spec,
                "n_train": p.n_train[s.key],
                "adapter": None,
                "steps": None,
                "train_loss": None,
                "cells": [None] * len(p.columns),
            }
            for s in p.rows
        ],
    }


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _write_matrix(p: Plan, m: dict) -> None:
    from negbench.files import write_json

    write_json(p.out / "matrix.json", m)


def execute(p: Plan, log: Callable[[str], None] = _log_default, ray=None) -> dict:
    """Train every row, evaluate every cell (the base row first), write the matrix files.
    ``ray`` (:class:`negbench.evaluation.cluster.ClusterOptions`): rows and base cells run as jobs on a Ray
    cluster instead (:func:`_execute_ray`); the driver alone writes the matrix."""
    from negbench.report.matrix import save_heatmap, to_markdown
    from negbench.files import atomic_write_text, write_json

    p.out.mkdir(parents=True, exist_ok=True)
    write_json(
        p.out / EXPERIMENT_JSON,
        {"schema": SCHEMA, "identity": p.identity, "config": p.config, "updated": _now()},
    )
    m = _skeleton(p)
    stats = {"trained": 0, "reused_adapters": 0, "evaluated": 0, "reused_cells": 0}
    total = len(p.columns) * (len(p.rows) + 1)
    k = 0
    t0 = time.perf_counter()

    def cell(row_key: str, row_label: str, j: int, col: Subset, adapter: Path | None) -> dict:
        nonlocal k
        k += 1
        t = time.perf_counter()
        values, fresh = _evaluate_cell(p, row_key, col, adapter, log)
        stats["evaluated" if fresh else "reused_cells"] += 1
        acc = values.get("acc")
        log(
            f"[{k}/{total}] {row_label} → {col.label}: accuracy "
            + (f"{100 * acc:.1f}%" if isinstance(acc, (int, float)) else "–")
            + f" (n={values.get('n')})"
            + (f", {time.perf_counter() - t:.1f}s" if fresh else ", done before")
        )
        return values

    if p.resumes:
        log(f"continuing the experiment in {p.out}")
    if ray is not None:
        _execute_ray(p, m, stats, log, ray)
    for j, col in () if ray is not None else enumerate(p.columns):
        m["base"]["cells"][j] = cell("base", "base", j, col, None)
        _write_matrix(p, m)
    for i, row in () if ray is not None else enumerate(p.rows):
        log(
            f"row {i + 1}/{len(p.rows)}: {row.label} — training data {row.spec} "
            f"({p.n_train[row.key]} records)"
        )
        adapter, info, fresh = _train_row(p, row, log)
        stats["trained" if fresh else "reused_adapters"] += 1
        m["rows"][i].update(
            adapter=str(adapter.relative_to(p.out)),
            steps=info.get("steps"),
            train_loss=info.get("train_loss"),
            n_train=(info.get("data") or {}).get("n_records", p.n_train[row.key]),
        )
        for j, col in enumerate(p.columns):
            m["rows"][i]["cells"][j] = cell(row.key, row.label, j, col, adapter)
            _write_matrix(p, m)
    m["complete"] = True
    m["finished"] = _now()
    m["stats"] = {**stats, "wall_s": round(time.perf_counter() - t0, 1)}
    _write_matrix(p, m)
    from negbench.files import json_safe

    m = json_safe(m)
    atomic_write_text(p.out / "matrix.md", to_markdown(m))
    save_heatmap(m, p.out / "heatmap.png")
    return m


def _ray_job(
    p: Plan, row: Subset | None, col: Subset | None, cwd: str, env: dict[str, str]
) -> dict:
    """One job on a Ray worker: a base cell (``row`` None), or a row — its training, then its
    evaluation on every column (the adapter is the row's).  Log lines go back to the driver."""
    import os

    os.chdir(cwd)  # the driver's relative paths (shared files)
    os.environ.update(env)
    lines: list[str] = []
    if row is None:
        assert col is not None  # a base cell names its column
        values, fresh = _evaluate_cell(p, "base", col, None, lines.append)
        return {"values": values, "fresh": fresh, "log": lines}
    adapter, info, trained = _train_row(p, row, lines.append)
    cells = [_evaluate_cell(p, row.key, c, adapter, lines.append) for c in p.columns]
    return {"adapter": str(adapter), "info": info, "trained": trained, "cells": cells, "log": lines}


def _execute_ray(p: Plan, m: dict, stats: dict, log: Callable[[str], None], opts) -> None:
    """Base cells and rows as Ray jobs, at most one per worker at a time; the matrix is filled
    and written by the driver as jobs finish.  A job whose worker dies is run again (training
    resumes from its last checkpoint; finished cells are not redone), at most three times.
    Workers must see the driver's files (one machine, or a shared filesystem)."""
    import os
    from collections import deque
    from negbench.evaluation.cluster import (
        MAX_ATTEMPTS,
        PASS_ENV,
        ClusterError,
        RayPool,
        short_error,
    )

    pool = RayPool(opts)
    pool.connect()
    ray = pool.ray
    try:
        job = ray.remote(
            num_cpus=opts.cpus_per_worker, num_gpus=opts.gpus_per_worker, max_retries=0
        )(_ray_job)
        env = {k: v for k, v in os.environ.items() if PASS_ENV.match(k)}
        if p.threads is None:
            p.threads = max(1, int(opts.cpus_per_worker))
        todo = deque(
            [(None, j) for j in range(len(p.columns))] + [(i, None) for i in range(len(p.rows))]
        )
        lost = tuple(
            getattr(ray.exceptions, n)
            for n in ("WorkerCrashedError", "NodeDiedError", "OutOfMemoryError")
            if hasattr(ray.exceptions, n)
        )  # the worker died, not the job
        attempts: dict[tuple, int] = {}
        inflight: dict = {}
        total = len(p.columns) * (len(p.rows) + 1)
        k = 0
        log(
            f"ray: {len(todo)} jobs ({len(p.columns)} base cells, {len(p.rows)} rows) on "
            f"{pool.n_workers} worker(s)"
        )
        while todo or inflight:
            while todo and len(inflight) < pool.n_workers:
                i, j = key = todo.popleft()
                attempts[key] = attempts.get(key, 0) + 1
                ref = job.remote(
                    p,
                    None if i is None else p.rows[i],
                    None if j is None else p.columns[j],
                    os.getcwd(),
                    env,
                )
                inflight[ref] = key
            ready, _ = ray.wait(list(inflight), num_returns=1)
            key = inflight.pop(ready[0])
            i, j = key
            try:
                r = ray.get(ready[0])
            except lost as exc:
                pool.retries.append(_retry(p, key, exc, attempts[key]))
                if attempts[key] >= MAX_ATTEMPTS:
                    raise ClusterError(
                        f"job {key} failed {attempts[key]} times ({short_error(exc)})",
                        where="--ray",
                        fix="rerun: finished cells are kept",
                    ) from None
                todo.appendleft(key)
                continue
            except ray.exceptions.RayTaskError as exc:  # the job's own error: as without Ray
                cause = exc.as_instanceof_cause()
                raise cause if isinstance(cause, NegbenchError) else exc
            for line in r["log"]:
                log(line)
            if i is None:
                m["base"]["cells"][j] = r["values"]
                cells = [(j, r["values"], r["fresh"])]
                label = "base"
            else:
                row = p.rows[i]
                stats["trained" if r["trained"] else "reused_adapters"] += 1
                info = r["info"]
                m["rows"][i].update(
                    adapter=str(Path(r["adapter"]).relative_to(p.out)),
                    steps=info.get("steps"),
                    train_loss=info.get("train_loss"),
                    n_train=(info.get("data") or {}).get("n_records", p.n_train[row.key]),
                )
                cells = [(jj, v, f) for jj, (v, f) in enumerate(r["cells"])]
                for jj, v, _ in cells:
                    m["rows"][i]["cells"][jj] = v
                label = row.label
            for jj, v, fresh in cells:
                k += 1
                stats["evaluated" if fresh else "reused_cells"] += 1
                acc = v.get("acc")
                log(
                    f"[{k}/{total}] {label} → {p.columns[jj].label}: accuracy "
                    + (f"{100 * acc:.1f}%" if isinstance(acc, (int, float)) else "–")
                    + f" (n={v.get('n')})"
                    + ("" if fresh else ", done before")
                )
            _write_matrix(p, m)
        m["cluster"] = pool.summary()
    finally:
        pool.close()


def _retry(p: Plan, key: tuple, exc: BaseException, attempt: int):
    from negbench.evaluation.cluster import RetryRecord, short_error

    i, j = key
    name = f"base/{p.columns[j].key}" if i is None else f"row/{p.rows[i].key}"
    return RetryRecord(name, None, short_error(exc), attempt)


def notadataset_generalisation(
    model: str, out: str | Path, *, log: Callable[[str], None] | None = None, ray=None, **kw
) -> dict:
    """Plan (every check) and run the experiment; returns the matrix (``matrix.json``).
    ``ray``: :class:`negbench.evaluation.cluster.ClusterOptions` to run rows and cells on a Ray cluster."""
    import torch

    threads0 = torch.get_num_threads()
    try:
        p = plan_experiment(model, out, **kw)
        return execute(p, log or _log_default, ray=ray)
    finally:
        torch.set_num_threads(threads0)


# -- command line ------------------------------------------------------------------------------------------
__all__ = [
    "notadataset_generalisation",
    "plan_experiment",
    "execute",
    "parse_patterns",
    "parse_types",
    "subsets",
    "Plan",
    "Subset",
    "SCHEMA",
]
