"""Forward calls that survive running out of memory.

A batch size that fits most calls can still meet one that does not (longer rows, a fragmented
GPU, another process's allocation).  :func:`oom_safe` wraps a backend's ``forward_batch``: a call
that raises an out-of-memory error computed nothing usable, so its rows are split in halves and
each half forwarded (recursively, down to one row); the halves' results are put back in the
call's order, so the engine sees one call's results and nothing is lost or computed twice.
After a split, calls with more rows than the largest that fitted are split before they run, so
a long run does not fail its way through every large call.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from negbench.core.backend import PackedBatch
from negbench.errors import ModelError

log = logging.getLogger("negbench")


def is_oom(exc: BaseException) -> bool:
    """torch.cuda.OutOfMemoryError / torch.OutOfMemoryError (one class), or a RuntimeError
    saying the device or the host allocator is out of memory."""
    if type(exc).__name__ == "OutOfMemoryError":
        return True
    text = str(exc).lower()
    return isinstance(exc, RuntimeError) and (
        "out of memory" in text or "can't allocate memory" in text
    )


def free_device_memory() -> None:
    """Return the failed call's cached blocks to the device (torch only when already loaded)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def rows_of(batch: PackedBatch, rows: np.ndarray) -> tuple[PackedBatch, np.ndarray, np.ndarray]:
    """The sub-batch of ``rows`` (ascending), the mask of its scored positions among the
    batch's, and the mask of its targets among the batch's."""
    B = len(batch.lengths)
    new_row = np.full(B, -1, dtype=np.int64)
    new_row[rows] = np.arange(len(rows), dtype=np.int64)
    q_in = new_row[batch.q_row] >= 0
    t_in = q_in[batch.t_query]
    q_new = np.cumsum(q_in) - 1  # a kept query's index among the kept ones (order kept)
    lengths = batch.lengths[rows]
    L = int(lengths.max()) if len(lengths) else 0
    sub = PackedBatch(
        batch.ids[rows, :L],
        batch.pos[rows, :L],
        None if batch.end is None else batch.end[rows, :L],
        lengths,
        new_row[batch.q_row[q_in]],
        batch.q_col[q_in],
        q_new[batch.t_query[t_in]],
        batch.t_token[t_in],
    )
    return sub, q_in, t_in


class _Joined:
    """The pending results of a split call, read back in the call's order."""

    def __init__(self, parts: list[tuple[Any, np.ndarray, np.ndarray]], n_q: int, n_t: int):
        self.parts, self.n_q, self.n_t = parts, n_q, n_t

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        lp = np.zeros(self.n_t, dtype=np.float64)
        am = np.zeros(self.n_q, dtype=np.int64)
        for pending, q_in, t_in in self.parts:
            p_lp, p_am = pending.result()
            lp[t_in] = p_lp
            am[q_in] = p_am
        return lp, am


@dataclass
class OomStats:
    """What the wrapper did: out-of-memory errors met, calls split, and the most rows a call
    may have now (None: no limit met yet)."""

    errors: int = 0
    splits: int = 0
    max_rows: int | None = None


class OomSafe:
    """A backend's ``forward_batch`` that splits a call in halves when it runs out of memory.
    ``stage``: the backend's ``stage`` (each half's arrays are staged again; the call's argument
    may be the staged form, whose ``.batch`` is the :class:`PackedBatch`)."""

    def __init__(self, forward: Callable | None = None, stage: Callable | None = None):
        self.forward: Callable = forward or _unset
        self.stage = stage
        self.stats = OomStats()

    def wrap(self, forward: Callable, stage: Callable | None = None) -> "OomSafe":
        """This wrapper around ``forward`` (what it learnt of the row limit kept)."""
        self.forward, self.stage = forward, stage
        return self

    def __call__(self, x, prefix=None, prefix_len: int = 0, keep_kv: bool = False):
        batch = x if isinstance(x, PackedBatch) else x.batch
        B = len(batch.lengths)
        st = self.stats
        if st.max_rows is not None and B > st.max_rows and not keep_kv:
            return self._halves(batch, prefix, prefix_len)
        try:
            return self.forward(x, prefix, prefix_len, keep_kv)
        except Exception as exc:
            if not is_oom(exc):
                raise
            st.errors += 1
            free_device_memory()
            if keep_kv or B < 2:
                raise ModelError(
                    f"out of memory on a forward call of {B} row(s) × {batch.ids.shape[1]} "
                    "tokens, which cannot be split",
                    where="--max-row-tokens / --max-length",
                    fix="lower --max-row-tokens (tokens per row) or --max-length, or use "
                    "a device with more memory",
                ) from exc
            st.splits += 1
            st.max_rows = B // 2 if st.max_rows is None else min(st.max_rows, B // 2)
            log.warning(
                "out of memory on a forward call of %d rows × %d tokens: split in halves "
                "and retried; calls of more than %d rows are split from now on",
                B,
                batch.ids.shape[1],
                st.max_rows,
            )
            return self._halves(batch, prefix, prefix_len)

    def _halves(self, batch: PackedBatch, prefix, prefix_len: int):
        """Both halves forwarded (each split again if it must), joined in the call's order."""
        B = len(batch.lengths)
        parts = []
        for rows in (np.arange(0, B // 2), np.arange(B // 2, B)):
            sub, q_in, t_in = rows_of(batch, rows)
            staged = sub if self.stage is None else self.stage(sub)
            pending, _ = self(staged, prefix, prefix_len, False)
            parts.append((pending, q_in, t_in))
        return _Joined(parts, len(batch.q_row), len(batch.t_token)), None


def _unset(*_a, **_k):
    raise RuntimeError("OomSafe: no forward function set (call wrap first)")
