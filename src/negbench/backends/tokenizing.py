"""lm-eval 0.4 HFLM's tokenisation rules over a ``transformers`` tokenizer, in one place: the
in-process backend and the API backends' local tokenizer (which must tokenise requests exactly as
the in-process backend does, so served and local answers can be compared token for token) share it.
The class using it sets ``self.tokenizer`` and ``self.add_bos``."""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Sequence

#: Texts whose token ids identify a tokenizer's behaviour: English, Korean, Japanese, digits,
#: whitespace runs, a character outside most vocabularies. Two tokenizers that agree on all of
#: them almost surely agree everywhere the benchmarks look; ones that differ (a GGUF's tokenizer
#: read by two transformers versions, say) must not share cached answers.
TOKENIZER_PROBES = (
    "The cat is not on the mat; it isn't anywhere, is it? True or False.",
    "원문: 그는 학교에 가지 않았다. 부정문: 그는 학교에 갔다.",
    "彼は学校に行かなかった。文の類似度は 4.5 です。",
    "  leading spaces,\ttabs\nand new lines 1234567890 ",
    "emoji 🙂 and rare ꙮ",
)


def tokenizer_fingerprint(tokenizer) -> str:
    """A short content hash of what a ``transformers`` tokenizer does: its size, special tokens
    and the ids of :data:`TOKENIZER_PROBES` (no special tokens added)."""
    ids = tokenizer(list(TOKENIZER_PROBES), add_special_tokens=False)["input_ids"]
    blob = [
        len(tokenizer),
        tokenizer.bos_token_id,
        tokenizer.eos_token_id,
        tokenizer("a")["input_ids"],
        ids,
    ]
    return hashlib.sha256(json.dumps(blob).encode()).hexdigest()[:16]


class HFTokenization:
    tokenizer: Any  # a transformers tokenizer (transformers is not followed by mypy)
    add_bos: bool

    def _tokenizer_adds_bos(self) -> bool:
        """The tokenizer's own default: does it put BOS in front (Llama-3, Gemma) or not
        (GPT-2-style tokenizers such as SmolLM2's)?"""
        bos = self.tokenizer.bos_token_id
        return bos is not None and self.tokenizer("a")["input_ids"][:1] == [bos]

    def encode(self, text: str, add_special_tokens: bool | None = None) -> list[int]:
        return self.encode_batch([text], add_special_tokens)[0]

    def encode_batch(
        self, texts: list[str], add_special_tokens: bool | None = None
    ) -> list[list[int]]:
        """BOS by the tokenizer's default (``add_bos``), never a second one when the text already
        starts with the BOS string (a chat template's output)."""
        if not texts:
            return []
        ids = self.splitter.encode(texts)
        special = self.add_bos if add_special_tokens is None else add_special_tokens
        bos, bos_text = self.tokenizer.bos_token_id, self.tokenizer.bos_token
        if not special or bos is None:
            return ids
        return [
            x if (bos_text and t.startswith(bos_text)) else [bos] + x for t, x in zip(texts, ids)
        ]

    @property
    def splitter(self):
        """The tokenizer's exact encoding of many texts by shared pieces
        (:mod:`negbench.backends.token_splits`), made on first use."""
        sp = self.__dict__.get("_splitter")
        if sp is None or sp.tok is not self.tokenizer:
            from negbench.backends.token_splits import SplitTokenizer

            sp = self.__dict__["_splitter"] = SplitTokenizer(self.tokenizer)
        return sp

    def can_split(self, left: str, right: str) -> bool:
        """Whether ``left + right`` tokenises as ``left``'s tokens, then ``right``'s (so a
        continuation's tokens need no second pass over its context)."""
        bos = self.tokenizer.bos_token
        if bos and self.add_bos and len(left) < len(bos):  # BOS decided on the whole text
            return False
        return self.splitter.can_split(left, right)

    def decode(self, tokens: Sequence[int]) -> str:
        return self.tokenizer.decode(list(tokens), skip_special_tokens=True)

    @property
    def prefix_token_id(self) -> int:
        """Token that stands in for an empty context (lm-eval: BOS if set, else EOS)."""
        t = self.tokenizer
        return t.bos_token_id if t.bos_token_id is not None else t.eos_token_id

    @property
    def has_chat_template(self) -> bool:
        return bool(getattr(self.tokenizer, "chat_template", None))

    def apply_chat_template(self, messages: list[dict], add_generation_prompt: bool = True) -> str:
        return self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=add_generation_prompt
        )


def quiet_transformers() -> None:
    """transformers' own logging and progress bars off (negbench reports progress itself)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import transformers

    transformers.logging.set_verbosity_error()
    try:
        transformers.utils.logging.disable_progress_bar()
    except AttributeError:
        pass


def as_list(x) -> list[int]:
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]
