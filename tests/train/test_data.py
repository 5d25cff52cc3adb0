"""Training data tokenised as the training reads it: the examples equal a direct tokenisation of
each record, nothing but the over-long candidates and the longest records is tokenised before
training, a prompt that does not fit is still an error before anything trains, the size bound
holds on the test tokenizers, and each optimiser step reads its examples longest first."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("peft")

from negbench.scoring import recipes as R  # noqa: E402

#: Our own records, of different lengths and scripts.
RECORDS = [
    {
        "instruction": "Negate the sentence.",
        "input": "Sentence: The cat is on the mat" + " and the dog" * (i % 7) + f" {i}.",
        "output": "The cat is not on the mat" + " yes" * (i % 3) + ".",
    }
    for i in range(40)
]

TEXTS = [
    "The cat is not on the mat.",
    "고양이는 매트 위에 있지 않다.",
    "猫はマットの上にいない。",
    "  spaces   and\ttabs\n\nand new lines  ",
    "emoji 🐈‍⬛ and accents: café, naïve, Ångström",
    "<s></s><|im_start|>assistant<|im_end|>",
    "",
    "x",
    "1234567890" * 20,
]


@pytest.fixture(scope="module")
def records_file(tmp_path_factory) -> str:
    p = tmp_path_factory.mktemp("data") / "records.jsonl"
    p.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in RECORDS))
    return str(p)


def _tokenizer(model: str):
    from negbench.backends.sources import resolve
    from negbench.train.trainer import load_tokenizer

    return load_tokenizer(resolve(model))


def _reference(record: dict, tok) -> dict:
    """The example of the plain template, tokenised here by hand: (BOS where the tokenizer puts
    one) + prompt, response + EOS, the prompt masked."""
    from negbench.train.data import adds_bos

    p = record["instruction"] + "\n" + record["input"]
    pi = tok(p, add_special_tokens=False)["input_ids"]
    if adds_bos(tok):
        pi = [tok.bos_token_id] + pi
    ri = tok("\n" + record["output"], add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    ids = pi + ri
    return {"input_ids": ids, "attention_mask": [1] * len(ids), "labels": [-100] * len(pi) + ri}


def test_examples_are_tokenised_as_read(tiny_llama, records_file, monkeypatch):
    from negbench.train import data as D

    monkeypatch.setattr(D, "LONGEST_PROBE", 3)
    tok = _tokenizer(tiny_llama)
    r = R.get_recipe("nubench-simple")
    assert r.prompt_join == "\n" and r.response_prefix == "\n" and r.append_eos
    t = D.tokenize(D.load_training_data(records_file), r, tok, "plain")
    ex = t.examples
    assert t.n_checked == 3 and ex.stats()["n_examples_tokenized"] == 3  # only the longest
    longest = max(range(len(RECORDS)), key=lambda i: len(_reference(RECORDS[i], tok)["input_ids"]))
    assert t.max_len == len(_reference(RECORDS[longest], tok)["input_ids"])
    monkeypatch.setattr(D, "LONGEST_PROBE", 0)  # nothing tokenised before it is read
    t = D.tokenize(D.load_training_data(records_file), r, tok, "plain")
    ex = t.examples
    assert t.n_checked == 0 and ex.stats()["n_examples_tokenized"] == 0
    assert ex[5] == _reference(RECORDS[5], tok)
    assert ex.stats()["n_examples_tokenized"] == 1
    assert ex.__getitems__([7, 2, -1]) == [_reference(RECORDS[i], tok) for i in (7, 2, 39)]
    assert ex.stats()["n_examples_tokenized"] == 4
    assert ex[10:13] == [_reference(RECORDS[i], tok) for i in (10, 11, 12)]
    assert list(ex) == [_reference(x, tok) for x in RECORDS]  # every example, once tokenised
    s = t.summary()
    assert s["n_examples_tokenized"] == 40 and s["n_truncated"] == 0
    assert s["n_tokens"] == sum(len(_reference(x, tok)["input_ids"]) for x in RECORDS)
    assert s["max_len_seen"] == max(len(_reference(x, tok)["input_ids"]) for x in RECORDS)
    with pytest.raises(IndexError):
        ex[40]


def test_prompt_that_does_not_fit_is_found_before_training(tiny_llama, records_file):
    from negbench.errors import OptionError
    from negbench.train.data import load_training_data, tokenize

    tok = _tokenizer(tiny_llama)
    plen = [sum(1 for v in _reference(x, tok)["labels"] if v == -100) for x in RECORDS]
    cutoff = sorted(plen)[-3]  # the longest prompts leave no room for a response token
    r = R.apply(R.get_recipe("nubench-simple"), {"cutoff_len": cutoff})
    with pytest.raises(OptionError) as e:
        tokenize(load_training_data(records_file), r, tok, "plain")
    n_bad = sum(1 for p in plen if p + 1 > cutoff)
    assert f"cutoff_len={cutoff}" in e.value.what and f"{n_bad} of 40" in e.value.what
    first = min(i for i, p in enumerate(plen) if p + 1 > cutoff)
    assert f"line {first + 1}" in e.value.where
    # a cutoff that cuts responses only: examples truncated, counted
    r = R.apply(R.get_recipe("nubench-simple"), {"cutoff_len": max(plen) + 1})
    t = tokenize(load_training_data(records_file), r, tok, "plain")
    assert all(len(x["input_ids"]) <= max(plen) + 1 for x in t.examples)
    full = [len(_reference(x, tok)["input_ids"]) for x in RECORDS]
    assert t.summary()["n_truncated"] == sum(1 for n in full if n > max(plen) + 1) > 0


@pytest.mark.parametrize("which", ["tiny_llama", "tiny_gemma", "smollm2"])
def test_token_bound_holds(which, request):
    from negbench.train.data import token_bound

    if which == "smollm2":
        try:
            tok = _tokenizer("smollm2")
        except Exception as exc:  # the embedded model's package is not installed
            pytest.skip(f"SmolLM2 not available: {exc}")
    else:
        tok = _tokenizer(request.getfixturevalue(which))
    for text in TEXTS + [r["input"] for r in RECORDS]:
        n = len(tok(text, add_special_tokens=False)["input_ids"])
        assert n <= token_bound(text), (which, text, n)


def test_each_step_reads_its_examples_longest_first():
    from negbench.train.sampler import StepSortedSampler

    lengths = [(i * 37) % 11 for i in range(50)]
    s = StepSortedSampler(lengths, step_size=8, seed=3)
    order = s.order()
    assert sorted(order) == list(range(50))
    assert order == list(StepSortedSampler(lengths, 8, 3))  # the same seed: the same order
    import torch

    g = torch.Generator()
    g.manual_seed(3)
    perm = torch.randperm(50, generator=g).tolist()
    for a in range(0, 50, 8):  # the steps hold the permutation's examples, longest first
        step = order[a : a + 8]
        assert set(step) == set(perm[a : a + 8])
        assert [lengths[i] for i in step] == sorted((lengths[i] for i in step), reverse=True)
    s.set_epoch(1)
    assert s.order() != order and sorted(s.order()) == list(range(50))


def test_trainer_reads_steps_longest_first(tiny_llama, records_file, tmp_path, monkeypatch):
    """Through ``negbench train``: every micro-batch of a step is no longer than the one before,
    and the loss of a step does not depend on the split (micro-batches of 2 vs one of 8)."""
    from negbench.train.trainer import train

    seen: list[int] = []  # longest example of each micro-batch read, in order

    import negbench.train.data as D

    real = D.TokenizedExamples.__getitems__

    def spy(self, idx):
        out = real(self, idx)
        seen.append(max(len(x["input_ids"]) for x in out))
        return out

    monkeypatch.setattr(D.TokenizedExamples, "__getitems__", spy)
    losses = {}
    for micro in (2, 8):
        seen.clear()
        adapter = train(
            "nubench-simple",
            tiny_llama,
            tmp_path / f"m{micro}",
            data=records_file,
            overrides={
                "per_device_train_batch_size": 8,
                "micro_batch_size": micro,
                "lora_dropout": 0.0,
                "logging_steps": 1,
                "save_steps": 100,
            },
            max_steps=3,
            progress=False,
            threads=1,
            log=lambda s: None,
        )
        info = json.loads((adapter / "negbench_train.json").read_text())
        losses[micro] = [h["loss"] for h in info["loss_history"]]
        if micro == 2:  # 4 micro-batches a step, read in order (one may be read ahead)
            steps = [seen[a : a + 4] for a in range(0, 12, 4)]
            assert all(st == sorted(st, reverse=True) for st in steps), seen
            assert any(st != sorted(st) for st in steps), seen  # not all ties
    assert losses[2] == pytest.approx(losses[8], rel=1e-5)
