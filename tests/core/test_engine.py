"""The engine against a naive one-request-at-a-time computation, on tiny random models."""

from __future__ import annotations

import random

import pytest

from conftest import naive_scores
from negbench.backends.hf import HFBackend
from negbench.core.cache import ResponseCache
from negbench.core.engine import Engine, EngineConfig
from negbench.core.requests import (
    GenerationRequest,
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    NextTokenRequest,
)

WORDS = "the cat dog not never is was a house river moon True False sentence negation".split()


def workload(seed: int = 0, n_ctx: int = 10, shared: str = "Negate the sentence.\n\n"):
    rng = random.Random(seed)
    reqs = []
    for _ in range(n_ctx):
        ctx = shared + " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 30)))
        for _ in range(4):
            reqs.append(
                LoglikelihoodRequest(
                    ctx, " " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 5)))
                )
            )
        reqs.append(NextTokenRequest(ctx, ("True", "False")))
    reqs.append(LoglikelihoodRequest("", "the cat"))  # empty context: prefix token
    reqs.append(LoglikelihoodRequest("Sentence: the cat ", "is"))  # trailing space moves over
    return reqs


def check(out, ref, tol=1e-4):
    for o, r in zip(out, ref):
        if isinstance(o, LoglikelihoodResponse):
            assert abs(o.logprob - r[0]) < tol
            assert o.is_greedy == r[1]
        else:
            for lab, v in r.items():
                assert abs(o.logprobs[lab] - v) < tol


@pytest.mark.parametrize("model_fixture", ["tiny_llama", "tiny_gemma"])
def test_engine_matches_naive_any_batching(model_fixture, request):
    be = HFBackend(request.getfixturevalue(model_fixture), dtype="float32", device="cpu")
    reqs = workload()
    ref = naive_scores(be, reqs)
    for share in (True, False):
        head_positions = set()  # the output head runs at the scored positions only
        for bs in (1, 7, 32):
            for row in (2048, 24):  # 24 forces chains (KV prefixes) and many rows
                eng = Engine(
                    be,
                    config=EngineConfig(
                        batch_size=bs, share_prefix=share, max_row_tokens=row, progress=False
                    ),
                )
                out = eng.run(reqs)
                check(out, ref)
                st = out.stats
                assert st.forwarded_tokens == st.unique_tokens
                if share:
                    assert st.unique_tokens < st.naive_tokens
                assert 0 < st.scored_positions < st.forwarded_tokens
                head_positions.add(st.scored_positions)
        assert len(head_positions) == 1, head_positions  # however the rows are packed


def test_sliding_window_is_applied(tiny_gemma):
    """Gemma-style sliding layers: contexts far longer than the window (8) still match."""
    be = HFBackend(tiny_gemma, dtype="float32", device="cpu")
    assert be.sliding_window == 8
    ctx = " ".join(WORDS * 3)
    reqs = [LoglikelihoodRequest(ctx, " the cat is not"), LoglikelihoodRequest(ctx, " a dog")]
    ref = naive_scores(be, reqs)
    check(Engine(be, config=EngineConfig(max_row_tokens=16, progress=False)).run(reqs), ref)


def test_identical_requests_run_once_and_cache_resumes(tiny_llama, tmp_path):
    be = HFBackend(tiny_llama, dtype="float32", device="cpu")
    reqs = workload(1, n_ctx=3)
    doubled = reqs + list(reqs)
    cache = ResponseCache(tmp_path / "c.sqlite")
    eng = Engine(be, cache, EngineConfig(progress=False))
    first = eng.run(doubled)
    assert first.stats.unique == len(set(reqs)) and first.stats.computed == len(set(reqs))
    assert [a.__dict__ for a in first[: len(reqs)]] == [a.__dict__ for a in first[len(reqs) :]]
    eng2 = Engine(be, ResponseCache(tmp_path / "c.sqlite"), EngineConfig(progress=False))
    second = eng2.run(reqs)
    assert second.stats.model_calls == 0 and second.stats.cached == len(set(reqs))
    assert [a.__dict__ for a in second] == [a.__dict__ for a in first[: len(reqs)]]


def _hf_greedy(be, context: str, n: int, stops) -> str:
    """transformers' own greedy generate on one full prompt, cut at EOS and the stop strings."""
    import torch

    ids = torch.tensor([be.encode(context)])
    with torch.inference_mode():
        g = be.model.generate(
            ids, max_new_tokens=n, do_sample=False, pad_token_id=be.tokenizer.pad_token_id
        )
    new = g[0, ids.shape[1] :].tolist()
    eos = be.tokenizer.eos_token_id
    text = be.decode(new[: new.index(eos)] if eos in new else new)
    for s in stops:
        text = text.split(s)[0]
    return text


def test_generation_stops_and_matches_unbatched(tiny_llama):
    be = HFBackend(tiny_llama, dtype="float32", device="cpu")
    ctxs = [
        "Negate the sentence.",
        "The cat is",
        "A. B. C. D. Answer:",
        "Is the following statement",
    ]
    reqs = [GenerationRequest(c, ("\n", "."), 6) for c in ctxs]
    out = Engine(be, config=EngineConfig(gen_batch_size=4, progress=False)).run(reqs)
    for c, o in zip(ctxs, out):
        assert o.text == _hf_greedy(be, c, 6, ("\n", "."))
        assert "\n" not in o.text and "." not in o.text
        assert o.n_tokens <= 6


def test_encode_pair_follows_lm_eval(tiny_llama):
    """Trailing context whitespace moves to the continuation; continuation = whole[len(ctx):]."""
    be = HFBackend(tiny_llama, dtype="float32", device="cpu")
    eng = Engine(be)
    s = eng._prepare([("k", LoglikelihoodRequest("Answer: ", "True"))])[0]
    whole = be.encode("Answer: True")
    ctx = be.encode("Answer:")
    assert s.inputs == whole[:-1]
    assert [t for _, t in s.asks] == whole[len(ctx) :]


@pytest.mark.parametrize("model", ["tiny_llama", "tiny_gemma"])
def test_generation_with_shared_prefix_matches_hf_generate(model, request):
    """A long shared prompt prefix (a few-shot block) is forwarded once and its KV cache continued;
    the outputs equal transformers' own greedy generate on each full prompt, also for Gemma-3's
    sliding-window layers (window 8, prompts far longer)."""
    be = HFBackend(request.getfixturevalue(model), dtype="float32", device="cpu")
    block = "Sentence: the dog barks. Negation: the dog does not bark.\n\n" * 3
    ctxs = [
        block + q
        for q in (
            "Sentence: it rains. Negation:",
            "Sentence: we won. Negation:",
            "Sentence: she has seen the film twice. Negation:",
        )
    ]
    ctxs.append("Unrelated short prompt:")
    reqs = [GenerationRequest(c, ("\n\n",), 7) for c in ctxs]
    eng = Engine(be, config=EngineConfig(gen_batch_size=2, gen_prefix_min=8, progress=False))
    out = eng.run(reqs)
    assert out.stats.forwarded_tokens < out.stats.naive_tokens  # the block ran once
    plain = Engine(be, config=EngineConfig(share_prefix=False, progress=False)).run(reqs)
    assert [o.__dict__ for o in out] == [p.__dict__ for p in plain]
    for c, o in zip(ctxs, out):
        assert o.text == _hf_greedy(be, c, 7, ("\n\n",))


def test_prefix_clusters_keep_a_token_after_the_prefix():
    from negbench.core.engine import _prefix_clusters

    enc = [[1, 2, 3, 4, 5], [1, 2, 3, 4, 6], [1, 2, 3, 4], [9, 9], [1, 2, 3, 4, 5, 7]]
    clusters = _prefix_clusters(enc, 3)
    shared = {tuple(sorted(ix)): n for ix, n in clusters}
    assert shared[(0, 1, 2, 4)] == 3 and shared[(3,)] == 0, clusters
    assert all(len(enc[i]) > n for ix, n in clusters for i in ix)
    assert _prefix_clusters(enc, 0) == [([2, 0, 4, 1, 3], 0)]


def test_prefix_clusters_one_per_fewshot_block_and_rest_share_the_description():
    """Zero-shot prompts (description + question) and few-shot prompts (description + block +
    question) in one run: each block becomes its own cluster; the rest share the description."""
    from negbench.core.engine import _prefix_clusters

    rnd = random.Random(0)
    desc = list(range(100))
    enc = [desc + [rnd.randrange(5000, 6000) for _ in range(30)] for _ in range(40)]
    for k in range(3):
        enc += [
            desc + [1000 + k] * 300 + [rnd.randrange(5000, 6000) for _ in range(30)]
            for _ in range(10)
        ]
    clusters = sorted((len(ix), n) for ix, n in _prefix_clusters(enc, 64))
    assert clusters == [(10, 400), (10, 400), (10, 400), (40, 100)]


def test_progress_counts_only_requests_still_to_compute(tiny_llama, tmp_path):
    """Cached and duplicate requests leave the bar's total instead of counting as progress, so
    its rate and ETA describe the work still to do."""
    import io

    from negbench.core.engine import progress_bar

    be = HFBackend(tiny_llama)
    reqs = workload(3)
    cache = ResponseCache(tmp_path / "c.sqlite")
    Engine(be, cache, EngineConfig(progress=False)).run(reqs[: len(reqs) // 2])
    bar = progress_bar(len(reqs) * 2, "scoring", True)
    bar.fp = io.StringIO()  # the bar draws into a buffer, not stderr
    eng = Engine(be, cache, EngineConfig(progress=False))
    st = eng.run(reqs + reqs, bar=bar).stats  # half cached, every request twice
    assert st.cached > 0 and st.computed > 0
    computed_occurrences = 2 * st.computed
    assert bar.total == bar.n == computed_occurrences
    assert bar.skipped == len(reqs) * 2 - computed_occurrences
    assert f"{bar.skipped} cached" in bar.postfix


@pytest.mark.parametrize("softcap", [None, 30.0])
def test_tiled_head_matches_float64_log_softmax(softcap):
    """The output head in (rows × vocabulary) tiles with an online log-sum-exp: the same
    log-probabilities and argmax as a float64 log-softmax, whatever the tile size, for a plain
    linear head and for a wrapped one (applied whole, in row tiles)."""
    import torch
    from negbench.backends.hf import head_logprobs

    torch.manual_seed(0)
    V, d, n = 5003, 32, 70  # a vocabulary that no tile size divides
    head = torch.nn.Linear(d, V, bias=True)
    torch.nn.init.normal_(head.weight, std=0.5)
    hidden = torch.randn(n, d)
    targets = [sorted({int(x) for x in torch.randint(0, V, (1 + i % 3,))}) for i in range(n)]
    with torch.inference_mode():
        logits = head(hidden).double()
        if softcap:
            logits = torch.tanh(logits / softcap) * softcap
        ref = torch.log_softmax(logits, -1)

        class Wrapped(torch.nn.Module):  # not a plain nn.Linear: e.g. a LoRA-wrapped head
            def __init__(self):
                super().__init__()
                self.inner = head

            def forward(self, x):
                return self.inner(x)

        for h, budget, tile in (
            (head, 1 << 24, 1 << 20),
            (head, 1 << 24, 1),
            (head, 4096, 1 << 20),
            (head, 5000, 1 << 20),
            (Wrapped(), 6000, 1 << 20),
        ):
            got = head_logprobs(torch, hidden, h, targets, softcap, budget=budget, tile=tile)
            for i, (ts, r) in enumerate(zip(targets, got)):
                assert r.argmax == int(ref[i].argmax())
                for t, lp in zip(ts, r.logprobs):
                    assert abs(lp - float(ref[i, t])) < 2e-5


def test_row_length_follows_what_is_shared():
    """The planner's row length comes from the trie, not from request lengths: many short
    branches after a long shared instruction pack into short rows (attention grows with row
    length × prefix), long unshared passages keep long rows, and a trie that fits one row is
    planned once.  Each plan still forwards every needed token exactly once."""
    from negbench.core.engine import ROW_LENGTHS
    from negbench.core.trie import ChainStep, RowsStep, TokenTrie

    class Sized:  # the engine asks its backend only for sizes
        batch_tokens = 2048
        call_tokens = 64  # a CPU's (HFBackend.call_tokens)

    eng = Engine(Sized(), config=EngineConfig(progress=False))
    rng = random.Random(0)

    def plan_of(requests):
        trie = TokenTrie()
        for r in requests:
            path = trie.insert(r)
            trie.ask(path[-1], 0)
            for i in range(1, len(r)):
                trie.ask(path[i - 1], r[i])
        return eng._plan(trie), trie

    def row_width(plan):
        return max(len(r.nodes) for s in plan.steps if isinstance(s, RowsStep) for r in s.rows)

    instruction = [rng.randrange(1000) for _ in range(220)]
    items = []
    for _ in range(40):  # KoNUBench-like: item context, then 4 options
        ctx = [rng.randrange(1000) for _ in range(50)]
        items += [instruction + ctx + [rng.randrange(1000) for _ in range(35)] for _ in range(4)]
    plan, trie = plan_of(items)
    assert isinstance(plan.steps[0], ChainStep) and len(plan.steps[0].row.nodes) == 220
    assert row_width(plan) <= 512  # was 2048 under the request-length rule
    assert plan.forwarded_tokens == sum(trie.needed())

    passages = [[rng.randrange(1000) for _ in range(1500)] for _ in range(6)]
    plan, trie = plan_of(passages)  # a CPU: cut into KV-chained pieces,
    assert plan.forwarded_tokens == sum(trie.needed())  # which attend to fewer keys
    gpu = Sized()
    gpu.batch_tokens, gpu.call_tokens = 32768, 8192  # a GPU: calls cost, keep them whole
    eng = Engine(gpu, config=EngineConfig(progress=False))
    plan, trie = plan_of(passages)
    assert not any(isinstance(s, ChainStep) for s in plan.steps)
    assert row_width(plan) == 1500 and plan.forwarded_tokens == sum(trie.needed())

    calls = []
    real = Engine._plan_cost
    eng._plan_cost = lambda p: calls.append(p) or real(eng, p)
    plan, _ = plan_of([[1, 2, 3], [1, 2, 4]])
    assert len(calls) == 1 and ROW_LENGTHS[0] >= 4


@pytest.mark.parametrize("model_fixture", ["tiny_llama", "tiny_gemma"])
def test_backend_frees_tokenizer_build_copies(model_fixture, request):
    """The scoring backend drops the Python vocabulary and merges transformers keeps after
    building the Rust tokenizer (~220 MB for Gemma 3) and returns freed heap to the OS; the
    tokenizer still encodes and decodes exactly as a freshly loaded one."""
    from transformers import AutoTokenizer
    from negbench.backends import heap

    folder = request.getfixturevalue(model_fixture)
    fresh = AutoTokenizer.from_pretrained(folder)
    be = HFBackend(folder, dtype="float32", device="cpu")
    for attr in ("_vocab", "_merges"):
        assert getattr(be.tokenizer, attr, None) is None
    texts = ["the cat is not a dog", "Negate: never was a house", " a  river\\n"]
    assert be.tokenizer(texts)["input_ids"] == fresh(texts)["input_ids"]
    ids = fresh("the moon is not True")["input_ids"]
    assert be.tokenizer.decode(ids) == fresh.decode(ids)
    assert heap.trim() is True  # Linux with glibc, as CI and this machine
