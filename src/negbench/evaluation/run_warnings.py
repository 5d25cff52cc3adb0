"""Signs that a run measured something other than the model's grasp of negation, said out loud:
on the console, in ``results.json["warnings"]`` and as a banner in reports.

Each warning names the unit, what was seen and what to do (:class:`RunWarning`).  Kinds:

* ``empty_generations`` — more than half of a generation unit's outputs are empty;
* ``unparseable`` — more than :data:`UNPARSEABLE_RATE` of the outputs hold no answer the task can
  read (JNLI-Neg with no label word, a letter task with no letter …);
* ``constant_prediction`` — one answer for at least :data:`CONSTANT_SHARE` of the items while the
  gold answers are mixed (the score then measures the label balance);
* ``strict_vs_lenient`` — the paper's strict score and a lenient reading of the same outputs lie
  :data:`STRICT_LENIENT_GAP` or more apart (the model answers in another form);
* ``undefined_metric`` — metrics that the evaluated records cannot define (no complete CONDAQA
  group, no whole This-is-not-a-Dataset block, no minimal pair …);
* ``subset_incomplete`` — a subset that left out whole strata (a ScoNe condition, a pattern);
* ``interval_withheld`` — the headline's 95 % interval is not shown: it rests on too few of the
  benchmark's units for any method to reach its coverage (docs/statistics.md); the warning says
  how many units it needs;
* ``note`` — a warning saved as plain text by an older negbench.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Iterable

from negbench.scoring.subsets import plural

#: Share of unreadable outputs above which a unit is flagged.
UNPARSEABLE_RATE = 0.2
#: Share of the most frequent prediction from which a unit is flagged as constant …
CONSTANT_SHARE = 0.95
#: … when the gold answers give that answer to at most this share of the items …
GOLD_SHARE_MAX = 0.8
#: … and the unit has at least this many answered items.
CONSTANT_MIN_N = 10
#: Gap between a strict and a lenient score from which a unit is flagged.
STRICT_LENIENT_GAP = 0.2
#: Metric names (endings) of correlations: undefined when the predictions do not vary.
CORRELATIONS = ("pearson", "spearman")
#: Share of empty generations above which a unit is flagged.
EMPTY_SHARE = 0.5

KINDS = (
    "empty_generations",
    "unparseable",
    "constant_prediction",
    "strict_vs_lenient",
    "undefined_metric",
    "subset_incomplete",
    "interval_withheld",
    "note",
)


@dataclass(frozen=True)
class RunWarning:
    """One warning: the unit it is about (None: the whole run), its kind, what was seen, what to
    do."""

    unit: str | None
    kind: str
    message: str
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def of(cls, x: "RunWarning | dict | str") -> "RunWarning":
        """A warning as results.json holds it; plain strings (older runs) become notes."""
        if isinstance(x, RunWarning):
            return x
        if isinstance(x, dict):
            return cls(
                x.get("unit"),
                str(x.get("kind") or "note"),
                str(x.get("message") or ""),
                str(x.get("fix") or ""),
            )
        return cls(None, "note", str(x), "")

    def text(self) -> str:
        """One line for the console: ``unit: message — fix``."""
        head = f"{self.unit}: " if self.unit else ""
        return head + self.message + (f" — {self.fix}" if self.fix else "")


def _pct(x: float) -> str:
    """``37 %``; near 0 or 100 % with the decimals that tell it apart from them (``99.98 %``)."""
    v = 100 * x
    if x in (0, 1) or 1 <= v <= 99:
        return f"{v:.0f} %"
    return f"{v:.2f} %"


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return None if math.isnan(float(v)) else float(v)


def prediction(r: dict) -> tuple[Any, Any, bool]:
    """(prediction, gold, has an answer) of one sample, comparable with each other."""
    if "pred_bool" in r:
        return bool(r["pred_bool"]), bool(r.get("label")), True
    if "output" in r:
        ans = r.get("answer")
        gold = r.get("gold_answer", r.get("gold"))
        norm = lambda s: str(s).strip().lower()
        return (
            (norm(ans) if ans is not None else None),
            (norm(gold) if gold is not None else None),
            ans is not None,
        )
    pred = r.get("pred")
    return pred, r.get("gold_index", r.get("gold")), pred is not None


def shown_answer(value: Any, choices: list | None) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int) and choices and 0 <= value < len(choices):
        return repr(str(choices[value]).strip())
    return repr(value)


def unit_warnings(
    unit: str,
    task,
    mode: str,
    records: Iterable[dict],
    metrics: dict,
    subset: dict | None = None,
    headline: str | None = None,
) -> list[RunWarning]:
    """The warnings of one unit, from one pass over its records and its metrics (``subset``:
    the unit's ``subset`` record; ``headline``: its headline metric)."""
    n = n_out = n_empty = n_fmt = n_fmt_bad = 0
    how: set[str] = set()
    preds: Counter = Counter()
    golds: Counter = Counter()
    choices = None
    for r in records:
        n += 1
        if "output" in r:
            n_out += 1
            if not str(r["output"]).strip():
                n_empty += 1
                how.add(str(r.get("stopped_by")))
        if "format_ok" in r:
            n_fmt += 1
            n_fmt_bad += not r["format_ok"]
        p, g, ok = prediction(r)
        if ok:
            preds[p] += 1
            golds[g] += 1
            if choices is None and r.get("choices"):
                choices = r["choices"]
    out: list[RunWarning] = []
    if n_out and n_empty / n_out > EMPTY_SHARE:
        out.append(
            RunWarning(
                unit,
                "empty_generations",
                f"{n_empty} of {n_out} generations are empty (stopped by {', '.join(sorted(how))} at "
                "once): the model ends its answer before writing one",
                "try --chat for an instruction-tuned model, more shots, or a log-likelihood mode "
                "(cloze / letter)",
            )
        )
    rate = _num(metrics.get("unparseable_rate"))
    if rate is None and n_fmt:
        rate = n_fmt_bad / n_fmt
    if (
        rate is not None
        and rate > UNPARSEABLE_RATE
        and not (n_out and n_empty / n_out > EMPTY_SHARE and rate <= n_empty / n_out)
    ):
        bad = round(rate * (n_fmt or n))
        out.append(
            RunWarning(
                unit,
                "unparseable",
                f"{_pct(rate)} of the outputs ({bad} of {n_fmt or n}) hold no answer the task can read "
                f"(scored wrong): the score measures the output format, not negation",
                "look at the outputs (negbench show --all, samples/); try --chat for an "
                "instruction-tuned model, few-shot examples (--shots), or a log-likelihood mode"
                + (
                    f" ({', '.join(m for m, s in task.modes.items() if s.formulation.kind != 'generate')})"
                    if any(s.formulation.kind != "generate" for s in task.modes.values())
                    else ""
                ),
            )
        )
    answered = sum(preds.values())
    if answered >= CONSTANT_MIN_N:
        top, cnt = preds.most_common(1)[0]
        share = cnt / answered
        gold_share = golds.get(top, 0) / answered
        if share >= CONSTANT_SHARE and gold_share <= GOLD_SHARE_MAX:
            out.append(
                RunWarning(
                    unit,
                    "constant_prediction",
                    f"the model answers {shown_answer(top, choices)} for {_pct(share)} of the {answered} items "
                    f"(the gold answer is {shown_answer(top, choices)} for {_pct(gold_share)}): the score "
                    "reflects the label balance, not the items",
                    "check the prompt and the answer tokens (negbench show --all); try --chat or "
                    "few-shot examples (--shots), or another scoring mode",
                )
            )
    for strict, lenient in getattr(task, "lenient_metrics", ()):
        a, b = _num(metrics.get(strict)), _num(metrics.get(lenient))
        if a is not None and b is not None and abs(b - a) >= STRICT_LENIENT_GAP:
            out.append(
                RunWarning(
                    unit,
                    "strict_vs_lenient",
                    f"{strict} (the paper's strict reading) is {a:.2f} but {lenient} is {b:.2f}: the "
                    "model's answers are right in another form than the one scored",
                    f"report {strict} as the paper's number and say why; to measure the model rather "
                    "than its answer format try --chat, few-shot examples (--shots) or a "
                    "log-likelihood mode",
                )
            )
    undefined = [
        m
        for m, v in metrics.items()
        if isinstance(v, float) and math.isnan(v) and not m.endswith(("_stderr", "_ci95"))
    ]
    if undefined:
        st = task.structure
        sub = subset or {}
        shown = ", ".join(undefined[:8]) + (
            f" and {len(undefined) - 8} more" if len(undefined) > 8 else ""
        )
        if len(preds) == 1 and all(m.endswith(CORRELATIONS) for m in undefined):
            out.append(
                RunWarning(
                    unit,
                    "undefined_metric",
                    f"{shown} undefined: every prediction is {shown_answer(next(iter(preds)), choices)}, "
                    "and a correlation needs predictions that vary (shown as null / –)",
                    "see the constant_prediction warning: try --chat or few-shot examples (--shots)",
                )
            )
            undefined = []
    if undefined:
        if sub.get("subset"):
            fix = (
                "evaluate more records (--limit / --sample"
                + (f" keep whole {st.units_name}" if st.unit else "")
                + ") or the whole set"
            )
        else:
            fix = "these metrics need records the task does not select; the others are valid"
        out.append(
            RunWarning(
                unit,
                "undefined_metric",
                f"{shown} undefined: the {n} records evaluated hold none of what "
                + ("it is" if len(undefined) == 1 else "they are")
                + " computed over (shown as null / –)"
                + (f"; this includes the headline {headline}" if headline in undefined else ""),
                fix,
            )
        )
    missing = (subset or {}).get("missing_strata") or []
    if missing:
        st = task.structure
        out.append(
            RunWarning(
                task.name,
                "subset_incomplete",
                f"the subset holds no {st.unit_name} of {len(missing)} "
                f"{plural(st.stratum_name or st.stratum or '') if len(missing) > 1 else st.stratum_name}: "
                f"{', '.join(map(str, missing[:6]))}" + (" …" if len(missing) > 6 else ""),
                f"ask for more records (--limit / --sample) so that every "
                f"{st.stratum_name or st.stratum} gets one",
            )
        )
    return out


def interval_warning(unit: str | None, note: dict[str, Any]) -> RunWarning:
    """The ``interval_withheld`` warning of a headline whose interval is withheld (``note``:
    :func:`negbench.scoring.headline.withheld_note`)."""
    need = note.get("units_needed")
    fix = (
        f"evaluate at least {need} units (e.g. a larger --limit / --sample, or the full set) "
        "for a 95 % interval"
        if need
        else "read the value as a point estimate"
    )
    return RunWarning(unit, "interval_withheld", f"{note.get('metric')}: {note.get('reason')}", fix)


def merged(warnings: Iterable[RunWarning]) -> list[RunWarning]:
    """One warning per (kind, message, fix): the same finding on several units (seeds, modes of
    one task) is said once, naming them all; order of first appearance."""
    by: dict[tuple[str, str, str], list[str | None]] = {}
    for w in warnings:
        by.setdefault((w.kind, w.message, w.fix), []).append(w.unit)
    out = []
    for (kind, message, fix), units in by.items():
        names = [u for u in dict.fromkeys(units) if u]
        unit = (
            None
            if not names
            else names[0]
            if len(names) == 1
            else ", ".join(names)
            if len(names) <= 3
            else f"{names[0]} and {len(names) - 1} more units"
        )
        out.append(RunWarning(unit, kind, message, fix))
    return out
