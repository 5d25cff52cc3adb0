"""Encoder-decoder models (T5, Flan-T5, BART, …) from transformers, answering whole requests.

The token trie of the causal path does not transpose to an encoder-decoder: the encoder is
bidirectional, so two prompts that share a prefix share no encoder state.  What they *do* share is
the context: the 2–4 choices of one question, or the True/False labels of one sentence, all have
the same encoder input.  So this backend is a request-level backend (``level = "request"``, see
:mod:`negbench.core.backend`): the engine deduplicates and caches, and the backend

* runs the encoder **once per distinct context** (contexts batched, right-padded, masked);
* runs the decoder's first step (``decoder_start_token_id``) once per context: it answers every
  next-token request and the first token of every continuation, and fills the cross-attention
  key/value cache;
* continues that cache (cross-attention keys/values never recomputed) for the remaining tokens of
  each continuation; continuations of one context that are prefixes of another (" no" and
  " no way") share one decoder row, as lm-eval's one-token-continuation cache does;
* generates greedily with the encoder run once per distinct prompt.

Semantics follow lm-evaluation-harness 0.4 ``HFLM`` with ``backend="seq2seq"`` (see
``docs/backends_seq2seq.md``): trailing context whitespace moves to the continuation; the context is
encoded with the tokenizer's special tokens (T5 appends ``</s>``) and left-truncated to
``max_length``; the continuation is encoded separately without special tokens (no ``</s>``) and
its tokens are the decoder labels; an empty context is replaced by the prefix token (BOS, else
EOS).  Next-token label probabilities are read at the first decoder step, as the
This-is-not-a-Dataset code does for T5.
"""

from __future__ import annotations

import hashlib
import json
import logging

from negbench.backends.hf import HFBackend
from negbench.backends.tokenizing import as_list
from negbench.backends.tokenizing import tokenizer_fingerprint
from negbench.errors import ModelError
from negbench.backends.sources import resolve, source_fingerprint
from negbench.core.requests import (
    GenerationRequest,
    GenerationResponse,
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    NextTokenRequest,
    NextTokenResponse,
    Request,
    Response,
)

log = logging.getLogger("negbench")

SEQ2SEQ_NUMERICS_VERSION = "1"  # bump when a change alters scores (cache keys change with it)
TOKENIZER_INFINITY = 1000000000000000019884624838656  # transformers' "no model_max_length"
_GEN_PROCESSORS = (
    "repetition_penalty",
    "no_repeat_ngram_size",
    "forced_bos_token_id",
    "forced_eos_token_id",
    "min_length",
    "min_new_tokens",
    "bad_words_ids",
    "suppress_tokens",
    "begin_suppress_tokens",
    "encoder_no_repeat_ngram_size",
)


class Seq2SeqBackend(HFBackend):
    """An ``AutoModelForSeq2SeqLM`` answering log-likelihood, next-token and generation requests.

    :func:`negbench.backends.registry.open_backend` opens one of these when the model's config is
    encoder-decoder, so ``negbench run --model PATH`` needs nothing else.  Batching: ``batch_size`` contexts (or
    decoder rows) per model call, at most ``max_batch_tokens`` padded tokens; ``gen_batch_size``
    prompts per generation batch.  Results do not depend on them.
    """

    name = "hf-seq2seq"
    level = "request"
    tokenizes = False  # the engine sends requests; tokenisation is lm-eval's seq2seq rule
    _auto_model = "AutoModelForSeq2SeqLM"

    def __init__(
        self,
        model: str,
        *,
        dtype: str = "auto",
        device: str = "auto",
        adapter: str | None = None,
        add_bos: str | bool = "auto",
        max_length: int | None = None,
        attn_implementation: str = "sdpa",
        revision: str | None = None,
        threads: int | None = None,
        batch_size: int = 32,
        gen_batch_size: int = 16,
        max_batch_tokens: int = 32768,
    ):
        self._init_runtime(device, dtype, threads)
        self.source = resolve(model)
        if self.source.gguf_file:
            raise ModelError(
                f"'{model}' is a GGUF file; encoder-decoder models load from a transformers folder",
                where="--model",
                fix="point --model at the model's transformers folder",
            )
        adapter_fp, _ = self._load_model(adapter, attn_implementation, revision)
        cfg = self.model.config
        self.model_type = getattr(cfg, "model_type", "")
        # lm-eval: tok_encode(context) uses the tokenizer's default special tokens (T5: a final
        # </s>); its add_bos_token, when given, becomes add_special_tokens.  ``add_bos`` plays
        # that role here: "auto" = the tokenizer's default.
        self.add_bos = True if add_bos == "auto" else bool(add_bos)
        self.max_length = max_length or _resolve_max_length(cfg, self.tokenizer)
        tok = self.tokenizer
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        gen = getattr(self.model, "generation_config", None)
        start = _first(
            getattr(gen, "decoder_start_token_id", None),
            getattr(cfg, "decoder_start_token_id", None),
            getattr(gen, "bos_token_id", None),
            tok.pad_token_id,
        )
        self.decoder_start_token_id = int(start)
        self.eos_ids = set(as_list(getattr(gen, "eos_token_id", None)) + as_list(tok.eos_token_id))
        ignored = [
            k
            for k in _GEN_PROCESSORS
            if gen is not None and getattr(gen, k, None) not in (None, 0, 1.0, [], ())
        ]
        if ignored:
            log.warning(
                "greedy generation ignores these generation_config settings of %s: %s",
                model,
                ", ".join(ignored),
            )
        self.batch_size = batch_size
        self.gen_batch_size = gen_batch_size
        self.max_batch_tokens = max_batch_tokens
        self.encoded_contexts = 0  # contexts run through the encoder (statistics, tests)
        self.model_calls = 0
        self._tokens = self._naive = 0  # tokens forwarded / a one-request-at-a-time loop's
        fp = {
            "backend": "hf-seq2seq",
            "numerics": SEQ2SEQ_NUMERICS_VERSION,
            "weights": source_fingerprint(self.source, getattr(cfg, "_commit_hash", None)),
            "adapter": adapter_fp,
            "dtype": dtype,
            "special_tokens": self.add_bos,
            "max_length": self.max_length,
            "decoder_start": self.decoder_start_token_id,
            "tokenizer": tokenizer_fingerprint(self.tokenizer),
        }
        self.fingerprint_info = fp
        self.fingerprint = hashlib.sha256(json.dumps(fp, sort_keys=True).encode()).hexdigest()[:32]

    # -- tokenisation (lm-eval 0.4 HFLM, backend="seq2seq") -------------------------------------
    def encode_batch(
        self, texts: list[str], add_special_tokens: bool | None = None
    ) -> list[list[int]]:
        if not texts:
            return []
        special = self.add_bos if add_special_tokens is None else add_special_tokens
        return self.tokenizer(texts, add_special_tokens=special)["input_ids"]

    def _tokenize_scored(self, reqs: list[Request]):
        """(encoder input, continuation ids | None, labels | None) per request."""
        L = self.max_length
        out: list[tuple[list[int], list[int] | None, list[tuple[str, int]] | None] | None] = [
            None
        ] * len(reqs)
        ll = [(i, r) for i, r in enumerate(reqs) if isinstance(r, LoglikelihoodRequest)]
        pairs = []
        for _, r in ll:  # lm-eval _encode_pair: trailing space moves over
            ctx, cont = r.context, r.continuation
            n_sp = len(ctx) - len(ctx.rstrip())
            if n_sp:
                ctx, cont = ctx[:-n_sp], ctx[-n_sp:] + cont
            pairs.append((ctx, cont))
        ctx_enc = iter(self.encode_batch([c for c, _ in pairs if c]))
        cont_enc = self.encode_batch([k for _, k in pairs], add_special_tokens=False)
        for (i, r), (c, _), ce in zip(ll, pairs, cont_enc):
            if c:
                enc = next(ctx_enc)
            elif ce[:1] == [self.prefix_token_id] and len(ce) > 1:  # lm-eval, empty context
                enc, ce = ce[:1], ce[1:]
            else:
                enc = [self.prefix_token_id]
            if not ce:
                raise ValueError(f"empty continuation after tokenisation: {r.continuation!r}")
            out[i] = ((enc or [self.prefix_token_id])[-L:], ce[-L:], None)
        nt = [(i, r) for i, r in enumerate(reqs) if isinstance(r, NextTokenRequest)]
        nt_enc = iter(self.encode_batch([r.context for _, r in nt if r.context]))
        label_ids: dict[tuple[str, str], int] = {}
        for i, q in nt:
            enc = next(nt_enc) if q.context else [self.prefix_token_id]
            labels = []
            for lab in q.labels:
                if (q.label_prefix, lab) not in label_ids:
                    ids = self.encode(q.label_prefix + lab, add_special_tokens=False)
                    if not ids:
                        raise ValueError(f"label {lab!r} encodes to no token")
                    label_ids[(q.label_prefix, lab)] = ids[0]
                labels.append((lab, label_ids[(q.label_prefix, lab)]))
            out[i] = ((enc or [self.prefix_token_id])[-L:], None, labels)
        return out

    # -- request level -------------------------------------------------------------------------
    def check_kinds(self, kinds: set[str]) -> None:
        """Every request kind is answered (log-likelihood, next-token, generation)."""

    def answer(self, jobs: list, done) -> dict:
        """Answer :class:`negbench.core.backend.RequestJob` s; ``done`` gets
        ``(key, request, response, None)`` after every model batch.  Returns statistics."""
        calls0, self._tokens, self._naive = self.model_calls, 0, 0
        scored = [j for j in jobs if not isinstance(j.request, GenerationRequest)]
        gens = [j for j in jobs if isinstance(j.request, GenerationRequest)]
        if scored:
            self._score(
                [j.request for j in scored],
                lambda items: done(
                    [(scored[i].key, scored[i].request, resp, None) for i, resp in items]
                ),
            )
        if gens:
            self._generate(
                [j.request for j in gens],
                lambda items: done(
                    [(gens[i].key, gens[i].request, resp, None) for i, resp in items]
                ),
            )
        return {
            "calls": self.model_calls - calls0,
            "retries": 0,
            "prompt_tokens": self._tokens,
            "naive_tokens": self._naive,
        }

    # -- scoring -------------------------------------------------------------------------------
    def _score(self, reqs: list[Request], done) -> None:
        if not reqs:
            return
        toks = self._tokenize_scored(reqs)
        self._naive += sum(len(e) + (len(c) if c else 1) for e, c, _ in toks)
        ctx_index: dict[tuple[int, ...], int] = {}
        ctxs: list[list[int]] = []
        members: list[list[int]] = []  # context -> request indices
        for i, (enc, _, _) in enumerate(toks):
            c = ctx_index.setdefault(tuple(enc), len(ctxs))
            if c == len(ctxs):
                ctxs.append(enc)
                members.append([])
            members[c].append(i)
        order = sorted(range(len(ctxs)), key=lambda c: (-len(ctxs[c]), ctxs[c]))
        for batch in _cut(order, lambda c: len(ctxs[c]), self.batch_size, self.max_batch_tokens):
            enc_out, mask = self._encode([ctxs[c] for c in batch])
            # step 0 answers next-token requests and the first token of every continuation
            asks0: list[tuple[int, int]] = []  # (position in batch, token)
            for b, c in enumerate(batch):
                for i in members[c]:
                    _, cont, labels = toks[i]
                    asks0 += [(b, t) for _, t in labels] if labels is not None else [(b, cont[0])]
            lp0, am0, cache = self._first_step(enc_out, mask, asks0)
            first = dict(zip(asks0, lp0))
            # decoder rows: per context, the distinct continuations[:-1], minus those that are a
            # prefix of another one (a longer row scores them too: the decoder is causal)
            rows: list[tuple[int, list[int]]] = []  # (position in batch, decoder tokens)
            row_of: dict[tuple[int, tuple[int, ...]], int] = {}
            for b, c in enumerate(batch):
                heads = sorted(
                    {
                        tuple(toks[i][1][:-1])
                        for i in members[c]
                        if toks[i][1] is not None and len(toks[i][1]) > 1
                    }
                )
                for k, h in enumerate(heads):
                    if k + 1 < len(heads) and heads[k + 1][: len(h)] == h:
                        continue
                    rows.append((b, list(h)))
                    for n in range(1, len(h) + 1):
                        row_of[(b, h[:n])] = len(rows) - 1
            # each continuation c (m tokens) reads its row at positions 0..m-2: the row's own next
            # tokens up to m-3, and its own last token at m-2
            last: dict[int, list[tuple[int, int, int]]] = {}  # row -> (request, position, token)
            for b, c in enumerate(batch):
                for i in members[c]:
                    cont = toks[i][1]
                    if cont is not None and len(cont) > 1:
                        r = row_of[(b, tuple(cont[:-1]))]
                        last.setdefault(r, []).append((i, len(cont) - 2, cont[-1]))
            res: dict[int, tuple[float, bool]] = {}  # request -> (sum over rows, greedy)
            S = enc_out.last_hidden_state.shape[1]
            row_order = sorted(range(len(rows)), key=lambda r: -len(rows[r][1]))
            for rb in _cut(
                row_order, lambda r: S + len(rows[r][1]), self.batch_size, self.max_batch_tokens
            ):
                asks = [(j, p, t) for j, r in enumerate(rb) for _, p, t in last[r]]
                own_cum, own_bad, ask_lp, ask_ok = self._continue(
                    [rows[r] for r in rb], enc_out, mask, cache, asks
                )
                k = 0
                for j, r in enumerate(rb):
                    for i, p, _ in last[r]:
                        prior = own_cum[j][p - 1] if p else 0.0
                        bad = own_bad[j][p - 1] if p else 0
                        res[i] = (prior + ask_lp[k], bad == 0 and ask_ok[k])
                        k += 1
            answers: list[tuple[int, Response]] = []
            for b, c in enumerate(batch):
                for i in members[c]:
                    _, cont, labels = toks[i]
                    if labels is not None:
                        answers.append(
                            (
                                i,
                                NextTokenResponse(
                                    {lab: first[(b, t)] for lab, t in labels},
                                    {lab: t for lab, t in labels},
                                ),
                            )
                        )
                        continue
                    total, greedy = first[(b, cont[0])], am0[b] == cont[0]
                    if len(cont) > 1:
                        more, ok = res[i]
                        total, greedy = total + more, greedy and ok
                    answers.append((i, LoglikelihoodResponse(total, len(cont), greedy)))
            done(answers)

    def _encode(self, ctxs: list[list[int]]):
        """Run the encoder on right-padded contexts; (encoder outputs, attention mask)."""
        torch = self.torch
        S = max(len(c) for c in ctxs)
        ids = torch.full((len(ctxs), S), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(ctxs), S), dtype=torch.long)
        for b, c in enumerate(ctxs):
            ids[b, : len(c)] = torch.tensor(c)
            mask[b, : len(c)] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        with torch.inference_mode():
            out = self.model.get_encoder()(input_ids=ids, attention_mask=mask, return_dict=True)
        self.model_calls += 1
        self.encoded_contexts += len(ctxs)
        self._tokens += sum(len(c) for c in ctxs)
        return out, mask

    def _first_step(self, enc_out, mask, asks: list[tuple[int, int]]):
        """Decoder step 0 (input: decoder_start_token_id) for every context of the batch: the
        log-probabilities asked for ((context, token) pairs), the argmax per context, and the
        key/value cache (step 0's self-attention, cross-attention over the encoder outputs) that
        the continuations resume."""
        torch = self.torch
        from transformers import DynamicCache, EncoderDecoderCache

        C = mask.shape[0]
        start = torch.full(
            (C, 1), self.decoder_start_token_id, dtype=torch.long, device=self.device
        )
        with torch.inference_mode():
            out = self.model(
                encoder_outputs=enc_out,
                attention_mask=mask,
                decoder_input_ids=start,
                past_key_values=EncoderDecoderCache(DynamicCache(), DynamicCache()),
                use_cache=True,
                return_dict=True,
            )
            lp = torch.log_softmax(out.logits[:, -1].float(), dim=-1)
            am = lp.argmax(-1).tolist()
            got = (
                lp[
                    torch.tensor([b for b, _ in asks], device=self.device),
                    torch.tensor([t for _, t in asks], device=self.device),
                ].tolist()
                if asks
                else []
            )
        self.model_calls += 1
        self._tokens += C
        return got, am, out.past_key_values

    def _continue(
        self,
        rows: list[tuple[int, list[int]]],
        enc_out,
        mask,
        cache,
        asks: list[tuple[int, int, int]],
    ):
        """Decoder rows resuming step 0 of their context (cross-attention keys/values reused):
        rows are (position in the batch, tokens after the start token), right-padded.  Returns,
        per row, the running sum of log P(row's own next token) and the running count of
        positions whose argmax is not that token; and for each ask (row, position, token) its
        log-probability and whether it is the argmax."""
        torch = self.torch
        from transformers import DynamicCache, EncoderDecoderCache
        from transformers.modeling_outputs import BaseModelOutput

        dev = self.device
        idx = torch.tensor([b for b, _ in rows], device=dev)
        R, T = len(rows), max(len(t) for _, t in rows)
        ids = torch.full((R, T), self.tokenizer.pad_token_id, dtype=torch.long)
        for j, (_, t) in enumerate(rows):
            ids[j, : len(t)] = torch.tensor(t)
        ids = ids.to(dev)
        sub = EncoderDecoderCache(
            DynamicCache(
                ddp_cache_data=[
                    (l.keys[idx], l.values[idx]) for l in cache.self_attention_cache.layers
                ]
            ),
            DynamicCache(
                ddp_cache_data=[
                    (l.keys[idx], l.values[idx]) for l in cache.cross_attention_cache.layers
                ]
            ),
        )
        with torch.inference_mode():
            out = self.model(
                encoder_outputs=BaseModelOutput(last_hidden_state=enc_out.last_hidden_state[idx]),
                attention_mask=mask[idx],
                decoder_input_ids=ids,
                past_key_values=sub,
                use_cache=True,
                return_dict=True,
            )
            lp = torch.log_softmax(out.logits.float(), dim=-1)  # [R, T, V]
            am = lp.argmax(-1)
            nxt = torch.cat([ids[:, 1:], ids[:, :1]], dim=1)  # own next token (last: any)
            own = lp.gather(2, nxt[:, :, None])[:, :, 0].double().cumsum(1).tolist()
            bad = (am != nxt).long().cumsum(1).tolist()
            j_, p_, t_ = (torch.tensor(x, device=dev) for x in zip(*asks))
            ask_lp = lp[j_, p_, t_].tolist()
            ask_ok = (am[j_, p_] == t_).tolist()
        self.model_calls += 1
        self._tokens += sum(len(t) for _, t in rows)
        return own, bad, ask_lp, ask_ok

    # -- generation ----------------------------------------------------------------------------
    def _generate(self, reqs: list[GenerationRequest], done) -> None:
        """Greedy decoding (``generate(do_sample=False)``): the encoder once per distinct prompt,
        the decoder step by step from ``decoder_start_token_id`` with a key/value cache; EOS ends,
        stop strings are applied to the decoded text (lm-eval: ``text.split(stop)[0]``)."""
        if not reqs:
            return
        torch = self.torch
        from transformers import DynamicCache, EncoderDecoderCache

        enc = self.encode_batch([r.context for r in reqs])
        enc = [(e or [self.prefix_token_id])[-self.max_length :] for e in enc]
        self._naive += sum(len(e) for e in enc)
        ctx_index: dict[tuple[int, ...], int] = {}
        ctxs: list[list[int]] = []
        members: list[list[int]] = []
        for i, e in enumerate(enc):
            c = ctx_index.setdefault(tuple(e), len(ctxs))
            if c == len(ctxs):
                ctxs.append(e)
                members.append([])
            members[c].append(i)
        order = sorted(range(len(ctxs)), key=lambda c: (-len(ctxs[c]), ctxs[c]))
        for batch in _cut(
            order, lambda c: len(ctxs[c]), self.gen_batch_size, self.max_batch_tokens
        ):
            enc_out, mask = self._encode([ctxs[c] for c in batch])
            B = len(batch)
            jobs = [(b, i) for b, c in enumerate(batch) for i in members[c]]
            limit = {i: max(0, reqs[i].max_tokens) for _, i in jobs}
            stops = {i: [s for s in reqs[i].stop if s] for _, i in jobs}
            new: list[list[int]] = [[] for _ in range(B)]
            end: dict[int, int] = {}  # request -> tokens it keeps
            why: dict[int, str | None] = {}
            for _, i in jobs:
                if limit[i] == 0:
                    end[i], why[i] = 0, None
            steps = max(limit.values())
            x = torch.full(
                (B, 1), self.decoder_start_token_id, dtype=torch.long, device=self.device
            )
            cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
            with torch.inference_mode():
                for _ in range(steps):
                    if len(end) == len(jobs):
                        break
                    out = self.model(
                        encoder_outputs=enc_out,
                        attention_mask=mask,
                        decoder_input_ids=x,
                        past_key_values=cache,
                        use_cache=True,
                        return_dict=True,
                    )
                    self.model_calls += 1
                    self._tokens += B
                    cache = out.past_key_values
                    nxt = out.logits[:, -1].float().argmax(-1).tolist()
                    for b, i in jobs:
                        if i in end:
                            continue
                        if nxt[b] in self.eos_ids:
                            end[i], why[i] = len(new[b]), "eos"
                    for b in range(B):
                        if any(i not in end for bb, i in jobs if bb == b):
                            new[b].append(nxt[b])
                    for b, i in jobs:
                        if i in end:
                            continue
                        if stops[i]:
                            text = self.decode(new[b])
                            hit = [s for s in stops[i] if s in text]
                            if hit:
                                end[i], why[i] = len(new[b]), min(hit, key=text.index)
                                continue
                        if len(new[b]) >= limit[i]:
                            end[i], why[i] = len(new[b]), None
                    x = torch.tensor([[t] for t in nxt], dtype=torch.long, device=self.device)
            answers = []
            for b, i in jobs:
                toks = new[b][: end.get(i, len(new[b]))]
                text, stopped = self.decode(toks), why.get(i)
                for s in stops[i]:  # lm-eval: s = s.split(term)[0] per stop
                    if s in text:
                        text = text.split(s)[0]
                        stopped = stopped or s
                answers.append((i, GenerationResponse(text, len(toks), stopped)))
            done(answers)

    # -- the token-level primitives do not apply ------------------------------------------------
    def forward_rows(self, *args, **kwargs):
        raise NotImplementedError("encoder-decoder models answer whole requests (level 'request')")

    def prefix_kv(self, *args, **kwargs):
        raise NotImplementedError("encoder-decoder models answer whole requests (level 'request')")

    def generate(self, *args, **kwargs):
        raise NotImplementedError("encoder-decoder models answer whole requests (level 'request')")


def _resolve_max_length(config, tokenizer, default: int = 2048) -> int:
    """lm-eval 0.4.13 ``resolve_max_length``: n_positions / max_position_embeddings / n_ctx of the
    (text) config, else the tokenizer's ``model_max_length`` (512 for T5 and Flan-T5), else 2048."""
    cfg = getattr(config, "text_config", None) or config
    for attr in ("n_positions", "max_position_embeddings", "n_ctx"):
        v = getattr(cfg, attr, None)
        if v is not None:
            return int(v)
    m = getattr(tokenizer, "model_max_length", None)
    if m is not None and m != TOKENIZER_INFINITY and m < TOKENIZER_INFINITY // 2:
        return int(m)
    return default


def _first(*xs):
    for x in xs:
        if x is not None:
            return x[0] if isinstance(x, (list, tuple)) else x
    raise ModelError(
        "the model has no decoder_start_token_id, BOS or pad token",
        where="--model",
        fix="set decoder_start_token_id in its config.json",
    )


def _cut(order: list[int], size, max_rows: int, max_tokens: int):
    """Items (sorted longest first) cut into batches of at most ``max_rows`` items and
    ``max_tokens`` padded tokens (rows × the first, longest item)."""
    batch: list[int] = []
    for i in order:
        width = size(batch[0]) if batch else size(i)
        if batch and (len(batch) >= max_rows or (len(batch) + 1) * width > max_tokens):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch
