"""Encoder-decoder (T5) backend against naive transformers loops, on a tiny random T5."""

from __future__ import annotations

import json
import random

import pytest

from negbench.backends.hf import HFBackend
from negbench.backends.registry import kind_of, open_backend
from negbench.backends.seq2seq import Seq2SeqBackend
from negbench.core.cache import ResponseCache
from negbench.core.engine import Engine, EngineConfig
from negbench.core.requests import (
    GenerationRequest,
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    NextTokenRequest,
    NextTokenResponse,
)

WORDS = "the cat dog not never is was a house river moon True False sentence negation".split()


@pytest.fixture(scope="module")
def t5(tiny_t5):
    return open_backend(tiny_t5, dtype="float32", device="cpu")


def workload(seed: int = 0, n_ctx: int = 8):
    """Questions with 2–4 choices (some one token, some several, some a prefix of another) and a
    True/False next-token request on the same context; an empty context; a trailing space."""
    rng = random.Random(seed)
    reqs = []
    for _ in range(n_ctx):
        ctx = "Negate the sentence.\n\n" + " ".join(
            rng.choice(WORDS) for _ in range(rng.randint(2, 30))
        )
        conts = {
            " " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5)))
            for _ in range(rng.randint(2, 4))
        }
        first = sorted(conts)[0]
        conts.add(first + " not")  # a prefix of another choice
        conts.add(" True")
        reqs += [LoglikelihoodRequest(ctx, c) for c in sorted(conts)]
        reqs.append(NextTokenRequest(ctx, ("True", "False")))
        reqs.append(NextTokenRequest(ctx, ("yes", "no"), " "))
    reqs.append(LoglikelihoodRequest("", "the cat"))  # empty context: prefix token
    reqs.append(LoglikelihoodRequest("Sentence: the cat ", "is"))  # trailing space moves over
    reqs.append(LoglikelihoodRequest("Sentence: the cat", " is"))  # … to the same encoder input
    return reqs


def naive(be, reqs):
    """Reference, one request at a time, tokenised here by lm-eval 0.4's seq2seq rules and scored
    by full transformers forwards: log-likelihood = model(input_ids=context, labels=continuation)
    (the model shifts the labels right after decoder_start_token_id); next-token = the official
    This-is-not-a-Dataset call, decoder_input_ids = [[pad]], logits of the last position."""
    import torch

    tok, model = be.tokenizer, be.model
    prefix = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
    out = []
    for r in reqs:
        with torch.inference_mode():
            if isinstance(r, NextTokenRequest):
                ctx = tok(r.context).input_ids
                logits = model(
                    input_ids=torch.tensor([ctx]),
                    decoder_input_ids=torch.tensor([[tok.pad_token_id]]),
                ).logits
                lp = torch.log_softmax(logits[0, -1].float(), -1)
                out.append(
                    {
                        lab: lp[
                            tok.encode(r.label_prefix + lab, add_special_tokens=False)[0]
                        ].item()
                        for lab in r.labels
                    }
                )
                continue
            ctx, cont = r.context, r.continuation
            n = len(ctx) - len(ctx.rstrip())
            if n:
                ctx, cont = ctx[:-n], ctx[-n:] + cont
            cont_enc = tok(cont, add_special_tokens=False).input_ids
            if ctx:
                ctx_enc = tok(ctx).input_ids
            elif cont_enc[0] == prefix:
                ctx_enc, cont_enc = cont_enc[:1], cont_enc[1:]
            else:
                ctx_enc = [prefix]
            logits = model(
                input_ids=torch.tensor([ctx_enc]), labels=torch.tensor([cont_enc])
            ).logits
            lp = torch.log_softmax(logits[0].float(), -1)
            out.append(
                (
                    sum(lp[i, t].item() for i, t in enumerate(cont_enc)),
                    all(lp[i].argmax().item() == t for i, t in enumerate(cont_enc)),
                )
            )
    return out


def max_delta(out, ref) -> float:
    worst = 0.0
    for o, r in zip(out, ref):
        if isinstance(o, LoglikelihoodResponse):
            assert o.is_greedy == r[1]
            worst = max(worst, abs(o.logprob - r[0]))
        else:
            assert isinstance(o, NextTokenResponse)
            worst = max(worst, *(abs(o.logprobs[k] - v) for k, v in r.items()))
    return worst


def test_resolution_picks_seq2seq_and_fingerprint_differs(t5, tiny_t5, tiny_llama):
    assert isinstance(t5, Seq2SeqBackend) and t5.level == "request"
    assert type(t5.model).__name__ == "T5ForConditionalGeneration"
    assert t5.decoder_start_token_id == t5.tokenizer.pad_token_id == 0
    assert t5.tokenizer("a cat").input_ids[-1] == t5.tokenizer.eos_token_id  # T5 appends </s>
    assert kind_of(tiny_t5).name == "transformers-seq2seq"
    assert kind_of(tiny_llama).name == "transformers-causal"
    causal = open_backend(tiny_llama, dtype="float32", device="cpu")
    assert type(causal) is HFBackend
    assert t5.fingerprint_info["backend"] == "hf-seq2seq" and t5.fingerprint != causal.fingerprint
    other = Seq2SeqBackend(tiny_t5, dtype="float32", device="cpu", add_bos=False)
    assert other.fingerprint != t5.fingerprint  # no </s> on contexts: new keys


def test_scores_match_naive_loop_any_batch_size(t5):
    reqs = workload()
    ref = naive(t5, reqs)
    worst = 0.0
    try:
        for bs, tokens in ((1, 32768), (3, 32768), (64, 32768), (64, 120)):
            t5.batch_size, t5.max_batch_tokens = bs, tokens
            out = Engine(t5, config=EngineConfig(progress=False)).run(reqs)
            worst = max(worst, max_delta(out, ref))
    finally:
        t5.batch_size, t5.max_batch_tokens = 32, 32768
    print(f"max |delta| vs naive loop: {worst:.2e}")
    assert worst < 1e-4


def test_encoder_runs_once_per_distinct_context(t5):
    """The 2–5 choices and the label requests of one question share one encoder pass (and one
    first decoder step); "ctx " + "is" and "ctx" + " is" have the same encoder input."""
    reqs = workload(1)
    distinct = {
        tuple(
            t5.tokenizer(
                r.context.rstrip() if isinstance(r, LoglikelihoodRequest) else r.context
            ).input_ids
        )
        if r.context
        else ("prefix",)
        for r in reqs
    }
    rows = []
    hook = t5.model.get_encoder().register_forward_hook(
        lambda mod, args, kwargs, out: rows.append(kwargs["input_ids"].shape[0]), with_kwargs=True
    )
    try:  # --batch-size reaches the backend
        Engine(t5, config=EngineConfig(progress=False, batch_size=4)).run(reqs)
    finally:
        hook.remove()
        Engine(t5, config=EngineConfig(progress=False))  # back to the default batch
    assert sum(rows) == len(distinct) < len(reqs)
    assert len(rows) == -(-len(distinct) // 4)  # batched, 4 contexts per call


def _hf_greedy(be, context: str, n: int, stops) -> tuple[str, int]:
    """transformers' generate(do_sample=False) on one prompt, cut at EOS and the stop strings."""
    import torch

    ids = torch.tensor([be.tokenizer(context).input_ids])
    with torch.inference_mode():
        g = be.model.generate(ids, max_new_tokens=n, do_sample=False)
    new = g[0, 1:].tolist()  # drop decoder_start_token_id
    eos = be.tokenizer.eos_token_id
    new = new[: new.index(eos)] if eos in new else new
    text = be.decode(new)
    for s in stops:
        text = text.split(s)[0]
    return text, len(new)


def test_generation_matches_hf_generate(t5):
    ctxs = [
        "Negate the sentence.",
        "The cat is",
        "A. B. C. D. Answer:",
        "Is the following statement",
        "She never arrived, but he did.",
        "A dog is",
    ]
    reqs = [GenerationRequest(c, ("\n", "."), 6) for c in ctxs]
    reqs += [GenerationRequest(c, (), 9) for c in ctxs[:3]]  # same prompts, other limits
    reqs += [GenerationRequest(c, ("year",), 4) for c in ctxs[3:]]
    rows = []
    hook = t5.model.get_encoder().register_forward_hook(
        lambda mod, args, kwargs, out: rows.append(kwargs["input_ids"].shape[0]), with_kwargs=True
    )
    try:
        outs = []
        for gbs in (1, 4, 16):
            eng = Engine(t5, config=EngineConfig(progress=False, gen_batch_size=gbs))
            assert t5.gen_batch_size == gbs
            outs.append(eng.run(reqs))
    finally:
        hook.remove()
        Engine(t5, config=EngineConfig(progress=False))
    assert sum(rows) == 3 * len(ctxs)  # one encoder pass per prompt
    assert (
        [o.__dict__ for o in outs[0]]
        == [o.__dict__ for o in outs[1]]
        == [o.__dict__ for o in outs[2]]
    )
    for r, o in zip(reqs, outs[0]):
        text, n = _hf_greedy(t5, r.context, r.max_tokens, r.stop)
        assert o.text == text
        assert o.n_tokens <= r.max_tokens
        if o.stopped_by is None:
            assert o.n_tokens == n == r.max_tokens
        assert not any(s in o.text for s in r.stop)
    assert any(o.stopped_by in ("\n", ".", "year") for o in outs[0])


def test_lm_eval_hflm_seq2seq_parity(t5):
    """lm-evaluation-harness 0.4 HFLM(backend="seq2seq") gives the same log-likelihoods."""
    lm_eval = pytest.importorskip("lm_eval")
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    reqs = [r for r in workload(2, n_ctx=3) if isinstance(r, LoglikelihoodRequest)]
    lm = HFLM(
        pretrained=t5.model, tokenizer=t5.tokenizer, backend="seq2seq", batch_size=4, device="cpu"
    )
    inst = [
        Instance(request_type="loglikelihood", doc={}, arguments=(r.context, r.continuation), idx=i)
        for i, r in enumerate(reqs)
    ]
    ref = lm.loglikelihood(inst, disable_tqdm=True)
    out = Engine(t5, config=EngineConfig(progress=False)).run(reqs)
    assert max(abs(o.logprob - ll) for o, (ll, _) in zip(out, ref)) < 1e-4
    assert [o.is_greedy for o in out] == [bool(g) for _, g in ref]
    assert lm_eval is not None


def test_cache_resumes_and_keys_are_seq2seq(t5, tmp_path):
    reqs = workload(3, n_ctx=2) + [GenerationRequest("The cat is", ("\n",), 4)]
    eng = Engine(t5, ResponseCache(tmp_path / "c.sqlite"), EngineConfig(progress=False))
    first = eng.run(reqs)
    again = Engine(t5, ResponseCache(tmp_path / "c.sqlite"), EngineConfig(progress=False))
    second = again.run(reqs)
    assert second.stats.model_calls == 0 and second.stats.cached == len(set(reqs))
    assert [a.__dict__ for a in first] == [a.__dict__ for a in second]


def test_cli_run_next_token_and_cloze(tiny_t5, tmp_path, capsys):
    from transformers import AutoTokenizer

    from negbench.cli import main

    tok = AutoTokenizer.from_pretrained(tiny_t5)
    out = tmp_path / "run"
    assert (
        main(
            [
                "run",
                "--model",
                tiny_t5,
                "--tasks",
                "truefalse-mini",
                "--modes",
                "next_token,cloze",
                "--output",
                str(out),
                "--quiet",
                "--cache",
                str(tmp_path / "c.sqlite"),
            ]
        )
        == 0
    )
    res = json.loads((out / "results.json").read_text())
    assert set(res["units"]) == {"truefalse-mini.next_token.0shot", "truefalse-mini.cloze.0shot"}
    assert res["model"]["details"]["backend"] == "hf-seq2seq"
    samples = [
        json.loads(l) for l in (out / "samples" / "truefalse-mini.next_token.0shot.jsonl").open()
    ]
    true_false = [tok.convert_tokens_to_ids("\u2581True"), tok.convert_tokens_to_ids("\u2581False")]
    assert samples and all(abs(sum(s["probs"]) - 1) < 1e-9 for s in samples)
    assert all(s["label_token_ids"] == true_false for s in samples)
    assert res["engine"]["computed"] == 3 * len(samples)  # one next-token + two cloze per item
    assert "truefalse-mini" in capsys.readouterr().out


def test_answer_provenance_reaches_samples_fresh_and_cached(tiny_t5, tmp_path):
    """A request-level backend's per-answer provenance (served model id, system fingerprint) is
    written into each sample record, both when answers arrive and when a rerun reads them from
    the cache (the answer_meta table)."""
    from negbench.evaluation.runner import RunConfig, evaluate

    class Served(Seq2SeqBackend):  # a real T5 that also says who answered
        def answer(self, jobs, done):
            def tagged(items):
                done(
                    [
                        (
                            k,
                            r,
                            resp,
                            {"served_model": "t5-tiny", "system_fingerprint": "fp_" + k[:4]},
                        )
                        for k, r, resp, _ in items
                    ]
                )

            return super().answer(jobs, tagged)

    from negbench.evaluation.store import RunStore

    be = Served(tiny_t5, dtype="float32", device="cpu", add_bos=False)
    cfg = RunConfig(model=tiny_t5, tasks=["truefalse-mini"], modes=["next_token", "cloze"], limit=4)
    stats = []
    for n in range(2):
        eng = Engine(be, ResponseCache(tmp_path / "c.sqlite"), EngineConfig(progress=False))
        store = RunStore(tmp_path / f"run{n}")
        evaluate(cfg, be, eng, store=store, log=lambda *_: None)
        stats.append(eng.stats)
        for unit in ("truefalse-mini.next_token.0shot", "truefalse-mini.cloze.0shot"):
            recs = store.read_samples(unit)
            assert recs and all(
                r["answered_by"] and r["answered_by"][0]["served_model"] == "t5-tiny" for r in recs
            ), unit
            # cloze: two requests (True/False) per sample, each its own fingerprint here
            assert all(len(r["answered_by"]) == (2 if "cloze" in unit else 1) for r in recs)
    assert stats[0].computed > 0 and stats[1].computed == 0 and stats[1].cached == stats[0].computed
