"""Error analysis for "pick the standard negation" benchmarks (NUBench §5.3 / App. R, KoNUBench
Table 8 / App. I): which wrong option a model prefers, and which local-negation subtypes fool it.

Pure functions of per-sample records.  A record needs ``gold_index``, ``choices``, ``meta`` with
``option_types`` (the type of the option at each choice position: ``standard``, ``local``,
``contradiction``, ``paraphrase``) and optionally a subtype key (NUBench ``choice2_type``), and
either a predicted index (``pred`` / ``pred_norm``) or a generated ``answer`` (a choice label, or
None when the output had the wrong format).
"""

from __future__ import annotations

from typing import Any, Iterable

WRONG_TYPES = ("local", "contradiction", "paraphrase")
TYPE_LABELS = {
    "local": "local negation",
    "contradiction": "contradiction",
    "paraphrase": "paraphrase",
}


def predicted_index(rec: dict, pred_field: str = "pred") -> int | None:
    """The chosen option's position, or None when a generation could not be read as an option."""
    if pred_field in rec and rec[pred_field] is not None:
        return int(rec[pred_field])
    if "answer" in rec:
        ans = rec["answer"]
        if ans is None:
            return None
        choices = rec.get("choices") or []
        for i, c in enumerate(choices):
            if str(c).strip().upper() == str(ans).strip().upper():
                return i
        return None
    return None


def error_analysis(
    records: Iterable[dict],
    pred_field: str = "pred",
    subtype_key: str | None = None,
    no_local_subtype: str = "non-applicable",
) -> dict:
    """Error rate, incorrect-choice distribution and (optionally) local-negation confusion rates.

    * ``error_rate`` = wrong / all (wrong-format generations count as wrong);
    * ``incorrect_choice``: share of wrong *readable* answers per wrong option type, in percent;
      wrong-format outputs are counted apart in ``n_format_wrong`` and kept out of the shares;
    * ``local_confusion`` (when ``subtype_key`` is given): per subtype, the items of that subtype
      where the local-negation option was picked, over the items of that subtype, in percent.
      Items without a local-negation option (``no_local_subtype``) have no rate.
    """
    records = list(records)
    n = len(records)
    wrong = fmt_wrong = 0
    picked: dict[str, int] = {t: 0 for t in WRONG_TYPES}
    sub_items: dict[str, int] = {}
    sub_local: dict[str, int] = {}
    for r in records:
        types = r["meta"]["option_types"]
        pred = predicted_index(r, pred_field)
        sub = str(r["meta"].get(subtype_key)) if subtype_key else None
        if sub is not None and sub != no_local_subtype:
            sub_items[sub] = sub_items.get(sub, 0) + 1
            sub_local.setdefault(sub, 0)
        if pred is None:
            wrong += 1
            fmt_wrong += 1
            continue
        if pred == r["gold_index"]:
            continue
        wrong += 1
        t = types[pred]
        picked[t] = picked.get(t, 0) + 1
        if t == "local" and sub is not None:
            sub_local[sub] = sub_local.get(sub, 0) + 1
    readable_wrong = wrong - fmt_wrong
    out: dict = {
        "n": n,
        "n_wrong": wrong,
        "n_format_wrong": fmt_wrong,
        "error_rate": wrong / n if n else float("nan"),
        "incorrect_choice": {
            t: {
                "n": picked.get(t, 0),
                "pct": 100.0 * picked.get(t, 0) / readable_wrong
                if readable_wrong
                else float("nan"),
            }
            for t in WRONG_TYPES
        },
    }
    if subtype_key:
        out["local_confusion"] = {
            s: {
                "n_items": sub_items[s],
                "n_picked_local": sub_local[s],
                "pct": 100.0 * sub_local[s] / sub_items[s],
            }
            for s in sorted(sub_items)
        }
    return out


#: What the n and the interval of an error-table cell are (printed under every error table).
ERROR_TABLE_NOTE = (
    "Each rate: value [95 % Wilson interval] (n, its denominator: the items for the error rate "
    "and a clause type's confusion, the wrong answers that name an option for the shares); "
    "'no CI' under {min_items} items, where no interval reached 93 % coverage "
    "(docs/statistics.md)."
)
#: Added to the note when a row is a mean over seeds (NUBench's seed means).
SEED_MEAN_NOTE = " Rows that are a mean over seeds have no n and no interval."


def error_cells(a: dict, subtypes: list[str] | None = None) -> dict[str, str]:
    """The cells of one row of an error table as text, keyed ``error_rate``, ``format_wrong``,
    the wrong types and the subtypes: the paper's value (unchanged), its 95 % Wilson interval
    and n (:func:`negbench.scoring.intervals.rate_text`).  A seed mean (no counts) gets the
    value alone."""
    from negbench.scoring.intervals import rate_text, share_interval

    counted = isinstance(a.get("n"), int)

    def rate(v: float, k: Any, n: Any, digits: int, scale: float) -> str:
        if not counted or not isinstance(n, int):
            return "–" if v != v else f"{v:.{digits}f}"
        return rate_text(v, digits, share_interval(k, n), n, scale)

    out = {
        "error_rate": rate(a["error_rate"], a.get("n_wrong"), a.get("n"), 3, 1.0),
        "format_wrong": str(a["n_format_wrong"]),
    }
    readable = a["n_wrong"] - a["n_format_wrong"] if counted else None
    for t in WRONG_TYPES:
        c = a["incorrect_choice"][t]
        out[t] = rate(c["pct"], c.get("n"), readable, 2, 100.0)
    conf = a.get("local_confusion", {})
    for s in subtypes or []:
        if s not in conf:
            out[f"confusion.{s}"] = "–"
            continue
        c = conf[s]
        out[f"confusion.{s}"] = rate(c["pct"], c.get("n_picked_local"), c.get("n_items"), 2, 100.0)
    return out


def format_error_table(
    rows: list[tuple[str, dict]], subtypes: list[str] | None = None, note: bool = True
) -> str:
    """A Markdown table shaped like NUBench Table 6 (with subtypes) or KoNUBench Table 8: the
    paper's columns in the paper's order, each rate with its 95 % Wilson interval and n
    (:func:`error_cells`), and (``note``) a note saying what they are — once under tables that
    are printed together."""
    from negbench.scoring.intervals import MIN_ITEMS

    head = ["setting", "error rate", "format wrong"] + [
        f"{TYPE_LABELS[t]} (%)" for t in WRONG_TYPES
    ]
    if subtypes:
        head += [f"{s} confusion (%)" for s in subtypes]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    keys = ["error_rate", "format_wrong", *WRONG_TYPES] + [f"confusion.{s}" for s in subtypes or []]
    for name, a in rows:
        cells = error_cells(a, subtypes)
        lines.append("| " + " | ".join([name] + [cells[k] for k in keys]) + " |")
    if note:
        text = ERROR_TABLE_NOTE.format(min_items=MIN_ITEMS)
        if any(not isinstance(a.get("n"), int) for _, a in rows):
            text += SEED_MEAN_NOTE
        lines += ["", text]
    return "\n".join(lines)
