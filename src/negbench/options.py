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
        out = [one(x.strip()) for x in s.split(",") if x.strip()]
        if not out:
            raise argparse.ArgumentTypeError("expected comma-separated whole numbers, got nothing")
        dup = sorted({v for v in out if out.count(v) > 1})
        if dup:
            raise argparse.ArgumentTypeError(f"{dup[0]} is given twice")
        return out
    return parse


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
