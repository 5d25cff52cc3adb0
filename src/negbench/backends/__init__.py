"""Backends run the model; the engine decides what to run.  See :mod:`negbench.core.backend`."""

from negbench.core.backend import Backend, Query, RowInput

__all__ = ["Backend", "Query", "RowInput"]
