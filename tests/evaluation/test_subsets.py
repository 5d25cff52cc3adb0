"""Subsets that keep each benchmark's structure (--limit / --sample): the generic rule on made-up
units, then each benchmark's declared rule on the real releases in the shared data folder
(skipped where a release is absent)."""

from __future__ import annotations

from collections import Counter

import pytest
from locations import SHARED as SHARED_FOLDER, TEST_DATA

from negbench.scoring.subsets import Selection, allocate, combine, select
from negbench.scoring.task import Doc, Structure

SHARED = SHARED_FOLDER / "data"


def _docs(rows):
    return [Doc(str(i), dict(r)) for i, r in enumerate(rows)]


# -- the generic rule --------------------------------------------------------------------------
def test_limit_takes_whole_units_in_data_order():
    docs = _docs([{"g": g, "x": i} for i, g in enumerate("aaabbbcccddd")])
    st = Structure(unit=("g",), unit_name="group", units_name="groups")
    got, sel = select(docs, st, limit=5)
    assert [d["g"] for d in got] == list("aaabbb")  # 6 is within half a unit of 5
    assert (sel.how, sel.n, sel.full, sel.units, sel.units_full, sel.subset) == (
        "limit",
        6,
        12,
        2,
        4,
        True,
    )
    assert "whole groups in data order, 2 of 4: 6 of 12 records" in sel.rule
    assert "(limit 5: 6 in whole groups" in sel.rule  # says why it is not 5
    got, sel = select(docs, st, limit=1)
    assert [d["g"] for d in got] == list("aaa") and sel.n == 3  # at least one whole unit
    got, sel = select(docs, st, limit=100)
    assert got is docs and not sel.subset and sel.n == sel.full == 12


def test_strata_in_proportion_and_records_in_data_order():
    rows = [{"s": "big"}] * 60 + [{"s": "mid"}] * 30 + [{"s": "small"}] * 10
    docs = _docs(rows)
    st = Structure(stratum="s", stratum_name="kind")
    got, sel = select(docs, st, limit=10)
    assert Counter(d["s"] for d in got) == {"big": 6, "mid": 3, "small": 1}
    assert [int(d.id) for d in got] == sorted(int(d.id) for d in got)
    assert sel.missing_strata == () and "spread over the 3 kinds in proportion" in sel.rule
    # shares 2.4 / 1.2 / 0.4: the first pass rounds each stratum (small's 0.4 is under half a
    # record), the second fills what is left of N with the stratum furthest below its share
    got, sel = select(docs, st, limit=4)
    assert Counter(d["s"] for d in got) == {"big": 2, "mid": 1, "small": 1}
    got, sel = select(docs, st, limit=2)
    assert Counter(d["s"] for d in got) == {"big": 1, "mid": 1} and sel.missing_strata == ("small",)


def test_sample_is_seeded_and_differs_from_limit():
    docs = _docs([{"g": i // 2} for i in range(200)])
    st = Structure(unit=("g",))
    a, sa = select(docs, st, sample=20, seed=1)
    b, _ = select(docs, st, sample=20, seed=1)
    c, _ = select(docs, st, sample=20, seed=2)
    first, _ = select(docs, st, limit=20)
    assert [d.id for d in a] == [d.id for d in b] != [d.id for d in c]
    assert [d.id for d in a] != [d.id for d in first] and len(a) == 20
    assert Counter(d["g"] for d in a).most_common(1)[0][1] == 2  # pairs kept together
    assert sa.how == "sample" and sa.seed == 1 and "random order (seed 1)" in sa.rule


def test_allocate_lands_within_half_a_unit():
    units = [(p, size) for p, size in [(1, 94)] * 30 + [(9, 4)] * 20 + [(5, 96)] * 10]
    for n in (1, 50, 200, 1000, 3000):
        chosen = allocate(units, n, seed=0)
        got = sum(units[i][1] for i in chosen)
        assert chosen == sorted(chosen) and len(set(chosen)) == len(chosen)
        assert abs(got - n) <= 96 / 2 or len(chosen) == 1, (n, got)


def test_selection_round_trip_and_combine():
    own = Selection("sample", 192, 381300, 0, "3 blocks", 200, 3, 4100)
    assert Selection.from_dict(own.to_dict()) == own
    lim = Selection("limit", 4, 192, None, "1 block", 12, 1, 3)
    both = combine(own, lim)
    assert (both.n, both.full, both.how) == (
        4,
        381300,
        "limit",
    ) and "3 blocks; then 1 block" in both.rule
    assert combine(own, Selection("all", 192, 192)) is own
    # a stratum the sample left out stays missing after --limit: both lists, in order
    own2 = Selection("sample", 192, 381300, 0, "3 blocks", 200, 3, 4100, ("2", "10", "3"))
    lim2 = Selection("limit", 4, 192, None, "1 block", 12, 1, 3, ("1",))
    assert combine(own2, lim2).missing_strata == ("1", "2", "3", "10")


# -- each benchmark's rule on its release ---------------------------------------------------------
def _task(name: str, folder: str, monkeypatch):
    if not (SHARED / folder).exists():
        pytest.skip(f"{SHARED / folder} is not here")
    monkeypatch.setenv("NEGBENCH_DATA", str(SHARED))
    from negbench.tasks import get_task

    t = get_task(name)
    return t, t.load(t.test_split)


def test_scone_limit_12_covers_the_six_conditions(monkeypatch):
    t, docs = _task("scone-nli", "scone", monkeypatch)
    got, sel = select(docs, t.structure, limit=12)
    assert Counter(d["split"] for d in got) == {
        c: 2
        for c in (
            "no_negation",
            "one_not_scoped",
            "two_not_scoped",
            "two_scoped",
            "one_scoped",
            "one_scoped_one_not_scoped",
        )
    }
    assert (sel.n, sel.full) == (12, 1200) and "6 conditions" in sel.rule


def test_condaqa_limit_8_keeps_two_whole_contrast_groups(monkeypatch):
    t, docs = _task("condaqa", "condaqa", monkeypatch)
    got, sel = select(docs, t.structure, limit=8)
    groups = Counter((d["PassageID"], d["QuestionID"]) for d in got)
    assert sel.n == 8 and sel.full == 7240 and len(groups) == 2
    assert all(
        sorted(d["PassageEditID"] for d in got if (d["PassageID"], d["QuestionID"]) == g)
        == [0, 1, 2, 3]
        for g in groups
    )  # consistency is defined
    # every group of the subset is whole: no group of the release is cut
    full = Counter((d["PassageID"], d["QuestionID"]) for d in docs)
    got, _ = select(docs, t.structure, sample=300, seed=3)
    part = Counter((d["PassageID"], d["QuestionID"]) for d in got)
    assert all(part[g] == full[g] for g in part) and abs(len(got) - 300) <= 2


def test_notadataset_sample_200_whole_blocks_and_the_task_option_agrees(monkeypatch):
    t, docs = _task("notadataset", "not-a-dataset", monkeypatch)
    got, sel = select(docs, t.structure, sample=200, seed=0)
    blocks = Counter(d["block"] for d in got)
    sizes = {d["block"]: d["block_size"] for d in got}
    assert all(blocks[b] == sizes[b] for b in blocks)  # whole blocks only
    assert abs(sel.n - 200) <= max(sizes.values()) / 2 and sel.n == len(got)
    assert f"sample 200: {sel.n} in whole blocks" in sel.rule and sel.missing_strata
    # notadataset[sample=200,seed=0] evaluates exactly these sentences, and says so
    from negbench.tasks import get_task

    opt = get_task("notadataset[sample=200,seed=0]")
    own = opt.load("eval")
    assert [d.id for d in own] == [d.id for d in got]
    assert opt.own_subset("eval").to_dict() == sel.to_dict()
    # a big sample reaches every pattern, in proportion to its sentences
    got, sel = select(docs, t.structure, sample=20000, seed=0)
    share = Counter(d["pattern_id"] for d in got)
    full = Counter(d["pattern_id"] for d in docs)
    assert abs(sel.n - 20000) <= 100 and len(share) >= 9
    assert abs(share[1] / sel.n - full[1] / len(docs)) < 0.01


def test_jnli_neg_limit_keeps_minimal_pair_groups_whole(monkeypatch):
    t, docs = _task("jnli-neg", "jnli-neg", monkeypatch)
    got, sel = select(docs, t.structure, limit=50)
    full = Counter(d["group"] for d in docs)
    part = Counter(d["group"] for d in got)
    assert all(part[g] == full[g] for g in part) and abs(sel.n - 50) <= max(full.values()) / 2
    import negbench.tasks.common.minimal_pairs as mp

    recs = [
        {
            "meta": {
                "group": d["group"],
                "s1_neg_id": d["s1_neg_id"],
                "s2_neg_id": d["s2_neg_id"],
                "gold": d["gold"],
            }
        }
        for d in got
    ]
    assert len(mp.derive_pairs([r["meta"] for r in recs])) > 0  # pairs survive a subset


def test_konubench_limit_spreads_over_clause_types(monkeypatch):
    t, docs = _task("konubench", "konubench", monkeypatch)
    got, sel = select(docs, t.structure, limit=100)
    full = Counter(d["local_negation_type"] for d in docs)
    part = Counter(d["local_negation_type"] for d in got)
    assert sel.n == 100 and set(part) == set(full)
    for k in full:  # within one record
        assert abs(part[k] - 100 * full[k] / len(docs)) <= 1


def test_nubench_fixture_limit_spreads_over_categories(monkeypatch):
    monkeypatch.setenv("NEGBENCH_NUBENCH", str(TEST_DATA / "nubench"))
    import negbench.tasks.nubench.tasks as nb

    nb.clear_cache()
    t = nb.make_tasks()[0]
    docs = t.load("test")
    got, sel = select(docs, t.structure, limit=10)
    full = Counter(d["choice2_type"] for d in docs)
    part = Counter(d["choice2_type"] for d in got)
    assert sel.n == 10 and "local-negation categories" in sel.rule
    assert all(abs(part[k] - 10 * full[k] / len(docs)) <= 1 for k in full)


def test_limit_as_a_share_is_counted_as_lm_eval_and_taken_in_whole_units():
    docs = _docs([{"g": g} for g in "aaabbbcccddd"])
    st = Structure(unit=("g",), unit_name="group", units_name="groups")
    got, sel = select(docs, st, limit=0.25)  # ceil(0.25 × 12) = 3: one whole group
    assert [d["g"] for d in got] == list("aaa") and sel.asked == 3 and sel.how == "limit"
    assert sel.rule.startswith("0.25 of the records, so 3: whole groups in data order")
    got, sel = select(docs, st, limit=0.3)  # ceil(3.6) = 4: within half a group of 4 → 3
    assert sel.asked == 4 and sel.n == 3
    got, sel = select(_docs([{"g": "a"}] * 3), st, limit=0.01)  # at least one record asked
    assert sel.asked == 1 and sel.n == 3
