"""Builders of paper-shaped tables, keyed by benchmark.

A builder takes the report context (all runs) and the task names of its benchmark found in them,
and returns :class:`~negbench.scoring.tables.Table` objects whose rows are models (runs) — so
several runs make one table, as in the papers.  Benchmarks register theirs in their home's
``register`` hook (registry kind ``paper_tables``; e.g. ``negbench/tasks/nubench/paper_tables.py``)::

    r.add("paper_tables", "my-benchmark", "negbench.tasks.my_benchmark.paper_tables:paper_tables")

Tasks of a benchmark with no builder get :func:`generic_tables` (one table of every numeric group
metric).  Cell values come from the runs' saved metrics (results.json) and every cell carries a
Ref that recomputes it from the per-sample records (:func:`negbench.scoring.tables.resolve_ref`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence, cast

from negbench.scoring.runs import Run, breakdowns, benchmark_of, nanmean, primary_metric
from negbench.scoring.tables import (
    Cell,
    Column,
    Row,
    Table,
    metric_cell,
    set_share_interval,
    slug,
)

Builder = Callable[["Context", list[str]], list[Table]]

#: What a cell averaged over seeds shows, for the captions (the table's legend says it again
#: under a table that has such a cell).
SD_OVER_SEEDS = (
    "mean ± SD over seeds where seeds exist (± is the SD over seeds, not a 95 % margin; one "
    "seed has none)"
)
#: What a rate cell's brackets are, for the captions.
RATE_CI = (
    "each rate with its 95 % interval and n, [a–b] (n), or (n, no CI) where too few items "
    "allow none"
)


@dataclass
class Context:
    runs: list[Run]
    #: model groups for average rows (Figure 3 / Table 11): name → run labels
    groups: dict[str, list[str]] = field(default_factory=dict)

    def runs_with(self, task: str) -> list[Run]:
        return [r for r in self.runs if task in r.tasks()]


def builders() -> dict[str, Builder]:
    """The registered paper-table builders, by benchmark."""
    from negbench.scoring.registry import REGISTRY

    return REGISTRY.entries("paper_tables")


def build_tables(ctx: Context) -> list[Table]:
    """Every table for every benchmark in the runs (paper-shaped where a builder exists)."""
    tasks: list[str] = []
    for r in ctx.runs:
        for t in r.tasks():
            if t not in tasks:
                tasks.append(t)
    by_bench: dict[str, list[str]] = {}
    for t in tasks:
        by_bench.setdefault(benchmark_of(t), []).append(t)
    out: list[Table] = []
    from negbench.scoring.registry import REGISTRY

    for bench, ts in by_bench.items():
        fn = REGISTRY.get("paper_tables", bench, generic_tables)
        out.extend(fn(ctx, ts))
    out.extend(breakdown_tables(ctx))
    for r in ctx.runs:  # the filter views the rate cells read (Run.filter_views)
        r._views.clear()
    ids: dict[str, int] = {}
    for table in out:  # unique, URL-safe ids
        base = slug(table.id)
        ids[base] = ids.get(base, 0) + 1
        table.id = base if ids[base] == 1 else f"{base}-{ids[base]}"
    return out


# -- shared pieces ----------------------------------------------------------------------------------
def shot_label(k: int) -> str:
    return "zero-shot" if k == 0 else f"{k}-shot"


@dataclass
class ModelRow:
    label: str
    base: Run | None
    sft: Run | None


def model_rows(runs: Sequence[Run]) -> list[ModelRow]:
    """One row per model: a fine-tuned run (LoRA adapter) joins the row of a run of its base
    model ("After SFT" columns); otherwise it is a row of its own."""
    rows: list[ModelRow] = []
    for r in runs:
        if not r.finetuned:
            rows.append(ModelRow(r.label, r, None))
    for r in runs:
        if r.finetuned:
            host = next(
                (
                    m
                    for m in rows
                    if m.base is not None and m.sft is None and m.base.model_spec == r.model_spec
                ),
                None,
            )
            if host:
                host.sft = r
            else:
                rows.append(ModelRow(r.label, None, r))
    return rows


def average_rows(
    ctx: Context, table_rows: list[Row], labels: list[str], n_label_cols: int
) -> list[Row]:
    """ "<group> average" rows (mean of the model rows' cell values) and a total average row."""
    out = []
    ncols = len(table_rows[0].cells) if table_rows else 0

    def avg(rows: list[Row], name: str) -> Row:
        cells: list[Cell | None] = []
        for ci in range(ncols):
            vals = [c.value for r in rows if (c := r.cells[ci]) is not None and c.is_number()]
            digits = next((c.digits for r in rows if (c := r.cells[ci]) is not None), 3)
            numbers = cast(list[float], vals)  # is_number() kept only the numbers
            cells.append(Cell(nanmean(numbers), None, 1, digits, None, []) if vals else None)
        return Row([name] + [""] * (n_label_cols - 1), cells, "average")

    for g, members in ctx.groups.items():
        rows = [r for r, lab in zip(table_rows, labels) if lab in members]
        if rows:
            out.append(avg(rows, f"{g} average"))
    if len(table_rows) > 1:
        out.append(avg(table_rows, "total average"))
    return out


def union_shots(runs: Sequence[Run], task: str, mode: str | None = None) -> list[int]:
    return sorted({k for r in runs for k in r.shots(task, mode)})


def union_modes(runs: Sequence[Run], task: str, order: Sequence[str] = ()) -> list[str]:
    found = {m for r in runs for m in r.modes(task)}
    return [m for m in order if m in found] + sorted(found - set(order))


def shots_table(
    ctx: Context,
    task: str,
    *,
    modes: dict[str, str],
    metric: Callable[[str], str],
    field_of: Callable[[str], str | None],
    scale: float,
    digits: int,
    title: str,
    paper: str,
    caption: str,
    mode_order: Sequence[str] = (),
) -> Table | None:
    """Table 11 / KoNUBench Table 16 shape: a row per model; columns shots × mode (+ After SFT)."""
    runs = ctx.runs_with(task)
    if not runs:
        return None
    mlist = union_modes(runs, task, mode_order)
    base_runs = [r for r in runs if not r.finetuned]
    sft_runs = [r for r in runs if r.finetuned]
    cols: list[Column] = []
    spec: list[tuple[str, int, str]] = []  # (which, shots, mode)
    for k in union_shots(base_runs or runs, task):
        for m in mlist:
            if any(r.select(task, m, k) for r in (base_runs or runs)):
                cols.append(Column((shot_label(k), modes.get(m, m)), f"{k}shot.{m}"))
                spec.append(("base", k, m))
    if sft_runs and base_runs:
        for m in mlist:
            if any(r.select(task, m, 0) for r in sft_runs):
                cols.append(Column(("After SFT", modes.get(m, m)), f"sft.{m}"))
                spec.append(("sft", 0, m))
    rows, labels = [], []
    for mr in model_rows(runs):
        cells: list[Cell | None] = []
        for which, k, m in spec:
            run = (mr.base if which == "base" else mr.sft) if base_runs else (mr.base or mr.sft)
            if run is None:
                cells.append(None)
                continue
            units = run.select(task, m, k)
            f = field_of(m) or primary_metric(task, m, units[0].metrics if units else None)
            cells.append(
                metric_cell(
                    run, units, metric(m), scale=scale, digits=digits, stat="mean", field_=f
                )
            )
        rows.append(Row([mr.label], cells))
        labels.append(mr.label)
    rows += average_rows(ctx, rows, labels, 1)
    return Table(
        f"{task}-accuracy",
        title,
        benchmark_of(task),
        ["model"],
        cols,
        rows,
        caption=caption,
        paper=paper,
    )


WRONG = ("local", "contradiction", "paraphrase")
WRONG_LABELS = {
    "local": "Local Negation (%)",
    "contradiction": "Contradiction (%)",
    "paraphrase": "Paraphrase (%)",
}


def _has_format_errors(runs: Sequence[Run], task: str, modes: Sequence[str], ea_path: str) -> bool:
    for r in runs:
        for m in modes:
            for u in r.select(task, m):
                ea = u.metrics.get(ea_path) or {}
                if ea.get("n_format_wrong") or "exact_match" in u.metrics:  # a generation mode
                    return True
    return False


def error_table(
    ctx: Context,
    task: str,
    modes: str | Sequence[str],
    *,
    subtype_key: str | None,
    subtypes: Sequence[tuple[str, str]],
    title: str,
    paper: str,
    caption: str,
    performance: tuple | None = None,
    error_rate: bool = True,
    ea_path: str = "error_analysis",
    table_id: str | None = None,
    seed: int | None = None,
    ref_metric: bool = False,
) -> Table | None:
    """NUBench Table 6 / 15–22 and KoNUBench Table 8 shape: a row per model × setting
    (baseline / SFT) [× evaluation method] × shots; performance, error rate, answer-format-wrong
    count, incorrect-choice distribution, local-negation confusion per clause type.  ``seed``:
    few-shot cells from that seed's unit only (NUBench App. R), else the mean over seeds.
    ``performance``: (label, metric path, scale, digits[, {mode: sample field}]).  ``ref_metric``:
    the distribution cells' Refs recompute the task's metric at ``ea_path`` (for a labelling the
    samples' option types do not give, e.g. KoNUBench Table 8 as the official script labels)."""
    modes = [modes] if isinstance(modes, str) else list(modes)
    runs = [
        r
        for r in ctx.runs_with(task)
        if any(ea_path in u.metrics for m in modes for u in r.select(task, m))
    ]
    if not runs:
        return None
    cols: list[Column] = []
    if performance:
        cols.append(Column((performance[0],), "performance"))
    if error_rate:
        cols.append(Column(("Error Rate (1-acc)",), "error_rate"))
    fmt = _has_format_errors(runs, task, modes, ea_path)
    if fmt:
        cols.append(Column(("Answer Format Wrong",), "format_wrong"))
    for t in WRONG:
        cols.append(Column(("Incorrect Choice Distribution", WRONG_LABELS[t]), f"incorrect.{t}"))
    for s, lab in subtypes:
        cols.append(Column(("Local Negation Confusion Rate", f"{lab} (%)"), f"confusion.{s}"))
    many = len(modes) > 1
    rows = []
    for r in runs:
        setting = "SFT" if r.finetuned else "baseline"
        for mode in modes:
            for k in r.shots(task, mode):
                units = [
                    u
                    for u in r.select(task, mode, k)
                    if ea_path in u.metrics and (seed is None or k == 0 or u.seed == seed)
                ]
                if not units:
                    continue
                cells: list[Cell | None] = []
                if performance:
                    _, path, sc, dg = performance[:4]
                    f = (performance[4] if len(performance) > 4 else {}).get(
                        mode
                    ) or primary_metric(task, mode, units[0].metrics)
                    cells.append(
                        metric_cell(r, units, path, scale=sc, digits=dg, stat="mean", field_=f)
                    )
                if error_rate:
                    cells.append(
                        metric_cell(
                            r,
                            units,
                            f"{ea_path}.error_rate",
                            digits=3,
                            stat="share",
                            hit={"error_type": {"not": None}},
                        )
                    )
                if fmt:
                    c = metric_cell(
                        r,
                        units,
                        f"{ea_path}.n_format_wrong",
                        digits=0,
                        stat="count",
                        hit={"error_type": "format"},
                    )
                    if c is not None and c.n > 1:
                        c.digits = 1
                    cells.append(c)
                for t in WRONG:
                    if ref_metric:
                        c = metric_cell(r, units, f"{ea_path}.incorrect_choice.{t}.pct", digits=2)
                        if len(units) == 1:  # the labelling is the task's: n and CI from counts
                            ea = units[0].metrics[ea_path]
                            readable = ea.get("n_wrong", 0) - ea.get("n_format_wrong", 0)
                            picked = ea["incorrect_choice"][t].get("n")
                            set_share_interval(c, picked, readable)
                        cells.append(c)
                        continue
                    cells.append(
                        metric_cell(
                            r,
                            units,
                            f"{ea_path}.incorrect_choice.{t}.pct",
                            digits=2,
                            stat="share",
                            where={"error_type": list(WRONG)},
                            hit={"error_type": t},
                            ref_scale=100.0,
                        )
                    )
                for s, _ in subtypes:
                    cells.append(
                        metric_cell(
                            r,
                            units,
                            f"{ea_path}.local_confusion.{s}.pct",
                            digits=2,
                            stat="share",
                            where={f"meta.{subtype_key}": s},
                            hit={"error_type": "local"},
                            ref_scale=100.0,
                        )
                    )
                labels = [r.label, setting] + ([mode] if many else []) + [shot_label(k)]
                rows.append(Row(labels, cells))
    head = ["model", "setting"] + (["evaluation method"] if many else []) + ["shots"]
    return Table(
        table_id or f"{task}-{'-'.join(modes)}-errors",
        title,
        benchmark_of(task),
        head,
        cols,
        rows,
        caption=caption,
        paper=paper,
    )


# -- any other task -------------------------------------------------------------------------------
MAX_GENERIC_COLUMNS = 12


def breakdown_tables(ctx: Context) -> list[Table]:
    """Every breakdown the runs saved (a YAML task's ``group_by`` metrics such as
    ``acc_by_negated``, KoNUBench's per clause type …): one table per run, unit and breakdown,
    a row per cell with its n, value and 95 % interval."""
    out = []
    for r in ctx.runs:
        for b in breakdowns(r.results):
            u = r.units.get(b.unit)
            t = Table(
                f"{b.unit}-{b.name}",
                f"{r.label} · {b.unit}: {b.metric} by {b.field}",
                benchmark_of(u.task) if u else "",
                [b.field],
                [Column(("n",)), Column((b.metric,), b.metric), Column(("95 % CI",))],
                paper="",
                caption="n: the cell's items; 95 % CI: Wilson over them, from 30 items (– where "
                "the metric is not a 0/1 score or the cell has fewer items).",
            )
            for c in b.cells:
                t.rows.append(
                    Row(
                        [c.group],
                        [
                            Cell(str(c.n)),
                            Cell(float("nan") if c.value is None else c.value, digits=4),
                            Cell(f"{c.ci[0]:.3f}–{c.ci[1]:.3f}" if c.ci else "–"),
                        ],
                    )
                )
            out.append(t)
    return out


def generic_tables(ctx: Context, tasks: list[str]) -> list[Table]:
    """One table per task: a row per model × mode × shots, a column per numeric group metric
    (counts and standard errors left out), mean ± SD over seeds."""
    out = []
    for task in tasks:
        runs = ctx.runs_with(task)
        metrics: list[str] = []
        for r in runs:
            for u in r.select(task):
                for m, v in u.metrics.items():
                    if (
                        isinstance(v, (int, float))
                        and not isinstance(v, bool)
                        and m != "n"
                        and not m.endswith("_stderr")
                        and not m.startswith("n_")
                        and m not in metrics
                    ):
                        metrics.append(m)
        metrics = metrics[:MAX_GENERIC_COLUMNS]
        if not metrics:
            continue
        rows = []
        for r in runs:
            for mode in r.modes(task):
                for k in r.shots(task, mode):
                    units = r.select(task, mode, k)
                    try:
                        first = r.samples(units[0].name)[:1]
                    except Exception:
                        first = []
                    cells = []
                    for m in metrics:
                        is_field = (
                            bool(first)
                            and isinstance(first[0].get(m), (int, float))
                            and not isinstance(first[0].get(m), bool)
                        )
                        cells.append(
                            metric_cell(
                                r,
                                units,
                                m,
                                digits=4,
                                stat="mean" if is_field else "metric",
                                field_=m if is_field else None,
                            )
                        )
                    rows.append(Row([r.label, mode, shot_label(k)], cells))
        out.append(
            Table(
                f"{task}-metrics",
                f"{task}: metrics (mean ± SD over seeds)",
                benchmark_of(task),
                ["model", "mode", "shots"],
                [Column((m,), m) for m in metrics],
                rows,
                caption=f"Every numeric metric of the task's units; {SD_OVER_SEEDS}.",
                paper="",
            )
        )
    return out
