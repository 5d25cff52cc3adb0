"""negbench's log-likelihoods equal lm-evaluation-harness's (HFLM) for the same strings.

The reference is the real ``lm_eval.models.huggingface.HFLM`` with its defaults (it decides the
BOS policy itself), fed ``Instance(... arguments=(context, continuation))`` exactly as a
``multiple_choice`` task does (continuation = target delimiter " " + choice).  The prompts are
KoNUBench-style Korean cloze prompts, on tiny random models whose byte-level BPE tokenizers are
trained here on Korean text, so Hangul gets real multi-byte merges:

* ``llama``: a Llama with a tokenizer that adds no special tokens by default (SmolLM2-like);
* ``gemma``: a Gemma 3 (sliding-window layers, logit soft-capping) whose tokenizer prepends
  ``<bos>`` by default, as the real Gemma tokenizer does;
* ``llama-bos`` (divergence tests only): a Llama whose tokenizer prepends ``<s>`` by default, as
  Llama 2/3 and Mistral tokenizers do.

The last block covers the BOS corner cases: the tokenizer's default special tokens (lm-eval >=
0.4.9.2), a context that already starts with the BOS text, and an empty context whose
continuation starts with the prefix token.  lm-eval is only a guard here (``importorskip``): the ``test`` extra
installs it (``lm_eval[hf]==0.4.13``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("lm_eval")

DESCRIPTION = (
    "표준 부정:\n"
    "- 주절의 서술어를 부정 표현으로 바꾸어 원문 P를 ¬P로 만든다.\n"
    "- 서술어 외의 부분은 그대로 둔다.\n"
    "\n"
    "부정 표현: 안, -지 않다, 못, -지 못하다, 말다, 없다, 아니다\n"
    "\n"
)
INSTRUCTION = "문제: 다음의 원문을 표준 부정을 활용하여 올바르게 부정하시오."


def query(sentence: str) -> str:
    return f"{DESCRIPTION}{INSTRUCTION}\n원문: {sentence}\n부정문:"


DOCS = [
    (
        "민수는 아침마다 공원에서 달리기를 한다.",
        [
            "민수는 아침마다 공원에서 달리기를 하지 않는다.",
            "민수는 아침마다 공원에서 달리기를 못 한다.",
            "민수는 저녁마다 집에서 잠을 잔다.",
            "아침이면 민수는 공원을 달린다.",
        ],
    ),
    (
        "어제 서울에는 비가 많이 왔다.",
        ["어제 서울에는 비가 많이 오지 않았다.", "어제 서울에는 눈이 많이 왔다."],
    ),
    (
        "그 식당은 일요일에 문을 연다.",
        [
            "그 식당은 일요일에 문을 열지 않는다.",
            "그 식당은 일요일에 문을 닫는다.",
            "일요일에 그 식당은 영업을 한다.",
        ],
    ),
]

#: (context, continuation) pairs as lm-eval tasks build them, plus the edge cases of _encode_pair.
PAIRS = [(query(s), " " + o) for s, opts in DOCS for o in opts] + [
    (
        query("고양이가 소파 위에 있다.") + " ",
        "고양이가 소파 위에 없다.",
    ),  # trailing space moves over
    (query("나는 학생이다.") + " \n", "나는 학생이 아니다."),  # trailing " \n" too
    ("", " 비가 오지 않았다."),  # empty context: prefix token
    ("원문: 그는 학교에 간다.\n부정문:", " 그는 학교에 가지 않는다."),  # short, no description
]

CORPUS = (
    [DESCRIPTION + INSTRUCTION]
    + [query(s) + " " + o for s, opts in DOCS for o in opts]
    + [
        "고양이가 소파 위에 있다. 나는 학생이다. 그는 학교에 간다. 비가 오지 않았다.",
        "한국어 문장을 부정하는 방법은 여러 가지가 있다. 안 먹었다. 못 갔다. 가지 마라.",
        "The cat is not on the mat. Negation: 0123456789 ,.;:!?'\"()[]{}<>-_/\\",
    ]
)


#: Tokenizers that prepend BOS when called with their defaults (real Gemma, Llama 2/3, Mistral).
BOS_BY_DEFAULT = ("gemma", "llama-bos")


def _tokenizer(path: Path, kind: str):
    """Byte-level BPE trained on Korean; the Gemma one prepends <bos> like the real tokenizer."""
    from tokenizers import ByteLevelBPETokenizer
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<eos>", "<bos>"] if kind == "gemma" else ["<s>", "</s>", "<pad>"]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(CORPUS * 10, vocab_size=700, min_frequency=2, special_tokens=specials)
    names = (
        dict(bos_token="<bos>", eos_token="<eos>", pad_token="<pad>")
        if kind == "gemma"
        else dict(bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    )
    if kind in BOS_BY_DEFAULT:
        bos = names["bos_token"]
        bpe._tokenizer.post_processor = TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A $B", special_tokens=[(bos, bpe.token_to_id(bos))]
        )
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, **names)
    tok.save_pretrained(path)
    return tok


def _save_model(path: Path, kind: str) -> str:
    import torch
    from transformers import AutoTokenizer

    _tokenizer(path, kind)
    tok = AutoTokenizer.from_pretrained(path)  # what both harnesses will load
    torch.manual_seed(0)
    common = dict(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    if kind.startswith("llama"):
        from transformers import LlamaConfig, LlamaForCausalLM

        model = LlamaForCausalLM(LlamaConfig(**common))
    else:
        from transformers import Gemma3ForCausalLM, Gemma3TextConfig

        # final_logit_softcapping: negbench applies it itself after its own head call
        cfg = Gemma3TextConfig(
            **common,
            head_dim=16,
            sliding_window=8,
            final_logit_softcapping=8.0,
            layer_types=["sliding_attention", "full_attention"],
        )
        model = Gemma3ForCausalLM(cfg)
    with torch.no_grad():  # peaked, non-trivial distributions
        for p in model.parameters():
            p.mul_(4.0 if p.dim() > 1 else 1.0)
    model.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module", params=["llama", "gemma"])
def ko_model(request, tmp_path_factory) -> tuple[str, str]:
    kind = request.param
    return kind, _save_model(tmp_path_factory.mktemp(f"ko-{kind}"), kind)


def lm_eval_scores(folder: str, pairs, **hflm_kwargs) -> list[tuple[float, bool]]:
    from lm_eval.api.instance import Instance
    from lm_eval.models.huggingface import HFLM

    lm = HFLM(pretrained=folder, device="cpu", dtype="float32", batch_size=1, **hflm_kwargs)
    reqs = [
        Instance(request_type="loglikelihood", doc={}, arguments=pair, idx=i)
        for i, pair in enumerate(pairs)
    ]
    return [(float(ll), bool(g)) for ll, g in lm.loglikelihood(reqs, disable_tqdm=True)]


def negbench_scores(folder: str, pairs) -> list[tuple[float, bool]]:
    from negbench.backends.hf import HFBackend
    from negbench.core.engine import Engine, EngineConfig
    from negbench.core.requests import LoglikelihoodRequest

    be = HFBackend(folder, dtype="float32", device="cpu")
    out = Engine(be, config=EngineConfig(progress=False)).run(
        [LoglikelihoodRequest(c, k) for c, k in pairs]
    )
    return [(r.logprob, r.is_greedy) for r in out]


def greedy_pair(folder: str, n: int = 2) -> tuple[str, str]:
    """A pair whose continuation is the model's own greedy tokens, so is_greedy is True somewhere.

    Tries the queries in turn until the greedy tokens decode to clean text that re-encodes to the
    same tokens after the context (random byte-level models often pick half a Hangul syllable).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    sentences = [s for s, _ in DOCS] + [o for _, opts in DOCS for o in opts]
    for sentence in sentences:
        context = query(sentence)
        ids = tok(context)["input_ids"]
        with torch.inference_mode():
            for _ in range(n):
                ids.append(int(model(torch.tensor([ids])).logits[0, -1].argmax()))
        cont = tok.decode(ids[-n:])
        if "\ufffd" not in cont and cont.strip() and tok(context + cont)["input_ids"] == ids:
            return context, cont
    raise AssertionError("no clean greedy continuation found")


def test_tokenizers_are_korean_aware(ko_model):
    from transformers import AutoTokenizer

    kind, folder = ko_model
    tok = AutoTokenizer.from_pretrained(folder)
    text = "어제 서울에는 비가 많이 오지 않았다."
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == text
    assert len(ids) < len(text.encode()) / 2  # Hangul is merged, not raw bytes
    with_special = tok(text)["input_ids"]
    assert (with_special[0] == tok.bos_token_id) == (kind == "gemma")


def test_loglikelihoods_equal_lm_eval(ko_model):
    kind, folder = ko_model
    pairs = PAIRS + [greedy_pair(folder)]
    ref = lm_eval_scores(folder, pairs)
    ours = negbench_scores(folder, pairs)
    for (c, k), (ll_ref, g_ref), (ll, g) in zip(pairs, ref, ours):
        assert abs(ll - ll_ref) < 1e-4, (kind, c[-20:], k, ll, ll_ref)
        assert g == g_ref, (kind, c[-20:], k, g, g_ref)
    assert any(g for _, g in ref), "no greedy continuation: is_greedy was not exercised"
    assert all(ll < 0 for ll, _ in ref)


# -- BOS corner cases (lm-eval 0.4.13 policy) -------------------------------------------------------
def _max_delta(folder: str, pairs, **hflm_kwargs) -> float:
    ref = lm_eval_scores(folder, pairs, **hflm_kwargs)
    return max(abs(a[0] - b[0]) for a, b in zip(negbench_scores(folder, pairs), ref))


@pytest.fixture(scope="module")
def ko_llama_bos(tmp_path_factory) -> str:
    return _save_model(tmp_path_factory.mktemp("ko-llama-bos"), "llama-bos")


def test_bos_adding_llama_tokenizer_matches_lm_eval_default(ko_llama_bos):
    """Llama-2/3 and Mistral tokenizers prepend BOS by default; lm-eval >= 0.4.9.2 keeps it."""
    assert _max_delta(ko_llama_bos, PAIRS[:4]) < 1e-4
    # and it matters: without BOS the scores are clearly different
    assert _max_delta(ko_llama_bos, PAIRS[:4], add_bos_token=False) > 1e-2


def test_context_starting_with_bos_text(ko_model):
    """Chat templates (Gemma's) write '<bos>' themselves: no second BOS is added."""
    kind, folder = ko_model
    bos = "<bos>" if kind == "gemma" else "<s>"
    assert _max_delta(folder, [(bos + PAIRS[0][0], PAIRS[0][1])]) < 1e-4


def test_empty_context_continuation_starting_with_prefix_token(ko_model):
    kind, folder = ko_model
    bos = "<bos>" if kind == "gemma" else "<s>"
    assert _max_delta(folder, [("", bos + " 비가 오지 않았다.")]) < 1e-4
