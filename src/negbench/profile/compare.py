"""``negbench profile compare A B [C …]``: several profiles (models, or a base model and its LoRA
adapter) side by side, each against the first.

* per benchmark unit group, the comparison ``negbench compare`` makes
  (:func:`negbench.report.compare.compare_runs`: items paired by doc id, McNemar's exact test,
  tests by the benchmark's units — McNemar's exact test where a unit is one item, else the
  cluster-robust t —, Holm-adjusted over the groups), on the profiles read as runs
  (:class:`~negbench.profile.folder.ProfileRun`);
* the headline table with every model's score, and Δ with its p against the first;
* the phenomena that moved: each phenomenon's condition in every model, Δ against the first,
  and — where the condition is a share or mean over items — the same paired test by units on
  its items, Holm-adjusted over the conditions tested (adjusted p below α: moved); group metrics
  (consistency, coherence, AccChg) get Δ only.

The page (``compare.html``: tables, both figures with every model, the comparisons with their
flipped items, the per-sample browser of every model), ``compare.md`` and ``compare.json`` go to
``--out``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from negbench.errors import NegbenchError, OutputError
from negbench.profile.page import HeadlineRow, ProfileView, pct, glance_plot, phenomena_plot, view
from negbench.profile.phenomena import Phenomenon, paired_items
from negbench.report.compare import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    compare_runs,
    mcnemar,
    p_text,
)
from negbench.scoring.intervals import holm, paired_test
from negbench.scoring.tables import Cell, Column, Row, Table

SCHEMA = "negbench.profile-compare/1"


@dataclass
class Moved:
    """One phenomenon condition in model B against model A."""

    benchmark: str
    phenomenon: str
    condition: str
    a: float
    b: float
    delta: float
    n_pairs: int = 0
    n_units: int = 0  # the benchmark's units the test goes by
    mcnemar_p: float | None = None
    bootstrap_p: float | None = None  # the paired test's p by units (name kept)
    p_holm: float | None = None  # adjusted over the conditions tested against this profile
    too_small: str | None = None
    ci: tuple[float, float] | None = None
    gap_a: float | None = None  # the contrast's Δ (condition − reference) in A and B
    gap_b: float | None = None
    significant: bool = False
    tested: bool = False
    #: why the condition says little in either profile (one answer throughout, n below
    #: MIN_SIDE_N): then it is not counted as moved, whatever its p-values
    flags: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


@dataclass
class ProfileComparison:
    views: list[ProfileView]
    comparisons: list[dict]  # compare_runs against the first, in order
    moved: list[list[Moved]]  # per other profile
    warnings: list[str] = field(default_factory=list)
    settings: dict = field(default_factory=dict)

    @property
    def labels(self) -> list[str]:
        return [v.run.label for v in self.views]

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "profiles": [
                {
                    "label": v.run.label,
                    "folder": str(v.run.path),
                    "model": v.manifest.get("model"),
                    "adapter": v.manifest.get("adapter"),
                    "preset": v.manifest.get("preset"),
                    "headline": [r.to_dict() for r in v.rows],
                }
                for v in self.views
            ],
            "comparisons": [
                {k: x for k, x in c.items() if not k.startswith("_")} for c in self.comparisons
            ],
            "phenomena": [
                {"a": self.labels[0], "b": self.labels[i + 1], "rows": [m.to_dict() for m in ms]}
                for i, ms in enumerate(self.moved)
            ],
            "settings": self.settings,
            "warnings": self.warnings,
        }


def _labels(views: Sequence[ProfileView]) -> None:
    seen: dict[str, int] = {}
    for v in views:
        seen[v.run.label] = seen.get(v.run.label, 0) + 1
    for v in views:
        if seen[v.run.label] > 1:
            v.run.label = f"{v.run.label} [{v.run.path.name}]"


def compare_profiles(
    folders: Sequence[str | Path],
    *,
    labels: Sequence[str | None] | None = None,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    alpha: float = 0.05,
    force: bool = False,
) -> ProfileComparison:
    """Compare profiles, each against the first (nothing is written)."""
    if len(folders) < 2:
        raise OutputError(
            "profile compare needs two or more profile folders",
            where="PROFILE",
            fix="negbench profile compare A B [C …]",
        )
    labels = list(labels or [])
    views = [
        view(f, index=i, label=labels[i] if i < len(labels) else None)
        for i, f in enumerate(folders)
    ]
    _labels(views)
    base = views[0]
    comparisons: list[dict] = []
    moved: list[list[Moved]] = []
    warnings: list[str] = []
    for i, v in enumerate(views[1:], 1):
        try:
            c = compare_runs(
                base.run, v.run, n_resamples=n_resamples, seed=seed, alpha=alpha, force=force
            )
        except NegbenchError as exc:
            warnings.append(
                f"{v.run.label} not compared item by item with {base.run.label}: {exc.what}"
            )
            moved.append(_moved(base, v, n_resamples, seed, alpha))
            continue
        c["_id"] = f"cmp{len(comparisons)}"
        comparisons.append(c)
        warnings += [f"{v.run.label}: {w}" for w in c.get("warnings", [])]
        moved.append(_moved(base, v, n_resamples, seed, alpha))
    return ProfileComparison(
        views,
        comparisons,
        moved,
        warnings,
        {"bootstrap_resamples": n_resamples, "seed": seed, "alpha": alpha},
    )


def _key(p: Phenomenon) -> tuple:
    return p.benchmark, p.name, p.condition.label


def _moved(
    a: ProfileView, b: ProfileView, n_resamples: int, seed: int, alpha: float
) -> list[Moved]:
    """Each phenomenon condition of ``b`` against ``a``: Δ, and the paired tests on its items."""
    theirs = {_key(p): p for p in b.phen}
    out = []
    for pa in a.phen:
        pb = theirs.get(_key(pa))
        if pb is None:
            continue
        m = Moved(
            pa.benchmark,
            pa.name,
            pa.condition.label,
            pa.condition.value,
            pb.condition.value,
            pb.condition.value - pa.condition.value,
            gap_a=pa.delta,
            gap_b=pb.delta,
            flags=[
                f"{lab}: {f}"
                for lab, p in ((a.run.label, pa), (b.run.label, pb))
                for f in p.condition.flags()
            ],
        )
        if pa.condition.per_item() and pa.condition.ref.units == pb.condition.ref.units:
            xa, xb, ids = paired_items(a.run, b.run, pa.condition.ref)
            if xa:
                m.n_pairs = len(xa)
                test = paired_test(xa, xb, ids, alpha)
                m.n_units = test["n_units"]
                m.too_small = test["too_small"]
                m.tested = test["p"] is not None
                m.bootstrap_p = test["p"]
                if test["ci_low"] is not None:
                    m.ci = (100 * test["ci_low"], 100 * test["ci_high"])
                if all(x in (0.0, 1.0) for x in xa + xb):
                    mc = mcnemar(
                        sum(1 for x, y in zip(xa, xb) if y < x),
                        sum(1 for x, y in zip(xa, xb) if y > x),
                    )
                    m.mcnemar_p = mc["exact_p"]
        out.append(m)
    # the conditions tested against this profile are one family: Holm (1979)
    for m, p in zip(out, holm([m.bootstrap_p if m.tested else None for m in out])):
        m.p_holm = p
        # a flagged condition (one answer throughout, too few items) is never counted as moved
        m.significant = bool(p is not None and p < alpha and not m.flags)
    return out


# -- tables -----------------------------------------------------------------------------------------
def _hkey(r: HeadlineRow) -> tuple:
    return r.benchmark, r.task, r.mode, r.shots, r.metric


def headline_compare_table(pc: ProfileComparison) -> Table:
    labels = pc.labels
    cols = [Column(("metric",)), Column(("n",))] + [
        Column((lab,), f"score:{lab}") for lab in labels
    ]
    for lab in labels[1:]:
        cols += [
            Column((f"{lab} − {labels[0]}", "Δ"), f"delta:{lab}"),
            Column((f"{lab} − {labels[0]}", "p"), f"p:{lab}"),
        ]
    t = Table(
        "profile-compare-headline",
        "Headline scores, side by side",
        "profile",
        ["benchmark", "mode · shots"],
        cols,
        caption="Scores in % (AccChg in points). Δ against the first profile; p: the paired "
        "test by the benchmark's units (contrast groups, blocks, minimal-pair groups; else "
        "documents) of the per-item score behind the headline — McNemar's exact test where a "
        "unit is one item, else the cluster-robust t; 'too small' under the units it needs "
        "(the 'Comparisons' section below has the flipped items). Click a score to list its "
        "items.",
    )
    keys: list[tuple] = []
    rows: dict[tuple, dict[int, HeadlineRow]] = {}
    for i, v in enumerate(pc.views):
        for r in v.rows:
            k = _hkey(r)
            if k not in rows:
                keys.append(k)
                rows[k] = {}
            rows[k][i] = r
    for k in keys:
        per = rows[k]
        any_row = next(iter(per.values()))
        cells: list[Cell | None] = [Cell(any_row.metric), Cell(str(any_row.n))]
        for i in range(len(labels)):
            hr = per.get(i)
            cells.append(
                Cell(hr.value if hr.value is not None else float("nan"), digits=1, ref=hr.ref)
                if hr
                else None
            )
        for j in range(1, len(labels)):
            a, b = per.get(0), per.get(j)
            d = (
                (b.value - a.value)
                if a and b and a.value is not None and b.value is not None
                else None
            )
            g = _group(pc, j, any_row)
            cells.append(Cell(d, digits=1) if d is not None else None)
            cells.append(Cell(_p_cell(g)) if g else Cell("–"))
        t.rows.append(Row([any_row.name, f"{any_row.mode} · {any_row.shots}-shot"], cells))
    t.notes.append(
        f"*: Holm-adjusted p (over the comparison's groups) below α = {pc.settings.get('alpha')}."
    )
    return t


def _p_cell(g: dict) -> str:
    """A group's p by units (its Holm-adjusted one decides the star), or "too small"."""
    p = (g.get("test") or {}).get("p")
    if p is None:
        return "too small"
    return p_text(p) + (" *" if g["significant"] else "")


def _group(pc: ProfileComparison, j: int, r: HeadlineRow) -> dict | None:
    """The compare_runs group of row ``r`` in the comparison of profile ``j`` with the first
    (a pooled row: its first task's group)."""
    label = pc.labels[j]
    for c in pc.comparisons:
        if c["b"]["label"] != label:
            continue
        for g in c["groups"]:
            if g["task"] == r.tasks[0] and g["mode"] == r.mode and g["shots"] == r.shots:
                return g
    return None


def phenomena_compare_table(pc: ProfileComparison) -> Table:
    labels = pc.labels
    cols = [Column(("condition",))] + [Column((lab,), f"v:{lab}") for lab in labels]
    for lab in labels[1:]:
        cols += [
            Column((f"{lab} − {labels[0]}", "Δ"), f"d:{lab}"),
            Column((f"{lab} − {labels[0]}", "p"), f"p:{lab}"),
            Column((f"{lab} − {labels[0]}", "p (Holm)"), f"h:{lab}"),
            Column((f"{lab} − {labels[0]}", "moved"), f"m:{lab}"),
        ]
    t = Table(
        "profile-compare-phenomena",
        "Negation phenomena: what moved",
        "profile",
        ["benchmark: phenomenon"],
        cols,
        caption="Each phenomenon's condition in every profile (%); Δ against the first; "
        "items paired by doc id, tested by the benchmark's units (McNemar's exact test where "
        "a unit is one item, else the cluster-robust t); p (Holm): adjusted over the "
        "conditions tested against that profile ('moved': Holm-adjusted p below α). 'too "
        "small': too few units or discordant items for a test. Group metrics (consistency, "
        "coherence, AccChg) have no per-item test (–). ⚠: the condition is one answer throughout, or has too few items, in a "
        "profile: not counted as moved. Click a value to list its items.",
    )
    by = [{_key(p): p for p in v.phen} for v in pc.views]
    for p0 in pc.views[0].phen:
        k = _key(p0)
        cells: list[Cell | None] = [Cell(p0.condition.label)]
        for i in range(len(labels)):
            p = by[i].get(k)
            cells.append(Cell(p.condition.value, digits=1, ref=p.condition.ref) if p else None)
        for j, ms in enumerate(pc.moved, 1):
            m = next((x for x in ms if (x.benchmark, x.phenomenon, x.condition) == k), None)
            if m is None:
                cells += [None, None, None, None]
                continue
            cells += [
                Cell(m.delta, digits=1) if math.isfinite(m.delta) else None,
                Cell(p_text(m.bootstrap_p) if m.tested else ("too small" if m.too_small else "–")),
                Cell(p_text(m.p_holm) if m.tested else "–"),
                Cell(
                    ("⚠ " + "; ".join(m.flags))
                    if m.flags
                    else ("yes" if m.significant else ("no" if m.tested else "–"))
                ),
            ]
        t.rows.append(Row([f"{p0.benchmark}: {p0.name}"], cells))
    return t


def moved_lines(pc: ProfileComparison) -> list[str]:
    """The phenomena that moved, as sentences (console and Markdown)."""
    out = []
    for j, ms in enumerate(pc.moved, 1):
        sig = [m for m in ms if m.significant]
        head = f"{pc.labels[j]} vs {pc.labels[0]}: "
        if not sig:
            out.append(
                head + "no phenomenon moved significantly "
                f"({sum(m.tested for m in ms)} tested by units, Holm-adjusted)"
            )
            continue
        out.append(
            head + f"{len(sig)} phenomenon condition(s) moved (Holm-adjusted over "
            f"{sum(m.tested for m in ms)} tested):"
        )
        for m in sorted(sig, key=lambda m: -abs(m.delta)):
            gap = ""
            if m.gap_a is not None and m.gap_b is not None:
                gap = f"; the contrast went from {m.gap_a:+.1f} to {m.gap_b:+.1f} points"
            out.append(
                f"  {m.benchmark}: {m.phenomenon}: {m.condition}: {pct(m.a)} → {pct(m.b)} "
                f"({m.delta:+.1f} points, p {p_text(m.bootstrap_p)} by {m.n_units} units, "
                f"Holm {p_text(m.p_holm)}{gap})"
            )
    return out


def write_comparison(
    pc: ProfileComparison, out: str | Path, *, title: str | None = None
) -> dict[str, str]:
    """Write ``compare.html``, ``compare.md``, ``compare.json`` and the figures into ``out``."""
    from negbench.files import atomic_write_text, write_json
    from negbench.report.build import sample_views
    from negbench.report.compare import to_markdown
    from negbench.report.html import render
    from negbench.report.plots import save

    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create {out} ({exc.strerror})", where="--out") from exc
    title = title or "Negation profiles: " + " vs ".join(pc.labels)
    tables = [headline_compare_table(pc), phenomena_compare_table(pc)]
    plots = [
        p
        for p in (
            glance_plot([(v.run.label, v.rows) for v in pc.views], "compare-glance"),
            phenomena_plot([(v.run.label, v.phen) for v in pc.views], "compare-phenomena"),
        )
        if p
    ]
    save(plots, out / "plots")
    runs = [v.run for v in pc.views]
    notes = moved_lines(pc)
    from negbench.report.headlines import run_warnings, warning_text

    banner = [warning_text(w) for w in run_warnings(runs)]
    atomic_write_text(
        out / "compare.html",
        render(
            title=title,
            runs=[r.summary() for r in runs],
            tables=tables,
            plots=plots,
            comparisons=pc.comparisons,
            samples=sample_views(runs, pc.comparisons),
            warnings=pc.warnings,
            notes=notes,
            banner=banner,
            lead_plots=plots[:1],
        ),
    )
    md = [f"# {title}", ""] + [f"{n}\n" for n in notes]
    for p in plots[:1]:
        md += [f"![{p.title}]({p.files[-1]})", ""]
    for t in tables:
        md += [t.to_markdown(), ""]
    for p in plots[1:]:
        md += [f"![{p.title}]({p.files[-1]})", ""]
    for c in pc.comparisons:
        md += [to_markdown(c, max_flips=50), ""]
    md += [f"*warning: {w}*\n" for w in pc.warnings]
    atomic_write_text(out / "compare.md", "\n".join(md))
    write_json(out / "compare.json", pc.to_dict())
    return {"html": "compare.html", "md": "compare.md", "json": "compare.json", "plots": "plots/"}


def summary_text(pc: ProfileComparison) -> str:
    """The headline side by side (console)."""
    labels = pc.labels
    lines = [
        "  ".join(
            [f"{'benchmark · mode · shots':<40}", f"{'metric':<11}"]
            + [f"{lab[:14]:>14}" for lab in labels]
            + [f"{'Δ ' + lab[:10]:>14}  {'p':>6}" for lab in labels[1:]]
        )
    ]
    keys: list[tuple] = []
    rows: dict[tuple, dict[int, HeadlineRow]] = {}
    for i, v in enumerate(pc.views):
        for r in v.rows:
            rows.setdefault(_hkey(r), {})[i] = r
            if _hkey(r) not in keys:
                keys.append(_hkey(r))
    for k in keys:
        per = rows[k]
        r0 = next(iter(per.values()))
        parts = [f"{r0.label[:40]:<40}", f"{r0.metric[:11]:<11}"]
        parts += [f"{pct(per[i].value) if i in per else '–':>14}" for i in range(len(labels))]
        for j in range(1, len(labels)):
            a, b = per.get(0), per.get(j)
            d = (
                (b.value - a.value)
                if a and b and a.value is not None and b.value is not None
                else None
            )
            g = _group(pc, j, r0)
            parts.append(
                f"{(f'{d:+.1f}' if d is not None else '–'):>14}  "
                f"{_p_cell(g).replace(' *', '*') if g else '–':>6}"
            )
        lines.append("  ".join(parts))
    return "\n".join(lines + [""] + moved_lines(pc))
