"""``negbench report``: runs → tables, plots, comparisons → Markdown, LaTeX, HTML, JSON, CSV."""

from __future__ import annotations

import datetime as _dt
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Set
from typing import Sequence

from negbench import __version__
from negbench.errors import NegbenchError, OutputError
from negbench.report import csv_export
from negbench.scoring.intervals import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from negbench.report.compare import compare_runs, to_markdown as compare_markdown
from negbench.report.headlines import headline_table, run_warnings, size_note, warning_text
from negbench.report.html import render as render_html
from negbench.scoring.runs import Run, load_runs, primary_metric, sample_view
from negbench.scoring.paper_tables import Context, build_tables
from negbench.report.schema import REPORT_SCHEMA
from negbench.scoring.tables import Table
from negbench.files import atomic_write_text, json_safe, write_json

FORMATS = ("md", "tex", "html", "json", "csv", "plots")
#: Samples the HTML browser holds by default; above it, the first N of each unit (a warning says so).
MAX_VIEWS = 30000


@dataclass
class Report:
    runs: list[Run]
    tables: list[Table]
    plots: list = field(default_factory=list)
    comparisons: list[dict] = field(default_factory=list)
    views: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)
    sample_limit: int | None = None
    notes: list[str] = field(default_factory=list)
    run_warnings: list[dict] = field(default_factory=list)  # what the runs themselves saved
    headline: Table | None = None  # per run and group: n, subset, headline metric, 95 % CI

    def to_dict(self) -> dict:
        return json_safe(
            {
                "schema": REPORT_SCHEMA,
                "negbench": __version__,
                "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "runs": [r.summary() for r in self.runs],
                "tables": [t.to_dict() for t in self.tables],
                "plots": [p.to_dict() for p in self.plots],
                "comparisons": [
                    {k: v for k, v in c.items() if not k.startswith("_")} for c in self.comparisons
                ],
                "headline": self.headline.to_dict() if self.headline else None,
                "warnings": list(self.warnings),
                "run_warnings": list(self.run_warnings),
                "notes": list(self.notes),
                "files": dict(self.files),
            }
        )


def check_metrics(run: Run, recompute: bool = False) -> list[str]:
    """Check the saved headline metric of every unit against its samples (and with ``recompute``
    replace every metric by :func:`negbench.scoring.metrics.unit_metrics` on the samples, as ``negbench
    rescore`` would, without writing anything)."""
    warnings = []
    for u in run.units.values():
        recs = run.samples(u.name)
        if isinstance(u.metrics.get("n"), int) and u.metrics["n"] != len(recs):
            warnings.append(
                f"{run.label}: {u.name}: results.json says n={u.metrics['n']}, "
                f"samples file has {len(recs)} records"
            )
        if recompute:
            try:
                from negbench.scoring.metrics import unit_metrics
                from negbench.tasks import get_task

                new = unit_metrics(get_task(u.task), u.mode, recs)
            except NegbenchError as exc:
                warnings.append(f"{run.label}: {u.name}: metrics not recomputed ({exc.what})")
                continue
            for k, v in new.items():
                old = u.metrics.get(k)
                if (
                    isinstance(v, float)
                    and isinstance(old, (int, float))
                    and not (math.isnan(v) and math.isnan(float(old)))
                    and abs(v - float(old)) > 1e-9
                ):
                    warnings.append(
                        f"{run.label}: {u.name}: {k} recomputed {v:.6g} (saved {old:.6g})"
                    )
            u.metrics = new
            continue
        m = primary_metric(u.task, u.mode, u.metrics, recs[0] if recs else None)
        if m and isinstance(u.metrics.get(m), (int, float)) and recs:
            vals = [float(r[m]) for r in recs if isinstance(r.get(m), (int, float))]
            if vals and abs(sum(vals) / len(vals) - float(u.metrics[m])) > 1e-9:
                warnings.append(
                    f"{run.label}: {u.name}: saved {m}={u.metrics[m]:.6g} but the samples "
                    f"give {sum(vals) / len(vals):.6g} (run 'negbench rescore')"
                )
    return warnings


def build(
    paths: Sequence[str | Path],
    *,
    labels: list[str | None] | None = None,
    groups: dict[str, list[str]] | None = None,
    baseline: int | None = 0,
    recompute: bool = False,
    plots: bool = True,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    alpha: float = 0.05,
    max_samples_per_unit: int | None = None,
    force: bool = False,
    all_samples: bool = False,
    text: bool = True,
) -> Report:
    """Everything a report shows, in memory (nothing written).  ``text=False``: no dataset text
    (:func:`leave_out_text`)."""
    runs = load_runs(paths, labels)
    warnings: list[str] = []
    for r in runs:
        warnings += check_metrics(r, recompute)
    ctx = Context(runs, dict(groups or {}))
    known = {r.label for r in runs}
    for g, members in ctx.groups.items():
        missing = [m for m in members if m not in known]
        if missing:
            warnings.append(
                f"group '{g}': no run labelled {', '.join(missing)} (labels: "
                f"{', '.join(sorted(known))})"
            )
    tables = build_tables(ctx)
    for t in tables:  # every table says n, subset or not, and the CI
        note = size_note(t, runs)
        if note:
            t.notes.append(note)
    comparisons: list[dict] = []
    if baseline is not None and len(runs) > 1:
        if not 0 <= baseline < len(runs):
            raise OutputError(
                f"--baseline {baseline} is not a run index (0..{len(runs) - 1})", where="--baseline"
            )
        base = runs[baseline]
        for r in runs:
            if r is base:
                continue
            if not set(r.tasks()) & set(base.tasks()):
                warnings.append(f"{r.label} not compared with {base.label}: no task in common")
                continue
            try:
                c = compare_runs(
                    base, r, n_resamples=n_resamples, seed=seed, alpha=alpha, force=force
                )
            except NegbenchError as exc:
                warnings.append(f"{r.label} not compared with {base.label}: {exc.what}")
                continue
            c["_id"] = f"cmp{len(comparisons)}"
            comparisons.append(c)
    if max_samples_per_unit is None and not all_samples:
        n_units = sum(len(r.units) for r in runs)
        total = sum(len(r.samples(u)) for r in runs for u in r.units)
        if total > MAX_VIEWS:
            max_samples_per_unit = max(1, MAX_VIEWS // n_units)
    views = sample_views(runs, comparisons, max_samples_per_unit)
    if max_samples_per_unit:
        warnings.append(
            f"the sample browser holds at most {max_samples_per_unit} samples per unit "
            "(--max-samples / --all-samples); tables and comparisons use all of them"
        )
    if not text:
        leave_out_text(views, comparisons)
    rep = Report(runs, tables, [], comparisons, views, warnings)
    rep.run_warnings = run_warnings(runs)
    rep.headline = headline_table(runs)
    rep.sample_limit = max_samples_per_unit
    rep.notes = [] if text else [NO_TEXT_NOTE]
    if plots:
        from negbench.report.plots import all_plots

        rep.plots = all_plots(ctx)
    return rep


NO_TEXT_NOTE = (
    "Dataset text is left out of this report (--no-text): no prompts, sentences, "
    "choices' wording, model outputs or answer texts; ids, labels, scores and "
    "correctness remain."
)


def leave_out_text(views: list[dict], comparisons: Sequence[dict] = ()) -> None:
    """Remove the dataset's words from sample views and flipped items, in place, for a report
    that can be shared where the data may not be (test sets kept out of training corpora,
    licences without redistribution): prompts and outputs go, a choice is named by its number
    ("choice 2", the answer and gold too when they are choices), free-text answers and
    several-word metadata (CONDAQA's answer spans) go; ids, labels and scores stay."""
    for v in views:
        v.pop("prompt", None)
        v.pop("output", None)
        names = {}
        if v.get("choices"):
            names = {c[0]: f"choice {k + 1}" for k, c in reversed(list(enumerate(v["choices"])))}
            v["choices"] = [[f"choice {k + 1}", c[1]] for k, c in enumerate(v["choices"])]
        v["pred"], v["gold"] = names.get(v.get("pred")), names.get(v.get("gold"))
        v["meta"] = {
            k: x
            for k, x in (v.get("meta") or {}).items()
            if not (isinstance(x, str) and len(x.split()) > 1)
        }
    for c in comparisons:
        for f in c.get("flips", ()):
            f["a_pred"] = f["b_pred"] = f["gold"] = None


def browsable_subset(n: int, k: int, must: Set[int] = frozenset(), *, seed: str = "") -> list[int]:
    """Indices of at most ``k`` of ``n`` samples for the browser, in their original order.

    Flipped items (``must``) come first; the rest is a seeded uniform draw. Taking the first k
    would show only the first patterns of a benchmark whose records are grouped (not-a-dataset's
    file order), so the draw spreads over the whole unit; the seed is the unit name, so the same
    report shows the same samples every time.
    """
    chosen = sorted(must)[:k]
    rest = [i for i in range(n) if i not in must]
    chosen += random.Random(f"negbench-browser/{seed}").sample(
        rest, min(len(rest), k - len(chosen))
    )
    return sorted(chosen)


def sample_views(
    runs: Sequence[Run], comparisons: Sequence[dict] = (), max_per_unit: int | None = None
) -> list[dict]:
    flips: dict[tuple, dict[str, str]] = {}
    for c in comparisons:
        cid = c["_id"]
        for f in c["flips"]:
            for idx in (c["a"]["index"], c["b"]["index"]):
                flips.setdefault((idx, f["unit"], f["doc_id"]), {})[cid] = f["change"]
    out = []
    for r in runs:
        for u in r.units.values():
            recs = r.samples(u.name)
            keep: Sequence[int] = range(len(recs))
            if max_per_unit and len(recs) > max_per_unit:
                flipped = {
                    i
                    for i, rec in enumerate(recs)
                    if (r.index, u.name, str(rec.get("doc_id", i))) in flips
                }
                keep = browsable_subset(len(recs), max_per_unit, flipped, seed=u.name)
            for i in keep:
                rec = recs[i]
                v = sample_view(r, u, rec, i)
                fl = flips.get((r.index, u.name, v["id"]))
                if fl:
                    v["flip"] = fl
                out.append(v)
    return out


def write(
    rep: Report, out: str | Path, formats: Sequence[str] = FORMATS, title: str | None = None
) -> dict[str, str]:
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(
            f"cannot create the report folder {out} ({exc.strerror})",
            where="--out",
            fix="choose a folder you can write to",
        ) from exc
    fmts = set(formats)
    title = title or ("negbench report: " + ", ".join(r.label for r in rep.runs))
    files: dict[str, str] = {}
    if rep.plots and ("plots" in fmts or "md" in fmts):
        from negbench.report.plots import save

        save(rep.plots, out / "plots")
        files["plots"] = "plots/"
    elif rep.plots:
        from negbench.report.plots import close

        close(rep.plots)
    if "md" in fmts:
        parts = [
            f"# {title}",
            "",
            "Runs: " + "; ".join(f"{r.index}: {r.label} ({r.path})" for r in rep.runs),
            "",
        ]
        if rep.run_warnings:
            parts += [f"## ⚠ Warnings ({len(rep.run_warnings)})", ""]
            parts += [f"- **{warning_text(w)}**" for w in rep.run_warnings] + [""]
        if rep.headline is not None:
            parts += [rep.headline.to_markdown(), ""]
        for t in rep.tables:
            parts += [t.to_markdown(), ""]
        for p in rep.plots:
            if p.files:
                parts += [f"![{p.title}]({p.files[-1]})", ""]
        for c in rep.comparisons:
            parts += [compare_markdown(c), ""]
        for w in rep.warnings:
            parts += [f"*warning: {w}*", ""]
        parts += [f"*{n}*\n" for n in rep.notes]
        atomic_write_text(out / "report.md", "\n".join(parts))
        files["md"] = "report.md"
    if "tex" in fmts:
        first = [rep.headline] if rep.headline else []
        tex = [
            "% negbench report tables; needs \\usepackage{booktabs}",
            *[t.to_latex() + "\n" for t in first + rep.tables],
        ]
        atomic_write_text(out / "report.tex", "\n".join(tex))
        files["tex"] = "report.tex"
    if "csv" in fmts:
        for p in csv_export.write_all(
            out / "csv", rep.runs, rep.tables, rep.views, rep.comparisons
        ):
            files[f"csv/{p.name}"] = f"csv/{p.name}"
    for i, c in enumerate(rep.comparisons):
        if "json" in fmts:
            name = f"compare-{c['_id']}.json"
            write_json(out / name, {k: v for k, v in c.items() if not k.startswith("_")})
            files[f"compare/{c['_id']}"] = name
    if "html" in fmts:
        atomic_write_text(
            out / "report.html",
            render_html(
                title=title,
                runs=[r.summary() for r in rep.runs],
                tables=rep.tables,
                plots=rep.plots,
                comparisons=rep.comparisons,
                samples=rep.views,
                warnings=rep.warnings,
                notes=rep.notes,
                sample_limit=rep.sample_limit,
                banner=[warning_text(w) for w in rep.run_warnings],
                headline=rep.headline,
            ),
        )
        files["html"] = "report.html"
    if "json" in fmts:
        files["json"] = "report.json"
        rep.files = files
        write_json(out / "report.json", rep.to_dict(), indent=1)
    rep.files = files
    return files
