"""Generalisation matrices (``negbench experiment notadataset-generalisation``): the Figure 2
table of This is not a Dataset — trained on one subset (rows), tested on every subset (columns) —
as Markdown, as a report :class:`~negbench.scoring.tables.Table`, and as an annotated heatmap.

A matrix is the ``matrix.json`` an experiment writes (schema ``negbench.experiment/1``)::

    {"schema": "negbench.experiment/1", "experiment": "notadataset-generalisation",
     "axis": "patterns" | "types", "model": …, "recipe": {…}, "config": {…},
     "metric": "acc", "complete": true,
     "columns": [{"key": "p02", "label": "#02 Antonymy1", "task": "notadataset[…]", "n": 705}, …],
     "base":    {"key": "base", "label": "base (zero-shot)", "cells": [CELL, …]},
     "rows":    [{"key": "p02", "label": …, "train_data": …, "adapter": …, "cells": [CELL, …]}, …]}

with ``CELL = {"acc": 0.93, "coherence_all": 0.41, "n": 705, "run": "cells/p02/p06"}`` (null
while a cell is not evaluated yet).  ``negbench report DIR`` (the experiment folder, or its
``matrix.json``) shows the table and the heatmap; run folders may be given beside it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable, Sequence

from negbench.errors import DataError

SCHEMA = "negbench.experiment/1"
MATRIX_JSON = "matrix.json"
#: metric key → (heading, whether it is a fraction shown in percent)
METRICS = {
    "acc": "accuracy",
    "coherence_all": "coherence (All)",
    "pred_true_rate": "answers 'True'",
}


# -- reading --------------------------------------------------------------------------------------
def matrix_path(path: str | Path) -> Path | None:
    """The ``matrix.json`` that ``path`` names (an experiment folder or the file), else None."""
    p = Path(path)
    if p.is_dir() and (p / MATRIX_JSON).is_file():
        return p / MATRIX_JSON
    if p.is_file() and p.suffix == ".json":
        try:
            head = p.read_text(encoding="utf-8", errors="replace")[:400]
        except OSError:
            return None
        if SCHEMA in head:
            return p
    return None


def load_matrix(path: str | Path) -> dict:
    p = matrix_path(path) or Path(path)
    try:
        m = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(
            f"cannot read the experiment matrix ({exc})",
            path=str(p),
            fix="rerun the experiment command (finished cells are kept)",
        ) from None
    if not isinstance(m, dict) or m.get("schema") != SCHEMA:
        raise DataError(
            "not a negbench experiment matrix",
            path=str(p),
            fix="give the folder 'negbench experiment' wrote, or its matrix.json",
        )
    m["_path"] = str(p)
    return m


def split_paths(paths: Sequence[str]) -> tuple[list[str], list[str]]:
    """(run folders, experiment matrices) among the paths given to ``negbench report``."""
    runs: list[str] = []
    exps: list[str] = []
    for p in paths:
        (exps if matrix_path(p) is not None else runs).append(p)
    return runs, exps


# -- values ---------------------------------------------------------------------------------------
def value(cell: dict | None, metric: str) -> float:
    """A cell's metric in percent (NaN when missing)."""
    if not cell:
        return float("nan")
    v = cell.get(metric)
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return float("nan")
    return 100.0 * float(v)


def grid(
    m: dict, metric: str = "acc", base: bool = True
) -> tuple[list[str], list[str], list[list[float]]]:
    """(row labels, column labels, values in percent): the base row first when ``base``."""
    rows = ([m["base"]] if base and m.get("base") else []) + list(m.get("rows") or [])
    return (
        [r["label"] for r in rows],
        [c["label"] for c in m["columns"]],
        [[value(c, metric) for c in r["cells"]] for r in rows],
    )


def has_metric(m: dict, metric: str) -> bool:
    return any(not math.isnan(v) for row in grid(m, metric)[2] for v in row)


def off_diagonal_mean(m: dict, row: dict, metric: str = "acc") -> float:
    """Mean over the columns other than the row's own subset (all columns for the base row)."""
    vals = [
        value(c, metric)
        for c, col in zip(row["cells"], m["columns"])
        if col["key"] != row.get("key")
    ]
    vals = [v for v in vals if not math.isnan(v)]
    return sum(vals) / len(vals) if vals else float("nan")


def model_label(m: dict) -> str:
    """The model as shown in titles: a path's last part, else the spec."""
    spec = str(m.get("model", ""))
    return Path(spec).name if ("/" in spec and Path(spec).expanduser().exists()) else spec


def _pct(v: float, digits: int = 1) -> str:
    return "–" if v is None or math.isnan(v) else f"{v:.{digits}f}"


def _md(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


# -- Markdown -------------------------------------------------------------------------------------
def metric_table_md(m: dict, metric: str) -> str:
    cols = m["columns"]
    head = ["trained on ↓ · tested on →"] + [c["label"] for c in cols] + ["mean, other subsets"]
    lines = [
        "| " + " | ".join(_md(h) for h in head) + " |",
        "|---" + "|---:" * (len(cols) + 1) + "|",
    ]
    rows = ([m["base"]] if m.get("base") else []) + list(m.get("rows") or [])
    for r in rows:
        cells = []
        for c, col in zip(r["cells"], cols):
            s = _pct(value(c, metric))
            cells.append(f"**{s}**" if col["key"] == r.get("key") and s != "–" else s)
        lines.append(
            f"| {_md(r['label'])} | "
            + " | ".join(cells)
            + f" | {_pct(off_diagonal_mean(m, r, metric))} |"
        )
    return "\n".join(lines)


def to_markdown(m: dict) -> str:
    """``matrix.md``: the accuracy matrix (Figure 2), coherence where it is defined, the test
    subsets' sizes and the trained adapters."""
    cfg = m.get("config") or {}
    rec = m.get("recipe") or {}
    axis = m.get("axis", "patterns")
    out = [
        f"# {m.get('experiment', 'experiment')}: {model_label(m)}",
        "",
        f"Model `{m.get('model', '')}`.",
        "",
    ]
    out += [
        f"Rows: the subset the LoRA adapter was trained on (train split, by block); columns: "
        f"the subset it is tested on ({cfg.get('eval_split', 'test')} split, by block). "
        f"Cells: accuracy in percent, zero-shot `{', '.join(cfg.get('modes') or [])}` "
        f"scoring; the diagonal (trained and tested on the same {axis[:-1]}) in bold. "
        "The base row is the model without an adapter; the last column is the mean over the "
        "other subsets (over all of them for the base row). "
        + (
            "This is the shape of *This is not a Dataset*, Figure 2."
            if axis == "patterns"
            else "Rows as in *This is not a Dataset*, Table 7 (affirmations + one negation type); "
            "columns: the test sentences of each type."
        ),
        "",
    ]
    if not m.get("complete", False):
        out += [
            "**Unfinished**: cells shown as – are not evaluated yet; rerun the same command to "
            "continue.",
            "",
        ]
    out += ["## Accuracy (%)", "", metric_table_md(m, "acc"), ""]
    if axis == "patterns" and has_metric(m, "coherence_all"):
        out += [
            "## Coherence, All (%)",
            "",
            "Not in Figure 2 (the paper reports accuracy there); the share of test blocks "
            "whose answers are coherent (§4.3), over the column's complete blocks.",
            "",
            metric_table_md(m, "coherence_all"),
            "",
        ]
    if has_metric(m, "pred_true_rate"):
        out += [
            "## Answers 'True' (%)",
            "",
            "The share of the column's sentences the model called True: 0 or 100 means one "
            "answer for everything, whatever the accuracy.",
            "",
            metric_table_md(m, "pred_true_rate"),
            "",
        ]
    out += ["## Subsets", "", "| subset | tested on (task) | test sentences |", "|---|---|---:|"]
    for c in m["columns"]:
        out.append(f"| {_md(c['label'])} | `{c.get('task', '')}` | {c.get('n', '–')} |")
    out += [
        "",
        "| trained on | training data | records | steps | mean train loss | adapter |",
        "|---|---|---:|---:|---:|---|",
    ]
    for r in m.get("rows") or []:
        loss = r.get("train_loss")
        out.append(
            f"| {_md(r['label'])} | `{r.get('train_data', '')}` | {r.get('n_train', '–')} | "
            f"{r.get('steps', '–')} | "
            + (f"{loss:.4f}" if isinstance(loss, (int, float)) else "–")
            + f" | `{r.get('adapter', '')}` |"
        )
    out += [
        "",
        f"Recipe `{rec.get('name', '')}` ({rec.get('paper', '')}); training sample: "
        f"{cfg.get('sample') or 'all'} sentences per subset; test sample: "
        f"{cfg.get('eval_sample') or 'all'} sentences per subset; max steps: "
        f"{cfg.get('max_steps') or 'the recipe’s epochs'}. Run folders: `cells/ROW/COLUMN`.",
        "",
    ]
    return "\n".join(out)


# -- heatmap --------------------------------------------------------------------------------------
def heatmap_figure(m: dict, metric: str = "acc"):
    """An annotated heatmap (matplotlib figure): base row on top, separated by a white rule;
    the diagonal outlined; values in percent (– where not evaluated)."""
    from negbench.report.plots import pyplot

    plt = pyplot()
    import matplotlib.patches as patches

    rows, cols, vals = grid(m, metric)
    nr, nc = len(rows), len(cols)
    width = min(2.6 + 0.78 * nc + max(len(r) for r in rows) * 0.065, 16)
    height = min(1.7 + 0.52 * nr + max(len(c) for c in cols) * 0.05, 14)
    fig, ax = plt.subplots(figsize=(width, height))
    masked = [[(v if not math.isnan(v) else float("nan")) for v in row] for row in vals]
    cmap = plt.get_cmap("viridis").with_extremes(bad="#d9d9d9")
    import numpy as np

    arr = np.ma.masked_invalid(np.array(masked, dtype=float))
    im = ax.imshow(arr, cmap=cmap, vmin=0, vmax=100, aspect="auto")
    for i in range(nr):
        for j in range(nc):
            v = vals[i][j]
            if math.isnan(v):
                ax.text(j, i, "–", ha="center", va="center", fontsize=9, color="#555555")
                continue
            r, g, b, _ = cmap(v / 100)
            light = 0.299 * r + 0.587 * g + 0.114 * b > 0.55
            ax.text(
                j,
                i,
                f"{v:.0f}" if nc > 8 else f"{v:.1f}",
                ha="center",
                va="center",
                fontsize=9 if nc <= 8 else 8,
                color="black" if light else "white",
                fontweight="bold" if _diag(m, i, j) else "normal",
            )
            if _diag(m, i, j):
                ax.add_patch(
                    patches.Rectangle(
                        (j - 0.46, i - 0.46), 0.92, 0.92, fill=False, edgecolor="black", lw=1.6
                    )
                )
    if m.get("base"):
        ax.axhline(0.5, color="white", lw=4)
    ax.set_xticks(
        range(nc),
        cols,
        rotation=35 if max(len(c) for c in cols) > 6 else 0,
        ha="right" if max(len(c) for c in cols) > 6 else "center",
    )
    ax.set_yticks(range(nr), rows)
    ax.set_xlabel("tested on")
    ax.set_ylabel("trained on")
    for s in ax.spines.values():
        s.set_visible(False)
    cb = fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02)
    cb.set_label(f"{METRICS.get(metric, metric)} (%)")
    cfg = m.get("config") or {}
    sub = (
        f"{(m.get('recipe') or {}).get('name', '')} recipe, "
        f"{cfg.get('max_steps') and str(cfg['max_steps']) + ' steps' or 'recipe epochs'}, "
        f"train sample {cfg.get('sample') or 'all'}, test sample {cfg.get('eval_sample') or 'all'}"
    )
    ax.set_title(
        f"{model_label(m)}: trained on one subset, tested on each "
        f"({METRICS.get(metric, metric)}, %)\n{sub}",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def _diag(m: dict, i: int, j: int) -> bool:
    rows = ([m["base"]] if m.get("base") else []) + list(m.get("rows") or [])
    return rows[i].get("key") == m["columns"][j]["key"]


def save_heatmap(m: dict, path: str | Path, metric: str = "acc") -> Path:
    from negbench.report.plots import pyplot

    plt = pyplot()
    fig = heatmap_figure(m, metric)
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp.png")
    try:
        fig.savefig(tmp, dpi=130, bbox_inches="tight", pad_inches=0.08)
        tmp.replace(path)
    finally:
        plt.close(fig)
        tmp.unlink(missing_ok=True)
    return path


# -- the report -----------------------------------------------------------------------------------
def to_tables(m: dict, index: int = 0) -> list:
    """Report tables: accuracy (Figure 2) and, for patterns, coherence (All)."""
    from negbench.scoring.tables import Cell, Column, Row, Table, slug

    out = []
    metrics = ["acc"] + (
        ["coherence_all"] if m.get("axis") == "patterns" and has_metric(m, "coherence_all") else []
    )
    rows = ([m["base"]] if m.get("base") else []) + list(m.get("rows") or [])
    for metric in metrics:
        t = Table(
            id=f"experiment{index}-{slug(metric)}",
            title=f"{model_label(m)}: trained on (rows) × tested on (columns), "
            f"{METRICS[metric]} (%)",
            benchmark="notadataset",
            row_header=["trained on"],
            columns=[Column((c["label"],), c["key"]) for c in m["columns"]]
            + [Column(("mean, other subsets",), "mean")],
            caption=(
                "This is not a Dataset, Figure 2: one LoRA adapter per training subset "
                "(train split), tested on the test split of every subset; base = no "
                "adapter. "
                if metric == "acc"
                else "Coherence (All, §4.3) of the same cells; not reported in Figure 2. "
            )
            + f"Source: {m.get('_path', MATRIX_JSON)}",
            paper="This is not a Dataset, Figure 2"
            if m.get("axis") == "patterns"
            else "This is not a Dataset, Table 7 (rows)",
        )
        for r in rows:
            cells: list[Cell | None] = [Cell(value(c, metric), digits=1) for c in r["cells"]]
            cells.append(Cell(off_diagonal_mean(m, r, metric), digits=1))
            t.rows.append(Row([r["label"]], cells, kind="base" if r is m.get("base") else "run"))
        if not m.get("complete", False):
            t.notes.append("unfinished experiment: cells shown as – are not evaluated yet")
        out.append(t)
    return out


def to_plots(m: dict, index: int = 0) -> list:
    from negbench.report.plots import finish_plot

    fig = heatmap_figure(m)
    return [
        finish_plot(
            fig,
            f"experiment{index}-heatmap",
            f"{model_label(m)}: generalisation matrix (accuracy)",
            "heatmap",
            "Rows: trained on; columns: tested on; base = the model without an adapter; "
            "outlined: trained and tested on the same subset (This is not a Dataset, "
            "Figure 2).",
        )
    ]


def add_experiments(rep, paths: Sequence[str], plots: bool = True) -> None:
    """Add each experiment's tables (and heatmap) to a report built from run folders."""
    for i, p in enumerate(paths):
        m = load_matrix(p)
        rep.tables.extend(to_tables(m, i))
        if plots:
            rep.plots.extend(to_plots(m, i))
        if not m.get("complete", False):
            rep.warnings.append(
                f"{m['_path']}: the experiment has not finished (some cells are missing)"
            )


def with_experiments(build: Callable) -> Callable:
    """``build`` (of :mod:`negbench.report.build`) that also takes experiment folders or
    ``matrix.json`` files among its paths."""

    def wrapped(paths: Sequence[str], **kw):
        runs, exps = split_paths(list(paths))
        if runs or not exps:
            rep = build(runs, **kw)
        else:
            from negbench.report.build import Report

            rep = Report([], [])
        add_experiments(rep, exps, plots=kw.get("plots", True))
        return rep

    return wrapped


def experiment_title(rep) -> str | None:
    """A report title when the report holds experiments only (else None: the usual title)."""
    if rep.runs or not any(t.id.startswith("experiment") for t in rep.tables):
        return None
    models = []
    for t in rep.tables:
        if t.id.startswith("experiment"):
            name = t.title.split(": trained on")[0]
            if name not in models:
                models.append(name)
    return "negbench experiment: " + ", ".join(models)


__all__ = [
    "SCHEMA",
    "MATRIX_JSON",
    "load_matrix",
    "matrix_path",
    "split_paths",
    "grid",
    "to_markdown",
    "heatmap_figure",
    "save_heatmap",
    "to_tables",
    "to_plots",
    "add_experiments",
    "with_experiments",
    "experiment_title",
]
