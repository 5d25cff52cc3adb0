"""This is not a Dataset report tables: Table 4 (coherence and accuracy), Table 5 (Synonymy /
Antonymy), Table 7 (by negation type) and Table 9 (8-bit weights)."""

from __future__ import annotations

from typing import Callable

from negbench.scoring.runs import Run, get_path, primary_metric
from negbench.scoring.paper_tables import RATE_CI, SD_OVER_SEEDS, Context, shot_label
from negbench.scoring.tables import Column, Ref, Row, Table, make_cell, metric_cell

# -- This is not a Dataset ------------------------------------------------------------------------
#: Table 4: (column key = unit metric, header path, sample filter of an accuracy column).  The
#: accuracy columns are plain accuracies over the sentences the filter keeps (the scorer's
#: input / distractor × affirmation / negation cells), so their Refs list exactly those sentences;
#: coherence is judged per block (a WordNet triple and all its templates), so its Refs list the
#: unit's sentences and recompute the task's coherence.
_AFF = {"meta.negation_type": "affirmation"}
_NEG = {"meta.negation_type": {"not": "affirmation"}}
_WO = {"meta.is_distractor": False}
_W = {"meta.is_distractor": True}
NAD_COLS: tuple[tuple[str, tuple[str, ...], dict | None], ...] = (
    ("coherence_all", ("Coherence", "All"), None),
    ("coherence_wo_distractor", ("Coherence", "W/o Distractor"), None),
    ("coherence_w_distractor", ("Coherence", "W/ Distractor"), None),
    ("acc", ("Accuracy", "All"), {}),
    ("acc_aff_wo", ("Accuracy", "W/o Distractor", "Affirmation"), {**_WO, **_AFF}),
    ("acc_neg_wo", ("Accuracy", "W/o Distractor", "Negation"), {**_WO, **_NEG}),
    ("acc_aff_w", ("Accuracy", "W/ Distractor", "Affirmation"), {**_W, **_AFF}),
    ("acc_neg_w", ("Accuracy", "W/ Distractor", "Negation"), {**_W, **_NEG}),
)
#: Table 5: patterns #01–#04 (Synonymy / Antonymy), sentences without distractor.
NAD_T5_PATTERNS = (
    ("Synonymy1", "#01 Synonymy"),
    ("Antonymy1", "#02 Antonymy"),
    ("Synonymy2", "#03 Synonymy"),
    ("Antonymy2", "#04 Antonymy"),
)
#: Table 7 columns: accuracy by negation type (the scorer's Negation_analysis ``<type>_all``).
NAD_T7_COLS = (
    ("acc_verbal", "Verbal", {"meta.negation_type": "verbal"}),
    ("acc_non_verbal", "Non-Verbal", {"meta.negation_type": "non_verbal"}),
    ("acc_analytic", "Analytic", {"meta.semantic_type": "analytic"}),
    ("acc_synthetic", "Synthetic", {"meta.semantic_type": "synthetic"}),
    ("acc_clausal", "Clausal", {"meta.syntactic_scope": "clausal"}),
    ("acc_subclausal", "Subclausal", {"meta.syntactic_scope": "subclausal"}),
    ("acc_affirmation", "Affirmation", dict(_AFF)),
)


def _nad_settings(ctx: Context, task: str):
    """(run, mode, shots, units, correctness field) for every setting of the task, in run order."""
    for r in ctx.runs_with(task):
        for mode in r.modes(task):
            for k in r.shots(task, mode):
                units = r.select(task, mode, k)
                # next_token / cloze records carry ``acc``, generate records ``exact_match``
                f = primary_metric(task, mode, units[0].metrics) if units else None
                yield r, mode, k, units, f or "acc"


def _scorer_frac(*path: str) -> Callable[[dict], float | None]:
    """A unit's accuracy from the official scorer's confusion counts at ``scorer.<path>`` (the
    report's per-pattern percentages are rounded to 2 decimals; the counts are exact)."""

    def get(m: dict) -> float | None:
        c = get_path(m, ".".join(("scorer",) + path))
        if not isinstance(c, dict) or not all(
            isinstance(c.get(x), int) for x in ("TP", "TN", "FP", "FN")
        ):
            return None
        n = c["TP"] + c["TN"] + c["FP"] + c["FN"]
        return (c["TP"] + c["TN"]) / n if n else None

    return get


def _random_rows(ctx: Context, task: str) -> list[Row]:
    """Table 4's Random row: the expectation of a fair coin on the same sentences (the task's
    ``random_baseline`` metric, already in percent) — one row per distinct set of sentences."""
    seen: dict[tuple, Run] = {}
    for r in ctx.runs_with(task):
        ds = (r.results.get("datasets") or {}).get(task) or {}
        info = next((v for v in ds.values() if isinstance(v, dict) and "sha256" in v), {})
        key = (
            info.get("sha256"),
            info.get("evaluated"),
            (r.results.get("config") or {}).get("limit"),
        )
        seen.setdefault(key, r)
    rows = []
    for r in seen.values():
        units = sorted(r.select(task), key=lambda u: (u.shots, u.mode != "next_token"))
        units = [u for u in units if isinstance(u.metrics.get("random_baseline"), dict)][:1]
        if not units:
            continue
        cells = [
            metric_cell(r, units, f"random_baseline.{key}", scale=1.0, digits=1)
            for key, _, _ in NAD_COLS
        ]
        where = "same sentences" if len(seen) == 1 else f"sentences of {r.label}"
        rows.append(Row(["Random", "fair coin (expected)", where], cells, "baseline"))
    return rows


def _precision(r: Run) -> tuple[str, bool]:
    """(label, is 8-bit) of a run's weights: ``--quantize`` else ``--dtype``."""
    be = (r.results.get("config") or {}).get("backend") or {}
    if be.get("quantize"):
        return f"{be['quantize']} (LLM.int8)", True
    return str(be.get("dtype") or "auto"), False


def paper_tables(ctx: Context, tasks: list[str]) -> list[Table]:
    out = []
    for task in tasks:
        # Table 4: coherence and accuracy
        cols = [Column(path, key) for key, path, _ in NAD_COLS]
        rows = []
        for r, mode, k, units, f in _nad_settings(ctx, task):
            cells = []
            for key, _, where in NAD_COLS:
                if where is None:  # coherence: per block, the task's code
                    cells.append(metric_cell(r, units, key, scale=100.0, digits=1))
                else:
                    cells.append(
                        metric_cell(
                            r,
                            units,
                            f if key == "acc" else key,
                            scale=100.0,
                            digits=1,
                            stat="mean",
                            field_=f,
                            where=where,
                        )
                    )
            rows.append(Row([r.label, mode, shot_label(k)], cells))
        if rows and any(_precision(r)[1] for r in ctx.runs_with(task)):
            t9 = [
                Row([r.label, _precision(r)[0], mode, shot_label(k)], list(row.cells))
                for (r, mode, k, _, _), row in zip(_nad_settings(ctx, task), rows)
            ]
            out.append(
                Table(
                    f"{task}-table9",
                    f"This is not a Dataset ({task}): 8-bit and 16-bit weights (percent)",
                    "notadataset",
                    ["model", "precision", "mode", "shots"],
                    cols,
                    t9,
                    caption="Table 4's columns for runs of the same "
                    "model loaded in 8 bits (--quantize 8bit, bitsandbytes LLM.int8()) "
                    "and in its own precision (--dtype).",
                    paper="This is not a Dataset Table 9",
                )
            )
        if rows:
            rows = _random_rows(ctx, task) + rows
            out.append(
                Table(
                    f"{task}-table4",
                    f"This is not a Dataset ({task}): coherence and accuracy (percent)",
                    "notadataset",
                    ["model", "mode", "shots"],
                    cols,
                    rows,
                    caption="Coherence (per WordNet triple, all its templates) and "
                    f"accuracy in percent, {RATE_CI} (clustered by block); {SD_OVER_SEEDS}. "
                    "Random: "
                    "the expectation of a fair coin on the same sentences (the paper's Random row; "
                    "exact, not one draw).",
                    paper="This is not a Dataset Table 4",
                )
            )
        # Table 5: Synonymy / Antonymy patterns, without distractor
        cols = [
            Column(("W/o Distractor", "Affirmation"), "acc_aff_wo"),
            Column(("W/o Distractor", "Negation"), "acc_neg_wo"),
        ]
        rows = []
        for r, mode, k, units, f in _nad_settings(ctx, task):
            for name, label in NAD_T5_PATTERNS:
                if not any(name in (u.metrics.get("by_pattern") or {}) for u in units):
                    continue
                cells = []
                for key, cell, pol in (
                    ("acc_aff_wo", "input_affirmation", _AFF),
                    ("acc_neg_wo", "input_negation", _NEG),
                ):
                    ref = Ref(
                        r.index,
                        [u.name for u in units],
                        "mean",
                        f,
                        {"meta.pattern": name, **_WO, **pol},
                        None,
                        100.0,
                    )
                    cells.append(
                        make_cell(
                            r, units, _scorer_frac(name, cell), scale=100.0, digits=2, ref=ref
                        )
                    )
                rows.append(Row([r.label, mode, shot_label(k), label], cells))
        if rows:
            out.append(
                Table(
                    f"{task}-table5",
                    f"This is not a Dataset ({task}): accuracy in the "
                    "Synonymy and Antonymy patterns, sentences without distractor "
                    "(percent)",
                    "notadataset",
                    ["model", "mode", "shots", "pattern"],
                    cols,
                    rows,
                    caption="Affirmative and negated sentences without distractor "
                    "of patterns #01–#04 (the official scorer's counts), "
                    f"{RATE_CI}; {SD_OVER_SEEDS}.",
                    paper="This is not a Dataset Table 5",
                )
            )
        # Table 7 columns: accuracy by negation type
        cols = [Column((lab,), key) for key, lab, _ in NAD_T7_COLS]
        rows = []
        for r, mode, k, units, f in _nad_settings(ctx, task):
            cells = [
                metric_cell(
                    r, units, key, scale=100.0, digits=1, stat="mean", field_=f, where=where
                )
                for key, _, where in NAD_T7_COLS
            ]
            rows.append(Row([r.label, mode, shot_label(k)], cells))
        if rows:
            out.append(
                Table(
                    f"{task}-table7",
                    f"This is not a Dataset ({task}): accuracy by negation type (percent)",
                    "notadataset",
                    ["model", "mode", "shots"],
                    cols,
                    rows,
                    caption="Accuracy on the sentences of each negation type "
                    "(verbal / non-verbal), semantic type (analytic / synthetic) and "
                    f"syntactic scope (clausal / subclausal), and on the affirmations, {RATE_CI}. The "
                    "paper's rows are fine-tuning variants (runs with an adapter here).",
                    paper="This is not a Dataset Table 7 (columns)",
                )
            )
    return out
