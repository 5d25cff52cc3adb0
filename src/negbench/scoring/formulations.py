"""Scoring formulations: one task, several ways of asking the model (cf. lighteval).

* :class:`ChoiceLoglikelihood` — score each choice as a continuation; ``acc`` (argmax of the
  summed log-probability) and ``acc_norm`` (argmax of log-probability / characters of the choice),
  as lm-eval 0.4 ``multiple_choice``.  Serves cloze (choices = answer texts) and letter
  (choices = "A", "B", …) modes alike.
* :class:`Generation` — greedy generation with stop strings, an answer filter, ``exact_match``.
* :class:`NextTokenLabels` — one forward pass; the next-token distribution over label first tokens.

Each turns a rendered prompt into requests and the answers into a per-sample record; metrics
are computed from records only (:mod:`negbench.scoring.metrics`).
"""

from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass
from typing import Callable

from negbench.core.requests import (
    GenerationRequest,
    GenerationResponse,
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    NextTokenRequest,
    NextTokenResponse,
    Request,
)
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: tasks import this module
    from negbench.scoring.task import Rendered


@dataclass(frozen=True)
class ChoiceLoglikelihood:
    kind: str = "loglikelihood"
    target_delimiter: str = " "
    metrics: tuple[str, ...] = ("acc", "acc_norm")

    def requests(self, context: str, r: Rendered) -> list[Request]:
        return [LoglikelihoodRequest(context, self.target_delimiter + c) for c in r.choices]

    def score(self, r: Rendered, responses: list[LoglikelihoodResponse]) -> dict:
        lls = [x.logprob for x in responses]
        pred = argmax(lls)
        pred_norm = argmax([ll / len(c) for ll, c in zip(lls, r.choices)])
        return {
            "scores": lls,
            "n_tokens": [x.n_tokens for x in responses],
            "is_greedy": [x.is_greedy for x in responses],
            "pred": pred,
            "pred_norm": pred_norm,
            "acc": float(pred == r.gold),
            "acc_norm": float(pred_norm == r.gold),
        }


def argmax(xs: list[float]) -> int:
    """First index of the maximum (numpy.argmax semantics, as lm-eval)."""
    best = 0
    for i, x in enumerate(xs):
        if x > xs[best]:
            best = i
    return best


def normalize_answer(s: str) -> str:
    """exact_match normalisation: ignore case and punctuation, trim whitespace."""
    s = s.lower().translate(str.maketrans("", "", string.punctuation))
    return " ".join(s.split())


@dataclass(frozen=True)
class Generation:
    """Greedy generation; ``extract`` maps the raw output to an answer (None = wrong format)."""

    stop: tuple[str, ...] = ("\n",)
    max_tokens: int = 256
    extract: Callable[[str], str | None] = lambda s: s.strip()
    normalize: Callable[[str], str] = normalize_answer
    kind: str = "generate"
    metrics: tuple[str, ...] = ("exact_match",)

    def requests(self, context: str, r: Rendered) -> list[Request]:
        return [GenerationRequest(context, self.stop, self.max_tokens)]

    def score(self, r: Rendered, responses: list[GenerationResponse]) -> dict:
        out = responses[0].text
        answer = self.extract(out)
        gold = (
            r.gold
            if isinstance(r.gold, str)
            else (r.choices[r.gold] if r.choices and r.gold is not None else str(r.gold))
        )
        em = answer is not None and self.normalize(answer) == self.normalize(gold)
        return {
            "output": out,
            "answer": answer,
            "format_ok": answer is not None,
            "stopped_by": responses[0].stopped_by,
            "gold_answer": gold,
            "exact_match": float(em),
        }


def first_letter(letters: str = "ABCD") -> Callable[[str], str | None]:
    """Answer filter: the first standalone option letter in the output."""
    pat = re.compile(r"\b([%s])\b" % letters)

    def extract(s: str) -> str | None:
        m = pat.search(s)
        return m.group(1) if m else None

    return extract


@dataclass(frozen=True)
class NextTokenLabels:
    """Prediction from P(label first token) at the end of the prompt, renormalised over labels."""

    label_prefix: str = ""
    kind: str = "next_token"
    metrics: tuple[str, ...] = ("acc",)

    def requests(self, context: str, r: Rendered) -> list[Request]:
        return [NextTokenRequest(context, tuple(r.choices), self.label_prefix)]

    def score(self, r: Rendered, responses: list[NextTokenResponse]) -> dict:
        resp = responses[0]
        probs = resp.normalized()
        p = [probs[c] for c in r.choices]
        pred = argmax(p)
        return {
            "logprobs": [resp.logprobs[c] for c in r.choices],
            "probs": p,
            "label_token_ids": [resp.token_ids[c] for c in r.choices],
            "pred": pred,
            "acc": float(pred == r.gold),
        }


@dataclass(frozen=True)
class TrueFalseNextToken:
    """This-is-not-a-Dataset scoring (§4.2, after Scheurer et al. 2023): one forward pass; True iff
    P(t) / (P(t) + P(f)) > 0.5, where t and f are the first tokens of "True" and "False" encoded
    without special tokens and without a leading space.  The probability is recorded."""

    positive: str = "True"
    negative: str = "False"
    threshold: float = 0.5
    kind: str = "next_token"
    metrics: tuple[str, ...] = ("acc",)

    def requests(self, context: str, r: Rendered) -> list[Request]:
        return [NextTokenRequest(context, (self.positive, self.negative), "")]

    def score(self, r: Rendered, responses: list[NextTokenResponse]) -> dict:
        resp = responses[0]
        lt, lf = resp.logprobs[self.positive], resp.logprobs[self.negative]
        p_true = 1.0 / (1.0 + math.exp(lf - lt)) if lf - lt < 700 else 0.0
        pred = p_true > self.threshold
        label = r.gold == 0 if isinstance(r.gold, int) else r.gold == self.positive
        return {
            "logprobs": [lt, lf],
            "label_token_ids": [resp.token_ids[self.positive], resp.token_ids[self.negative]],
            "p_true": p_true,
            "pred_bool": pred,
            "label": label,
            "pred": 0 if pred else 1,
            "acc": float(pred == label),
        }


Formulation = ChoiceLoglikelihood | Generation | NextTokenLabels | TrueFalseNextToken
