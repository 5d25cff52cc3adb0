"""Reports from saved runs: paper-shaped tables (Markdown, LaTeX, HTML), plots, one
self-contained HTML file with per-sample browsing, run comparisons with paired significance
tests, and a stable JSON schema + CSV export.  No model is needed: everything is computed from
run folders (``results.json`` + ``samples/*.jsonl``).  See ``docs/reports.md``.
"""

from __future__ import annotations

from negbench.scoring.runs import Run, load_run, load_runs
from negbench.scoring.tables import Cell, Column, Ref, Row, Table, ref_samples, resolve_ref

__all__ = [
    "Cell",
    "Column",
    "Ref",
    "Row",
    "Run",
    "Table",
    "load_run",
    "load_runs",
    "ref_samples",
    "resolve_ref",
]
