"""A structured table: title, columns (multi-level headers), rows of labelled cells; each cell
holds its value, ± SD, how many values it averages, and a :class:`Ref` to the samples behind it.
Renders to Markdown, LaTeX and HTML, and to a plain dict (report.json).

A :class:`Ref` says how the cell is computed from per-sample records, so that any cell can be
recomputed from ``samples/*.jsonl`` (:func:`resolve_ref`) and the HTML report can list the samples
behind it:

* ``stat="mean"``: per unit, the mean of the record field ``field`` over the records matching
  ``where`` (e.g. ``acc``);
* ``stat="share"``: per unit, the share of the records matching ``where`` that also match ``hit``
  (e.g. wrong answers that picked the local negation);
* ``stat="count"``: per unit, the number of records matching ``where`` and ``hit``;
* ``stat="metric"``: per unit, the task's own metric at path ``field`` recomputed from the unit's
  records with :func:`negbench.scoring.metrics.unit_metrics` (for metrics over groups of records, such as
  CONDAQA consistency or coherence).

The cell is ``scale`` × the mean over replicates — units (seeds), or with ``replicate="task"``
tasks (CONDAQA's five test splits; several seeds of one split are averaged first) — and its SD
the sample SD (n − 1) of the scaled replicate values.  NaN values (e.g. an incorrect-choice share
when nothing was wrong) are left out of the mean.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field as dc_field
from typing import Any, Callable, Sequence

from negbench.scoring.metrics import sd as sample_sd, unit_metrics
from negbench.scoring.registry import REGISTRY
from negbench.scoring.runs import Run, UnitResult, get_path, matches, nanmean, sample_view


@dataclass
class Ref:
    run: int
    units: list[str]
    stat: str = "mean"  # mean | share | count | metric
    field: str | None = None  # record field (mean) or metric path (metric)
    where: dict = dc_field(default_factory=dict)
    hit: dict | None = None
    scale: float = 1.0
    replicate: str = "unit"  # unit | task

    def to_dict(self) -> dict:
        return {
            "run": self.run,
            "units": list(self.units),
            "stat": self.stat,
            "field": self.field,
            "where": self.where,
            "hit": self.hit,
            "scale": self.scale,
            "replicate": self.replicate,
        }

    def sample_filter(self) -> dict:
        """The filter that lists "the samples behind" the cell: ``where`` and ``hit`` together."""
        return {**self.where, **(self.hit or {})}


@dataclass
class Cell:
    value: float | str | None
    sd: float | None = None
    n: int = 1  # values averaged (seeds / splits)
    digits: int = 3
    ref: Ref | None = None
    values: list[float] = dc_field(default_factory=list)
    #: the items behind a rate (its denominator; over several seeds the distinct items), None
    #: when the cell is not a share of items
    items: int | None = None
    #: the 95 % interval of a rate, in the cell's unit (None: withheld, or not a rate)
    ci: tuple[float, float] | None = None
    #: why a rate's interval is withheld (:class:`negbench.scoring.intervals.Interval` reason)
    ci_withheld: str = ""

    def is_number(self) -> bool:
        return isinstance(self.value, (int, float)) and not isinstance(self.value, bool)

    def text(self, pm: str = " ± ") -> str:
        v = self.value
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "–"
        if not self.is_number():
            return str(v)
        s = f"{v:.{self.digits}f}"
        if self.n > 1 and self.sd is not None and not math.isnan(self.sd):
            s += f"{pm}{self.sd:.{self.digits}f}"
        return s

    def detail(self) -> str:
        """The interval and n of a rate, as every table prints them: ``[58.1–66.7] (240)``, or
        ``(24, no CI)`` when the interval is withheld; ``""`` for a cell that is not a rate."""
        if self.items is None or not self.is_number():
            return ""
        if self.ci is None:
            return f"({self.items:,}, no CI)"
        lo, hi = self.ci
        return f"[{lo:.{self.digits}f}–{hi:.{self.digits}f}] ({self.items:,})"

    def full_text(self) -> str:
        """:meth:`text` followed by :meth:`detail` (Markdown, LaTeX)."""
        d = self.detail() if self.text() != "–" else ""
        return f"{self.text()} {d}" if d else self.text()

    def to_dict(self) -> dict:
        return {
            "value": _num(self.value),
            "sd": _num(self.sd),
            "n": self.n,
            "values": [_num(x) for x in self.values],
            "text": self.text(),
            "items": self.items,
            "ci95": [_num(self.ci[0]), _num(self.ci[1])] if self.ci else None,
            "ci_withheld": self.ci_withheld or None,
            "ref": self.ref.to_dict() if self.ref else None,
        }


@dataclass
class Column:
    path: tuple[str, ...]
    key: str = ""

    def label(self, sep: str = " / ") -> str:
        return sep.join(p for p in self.path if p)


@dataclass
class Row:
    labels: list[str]
    cells: list[Cell | None]
    kind: str = "run"  # run | average | paper


#: Text cells longer than this (characters) may wrap in HTML (class ``nb-long``), so that a table
#: fits its box at a laptop's width (1366 px) instead of scrolling sideways.
LONG_TEXT = 18


@dataclass
class Table:
    id: str
    title: str
    benchmark: str
    row_header: list[str]
    columns: list[Column]
    rows: list[Row] = dc_field(default_factory=list)
    caption: str = ""
    notes: list[str] = dc_field(default_factory=list)
    paper: str = ""  # which paper table this reproduces the shape of

    # -- rendering -------------------------------------------------------------------------------
    def cell_id(self, ri: int, ci: int) -> str:
        return f"{self.id}.r{ri}.c{ci}"

    def to_markdown(self) -> str:
        head = list(self.row_header) + [c.label() for c in self.columns]
        lines = [f"**{self.title}**", ""]
        if self.caption:
            lines += [self.caption, ""]
        lines += [
            "| " + " | ".join(_md(h) for h in head) + " |",
            "|"
            + "|".join("---" if i < len(self.row_header) else "---:" for i in range(len(head)))
            + "|",
        ]
        for r in self.rows:
            cells = [_md(x) for x in r.labels] + [c.full_text() if c else "" for c in r.cells]
            lines.append("| " + " | ".join(cells) + " |")
        for n in self.all_notes():
            lines += ["", f"*{n}*"]
        return "\n".join(lines)

    def legend(self) -> list[str]:
        """What the cells' ± and [a–b] (n) are, for the tables that have them (every rendering
        adds it to the notes): ± is the SD over seeds or splits, not a 95 % margin."""
        cells = [c for _, _, _, _, c in self.cells() if c.is_number()]
        out = []
        sd = [c for c in cells if c.n > 1 and c.sd is not None and not math.isnan(c.sd)]
        if sd:
            over = (
                "splits"
                if all(c.ref is not None and c.ref.replicate == "task" for c in sd)
                else "seeds"
            )
            out.append(
                f"± is the standard deviation over the {over} a cell averages (n − 1), not a "
                f"95 % margin; a single {over[:-1]} has none."
            )
        if any(c.items is not None for c in cells):
            from negbench.scoring.intervals import MIN_CLUSTERS, MIN_ITEMS

            out.append(
                "[a–b] (n): the 95 % interval of a rate and the items behind it (distinct items "
                f"over its seeds): Wilson from {MIN_ITEMS} items; items in clusters (one item "
                f"under several seeds, a benchmark's groups or blocks) clustered Wilson from "
                f"{MIN_CLUSTERS} clusters. (n, no CI): too few for an interval whose coverage "
                "was measured (docs/statistics.md)."
            )
            if any(c.items is None and c.ref is not None for c in cells):
                out.append(
                    "A cell without (n) is not a share of single items (a metric over groups "
                    "such as consistency or coherence, a count, or a mean over seeds of a task "
                    "metric): it has no interval here; a run's headline interval is in the "
                    "headline table."
                )
        return out

    def all_notes(self) -> list[str]:
        """The table's notes and its :meth:`legend`."""
        return list(self.notes) + [x for x in self.legend() if x not in self.notes]

    def to_latex(self) -> str:
        nl = len(self.row_header)
        depth = max((len(c.path) for c in self.columns), default=1)
        spec = "l" * nl + "r" * len(self.columns)
        out = [
            "\\begin{table}[t]",
            "\\centering",
            "\\small",
            f"\\caption{{{_tex(self.title)}}}",
            f"\\label{{tab:{self.id}}}",
            f"\\begin{{tabular}}{{{spec}}}",
            "\\toprule",
        ]
        for level in range(depth):
            cells = [(_tex(h) if level == depth - 1 else "") for h in self.row_header]
            rules = []
            col = nl + 1
            for span, lab, _ in _groups(self.columns, level):
                if lab is None:
                    cells += [""] * span
                else:
                    cells.append(
                        f"\\multicolumn{{{span}}}{{c}}{{{_tex(lab)}}}" if span > 1 else _tex(lab)
                    )
                    if span > 1 and level < depth - 1:
                        rules.append(f"\\cmidrule(lr){{{col}-{col + span - 1}}}")
                col += span
            out.append(" & ".join(cells) + " \\\\")
            if rules:
                out.append(" ".join(rules))
        out.append("\\midrule")
        prev: list[str] = []
        prev_kind = None
        for r in self.rows:
            if prev_kind is not None and r.kind != prev_kind:
                out.append("\\midrule")
                prev = []
            prev_kind = r.kind
            labs = []
            for i, x in enumerate(r.labels):  # blank repeated leading labels
                same = i < len(prev) and prev[: i + 1] == r.labels[: i + 1]
                labs.append("" if same else _tex(x))
            prev = list(r.labels)
            cells = labs + [_tex(c.full_text()) if c else "" for c in r.cells]
            out.append(" & ".join(cells) + " \\\\")
        out += ["\\bottomrule", "\\end{tabular}"]
        for n in self.all_notes():
            out.append(f"\\par\\footnotesize {_tex(n)}")
        out.append("\\end{table}")
        return "\n".join(out)

    def to_html(self) -> str:
        depth = max((len(c.path) for c in self.columns), default=1)
        h = [f'<table class="nb-table" id="{html.escape(self.id)}">', "<thead>"]
        for level in range(depth):
            h.append("<tr>")
            if level == 0:
                for lab in self.row_header:
                    h.append(f'<th rowspan="{depth}" class="nb-rowhead">{html.escape(lab)}</th>')
            for span, label, cols in _groups(self.columns, level):
                if label is None:
                    continue
                rs = depth - level if all(len(c.path) == level + 1 for c in cols) else 1
                # a long word ("Contradiction (%)") may break, so that a table of many such
                # columns fits a laptop's width; short ones ("score") never do
                brk = ' class="nb-brk"' if max(map(len, label.split()), default=0) > 10 else ""
                h.append(f'<th colspan="{span}" rowspan="{rs}"{brk}>{html.escape(label)}</th>')
            h.append("</tr>")
        h.append("</thead><tbody>")
        for ri, r in enumerate(self.rows):
            h.append(f'<tr class="nb-row-{r.kind}">')
            for x in r.labels:
                long = ' class="nb-long"' if len(str(x)) > LONG_TEXT else ""
                h.append(f"<th{long}>{html.escape(str(x))}</th>")
            for ci, c in enumerate(r.cells):
                if c is None:
                    h.append("<td></td>")
                    continue
                cid = self.cell_id(ri, ci)
                txt = html.escape(c.text())
                # words may wrap in a long text cell, so that the table fits a laptop's width
                n_chars = 0 if c.is_number() else len(c.text())
                cls = "nb-cell" + (" nb-long" if n_chars > LONG_TEXT else "")
                cls += " nb-para" if n_chars > 3 * LONG_TEXT else ""
                if c.is_number() and " ± " in c.text():  # "62.50 ± 17.68" may take two lines
                    v, sd = c.text().split(" ± ", 1)
                    txt = f"<span>{html.escape(v)}</span> <span>± {html.escape(sd)}</span>"
                    cls += " nb-sd"
                detail = c.detail() if c.text() != "–" else ""
                if detail:  # "[58.1–66.7] (240)" under the value, small; it may wrap after
                    # the dash and before the n, so that a table of many rates fits a laptop
                    if detail.startswith("["):
                        bracket, n_text = detail.split(" ", 1)
                        lo, hi = bracket.split("–", 1)
                        inner = (
                            f"<span>{html.escape(lo)}–</span><wbr><span>{html.escape(hi)}</span> "
                            f"<span>{html.escape(n_text)}</span>"
                        )
                    else:  # "(24, no CI)" may wrap after the comma
                        inner = " ".join(
                            f"<span>{html.escape(x)}</span>" for x in detail.split(" ", 1)
                        )
                    txt += f'<span class="nb-ci">{inner}</span>'
                if c.ref is not None:
                    h.append(
                        f'<td class="{cls}" id="{cid}"><a class="nb-ref" href="#ref={cid}" '
                        f'title="show the samples behind this cell">{txt}</a></td>'
                    )
                else:
                    h.append(f'<td class="{cls}" id="{cid}">{txt}</td>')
            h.append("</tr>")
        h.append("</tbody></table>")
        return "".join(h)

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "title": self.title,
            "benchmark": self.benchmark,
            "paper": self.paper,
            "caption": self.caption,
            "notes": self.all_notes(),
            "row_header": list(self.row_header),
            "columns": [{"key": c.key or c.label(), "path": list(c.path)} for c in self.columns],
            "rows": [
                {
                    "labels": list(r.labels),
                    "kind": r.kind,
                    "cells": [c.to_dict() if c else None for c in r.cells],
                }
                for r in self.rows
            ],
        }

    def refs(self) -> dict[str, dict]:
        return {
            self.cell_id(ri, ci): c.ref.to_dict()
            for ri, r in enumerate(self.rows)
            for ci, c in enumerate(r.cells)
            if c and c.ref
        }

    def cells(self):
        """(row index, column index, row, column, cell) for every non-empty cell."""
        for ri, r in enumerate(self.rows):
            for ci, c in enumerate(r.cells):
                if c is not None:
                    yield ri, ci, r, self.columns[ci], c


def _groups(columns: Sequence[Column], level: int) -> list[tuple[int, str | None, list[Column]]]:
    """Consecutive columns sharing ``path[:level + 1]``: (span, label or None, columns)."""
    out: list[tuple[int, str | None, list[Column]]] = []
    i = 0
    while i < len(columns):
        c = columns[i]
        if len(c.path) <= level:
            out.append((1, None, [c]))
            i += 1
            continue
        j = i + 1
        while (
            j < len(columns)
            and len(columns[j].path) > level
            and columns[j].path[: level + 1] == c.path[: level + 1]
        ):
            j += 1
        out.append((j - i, c.path[level], list(columns[i:j])))
        i = j
    return out


def _md(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


_TEX = {
    "&": "\\&",
    "%": "\\%",
    "$": "\\$",
    "#": "\\#",
    "_": "\\_",
    "{": "\\{",
    "}": "\\}",
    "~": "\\textasciitilde{}",
    "^": "\\textasciicircum{}",
    "\\": "\\textbackslash{}",
}


def _tex(s: Any) -> str:
    return "".join(_TEX.get(ch, ch) for ch in str(s)).replace("±", "$\\pm$").replace("–", "--")


def _num(x: Any) -> Any:
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return None
    return x


def slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", s).strip("-").lower() or "t"


# -- cells from saved metrics ---------------------------------------------------------------------
def replicate_groups(run: Run, units: Sequence[str], replicate: str) -> list[list[str]]:
    if replicate == "task":
        by: dict[str, list[str]] = {}
        for u in units:
            by.setdefault(run.units[u].task, []).append(u)
        return list(by.values())
    return [[u] for u in units]


def make_cell(
    run: Run,
    units: Sequence[UnitResult],
    getter: Callable[[dict], Any],
    *,
    scale: float = 1.0,
    digits: int = 3,
    ref: Ref | None = None,
    replicate: str = "unit",
) -> Cell | None:
    """A cell from saved unit metrics: ``getter(metrics)`` per unit, averaged per replicate,
    scaled; mean ± SD over replicates.  None when no unit has the metric."""
    if not units:
        return None
    names = [u.name for u in units]
    reps = []
    have = False
    for grp in replicate_groups(run, names, replicate):
        vals = []
        for n in grp:
            v = getter(run.units[n].metrics)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                have = True
                vals.append(float(v))
        reps.append(nanmean(vals) * scale if vals else float("nan"))
    if not have:
        return None
    finite = [v for v in reps if not math.isnan(v)]
    mean = sum(finite) / len(finite) if finite else float("nan")
    s = sample_sd(finite) if len(finite) > 1 else None
    if ref is not None:
        ref.replicate = replicate
    cell = Cell(mean, s, len(finite), digits, ref, reps)
    if ref is not None and ref.stat in ("share", "mean"):
        add_interval(cell, run, ref)
    return cell


def rate_parts(run: Run, ref: Ref) -> tuple[dict, int, str] | None:
    """The parts of a rate cell read from its samples: per cluster (the task's unit — a contrast
    group, a block — else one item; an item's seeds add up in its cluster) the successes and the
    records behind it; with the distinct items and what a cluster is called.  None when the
    cell is not a proportion (``stat`` neither share nor mean, or a mean of a field that is not
    0/1) or its samples cannot be read."""
    if ref.stat not in ("share", "mean"):
        return None
    parts: dict[Any, tuple[float, float]] = {}
    items: set = set()
    unit_name = "items"
    for name in ref.units:
        u = run.units[name]
        try:
            structure = REGISTRY.task(u.task).structure
        except Exception:  # a task this install does not know: every item its own cluster
            structure = None
        if structure is not None and structure.unit:
            unit_name = structure.units_name
        try:
            views = run.filter_views(name)
            recs = run.samples(name)
        except Exception:
            return None
        for v, r in zip(views, recs):
            if not matches(v, ref.where):
                continue
            if ref.stat == "share":
                x = 1.0 if matches(v, ref.hit) else 0.0
            else:
                raw = r.get(ref.field or "")
                if isinstance(raw, bool) or not isinstance(raw, (int, float)):
                    continue
                x = float(raw)
                if x not in (0.0, 1.0):
                    return None
            doc = ("doc", v["id"])
            key = (
                u.task,
                structure.unit_key(r.get("meta") or {}, default=doc) if structure else doc,
            )
            items.add((u.task, doc))
            s, c = parts.get(key, (0.0, 0.0))
            parts[key] = (s + x, c + 1.0)
    return parts, len(items), unit_name


def add_interval(cell: Cell, run: Run, ref: Ref) -> None:
    """Give a rate cell its n (the distinct items behind it) and 95 % interval, read from its
    samples (:func:`rate_parts`): Wilson from ``MIN_ITEMS`` items, clustered Wilson from
    ``MIN_CLUSTERS`` clusters where items come in clusters (several seeds, a benchmark's units)
    — :func:`negbench.scoring.headline.interval_from`, the headline's rule; withheld below, with
    the reason in ``ci_withheld``."""
    from negbench.scoring.headline import interval_from

    got = rate_parts(run, ref)
    if got is None or not got[0] or not cell.is_number():
        return
    parts, items, unit_name = got
    iv = interval_from(parts, True, unit_name)
    cell.items = items
    if iv.ci is None:
        cell.ci_withheld = iv.reason
    else:
        cell.ci = (ref.scale * iv.ci[0], ref.scale * iv.ci[1])


def set_share_interval(cell: Cell | None, k: Any, n: Any, scale: float = 100.0) -> None:
    """Give a cell its n and 95 % interval from counts — ``k`` of ``n`` independent items
    (:func:`negbench.scoring.intervals.share_interval`) — for a rate whose samples do not give
    it (an error table's official labelling)."""
    from negbench.scoring.intervals import share_interval

    if cell is None or not cell.is_number() or not isinstance(n, int) or not isinstance(k, int):
        return
    iv = share_interval(k, n)
    cell.items = n
    if iv.ci is None:
        cell.ci_withheld = iv.reason
    else:
        cell.ci = (scale * iv.ci[0], scale * iv.ci[1])


def metric_cell(
    run: Run,
    units: Sequence[UnitResult],
    path: str,
    *,
    scale: float = 1.0,
    digits: int = 3,
    stat: str = "metric",
    field_: str | None = None,
    where: dict | None = None,
    hit: dict | None = None,
    replicate: str = "unit",
    ref_scale: float | None = None,
) -> Cell | None:
    """A cell for the saved metric at ``path`` with a Ref saying how to recompute it
    (``ref_scale``: the factor from the Ref's per-unit value to the cell's unit, default
    ``scale``; e.g. 100 for a share shown in percent whose saved metric is already a percent)."""
    ref = Ref(
        run.index,
        [u.name for u in units],
        stat,
        field_ if stat != "metric" else path,
        dict(where or {}),
        hit,
        scale if ref_scale is None else ref_scale,
    )
    return make_cell(
        run,
        units,
        lambda m: get_path(m, path),
        scale=scale,
        digits=digits,
        ref=ref,
        replicate=replicate,
    )


# -- recomputation from samples -------------------------------------------------------------------
def unit_value(run: Run, ref: Ref, unit: str, _cache: dict | None = None) -> float:
    """One unit's value of a Ref, computed from its per-sample records."""
    u = run.units[unit]
    recs = run.samples(unit)
    if ref.stat == "metric":
        key = (run.index, unit)
        if _cache is not None and key in _cache:
            m = _cache[key]
        else:
            m = unit_metrics(REGISTRY.task(u.task), u.mode, recs)
            if _cache is not None:
                _cache[key] = m
        v = get_path(m, ref.field or "")
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else float("nan")
    views = [sample_view(run, u, r, i) for i, r in enumerate(recs)]
    sel = [(v, r) for v, r in zip(views, recs) if matches(v, ref.where)]
    if ref.stat == "count":
        return float(sum(1 for v, _ in sel if matches(v, ref.hit)))
    if ref.stat == "share":
        if not sel:
            return float("nan")
        return sum(1 for v, _ in sel if matches(v, ref.hit)) / len(sel)
    vals = [float(r[ref.field]) for _, r in sel if r.get(ref.field) is not None]
    return sum(vals) / len(vals) if vals else float("nan")


def resolve_ref(
    run: Run, ref: Ref | dict, _cache: dict | None = None
) -> tuple[float, float | None]:
    """(value, SD) of a cell recomputed from the per-sample records alone."""
    if isinstance(ref, dict):
        ref = Ref(**ref)
    reps = []
    for grp in replicate_groups(run, ref.units, ref.replicate):
        vals = [unit_value(run, ref, n, _cache) for n in grp]
        reps.append(nanmean(vals) * ref.scale)
    finite = [v for v in reps if not math.isnan(v)]
    if not finite:
        return float("nan"), None
    return sum(finite) / len(finite), (sample_sd(finite) if len(finite) > 1 else None)


def ref_samples(run: Run, ref: Ref | dict) -> list[dict]:
    """Views of the samples behind a cell (``where`` and ``hit``)."""
    if isinstance(ref, dict):
        ref = Ref(**ref)
    out = []
    flt = ref.sample_filter()
    for n in ref.units:
        u = run.units[n]
        for i, r in enumerate(run.samples(n)):
            v = sample_view(run, u, r, i)
            if matches(v, flt):
                out.append(v)
    return out
