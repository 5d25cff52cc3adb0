"""Plots (matplotlib, headless): accuracy vs shots per model (NUBench Figure 3 style, with the
after-SFT point and model-group averages), incorrect-choice distributions, local-negation confusion
by clause type, AccChg per model (JSTS-Neg / JNLI-Neg), and calibration of True/False
probabilities.  Each plot is returned as inline SVG (for the HTML report) and can be saved as SVG
and PNG files."""

from __future__ import annotations

import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from negbench.scoring.metrics import sd as sample_sd
from negbench.scoring.runs import Run, get_path, nanmean, p_true, primary_metric
from negbench.scoring.paper_tables import WRONG, Context, union_modes
from negbench.scoring.tables import slug

COLORS = (
    "#1f77b4",
    "#9467bd",
    "#ff7f0e",
    "#d62728",
    "#2ca02c",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
MARKERS = ("o", "s", "^", "v", "D", "P", "X", "<", ">", "*")


@dataclass
class Plot:
    id: str
    title: str
    kind: str
    svg: str
    caption: str = ""
    files: tuple[str, ...] = ()
    # the matplotlib figure, kept for save(); closed there or by close()
    _fig: Any = field(default=None, init=False, repr=False, compare=False)

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "title": self.title,
            "kind": self.kind,
            "caption": self.caption,
            "files": list(self.files),
        }


def pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "svg.fonttype": "none",
            "font.size": 9,
            "axes.titlesize": 10,
            "figure.dpi": 100,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    )
    return plt


def _legend_outside(ax, **kw):
    """A legend to the right of the axes, outside them: it never covers data (the layout makes
    room for it; :func:`finish_plot` and :func:`save` keep it inside the figure)."""
    kw.setdefault("fontsize", 7)
    return ax.legend(
        loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False, **kw
    )


def finish_plot(fig, pid: str, title: str, kind: str, caption: str = "") -> Plot:
    fig.tight_layout()  # axes legends take part in the layout
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", pad_inches=0.05)
    svg = buf.getvalue()
    svg = svg[svg.index("<svg") :]  # drop the XML prolog / doctype
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)  # RDF block with a date
    p = Plot(pid, title, kind, svg, caption)
    p._fig = fig  # kept for save(); closed there or by close()
    return p


def save(plots: Sequence[Plot], folder: Path, png: bool = True) -> None:
    plt = pyplot()
    folder.mkdir(parents=True, exist_ok=True)
    for p in plots:
        fig = getattr(p, "_fig", None)
        files = []
        (folder / f"{p.id}.svg").write_text(p.svg, encoding="utf-8")
        files.append(f"plots/{p.id}.svg")
        if png and fig is not None:
            fig.savefig(folder / f"{p.id}.png", dpi=110, bbox_inches="tight", pad_inches=0.05)
            files.append(f"plots/{p.id}.png")
        p.files = tuple(files)
    for p in plots:
        fig = getattr(p, "_fig", None)
        if fig is not None:
            plt.close(fig)
            p._fig = None


def close(plots: Sequence[Plot]) -> None:
    plt = pyplot()
    for p in plots:
        if getattr(p, "_fig", None) is not None:
            plt.close(p._fig)
            p._fig = None


def _agg(run: Run, units, getter, scale: float = 1.0) -> tuple[float, float]:
    vals = [getter(u.metrics) for u in units]
    vals = [
        float(v) * scale
        for v in vals
        if isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(float(v))
    ]
    if not vals:
        return float("nan"), float("nan")
    return sum(vals) / len(vals), (sample_sd(vals) if len(vals) > 1 else 0.0)


def _tasks(ctx: Context) -> list[str]:
    out: list[str] = []
    for r in ctx.runs:
        for t in r.tasks():
            if t not in out:
                out.append(t)
    return out


# -- accuracy vs shots ----------------------------------------------------------------------------
def accuracy_vs_shots(ctx: Context) -> list[Plot]:
    plt = pyplot()
    out = []
    for task in _tasks(ctx):
        runs = ctx.runs_with(task)
        modes = union_modes(
            runs,
            task,
            ("completion", "option", "cloze", "symbol", "letter", "next_token", "generate"),
        )
        shots = sorted(
            {k for r in runs if not r.finetuned for m in modes for k in r.shots(task, m)}
        )
        if not modes or (len(shots) < 2 and not any(r.finetuned for r in runs)):
            continue  # one point per model: the table says it all
        has_sft = any(r.finetuned for r in runs)
        fig, axes = plt.subplots(
            1, len(modes), figsize=(min(4.2 * len(modes), 13), 3.3), squeeze=False
        )
        xs = list(range(len(shots)))
        for ax, mode in zip(axes[0], modes):
            metric = None
            per_label: dict[str, list[float]] = {}
            for i, r in enumerate([r for r in runs if not r.finetuned]):
                ys, es = [], []
                for k in shots:
                    units = r.select(task, mode, k)
                    metric = metric or (
                        primary_metric(task, mode, units[0].metrics) if units else None
                    )
                    m, s = (
                        _agg(r, units, lambda mm: mm.get(metric))
                        if units and metric
                        else (float("nan"),) * 2
                    )
                    ys.append(m)
                    es.append(s)
                per_label[r.label] = ys
                ax.errorbar(
                    xs,
                    ys,
                    yerr=es,
                    marker=MARKERS[i % 10],
                    color=COLORS[i % 10],
                    label=r.label,
                    capsize=2,
                    lw=1.2,
                    ms=5,
                    clip_on=False,
                    zorder=3,
                )
            for j, r in enumerate([r for r in runs if r.finetuned]):
                units = r.select(task, mode, 0)
                metric = metric or (primary_metric(task, mode, units[0].metrics) if units else None)
                if units and metric:
                    m, _ = _agg(r, units, lambda mm: mm.get(metric))
                    ax.plot(
                        [len(shots)],
                        [m],
                        marker="*",
                        ms=11,
                        ls="none",
                        clip_on=False,
                        zorder=3,
                        color=COLORS[(j + 4) % 10],
                        label=f"{r.label} (SFT)",
                    )
            for g, (name, members) in enumerate(ctx.groups.items()):
                rows = [per_label[l] for l in members if l in per_label]
                if rows:
                    avg = [nanmean(col) for col in zip(*rows)]
                    ax.plot(
                        xs,
                        avg,
                        ls="--",
                        color="k",
                        alpha=min(1.0, 0.5 + 0.1 * g),
                        marker=MARKERS[-1 - g],
                        clip_on=False,
                        label=f"{name} average",
                    )
            ticks = [("0" if k == 0 else str(k)) for k in shots] + (["SFT"] if has_sft else [])
            ax.set_xticks(list(range(len(ticks))), ticks)
            ax.set_xlim(-0.4, len(ticks) - 0.6)
            ax.set_xlabel("shots")
            ax.set_ylabel(metric or "score")
            ax.set_title(f"{task} · {mode}")
            ax.set_ylim(-0.05, 1.05)
            ax.grid(alpha=0.3)
        _legend_outside(axes[0][-1])
        out.append(
            finish_plot(
                fig,
                f"shots-{slug(task)}",
                f"{task}: performance across shots" + (" and after fine-tuning" if has_sft else ""),
                "accuracy_vs_shots",
                "Mean over seeds, error bars ± SD; stars: runs with a LoRA adapter "
                "(zero-shot); dashed: model-group averages.",
            )
        )
    return out


# -- incorrect-choice distribution ----------------------------------------------------------------
def _ea_settings(ctx: Context, task: str, mode: str):
    for r in ctx.runs_with(task):
        for k in r.shots(task, mode):
            units = [u for u in r.select(task, mode, k) if "error_analysis" in u.metrics]
            if units:
                yield r, k, units


def incorrect_choice(ctx: Context) -> list[Plot]:
    plt = pyplot()
    out = []
    for task in _tasks(ctx):
        runs = ctx.runs_with(task)
        for mode in union_modes(runs, task):
            rows = list(_ea_settings(ctx, task, mode))
            if not rows:
                continue
            labels: list[str] = []
            vals: dict[str, list[float]] = {t: [] for t in WRONG}
            for r, k, units in rows:
                labels.append(f"{r.label} · {k}-shot" + (" · SFT" if r.finetuned else ""))
                for t in WRONG:
                    vals[t].append(
                        _agg(
                            r,
                            units,
                            lambda m: get_path(m, f"error_analysis.incorrect_choice.{t}.pct"),
                        )[0]
                    )
            fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(labels) + 1.3))
            left = [0.0] * len(labels)
            for i, t in enumerate(WRONG):
                v = [0.0 if math.isnan(x) else x for x in vals[t]]
                ax.barh(range(len(labels)), v, left=left, color=COLORS[i], label=t)
                left = [a + b for a, b in zip(left, v)]
            ax.set_yticks(range(len(labels)), labels)
            ax.invert_yaxis()
            ax.set_xlim(0, 100)
            ax.set_xlabel("share of wrong answers (%)")
            ax.set_title(f"{task} · {mode}: incorrect-choice distribution")
            _legend_outside(ax)
            out.append(
                finish_plot(
                    fig,
                    f"incorrect-{slug(task)}-{slug(mode)}",
                    f"{task} · {mode}: incorrect-choice distribution",
                    "incorrect_choice",
                    "Which wrong option the model picked, over its wrong answers that name "
                    "an option (mean over seeds).",
                )
            )
    return out


def subtype_labels() -> dict[str, str]:
    """Display names of the clause types of every benchmark's error analysis (registry kind
    ``subtype_labels``)."""
    from negbench.scoring.registry import REGISTRY

    out: dict[str, str] = {}
    for labels in REGISTRY.entries("subtype_labels").values():
        out.update(labels)
    return out


# -- confusion by clause type ----------------------------------------------------------------------
def confusion(ctx: Context) -> list[Plot]:
    plt = pyplot()
    out = []
    names = subtype_labels()
    for task in _tasks(ctx):
        runs = ctx.runs_with(task)
        for mode in union_modes(runs, task):
            rows = [
                (r, k, u)
                for r, k, u in _ea_settings(ctx, task, mode)
                if any(u_.metrics["error_analysis"].get("local_confusion") for u_ in u)
            ]
            if not rows:
                continue
            subs: list[str] = []
            for _, _, units in rows:
                for u in units:
                    for s in u.metrics["error_analysis"]["local_confusion"]:
                        if s not in subs:
                            subs.append(s)
            if len(rows) > 8:  # zero-shot and the largest shots per run
                keep = []
                for r in {id(x[0]): x[0] for x in rows}.values():
                    mine = [x for x in rows if x[0] is r]
                    keep += [mine[0]] + ([mine[-1]] if len(mine) > 1 else [])
                rows = keep[:8]
            fig, ax = plt.subplots(figsize=(7.5, 3.3))
            w = 0.8 / len(rows)
            for i, (r, k, units) in enumerate(rows):
                ys = [
                    _agg(
                        r, units, lambda m: get_path(m, f"error_analysis.local_confusion.{s}.pct")
                    )[0]
                    for s in subs
                ]
                ax.bar(
                    [j + (i - (len(rows) - 1) / 2) * w for j in range(len(subs))],
                    [0 if math.isnan(y) else y for y in ys],
                    width=w,
                    color=COLORS[i % 10],
                    label=f"{r.label} · {k}-shot" + (" · SFT" if r.finetuned else ""),
                )
            ax.set_xticks(range(len(subs)), [names.get(s, s) for s in subs], rotation=15)
            ax.set_ylabel("confusion rate (%)")
            ax.set_title(f"{task} · {mode}: local-negation confusion by clause type")
            _legend_outside(ax)
            out.append(
                finish_plot(
                    fig,
                    f"confusion-{slug(task)}-{slug(mode)}",
                    f"{task} · {mode}: local-negation confusion by clause type",
                    "confusion",
                    "Items of each clause type whose local negation was "
                    "picked, over the items of that type (mean over seeds).",
                )
            )
    return out


# -- AccChg per model ------------------------------------------------------------------------------
def accchg(ctx: Context) -> list[Plot]:
    """JSTS-Neg / JNLI-Neg: AccChg on M, M_i, M_u per model, one panel per shot count and one
    figure per mode (generation and log-likelihood are different settings, never averaged)."""
    plt = pyplot()
    out = []

    def has(u) -> bool:
        return "M.acc_chg" in u.metrics or get_path(u.metrics, "M.acc_chg") is not None

    for task in _tasks(ctx):
        for mode in union_modes(ctx.runs_with(task), task, ("generate", "loglik")):
            runs = [r for r in ctx.runs_with(task) if any(has(u) for u in r.select(task, mode))]
            if not runs:
                continue
            shots = sorted({k for r in runs for k in r.shots(task, mode)})
            fig, axes = plt.subplots(
                1, len(shots), figsize=(min(4.5 * len(shots), 13), 3.4), squeeze=False
            )
            for ax, k in zip(axes[0], shots):
                sets = (("M", "M"), ("Mi", "M_i"), ("Mu", "M_u"))
                w = 0.8 / 3
                for i, (s, lab) in enumerate(sets):
                    ys, es = [], []
                    for r in runs:
                        m, e = _agg(
                            r,
                            r.select(task, mode, k),
                            lambda mm: mm.get(f"{s}.acc_chg", get_path(mm, f"{s}.acc_chg")),
                            100.0,
                        )
                        ys.append(m)
                        es.append(e)
                    ax.bar(
                        [j + (i - 1) * w for j in range(len(runs))],
                        ys,
                        yerr=es,
                        width=w,
                        color=COLORS[i],
                        label=lab,
                        capsize=2,
                    )
                ax.axhline(0, color="k", lw=0.8)
                ax.set_xticks(range(len(runs)), [r.label for r in runs], rotation=20, ha="right")
                ax.set_ylabel("AccChg (points)")
                ax.set_title(f"{task} · {mode} · {k}-shot")
            _legend_outside(axes[0][-1])
            out.append(
                finish_plot(
                    fig,
                    f"accchg-{slug(task)}-{slug(mode)}",
                    f"{task} · {mode}: AccChg per model",
                    "accchg",
                    "Acc' − Acc on the negation minimal pairs M, M_i (important cue), "
                    "M_u (unimportant cue); mean ± SD over seeds.",
                )
            )
    return out


# -- calibration ----------------------------------------------------------------------------------
def calibration_bins(
    pairs: Sequence[tuple[float, bool]], n_bins: int = 10
) -> tuple[list[dict], float]:
    """Reliability bins of (P(True), label) pairs and the expected calibration error."""
    bins = [
        {"lo": i / n_bins, "hi": (i + 1) / n_bins, "n": 0, "p": 0.0, "freq": 0.0}
        for i in range(n_bins)
    ]
    for p, y in pairs:
        b = bins[min(n_bins - 1, int(p * n_bins))]
        b["n"] += 1
        b["p"] += p
        b["freq"] += float(y)
    n = len(pairs)
    ece = 0.0
    for b in bins:
        if b["n"]:
            b["p"] /= b["n"]
            b["freq"] /= b["n"]
            ece += b["n"] / n * abs(b["p"] - b["freq"])
    return bins, (ece if n else float("nan"))


def calibration(ctx: Context) -> list[Plot]:
    plt = pyplot()
    out = []
    for task in _tasks(ctx):
        runs = ctx.runs_with(task)
        for mode in union_modes(runs, task):
            series = []
            for r in runs:
                pairs = []
                for u in r.select(task, mode):
                    for rec in r.samples(u.name):
                        pt = p_true(rec)
                        if pt is not None:
                            pairs.append(pt)
                if pairs:
                    series.append((r, pairs))
            if not series:
                continue
            fig, ax = plt.subplots(figsize=(6.2, 3.6))
            ax.plot([0, 1], [0, 1], ls=":", color="k", lw=0.8, label="perfect")
            for i, (r, pairs) in enumerate(series):
                bins, ece = calibration_bins(pairs)
                pts = [(b["p"], b["freq"], b["n"]) for b in bins if b["n"]]
                ax.plot(
                    [p for p, _, _ in pts],
                    [f for _, f, _ in pts],
                    marker=MARKERS[i % 10],
                    color=COLORS[i % 10],
                    label=f"{r.label} (ECE {ece:.3f}, n={len(pairs)})",
                    clip_on=False,
                    zorder=3,
                )  # a bin at 0 or 1 sits on the axis: not cut
            ax.set_xlim(-0.04, 1.04)  # room for markers at P = 0 / 1
            ax.set_ylim(-0.04, 1.04)
            ax.set_aspect("equal")
            ax.set_xlabel("predicted P(True)")
            ax.set_ylabel("observed frequency of True")
            ax.set_title(
                f"{task} · {mode}\ncalibration", fontsize=9
            )  # task names may carry options
            _legend_outside(ax)
            out.append(
                finish_plot(
                    fig,
                    f"calibration-{slug(task)}-{slug(mode)}",
                    f"{task} · {mode}: calibration of True/False probabilities",
                    "calibration",
                    "Reliability diagram over all units of the mode "
                    "(10 equal-width bins of P(True), renormalised over the two labels).",
                )
            )
    return out


def all_plots(ctx: Context) -> list[Plot]:
    return (
        accuracy_vs_shots(ctx)
        + incorrect_choice(ctx)
        + confusion(ctx)
        + accchg(ctx)
        + calibration(ctx)
    )
