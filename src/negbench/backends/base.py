"""The contract between the engine and a model backend.

A backend knows tokenisation and how to run its model; it knows nothing about tasks, caching or
request deduplication.  Scoring goes through one primitive, :meth:`Backend.forward_rows`: run
packed rows (optionally continuing a cached prefix) and return log-probabilities only at the
queried positions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, Sequence


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
