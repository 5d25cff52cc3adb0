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
from pathlib import Path
from typing import Iterator

from negbench.scoring.runs import GroupResult, Run, UnitResult, breakdowns, groups_of, units_of


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
        return units_of(self.data)

    @property
    def groups(self) -> dict[str, GroupResult]:
        return groups_of(self.data)

    def run(self) -> Run:
        """This evaluation as the saved-run model that reports, comparisons and the profile read
        (:class:`negbench.scoring.runs.Run`), its samples from memory or the run folder."""
        run = Run(self.output or Path("."), self.data, str(self.model.get("spec")), self.units)
        for n in run.units:
            run._samples[n] = self.samples(n)
        return run

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
            from negbench.files import read_jsonl

            self._samples[unit] = read_jsonl(self.output / "samples" / f"{unit}.jsonl")
        return self._samples[unit]

    def iter_samples(self) -> Iterator[tuple[str, dict]]:
        for unit in self.data["units"]:
            for rec in self.samples(unit):
                yield unit, rec

    def paper_tables(self) -> list:
        """The report's paper-shaped tables of this run (:mod:`negbench.scoring.paper_tables`),
        as :class:`negbench.scoring.tables.Table` objects (``.to_markdown()``)."""
        from negbench.scoring.paper_tables import Context, build_tables

        return build_tables(Context([self.run()]))

    # -- export ----------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """``results.json``'s content (read back from the run folder when there is one)."""
        if self.output is not None and (self.output / "results.json").is_file():
            return json.loads((self.output / "results.json").read_text(encoding="utf-8"))
        return json.loads(json.dumps(self.data, ensure_ascii=False))

    def to_pandas(self):
        """One row per unit and numeric metric: unit, task, mode, shots, seed, metric, value,
        its 95 % interval (ci_low, ci_high; empty where the metric has none), its standard
        error where saved, and n, the records the unit scored (needs pandas).  The intervals
        and standard errors are columns, not rows of their own."""
        try:
            import pandas as pd
        except ImportError:
            from negbench.errors import NegbenchError

            raise NegbenchError(
                "Results.to_pandas() needs pandas, which is not installed",
                fix="pip install pandas (or use to_dict())",
            ) from None
        rows = []
        for name, u in self.units.items():
            ms = u.metrics
            head = self.data["units"][name].get("headline") or {}
            n = ms.get("n") if isinstance(ms.get("n"), int) else head.get("n")
            for m, v in ms.items():
                if m == "n" or m.endswith(("_ci95", "_stderr")):
                    continue
                if not isinstance(v, (int, float)) or isinstance(v, bool):
                    continue
                ci = ms.get(f"{m}_ci95")
                ok = isinstance(ci, (list, tuple)) and len(ci) == 2
                se = ms.get(f"{m}_stderr")
                rows.append(
                    {
                        "unit": u.name,
                        "task": u.task,
                        "mode": u.mode,
                        "shots": u.shots,
                        "seed": u.seed,
                        "metric": m,
                        "value": v,
                        "ci_low": ci[0] if ok else None,
                        "ci_high": ci[1] if ok else None,
                        "stderr": se if isinstance(se, (int, float)) else None,
                        "n": n,
                    }
                )
        return pd.DataFrame(rows, columns=list(PANDAS_COLUMNS))

    def summary(self, units: bool = False, all_metrics: bool = False) -> str:
        """What ``negbench run`` prints: per group one line — the benchmark's headline metric,
        its 95 % interval, n of the full set (``*``: a subset, its rule below) — then the
        warnings.  ``all_metrics``: every metric of every unit as well (``negbench show
        --all``)."""
        return format_results(self.data, units=units, all_metrics=all_metrics)

    def __repr__(self) -> str:
        where = f", output={str(self.output)!r}" if self.output else ""
        return f"Results(model={self.model.get('spec')!r}, units={len(self.data['units'])}{where})"


#: The columns of :meth:`Results.to_pandas`.
PANDAS_COLUMNS = (
    "unit",
    "task",
    "mode",
    "shots",
    "seed",
    "metric",
    "value",
    "ci_low",
    "ci_high",
    "stderr",
    "n",
)


# -- text ------------------------------------------------------------------------------------------
def run_tables(results: dict) -> dict[str, str]:
    """The task tables saved with a run, then the run-level report sections."""
    from negbench.scoring.sections import run_sections

    tables = dict(results.get("tables") or {})
    tables.update(run_sections(results))
    return tables


def tables_text(results: dict) -> str:
    """The run's breakdowns (n and 95 % interval per cell), then its task tables."""
    text = breakdowns_text(results)
    return ("\n" + text + "\n" if text else "") + "".join(
        f"\n{name}\n{table}\n" for name, table in run_tables(results).items()
    )


def breakdowns_text(results: dict) -> str:
    """The breakdowns as plain-text tables: per cell n, the value and its 95 % interval."""
    bs = breakdowns(results)
    if not bs:
        return ""
    out = [
        "Breakdowns (per cell: n items, the metric, its 95 % Wilson interval over the cell's "
        "items, from 30 items; – where the metric is not a 0/1 score or the cell has fewer)"
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
