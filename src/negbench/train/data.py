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


def render_all(
    records: list[dict], recipe, tokenizer, template: str
) -> list[tuple[str, str, bool]]:
    """:func:`render` for every record.  Under a chat template the template is rendered once with
    placeholders and filled in, when that gives exactly what rendering each record gives (checked
    on the first records; templates that transform the text are rendered one by one)."""
    if template != "chat" or len(records) < 50:
        return [render(r, recipe, tokenizer, template) for r in records]
    pp, rr = _chat(tokenizer, _P, _R)
    fast = pp.count(_P) == 1 and _P not in rr and rr.count(_R) == 1 and _R not in pp

    def fill(r: dict) -> tuple[str, str, bool]:
        return (pp.replace(_P, prompt_text(r, recipe, template)), rr.replace(_R, r["output"]), True)

    if fast and all(fill(r) == render(r, recipe, tokenizer, template) for r in records[:20]):
        return [fill(r) for r in records]
    return [render(r, recipe, tokenizer, template) for r in records]


def adds_bos(tokenizer) -> bool:
    """Whether the tokenizer puts BOS first by default (as ``negbench run`` decides)."""
    bos = tokenizer.bos_token_id
    return bos is not None and tokenizer("a")["input_ids"][:1] == [bos]


#: Records rendered and tokenised together (bounds the memory of building the token table).
TOKENIZE_CHUNK = 8192
#: Version of the token-table layout (a change invalidates the caches).
TABLE_VERSION = 1


class TokenizedExamples(Sequence):
    """The training examples as the ``Trainer`` reads them, built one at a time from the token
    table (flat ``ids``, ``offsets``, ``prompt_len``; memory-mapped when read from the cache), so
    the data costs its token ids (4 bytes a token), not Python lists of every example."""

    def __init__(self, ids, offsets, prompt_len, prompt_loss_weight: float):
        self.ids, self.offsets, self.prompt_len = ids, offsets, prompt_len
        self.w = prompt_loss_weight

    def __len__(self) -> int:
        return len(self.prompt_len)

    def example(self, i: int) -> dict[str, list]:
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        ids = self.ids[a:b].tolist()
        lp = int(self.prompt_len[i])
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

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self.example(j) for j in range(*i.indices(len(self)))]
        return self.example(int(i))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (TokenizedExamples, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


@dataclass
class TokenizedData:
    """The tokenised training set: a token table (see :class:`TokenizedExamples`) and its
    statistics; ``cached`` says whether it was read from the cache of an earlier run."""

    examples: TokenizedExamples
    template: str  # "chat" or "plain"
    n_tokens: int  # all tokens (one epoch)
    n_response_tokens: int
    n_truncated: int  # records whose response was cut at cutoff_len
    max_len: int
    fingerprint: str
    example_text: dict[str, str] = field(default_factory=dict)
    cached: bool = False

    def summary(self) -> dict[str, Any]:
        return {
            "template": self.template,
            "n_examples": len(self.examples),
            "n_tokens": self.n_tokens,
            "n_response_tokens": self.n_response_tokens,
            "n_truncated": self.n_truncated,
            "max_len": self.max_len,
            "fingerprint": self.fingerprint,
            "first_example": self.example_text,
        }


def table_key(data: TrainingData, recipe, tokenizer, template: str) -> str:
    """What decides the token table: the records, the tokenizer and the recipe's rendering."""
    from negbench.backends.tokenizing import tokenizer_fingerprint

    blob = {
        "version": TABLE_VERSION,
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
            )
        },
    }
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:32]


def tokenize(
    data: TrainingData,
    recipe,
    tokenizer,
    template: str | None = None,
    cache_dir: str | Path | None = None,
) -> TokenizedData:
    """Tokenise every record into a token table; a prompt that does not fit in ``cutoff_len`` is
    an error naming the record (checked for all records before anything is trained).

    With ``cache_dir`` the table is written there once (``<key>/``, atomically) and a rerun with
    the same records, tokenizer and rendering memory-maps it instead of tokenising again."""
    template = template or resolve_template(recipe, tokenizer)
    folder = None
    if cache_dir is not None:
        folder = Path(cache_dir) / table_key(data, recipe, tokenizer, template)
        got = _read_table(folder, recipe)
        if got is not None:
            return got
    ids, offsets, plen, stats = _build_table(data, recipe, tokenizer, template)
    meta = {"template": template, **stats, "fingerprint": _fingerprint((ids, offsets, plen))}
    if folder is not None:
        _write_table(folder, ids, offsets, plen, meta)
    return _tokenized(ids, offsets, plen, meta, recipe, cached=False)


def _tokenized(ids, offsets, plen, meta: dict, recipe, cached: bool) -> TokenizedData:
    return TokenizedData(
        TokenizedExamples(ids, offsets, plen, recipe.prompt_loss_weight),
        meta["template"],
        meta["n_tokens"],
        meta["n_response_tokens"],
        meta["n_truncated"],
        meta["max_len"],
        meta["fingerprint"],
        meta["example_text"],
        cached,
    )


def _fingerprint(arrays) -> str:
    import numpy as np

    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _read_table(folder: Path, recipe) -> TokenizedData | None:
    """The cached table, when it is complete and intact (else None: built again)."""
    import numpy as np

    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        arrays = [np.load(folder / f"{n}.npy", mmap_mode="r") for n in ("ids", "offsets", "plen")]
    except (OSError, ValueError):
        return None
    if _fingerprint(arrays) != meta.get("fingerprint"):  # 4 bytes a token: cheap to check
        return None
    ids, offsets, plen = arrays
    return _tokenized(ids, offsets, plen, meta, recipe, cached=True)


def _write_table(folder: Path, ids, offsets, plen, meta: dict) -> None:
    import shutil
    import tempfile

    import numpy as np

    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
    try:
        for n, a in (("ids", ids), ("offsets", offsets), ("plen", plen)):
            np.save(tmp / f"{n}.npy", a)
        (tmp / "meta.json").write_text(json.dumps(meta), encoding="utf-8")  # written last
        try:
            tmp.rename(folder)
        except OSError:  # another run wrote it meanwhile
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _build_table(data: TrainingData, recipe, tokenizer, template: str):
    """Render and tokenise the records chunk by chunk into flat arrays (no list of examples)."""
    import numpy as np

    bos = [tokenizer.bos_token_id] if adds_bos(tokenizer) else []
    eos = tokenizer.eos_token_id
    plain_eos = template == "plain" and recipe.append_eos and eos is not None
    cutoff = recipe.cutoff_len
    too_long: list[tuple[int, int, int]] = []
    id_chunks, len_chunks, plen_chunks = [], [], []
    n_tok = n_resp = n_trunc = max_len = 0
    ex_text: dict[str, str] = {}
    records = data.records
    for c0 in range(0, len(records), TOKENIZE_CHUNK):
        rendered = render_all(records[c0 : c0 + TOKENIZE_CHUNK], recipe, tokenizer, template)
        prompts = [p for p, _, _ in rendered]
        responses = [x for _, x, _ in rendered]
        if c0 == 0 and rendered:
            ex_text = {"prompt": prompts[0], "response": responses[0]}
        p_ids = tokenizer(prompts, add_special_tokens=False)["input_ids"]
        r_ids = tokenizer(responses, add_special_tokens=False)["input_ids"]
        flat: list[int] = []
        lens, plens = [], []
        for j, (pi, ri, (_, _, special)) in enumerate(zip(p_ids, r_ids, rendered)):
            i = c0 + j
            if not special:
                pi = bos + pi
            if plain_eos:
                ri = ri + [eos]
            if not ri:
                raise DataError(
                    "the response is empty after tokenisation",
                    path=data.source,
                    record=data.where[i],
                    field="output",
                )
            lp = len(pi)
            if lp + 1 > cutoff:
                too_long.append((i, lp, len(ri)))
                continue
            if lp + len(ri) > cutoff:
                ri = ri[: cutoff - lp]
                n_trunc += 1
            flat += pi
            flat += ri
            n = lp + len(ri)
            lens.append(n)
            plens.append(lp)
            n_resp += len(ri)
            max_len = max(max_len, n)
        n_tok += len(flat)
        id_chunks.append(np.asarray(flat, dtype=np.int32))
        len_chunks.append(np.asarray(lens, dtype=np.int64))
        plen_chunks.append(np.asarray(plens, dtype=np.int32))
    if too_long:
        i, lp, lr = too_long[0]
        need = max(a + min(b, 1) for _, a, b in too_long)
        raise OptionError(
            f"cutoff_len={cutoff} is shorter than the prompt of {len(too_long)} of "
            f"{len(records)} training record(s) (the first, {data.where[i]}, has a prompt of "
            f"{lp} tokens and a response of {lr})",
            where=f"cutoff_len; data {data.source}, {data.where[i]}",
            fix=f"--set cutoff_len={max(need, max((a + b for _, a, b in too_long), default=need))} "
            "(or more), or shorten those prompts",
        )
    ids = np.concatenate(id_chunks) if id_chunks else np.zeros(0, np.int32)
    lens_all = np.concatenate(len_chunks) if len_chunks else np.zeros(0, np.int64)
    offsets = np.zeros(len(lens_all) + 1, dtype=np.int64)
    np.cumsum(lens_all, out=offsets[1:])
    plen = np.concatenate(plen_chunks) if plen_chunks else np.zeros(0, np.int32)
    stats = {
        "n_tokens": n_tok,
        "n_response_tokens": n_resp,
        "n_truncated": n_trunc,
        "max_len": max_len,
        "example_text": ex_text,
    }
    return ids, offsets, plen, stats


__all__ = [
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
