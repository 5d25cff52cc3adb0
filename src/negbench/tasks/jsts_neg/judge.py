"""LLM well-formedness judge (JSTS-Neg §3.2.1, Figure 2; the JNLI-Neg prompt it follows).

The original sentence is shown once as a well-formed example (one shot, answer 「正しい」), so the
model only has to weigh the effect of the added cue. Requests go through
:class:`negbench.core.engine.Engine`, hence every answer is cached (a rerun recomputes nothing) and
identical candidates are judged once.

Layout: chat models get the JNLI-Neg message list (instruction, original, 「正しい」, candidate);
base models (no chat template, e.g. the embedded Gemma 3 270M) get the same content as plain text
with 文:/判定: lines. Greedy decoding, first line of the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

from negbench.core.requests import GenerationRequest
from negbench.scoring.registry import OpenModel

#: The instruction of the well-formedness prompt, verbatim (JNLI-Neg ``src/configs.py``, which
#: JSTS-Neg's Figure 2 follows), including its leading and trailing newline.
INSTRUCTION = (
    "\n次の日本語が文法的・意味的に正しいかどうかを判定してください。\n"
    "正しい場合は「正しい」、そうでない場合は「正しくない」と出力してください。\n"
    "「正しい」「正しくない」のいずれかのみを出力することを遵守してください。\n"
)
CORRECT = "正しい"
INCORRECT = "正しくない"

Verdict = Literal["well_formed", "ill_formed", "unparsed"]


@dataclass(frozen=True)
class JudgeItem:
    original: str  # the sentence without the cue (the one-shot example)
    candidate: str  # the sentence with the cue


@dataclass(frozen=True)
class JudgeResult:
    verdict: Verdict
    answer: str  # the model's raw answer


def messages(item: JudgeItem) -> list[dict]:
    """The JNLI-Neg chat messages (instruction turn, one-shot pair, candidate)."""
    return [
        {"role": "user", "content": INSTRUCTION},
        {"role": "user", "content": item.original},
        {"role": "assistant", "content": CORRECT},
        {"role": "user", "content": item.candidate},
    ]


def plain_prompt(item: JudgeItem) -> str:
    """Base-model layout of the same prompt (completion after 「判定:」)."""
    return (
        f"{INSTRUCTION.strip()}\n\n文: {item.original}\n判定: {CORRECT}\n\n"
        f"文: {item.candidate}\n判定:"
    )


def parse(answer: str) -> Verdict:
    """「正しくない」 → ill-formed, 「正しい」 → well-formed, anything else → unparsed
    (unparsed candidates are discarded, like ill-formed ones)."""
    a = answer.strip().strip("「」\"'。. ")
    if a.startswith(INCORRECT):
        return "ill_formed"
    if a.startswith(CORRECT):
        return "well_formed"
    if INCORRECT in a:
        return "ill_formed"
    if CORRECT in a:
        return "well_formed"
    return "unparsed"


class Judge:
    """Judges candidates with one backend through an engine (cached, deduplicated)."""

    def __init__(self, backend, engine, *, max_tokens: int = 8):
        self.backend, self.engine, self.max_tokens = backend, engine, max_tokens
        self.chat = bool(getattr(backend, "has_chat_template", False))

    @property
    def model_id(self) -> str:
        return str(getattr(self.backend, "fingerprint", "?"))

    def prompt(self, item: JudgeItem) -> str:
        if not self.chat:
            return plain_prompt(item)
        msgs = messages(item)
        try:
            return self.backend.apply_chat_template(msgs)
        except Exception:  # templates that insist on alternating roles
            merged = [{"role": "user", "content": INSTRUCTION + "\n" + item.original}] + msgs[2:]
            return self.backend.apply_chat_template(merged)

    def requests(self, items: Sequence[JudgeItem]) -> list[GenerationRequest]:
        stop = ("\n",) if not self.chat else ()
        return [
            GenerationRequest(self.prompt(it), stop=stop, max_tokens=self.max_tokens)
            for it in items
        ]

    def judge(self, items: Sequence[JudgeItem]) -> list[JudgeResult]:
        if not items:
            return []
        resps = self.engine.run(self.requests(items), desc="judging well-formedness")
        out = []
        for r in resps:
            first = r.text.strip().split("\n")[0] if r.text.strip() else ""
            out.append(JudgeResult(parse(first), r.text))
        return out


def load_judge(
    spec: str,
    open_model: OpenModel,
    *,
    dtype: str = "auto",
    device: str = "auto",
    cache_path: str | None = None,
    progress: bool = True,
) -> Judge:
    """A judge on any backend ``--model`` accepts: an embedded name, folder, .gguf or hub id, or
    an API (``openai:gpt-4.1`` as the paper's §3.2, ``anthropic:…``, ``openai-compatible:URL#name``,
    ``vllm:…``); answers cached in ``cache_path`` (default: the negbench response cache).
    ``open_model`` is :func:`negbench.open_model`, passed in by the command that builds."""
    session = open_model(
        spec,
        dtype=dtype,
        device=device,
        cache=cache_path or True,
        progress=progress,
        log=lambda s: None,
    )
    return Judge(session.backend, session.engine)
