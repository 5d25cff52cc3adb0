"""What an evaluation returns: :class:`Results`, typed views of ``results.json``.

A :class:`Results` holds the run's metrics per unit (task × mode × shots × seed) and per group
(units that differ only by seed), its per-sample records (from memory, or from the run folder's
``samples/``), the tables the tasks write with a run, and the paper-shaped report tables.
``to_dict()`` is ``results.json``'s content; ``to_pandas()`` is one row per unit and metric.
The plain-text rendering that ``negbench run`` / ``show`` print lives here too, so every caller
prints the same thing.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator


@dataclass(frozen=True)
class UnitResult:
    """One unit: a task, a mode, a number of shots, a seed, and its metrics."""

    name: str
    task: str
    mode: str
    shots: int
    seed: int | None
    group: str
    chat: bool
    metrics: dict[str, Any]


@dataclass(frozen=True)
class GroupResult:
    """Units that differ only by seed: each numeric metric as mean / SD / n over the seeds."""

    name: str
    task: str
    mode: str
    shots: int
    units: tuple[str, ...]
    metrics: dict[str, dict[str, float]]

    def mean(self, metric: str) -> float:
        return self.metrics[metric]["mean"]


class Results:
    """The results of one evaluation (``data``: the ``results.json`` dict)."""

    def __init__(
        self,
        data: dict,
        output: str | Path | None = None,
        samples: dict[str, list[dict]] | None = None,
    ):
        self.data = data
        self.output = Path(output) if output is not None else None
        self._samples = samples or {}

    @classmethod
    def load(cls, run: str | Path) -> "Results":
        """A saved run folder (what ``negbench run`` or ``evaluate(output=…)`` wrote)."""
        from negbench.evaluation.store import load_results

        return cls(load_results(run), run)

    # -- typed views ---------------------------------------------------------------------------
    @property
    def units(self) -> dict[str, UnitResult]:
        return {
            name: UnitResult(
                name,
                u["task"],
                u["mode"],
                u["shots"],
                u["seed"],
                u["group"],
                bool(u.get("chat")),
                u["metrics"],
            )
            for name, u in self.data["units"].items()
        }

    @property
    def groups(self) -> dict[str, GroupResult]:
        return {
            name: GroupResult(
                name, g["task"], g["mode"], g["shots"], tuple(g["units"]), g["metrics"]
            )
            for name, g in self.data["groups"].items()
        }

    @property
    def model(self) -> dict:
        return self.data["model"]

    @property
    def tables(self) -> dict[str, str]:
        """The Markdown tables saved with the run (``tables.md``) and the run-level sections."""
        return run_tables(self.data)

    @property
    def warnings(self) -> list:
        """The run's warnings as :class:`~negbench.evaluation.run_warnings.RunWarning` (unit,
        kind, message, fix); plain-text warnings of older runs come back as kind ``note``."""
        from negbench.evaluation.run_warnings import RunWarning

        return [RunWarning.of(w) for w in self.data.get("warnings") or []]

    @property
    def engine(self) -> dict:
        """Requests, unique, cached, computed, model calls, tokens forwarded …"""
        return self.data["engine"]

    def samples(self, unit: str) -> list[dict]:
        """The per-sample records of one unit: prompt, choices, answers, scores."""
        if unit not in self.data["units"]:
            raise KeyError(f"no unit {unit!r}; units: {', '.join(self.data['units'])}")
        if unit not in self._samples:
            if self.output is None:
                raise KeyError(f"the samples of {unit!r} were not kept")
            from negbench.evaluation.store import read_jsonl

            self._samples[unit] = read_jsonl(self.output / "samples" / f"{unit}.jsonl")
        return self._samples[unit]

    def iter_samples(self) -> Iterator[tuple[str, dict]]:
        for unit in self.data["units"]:
            for rec in self.samples(unit):
                yield unit, rec

    def paper_tables(self) -> list:
        """The report's paper-shaped tables of this run (:mod:`negbench.report.paper_tables`),
        as :class:`negbench.report.tables.Table` objects (``.to_markdown()``)."""
        from negbench.report.load import Run, UnitResult as RunUnit
        from negbench.report.paper_tables import Context, build_tables

        units = {
            n: RunUnit(n, u.task, u.mode, u.shots, u.seed, u.group, dict(u.metrics))
            for n, u in self.units.items()
        }
        run = Run(self.output or Path("."), self.to_dict(), str(self.model.get("spec")), units)
        for n in units:
            run._samples[n] = self.samples(n)
        return build_tables(Context([run]))

    # -- export ----------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """``results.json``'s content (read back from the run folder when there is one)."""
        if self.output is not None and (self.output / "results.json").is_file():
            return json.loads((self.output / "results.json").read_text(encoding="utf-8"))
        return json.loads(json.dumps(self.data, ensure_ascii=False))

    def to_pandas(self):
        """One row per unit and numeric metric: unit, task, mode, shots, seed, metric, value
        (needs pandas)."""
        try:
            import pandas as pd
        except ImportError:
            from negbench.errors import NegbenchError

            raise NegbenchError(
                "Results.to_pandas() needs pandas, which is not installed",
                fix="pip install pandas (or use to_dict())",
            ) from None
        rows = [
            {
                "unit": u.name,
                "task": u.task,
                "mode": u.mode,
                "shots": u.shots,
                "seed": u.seed,
                "metric": m,
                "value": v,
            }
            for u in self.units.values()
            for m, v in u.metrics.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        ]
        return pd.DataFrame(
            rows, columns=["unit", "task", "mode", "shots", "seed", "metric", "value"]
        )

    def summary(self, units: bool = False, all_metrics: bool = False) -> str:
        """What ``negbench run`` prints: per group one line — the benchmark's headline metric,
        its 95 % interval, n of the full set (``*``: a subset, its rule below) — then the
        warnings.  ``all_metrics``: every metric of every unit as well (``negbench show
        --all``)."""
        return format_results(self.data, units=units, all_metrics=all_metrics)

    def __repr__(self) -> str:
        where = f", output={str(self.output)!r}" if self.output else ""
        return f"Results(model={self.model.get('spec')!r}, units={len(self.data['units'])}{where})"


# -- text ------------------------------------------------------------------------------------------
def run_tables(results: dict) -> dict[str, str]:
    """The task tables saved with a run, then the run-level report sections."""
    from negbench.report.sections import run_sections

    tables = dict(results.get("tables") or {})
    tables.update(run_sections(results))
    return tables


def tables_text(results: dict) -> str:
    """The run's breakdowns (n and 95 % interval per cell), then its task tables."""
    text = breakdowns_text(results)
    return ("\n" + text + "\n" if text else "") + "".join(
        f"\n{name}\n{table}\n" for name, table in run_tables(results).items()
    )


# -- breakdowns ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BreakdownCell:
    """One cell of a breakdown: a value of the grouping field, its items, the metric on them and
    its 95 % interval (None: not a 0/1 metric, or a run that saved none)."""

    group: str
    n: int
    value: float | None
    ci: tuple[float, float] | None


@dataclass(frozen=True)
class Breakdown:
    """A metric per value of a field in one unit (a YAML task's ``group_by``: ``acc_by_negated``;
    KoNUBench's ``by_local_type`` …)."""

    unit: str
    name: str  # the metric's key in the unit's metrics
    metric: str  # the metric in each cell
    field: str  # what the cells are values of
    cells: tuple[BreakdownCell, ...]


def _breakdown(unit: str, name: str, v: Any) -> Breakdown | None:
    """``v`` read as a breakdown: a non-empty dict of cells each holding an integer ``n`` and a
    numeric metric; None otherwise."""
    if not isinstance(v, dict) or not v:
        return None
    metric = None
    cells = []
    for g, c in v.items():
        if not isinstance(c, dict) or not isinstance(c.get("n"), int):
            return None
        keys = [
            k
            for k, x in c.items()
            if k != "n" and not k.endswith(("_ci95", "_stderr")) and _value(x) is not None
        ]
        if not keys and metric is None:
            return None
        metric = metric or keys[0]
        raw = c.get(f"{metric}_ci95")
        ci: tuple[float, float] | None = None
        if isinstance(raw, (list, tuple)) and len(raw) == 2:
            lo, hi = _value(raw[0]), _value(raw[1])
            ci = (lo, hi) if lo is not None and hi is not None else None
        cells.append(BreakdownCell(str(g), int(c["n"]), _value(c.get(metric)), ci))
    assert metric is not None
    field = name.split("_by_", 1)[1] if "_by_" in name else name.removeprefix("by_")
    return Breakdown(unit, name, metric, field, tuple(cells))


def breakdowns(results: dict) -> list[Breakdown]:
    """Every breakdown of every unit of a run, in unit order."""
    out = []
    for uname, u in (results.get("units") or {}).items():
        for name, v in (u.get("metrics") or {}).items():
            b = _breakdown(uname, name, v)
            if b is not None:
                out.append(b)
    return out


def breakdowns_text(results: dict) -> str:
    """The breakdowns as plain-text tables: per cell n, the value and its 95 % interval."""
    bs = breakdowns(results)
    if not bs:
        return ""
    out = [
        "Breakdowns (per cell: n items, the metric, its 95 % Wilson interval over the cell's "
        "items; – where the metric is not a 0/1 score)"
    ]
    for b in bs:
        rows = [(b.field, "n", b.metric, "95% CI")] + [
            (c.group, str(c.n), "–" if c.value is None else f"{c.value:.4f}", _ci(c.ci))
            for c in b.cells
        ]
        out.append(
            f"{b.unit} · {b.name}\n" + "\n".join("  " + x for x in _table(rows).splitlines())
        )
    return "\n\n".join(out)


def _fmt(v) -> str:
    if isinstance(v, float):
        return "–" if math.isnan(v) else f"{v:.4f}"
    return str(v)


def _value(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return None if math.isnan(float(v)) else float(v)


def _ci(ci) -> str:
    if not ci or any(_value(x) is None for x in ci):
        return "–"
    return f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _n_of(subset: dict | None, n: int) -> str:
    """``12 of 1,200 *`` (``*``: a subset; the rule is printed below the table)."""
    if not subset:
        return f"{n:,}"
    full = int(subset.get("full") or n)
    return f"{int(subset.get('n', n)):,} of {full:,}" + (" *" if subset.get("subset") else "")


def _group_headline(res: dict, g: dict) -> dict:
    """A group's headline (runs saved before headlines were recorded: the first metric)."""
    if g.get("headline"):
        return g["headline"]
    first = res["units"][g["units"][0]]["metrics"]
    metric = next(
        (m for m in ("exact_match", "acc", "accuracy") if m in g["metrics"]),
        next(iter(g["metrics"]), ""),
    )
    agg = g["metrics"].get(metric) or {}
    return {
        "metric": metric,
        "mean": agg.get("mean"),
        "sd": agg.get("sd") if len(g["units"]) > 1 else None,
        "ci95": None,
        "n": first.get("n", 0),
        "seeds": len(g["units"]),
    }


def format_results(
    res: dict, units: bool = False, all_metrics: bool = False, with_warnings: bool = True
) -> str:
    """A plain-text table: one row per task/mode/shots group — the headline metric (the mean
    over seeds, ± their SD when several), its 95 % interval and n of the full set — the rules of
    the subsets, and the warnings.  ``units``: one row per unit (seed) as well; ``all_metrics``:
    every metric of every unit (undefined ones named on one line)."""
    rows = [("task", "mode", "shots", "seeds", "n", "metric", "value", "95% CI")]
    rules: dict[str, str] = {}
    for name, g in res["groups"].items():
        h = _group_headline(res, g)
        first = res["units"][g["units"][0]]
        subset = g.get("subset") or first.get("subset")
        mean = _value(h.get("mean"))
        val = "undefined" if mean is None else f"{mean:.4f}"
        if mean is not None and h.get("sd") is not None and len(g["units"]) > 1:
            val += f" ± {h['sd']:.4f} (SD)"
        rows.append(
            (
                g["task"],
                g["mode"],
                str(g["shots"]),
                str(len(g["units"])),
                _n_of(subset, int(first["metrics"].get("n", 0))),
                str(h.get("metric", "")),
                val,
                _ci(h.get("ci95")),
            )
        )
        if subset and subset.get("subset"):
            rules.setdefault(g["task"], subset.get("rule", ""))
    if units:
        for name, u in res["units"].items():
            h = u.get("headline") or {}
            v = _value(h.get("value"))
            rows.append(
                (
                    name,
                    "",
                    "",
                    "",
                    _n_of(u.get("subset"), int(u["metrics"].get("n", 0))),
                    str(h.get("metric", "")),
                    "undefined" if v is None else f"{v:.4f}",
                    _ci(h.get("ci95")),
                )
            )
    text = _table(rows)
    if rules:
        text += "\n" + "\n".join(f"* {t}: {r}" for t, r in rules.items())
    if all_metrics:
        text += "\n\n" + all_metrics_text(res)
    w = warnings_text(res) if with_warnings else ""
    if w:
        text += "\n\n" + w
    return text


def _table(rows: list[tuple]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def all_metrics_text(res: dict) -> str:
    """Every numeric metric of every unit, with its interval where there is one."""
    out = []
    for name, u in res["units"].items():
        m = u["metrics"]
        rows = [("metric", "value", "95% CI")]
        undefined = []
        for k, v in m.items():
            if k.endswith(("_ci95", "_stderr")) or isinstance(v, bool):
                continue
            if isinstance(v, (int, float)):
                if _value(v) is None:
                    undefined.append(k)
                    continue
                rows.append(
                    (
                        k,
                        _fmt(v) if isinstance(v, float) else str(v),
                        _ci(m.get(f"{k}_ci95")) if f"{k}_ci95" in m else "",
                    )
                )
        out.append(
            f"{name}\n"
            + _table(rows)
            + (f"\nundefined on these records: {', '.join(undefined)}" if undefined else "")
        )
    return "\n\n".join(out)


def warnings_text(res: dict) -> str:
    """The run's warnings, one per line, under a header that says how many there are."""
    from negbench.evaluation.run_warnings import RunWarning

    ws = [RunWarning.of(w) for w in res.get("warnings") or []]
    if not ws:
        return ""
    return f'WARNINGS ({len(ws)}; also in results.json["warnings"]):\n' + "\n".join(
        f"  ! [{w.kind}] {w.text()}" for w in ws
    )


def run_report(results: "Results") -> str:
    """What ``negbench run`` prints when a run has finished: the results table, the run's
    tables, what the engine did, and where the run folder is."""
    from negbench.backends.spec import is_api_spec

    data = results.data
    text = format_results(data, with_warnings=False) + "\n" + tables_text(data)
    text += "\n" + engine_line(data, is_api_spec(str(data["model"]["spec"])))
    w = warnings_text(data)
    if w:
        text += "\n\n" + w
    if results.output is not None:
        text += (
            f"\nresults: {results.output / 'results.json'}\nsamples: {results.output / 'samples'}/"
        )
    return text


def engine_line(results: dict, api: bool) -> str:
    """What the engine did: requests from the cache, computed, calls (and API usage)."""
    st = results["engine"]
    if api:
        usage = (results["model"].get("details") or {}).get("api_usage") or {}
        cost = f", ${usage['cost_usd']:.4f}" if "cost_usd" in usage else ""
        return (
            f"{st['unique']} unique requests: {st['cached']} from cache, {st['computed']} "
            f"answered in {st['model_calls']} HTTP calls ({st.get('retries', 0)} retries); "
            f"{usage.get('prompt_tokens', 0)} prompt + {usage.get('completion_tokens', 0)} "
            f"completion tokens{cost}; {results['wall_s']:.1f}s"
        )
    return (
        f"{st['unique']} unique requests: {st['cached']} from cache, {st['computed']} computed "
        f"in {st['model_calls']} model calls; {st['forwarded_tokens']} tokens forwarded "
        f"(naive: {st['naive_tokens']}); {results['wall_s']:.1f}s"
    )
