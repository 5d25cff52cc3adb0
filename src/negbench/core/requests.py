"""The request types every task is reduced to, and their answers (the fourth, a whole text's
rolling log-likelihood, serves lm-evaluation-harness perplexity tasks through
:mod:`negbench.integrations.lm_eval`).

Requests are plain strings (the chat template, if any, is already applied) so that a request's
identity — and its cache key — is exactly what the model sees.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Union


@dataclass(frozen=True)
class LoglikelihoodRequest:
    """Summed log-probability of ``continuation`` given ``context`` (lm-eval ``loglikelihood``)."""

    context: str
    continuation: str
    kind: str = field(default="loglikelihood", init=False)


@dataclass(frozen=True)
class NextTokenRequest:
    """Next-token log-probabilities at the end of ``context``, restricted to ``labels``.

    Each label is scored by its first token, encoded without special tokens and without a leading
    space (as the This-is-not-a-Dataset scorer does); ``label_prefix`` can add one (e.g. " ").
    """

    context: str
    labels: tuple[str, ...]
    label_prefix: str = ""
    kind: str = field(default="next_token", init=False)


@dataclass(frozen=True)
class GenerationRequest:
    """Greedy generation until one of ``stop`` or ``max_tokens`` new tokens (lm-eval ``generate_until``)."""

    context: str
    stop: tuple[str, ...] = ()
    max_tokens: int = 256
    kind: str = field(default="generate", init=False)


@dataclass(frozen=True)
class RollingLoglikelihoodRequest:
    """Summed log-probability of every token of ``text``, each predicted once, the text cut into
    windows of the model's length as lm-eval 0.4's ``loglikelihood_rolling`` does (perplexity
    tasks such as wikitext): the first window is conditioned on the prefix token (BOS, else
    EOS), later ones on up to ``max_length`` preceding tokens.  Token-level backends only."""

    text: str
    kind: str = field(default="loglikelihood_rolling", init=False)


Request = Union[
    LoglikelihoodRequest, NextTokenRequest, GenerationRequest, RollingLoglikelihoodRequest
]


@dataclass
class LoglikelihoodResponse:
    logprob: float
    n_tokens: int
    is_greedy: bool


@dataclass
class NextTokenResponse:
    logprobs: dict[str, float]  # label -> log P(first token of label)
    token_ids: dict[str, int]  # label -> that token id

    def normalized(self) -> dict[str, float]:
        """Probabilities renormalised over the labels (e.g. P(t) / (P(t) + P(f)))."""
        import math

        m = max(self.logprobs.values())
        ex = {k: math.exp(v - m) for k, v in self.logprobs.items()}
        z = sum(ex.values())
        return {k: v / z for k, v in ex.items()}


@dataclass
class GenerationResponse:
    text: str
    n_tokens: int
    stopped_by: str | None  # the stop string, "eos", or None when the token limit hit


@dataclass
class RollingLoglikelihoodResponse:
    logprob: float
    n_tokens: int  # tokens scored (the whole text)
    n_windows: int


Response = Union[
    LoglikelihoodResponse, NextTokenResponse, GenerationResponse, RollingLoglikelihoodResponse
]

_RESPONSE_TYPES = {
    "loglikelihood": LoglikelihoodResponse,
    "next_token": NextTokenResponse,
    "generate": GenerationResponse,
    "loglikelihood_rolling": RollingLoglikelihoodResponse,
}


def request_payload(req: Request) -> dict:
    d = asdict(req)
    d["kind"] = req.kind
    return d


def request_key(req: Request, model_fingerprint: str) -> str:
    """Content key of a request for one model: identical requests share one key (and one run)."""
    blob = json.dumps([model_fingerprint, request_payload(req)], ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def response_to_json(resp: Response) -> str:
    return json.dumps(asdict(resp), ensure_ascii=False)


def response_from_json(kind: str, text: str) -> Response:
    return _RESPONSE_TYPES[kind](**json.loads(text))
