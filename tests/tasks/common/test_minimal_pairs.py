"""Negation minimal pairs: pair derivation, the §4.2 metrics on hand-built pairs (values worked out
by hand in the comments), the Tables 3-5 Markdown, the stratified shot draw, correlations."""

from __future__ import annotations

import math

import pytest

import negbench.tasks.common.minimal_pairs as mp
from negbench.errors import TaskError
from negbench.scoring.fewshot import fewshot_draws
from negbench.scoring.task import Doc
from locations import TEST_DATA

FIXTURES = TEST_DATA / "jsts_neg"


def rec(doc_id, s1, s2, gold, correct, group="g1", key="acc", **neg):
    """A per-sample record as the runner writes it (only what the metrics read)."""
    meta = {
        "group": group,
        "s1_neg_id": s1,
        "s2_neg_id": s2,
        "gold": gold,
        "s1_neg": neg.get("n1"),
        "s2_neg": neg.get("n2"),
    }
    return {"doc_id": doc_id, "meta": meta, key: float(correct)}


END = {"neg_position": "end", "target_pos": "動詞"}
MID = {"neg_position": "mid", "target_pos": "形容詞"}


def group_g1(key="acc"):
    """One group: original O (gold 3); s1-negated A1 (cue 0, gold 1) and A2 (cue 1, gold 3);
    s2-negated B1 (cue 0, gold 3); doubly negated C = (0, 0) gold 0 and D = (1, 0) gold 3.
    Correct: O, A2, C.  Wrong: A1, B1, D."""
    return [
        rec("O", None, None, 3, 1, key=key),
        rec("A1", 0, None, 1, 0, key=key, n1=END),
        rec("A2", 1, None, 3, 1, key=key, n1=MID),
        rec("B1", None, 0, 3, 0, key=key, n2=END),
        rec("C", 0, 0, 0, 1, key=key, n1=END, n2=END),
        rec("D", 1, 0, 3, 0, key=key, n1=MID, n2=END),
    ]


def test_derive_pairs_single_and_both():
    rs = group_g1()
    pairs = mp.derive_pairs([r["meta"] for r in rs])
    ids = [
        (rs[p.control]["doc_id"], rs[p.treatment]["doc_id"], p.kind, p.added, p.changed)
        for p in pairs
    ]
    # M_single: O with each single-negated variant; M_both: a single-negated instance and each
    # doubly negated instance keeping its cue (C = A1 + s2 cue 0 = B1 + s1 cue 0; D = A2 + s2 cue 0
    # = B1 + s1 cue 1)
    assert ids == [
        ("O", "A1", "single", "s1", True),
        ("O", "A2", "single", "s1", False),
        ("O", "B1", "single", "s2", False),
        ("B1", "C", "both", "s1", True),
        ("A1", "C", "both", "s2", True),
        ("B1", "D", "both", "s1", False),
        ("A2", "D", "both", "s2", False),
    ]
    # A1 is the treatment of one pair and the control of another; O controls three pairs;
    # C and D are each the treatment of two pairs
    ctrl = [rs[p.control]["doc_id"] for p in pairs]
    treat = [rs[p.treatment]["doc_id"] for p in pairs]
    assert ctrl.count("O") == 3 and "A1" in ctrl and "A1" in treat
    assert treat.count("C") == 2 and treat.count("D") == 2


def test_metrics_by_hand():
    m = mp.minimal_pair_scores(group_g1())
    # M (7 pairs): controls O,O,O,B1,A1,B1,A2 -> 1,1,1,0,0,0,1 = 4/7;
    #              treatments A1,A2,B1,C,C,D,D -> 0,1,0,1,1,0,0 = 3/7
    assert m["n_pairs.M"] == 7
    assert m["M.acc"] == pytest.approx(4 / 7) and m["M.acc_prime"] == pytest.approx(3 / 7)
    assert m["M.acc_chg"] == pytest.approx(-1 / 7)
    # M_i (gold changed): (O,A1) 3->1, (B1,C) 3->0, (A1,C) 1->0
    #   controls O,B1,A1 -> 1,0,0 = 1/3; treatments A1,C,C -> 0,1,1 = 2/3
    assert m["n_pairs.Mi"] == 3
    assert (m["Mi.acc"], m["Mi.acc_prime"]) == (pytest.approx(1 / 3), pytest.approx(2 / 3))
    assert m["Mi.acc_chg"] == pytest.approx(1 / 3)
    # M_u: (O,A2), (O,B1), (B1,D), (A2,D): controls 1,1,0,1 = 3/4; treatments 1,0,0,0 = 1/4
    assert m["n_pairs.Mu"] == 4
    assert (m["Mu.acc"], m["Mu.acc_prime"], m["Mu.acc_chg"]) == (0.75, 0.25, -0.5)
    # M_single: controls O,O,O = 1; treatments A1,A2,B1 = 1/3.  M_both: controls B1,A1,B1,A2 = 1/4;
    # treatments C,C,D,D = 1/2
    assert (m["Msingle.acc"], m["Msingle.acc_prime"]) == (1.0, pytest.approx(1 / 3))
    assert (m["Mboth.acc"], m["Mboth.acc_prime"], m["Mboth.acc_chg"]) == (0.25, 0.5, 0.25)
    assert m["n_pairs.Msingle"] == 3 and m["n_pairs.Mboth"] == 4 and m["n_unpaired"] == 0
    # plain per-instance accuracy counts each instance once: O; A1,A2,B1 -> 1/3; C,D -> 1/2
    assert mp.instance_accuracy(group_g1()) == {
        "acc_original": 1.0,
        "acc_single_neg": pytest.approx(1 / 3),
        "acc_both_neg": 0.5,
    }
    # every metric is numeric and flat (the runner averages these over seeds)
    assert all(isinstance(v, (int, float)) for v in m.values())


def test_groups_are_separate_and_missing_members_drop_pairs():
    g2 = [
        rec("P", None, None, 2, 0, group="g2"),
        rec("Q", 0, None, 2, 1, group="g2"),
        rec("R", 0, 0, 5, 1, group="g2"),
    ]  # R's other parent (None, 0) is absent
    # an instance of g3 whose original is not in the records (e.g. cut by --limit)
    g3 = [rec("S", None, 0, 1, 1, group="g3")]
    m = mp.minimal_pair_scores(group_g1() + g2 + g3)
    # g2 adds (P,Q) unchanged 2->2 (controls P wrong, treatment Q right) and (Q,R) changed 2->5
    # (both right); g3 adds nothing
    assert m["n_pairs.M"] == 9 and m["n_pairs.Mi"] == 4 and m["n_pairs.Mu"] == 5
    assert m["M.acc"] == pytest.approx((4 + 0 + 1) / 9) and m["M.acc_prime"] == pytest.approx(
        (3 + 1 + 1) / 9
    )
    assert m["Mu.acc"] == pytest.approx(3 / 5) and m["Mu.acc_prime"] == pytest.approx(2 / 5)
    assert m["n_unpaired"] == 1
    # the same cue ids in another group never pair across groups
    assert (
        mp.minimal_pair_scores(
            [rec("x", None, None, 1, 1, group="a"), rec("y", 0, None, 1, 1, group="b")]
        )["n_pairs.M"]
        == 0
    )


def test_empty_sets_are_nan_and_key_choice():
    m = mp.minimal_pair_scores([rec("O", None, None, 1, 1), rec("A", 0, None, 1, 0)])
    assert m["n_pairs.Mi"] == 0 and math.isnan(m["Mi.acc"]) and math.isnan(m["Mi.acc_chg"])
    assert (m["Mu.acc"], m["Mu.acc_prime"]) == (1.0, 0.0)
    # generation records are scored on exact_match, log-likelihood records on acc
    gen = group_g1(key="exact_match")
    assert mp.correctness_key(gen) == "exact_match" and mp.correctness_key(group_g1()) == "acc"
    assert mp.minimal_pair_scores(gen) == mp.minimal_pair_scores(group_g1())
    # a missing / None correctness counts as wrong
    rs = group_g1()
    rs[0]["acc"] = None
    assert mp.minimal_pair_scores(rs)["M.acc"] == pytest.approx(1 / 7)


def test_breakdown_by_added_cue():
    b = mp.pair_breakdown(group_g1())
    # added cue: (O,A1) end, (O,A2) mid, (O,B1) end, (B1,C) end [C's s1 cue], (A1,C) end,
    # (B1,D) mid [D's s1 cue], (A2,D) end [D's s2 cue]
    end, mid = b["neg_position"]["end"]["M"], b["neg_position"]["mid"]["M"]
    assert end["n"] == 5 and mid["n"] == 2
    # mid: (O,A2), (B1,D): controls 1,0; treatments 1,0
    assert (mid["acc"], mid["acc_prime"]) == (0.5, 0.5)
    # end: controls O,O,B1,A1,A2 = 3/5; treatments A1,B1,C,C,D = 2/5
    assert (end["acc"], end["acc_prime"]) == (pytest.approx(0.6), pytest.approx(0.4))
    assert b["added_to"]["s1"]["M"]["n"] == 4 and b["added_to"]["s2"]["M"]["n"] == 3
    assert set(b["target_pos"]) == {"動詞", "形容詞"}


def test_pairs_table_shape():
    m = mp.minimal_pair_scores(group_g1())
    t = mp.pairs_table(
        "Title",
        [("task.generate.0shot", m), ("other", {"acc": 1.0})],
        extra=(("unparseable", "unparseable"),),
    )
    lines = t.strip().splitlines()
    assert lines[0] == "Title"
    assert lines[2] == (
        "| unit | M Acc | M Acc' | M AccChg | M_i Acc | M_i Acc' | M_i AccChg | "
        "M_u Acc | M_u Acc' | M_u AccChg | n M | n M_i | n M_u | unparseable |"
    )
    # 4/7 = 57.14 %, 3/7 = 42.86 %, -1/7 = -14.29 points (bold); M_i +33.33; M_u -50.00 (bold)
    assert lines[4] == (
        "| task.generate.0shot | 57.14 | 42.86 | **-14.29** | 33.33 | 66.67 | 33.33 | "
        "75.00 | 25.00 | **-50.00** | 7 | 3 | 4 | – |"
    )
    assert len(lines) == 5  # a unit without pair metrics is left out
    assert mp.pairs_table("T", [("x", {})]) == ""


# -- shot selection ---------------------------------------------------------------------------------
def docs_from_fixture(split: str) -> list[Doc]:
    import negbench.tasks.jsts_neg.tasks as jsts_neg

    return jsts_neg.load_split(split, FIXTURES)


def test_stratified_four_and_eleven_shots():
    pool = docs_from_fixture("train")
    s = mp.StratifiedShots()
    assert s.split(4) == (2, 2) and s.split(11) == (5, 6)
    for seed in range(5):
        four = s.draw(pool, 4, seed)
        orig = [d for d in four if mp.is_original(d)]
        neg = [d for d in four if not mp.is_original(d)]
        assert len(orig) == 2 and len(neg) == 2
        assert len({d["gold"] for d in orig}) == 2 and len({d["gold"] for d in neg}) == 2
        eleven = s.draw(pool, 11, seed)
        orig = [d for d in eleven if mp.is_original(d)]
        neg = [d for d in eleven if not mp.is_original(d)]
        assert len(orig) == 5 and len(neg) == 6 and len({d.id for d in eleven}) == 11
        # D_orig of the fixture has scores 0-4 (no 5, as the paper's train split): five different
        # scores are all of them; D_neg's six different scores are 0-5
        assert sorted(d["gold"] for d in orig) == [0, 1, 2, 3, 4]
        assert sorted(d["gold"] for d in neg) == [0, 1, 2, 3, 4, 5]
        assert {d["gold"] for d in eleven} == set(range(6))


def test_stratified_deterministic_same_within_trial_different_across_seeds():
    pool = docs_from_fixture("train")
    test = docs_from_fixture("test")
    s = mp.StratifiedShots()
    draws = [[d.id for d in s.draw(pool, 4, seed)] for seed in range(5)]
    assert draws == [[d.id for d in s.draw(pool, 4, seed)] for seed in range(5)]  # deterministic
    assert len({tuple(d) for d in draws}) == 5  # seeds differ
    # the same shots for every evaluated record, through the runner's entry point
    per_doc = list(fewshot_draws(test, pool, 4, 3, same_split=False, sampler=s))
    assert len(per_doc) == len(test) and all([d.id for d in x] == draws[3] for x in per_doc)
    assert list(fewshot_draws(test, pool, 0, None, same_split=False, sampler=s)) == [[]] * len(test)
    # the string samplers are untouched by the hook
    assert (
        list(fewshot_draws(test, pool, 2, 3, False, "fixed"))[0]
        == list(fewshot_draws(test, pool, 2, 3, False, "fixed"))[-1]
    )


def test_stratified_footnote_9_and_limits():
    pool = docs_from_fixture("train")
    s = mp.StratifiedShots()
    assert s.max_shots(pool) == 11
    with pytest.raises(TaskError, match="6 different gold labels from D_orig") as e:
        s.draw(pool, 12, 0)  # the paper's footnote 9: no 12-shot setting
    assert "at most 11 shots" in str(e.value)
    # label field is configurable (JNLI-Neg uses the same field name "gold")
    only_orig = [d for d in pool if mp.is_original(d)]
    with pytest.raises(TaskError, match="D_neg"):
        s.draw(only_orig, 2, 0)


# -- correlations -----------------------------------------------------------------------------------
def test_pearson_spearman_by_hand():
    # x = 0,1,2,3; y = 0,1,1,3: sxy = 4.5, sxx = 5, syy = 4.75 -> r = 4.5 / sqrt(23.75)
    assert mp.corr([0, 1, 2, 3], [0, 1, 1, 3]) == pytest.approx(4.5 / math.sqrt(23.75))
    assert mp.ranks([3, 1, 1, 2]) == [4.0, 1.5, 1.5, 3.0]
    # ranks y = 1, 2.5, 2.5, 4: sxy = 4.5, sxx = 5, syy = 4.5 -> 4.5 / sqrt(22.5)
    assert mp.spearman([0, 1, 2, 3], [0, 1, 1, 3]) == pytest.approx(4.5 / math.sqrt(22.5))
    assert mp.corr([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(mp.corr([1, 2, 3], [2, 2, 2])) and math.isnan(mp.corr([1], [1]))
