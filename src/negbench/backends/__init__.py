"""Backends run the model; the engine decides what to run.  See :mod:`negbench.backends.base`."""

from negbench.backends.base import Backend, Query, RowInput

__all__ = ["Backend", "Query", "RowInput"]
