"""Packed rows on the device (issue 26): masks built from positions and subtree ends, the SDPA
and FlexAttention paths, the padded fallback and the array trie, each against a naive
computation (one request at a time, float64 log-softmax) on random tries."""

from __future__ import annotations

import random

import numpy as np
import pytest

from conftest import CORPUS, naive_scores
from negbench.backends.hf import HFBackend
from negbench.core.engine import Engine, EngineConfig, request_keys
from negbench.core.requests import (
    GenerationRequest,
    LoglikelihoodRequest,
    NextTokenRequest,
    RollingLoglikelihoodRequest,
    request_key,
)
from negbench.core.trie import TokenTrie, neighbour_lcp, sorted_trie

WORDS = "the cat dog not never is was a house river moon True False sentence negation".split()


def random_workload(seed: int, n_trunks: int = 3):
    """Requests over a random trie: a few trunks (shared instructions of random length), each
    with contexts that branch at random depths, each context with several continuations (some
    sharing their first words) and a next-token request."""
    rng = random.Random(seed)
    words = lambda k: " ".join(rng.choice(WORDS) for _ in range(k))
    reqs = []
    for _ in range(n_trunks):
        trunk = words(rng.randint(0, 25))
        stems = [words(rng.randint(1, 12)) for _ in range(3)]
        for _ in range(rng.randint(2, 5)):
            ctx = (trunk + " " + rng.choice(stems) + " " + words(rng.randint(0, 8))).strip()
            first = words(rng.randint(1, 3))
            for _ in range(rng.randint(1, 4)):
                cont = (" " + first if rng.random() < 0.5 else "") + " " + words(rng.randint(1, 5))
                reqs.append(LoglikelihoodRequest(ctx, cont))
            reqs.append(
                NextTokenRequest(ctx, ("True", "False"), label_prefix=rng.choice(["", " "]))
            )
    return reqs


def check(out, ref, tol=1e-4):
    for o, r in zip(out, ref):
        if isinstance(r, dict):
            for lab, v in r.items():
                assert abs(o.logprobs[lab] - v) < tol
        else:
            assert abs(o.logprob - r[0]) < tol
            assert o.is_greedy == r[1]


@pytest.fixture
def eager_flex(monkeypatch):
    """FlexAttention without torch.compile: on a CPU, Inductor's compiled flex kernel fails to
    build for some shapes (the GPU compiles with Triton); the masks and the attention semantics
    under test are the same."""
    import transformers.integrations.flex_attention as tfa
    from torch.nn.attention.flex_attention import flex_attention

    def eager(query, key, value, training=False, **kw):
        return flex_attention(query, key, value, **kw)

    monkeypatch.setattr(tfa, "compile_friendly_flex_attention", eager)


@pytest.mark.parametrize("model_fixture", ["tiny_llama", "tiny_gemma"])
@pytest.mark.parametrize("attention", ["sdpa", "flex_attention"])
def test_attention_paths_equal_the_naive_loop(model_fixture, attention, request, eager_flex):
    """SDPA with device-built boolean masks and FlexAttention with block masks from the same
    rule: equal to one-request-at-a-time forwards, on random tries, for packed rows (2048),
    chains with KV prefixes and many rows (24, longer than Gemma's window of 8), and the padded
    fallback (no masks)."""
    folder = request.getfixturevalue(model_fixture)
    reqs = random_workload(1) + [LoglikelihoodRequest("", "the cat")]
    ref = naive_scores(HFBackend(folder, dtype="float32", device="cpu"), reqs)
    be = HFBackend(folder, dtype="float32", device="cpu", attn_implementation=attention)
    assert be.attention == attention
    for cfg in (
        dict(max_row_tokens=2048),
        dict(max_row_tokens=24, batch_size=3),
        dict(plan="padded"),
    ):
        eng = Engine(be, config=EngineConfig(progress=False, **cfg))
        out = eng.run(reqs)
        check(out, ref)
        st = out.stats
        assert st.padded_plans == (1 if cfg.get("plan") == "padded" else 0)
        if "plan" not in cfg:
            assert st.forwarded_tokens == st.unique_tokens < st.naive_tokens


@pytest.mark.parametrize("seed", range(4))
def test_results_do_not_depend_on_batching_or_prefetch(tiny_gemma, seed):
    """The same answers (to 1e-5) whatever the row length, batch size, token budget, plan and
    prefetch thread."""
    be = HFBackend(tiny_gemma, dtype="float32", device="cpu")
    reqs = random_workload(10 + seed, n_trunks=2)
    base = Engine(be, config=EngineConfig(progress=False)).run(reqs)
    rng = random.Random(seed)
    for _ in range(3):
        cfg = EngineConfig(
            progress=False,
            max_row_tokens=rng.choice([None, 16, 40, 300]),
            batch_size=rng.choice([1, 4, 32]),
            max_batch_tokens=rng.choice([None, 64, 500]),
            prefetch=rng.random() < 0.5,
            plan=rng.choice(["auto", "trie", "padded"]),
        )
        out = Engine(be, config=cfg).run(reqs)
        for a, b in zip(out, base):
            if hasattr(a, "logprobs"):
                assert all(abs(a.logprobs[k] - b.logprobs[k]) < 1e-5 for k in a.logprobs)
            else:
                assert abs(a.logprob - b.logprob) < 1e-5 and a.is_greedy == b.is_greedy


def test_padded_fallback_where_sharing_cannot_pay(tiny_llama):
    """Short prompts that share nothing: the cost model picks plain padded rows (no mask, one
    request each); a long shared instruction keeps the trie.  Both equal the naive loop."""
    be = HFBackend(tiny_llama, dtype="float32", device="cpu")
    rng = random.Random(3)
    lines = [c for c in CORPUS if len(c) > 12]
    apart = [
        NextTokenRequest(f"{i} " + " ".join(rng.choice(lines) for _ in range(6)), ("True", "False"))
        for i in range(40)
    ]
    shared = [
        NextTokenRequest(" ".join(CORPUS) + " " + rng.choice(WORDS), ("True", "False"))
        for _ in range(20)
    ]
    for reqs, padded in ((apart, 1), (shared, 0)):
        eng = Engine(be, config=EngineConfig(progress=False))
        out = eng.run(reqs)
        check(out, naive_scores(be, reqs))
        assert out.stats.padded_plans == padded


def test_rows_only_backend_gets_the_same_answers(tiny_llama):
    """A token-level backend with ``forward_rows`` only (no ``forward_batch``) is driven through
    the same arrays, converted to rows."""
    be = HFBackend(tiny_llama, dtype="float32", device="cpu")

    class RowsOnly:
        def __init__(self, inner):
            self._inner = inner

        def __getattr__(self, name):
            if name in ("forward_batch", "stage"):
                raise AttributeError(name)
            return getattr(self._inner, name)

    reqs = random_workload(5)
    a = Engine(be, config=EngineConfig(progress=False, max_row_tokens=24)).run(reqs)
    b = Engine(RowsOnly(be), config=EngineConfig(progress=False, max_row_tokens=24)).run(reqs)
    check(b, [x.logprobs if hasattr(x, "logprobs") else (x.logprob, x.is_greedy) for x in a], 1e-6)


def _brute_mask(end_row: list[int], pos: list[int], n: int, L: int, P: int, window):
    """Who may attend whom, from the subtree ends by definition (ancestors-or-self)."""
    m = np.zeros((L, P + L), dtype=bool)
    for q in range(L):
        m[q, :P] = True
        if window:
            m[q, :P] &= (pos[q] - np.arange(P)) < window
        for k in range(L):
            ok = k == q if q >= n or k >= n else (k <= q <= end_row[k])
            if ok and window:
                ok = pos[q] - pos[k] < window
            m[q, P + k] = ok
    return m


@pytest.mark.parametrize("window", [None, 3])
def test_device_masks_follow_the_subtree_rule(window):
    """The SDPA boolean mask and the FlexAttention mask_mod, evaluated on every (query, key),
    equal the ancestor relation of random tries laid out in depth-first rows (with a prefix,
    padding and a sliding window on positions)."""
    import torch
    from torch.nn.attention.flex_attention import create_mask
    from negbench.backends.attention import flex_masks, sdpa_masks

    rng = random.Random(0)
    for _ in range(20):
        trie = TokenTrie()
        for _ in range(rng.randint(1, 6)):
            path = trie.insert([rng.randrange(4) for _ in range(rng.randint(1, 7))])
            trie.ask(path[-1], 0)
        a = trie.arrays()
        n, P = len(a), rng.randint(0, 4)
        L = n + rng.randint(0, 3)
        end = np.arange(L)
        end[:n] = a.end
        pos = np.zeros(L, dtype=np.int64)
        pos[:n] = P + a.depth
        windows = {"sliding_attention": window} if window else {"full_attention": None}
        e, p = torch.tensor(end)[None], torch.tensor(pos)[None]
        want = _brute_mask(end.tolist(), pos.tolist(), n, L, P, window)
        sd = sdpa_masks(torch, p, e, P, windows)
        sd = sd["sliding_attention"] if window else sd
        assert (sd[0, 0].numpy() == want).all()
        bm = flex_masks(torch, p, e, P, windows)
        bm = bm["sliding_attention"] if window else bm
        fx = create_mask(bm.mask_mod, 1, 1, L, P + L, device="cpu")
        assert (fx[0, 0].numpy() == want).all()


def test_array_trie_equals_the_token_trie():
    """Sorted sequences inserted as array code: the same nodes, depths, subtree ends and
    (sequence, depth) → node lookups as the node-by-node trie, and the neighbours' common
    prefixes."""
    for seed in range(100):
        rng = random.Random(seed)
        base = [rng.randrange(5) for _ in range(rng.randint(0, 10))]
        seqs = sorted(
            base[: rng.randint(0, len(base))] + [rng.randrange(4) for _ in range(rng.randint(1, 8))]
            for _ in range(rng.randint(1, 30))
        )
        trie, paths = TokenTrie(), []
        for s in seqs:
            paths.append(trie.insert(s))
            trie.ask(paths[-1][-1], 0)
        flat = np.array([x for s in seqs for x in s], dtype=np.int64)
        offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
        np.cumsum([len(s) for s in seqs], out=offsets[1:])
        st = sorted_trie(flat, offsets)
        ref = trie.arrays()
        assert (ref.ids == np.arange(len(trie))).all()  # sorted insertion is pre-order
        assert (st.arrays.token == ref.token).all() and (st.arrays.depth == ref.depth).all()
        assert (st.arrays.end == ref.end).all()
        seq = np.array([i for i, s in enumerate(seqs) for _ in s])
        depth = np.array([d for s in seqs for d in range(len(s))])
        assert st.node(seq, depth).tolist() == [paths[i][d] for i, d in zip(seq, depth)]
        lcp = [0] + [
            next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            for a, b in zip(seqs, seqs[1:])
        ]
        assert neighbour_lcp(flat, offsets).tolist() == lcp


def test_request_keys_equal_request_key():
    reqs = [
        LoglikelihoodRequest("Ä ctx ", "cont"),
        NextTokenRequest("x", ("True", "False"), " "),
        GenerationRequest("q", ("\n",), 5),
        RollingLoglikelihoodRequest("t\u00e9xt"),
    ]
    assert request_keys(reqs, "fp") == [request_key(r, "fp") for r in reqs]


def _tiny_spaces_tokenizer(path):
    """A Gemma-3-style tokenizer: spaces become "▁", BPE over whole segments with byte
    fallback, "\\n" runs as added tokens, chat-like special tokens."""
    from tokenizers import AddedToken, Tokenizer, normalizers, pre_tokenizers
    from tokenizers.models import BPE
    from tokenizers.trainers import BpeTrainer
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(BPE(unk_token=None, byte_fallback=True, fuse_unk=True))
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    tok.pre_tokenizer = pre_tokenizers.Split(" ", "merged_with_previous")
    special = ["<pad>", "<bos>", "<start_of_turn>", "<end_of_turn>"]
    trainer = BpeTrainer(
        vocab_size=600,
        special_tokens=special + [f"<0x{i:02X}>" for i in range(256)],
        min_frequency=1,
    )
    tok.train_from_iterator([c.replace("\n", " ") for c in CORPUS] * 20, trainer)
    tok.add_tokens([AddedToken(t, normalized=False) for t in ("\n", "\n\n")])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<bos>", pad_token="<pad>")
    fast.save_pretrained(path)
    return PreTrainedTokenizerFast.from_pretrained(path)


@pytest.mark.parametrize("kind", ["bytelevel", "spaces"])
def test_tokenisation_by_safe_pieces_is_exact(kind, tiny_llama, tmp_path):
    """Texts with shared prefixes and suffixes, chat markers, newlines, runs of spaces, tabs and
    odd whitespace: the pieces' tokens are the tokenizer's own, and every join said to be safe
    tokenises as its two sides."""
    from transformers import AutoTokenizer
    from negbench.backends.token_splits import SplitTokenizer

    if kind == "bytelevel":
        tok = AutoTokenizer.from_pretrained(tiny_llama)
        marks = ("<s>", "</s>")
    else:
        tok = _tiny_spaces_tokenizer(tmp_path)
        marks = ("<start_of_turn>", "<end_of_turn>")
    sp = SplitTokenizer(tok)
    assert sp.kind == kind
    rng = random.Random(0)
    bits = (
        WORDS
        + ["  ", "\n", "\n\n", "\t", " ,", ".", "\u00a0", "\x1c", "é", "Ünï", "'s", "42", " 7"]
        + list(marks)
    )
    head = marks[0] + "user\nNegate the sentence. " + " ".join(CORPUS[:3])
    tail = marks[1] + "\n" + marks[0] + "model\n"
    texts = []
    for _ in range(300):
        mid = "".join(
            rng.choice(bits) + rng.choice(["", " ", " ", "\n"]) for _ in range(rng.randint(0, 12))
        )
        texts.append(
            rng.choice([head + " " + mid + tail, mid, head + mid, mid + tail, " " + mid + " "])
        )
    want = tok(texts, add_special_tokens=False)["input_ids"]
    assert sp.encode(texts) == want
    assert sp.encode(texts) == want  # again, from the pieces remembered
    for t in texts[:150]:
        for i in range(1, len(t)):
            left, right = t[:i], t[i:]
            if sp.can_split(left, right):
                assert (
                    tok(left, add_special_tokens=False)["input_ids"]
                    + tok(right, add_special_tokens=False)["input_ids"]
                    == tok(t, add_special_tokens=False)["input_ids"]
                ), (left, right)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["smollm2-135m-instruct", "gemma3-270m"])
def test_tokenisation_by_pieces_on_the_embedded_tokenizers(name, monkeypatch):
    """The embedded models' own tokenizers (byte-level BPE; whole-segment BPE with "▁"): chat
    prompts, Korean and Japanese lines, shared instructions, continuations after their
    contexts — the same ids as the tokenizer, text by text."""
    monkeypatch.delenv("NEGBENCH_CACHE", raising=False)  # reuse the converted model
    from negbench.backends.hf import HFBackend

    be = HFBackend(name, dtype="float32", device="cpu")
    tok = be.tokenizer
    rng = random.Random(1)
    lines = CORPUS + [
        "원문: 그는 학교에 가지 않았다.",
        "부정문: 그는 학교에 갔다.  ",
        "彼は学校に行かなかった。",
        "Is the following statement True or False? Answer only True or False.",
        "A location is commonly a point or extent in space.",
        "(예. ¬(P ∧ Q) ≡ ¬P ∨ ¬Q)",
    ]
    instruction = "\n".join(lines[:5]) + "\n\n"
    texts, pairs = [], []
    for _ in range(200):
        body = " ".join(rng.choice(lines) for _ in range(rng.randint(1, 4)))
        msg = instruction + body if rng.random() < 0.7 else body
        if rng.random() < 0.5:  # a chat prompt (Gemma's markers where there is no template)
            text = (
                be.apply_chat_template([{"role": "user", "content": msg}])
                if be.has_chat_template
                else f"<start_of_turn>user\n{msg}<end_of_turn>\n<start_of_turn>model\n"
            )
        else:
            text = msg
        texts.append(text)
        pairs.append((text.rstrip(), " " + rng.choice(lines)))
    assert be.splitter.kind is not None
    assert be.encode_batch(texts) == [
        tok(t)["input_ids"]
        if not t.startswith(tok.bos_token or "\0") or not be.add_bos
        else tok(t, add_special_tokens=False)["input_ids"]
        for t in texts
    ]
    for left, right in pairs:
        if be.can_split(left, right):
            whole = tok(left + right, add_special_tokens=False)["input_ids"]
            assert whole == (
                tok(left, add_special_tokens=False)["input_ids"]
                + tok(right, add_special_tokens=False)["input_ids"]
            )


@pytest.mark.parametrize("softcap", [None, 30.0])
def test_gpu_head_tiles_match_float64(softcap):
    """The GPU tiling of the output head (the whole vocabulary per block of rows; 16-bit matrix
    products with float32 log-sum-exp), run here on the CPU: float32 weights give the float64
    log-softmax to 2e-5 and the same argmax; bfloat16 weights stay within 0.05 nats of a
    float64 computation on the same (rounded) weights."""
    import torch
    from negbench.backends import hf

    torch.manual_seed(0)
    V, d, n = 5003, 32, 70
    head = torch.nn.Linear(d, V, bias=False)
    torch.nn.init.normal_(head.weight, std=0.5)
    hidden = torch.randn(n, d)
    targets = [sorted({int(x) for x in torch.randint(0, V, (1 + i % 3,))}) for i in range(n)]
    t_query = np.asarray([i for i, t in enumerate(targets) for _ in t], dtype=np.int64)
    t_token = np.asarray([x for t in targets for x in t], dtype=np.int64)
    for dtype, tol in ((torch.float32, 2e-5), (torch.bfloat16, 0.05)):
        h, w = hidden.to(dtype), head.to(dtype)
        with torch.inference_mode():
            logits = h.double() @ w.weight.double().T
            if softcap:
                logits = torch.tanh(logits / softcap) * softcap
            ref = torch.log_softmax(logits, -1)
            for budget in (hf.GPU_HEAD_BUDGET, 7 * V):  # one tile, and blocks of 7 rows
                old = hf.GPU_HEAD_BUDGET
                hf.GPU_HEAD_BUDGET = budget
                try:
                    lp, am = hf.head_scores(
                        torch,
                        h,
                        w,
                        t_query,
                        torch.from_numpy(t_query),
                        torch.from_numpy(t_token),
                        softcap,
                        gpu=True,
                    )
                finally:
                    hf.GPU_HEAD_BUDGET = old
                want = ref[torch.from_numpy(t_query), torch.from_numpy(t_token)]
                assert float((lp.double() - want).abs().max()) < tol
                if dtype is torch.float32:
                    assert am.tolist() == ref.argmax(-1).tolist()


def test_flex_attention_follows_the_rule_on_every_layer_type():
    """FlexAttention itself (not only its mask function) with the block masks of a model with
    sliding and full-attention layers, the sliding layer first as in Gemma 3: each layer type's
    output equals SDPA with the brute-force mask of that type.  On torch 2.11, whose compile
    cache does not guard a mask function's default arguments, a window passed as one made the
    full-attention layers reuse the sliding layer's graph (issue 32, item 1)."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention.flex_attention import flex_attention
    from negbench.backends.attention import flex_masks

    rng = random.Random(2)
    torch.manual_seed(0)
    for _ in range(4):
        trie = TokenTrie()
        for _ in range(rng.randint(3, 8)):
            path = trie.insert([rng.randrange(3) for _ in range(rng.randint(4, 12))])
            trie.ask(path[-1], 0)
        a = trie.arrays()
        n, P = len(a), rng.randint(0, 5)
        L = n + rng.randint(0, 3)
        end = np.arange(L)
        end[:n] = a.end
        pos = np.zeros(L, dtype=np.int64)
        pos[:n] = P + a.depth
        windows = {"sliding_attention": 3, "full_attention": None}
        masks = flex_masks(torch, torch.tensor(pos)[None], torch.tensor(end)[None], P, windows)
        q = torch.randn(1, 2, L, 8)
        k, v = torch.randn(1, 2, P + L, 8), torch.randn(1, 2, P + L, 8)
        for kind in ("sliding_attention", "full_attention", "sliding_attention"):
            want = _brute_mask(end.tolist(), pos.tolist(), n, L, P, windows[kind])
            ref = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.tensor(want))
            got = flex_attention(q, k, v, block_mask=masks[kind])
            assert float((got - ref).abs().max()) < 1e-5, kind


@pytest.mark.slow
def test_compiled_block_masks_equal_the_eager_ones():
    """``torch.compile(create_block_mask)`` (what a GPU uses: no dense int64 temporaries) gives
    the eager block masks over calls of changing batch, row and prefix sizes, compiled at most
    twice (a static build, then a dynamic one).  Slow: Inductor's first CPU build takes a minute."""
    import torch
    import torch._dynamo
    from negbench.backends import attention

    torch._dynamo.reset()
    attention._COMPILED.clear()
    windows = {"sliding_attention": 8, "full_attention": None}
    try:
        for B, L, P in [(2, 256, 0), (4, 512, 100), (3, 384, 37), (2, 256, 0)]:
            end = torch.randint(0, L, (B, L)).clamp(min=torch.arange(L)).sort(-1).values
            pos = torch.arange(L).expand(B, -1) + P
            got = attention.flex_masks(torch, pos, end, P, windows, compiled=True)
            want = attention.flex_masks(torch, pos, end, P, windows, compiled=False)
            for kind in windows:
                assert (got[kind].to_dense() == want[kind].to_dense()).all()
        frames = torch._dynamo.utils.counters["stats"]["unique_graphs"]
        assert 1 <= frames <= 2
    finally:
        torch._dynamo.reset()
        attention._COMPILED.clear()
