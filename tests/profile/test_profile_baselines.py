"""Chance and majority baselines: the pure rule on items written here, then the real releases in
../shared/data (skipped when absent), each checked against a count made independently of
negbench's loaders, and against the papers' own baseline rows where a paper prints one."""

from __future__ import annotations

import json
import random

import pytest

from negbench.profile.baselines import Item, baseline, score_baselines
from negbench.profile.reported import references

from locations import ROOT, SHARED

DATA = SHARED / "data"
KONU = DATA / "konubench" / "dataset" / "Thunder_KoNUBench" / "test" / "test.json"
CONDAQA = DATA / "condaqa" / "data" / "few-shot" / "test_splits"


def test_score_baselines_rule():
    items = [
        Item(("A", "B", "C", "D"), "A"),
        Item(("A", "B", "C"), "B"),
        Item(("A", "B", "C", "D"), "A"),
    ]
    n, chance, majority, answer, labels = score_baselines(items)
    assert n == 3 and chance == pytest.approx((1 / 4 + 1 / 3 + 1 / 4) / 3)
    assert (majority, answer, labels) == (pytest.approx(2 / 3), "A", ("A", "B", "C", "D"))
    # sentences as options: chance is 1/k, majority undefined
    sents = [Item((f"s{i}", f"t{i}", f"u{i}"), f"s{i}") for i in range(5)]
    assert score_baselines(sents)[1:4] == (pytest.approx(1 / 3), None, None)
    # a gold outside the label set (a span) counts 0 for both; case and spaces are ignored
    mixed = [Item(("YES", "NO"), "no "), Item(("YES", "NO"), "Paris"), Item(("YES", "NO"), "NO")]
    n, chance, majority, answer, _ = score_baselines(mixed)
    assert (
        chance == pytest.approx((0.5 + 0 + 0.5) / 3)
        and majority == pytest.approx(2 / 3)
        and answer == "NO"
    )
    assert score_baselines([]) == (0, None, None, None, ())
    assert score_baselines([Item((), "x")])[1:3] == (None, None)


@pytest.mark.skipif(not KONU.is_file(), reason="../shared/data/konubench not present")
def test_konubench_chance_and_gold_letter_majority_from_the_release():
    recs = json.loads(KONU.read_text(encoding="utf-8"))
    k = [3 if r["local_negation"] in (None, "") else 4 for r in recs]
    # the official symbol shuffle, literally (global random.seed(int(idx)) + shuffle)
    state = random.getstate()
    letters = []
    try:
        for r in recs:
            texts = [r["standard_negation"], r["contradiction"], r["paraphrase"]]
            if r["local_negation"] not in (None, ""):
                texts.insert(1, r["local_negation"])
            random.seed(int(r["idx"].lstrip("G")))
            random.shuffle(texts)
            letters.append("ABCD"[texts.index(r["standard_negation"])])
    finally:
        random.setstate(state)
    top = max("ABCD", key=letters.count)
    sym = baseline("konubench", "symbol")
    assert sym.n == len(recs) == 1284 and sym.metric == "acc"
    assert sym.chance == pytest.approx(sum(1 / x for x in k) / len(k))
    assert sym.majority_answer == top and sym.majority == pytest.approx(
        letters.count(top) / len(recs)
    )
    cloze = baseline("konubench", "cloze")
    assert cloze.metric == "acc_norm" and cloze.chance == pytest.approx(sym.chance)
    assert cloze.majority is None and "undefined" in cloze.basis
    assert baseline("konubench", "symbol", limit=100).n == 100


@pytest.mark.skipif(not CONDAQA.is_dir(), reason="../shared/data/condaqa not present")
def test_condaqa_majority_is_table4s_majority_row():
    golds = []
    for i in range(1, 6):
        for line in (
            (CONDAQA / f"conda_fewshot_test_{i}.json").read_text(encoding="utf-8").splitlines()
        ):
            if line.strip():
                golds.append(json.loads(line)["label"].strip().upper())
    b = baseline("condaqa", "generate")
    assert b.n == len(golds) == 7240 and b.metric == "accuracy"
    assert b.majority_answer == "NO" and b.majority == pytest.approx(golds.count("NO") / len(golds))
    labels = {"YES", "NO", "DON'T KNOW"}
    assert b.chance == pytest.approx(sum(g in labels for g in golds) / 3 / len(golds))
    paper = next(
        r for r in references("condaqa") if r.model == "Majority" and r.metric == "accuracy"
    )
    assert f"{100 * b.majority:.2f}" == paper.value == "47.75"
    # the log-likelihood mode scores label items only (spans excluded)
    ll = baseline("condaqa", "loglik")
    assert ll.n == sum(g in labels for g in golds) and ll.chance == pytest.approx(1 / 3)


def test_fixture_tasks_and_generation_label_sets(monkeypatch):
    """NUBench's option letters and JSTS-Neg's 0-5 scores on the project's own fixtures."""
    monkeypatch.setenv("NEGBENCH_NUBENCH", str(ROOT / "tests/data/nubench"))
    monkeypatch.setenv("NEGBENCH_JSTS_NEG", str(ROOT / "tests/data/jsts_neg"))
    lines = (ROOT / "tests/data/nubench/test.jsonl").read_text().splitlines()
    test = [json.loads(line) for line in lines if line]
    opt = baseline("nubench", "option")
    k = [3 if r.get("choice2_type") == "non-applicable" else 4 for r in test]
    assert opt.n == len(test) and opt.chance == pytest.approx(sum(1 / x for x in k) / len(k))
    assert set(opt.labels) == {"A", "B", "C", "D"} and opt.majority is not None
    assert baseline("nubench", "completion").majority is None
    js = baseline("jsts-neg", "generate")
    assert js.labels == ("0", "1", "2", "3", "4", "5") and js.chance == pytest.approx(1 / 6)
    golds = [
        str(json.loads(line)["gold_score"])
        for line in (ROOT / "tests/data/jsts_neg/jsts-neg-test.jsonl").read_text().splitlines()
        if line
    ]
    top = max(set(golds), key=golds.count)
    assert js.majority == pytest.approx(golds.count(top) / len(golds))


def test_builtin_true_false_chance_is_the_papers_random_row():
    tf = baseline("truefalse-mini", "next_token")
    assert tf.chance == 0.5 and set(tf.labels) == {"True", "False"}
    random_row = next(
        r for r in references("notadataset") if r.model == "Random" and r.metric == "acc"
    )
    assert f"{100 * tf.chance:.1f}" == random_row.value
