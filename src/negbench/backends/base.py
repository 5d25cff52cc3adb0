"""The contract between the engine and a model backend.

A backend knows tokenisation and how to run its model; it knows nothing about tasks, caching or
request deduplication.  There are two levels:

* **token level** (:class:`Backend`, e.g. transformers): scoring goes through one primitive,
  :meth:`Backend.forward_rows`: run packed rows (optionally continuing a cached prefix) and
  return log-probabilities only at the queried positions.  The engine plans the prefix trie.
* **request level** (:class:`RequestBackend`, e.g. an OpenAI-compatible server): the backend
  answers whole requests (a continuation's log-likelihood, next-token label log-probabilities,
  a greedy generation).  The engine still deduplicates, reads and writes the cache (each answer
  the moment it arrives), orders requests so that shared prefixes are adjacent, shows progress
  and keeps statistics; the backend does the transport (concurrency, retries, rate limits).
  A backend declares its level with ``level = "request"``; absent means token level.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence


@dataclass
class Query:
    index: int                 # position within the row
    targets: list[int]         # token ids whose log-probability is wanted


@dataclass
class RowInput:
    tokens: list[int]
    parents: list[int]         # in-row parent index, -1 = attached to the prefix end
    positions: list[int]       # absolute positions (prefix length + depth)
    queries: list[Query]


@dataclass
class QueryResult:
    logprobs: list[float]      # one per target
    argmax: int                # greedy next token at this position


class Backend(Protocol):
    name: str
    fingerprint: str           # identifies model weights + everything that changes scores
    max_length: int

    def encode(self, text: str, add_special_tokens: bool | None = None) -> list[int]: ...

    def decode(self, tokens: Sequence[int]) -> str: ...

    @property
    def prefix_token_id(self) -> int: ...

    def apply_chat_template(self, messages: list[dict], add_generation_prompt: bool = True) -> str: ...

    def forward_rows(self, rows: list[RowInput], prefix: Any = None, prefix_len: int = 0,
                     keep_kv: bool = False) -> tuple[list[list[QueryResult]], Any]: ...

    def generate(self, contexts: list[list[int]], stop: Sequence[str], max_tokens: int
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
    request: Any                                   # a negbench.core.requests.Request
    tokens: list[int] | None = None
    n_scored: int = 0
    labels: list[tuple[str, int]] | None = None


# done(items): items are (key, request, response, meta); meta is a small JSON-able dict of
# per-answer provenance (served model id, system fingerprint, token usage) or None.
Done = Callable[[list[tuple[str, Any, Any, dict | None]]], None]


class RequestBackend(Protocol):
    level: str                 # "request"
    name: str
    fingerprint: str
    tokenizes: bool            # True: the engine sends token ids (RequestJob.tokens)
    max_length: int

    def check_kinds(self, kinds: set[str]) -> None:
        """Raise a NegbenchError, before anything runs, for request kinds ("loglikelihood",
        "next_token", "generate") this backend cannot answer, naming what to use instead."""

    def apply_chat_template(self, messages: list[dict], add_generation_prompt: bool = True) -> str: ...

    def answer(self, jobs: list[RequestJob], done: Done) -> dict:
        """Answer every job, calling ``done`` from the calling thread as answers arrive (so the
        engine can commit each to the cache at once).  Returns transport statistics
        (``calls``, ``retries``).  When a request cannot be answered within the retry budget,
        stop sending new ones, let those in flight finish (and pass them to ``done``), then raise
        a NegbenchError: answered requests stay cached and a rerun sends only the rest."""
