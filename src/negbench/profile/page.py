"""The profile's page: "where does my model fail on negation, and how does it compare?"

Built from a profile folder with the report's own parts (:mod:`negbench.report`): tables of
:class:`~negbench.scoring.tables.Cell` s whose :class:`~negbench.scoring.tables.Ref` lists the
items behind each number in the per-sample browser, matplotlib figures, and the one HTML page
(:func:`negbench.report.html.render`).  In order:

1. the headline table — benchmark, the paper's headline metric, score with its 95 % CI, n (and
   the full test set's size when the profile ran a subset), chance and majority on the same
   items, and the papers' models measured with the same protocol
   (:func:`negbench.profile.reported.comparable`);
2. a figure to take in at a glance: every headline score with its CI, chance, majority and the
   papers' models on one axis;
3. the negation phenomena across benchmarks (:mod:`negbench.profile.phenomena`) and their figure;
4. per benchmark, the user's model ranked among the papers' models on the same protocol;
5. what was not run, why, and how to get it.

The same content is written as Markdown (``profile.md``) and JSON (in ``profile.json``); the
lm-evaluation-harness layout and a model-card snippet are written beside them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from negbench.profile.folder import ProfileRun, finite, load_profile_run, merged_results, now
from negbench.scoring.intervals import MIN_CLUSTERS
from negbench.profile.phenomena import MIN_SIDE_N, Condition, Phenomenon, phenomena
from negbench.scoring.runs import Run, UnitResult, primary_metric
from negbench.report.plots import COLORS, MARKERS, Plot, finish_plot, pyplot
from negbench.scoring.tables import Cell, Column, Ref, Row, Table, resolve_ref

#: metrics that are signed changes (in points), not scores in [0, 100]
SIGNED = ("acc_chg",)
#: What a headline row says instead of a rank when the model answers one label throughout.
NOT_RANKED = "not ranked: the model answers one label"


def pct(x: float | None, digits: int = 1) -> str:
    return "–" if x is None or not finite(x) else f"{x:.{digits}f}"


def signed(metric: str) -> bool:
    return metric.endswith(SIGNED)


@dataclass
class PaperModel:
    model: str
    value: float  # percent / points, as the row shows it
    source: str  # "Thunder-KoNUBench Table 16"
    kind: str  # model / average
    notes: str = ""
    table: str = ""  # "Table 16"

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "value": self.value,
            "source": self.source,
            "kind": self.kind,
            "notes": self.notes,
        }


@dataclass
class HeadlineRow:
    """One headline number of a profile: a benchmark's task(s) × mode × shots."""

    benchmark: str
    title: str
    task: str  # the task, or "condaqa-split1..5" for a pooled part
    tasks: list[str]
    mode: str
    shots: int
    metric: str
    units: list[str]
    value: float | None  # percent (points for signed metrics)
    ci: tuple[float, float] | None
    n: int
    full: int | None  # the test set's size
    subset: str  # how the items were chosen ("" for all)
    seeds: list[int]
    seed_sd: float | None
    chance: float | None = None
    majority: float | None = None
    baseline_note: str = ""
    papers: list[PaperModel] = field(default_factory=list)
    ref: Ref | None = None
    #: the run's constant_prediction warning on these units (the model answers one label): the
    #: score then measures the label balance, and the row gets no rank among the papers' models
    constant: str | None = None

    @property
    def name(self) -> str:
        """The benchmark's title, or the task where a benchmark has several (``kmmlu-neg``)."""
        return self.title if self.task == self.benchmark else self.task

    @property
    def label(self) -> str:
        return f"{self.name} · {self.mode} · {self.shots}-shot"

    def rank(self) -> tuple[int, int] | None:
        """(rank of the user's model, models) among the papers' models (averages left out);
        None when the model answers one label (:attr:`constant`)."""
        ms = [p.value for p in self.papers if p.kind == "model"]
        if not ms or self.value is None or self.constant is not None:
            return None
        return 1 + sum(v > self.value for v in ms), len(ms) + 1

    def to_dict(self) -> dict:
        r = self.rank()
        return {
            "benchmark": self.benchmark,
            "title": self.title,
            "label": self.label,
            "task": self.task,
            "tasks": self.tasks,
            "mode": self.mode,
            "shots": self.shots,
            "metric": self.metric,
            "units": self.units,
            "value": self.value,
            "ci95": list(self.ci) if self.ci else None,
            "scale": "points" if signed(self.metric) else "percent",
            "n": self.n,
            "full": self.full,
            "subset": self.subset or None,
            "seeds": self.seeds,
            "seed_sd": self.seed_sd,
            "chance": self.chance,
            "majority": self.majority,
            "baseline_note": self.baseline_note or None,
            "papers": [p.to_dict() for p in self.papers],
            "rank": {"rank": r[0], "of": r[1]} if r else None,
            "not_ranked": NOT_RANKED if self.constant is not None and self.papers else None,
            "constant_prediction": self.constant,
            "ref": self.ref.to_dict() if self.ref else None,
        }


# -- headline ---------------------------------------------------------------------------------------
def _headline_metric(task: str, mode: str) -> str:
    """The metric the benchmark's paper reports for the task and mode (declared by the task)."""
    from negbench.tasks import get_task

    return get_task(task).headline(mode)


def _group_headline(run: Run, units: Sequence[UnitResult], metric: str) -> dict:
    """The run's own headline of the units' group (``results.json`` ``groups[g]["headline"]``:
    mean, SD over seeds, 95 % CI, n), when it is of ``metric``."""
    g = (run.results.get("groups") or {}).get(units[0].group) or {}
    head = g.get("headline") or {}
    return head if head.get("metric") == metric else {}


def _subset(
    run: Run, units: Sequence[UnitResult], tasks: Sequence[str]
) -> tuple[int, int | None, str]:
    """(items evaluated, the test set's size, how they were chosen — "" for all of them) from the
    runs' ``units[u]["subset"]``, summed over pooled tasks (one seed's units)."""
    n, full, rules = 0, 0, []
    seed = units[0].seed
    for u in units:
        if u.seed != seed:
            continue
        raw = (run.results.get("units") or {}).get(u.name) or {}
        sub = raw.get("subset") or {}
        n += int(sub.get("n") or u.metrics.get("n") or 0)
        full += int(sub.get("full") or 0)
        if sub.get("subset"):
            rules.append(str(sub.get("rule") or sub.get("how") or "a subset"))
    return n, full or None, "; ".join(dict.fromkeys(rules))


def _evaluated_docs(run: Run, task: str, units: Sequence[UnitResult]):
    from negbench.tasks import get_task

    ids = {str(r.get("doc_id")) for u in units if u.task == task for r in run.samples(u.name)}
    t = get_task(task)
    return [d for d in t.load(t.test_split) if str(d.id) in ids]


def _baselines(run: Run, row: HeadlineRow, units: Sequence[UnitResult]) -> None:
    from negbench.errors import NegbenchError
    from negbench.profile.baselines import baseline

    if signed(row.metric):
        row.baseline_note = "a change between conditions: no chance level"
        return
    chances, majors, notes = [], [], []
    for t in row.tasks:
        try:
            b = baseline(t, row.mode, _evaluated_docs(run, t, units))
        except NegbenchError as exc:
            notes.append(f"{t}: {exc.what}")
            continue
        if b.metric != row.metric:
            notes.append(f"baselines are floors of {b.metric}")
        if b.chance is not None:
            chances.append(b.chance)
        if b.majority is not None:
            majors.append(b.majority)
        if b.majority is not None and b.majority_answer:
            notes.append(f"majority answer {b.majority_answer!r}")
        elif b.chance is None or b.majority is None:
            notes.append(b.basis)
    row.chance = 100 * sum(chances) / len(chances) if chances else None
    row.majority = 100 * sum(majors) / len(majors) if majors else None
    row.baseline_note = "; ".join(dict.fromkeys(notes))


def _papers(row: HeadlineRow, run: Run, units: Sequence[UnitResult]) -> None:
    from negbench.profile.reported import comparable, paper_title

    u0 = units[0]
    raw = (run.results.get("units") or {}).get(u0.name) or {}
    seed = u0.seed if len(units) == 1 else None
    seen = set()
    for r in comparable(
        row.task if row.task in row.tasks else row.tasks[0],
        row.mode,
        row.shots,
        row.metric,
        seed=seed,
        chat=raw.get("chat"),
    ):
        if r.model_kind not in ("model", "average"):
            continue
        key = (r.model, r.value, r.paper)
        if key in seen:
            continue
        seen.add(key)
        v = r.negbench_value()
        v = v * 100 if r.unit != "count" and not r.metric.endswith("pct") else v
        title = paper_title(r.paper).split(" (")[0]
        row.papers.append(
            PaperModel(r.model, v, f"{title} {r.source}", r.model_kind, r.condition or "", r.source)
        )


def headline_rows(run: Run, manifest: Mapping[str, Any]) -> list[HeadlineRow]:
    """The headline rows of a profile: per benchmark, per finished part, per (task, mode, shots)
    group of its units (a pooled part's tasks together)."""
    rows = []
    for b in manifest.get("benchmarks", []):
        for p in b.get("parts", []):
            if p.get("status") != "done":
                continue
            tasks = list(p["spec"]["tasks"])
            pooled = bool(p["spec"].get("pooled"))
            groups: dict[tuple, list[UnitResult]] = {}
            for u in run.units.values():
                if u.task in tasks:
                    key = ("*" if pooled else u.task, u.mode, u.shots)
                    groups.setdefault(key, []).append(u)
            for (task, mode, shots), units in groups.items():
                row = _row(run, b, tasks if task == "*" else [task], task, mode, shots, units)
                if row is not None:
                    rows.append(row)
    return rows


def _row(
    run: Run,
    b: Mapping[str, Any],
    tasks: list[str],
    task: str,
    mode: str,
    shots: int,
    units: list[UnitResult],
) -> HeadlineRow | None:
    """One headline row: the value recomputed from the samples through its cell reference (the
    mean of the per-sample field, or the task's metric over the unit's records), the 95 % CI the
    run saved for the group (a pooled row: none, the SD over its tasks instead)."""
    from negbench.errors import NegbenchError

    try:
        metric = _headline_metric(tasks[0], mode)
    except NegbenchError:  # a task negbench cannot load any more
        metric = primary_metric(tasks[0], mode, units[0].metrics) or "acc"
    label = task if task != "*" else f"{tasks[0]}..{tasks[-1].rsplit('split', 1)[-1]}"
    pooled = task == "*"
    recs = run.samples(units[0].name)
    per_item = bool(recs) and metric in recs[0]
    ref = Ref(
        run.index,
        [u.name for u in units],
        "mean" if per_item else "metric",
        metric,
        {},
        None,
        100.0,
        "task" if pooled else "unit",
    )
    value, sd = resolve_ref(run, ref)
    if not finite(value):
        return None
    n, full, subset = _subset(run, units, tasks)
    ci = None
    head = {} if pooled else _group_headline(run, units, metric)
    if head.get("ci95") and all(finite(x) for x in head["ci95"]):
        ci = (100 * float(head["ci95"][0]), 100 * float(head["ci95"][1]))
    seeds = sorted({u.seed for u in units if u.seed is not None})
    row = HeadlineRow(
        b["key"],
        b["title"],
        label,
        tasks,
        mode,
        shots,
        metric,
        [u.name for u in units],
        value,
        ci,
        n,
        full,
        subset,
        seeds,
        sd if len(seeds) > 1 or pooled else None,
        ref=ref,
    )
    row.constant = _constant(run, units)
    _baselines(run, row, units)
    _papers(row, run, units)
    return row


def _constant(run: Run, units: Sequence[UnitResult]) -> str | None:
    """The run's constant_prediction warning on any of ``units`` (its message), or None."""
    from negbench.evaluation.run_warnings import RunWarning

    names = {u.name for u in units}
    for w in run.results.get("warnings") or []:
        x = RunWarning.of(w)
        if x.kind == "constant_prediction" and x.unit in names:
            return x.message
    return None


# -- tables ---------------------------------------------------------------------------------------
def _papers_text(row: HeadlineRow) -> str:
    """``rank 12 of 44, 24–71``: the user's rank among the papers' models and their range (the
    standing tables below name them)."""
    ms = sorted((p for p in row.papers if p.kind == "model"), key=lambda p: -p.value)
    if not ms:
        return "–"
    if row.constant is not None:
        return f"{NOT_RANKED} ({len(ms)} models, {pct(ms[-1].value, 0)}–{pct(ms[0].value, 0)})"
    r = row.rank()
    return (
        f"rank {r[0]} of {r[1]}, " if r else f"{len(ms)} models, "
    ) + f"{pct(ms[-1].value, 0)}–{pct(ms[0].value, 0)}"


def _range(ci: tuple[float, float]) -> str:
    """``15.8–37.2``; ``-14.3 to -0.6`` where a bound is negative (a dash would read as minus)."""
    sep = " to " if min(ci) < 0 else "–"
    return f"{pct(ci[0])}{sep}{pct(ci[1])}"


def headline_table(rows: Sequence[HeadlineRow], table_id: str = "profile-headline") -> Table:
    cols = [
        Column(("metric",)),
        Column(("n",)),
        Column(("score",)),
        Column(("95 % CI",)),
        Column(("chance / majority",)),
        Column(("papers' models",)),
    ]
    t = Table(
        table_id,
        "Headline: each benchmark's paper metric",
        "profile",
        ["benchmark", "mode · shots"],
        cols,
        caption="Scores in %, AccChg in points; 95 % CI: Wilson over the items, clustered "
        "Wilson or a cluster-robust t over the benchmark's units (groups, blocks, minimal "
        "pairs), shown from the items (30) or units (150) at which its coverage was measured "
        "(docs/statistics.md); chance and majority on the same "
        "items; the papers' models where the protocol is the same (task, mode, shots, metric, "
        "chat template): your rank among them and their range (the tables below name them). "
        "Click a score to list its items.",
    )
    for r in rows:
        n = f"{r.n}" + (f" of {r.full}" if r.subset and r.full else "")
        ci = _range(r.ci) if r.ci else "–"
        floor = (
            f"{pct(r.chance)} / {pct(r.majority)}"
            if r.chance is not None or r.majority is not None
            else "–"
        )
        t.rows.append(
            Row(
                [r.name, f"{r.mode} · {r.shots}-shot"],
                [
                    Cell(r.metric),
                    Cell(n),
                    Cell(
                        r.value if r.value is not None else float("nan"),
                        r.seed_sd,
                        max(2, len(r.seeds)) if r.seed_sd is not None else 1,
                        1,
                        r.ref,
                    ),
                    Cell(ci),
                    Cell(floor),
                    Cell(_papers_text(r)),
                ],
            )
        )
    subs = sorted({f"{r.name}: {r.subset}" for r in rows if r.subset})
    if subs:
        t.notes.append(
            "Subsets: " + "; ".join(subs) + ". A paper's number is on its whole test "
            "set: compare within the CI."
        )
    return t


def _n_text(c: Condition) -> str:
    return f"{c.n}" + ("" if c.counted == "items" else f" {c.counted}")


def _phenomenon_note(p: Phenomenon) -> str:
    """The flags of a contrast (⚠: left out of the figure) and why Δ has no interval."""
    flags = p.flags()
    out = ["⚠ " + "; ".join(flags) + ": not drawn"] if flags else []
    d = p.diff
    if p.ci is None and d is not None and d.needed and d.clusters < d.needed:
        out.append(f"no CI: {d.clusters} of the {d.needed} clusters needed")  # caption: why
    elif p.ci is None and p.ci_note():
        out.append(f"no CI: {p.ci_note()}")
    elif d is not None and p.reference is not None:
        out.append(
            f"{d.clusters} clusters"
            + ("" if d.paired == d.clusters else f", {d.paired} with both sides")
        )
    return "; ".join(out + ([p.note] if p.note else []))


def phenomena_table(phen: Sequence[Phenomenon], run_index: int = 0) -> Table:
    cols = [
        Column(("condition",)),
        Column(("score",)),
        Column(("n",)),
        Column(("vs.",)),
        Column(("score ",), "ref score"),
        Column(("n ",), "ref n"),
        Column(("Δ",)),
        Column(("95 % CI of Δ",)),
        Column(("note",)),
    ]
    t = Table(
        "profile-phenomena",
        "Negation phenomena across benchmarks",
        "profile",
        ["benchmark: phenomenon"],
        cols,
        caption="Each row contrasts a condition with a reference on the same items (%, Δ in "
        "points), n on each side (items, or the groups, blocks or pairs a metric counts). "
        "95 % CI of Δ: cluster-robust over the benchmark's units (blocks, contrast groups, "
        "minimal-pair groups, else items) with both sides paired, on G − 1 degrees of freedom; "
        f"none below {MIN_CLUSTERS} clusters, where no method reached 93 % coverage in "
        "negbench's simulation (docs/statistics.md). ⚠: a side whose answers are one label "
        f"throughout, or with n below {MIN_SIDE_N}: the contrast measures the label balance or "
        "noise, and the figure leaves it out. Click a score to list the items behind it.",
    )
    for p in phen:
        c, r = p.condition, p.reference
        c.ref.run = run_index
        if r is not None:
            r.ref.run = run_index
        ci = p.ci
        t.rows.append(
            Row(
                [f"{p.benchmark}: {p.name}"],
                [
                    Cell(c.label),
                    Cell(c.value, c.sd, 2 if c.sd is not None else 1, 1, c.ref),
                    Cell(_n_text(c)),
                    Cell(r.label) if r else None,
                    Cell(r.value, r.sd, 2 if r.sd is not None else 1, 1, r.ref) if r else None,
                    Cell(_n_text(r)) if r else None,
                    Cell(p.delta, digits=1) if p.delta is not None else None,
                    Cell(f"{ci[0]:+.1f} to {ci[1]:+.1f}") if ci else Cell("–"),
                    Cell(_phenomenon_note(p)),
                ],
            )
        )
    return t


def paper_label(p: PaperModel) -> str:
    """A paper's model as a ranking names it: an average says so once (the reported results
    already call some of them "… (average)")."""
    if p.kind == "average" and "(average)" not in p.model:
        return f"{p.model} (average)"
    return p.model


def standing_tables(rows: Sequence[HeadlineRow], label: str) -> list[Table]:
    """Per headline row with the papers' models: the user's model ranked among them."""
    out = []
    for i, r in enumerate(rows):
        if not r.papers or r.value is None:
            continue
        t = Table(
            f"profile-standing-{i}",
            f"{r.title} · {r.task} · {r.mode} · {r.shots}-shot: "
            f"{r.metric} beside the papers' models",
            r.benchmark,
            ["model"],
            [Column(("score",)), Column(("source",))],
            caption="Ranked by score; your model's row is the dark one. The papers ran their "
            "whole test set"
            + (f"; this profile ran {r.n} items" if r.subset else "")
            + "."
            + (
                f" ⚠ Your model is {NOT_RANKED} ({r.constant}): its place in this list is "
                "the label balance's, not the model's."
                if r.constant
                else ""
            ),
        )
        entries = [
            (
                p.value,
                Row(
                    [paper_label(p)],
                    [
                        Cell(p.value, digits=1),
                        Cell(p.source + (f" · {p.notes}" if p.notes else "")),
                    ],
                    "paper",
                ),
            )
            for p in r.papers
        ]
        entries.append(
            (
                r.value,
                Row(
                    [f"{label} (this profile" + ("; not ranked)" if r.constant else ")")],
                    [Cell(r.value, digits=1, ref=r.ref), Cell(r.subset or "all items")],
                    "run",
                ),
            )
        )
        for _, row in sorted(entries, key=lambda e: -e[0]):
            t.rows.append(row)
        out.append(t)
    return out


def not_run(manifest: Mapping[str, Any]) -> list[dict]:
    """Benchmarks and tasks the profile did not run, with why and what to do."""
    out = []
    for b in manifest.get("benchmarks", []):
        for p in b.get("parts", []):
            for m in p.get("missing", []):
                out.append(
                    {
                        "benchmark": b["key"],
                        "task": m["task"],
                        "status": "no data",
                        "why": m["message"],
                        "how": _how(m.get("fix") or "", b.get("how_to_get") or ""),
                    }
                )
            if p.get("status") in ("unsupported", "failed", "pending"):
                out.append(
                    {
                        "benchmark": b["key"],
                        "task": ", ".join(p["spec"]["tasks"]),
                        "status": {"pending": "not finished"}.get(p["status"], p["status"]),
                        "why": p.get("message", "the profile stopped before this part"),
                        "how": p.get("fix", "rerun the same command to resume"),
                    }
                )
    return out


def _how(fix: str, how_to_get: str) -> str:
    """What to do about a missing task: the fix of its own error first (it answers the reason
    shown beside it — "pip install … datasets" for a missing package), then where the
    benchmark's data comes from."""
    if not fix:
        return how_to_get
    if not how_to_get or how_to_get in fix:
        return fix
    return f"{fix}. Where the data comes from: {how_to_get}"


def not_run_table(items: Sequence[Mapping[str, str]]) -> Table:
    t = Table(
        "profile-not-run",
        "Not run: what is missing and how to get it",
        "profile",
        ["benchmark", "task"],
        [Column(("status",)), Column(("why",)), Column(("how to get it / fix",))],
    )
    for m in items:
        t.rows.append(
            Row([m["benchmark"], m["task"]], [Cell(m["status"]), Cell(m["why"]), Cell(m["how"])])
        )
    return t


# -- plots ------------------------------------------------------------------------------------------
def glance_plot(
    series: Sequence[tuple[str, Sequence[HeadlineRow]]], pid: str = "profile-glance"
) -> Plot | None:
    """Every headline score on one axis: the model(s) (dot, 95 % CI), chance (|), majority (◇)
    and the papers' models on the same protocol (grey dots)."""
    keys: list[tuple] = []
    by: dict[tuple, dict[str, HeadlineRow]] = {}
    for label, rows in series:
        for r in rows:
            k = (r.benchmark, r.task, r.mode, r.shots, r.metric)
            if k not in by:
                keys.append(k)
                by[k] = {}
            by[k][label] = r
    if not keys:
        return None
    plt = pyplot()
    groups = [[k for k in keys if not signed(k[4])], [k for k in keys if signed(k[4])]]
    groups = [g for g in groups if g]
    fig, axes = plt.subplots(
        len(groups),
        1,
        figsize=(9.2, 0.42 * len(keys) + 1.2 * len(groups) + 0.4),
        squeeze=False,
        gridspec_kw={"height_ratios": [len(g) + 1 for g in groups]},
    )
    for ax, ks in zip(axes[:, 0], groups):
        sgn = signed(ks[0][4])
        for i, k in enumerate(ks):
            y = -i
            any_row = next(iter(by[k].values()))
            pv = [p.value for p in any_row.papers if p.kind == "model"]
            if pv:
                ax.scatter(pv, [y + 0.18] * len(pv), s=12, color="#9aa1ad", alpha=0.7, zorder=2)
            if any_row.chance is not None:
                ax.scatter([any_row.chance], [y], marker="|", s=260, color="k", zorder=3)
            if any_row.majority is not None:
                ax.scatter(
                    [any_row.majority],
                    [y],
                    marker="D",
                    s=22,
                    facecolor="none",
                    edgecolor="k",
                    zorder=3,
                )
            for j, (label, _) in enumerate(series):
                hr = by[k].get(label)
                if hr is None or hr.value is None:
                    continue
                off = (j - (len(series) - 1) / 2) * 0.14
                err = None
                if hr.ci:
                    err = [[max(0.0, hr.value - hr.ci[0])], [max(0.0, hr.ci[1] - hr.value)]]
                ax.errorbar(
                    [hr.value],
                    [y - off],
                    xerr=err,
                    fmt=MARKERS[j % len(MARKERS)],
                    ms=6,
                    color=COLORS[j % len(COLORS)],
                    capsize=3,
                    lw=1.4,
                    zorder=4,
                    # hollow: the model answers one label, the score is the label balance
                    **({"markerfacecolor": "white"} if hr.constant is not None else {}),
                )
        ax.set_yticks(
            [-i for i in range(len(ks))],
            [
                f"{next(iter(by[k].values())).label}\n{k[4]}"
                + (" (one label)" if any(r.constant is not None for r in by[k].values()) else "")
                for k in ks
            ],
            fontsize=8,
        )
        ax.set_ylim(-len(ks) + 0.5, 0.6)
        if sgn:
            ax.axvline(0, color="k", lw=0.8)
            ax.set_xlabel("change in points (AccChg: with − without the added negation)")
        else:
            ax.set_xlim(0, 100)
            ax.set_xlabel("score (%)")
        ax.grid(axis="x", alpha=0.3)
        ax.legend(
            handles=_glance_legend(series),
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            fontsize=7,
            frameon=False,
        )
    title = "Negation profile: " + ", ".join(label for label, _ in series)
    return finish_plot(
        fig,
        pid,
        title,
        "profile_glance",
        "Each benchmark's headline score with its 95 % CI, beside chance (|), the "
        "majority answer (◇) and the papers' models on the same protocol (grey). A hollow "
        "dot, '(one label)': the model answers one label throughout, so the score is the "
        "label balance of the items, not a measure of the model (not ranked).",
    )


def _glance_legend(series: Sequence[tuple[str, Sequence[HeadlineRow]]]) -> list:
    from matplotlib.lines import Line2D

    hs = [
        Line2D(
            [],
            [],
            marker=MARKERS[j % len(MARKERS)],
            color=COLORS[j % len(COLORS)],
            ls="-",
            lw=1.4,
            ms=6,
            label=f"{label} (95 % CI)",
        )
        for j, (label, _) in enumerate(series)
    ]
    if any(r.constant is not None for _, rows in series for r in rows):
        hs.append(
            Line2D(
                [],
                [],
                marker="o",
                markerfacecolor="white",
                color=COLORS[0],
                ls="none",
                ms=6,
                label="one label throughout",
            )
        )
    hs += [
        Line2D([], [], marker="o", color="#9aa1ad", ls="none", ms=4, label="papers' models"),
        Line2D([], [], marker="|", color="k", ls="none", ms=12, label="chance"),
        Line2D(
            [],
            [],
            marker="D",
            markerfacecolor="none",
            markeredgecolor="k",
            ls="none",
            ms=5,
            label="majority answer",
        ),
    ]
    return hs


def phenomena_plot(
    series: Sequence[tuple[str, Sequence[Phenomenon]]], pid: str = "profile-phenomena"
) -> Plot | None:
    """Each contrast as a dumbbell: the reference (open) and the condition (filled), with the
    95 % interval of Δ drawn from the reference; a flagged contrast (constant answers, too few
    items) is left out, and the caption says how many."""
    keys: list[tuple] = []
    by: dict[tuple, dict[str, Phenomenon]] = {}
    left_out: set[tuple] = set()
    for label, phs in series:
        for p in phs:
            if p.reference is None or p.delta is None:
                continue
            if not p.drawn:
                left_out.add((p.benchmark, p.condition.label, p.reference.label))
                continue
            k = (p.benchmark, p.condition.label, p.reference.label)
            if k not in by:
                keys.append(k)
                by[k] = {}
            by[k][label] = p
    if not keys:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9.2, 0.34 * len(keys) * max(1, len(series) * 0.7) + 1.3))
    for i, k in enumerate(keys):
        for j, (label, _) in enumerate(series):
            ph = by[k].get(label)
            if ph is None or ph.reference is None:
                continue
            y = -i - (j - (len(series) - 1) / 2) * 0.22
            a, b = ph.reference.value, ph.condition.value
            color = COLORS[j % len(COLORS)]
            ax.plot([a, b], [y, y], color=color, lw=1.6, alpha=0.8, zorder=2)
            if ph.ci is not None:  # where the condition could lie, given the reference
                lo, hi = a + ph.ci[0], a + ph.ci[1]
                ax.plot([lo, hi], [y - 0.09, y - 0.09], color=color, lw=0.9, alpha=0.6)
                ax.plot([lo, lo], [y - 0.13, y - 0.05], color=color, lw=0.9, alpha=0.6)
                ax.plot([hi, hi], [y - 0.13, y - 0.05], color=color, lw=0.9, alpha=0.6)
            ax.scatter([a], [y], facecolor="white", edgecolor=color, s=28, zorder=3)
            ax.scatter([b], [y], color=color, s=28, zorder=3, label=label if i == 0 else None)
    ax.set_yticks(
        [-i for i in range(len(keys))], [f"{k[0]}: {k[1]}\nvs {k[2]}" for k in keys], fontsize=7
    )
    ax.set_ylim(-len(keys) + 0.5, 0.6)
    ax.set_xlim(0, 100)
    ax.set_xlabel("score (%): open = reference, filled = condition")
    ax.grid(axis="x", alpha=0.3)
    if len(series) > 1:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    return finish_plot(
        fig,
        pid,
        "Negation phenomena",
        "profile_phenomena",
        "Each contrast from the table above: the reference condition (open circle) and "
        "the negation condition (filled); a long line is a large effect. The thin bar below is "
        "the 95 % interval of Δ placed at the reference (none: too few clusters)."
        + (
            f" Left out: {len(left_out)} contrast(s) with a side whose answers are one label "
            f"or with fewer than {MIN_SIDE_N} items (⚠ in the table)."
            if left_out
            else ""
        ),
    )


# -- the page ---------------------------------------------------------------------------------------
@dataclass
class ProfileView:
    """Everything one profile's page shows, computed from its folder."""

    run: ProfileRun
    manifest: dict
    rows: list[HeadlineRow]
    phen: list[Phenomenon]
    missing: list[dict]


def view(
    folder: str | Path,
    manifest: Mapping[str, Any] | None = None,
    index: int = 0,
    label: str | None = None,
) -> ProfileView:
    from negbench.profile.folder import read_manifest

    manifest = dict(manifest or read_manifest(folder))
    run = load_profile_run(folder, label=label, index=index)
    rows = headline_rows(run, manifest)
    phen: list[Phenomenon] = []
    for b in manifest.get("benchmarks", []):
        for p in b.get("parts", []):
            if p.get("status") == "done":
                phen += phenomena(
                    run, b["key"], list(p["spec"]["tasks"]), bool(p["spec"].get("pooled"))
                )
                break  # the first finished part's units
    return ProfileView(run, manifest, rows, phen, not_run(manifest))


def summary_text(manifest: Mapping[str, Any]) -> str:
    """The headline as text (what ``negbench profile`` prints)."""
    lines = [
        f"{'benchmark · mode · shots':<44} {'metric':<12} {'n':>6}  {'score':>6}  {'95% CI':<12} "
        f"{'chance':>6}  papers' models"
    ]
    for r in manifest.get("headline", []):
        ci = f"{pct(r['ci95'][0])}–{pct(r['ci95'][1])}" if r.get("ci95") else "–"
        rank = r.get("rank")
        papers = (
            f"rank {rank['rank']}/{rank['of']}"
            if rank
            else ("not ranked (one label)" if r.get("not_ranked") else "–")
        )
        lines.append(
            f"{r['label'][:44]:<44} {r['metric'][:12]:<12} {r['n']:>6}  "
            f"{pct(r['value']):>6}  {ci:<12} {pct(r.get('chance')):>6}  {papers}"
        )
    if len(lines) == 1:
        lines = []
    for m in manifest.get("not_run", []):
        lines.append(
            f"not run: {m['benchmark']} ({m['task']}): {m['status']}: {m['why']}\n  how: {m['how']}"
        )
    return "\n".join(lines)


def write_profile_page(
    folder: str | Path,
    manifest: dict | None = None,
    *,
    formats: Sequence[str] = ("html", "md", "json", "plots"),
) -> dict[str, str]:
    """Write the page (HTML, Markdown, the computed content into ``profile.json``), the model-card
    snippet and the lm-eval layout of a profile folder; returns the files written."""
    from negbench.files import atomic_write_text
    from negbench.profile.folder import finished_parts, read_manifest, write_manifest

    folder = Path(folder)
    manifest = manifest if manifest is not None else read_manifest(folder)
    files: dict[str, str] = {}
    if not finished_parts(manifest):  # nothing ran: the page says what is missing
        missing = not_run(manifest)
        title = f"Negation profile of {manifest.get('model')} ({manifest.get('preset')} preset)"
        notes = intro_notes(manifest, []) + [
            "No benchmark ran: the table below says why and how to get the data."
        ]
        tables = [not_run_table(missing)] if missing else []
        if "html" in formats:
            from negbench.report.html import render

            atomic_write_text(
                folder / "profile.html",
                render(
                    title=title,
                    runs=[],
                    tables=tables,
                    plots=[],
                    comparisons=[],
                    samples=[],
                    notes=notes,
                ),
            )
            files["html"] = "profile.html"
        if "md" in formats:
            atomic_write_text(folder / "profile.md", markdown(title, notes, tables, [], []))
            files["md"] = "profile.md"
        manifest.update(headline=[], phenomena=[], not_run=missing, files=files, page_written=now())
        write_manifest(folder, manifest)
        return files
    v = view(folder, manifest)
    label = v.run.label
    tables = [headline_table(v.rows)]
    if v.phen:
        tables.append(phenomena_table(v.phen))
    tables += standing_tables(v.rows, label)
    if v.missing:
        tables.append(not_run_table(v.missing))
    plots = [p for p in (glance_plot([(label, v.rows)]), phenomena_plot([(label, v.phen)])) if p]
    title = f"Negation profile of {label} ({manifest.get('preset')} preset)"
    notes = intro_notes(manifest, v.rows)
    from negbench.report.headlines import run_warnings, warning_text

    saved = run_warnings([v.run])  # what the runs found: a banner above all
    banner = [warning_text(w) for w in saved]
    if "plots" in formats and plots:
        from negbench.report.plots import save

        save(plots, folder / "plots")
        files["plots"] = "plots/"
    if "html" in formats:
        from negbench.report.build import sample_views
        from negbench.report.html import render

        atomic_write_text(
            folder / "profile.html",
            render(
                title=title,
                runs=[v.run.summary()],
                tables=tables,
                plots=plots,
                comparisons=[],
                samples=sample_views([v.run]),
                notes=notes,
                banner=banner,
                lead_plots=plots[:1],
            ),
        )
        files["html"] = "profile.html"
    if "md" in formats:
        atomic_write_text(folder / "profile.md", markdown(title, notes, tables, plots, banner))
        files["md"] = "profile.md"
    files.update(write_interop(folder, v.run))
    if "plots" not in formats:
        from negbench.report.plots import close

        close(plots)
    manifest.update(
        headline=[r.to_dict() for r in v.rows],
        phenomena=[p.to_dict() for p in v.phen],
        not_run=v.missing,
        run_warnings=saved,
        files=files,
        page_written=now(),
    )
    if "json" in formats:
        files["json"] = "profile.json"
    write_manifest(folder, manifest)
    return files


def intro_notes(manifest: Mapping[str, Any], rows: Sequence[HeadlineRow]) -> list[str]:
    from negbench.profile.presets import PRESETS

    preset = manifest.get("preset", "")
    done = sum(1 for b in manifest.get("benchmarks", []) if b.get("status") in ("done", "partial"))
    out = [
        f"Preset {preset}: {PRESETS.get(preset, '')}. {done} of "
        f"{len(manifest.get('benchmarks', []))} benchmarks ran."
    ]
    subs = [r for r in rows if r.subset]
    if subs:
        out.append(
            "Subset sizes (items), the standard error (SE) of a proportion near 50 % on that "
            "many independent items and its 95 % margin (1.96 SE; wider where items are "
            "clustered): "
            + "; ".join(
                f"{r.name} {r.n} (SE {50 / math.sqrt(max(r.n, 1)):.1f} points, 95 % margin "
                f"±{1.96 * 50 / math.sqrt(max(r.n, 1)):.1f})"
                for r in subs
            )
            + "."
        )
    return out


def markdown(
    title: str,
    notes: Sequence[str],
    tables: Sequence[Table],
    plots: Sequence[Plot],
    warnings: Sequence[str],
) -> str:
    parts = [f"# {title}", ""] + [f"{n}\n" for n in notes]
    if warnings:
        parts += [f"## ⚠ Warnings ({len(warnings)})", ""] + [f"- **{w}**" for w in warnings] + [""]
    for p in plots[:1]:
        if p.files:
            parts += [f"![{p.title}]({p.files[-1]})", ""]
    for t in tables:
        parts += [t.to_markdown(), ""]
    for p in plots[1:]:
        if p.files:
            parts += [f"![{p.title}]({p.files[-1]})", ""]
    return "\n".join(parts)


def write_interop(folder: Path, run: ProfileRun) -> dict[str, str]:
    """The model-card snippet and the lm-eval layout of the profile's runs."""
    from negbench.files import atomic_write_text
    from negbench.profile.lm_eval_layout import write_lm_eval
    from negbench.profile.model_card import model_card_markdown

    results = merged_results([run.results])
    atomic_write_text(
        folder / "model_card.md", model_card_markdown(results, title="Negation profile")
    )
    import shutil

    shutil.rmtree(folder / "lm-eval", ignore_errors=True)  # one results file: this profile's
    path = write_lm_eval(results, folder / "lm-eval")
    return {"model_card": "model_card.md", "lm_eval": str(path.relative_to(folder))}
