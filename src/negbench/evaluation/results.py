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

    def __init__(self, data: dict, output: str | Path | None = None,
                 samples: dict[str, list[dict]] | None = None):
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
        return {name: UnitResult(name, u["task"], u["mode"], u["shots"], u["seed"], u["group"],
                                 bool(u.get("chat")), u["metrics"])
                for name, u in self.data["units"].items()}

    @property
    def groups(self) -> dict[str, GroupResult]:
        return {name: GroupResult(name, g["task"], g["mode"], g["shots"], tuple(g["units"]),
                                  g["metrics"])
                for name, g in self.data["groups"].items()}

    @property
    def model(self) -> dict:
        return self.data["model"]

    @property
    def tables(self) -> dict[str, str]:
        """The Markdown tables saved with the run (``tables.md``) and the run-level sections."""
        return run_tables(self.data)

    @property
    def warnings(self) -> list[str]:
        return list(self.data.get("warnings") or [])

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
        units = {n: RunUnit(n, u.task, u.mode, u.shots, u.seed, u.group, dict(u.metrics))
                 for n, u in self.units.items()}
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
            raise NegbenchError("Results.to_pandas() needs pandas, which is not installed",
                                fix="pip install pandas (or use to_dict())") from None
        rows = [{"unit": u.name, "task": u.task, "mode": u.mode, "shots": u.shots,
                 "seed": u.seed, "metric": m, "value": v}
                for u in self.units.values() for m, v in u.metrics.items()
                if isinstance(v, (int, float)) and not isinstance(v, bool)]
        return pd.DataFrame(rows, columns=["unit", "task", "mode", "shots", "seed", "metric",
                                           "value"])

    def summary(self, units: bool = False) -> str:
        """The plain-text table ``negbench run`` prints (mean ± SD over seeds per group)."""
        return format_results(self.data, units=units)

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
    return "".join(f"\n{name}\n{table}\n" for name, table in run_tables(results).items())


def _fmt(v) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4f}"
    return str(v)


def format_results(res: dict, units: bool = False) -> str:
    """A plain-text table: one row per task/mode/shots group, mean ± SD over seeds."""
    rows = [("task", "mode", "shots", "seeds", "n", "metric", "value")]
    for g in res["groups"].values():
        first = res["units"][g["units"][0]]["metrics"]
        seeds = len(g["units"])
        for metric, agg in g["metrics"].items():
            if metric.startswith("n_") or metric == "n":
                continue
            val = _fmt(agg["mean"]) + (f" ± {agg['sd']:.4f}" if seeds > 1 else
                                        (f" ± {first.get(metric + '_stderr', float('nan')):.4f} (se)"
                                         if metric + "_stderr" in first else ""))
            rows.append((g["task"], g["mode"], str(g["shots"]), str(seeds), str(first["n"]), metric, val))
    if units:
        for name, u in res["units"].items():
            for metric, v in u["metrics"].items():
                if isinstance(v, (int, float)) and not metric.endswith("_stderr"):
                    rows.append((name, "", "", "", str(u["metrics"]["n"]), metric, _fmt(v)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def run_report(results: "Results") -> str:
    """What ``negbench run`` prints when a run has finished: the results table, the run's
    tables, what the engine did, and where the run folder is."""
    from negbench.backends.spec import is_api_spec
    data = results.data
    text = format_results(data) + "\n" + tables_text(data)
    text += "\n" + engine_line(data, is_api_spec(str(data["model"]["spec"])))
    if results.output is not None:
        text += (f"\nresults: {results.output / 'results.json'}\nsamples: "
                 f"{results.output / 'samples'}/")
    return text


def engine_line(results: dict, api: bool) -> str:
    """What the engine did: requests from the cache, computed, calls (and API usage)."""
    st = results["engine"]
    if api:
        usage = (results["model"].get("details") or {}).get("api_usage") or {}
        cost = f", ${usage['cost_usd']:.4f}" if "cost_usd" in usage else ""
        return (f"{st['unique']} unique requests: {st['cached']} from cache, {st['computed']} "
                f"answered in {st['model_calls']} HTTP calls ({st.get('retries', 0)} retries); "
                f"{usage.get('prompt_tokens', 0)} prompt + {usage.get('completion_tokens', 0)} "
                f"completion tokens{cost}; {results['wall_s']:.1f}s")
    return (f"{st['unique']} unique requests: {st['cached']} from cache, {st['computed']} computed "
            f"in {st['model_calls']} model calls; {st['forwarded_tokens']} tokens forwarded "
            f"(naive: {st['naive_tokens']}); {results['wall_s']:.1f}s")
