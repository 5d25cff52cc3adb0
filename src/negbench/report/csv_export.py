"""CSV export: long-format files that load straight into pandas / R / a spreadsheet.

* ``units.csv``   — run, label, model, task, benchmark, mode, shots, seed, unit, metric, value
  (every flat numeric metric of every unit; nested analyses are in results.json);
* ``groups.csv``  — run, label, model, task, benchmark, mode, shots, n_seeds, metric, mean, sd;
* ``tables.csv``  — table, title, row, column, value, sd, n, text, items, ci_low, ci_high (every
  cell of every table; items and the 95 % interval of a rate cell);
* ``samples.csv`` — run, label, unit, task, mode, shots, seed, doc_id, metric, score, correct,
  error_type, pred, gold, p_true;
* ``comparisons.csv`` / ``flips.csv`` — the groups and the flipped items of each comparison.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any, Iterable, Sequence

from negbench.scoring.metrics import sd as sample_sd
from negbench.scoring.runs import Run, benchmark_of
from negbench.files import atomic_write_text


def _v(x: Any) -> Any:
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return ""
    if x is None:
        return ""
    if isinstance(x, bool):
        return "true" if x else "false"
    return x


def to_csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow([_v(x) for x in r])
    return buf.getvalue()


UNITS_HEADER = (
    "run",
    "label",
    "model",
    "task",
    "benchmark",
    "mode",
    "shots",
    "seed",
    "unit",
    "metric",
    "value",
)
GROUPS_HEADER = (
    "run",
    "label",
    "model",
    "task",
    "benchmark",
    "mode",
    "shots",
    "n_seeds",
    "metric",
    "mean",
    "sd",
)
TABLES_HEADER = (
    "table",
    "title",
    "row",
    "column",
    "value",
    "sd",
    "n",
    "text",
    "items",
    "ci_low",
    "ci_high",
)
SAMPLES_HEADER = (
    "run",
    "label",
    "unit",
    "task",
    "mode",
    "shots",
    "seed",
    "doc_id",
    "metric",
    "score",
    "correct",
    "error_type",
    "pred",
    "gold",
    "p_true",
)
COMPARISONS_HEADER = (
    "comparison",
    "a",
    "b",
    "task",
    "mode",
    "shots",
    "metric",
    "n_pairs",
    "a_mean",
    "b_mean",
    "delta",
    "gains",
    "losses",
    "mcnemar_exact_p",
    "mcnemar_chi2",
    "mcnemar_chi2_p",
    "bootstrap_ci_low",
    "bootstrap_ci_high",
    "bootstrap_p",
    "n_units",
    "test_method",
    "test_ci_low",
    "test_ci_high",
    "test_p",
    "test_mid_p",
    "p_holm",
    "too_small",
    "significant",
)
FLIPS_HEADER = (
    "comparison",
    "unit",
    "doc_id",
    "change",
    "a_score",
    "b_score",
    "a_pred",
    "b_pred",
    "gold",
    "a_error_type",
    "b_error_type",
)


def _numeric(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def unit_rows(runs: Sequence[Run]):
    for r in runs:
        for u in r.units.values():
            for m, v in u.metrics.items():
                if _numeric(v):
                    yield (
                        r.index,
                        r.label,
                        r.model_spec,
                        u.task,
                        benchmark_of(u.task),
                        u.mode,
                        u.shots,
                        u.seed,
                        u.name,
                        m,
                        v,
                    )


def group_rows(runs: Sequence[Run]):
    """Mean / SD over seeds recomputed from the unit metrics (the same numbers as results.json
    ``groups``)."""
    for r in runs:
        groups: dict[str, list] = {}
        for u in r.units.values():
            groups.setdefault(u.group, []).append(u)
        for g, units in groups.items():
            first = units[0]
            for m, v in first.metrics.items():
                if not _numeric(v) or m == "n" or m.endswith("_stderr"):
                    continue
                vals = [float(x.metrics[m]) for x in units if _numeric(x.metrics.get(m))]
                mean = sum(vals) / len(vals) if vals else float("nan")
                yield (
                    r.index,
                    r.label,
                    r.model_spec,
                    first.task,
                    benchmark_of(first.task),
                    first.mode,
                    first.shots,
                    len(vals),
                    m,
                    mean,
                    sample_sd(vals) if vals else float("nan"),
                )


def table_rows(tables):
    for t in tables:
        for _, _, row, col, c in t.cells():
            yield (
                t.id,
                t.title,
                " / ".join(x for x in row.labels if x),
                col.label(),
                c.value if c.is_number() else "",
                c.sd,
                c.n,
                c.text(),
                c.items,
                c.ci[0] if c.ci else None,
                c.ci[1] if c.ci else None,
            )


def sample_rows(runs: Sequence[Run], views: Sequence[dict]):
    labels = {r.index: r.label for r in runs}
    for v in views:
        yield (
            v["r"],
            labels.get(v["r"], ""),
            v["u"],
            v["task"],
            v["mode"],
            v["shots"],
            v["seed"],
            v["id"],
            v["metric"],
            v["score"],
            v["correct"],
            v["error_type"],
            v["pred"],
            v["gold"],
            v.get("p_true"),
        )


def comparison_rows(cmps: Sequence[dict]):
    for i, c in enumerate(cmps):
        cid = c.get("_id", f"cmp{i}")
        for g in c["groups"]:
            mc, bt = g["mcnemar"] or {}, g["bootstrap"]
            yield (
                cid,
                c["a"]["label"],
                c["b"]["label"],
                g["task"],
                g["mode"],
                g["shots"],
                g["metric"],
                g["n_pairs"],
                g["a_mean"],
                g["b_mean"],
                g["delta"],
                g["gains"],
                g["losses"],
                mc.get("exact_p"),
                mc.get("chi2"),
                mc.get("chi2_p"),
                bt["ci_low"],
                bt["ci_high"],
                bt["p"],
                g.get("n_units"),
                (g.get("test") or {}).get("method"),
                (g.get("test") or {}).get("ci_low"),
                (g.get("test") or {}).get("ci_high"),
                (g.get("test") or {}).get("p"),
                (g.get("test") or {}).get("mid_p"),
                g.get("p_holm"),
                (g.get("test") or {}).get("too_small"),
                g["significant"],
            )


def flip_rows(cmps: Sequence[dict]):
    for i, c in enumerate(cmps):
        cid = c.get("_id", f"cmp{i}")
        for f in c["flips"]:
            yield (
                cid,
                f["unit"],
                f["doc_id"],
                f["change"],
                f["a_score"],
                f["b_score"],
                f["a_pred"],
                f["b_pred"],
                f["gold"],
                f["a_error_type"],
                f["b_error_type"],
            )


def write_all(
    folder: Path,
    runs: Sequence[Run],
    tables=(),
    views: Sequence[dict] = (),
    comparisons: Sequence[dict] = (),
) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for name, header, rows in (
        ("units.csv", UNITS_HEADER, unit_rows(runs)),
        ("groups.csv", GROUPS_HEADER, group_rows(runs)),
        ("tables.csv", TABLES_HEADER, table_rows(tables)),
        ("samples.csv", SAMPLES_HEADER, sample_rows(runs, views)),
        ("comparisons.csv", COMPARISONS_HEADER, comparison_rows(comparisons)),
        ("flips.csv", FLIPS_HEADER, flip_rows(comparisons)),
    ):
        if name in ("tables.csv",) and not tables:
            continue
        if name in ("samples.csv",) and not views:
            continue
        if name in ("comparisons.csv", "flips.csv") and not comparisons:
            continue
        p = folder / name
        atomic_write_text(p, to_csv(header, rows))
        files.append(p)
    return files
