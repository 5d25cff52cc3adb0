"""The contract between the engine and a model backend.

A backend knows tokenisation and how to run its model; it knows nothing about tasks, caching or
request deduplication.  There are two levels:

* **token level** (:class:`Backend`, e.g. transformers): scoring goes through one primitive,
  :meth:`Backend.forward_rows`: run packed rows (optionally continuing a cached prefix) and
  return log-probabilities only at the queried positions.  The engine plans the prefix trie.
  A backend may also offer :meth:`Backend.forward_batch`, the same call on arrays
  (:class:`PackedBatch`: the engine's hot path, no Python object per token or query, results
  read back once per call); the engine uses it when present and ``forward_rows`` otherwise.
* **request level** (:class:`RequestBackend`, e.g. an OpenAI-compatible server): the backend
  answers whole requests (a continuation's log-likelihood, next-token label log-probabilities,
  a greedy generation).  The engine still deduplicates, reads and writes the cache (each answer
  the moment it arrives), orders requests so that shared prefixes are adjacent, shows progress
  and keeps statistics; the backend does the transport (concurrency, retries, rate limits).
  A backend declares its level with ``level = "request"``; absent means token level.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

if TYPE_CHECKING:  # numpy only where a batch is packed: `import negbench` stays light
    import numpy as np


@dataclass
class Query:
    index: int  # position within the row
    targets: list[int]  # token ids whose log-probability is wanted


@dataclass
class RowInput:
    tokens: list[int]
    parents: list[int]  # in-row parent index, -1 = attached to the prefix end
    positions: list[int]  # absolute positions (prefix length + depth)
    queries: list[Query]


@dataclass
class QueryResult:
    logprobs: list[float]  # one per target
    argmax: int  # greedy next token at this position


@dataclass
class PackedBatch:
    """One forward call as arrays.  Row ``b`` holds ``lengths[b]`` tokens in depth-first order
    (the rest is padding).  Token ``q`` of a row may attend key ``k`` of the same row exactly
    when ``k <= q <= end[b, k]`` (``end``: the last index of ``k``'s subtree in the row; padding
    ends at itself), and every token attends the whole prefix.  ``end`` is None when every row
    is one unbranched sequence: plain causal attention, positions ``prefix_len + index``.

    Scored positions: ``(q_row[j], q_col[j])``; targets: ``t_token[i]`` at scored position
    ``t_query[i]`` (``t_query`` ascending)."""

    ids: np.ndarray  # [B, L] int64
    pos: np.ndarray  # [B, L] int64 absolute positions
    end: np.ndarray | None  # [B, L] int64, or None (no branching: causal)
    lengths: np.ndarray  # [B]
    q_row: np.ndarray  # [Q]
    q_col: np.ndarray  # [Q]
    t_query: np.ndarray  # [T]
    t_token: np.ndarray  # [T]


class Pending(Protocol):
    """A forward call's results, possibly still being computed on a device."""

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """(log-probability of each target [T] float, argmax at each scored position [Q])."""


def row_inputs(batch: PackedBatch) -> list[RowInput]:
    """The :class:`RowInput` form of a batch (for backends with ``forward_rows`` only)."""
    rows: list[RowInput] = []
    for b, n in enumerate(batch.lengths.tolist()):
        if batch.end is None:
            parents = list(range(-1, n - 1))
        else:
            parents = []
            stack: list[tuple[int, int]] = []
            for k, e in enumerate(batch.end[b, :n].tolist()):
                while stack and stack[-1][0] < k:
                    stack.pop()
                parents.append(stack[-1][1] if stack else -1)
                stack.append((e, k))
        rows.append(RowInput(batch.ids[b, :n].tolist(), parents, batch.pos[b, :n].tolist(), []))
    targets: dict[int, list[int]] = {}
    for q, t in zip(batch.t_query.tolist(), batch.t_token.tolist()):
        targets.setdefault(q, []).append(t)
    for j, (b, i) in enumerate(zip(batch.q_row.tolist(), batch.q_col.tolist())):
        rows[b].queries.append(Query(i, targets.get(j, [])))
    return rows


def packed_batch(rows: list[RowInput]) -> tuple[PackedBatch, list[list[int]]]:
    """The arrays of a list of :class:`RowInput` (rows' queries in order); also, per row, the
    scored positions' indices into ``q_row`` (to hand results back row by row)."""
    import numpy as np

    B, L = len(rows), max(len(r.tokens) for r in rows)
    ids = np.zeros((B, L), dtype=np.int64)
    pos = np.zeros((B, L), dtype=np.int64)
    end = np.tile(np.arange(L, dtype=np.int64), (B, 1))
    branched = False
    q_row: list[int] = []
    q_col: list[int] = []
    t_query: list[int] = []
    t_token: list[int] = []
    per_row: list[list[int]] = []
    for b, r in enumerate(rows):
        n = len(r.tokens)
        ids[b, :n] = r.tokens
        pos[b, :n] = r.positions
        e = list(range(n))
        for i in range(n - 1, -1, -1):  # children come after their parents
            p = r.parents[i]
            if p >= 0:
                e[p] = max(e[p], e[i])
        end[b, :n] = e
        branched = branched or any(p != i - 1 for i, p in enumerate(r.parents))
        mine = []
        for q in r.queries:
            mine.append(len(q_row))
            for t in q.targets:
                t_query.append(len(q_row))
                t_token.append(t)
            q_row.append(b)
            q_col.append(q.index)
        per_row.append(mine)
    arr = lambda x: np.asarray(x, dtype=np.int64)
    return PackedBatch(
        ids,
        pos,
        end if branched else None,
        arr([len(r.tokens) for r in rows]),
        arr(q_row),
        arr(q_col),
        arr(t_query),
        arr(t_token),
    ), per_row


class Backend(Protocol):
    name: str
    fingerprint: str  # identifies model weights + everything that changes scores
    max_length: int

    def encode(self, text: str, add_special_tokens: bool | None = None) -> list[int]: ...

    def decode(self, tokens: Sequence[int]) -> str: ...

    @property
    def prefix_token_id(self) -> int: ...

    def apply_chat_template(
        self, messages: list[dict], add_generation_prompt: bool = True
    ) -> str: ...

    def forward_rows(
        self, rows: list[RowInput], prefix: Any = None, prefix_len: int = 0, keep_kv: bool = False
    ) -> tuple[list[list[QueryResult]], Any]: ...

    def forward_batch(
        self, batch: PackedBatch, prefix: Any = None, prefix_len: int = 0, keep_kv: bool = False
    ) -> tuple[Pending, Any]:
        """Optional: :meth:`forward_rows` on arrays.  Returns at once where the device runs
        asynchronously; ``Pending.result()`` waits."""

    def generate(
        self, contexts: list[list[int]], stop: Sequence[str], max_tokens: int
    ) -> list[tuple[str, int, str | None]]: ...


# -- request level ------------------------------------------------------------------------------
@dataclass
class RequestJob:
    """One unique request handed to a request-level backend.

    When the backend tokenises (``tokenizes = True``), the engine fills the token fields with the
    same lm-eval tokenisation the token-level path uses, so both levels score identical tokens:

    * log-likelihood: ``tokens`` = context + continuation ids (left-truncated to
      ``max_length + 1``), ``n_scored`` = how many trailing tokens are the continuation;
    * next-token: ``tokens`` = context ids, ``labels`` = (label, first-token id) pairs;
    * generation: ``tokens`` = prompt ids (left-truncated to leave room for ``max_tokens``).

    Otherwise they stay empty and the backend works on the request's text.
    """

    key: str
    request: Any  # a negbench.core.requests.Request
    tokens: list[int] | None = None
    n_scored: int = 0
    labels: list[tuple[str, int]] | None = None


# done(items): items are (key, request, response, meta); meta is a small JSON-able dict of
# per-answer provenance (served model id, system fingerprint, token usage) or None.
Done = Callable[[list[tuple[str, Any, Any, dict | None]]], None]


class RequestBackend(Protocol):
    level: str  # "request"
    name: str
    fingerprint: str
    tokenizes: bool  # True: the engine sends token ids (RequestJob.tokens)
    max_length: int

    def check_kinds(self, kinds: set[str]) -> None:
        """Raise a NegbenchError, before anything runs, for request kinds ("loglikelihood",
        "next_token", "generate") this backend cannot answer, naming what to use instead."""

    def apply_chat_template(
        self, messages: list[dict], add_generation_prompt: bool = True
    ) -> str: ...

    def answer(self, jobs: list[RequestJob], done: Done) -> dict:
        """Answer every job, calling ``done`` from the calling thread as answers arrive (so the
        engine can commit each to the cache at once).  Returns transport statistics
        (``calls``, ``retries``).  When a request cannot be answered within the retry budget,
        stop sending new ones, let those in flight finish (and pass them to ``done``), then raise
        a NegbenchError: answered requests stay cached and a rerun sends only the rest."""
