"""Training data for ``negbench train``: Alpaca records from an exporter or a user's file, rendered
as the recipe says and tokenised with the loss on the response only.

Where records come from (``--data`` / the recipe's ``data``):

* an exporter of ``negbench export`` — ``nubench-negation``, ``konubench-cloze``,
  ``notadataset[patterns=1+3,types=verbal,polarity=negative,sample=2000]`` … — read from the
  recipe's ``data_split`` (default ``train``); ``notadataset`` splits by block, never by sentence
  (§6), and its ``split=`` option may be written inside the brackets;
  ``konubench-symbol[target=letter]`` answers the letter only (the paper's symbol format);
* a file of Alpaca records: JSON lines, or a JSON array, of ``{"instruction", "input",
  "output"}`` (``input`` optional), as LLaMA-Factory reads them.

Rendering (LLaMA-Factory's Alpaca semantics): prompt = ``instruction`` + ``prompt_join`` +
``input`` (just the instruction when the input is empty); under the model's chat template the
prompt is the user turn and the response is the assistant turn as the template writes it (its
end-of-turn marker included); with the plain template the response is ``response_prefix +
output`` (+ EOS when ``append_eos``).  Prompt and response are tokenised separately and
concatenated; labels are -100 on the prompt (``prompt_loss_weight`` > 0 instead gives the prompt
tokens that share of the loss, as the official This-is-not-a-Dataset code does).  A sequence
longer than ``cutoff_len`` loses the end of its response; a prompt that leaves no room for one
response token is an error.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

from negbench.errors import DataError, OptionError, TaskError
from negbench.files import fingerprint_records


@dataclass
class TrainingData:
    """Alpaca records ready to render, with where each came from."""

    spec: str  # as given (exporter spec or file path)
    split: str | None  # None for a file
    records: list[dict]  # {instruction, input, output} (+ extra fields kept)
    where: list[str]  # per record: "record 12" / "line 13"
    n_available: int  # before max_samples
    source: str  # a sentence: where the records come from
    eval_options: dict[str, str] = field(default_factory=dict)

    @cached_property
    def fingerprint(self) -> str:
        """sha256 of the records' instruction / input / output, in order (after max_samples)."""
        return fingerprint_records(
            {k: r.get(k, "") for k in ("instruction", "input", "output")} for r in self.records
        )

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "spec": self.spec,
            "split": self.split,
            "source": self.source,
            "n_available": self.n_available,
            "n_records": len(self.records),
            "fingerprint": self.fingerprint,
        }
        counts = Counter(r["output"] for r in self.records)
        if len(counts) <= 20:  # label balance of classification-style data
            out["output_counts"] = dict(counts.most_common())
        return out


def is_file_spec(spec: str) -> bool:
    p = Path(spec).expanduser()
    return (
        p.suffix.lower() in (".json", ".jsonl") or p.is_file() or spec.startswith(("/", ".", "~"))
    )


def load_training_data(
    spec: str, split: str = "train", max_samples: int | None = None
) -> TrainingData:
    """The records of ``spec`` (see the module docstring), the first ``max_samples`` of them."""
    if is_file_spec(spec):
        records, where = read_alpaca_file(spec)
        td = TrainingData(
            spec, None, records, where, len(records), f"file {Path(spec).expanduser()}"
        )
    else:
        td = _from_exporter(spec, split)
    if not td.records:
        raise TaskError(
            f"the training data {spec!r}"
            + (f" (split {td.split})" if td.split else "")
            + " selects no records",
            where="--data",
            fix="widen the selection (patterns=, types=, polarity=, sample=), choose "
            "another split, or check the file",
        )
    if max_samples is not None and len(td.records) > max_samples:
        td.records, td.where = td.records[:max_samples], td.where[:max_samples]
    return td


def _from_exporter(spec: str, split: str) -> TrainingData:
    from negbench.scoring.registry import REGISTRY
    from negbench.scoring.task import parse_spec
    from negbench.tasks.alpaca import exporters, get_exporter

    try:
        base, opts = parse_spec(spec)
    except TaskError as exc:
        raise OptionError(exc.what, where="--data", fix=exc.fix) from None
    known = exporters()
    transform: Callable[[dict], dict] | None = None
    eval_options: dict[str, str] = {}
    select = REGISTRY.get("training_data", base)
    if select is not None:  # the benchmark's own options (tasks/<name>/export.py)
        chosen = select(opts, split)
        split, eval_options, transform = chosen.split, chosen.eval_options, chosen.transform
    name = base + ("[" + ",".join(f"{k}={v}" for k, v in opts.items()) + "]" if opts else "")
    if base not in known:
        import difflib

        close = difflib.get_close_matches(base, list(known), n=1)
        raise OptionError(
            f"unknown training data '{base}'",
            where="--data",
            fix=(f"did you mean '{close[0]}'? " if close else "")
            + "an exporter ("
            + ", ".join(sorted(known))
            + ") or a .json/.jsonl "
            "file of Alpaca records",
        )
    try:
        exporter = get_exporter(name)
    except TaskError as exc:
        if exc.what.startswith("unknown export"):  # options given to an exporter without any
            raise OptionError(
                f"the training data '{base}' takes no options ({name})",
                where="--data",
                fix=f"write just {base}",
            ) from None
        raise TaskError(exc.what, where="--data", fix=exc.fix) from None
    try:
        records = exporter.records(split)
    except TaskError as exc:  # e.g. a split the exporter does not have
        fix = (exc.fix or "").replace("--split ", "--set data_split=")
        raise TaskError(
            exc.what,
            where=f"data_split={split} (training data {name})",
            fix=fix or "--set data_split=train",
        ) from None
    if transform:
        records = [transform(r) for r in records]
    for i, r in enumerate(records):  # an exporter's records are ours: check anyway
        for k in ("instruction", "output"):
            if not isinstance(r.get(k), str):
                raise DataError(
                    f"exporter record lacks a text '{k}'",
                    path=f"exporter {name}",
                    record=i,
                    field=k,
                )
    return TrainingData(
        spec,
        split,
        list(records),
        [f"record {i}" for i in range(len(records))],
        len(records),
        f"exporter {name}, split {split}",
        eval_options,
    )


def read_alpaca_file(path: str | Path) -> tuple[list[dict], list[str]]:
    """Alpaca records of a JSON-lines file or a JSON array; errors name the file, the line (or
    array element) and the field."""
    from negbench.records import field as get, iter_jsonl, read_text

    p = Path(path).expanduser()
    if not p.is_file():
        raise DataError(
            "training data file not found",
            path=str(p),
            fix="give a .jsonl (one {instruction, input, output} object per line) or "
            "a .json array of them",
        )
    text = read_text(p)
    rows: list[tuple[str, Any]]
    if p.suffix.lower() == ".json" or text.lstrip().startswith("["):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(
                f"invalid JSON ({exc.msg} at column {exc.colno})",
                path=str(p),
                record=f"line {exc.lineno}",
                fix="a JSON array of {instruction, input, output} objects, or JSON lines",
            ) from None
        if not isinstance(obj, list):
            raise DataError(
                f"expected a JSON array of records, got a {type(obj).__name__}",
                path=str(p),
                fix='write [{"instruction": …, "input": …, "output": …}, …] or one object per line',
            )
        rows = [(f"element {i}", o) for i, o in enumerate(obj)]
    else:
        rows = [
            (f"line {n}", o)
            for n, o in iter_jsonl(
                p, fix='each line must be one {"instruction", "input", "output"} object'
            )
        ]
    records, where = [], []
    for w, o in rows:
        if not isinstance(o, dict):
            raise DataError(
                "a record is not a JSON object",
                path=str(p),
                record=w,
                fix='each record is {"instruction": …, "input": …, "output": …}',
            )
        ins = get(o, "instruction", str, path=str(p), record=w, nonempty=False)
        inp = get(o, "input", str, path=str(p), record=w, optional=True, nonempty=False) or ""
        out = get(o, "output", str, path=str(p), record=w)
        if not ins.strip() and not inp.strip():
            raise DataError(
                "empty prompt: both instruction and input are empty",
                path=str(p),
                record=w,
                field="instruction",
            )
        records.append({**o, "instruction": ins, "input": inp, "output": out})
        where.append(w)
    return records, where


# -- rendering and tokenisation --------------------------------------------------------------------
def has_chat_template(tokenizer) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def resolve_template(recipe, tokenizer) -> str:
    """``chat`` or ``plain`` for this model (``auto``: chat when the model has a template)."""
    if recipe.template == "chat":
        if not has_chat_template(tokenizer):
            raise OptionError(
                "template=chat, but the model has no chat template",
                where="template",
                fix="--set template=plain (or auto), or use an instruction-tuned model",
            )
        return "chat"
    if recipe.template == "plain":
        return "plain"
    return "chat" if has_chat_template(tokenizer) else "plain"


def prompt_text(record: dict, recipe, template: str) -> str:
    ins = record["instruction"]
    if template == "chat" and recipe.instruction_chat is not None:
        ins = recipe.instruction_chat
    inp = record.get("input") or ""
    return ins + recipe.prompt_join + inp if inp else ins


def render(record: dict, recipe, tokenizer, template: str) -> tuple[str, str, bool]:
    """(prompt text, response text, whether the prompt text carries its own special tokens)."""
    prompt = prompt_text(record, recipe, template)
    if template == "chat":
        return (*_chat(tokenizer, prompt, record["output"]), True)
    return prompt, recipe.response_prefix + record["output"], False


def _chat(tokenizer, prompt: str, output: str) -> tuple[str, str]:
    """The user turn up to the generation prompt, and the assistant turn as the template writes
    it (its end-of-turn marker included)."""
    msgs = [{"role": "user", "content": prompt}]
    p = tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    full = tokenizer.apply_chat_template(
        msgs + [{"role": "assistant", "content": output}], tokenize=False
    )
    if full.startswith(p) and len(full) > len(p):
        return p, full[len(p) :]
    return p, output + (tokenizer.eos_token or "")


_P, _R = "\x00NEGBENCH-PROMPT\x00", "\x00NEGBENCH-RESPONSE\x00"


class Renderer:
    """:func:`render` for many records.  Under a chat template the template is rendered once with
    placeholders and filled in, when that gives exactly what rendering each record gives (checked
    on the first records of ``probe``; templates that transform the text are rendered one by
    one)."""

    def __init__(self, recipe, tokenizer, template: str, probe: Sequence[dict] = ()):
        self.recipe, self.tokenizer, self.template = recipe, tokenizer, template
        self._filled: tuple[str, str] | None = None
        if template != "chat":
            return
        pp, rr = _chat(tokenizer, _P, _R)
        if pp.count(_P) == 1 and _P not in rr and rr.count(_R) == 1 and _R not in pp:
            self._filled = (pp, rr)
            if not all(self(r) == render(r, recipe, tokenizer, template) for r in probe[:20]):
                self._filled = None

    def __call__(self, record: dict) -> tuple[str, str, bool]:
        if self._filled is None:
            return render(record, self.recipe, self.tokenizer, self.template)
        pp, rr = self._filled
        prompt = prompt_text(record, self.recipe, self.template)
        return pp.replace(_P, prompt), rr.replace(_R, record["output"]), True


def adds_bos(tokenizer) -> bool:
    """Whether the tokenizer puts BOS first by default (as ``negbench run`` decides)."""
    bos = tokenizer.bos_token_id
    return bos is not None and tokenizer("a")["input_ids"][:1] == [bos]


#: Version of the tokenisation (rendering + token layout): part of the training's identity.
TOKENIZATION_VERSION = 2
#: Records whose token count is checked exactly before training (the longest by their UTF-8
#: size), for the batch plan's longest sequence.
LONGEST_PROBE = 512


def token_bound(text: str) -> int:
    """An upper bound of the tokens of ``text`` without tokenising it: its UTF-8 bytes plus 2.
    Byte-level BPE gives at most one token a byte; SentencePiece one a character (bytes for
    byte fallback) plus the word-boundary prefix (``tests/train/test_data.py`` checks it on the
    test tokenizers)."""
    return len(text.encode("utf-8")) + 2


class TokenizedExamples(Sequence):
    """The training examples as the ``Trainer`` reads them, tokenised when it first asks for them
    (a micro-batch at a time, through ``__getitems__``) and kept in a flat token table (4 bytes
    a token), so the first optimiser step does not wait for the whole data to be tokenised and
    the data costs its texts and token ids, not Python lists of every example."""

    def __init__(self, records: Sequence[dict], where: Sequence[str], source: str, renderer):
        import numpy as np

        self._texts = [(r["instruction"], r.get("input") or "", r["output"]) for r in records]
        self._where, self._source = list(where), source
        self._render = renderer
        recipe, tok = renderer.recipe, renderer.tokenizer
        self.w = recipe.prompt_loss_weight
        self.cutoff = recipe.cutoff_len
        self._bos = [tok.bos_token_id] if adds_bos(tok) else []
        eos = tok.eos_token_id
        self._eos = [eos] if renderer.template == "plain" and recipe.append_eos and eos else []
        n = len(self._texts)
        self._start = np.full(n, -1, dtype=np.int64)
        self._len = np.zeros(n, dtype=np.int32)
        self._plen = np.zeros(n, dtype=np.int32)
        self._cut = np.zeros(n, dtype=bool)
        self._buf = np.empty(1 << 16, dtype=np.int32)
        self._used = 0

    def __len__(self) -> int:
        return len(self._texts)

    def record(self, i: int) -> dict:
        ins, inp, out = self._texts[i]
        return {"instruction": ins, "input": inp, "output": out}

    def rendered(self, i: int) -> tuple[str, str, bool]:
        return self._render(self.record(i))

    def encode(self, idx: Sequence[int]) -> list[tuple[int, list[int], list[int], bool]]:
        """(record, prompt ids, response ids, whether the response was cut) for ``idx``; a prompt
        that leaves no room for a response token, or an empty response, is an error naming the
        record."""
        tok = self._render.tokenizer
        rendered = [self.rendered(i) for i in idx]
        p_ids = tok([p for p, _, _ in rendered], add_special_tokens=False)["input_ids"]
        r_ids = tok([x for _, x, _ in rendered], add_special_tokens=False)["input_ids"]
        out, too_long = [], []
        for i, pi, ri, (_, _, special) in zip(idx, p_ids, r_ids, rendered):
            if not special:
                pi = self._bos + pi
            ri = ri + self._eos
            if not ri:
                raise DataError(
                    "the response is empty after tokenisation",
                    path=self._source,
                    record=self._where[i],
                    field="output",
                )
            if len(pi) + 1 > self.cutoff:
                too_long.append((i, len(pi), len(ri)))
                continue
            cut = len(pi) + len(ri) > self.cutoff
            out.append((i, pi, ri[: self.cutoff - len(pi)] if cut else ri, cut))
        if too_long:
            self._too_long(too_long)
        return out

    def _too_long(self, too_long: list[tuple[int, int, int]]) -> None:
        i, lp, lr = too_long[0]
        need = max(a + b for _, a, b in too_long)
        raise OptionError(
            f"cutoff_len={self.cutoff} is shorter than the prompt of {len(too_long)} of "
            f"{len(self)} training record(s) (the first, {self._where[i]}, has a prompt of "
            f"{lp} tokens and a response of {lr})",
            where=f"cutoff_len; data {self._source}, {self._where[i]}",
            fix=f"--set cutoff_len={need} (or more), or shorten those prompts",
        )

    def _ensure(self, idx: Sequence[int]) -> None:
        import numpy as np

        todo = sorted({int(i) for i in idx if self._start[i] < 0})
        if not todo:
            return
        for i, pi, ri, cut in self.encode(todo):
            ids = pi + ri
            if self._used + len(ids) > len(self._buf):
                grown = np.empty(max(2 * len(self._buf), self._used + len(ids)), np.int32)
                grown[: self._used] = self._buf[: self._used]
                self._buf = grown
            self._buf[self._used : self._used + len(ids)] = ids
            self._start[i], self._len[i], self._plen[i], self._cut[i] = (
                self._used,
                len(ids),
                len(pi),
                cut,
            )
            self._used += len(ids)

    def example(self, i: int) -> dict[str, list]:
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        self._ensure([i])
        return self._example(i)

    def _example(self, i: int) -> dict[str, list]:
        a = int(self._start[i])
        ids = self._buf[a : a + int(self._len[i])].tolist()
        lp = int(self._plen[i])
        lr = len(ids) - lp
        w = self.w
        if w > 0:
            pw = lr * w / (1 - w) / lp if lp else 0.0  # official prepare_data: prompt share w
            return {
                "input_ids": ids,
                "attention_mask": [1] * len(ids),
                "labels": list(ids),
                "loss_weight": [pw] * lp + [1.0] * lr,
            }
        return {
            "input_ids": ids,
            "attention_mask": [1] * len(ids),
            "labels": [-100] * lp + ids[lp:],
        }

    def __getitems__(self, idx: list[int]) -> list[dict[str, list]]:
        """A micro-batch, tokenised in one call (torch's DataLoader fetches through this)."""
        idx = [int(i) + len(self) if int(i) < 0 else int(i) for i in idx]
        self._ensure(idx)
        return [self._example(i) for i in idx]

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return self.__getitems__(list(range(*i.indices(len(self)))))
        return self.example(int(i))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (TokenizedExamples, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def stats(self) -> dict[str, Any]:
        """Counts over the examples tokenised so far (all of them after a full epoch)."""
        done = self._start >= 0
        n_tok = int(self._len[done].sum())
        return {
            "n_examples_tokenized": int(done.sum()),
            "n_tokens": n_tok,
            "n_response_tokens": n_tok - int(self._plen[done].sum()),
            "n_truncated": int(self._cut[done].sum()),
            "max_len_seen": int(self._len[done].max()) if done.any() else 0,
        }


@dataclass
class TokenizedData:
    """The tokenised training set (:class:`TokenizedExamples`) and what was checked of it before
    training: every prompt fits ``cutoff_len`` and ``max_len``, the longest example (exact for
    the :data:`LONGEST_PROBE` longest records by size, which the batch plan uses)."""

    examples: TokenizedExamples
    template: str  # "chat" or "plain"
    max_len: int
    fingerprint: str  # of what decides the tokens: records, tokenizer, rendering
    n_checked: int  # records tokenised before training (over-long candidates and the longest)
    length_hint: Any = None  # per example: its size bound (numpy), for length-sorted steps
    example_text: dict[str, str] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {
            "template": self.template,
            "n_examples": len(self.examples),
            "max_len": self.max_len,
            "fingerprint": self.fingerprint,
            "tokenized_as_read": True,
            **self.examples.stats(),
            "first_example": self.example_text,
        }


def table_key(data: TrainingData, recipe, tokenizer, template: str) -> str:
    """What decides the tokens: the records, the tokenizer and the recipe's rendering."""
    from negbench.backends.tokenizing import tokenizer_fingerprint

    blob = {
        "version": TOKENIZATION_VERSION,
        "records": data.fingerprint,
        "tokenizer": tokenizer_fingerprint(tokenizer),
        "template": template,
        "chat_template": getattr(tokenizer, "chat_template", None) if template == "chat" else None,
        **{
            k: getattr(recipe, k)
            for k in (
                "prompt_join",
                "response_prefix",
                "append_eos",
                "instruction_chat",
                "cutoff_len",
                "prompt_loss_weight",
            )
        },
    }
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()


def tokenize(data: TrainingData, recipe, tokenizer, template: str | None = None) -> TokenizedData:
    """The training examples, tokenised as the training reads them; before that, every prompt is
    checked to fit ``cutoff_len`` (an error naming the record) without tokenising the data: only
    records whose size bound (:func:`token_bound`) exceeds it are tokenised, with the
    :data:`LONGEST_PROBE` longest ones, whose longest sequence sizes the batch plan."""
    import numpy as np

    template = template or resolve_template(recipe, tokenizer)
    renderer = Renderer(recipe, tokenizer, template, data.records)
    examples = TokenizedExamples(data.records, data.where, data.source, renderer)
    n = len(examples)
    extra = 1 + len(examples._bos) + len(examples._eos)
    p_bound = np.zeros(n, dtype=np.int64)
    size = np.zeros(n, dtype=np.int64)
    for i in range(n):
        p, r, _ = examples.rendered(i)
        p_bound[i] = token_bound(p) + extra
        size[i] = p_bound[i] + token_bound(r)
    check = set(np.flatnonzero(p_bound > recipe.cutoff_len).tolist())
    check |= set(np.argsort(-size, kind="stable")[:LONGEST_PROBE].tolist())
    empty = {i for i, (_, _, out) in enumerate(examples._texts) if not out.strip()}
    checked = sorted(check | empty)
    examples._ensure(checked)  # raises for a prompt that does not fit; kept for the training
    max_len = int(examples._len[checked].max()) if checked else 0
    ex_text = {}
    if n:
        p, r, _ = examples.rendered(0)
        ex_text = {"prompt": p, "response": r}
    return TokenizedData(
        examples,
        template,
        max_len,
        table_key(data, recipe, tokenizer, template),
        len(checked),
        size,
        ex_text,
    )


__all__ = [
    "Renderer",
    "TrainingData",
    "TokenizedData",
    "TokenizedExamples",
    "load_training_data",
    "read_alpaca_file",
    "resolve_template",
    "render",
    "prompt_text",
    "tokenize",
    "adds_bos",
    "is_file_spec",
]
