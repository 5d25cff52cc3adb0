"""This is not a Dataset: loaders, splits, samples, the official scorer's metrics (worked out by
hand on hand-built blocks), the §4.2 prompt and scoring, and sharded / resumable runs."""

from __future__ import annotations

import json
import math

import pytest

from negbench.errors import DataError, TaskError
from negbench.tasks import get_task
import negbench.tasks.notadataset.tasks as nad
from negbench.tasks.notadataset.truth_scorer import (
    Judged,
    accuracy_cells,
    block_coherence,
    coherence,
    regular_label,
)
from locations import SHARED, TEST_DATA

DATA = TEST_DATA / "notadataset"
REAL = SHARED / "data" / "not-a-dataset"
REAL_ZIP = REAL / "data" / nad.RAW_ZIP


def J(pid, block, neg, dist, label, pred, sem=None, scope=None):
    if neg == "affirmation":
        sem, scope = "none", "none"
    return Judged(pid, block, neg, sem or "analytic", scope or "clausal", dist, label, pred)


# -- hand-built blocks (pattern 6 = Part, regular labels: in-aff T, in-neg F, dis-aff F, dis-neg T)
def block_a():  # all correct
    return [
        J(6, "A", "affirmation", False, True, True),
        J(6, "A", "affirmation", True, False, False),
        J(6, "A", "verbal", False, False, False),
        J(6, "A", "non_verbal", True, True, True, "synthetic", "subclausal"),
    ]


def block_b():  # "all True" behaviour
    return [
        J(6, "B", "affirmation", False, True, True),
        J(6, "B", "affirmation", True, False, True),
        J(6, "B", "verbal", False, False, True),
        J(6, "B", "non_verbal", True, True, True, "synthetic", "subclausal"),
    ]


def block_c():  # every answer wrong, but coherent
    return [
        J(6, "C", "affirmation", False, True, False),
        J(6, "C", "affirmation", True, False, True),
        J(6, "C", "verbal", False, False, True),
        J(6, "C", "non_verbal", True, True, False, "synthetic", "subclausal"),
    ]


def test_regular_labels_are_table_10():
    for pid in range(1, 12):
        ant = pid in (2, 4)
        assert regular_label(pid, False, True) is (not ant)  # w/o distractor, affirmation
        assert regular_label(pid, False, False) is ant  # w/o distractor, negation
        assert regular_label(pid, True, True) is False  # w/ distractor, affirmation
        assert regular_label(pid, True, False) is True  # w/ distractor, negation


def test_accuracy_cells_by_hand():
    cells = accuracy_cells(block_a() + block_b() + block_c())
    # all: TP = A2 + B2, TN = A2, FP = B2 + C2, FN = C2  -> 6/12
    assert {k: cells["all"][k] for k in ("TP", "TN", "FP", "FN")} == {
        "TP": 4,
        "TN": 2,
        "FP": 4,
        "FN": 2,
    }
    assert cells["all"]["accuracy"] == 50.0
    assert cells["input_affirmation"] == {"TP": 2, "FP": 0, "FN": 1, "TN": 0, "accuracy": 66.67}
    assert cells["input_negation"] == {"TP": 0, "FP": 2, "FN": 0, "TN": 1, "accuracy": 33.33}
    assert cells["distractor_affirmation"]["accuracy"] == 33.33
    assert cells["distractor_negation"] == {"TP": 2, "FP": 0, "FN": 1, "TN": 0, "accuracy": 66.67}
    assert cells["all_affirmations"]["accuracy"] == 50.0
    na = cells["Negation_analysis"]
    assert na["verbal_all"] == {"TP": 0, "FP": 2, "FN": 0, "TN": 1, "accuracy": 33.33}
    # the official scorer creates _input/_distractor with _all; an empty cell scores 0
    assert na["verbal_distractor"] == {"TP": 0, "FP": 0, "FN": 0, "TN": 0, "accuracy": 0}
    assert na["synthetic_distractor"]["accuracy"] == 66.67
    assert set(na) == {
        f"{t}_{s}"
        for t in ("verbal", "analytic", "clausal", "non_verbal", "synthetic", "subclausal")
        for s in ("all", "input", "distractor")
    }


def test_report_sections_equal_their_parts():
    """One pass over all sentences gives each pattern's section exactly as scoring that
    pattern's sentences alone, and the Random row scores the same sentences with other answers."""
    import random
    from negbench.tasks.notadataset.truth_scorer import Columns, report_columns

    rnd = random.Random(3)
    items = []
    for b in range(60):
        pid = rnd.choice([1, 2, 4, 6, 9])
        for i in range(rnd.randint(4, 12)):
            neg = rnd.choice(["affirmation", "verbal", "non_verbal"])
            dist = rnd.random() < 0.5
            label = regular_label(pid, dist, neg == "affirmation") != (rnd.random() < 0.1)
            items.append(
                J(
                    pid,
                    f"b{b}",
                    neg,
                    dist,
                    label,
                    rnd.random() < 0.6,
                    sem=rnd.choice(["analytic", "synthetic"]),
                    scope=rnd.choice(["clausal", "subclausal"]),
                )
            )
    rep = report_columns(Columns.of(items), Columns.of(items).blocks())
    assert {k: v for k, v in rep.items() if k not in nad.PATTERNS.values()} == {
        **accuracy_cells(items),
        "coherence_scores": coherence([x for x in items if x.block == f"b{b}"] for b in range(60)),
    }
    for pid, name in nad.PATTERNS.items():
        sub = [x for x in items if x.pattern_id == pid]
        if not sub:
            assert name not in rep
            continue
        blocks = {x.block for x in sub}
        assert rep[name] == {
            **accuracy_cells(sub),
            "coherence_scores": coherence([x for x in sub if x.block == b] for b in sorted(blocks)),
        }
    sizes = {f"b{b}": sum(x.block == f"b{b}" for x in items) for b in range(60)}
    flip = random.Random(0).random
    coin = [Judged(*x[:7], flip() < 0.5) for x in items]
    assert nad.random_draw(items, sizes) == nad.table4_row(nad.scorer_report(coin, sizes))
    # the Random row is the expectation of the coin, not one draw: the mean of many draws
    exp = nad.random_baseline(items, sizes)
    draws = [nad.random_draw(items, sizes, seed=s) for s in range(400)]
    for k, v in exp.items():
        if v != v:
            continue
        m = sum(d[k] for d in draws) / len(draws)
        assert abs(m - v) < 2.0, (k, m, v)  # 400 draws: the mean's SE is < 0.6 points here
        if k.startswith("acc"):
            assert v == 50.0


def test_random_expectation_is_exact_on_a_small_block():
    """Every one of the 2^n answer patterns of two small blocks, scored as a run: their mean
    is the Random row's expectation, to the last digit."""
    import itertools

    items = [
        J(1, "b0", "affirmation", False, True, False),
        J(1, "b0", "verbal", False, False, False),
        J(1, "b0", "non_verbal", False, False, False),
        J(1, "b0", "affirmation", True, False, False),
        J(1, "b0", "verbal", True, True, False),
        J(2, "b1", "affirmation", False, False, False),
        J(2, "b1", "verbal", False, True, False),
        J(2, "b1", "affirmation", True, False, False),
        J(2, "b1", "verbal", True, True, False),
    ]
    sizes = {"b0": 5, "b1": 4}
    rows = []
    for answers in itertools.product([False, True], repeat=len(items)):
        got = [Judged(*x[:7], a) for x, a in zip(items, answers)]
        rows.append(nad.table4_row(nad.scorer_report(got, sizes)))
    exp = nad.random_baseline(items, sizes)
    for k in ("coherence_all", "coherence_wo_distractor", "coherence_w_distractor"):
        # every block scorable here: the expected share is the mean share
        assert exp[k] == pytest.approx(sum(r[k] for r in rows) / len(rows), abs=0.01), k
    for k, v in exp.items():
        if k.startswith("acc") and v == v:
            assert v == pytest.approx(sum(r[k] for r in rows) / len(rows))


def test_calibration_bins_by_their_edges():
    """ECE bins are b/bins <= p < (b+1)/bins (1.0 in the last), compared, not rounded from p·bins."""
    import random

    rnd = random.Random(5)
    p = [rnd.random() for _ in range(500)] + [0.0, 0.1, 0.3, 0.7, 0.9, 1.0, 0.29999999999999993]
    y = [rnd.random() < q for q in p]

    def reference(p, y, bins=10):  # the definition, one list per bin
        ece = 0.0
        for b in range(bins):
            idx = [
                i
                for i, q in enumerate(p)
                if b / bins <= q < (b + 1) / bins or (b == bins - 1 and q == 1.0)
            ]
            if idx:
                conf = sum(p[i] for i in idx) / len(idx)
                freq = sum(float(y[i]) for i in idx) / len(idx)
                ece += len(idx) / len(p) * abs(conf - freq)
        return ece

    got = nad.calibration(p, y)
    assert got["ece"] == pytest.approx(reference(p, y), abs=1e-12)
    assert got["brier"] == pytest.approx(sum((q - float(t)) ** 2 for q, t in zip(p, y)) / len(p))


def test_block_coherence_by_hand():
    a, b, c = (block_coherence(x()) for x in (block_a, block_b, block_c))
    assert all(a.values())  # coherent everywhere
    assert not any(b.values())  # True/True everywhere
    assert all(c.values())  # all wrong, still coherent
    rep = coherence([block_a(), block_b(), block_c()])
    assert rep["All"] == {"Coherent": 2, "Incoherent": 1, "Coherence_percentage": 66.67}
    assert rep["Input-Distractor_Negation"]["Coherence_percentage"] == 66.67


def test_antonymy_block_by_hand():
    # pattern 2: regular labels in-aff F, in-neg T, dis-aff F, dis-neg T; plus one irregular
    # (dual-template) affirmation labelled True, which coherence skips but "All" still checks
    blk = [
        J(2, "D", "affirmation", False, False, False),
        J(2, "D", "verbal", False, True, True),
        J(2, "D", "affirmation", True, False, False),
        J(2, "D", "verbal", True, True, True),
        J(2, "D", "affirmation", False, True, False),
    ]
    v = block_coherence(blk)
    assert v["Affirmation-Negation_Input"] and v["Affirmation-Negation_Distractor"]
    assert v["All"] is False  # one wrong, four right
    # antonymy: the same answer with and without distractor is the coherent one
    assert v["Input-Distractor_Affirmation"] and v["Input-Distractor_Negation"]
    v2 = block_coherence(blk[:4])
    assert v2["All"] is True
    flipped = [
        J(2, "E", "affirmation", False, False, False),
        J(2, "E", "verbal", False, True, True),
        J(2, "E", "affirmation", True, False, True),
        J(2, "E", "verbal", True, True, False),
    ]
    v3 = block_coherence(flipped)
    assert v3["Input-Distractor_Affirmation"] is False and v3["Input-Distractor_Negation"] is False
    assert v3["Affirmation-Negation_Distractor"] is True and v3["All"] is False


def test_non_uniform_answers_and_unscorable_blocks():
    blk = block_a() + [J(6, "A", "affirmation", False, True, False)]  # a second template variation
    v = block_coherence(blk)
    assert v["Affirmation-Negation_Input"] is False and v["Input-Distractor_Affirmation"] is False
    assert v["Affirmation-Negation_Distractor"] is True and v["All"] is False
    only_input = [x for x in block_a() if not x.is_distractor]  # where evaluate.py crashes
    v = block_coherence(only_input)
    assert v["Affirmation-Negation_Input"] is True
    assert v["Affirmation-Negation_Distractor"] is None and v["All"] is None
    rep = coherence([only_input])
    assert rep["Affirmation-Negation_Distractor"]["Unscorable"] == 1
    assert rep["Affirmation-Negation_Distractor"]["Coherence_percentage"] == 0


# -- loaders ----------------------------------------------------------------------------------------
def test_raw_fixture_loader():
    rel = nad.load_release(str(DATA / "raw"))
    assert len(rel.blocks) == 5 and len(rel.sentences) == 3 * 6 + 2 * 6
    b = rel.blocks["p02.b000001"]
    assert b.pattern_id == 2 and b.size == 6 and b.source.startswith("ant(")
    assert [k for k, _ in b.distractors] == ["Distractor-1", "Distractor-2"]
    s = [x for x in rel.sentences if x.block == "p02.b000001"]
    assert [x.distractor for x in s[:3]] == [0, 1, 2]
    assert s[0].template == "1-1" and s[0].label is False and s[3].negation_type == "verbal"
    assert rel.split_counts == {2: (1, 0, 1), 6: (1, 1, 1)}


@pytest.mark.parametrize(
    "line,field",
    [
        ("1-1\taffirmation\tnone\tnone\tInput\tT", None),  # 6 fields
        ("1-1\tnegated\tnone\tnone\tInput\tT\tA cat.", "negation_type"),
        ("1-1\tverbal\tnone\tclausal\tInput\tT\tA cat.", "negation_type"),  # inconsistent
        ("1-1\taffirmation\tnone\tnone\tOutput\tT\tA cat.", "Input|Distractor"),
        ("1-1\taffirmation\tnone\tnone\tInput\tmaybe\tA cat.", "label"),
        ("1-1\taffirmation\tnone\tnone\tInput\tT\t ", "sentence"),
    ],
)
def test_raw_malformed_lines_name_file_line_and_field(tmp_path, line, field):
    d = tmp_path / "raw"
    d.mkdir()
    (d / "#06.Pattern.txt").write_text(f"% Test 000001\tSource: x\tDistractor: y\n\n{line}\n")
    with pytest.raises(DataError) as e:
        nad.read_raw(d)
    msg = e.value.render()
    assert "#06.Pattern.txt" in msg and "line 3" in msg
    if field:
        assert field in msg


def test_raw_line_before_header_and_bad_header(tmp_path):
    for text, what in (
        ("1-1\taffirmation\tnone\tnone\tInput\tT\tA cat.\n", "before the first"),
        ("% Tset 01\tSource: x\n", "bad block header"),
    ):
        d = tmp_path / what.replace(" ", "_")
        d.mkdir()
        (d / "#06.Pattern.txt").write_text(text)
        with pytest.raises(DataError, match=what):
            nad.read_raw(d)


def test_hub_jsonl_loader_keeps_the_official_split():
    rel = nad.load_release(str(DATA / "hub"))
    assert rel.official_split == {"t0": "train", "t1": "dev", "t2": "test"}
    assert nad.block_split(rel, seed=123) == rel.official_split  # seed ignored
    sel = nad.parse_selection({"source": str(DATA / "hub"), "split": "test"})
    assert [s.block for s in sel.sentences()] == ["t2"] * 4


def test_hub_record_errors(tmp_path):
    good = {
        "pattern_id": 6,
        "pattern": "Part",
        "test_id": 0,
        "negation_type": "verbal",
        "semantic_type": "analytic",
        "syntactic_scope": "clausal",
        "isDistractor": False,
        "label": True,
        "sentence": "x",
    }
    for change, field in (
        ({"pattern": "Member"}, "pattern"),
        ({"pattern_id": 12}, "pattern_id"),
        ({"label": "yes"}, "label"),
        ({"negation_type": "double"}, "negation_type"),
    ):
        f = tmp_path / f"{field}.jsonl"
        f.write_text(json.dumps(good) + "\n" + json.dumps({**good, **change}) + "\n")
        with pytest.raises(DataError) as e:
            nad.read_jsonl_release(f)
        assert field in e.value.render() and "line 2" in e.value.render()


def test_missing_data_and_bad_options():
    with pytest.raises(DataError, match="not found"):
        nad.load_release("/nonexistent/notadataset.zip")
    with pytest.raises(TaskError, match="unknown option"):
        get_task("notadataset[splt=test]")
    with pytest.raises(TaskError, match="split"):
        get_task("notadataset[split=validation]")
    with pytest.raises(TaskError, match="type"):
        get_task("notadataset[types=affirmation+double]")


# -- splits, samples, selections --------------------------------------------------------------------
def test_block_split_is_by_block_seeded_and_uses_the_counts():
    rel = nad.load_release(str(DATA / "raw"))
    sp = nad.block_split(rel, 0)
    assert sp == nad.block_split(rel, 0)
    per = {}
    for k, s in sp.items():
        per.setdefault((rel.blocks[k].pattern_id, s), 0)
        per[(rel.blocks[k].pattern_id, s)] += 1
    assert per == {(2, "train"): 1, (2, "test"): 1, (6, "train"): 1, (6, "dev"): 1, (6, "test"): 1}
    assert any(nad.block_split(rel, s) != sp for s in range(1, 20))


def test_stratified_sample_whole_blocks_every_pattern():
    rel = nad.load_release(str(DATA / "raw"))
    keys = nad.stratified_blocks(rel, list(rel.blocks), n_sentences=10, seed=0)
    assert {rel.blocks[k].pattern_id for k in keys} == {2, 6}  # 2 of 5 blocks, one each
    assert sum(rel.blocks[k].size for k in keys) == 12  # 10 within half a block of 6
    assert keys == nad.stratified_blocks(rel, list(rel.blocks), 10, 0)


def test_type_selection():
    sel = nad.parse_selection({"source": str(DATA / "raw"), "types": "affirmation+synthetic"})
    got = sel.sentences()
    assert {s.negation_type for s in got} == {"affirmation", "non_verbal"}
    assert all(s.semantic_type == "synthetic" for s in got if s.negation_type != "affirmation")
    sel = nad.parse_selection({"source": str(DATA / "raw"), "patterns": "2"})
    assert {s.pattern_id for s in sel.sentences()} == {2}


# -- prompt and scoring -----------------------------------------------------------------------------
def test_prompts_are_section_4_2(monkeypatch):
    monkeypatch.setenv("NEGBENCH_NOTADATASET", str(DATA / "raw"))
    t = get_task("notadataset[split=all]")
    d = t.load("eval")[0]
    spec = t.mode("next_token")
    assert (
        spec.render(d).query
        == "Is the following statement True or False? Victory and defeat are the same thing."
    )
    assert spec.render_chat(d).query == (
        "Is the following statement True or False? Answer only "
        "True or False. Victory and defeat are the same thing."
    )
    assert spec.render(d).choices == ["True", "False"] and spec.render(d).gold == 1


def test_true_false_next_token_threshold():
    from negbench.scoring.formulations import TrueFalseNextToken
    from negbench.core.requests import NextTokenResponse
    from negbench.scoring.task import Rendered

    f = TrueFalseNextToken()
    r = Rendered("q", ["True", "False"], 0)
    (req,) = f.requests("ctx", r)
    assert req.labels == ("True", "False") and req.label_prefix == ""
    tie = f.score(r, [NextTokenResponse({"True": -1.0, "False": -1.0}, {"True": 5, "False": 6})])
    assert tie["p_true"] == 0.5 and tie["pred_bool"] is False and tie["acc"] == 0.0  # "> 0.5"
    s = f.score(
        r,
        [
            NextTokenResponse(
                {"True": math.log(0.3), "False": math.log(0.1)}, {"True": 5, "False": 6}
            )
        ],
    )
    assert s["p_true"] == pytest.approx(0.75) and s["pred_bool"] is True and s["acc"] == 1.0


def test_generated_label_rule():
    assert nad.generated_label(" TRUE.") == "True"
    assert nad.generated_label(" Untrue") == "True"  # the official substring rule
    assert nad.generated_label(" False") == "False" and nad.generated_label("") == "False"


def _run(tmp_path, tiny_llama, monkeypatch, task, **kw):
    from negbench.backends.hf import HFBackend
    from negbench.core.engine import Engine, EngineConfig
    from negbench.evaluation.runner import RunConfig, evaluate
    from negbench.evaluation.store import RunStore

    monkeypatch.setenv("NEGBENCH_NOTADATASET", str(DATA / "raw"))
    be = HFBackend(str(tiny_llama), dtype="float32", device="cpu")
    eng = Engine(be, None, EngineConfig(progress=False))
    cfg = RunConfig(model=str(tiny_llama), tasks=[task], **kw)
    store = RunStore(tmp_path / "run")
    return evaluate(cfg, be, eng, store, log=lambda s: None), store, be, eng


def test_end_to_end_metrics_recomputed_from_samples(tmp_path, tiny_llama, monkeypatch):
    res, store, _, _ = _run(
        tmp_path, tiny_llama, monkeypatch, "notadataset[split=all]", modes=["next_token", "cloze"]
    )
    m = res["units"]["notadataset[split=all].next_token.0shot"]["metrics"]
    recs = store.read_samples("notadataset[split=all].next_token.0shot")
    assert len(recs) == 30 and m["blocks_complete"] == 5 and m["blocks_partial"] == 0

    # recompute a few cells independently from the records
    def acc(pred):
        sel = [r for r in recs if pred(r["meta"])]
        return sum((r["p_true"] > 0.5) == r["meta"]["label"] for r in sel) / len(sel)

    assert m["acc_aff_wo"] == pytest.approx(
        acc(lambda x: x["negation_type"] == "affirmation" and not x["is_distractor"])
    )
    assert m["acc_neg_w"] == pytest.approx(
        acc(lambda x: x["negation_type"] != "affirmation" and x["is_distractor"])
    )
    assert m["acc"] == pytest.approx(acc(lambda x: True))
    blocks = {}
    for r in recs:
        blocks.setdefault(r["meta"]["block"], []).append(r)
    coh = [
        block_coherence(
            [
                J(
                    r["meta"]["pattern_id"],
                    b,
                    r["meta"]["negation_type"],
                    r["meta"]["is_distractor"],
                    r["meta"]["label"],
                    r["p_true"] > 0.5,
                )
                for r in rs
            ]
        )["All"]
        for b, rs in blocks.items()
    ]
    assert m["coherence_all"] == pytest.approx(round(100 * sum(coh) / len(coh), 2) / 100)
    assert 0 <= m["p_true" if False else "brier"] <= 1 and "scorer" in m and "Part" in m["scorer"]
    assert "Table 4 shape" in res["tables"]["notadataset[split=all].next_token"]
    # a saved run rescored without the model gives the same metrics
    from negbench.evaluation.runner import rescore

    again = rescore(store)
    assert again["units"]["notadataset[split=all].next_token.0shot"]["metrics"]["acc"] == m["acc"]


def test_limit_keeps_whole_blocks(tmp_path, tiny_llama, monkeypatch):
    """--limit 9 takes whole blocks (6 sentences each), one per pattern: coherence is defined."""
    res, _, _, _ = _run(tmp_path, tiny_llama, monkeypatch, "notadataset", limit=9)
    u = res["units"]["notadataset.next_token.0shot"]
    m = u["metrics"]
    assert (m["n"], m["blocks_complete"], m["blocks_partial"]) == (12, 2, 0)
    assert u["subset"]["n"] == 12 and u["subset"]["full"] == 30 and u["subset"]["subset"]
    assert m["coherence_all"] == m["coherence_all"]  # defined (not NaN)


def test_sharded_run_resumes_finished_shards(tmp_path, tiny_llama, monkeypatch):
    from negbench.core.engine import Engine

    calls = {"n": 0}
    real = Engine.run

    def flaky(self, reqs, desc="scoring", bar=None):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt  # killed during the third shard
        return real(self, reqs, desc, bar)

    monkeypatch.setattr(Engine, "run", flaky)
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, tiny_llama, monkeypatch, "notadataset", shard_size=8)
    shards = sorted((tmp_path / "run" / "samples" / ".shards").glob("*.digest"))
    assert len(shards) == 2  # two finished shards were saved
    calls["n"] = 10  # no more failures
    seen = []
    monkeypatch.setattr(
        Engine,
        "run",
        lambda self, reqs, desc="scoring", bar=None: (
            seen.append(len(reqs)) or real(self, reqs, desc, bar)
        ),
    )
    res, store, _, _ = _run(tmp_path, tiny_llama, monkeypatch, "notadataset", shard_size=8)
    assert seen == [8, 6]  # only shards 3 and 4 were scored
    assert res["shards"] == 4 and not (tmp_path / "run" / "samples" / ".shards").exists()
    recs = store.read_samples("notadataset.next_token.0shot")
    assert [r["doc_id"] for r in recs][:2] == ["p02.b000001.0", "p02.b000001.1"] and len(recs) == 30


def test_export_alpaca_with_selection(monkeypatch):
    from negbench.tasks.alpaca import get_exporter

    monkeypatch.setenv("NEGBENCH_NOTADATASET", str(DATA / "raw"))
    ex = get_exporter("notadataset[types=affirmation]")
    recs = ex.records("train")
    assert recs and all(r["negation_type"] == "affirmation" for r in recs)
    assert recs[0]["instruction"] == "Is the following statement True or False?"
    assert {r["output"] for r in recs} <= {"True", "False"}


# -- the real release -------------------------------------------------------------------------------
needs_real = pytest.mark.skipif(
    not REAL_ZIP.is_file(), reason="../shared/data/not-a-dataset absent"
)


@needs_real
def test_real_release_counts_equal_the_paper():
    rel = nad.load_release(str(REAL_ZIP))
    assert len(rel.sentences) == 381_300 and len(rel.blocks) == 4_100
    for pid, (blocks, sents) in nad.PAPER_TABLE2.items():
        assert sum(1 for b in rel.blocks.values() if b.pattern_id == pid) == blocks
        assert sum(1 for s in rel.sentences if s.pattern_id == pid) == sents
    sp = nad.block_split(rel, 0)
    n = {s: 0 for s in ("train", "dev", "test")}
    for s in rel.sentences:
        n[sp[s.block]] += 1
    # §6: 268,505 / 90,281 sentences in 2,876 / 980 blocks (dev: 22,514; the paper prints 2,514)
    assert n == {"train": 268_505, "dev": 22_514, "test": 90_281}


@needs_real
def test_real_label_totals_equal_the_official_scorer_output():
    """Each cell's gold totals in the official aggregate output (TP+FN true, FP+TN false) must equal
    ours: scoring every sentence as False leaves FN = #true and TN = #false in every cell."""
    official = json.loads((REAL / "results" / "vicuna-13b-v1.1.json").read_text())
    rel = nad.load_release(str(REAL_ZIP))
    items = [
        Judged(
            s.pattern_id,
            s.block,
            s.negation_type,
            s.semantic_type,
            s.syntactic_scope,
            s.is_distractor,
            s.label,
            False,
        )
        for s in rel.sentences
    ]
    sizes = {k: b.size for k, b in rel.blocks.items()}
    ours = nad.scorer_report(items, sizes)

    def check(o, w, where):
        for k, cell in o.items():
            if isinstance(cell, dict) and "TP" in cell:
                assert (w[k]["FN"], w[k]["TN"]) == (
                    cell["TP"] + cell["FN"],
                    cell["FP"] + cell["TN"],
                ), f"{where}{k}"

    check(official, ours, "")
    check(official["Negation_analysis"], ours["Negation_analysis"], "Negation_analysis/")
    for name in nad.PATTERNS.values():
        check(official[name], ours[name], name + "/")
        check(official[name]["Negation_analysis"], ours[name]["Negation_analysis"], name + "/NA/")
        for cell, v in official[name]["coherence_scores"].items():
            w = ours[name]["coherence_scores"][cell]
            assert w["Coherent"] + w["Incoherent"] == v["Coherent"] + v["Incoherent"]
            assert "Unscorable" not in w


# -- chat prompt automatically (official run.py), 8-bit weights (Table 9) -------------------------
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def _chat_run(tmp_path, tiny_llama, monkeypatch, task, template, **kw):
    from negbench.backends.hf import HFBackend
    from negbench.core.engine import Engine, EngineConfig
    from negbench.evaluation.runner import RunConfig, evaluate
    from negbench.evaluation.store import RunStore

    monkeypatch.setenv("NEGBENCH_NOTADATASET", str(DATA / "raw"))
    be = HFBackend(str(tiny_llama), dtype="float32", device="cpu")
    be.tokenizer.chat_template = template
    cfg = RunConfig(model=str(tiny_llama), tasks=[task], limit=4, **kw)
    store = RunStore(tmp_path / f"run-{len(list(tmp_path.iterdir()))}")
    res = evaluate(
        cfg, be, Engine(be, None, EngineConfig(progress=False)), store, log=lambda s: None
    )
    (name,) = res["units"]
    return res["units"][name], store.read_samples(name)


def test_chat_prompt_follows_the_tokenizer(tmp_path, tiny_llama, monkeypatch):
    # a tokenizer with a chat template: the chat prompt inside it, by default (official run.py)
    u, recs = _chat_run(tmp_path, tiny_llama, monkeypatch, "notadataset", CHAT_TEMPLATE)
    assert u["chat"] is True and {r["meta"]["prompt"] for r in recs} == {"chat"}
    assert recs[0]["context"].startswith(
        "<|user|>Is the following statement True or False? Answer only True or False. "
    )
    assert recs[0]["context"].endswith("<|assistant|>")
    # chat=off forces the plain §4.2 prompt; so does a tokenizer without a template
    for task, template in (("notadataset[chat=off]", CHAT_TEMPLATE), ("notadataset", None)):
        u, recs = _chat_run(tmp_path, tiny_llama, monkeypatch, task, template)
        assert u["chat"] is False and {r["meta"]["prompt"] for r in recs} == {"plain"}
        assert recs[0]["context"].startswith("Is the following statement True or False? ")
        assert "Answer only" not in recs[0]["context"]
    # --chat=off wins over --chat for this task; chat=on without a template is a clear error
    u, _ = _chat_run(
        tmp_path, tiny_llama, monkeypatch, "notadataset[chat=off]", CHAT_TEMPLATE, chat=True
    )
    assert u["chat"] is False
    from negbench.errors import ModelError

    with pytest.raises(ModelError, match="no chat template"):
        _chat_run(tmp_path, tiny_llama, monkeypatch, "notadataset[chat=on]", None)


def test_chat_option_names_and_errors():
    assert get_task("notadataset[chat=auto]").name == "notadataset"
    assert get_task("notadataset[split=test,chat=off]").name == "notadataset[split=test,chat=off]"
    assert get_task("notadataset[chat=on]").chat == "on"
    with pytest.raises(TaskError, match="chat='yes'"):
        get_task("notadataset[chat=yes]")
    # other tasks keep --chat as their only switch
    from negbench.evaluation.runner import RunConfig, use_chat

    class WithTemplate:
        has_chat_template = True

    nubench = get_task("nubench")
    assert use_chat(nubench, RunConfig("m", []), WithTemplate()) is False
    assert use_chat(nubench, RunConfig("m", [], chat=True), None) is True
    assert use_chat(get_task("notadataset"), RunConfig("m", []), WithTemplate()) is True
    assert use_chat(get_task("notadataset"), RunConfig("m", []), None) is False


def test_quantize_8bit_is_checked_before_loading(tmp_path, monkeypatch, capsys):
    import torch
    from negbench.backends import hf
    from negbench.cli import main
    from negbench.errors import ModelError

    assert hf.check_quantize(None, "cpu") is None and hf.check_quantize("none", "cpu") is None
    with pytest.raises(ModelError, match="unknown quantization"):
        hf.check_quantize("4bit", "cuda")
    with pytest.raises(ModelError, match="needs a CUDA GPU"):
        hf.check_quantize("8bit", "cpu")
    # a GPU but no bitsandbytes
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "bitsandbytes" else real(name, *a),
    )
    with pytest.raises(ModelError, match="bitsandbytes package"):
        hf.check_quantize("8bit", "auto")
    monkeypatch.undo()
    # the command line stops before loading the model or writing the run folder
    out = tmp_path / "run"
    monkeypatch.setenv("NEGBENCH_NOTADATASET", str(DATA / "raw"))
    rc = main(
        [
            "run",
            "--model",
            "/nonexistent/model",
            "--tasks",
            "notadataset",
            "--quantize",
            "8bit",
            "--device",
            "cpu",
            "--output",
            str(out),
        ]
    )
    assert rc != 0 and not out.exists()
    assert "--quantize 8bit needs a CUDA GPU" in capsys.readouterr().err


def test_quantized_answers_have_their_own_cache_key(tiny_llama):
    from negbench.backends.hf import HFBackend, fingerprint_of
    from negbench.evaluation.runner import RunConfig, run_identity

    be = HFBackend(str(tiny_llama), dtype="float32", device="cpu")
    fields = {k: v for k, v in be.fingerprint_info.items() if k != "adapter_train"}
    assert "quantize" not in fields and be.fingerprint == fingerprint_of(
        fields
    )  # 16 bit: as before
    assert fingerprint_of({**fields, "quantize": "8bit"}) != be.fingerprint
    plain = RunConfig("m", ["notadataset"], backend={"dtype": "float16"})
    q8 = RunConfig("m", ["notadataset"], backend={"dtype": "float16", "quantize": "8bit"})
    assert "quantize" not in run_identity(plain)["backend"]
    assert run_identity(q8) != run_identity(plain)


def test_table9_from_an_8bit_and_a_16bit_run(tmp_path, tiny_llama, monkeypatch):
    """The report's Table 9: the same model's runs in 8 and 16 bits side by side.  No GPU here:
    the '8-bit' run is a 16-bit run whose saved config says 8 bits (the table reads only that)."""
    from negbench.scoring.runs import load_runs
    from negbench.scoring.paper_tables import Context, build_tables

    paths = []
    for q in (None, "8bit"):
        res, store, _, _ = _run(
            tmp_path / (q or "16"),
            tiny_llama,
            monkeypatch,
            "notadataset",
            backend={"dtype": "float16", "quantize": q},
        )
        paths.append(store.root)
    runs = load_runs(paths)
    tables = {t.id: t for t in build_tables(Context(runs))}
    t9 = tables["notadataset-table9"]
    assert t9.paper == "This is not a Dataset Table 9"
    assert [r.labels[1] for r in t9.rows] == ["float16", "8bit (LLM.int8)"]
    t4 = tables["notadataset-table4"]
    assert [c.value for c in t9.rows[0].cells] == [c.value for c in t4.rows[1].cells]
    # only 16-bit runs: no Table 9
    assert "notadataset-table9" not in {t.id for t in build_tables(Context(load_runs(paths[:1])))}
