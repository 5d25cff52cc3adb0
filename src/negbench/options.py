"""Value types for command-line options: a bad number is one argparse message naming the option
(``argument --limit: must be at least 1, got 0``), never a traceback or a silent misuse."""

from __future__ import annotations

import argparse


def whole_number(lo: int | None = None):
    """argparse type: a whole number ≥ ``lo``."""

    def parse(s: str) -> int:
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {s!r}") from None
        if lo is not None and v < lo:
            raise argparse.ArgumentTypeError(f"must be at least {lo}, got {v}")
        return v

    return parse


def whole_numbers(lo: int | None = None):
    """argparse type: comma-separated whole numbers ≥ ``lo``, each once."""
    one = whole_number(lo)

    def parse(s: str) -> list[int]:
        return _once([one(x.strip()) for x in s.split(",") if x.strip()], "whole numbers")

    return parse


def names(s: str) -> list[str]:
    """Comma-separated names; commas inside brackets belong to a task's options
    (``notadataset[split=test,sample=20000],negation-mini``)."""
    out, cur, depth = [], "", 0
    for ch in s:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [x.strip() for x in out if x.strip()]


def names_once(s: str) -> list[str]:
    """argparse type: :func:`names`, at least one, each once."""
    return _once(names(s), "names")


def _once(values: list, what: str) -> list:
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated {what}, got nothing")
    dup = [v for i, v in enumerate(values) if v in values[:i]]
    if dup:
        raise argparse.ArgumentTypeError(
            f"{dup[0]!r} is given twice" if isinstance(dup[0], str) else f"{dup[0]} is given twice"
        )
    return values


def fraction(lo: float = 0.0, hi: float = 1.0, *, open_interval: bool = True):
    """argparse type: a number strictly between ``lo`` and ``hi`` (e.g. a significance level)."""

    def parse(s: str) -> float:
        try:
            v = float(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {s!r}") from None
        if not (lo < v < hi if open_interval else lo <= v <= hi):
            raise argparse.ArgumentTypeError(f"must lie between {lo} and {hi}, got {v}")
        return v

    return parse


def did_you_mean(name: str, known, n: int = 3) -> str:
    """`` (did you mean 'x'?)`` for the known names closest to a misspelt ``name`` (difflib's
    ratio ≥ 0.6, case ignored), or ``""`` when none is close."""
    import difflib

    known = [str(k) for k in known]
    lower = {k.lower(): k for k in known}
    close = difflib.get_close_matches(name.lower(), list(lower), n=n, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(lower[c]) for c in close) + "?)"


def limit_value(s: str) -> "int | float":
    """argparse type of ``--limit``: a whole number of records ≥ 1, or a share of each task's
    records strictly between 0 and 1 (lm-eval's ``--limit 0.1``), taken in whole units."""
    try:
        n = int(s)
    except ValueError:
        pass
    else:
        if n < 1:
            raise argparse.ArgumentTypeError(
                f"must be at least 1, got {n} (or a share: a fraction between 0 and 1)"
            )
        return n
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number or a fraction between 0 and 1, got {s!r}"
        ) from None
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(
            f"must be a whole number ≥ 1 or a fraction between 0 and 1, got {s}"
        )
    return v


def batch_size_value(s: str) -> "int | str":
    """argparse type of ``--batch-size``: ``auto`` or a whole number of rows ≥ 1."""
    if s.strip().lower() == "auto":
        return "auto"
    try:
        return whole_number(1)(s)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (or auto)") from None
