"""CONDAQA data and metrics layer (no model is run).

Hand-built records check the metrics against values worked out by hand; the real release is read
from ../shared/data at run time (skipped when absent) — no dataset text lives in this file.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from negbench.errors import DataError, NegbenchError, TaskError
from negbench.scoring.fewshot import build_context
from negbench.core.requests import GenerationResponse, LoglikelihoodResponse
from negbench.evaluation.runner import RunConfig, Unit, build_requests
import negbench.tasks.condaqa.tasks as cq
from locations import SHARED

REAL = SHARED / "data" / "condaqa" / "data"
needs_real = pytest.mark.skipif(
    not (REAL / "condaqa_dev.json").is_file(), reason="../shared/data/condaqa not present"
)


# -- helpers ---------------------------------------------------------------------------------------
def rec(pid, qid, edit, ok, answer="NO", split=None, key="exact_match"):
    """A per-sample record as the runner writes it (only the fields the metrics read)."""
    return {
        "meta": {
            "PassageID": pid,
            "QuestionID": qid,
            "PassageEditID": edit,
            "answer_type": cq.answer_type(answer),
            "answer": answer,
            "split": split,
        },
        key: float(ok),
    }


def hand_records(key="exact_match"):
    """Groups A, B, C, E complete; D incomplete (no scope edit); E has a span answer (edit 2)."""
    R = []
    R += [rec(1, "q1", e, True, key=key) for e in range(4)]  # A all correct
    R += [rec(1, "q2", e, e != 2, answer="YES", key=key) for e in range(4)]  # B scope wrong
    R += [rec(2, "q1", e, e != 0, key=key) for e in range(4)]  # C original wrong
    R += [rec(3, "q1", e, True, key=key) for e in (0, 1, 3)]  # D incomplete
    R += [
        rec(4, "q1", e, True, answer="the cat" if e == 2 else "DON'T KNOW", key=key)
        for e in range(4)
    ]  # E span at edit 2
    return R


def obj(i, **kw):
    """A synthetic official-format record (text invented for the test)."""
    o = {
        "sentence1": f"Passage number {i} says nothing. ",
        "sentence2": f"Question {i}?",
        "label": "NO",
        "PassageID": 100 + i // 4,
        "QuestionID": "q1",
        "PassageEditID": i % 4,
        "original cue": "nothing",
        "SampleID": 5000 + i,
    }
    o.update(kw)
    return o


def write_jsonl(path: Path, objs):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")


@pytest.fixture
def fake_release(tmp_path):
    """A folder in the official layout: dev, five test splits (8 records), five 9-shot splits."""
    root = tmp_path / "condaqa"
    write_jsonl(root / "condaqa_dev.json", [obj(i) for i in range(6)])
    for s in range(1, 6):
        write_jsonl(
            root / f"few-shot/test_splits/conda_fewshot_test_{s}.json",
            [
                obj(100 * s + i, label=["YES", "NO", "DON'T KNOW", "a span"][i % 4])
                for i in range(8)
            ],
        )
        write_jsonl(
            root / f"few-shot/train_splits/sampling_c_shots_9/conda_fewshot_train_{s}.json",
            [obj(1000 * s + i, PassageID=900 + s) for i in range(9)],
        )
    cq.clear_cache()
    return root


# -- metrics on hand-built groups ----------------------------------------------------------------
def test_consistency_by_hand():
    R = hand_records()
    assert cq.accuracy(R) == pytest.approx(17 / 19)
    c = cq.consistency(R)
    assert c == {"consistency": pytest.approx(2 / 4), "n_groups": 4, "n_groups_incomplete": 1}
    e = cq.edit_consistency(R)
    assert e["consistency_paraphrase"] == pytest.approx(3 / 4)
    assert e["consistency_scope"] == pytest.approx(2 / 4)
    assert e["consistency_affirmative"] == pytest.approx(3 / 4)
    assert e["n_pairs"] == 4  # pairs only from complete groups (App. B)
    by = cq.accuracy_by_edit(R)
    assert by["original"] == {"n": 5, "acc": pytest.approx(4 / 5)}
    assert by["paraphrase"] == {"n": 5, "acc": 1.0}
    assert by["scope"] == {"n": 4, "acc": pytest.approx(3 / 4)}
    assert by["affirmative"] == {"n": 5, "acc": 1.0}


def test_consistency_intervals_count_groups_and_are_withheld_when_few():
    from negbench.scoring.intervals import MIN_ITEMS, wilson

    few = cq.consistency_intervals(hand_records())  # 4 complete groups: too few
    assert few["consistency_ci95"] is None and few["consistency_scope_ci95"] is None
    many = [rec(100 + g, "q1", e, g % 3 != 0) for g in range(MIN_ITEMS + 6) for e in range(4)]
    got = cq.consistency_intervals(many)
    k = sum(1 for g in range(MIN_ITEMS + 6) if g % 3 != 0)
    assert got["consistency_ci95"] == pytest.approx(list(wilson(k, MIN_ITEMS + 6)))
    assert "consistency_ci95" in cq.scores(many)


def test_incomplete_groups_excluded():
    R = hand_records()
    # D's correct answers must not raise consistency; making D complete and correct does.
    assert cq.consistency(R)["consistency"] == pytest.approx(0.5)
    assert cq.consistency(R + [rec(3, "q1", 2, True)])["consistency"] == pytest.approx(3 / 5)
    # a group with a duplicated edit (0, 0, 1, 2) is not complete either
    dup = [rec(7, "q1", e, True) for e in (0, 0, 1, 2)]
    assert cq.consistency(R + dup) == {
        "consistency": pytest.approx(0.5),
        "n_groups": 4,
        "n_groups_incomplete": 2,
    }
    # QuestionID is only unique within a passage: (2, q1) and (3, q1) are different groups
    assert set(cq.groups(R)[0]) == {(1, "q1"), (1, "q2"), (2, "q1"), (4, "q1")}


def test_span_policies():
    R = hand_records(key="acc")
    ex = cq.scores(R, "acc", "exclude")  # E loses its span record -> incomplete
    assert ex["n_scored"] == 18 and ex["accuracy"] == pytest.approx(16 / 18)
    assert ex["n_groups"] == 3 and ex["n_groups_incomplete"] == 2
    assert ex["consistency"] == pytest.approx(1 / 3)
    assert ex["consistency_paraphrase"] == pytest.approx(2 / 3)
    assert ex["consistency_scope"] == pytest.approx(1 / 3)
    assert ex["consistency_affirmative"] == pytest.approx(2 / 3)
    wr = cq.scores(R, "acc", "wrong")  # E's span counted wrong
    assert wr["accuracy"] == pytest.approx(16 / 19)
    assert wr["consistency"] == pytest.approx(1 / 4)
    assert wr["consistency_scope"] == pytest.approx(1 / 4)
    with pytest.raises(ValueError):
        cq.scores(R, "acc", "sometimes")


def test_condaqa_metrics_modes_and_splits():
    R = hand_records()
    for r in R:  # split 1: passages 1, 2; split 2: 3, 4
        r["meta"]["split"] = 1 if r["meta"]["PassageID"] <= 2 else 2
        r["answer"] = r["meta"]["answer"] if r["exact_match"] else "maybe"
    m = cq.condaqa_metrics("generate", R)
    assert m["consistency"] == pytest.approx(0.5) and m["n_span"] == 1
    assert "n_span_excluded" not in m
    assert m["by_answer_type"]["gold"]["span"] == {
        "n": 1,
        "share": pytest.approx(1 / 19),
        "acc": 1.0,
    }
    assert m["by_answer_type"]["gold"]["yes"]["acc"] == pytest.approx(3 / 4)
    assert m["by_answer_type"]["predicted"]["span"] == 3  # "maybe" x2 + "the cat"
    sp = m["by_split"]
    assert sp["per_split"]["1"]["consistency"] == pytest.approx(1 / 3)
    assert sp["per_split"]["2"]["consistency"] == pytest.approx(1.0)
    o = sp["over_splits"]["consistency"]
    assert o["mean"] == pytest.approx(2 / 3) and o["n_splits"] == 2
    assert o["sd"] == pytest.approx(math.sqrt(2) / 3)  # sample SD of (1/3, 1)
    assert o["sd_pop"] == pytest.approx(1 / 3)
    # log-likelihood records: spans excluded and counted; acc_norm variant reported
    L = hand_records(key="acc")
    for r in L:
        r["acc_norm"] = 1.0
        r["choices"], r["pred"] = list(cq.LABELS), 1
    lm = cq.condaqa_metrics("loglik", L)
    assert lm["n_span_excluded"] == 1 and lm["consistency"] == pytest.approx(1 / 3)
    assert lm["spans_as_wrong"]["consistency"] == pytest.approx(1 / 4)
    assert lm["acc_norm_scores"]["consistency"] == 1.0
    assert math.isnan(lm["by_answer_type"]["gold"]["span"]["acc"])
    assert lm["by_answer_type"]["predicted"]["no"] == len(L)
    assert "by_split" not in lm  # one split (None) only


def test_majority_baseline_by_hand():
    R = hand_records()  # golds: 11 NO, 4 YES, 3 DON'T KNOW, 1 span
    assert cq.majority_label(R) == "NO"
    b = cq.majority_baseline(R)
    assert b["label"] == "NO" and b["accuracy"] == pytest.approx(11 / 19)
    assert b["consistency"] == pytest.approx(2 / 4)  # A and C are all-NO groups
    y = cq.majority_baseline(R, "yes")
    assert y["accuracy"] == pytest.approx(4 / 19) and y["consistency"] == pytest.approx(1 / 4)
    assert cq.majority_label([{"meta": {"answer": a}} for a in ("YES", "NO")]) == "YES"  # tie


def test_average_over_splits():
    units = {}
    for i, acc in enumerate([0.5, 0.6, 0.7, 0.8, 0.9], 1):
        for seed, delta in ((1, -0.01), (2, 0.01)):
            units[f"condaqa-split{i}.generate.9shot.seed{seed}"] = {
                "task": f"condaqa-split{i}",
                "mode": "generate",
                "shots": 9,
                "seed": seed,
                "metrics": {m: acc + delta for m in cq.HEADLINE},
            }
    units["condaqa-split1.generate.0shot"] = {
        "task": "condaqa-split1",
        "mode": "generate",
        "shots": 0,
        "seed": None,
        "metrics": {m: 0.0 for m in cq.HEADLINE},
    }
    avg = cq.average_over_splits({"units": units}, "generate", 9)
    assert avg["accuracy"]["mean"] == pytest.approx(0.7)
    assert avg["accuracy"]["sd"] == pytest.approx(math.sqrt(0.025))
    assert avg["accuracy"]["n_splits"] == 5 and avg["_splits"] == [1, 2, 3, 4, 5]
    with pytest.raises(TaskError):
        cq.average_over_splits({"units": units}, "loglik", 9)


# -- answer normalisation --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "raw,expected",
    [
        (" YES", "YES"),
        ("yes", "YES"),
        ("Yes.", "YES"),
        (" no\n###\nPassage:", "NO"),
        ("NO ###", "NO"),
        ("Don't know", "DON'T KNOW"),
        ("don\u2019t know.", "DON'T KNOW"),
        ("DONT KNOW", "DON'T KNOW"),
        ("do not know", "DON'T KNOW"),
        ('"No"', "NO"),
        (" the Rebels ", "the Rebels"),
        ("no such child", "no such child"),
        ("Yes, because", "Yes, because"),
        ("", None),
        ("  \n yes", None),
        ("###", None),
    ],
)
def test_normalize_prediction(raw, expected):
    assert cq.normalize_prediction(raw) == expected


def test_answer_types_and_em():
    assert [cq.answer_type(a) for a in ("YES", "no", "DON'T KNOW", "known", "neither")] == [
        "yes",
        "no",
        "dont_know",
        "span",
        "span",
    ]
    assert cq.em_normalize("  The Cat ") == "the cat"
    gen = cq.GENERATE
    d = cq._make_docs([(cq._parse(obj(1, label="Russia"), "x", "line 1", None), "x", 1)])[0]
    r = cq.render_generate(d)
    s = gen.score(r, [GenerationResponse(" russia \n", 3, "\n")])
    assert s["answer"] == "russia" and s["exact_match"] == 1.0
    d2 = cq._make_docs([(cq._parse(obj(2, label="DON'T KNOW"), "x", "line 1", None), "x", 1)])[0]
    s2 = cq.GENERATE.score(cq.render_generate(d2), [GenerationResponse(" Don't know.", 3, "eos")])
    # headline (§4): strip + lower-case only, so the full stop makes it wrong ...
    assert s2["answer"] == "Don't know." and s2["exact_match"] == 0.0
    s4 = cq.GENERATE.score(
        cq.render_generate(d2), [GenerationResponse(" don't KNOW\n###", 3, "\n")]
    )
    assert s4["answer"] == "don't KNOW" and s4["exact_match"] == 1.0
    # ... while the label-normalised figure beside it accepts it
    m = cq.condaqa_metrics("generate", [{**s2, "meta": r2meta} for r2meta in [cq._meta(d2)]])
    assert m["accuracy"] == 0.0 and m["accuracy_normalized"] == 1.0
    assert m["normalized"]["accuracy"] == 1.0
    s3 = cq.GENERATE.score(cq.render_generate(d2), [GenerationResponse(" ", 1, "\n")])
    assert s3["format_ok"] is False and s3["exact_match"] == 0.0


# -- prompt ----------------------------------------------------------------------------------------
FIG5_DESC = (
    "In this task, you're expected to write answers to questions involving reasoning about "
    'negation. The answer to the question should be "yes", "no", "don\'t know" or a '
    "phrase in the passage. Questions can have only one correct answer."
)


def test_prompt_figure5_layout():
    docs = cq._make_docs(
        [
            (
                cq._parse(
                    obj(i, sentence1=f"P{i} text. ", sentence2=f"Q{i}?", label=lab),
                    "x",
                    f"line {i}",
                    None,
                ),
                "x",
                i,
            )
            for i, lab in enumerate(["NO", "DON'T KNOW", "YES"])
        ]
    )
    task = cq.make_tasks("/nonexistent")[1]
    for mode in ("generate", "loglik"):
        spec = task.mode(mode)
        shots = [spec.render(d) for d in docs[:2]]
        ctx = build_context(
            spec.render(docs[2]).query,
            shots,
            task.description(mode),
            task.target_delimiter,
            task.fewshot_delimiter,
        )
        assert ctx == (
            FIG5_DESC + "\n"
            "Passage: P0 text.\nQuestion: Q0?\nAnswer: NO\n###\n"
            "Passage: P1 text.\nQuestion: Q1?\nAnswer: DON'T KNOW\n###\n"
            "Passage: P2 text.\nQuestion: Q2?\nAnswer:"
        )
        zero = build_context(
            spec.render(docs[2]).query,
            [],
            task.description(mode),
            task.target_delimiter,
            task.fewshot_delimiter,
        )
        assert zero == FIG5_DESC + "\nPassage: P2 text.\nQuestion: Q2?\nAnswer:"
    r = cq.render_loglik(docs[1])
    assert r.choices == ["YES", "NO", "DON'T KNOW"] and r.gold == 2
    assert cq.LOGLIK.requests("ctx", r)[2].continuation == " DON'T KNOW"
    assert cq.GENERATE.requests("ctx", cq.render_generate(docs[0]))[0].stop == ("\n", "###")


# -- loading ---------------------------------------------------------------------------------------
def test_fake_release_splits_and_fields(fake_release):
    src = str(fake_release)
    test = cq.load_split("test", src)
    assert len(test) == 40 and [d["split"] for d in test[::8]] == [1, 2, 3, 4, 5]
    assert [len(cq.load_split(f"test{i}", src)) for i in range(1, 6)] == [8] * 5
    assert [len(cq.load_split(f"shots{i}", src)) for i in range(1, 6)] == [9] * 5
    d = test[3]
    assert d.id == str(d["SampleID"]) and d["answer_type"] == "span" and d["answer"] == "a span"
    for k in ("PassageID", "QuestionID", "PassageEditID", "original cue", "SampleID", "split"):
        assert k in d.fields
    assert len(cq.load_split("dev", src)) == 6
    with pytest.raises(DataError):  # no official train file in this release
        cq.load_split("train", src)
    with pytest.raises(TaskError):
        cq.load_split("test6", src)


def test_official_names_and_id_fallback(tmp_path):
    root = tmp_path / "official"
    write_jsonl(root / "condaqa_train.json", [obj(i, SampleID=1) for i in range(4)])  # dup ids
    write_jsonl(root / "condaqa_test.json", [obj(i) for i in range(8)])
    write_jsonl(
        root / "condaqa_dev.json",
        [obj(i, PassageID=1, PassageEditID=0, SampleID=None) for i in range(2)],
    )
    cq.clear_cache()
    train = cq.load_split("train", root)
    assert [d.id for d in train] == ["p100-q1-e0", "p100-q1-e1", "p100-q1-e2", "p100-q1-e3"]
    dev = cq.load_split("dev", root)
    assert [d.id for d in dev] == ["condaqa_dev:1", "condaqa_dev:2"]
    test = cq.load_split("test", root)
    assert len(test) == 8 and all(d["split"] is None for d in test)
    with pytest.raises(DataError):
        cq.load_split("test1", root)


@pytest.mark.parametrize(
    "bad,line,fld",
    [
        ({"label": None}, 2, "label"),
        ({"PassageEditID": 7}, 2, "PassageEditID"),
        ({"PassageID": "12"}, 2, "PassageID"),
        ({"sentence1": "  "}, 2, "sentence1"),
    ],
)
def test_malformed_record(tmp_path, bad, line, fld):
    root = tmp_path / "bad"
    o = obj(1)
    o.update(bad)
    if bad.get("label", 1) is None:
        del o["label"]
    write_jsonl(root / "condaqa_dev.json", [obj(0), o])
    cq.clear_cache()
    with pytest.raises(DataError) as ei:
        cq.load_split("dev", root)
    e = ei.value
    assert e.path.endswith("condaqa_dev.json") and e.record == f"line {line}" and e.field == fld
    assert "condaqa_dev.json" in str(e) and f"'{fld}'" in str(e)


def test_invalid_json_and_missing_folder(tmp_path):
    root = tmp_path / "j"
    root.mkdir()
    (root / "condaqa_dev.json").write_text(json.dumps(obj(0)) + "\n{not json\n", encoding="utf-8")
    cq.clear_cache()
    with pytest.raises(DataError, match="invalid JSON") as ei:
        cq.load_split("dev", root)
    assert ei.value.record == "line 2"
    with pytest.raises(DataError, match="folder not found"):
        cq.load_split("dev", tmp_path / "nowhere" / "deeper")


def test_hf_without_datasets(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets -> ImportError
    cq.clear_cache()
    with pytest.raises(DataError, match="'datasets' package") as ei:
        cq.load_split("dev", "hf:lasha-nlp/CONDAQA")
    assert isinstance(ei.value, NegbenchError) and "pip install -c constraints.txt datasets" in str(
        ei.value
    )
    with pytest.raises(DataError, match="only in the GitHub release"):
        cq.load_split("test3", "lasha-nlp/CONDAQA")


def test_data_root_env(monkeypatch, tmp_path):
    monkeypatch.setenv("NEGBENCH_DATA", str(tmp_path))
    monkeypatch.delenv("NEGBENCH_CONDAQA", raising=False)
    assert cq.data_root() == tmp_path / "condaqa" / "data"
    assert cq.default_source() == str(tmp_path / "condaqa" / "data")
    monkeypatch.setenv("NEGBENCH_CONDAQA", "hf:lasha-nlp/CONDAQA")
    assert cq.default_source() == "hf:lasha-nlp/CONDAQA"
    monkeypatch.delenv("NEGBENCH_DATA")
    monkeypatch.chdir(tmp_path)
    assert cq.data_root() == tmp_path.parent / "shared" / "data" / "condaqa" / "data"


# -- protocol through the runner's request builder (no model) --------------------------------------
def test_split_task_uses_its_own_nine_shots(fake_release):
    tasks = {t.name: t for t in cq.make_tasks(fake_release)}
    assert set(tasks) == {"condaqa"} | {f"condaqa-split{i}" for i in range(1, 6)}
    assert [t.name for t in cq.TASKS] == [t.name for t in cq.make_tasks()]
    cfg = RunConfig(model="none", tasks=[])
    for i in (1, 4):
        t = tasks[f"condaqa-split{i}"]
        assert t.default_shots == (0, 9) and t.fewshot_sampler == "fixed"
        shot_ids = {d.id for d in cq.load_split(f"shots{i}", fake_release)}
        samples, reqs = build_requests(Unit(t, "generate", 9, 1234), None, cfg)
        assert len(samples) == 8
        for s in samples:
            assert set(s["fewshot_ids"]) == shot_ids and len(s["fewshot_ids"]) == 9
            assert s["context"].count("\n###\n") == 9 and s["context"].startswith(FIG5_DESC)
            assert s["meta"]["split"] == i
        # score with made-up answers, then the metrics
        records = []
        for s, rs in zip(samples, reqs):
            r = s.pop("_rendered")
            s.update(t.mode("generate").formulation.score(r, [GenerationResponse(" NO", 1, "\n")]))
            records.append(s)
        m = t.extra_metrics("generate", records)
        assert m["accuracy"] == pytest.approx(2 / 8)  # the NO records (i % 4 == 1)
        assert m["n_groups"] == 2 and m["consistency"] == 0.0
    # loglik on the full test set: the mode's include filter keeps span records out entirely
    full = tasks["condaqa"]
    samples, reqs = build_requests(Unit(full, "loglik", 0, None), None, cfg)
    assert len(samples) == 30 and all(len(r) == 3 for r in reqs)
    assert all(s["gold"] is not None for s in samples)
    records = []
    for s, rs in zip(samples, reqs):
        r = s.pop("_rendered")
        s.update(
            full.mode("loglik").formulation.score(
                r, [LoglikelihoodResponse(lp, 2, False) for lp in (-1.0, -2.0, -3.0)]
            )
        )  # always YES
        records.append(s)
    m = full.extra_metrics("loglik", records)
    assert m["n_span_excluded"] == 0 and m["accuracy"] == pytest.approx(10 / 30)
    assert set(m["by_split"]["per_split"]) == {"1", "2", "3", "4", "5"}
    assert m["by_split"]["over_splits"]["accuracy"]["mean"] == pytest.approx(1 / 3)


# -- the real release ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real():
    cq.clear_cache()
    return {s: cq.load_split(s, REAL) for s in cq.SPLITS if s != "train"}


@needs_real
def test_real_counts(real):
    assert len(real["dev"]) == 1110
    assert len(real["test"]) == 7240
    assert [len(real[f"test{i}"]) for i in range(1, 6)] == [1441, 1454, 1449, 1446, 1450]
    assert [len(real[f"shots{i}"]) for i in range(1, 6)] == [9] * 5
    ids = [d.id for s in real for d in real[s] if s != "test"]
    assert len(ids) == len(set(ids)) == 1110 + 7240 + 45  # SampleIDs unique everywhere
    assert [d.id for d in real["test"]] == [d.id for i in range(1, 6) for d in real[f"test{i}"]]
    assert all(d["split"] == i for i in range(1, 6) for d in real[f"test{i}"])
    recs = cq.docs_to_records(real["test"])
    comp, inc = cq.groups([dict(r, acc=1.0) for r in recs], "acc")
    assert len(comp) == 1402 and 4 * len(comp) == 5608 and inc == 655
    per_split = [
        len(cq.groups([dict(r, acc=1.0) for r in cq.docs_to_records(real[f"test{i}"])], "acc")[0])
        for i in range(1, 6)
    ]
    assert per_split == [287, 291, 279, 276, 269] and sum(per_split) == 1402
    types = {t: sum(d["answer_type"] == t for d in real["test"]) for t in cq.ANSWER_TYPES}
    assert types == {"yes": 3263, "no": 3457, "dont_know": 431, "span": 89}


@needs_real
def test_real_majority_reproduces_table4(real):
    b = cq.majority_baseline(cq.docs_to_records(real["test"]))
    assert round(100 * b["accuracy"], 2) == 47.75
    assert round(100 * b["consistency_paraphrase"], 2) == 51.50
    assert round(100 * b["consistency_scope"], 2) == 16.48
    # Table 4 prints 1.35 and 8.71; the release gives 19 / 1402 and 122 / 1402
    assert b["consistency"] == pytest.approx(19 / 1402)
    assert b["consistency_affirmative"] == pytest.approx(122 / 1402)
    assert cq.majority_label(real["dev"]) == "YES"  # dev majority differs


def test_lenient_accuracy_reads_a_label_that_opens_the_output():
    recs = [
        {
            "output": "No, you cannot take a tram.",
            "answer": "No, you cannot take a tram.",
            "meta": {"answer": "NO"},
        },
        {"output": "Yes.", "answer": "YES", "meta": {"answer": "YES"}},
        {"output": "Nobody knows.", "answer": "Nobody knows.", "meta": {"answer": "NO"}},
        {
            "output": "Don\u2019t know, the passage is silent",
            "answer": "x",
            "meta": {"answer": "DON'T KNOW"},
        },
        {"output": "The river", "answer": "The river", "meta": {"answer": "the river"}},
    ]
    m = cq.lenient_accuracy(recs)
    assert m["n_opens_with_label"] == 3  # "Nobody" is not "No"
    assert m["accuracy_lenient"] == 4 / 5
    assert cq.leading_label("  'no' it is not") == "NO" and cq.leading_label("Nothing") is None


# -- headline (§4) vs the label-normalised figure, recomputed from the raw outputs -----------------
def test_headline_is_recomputed_from_outputs_of_old_runs():
    """A record saved by the old filter (answer already canonicalised, exact_match 1) is rescored
    from its raw output: the headline needs the bare answer, the normalised figure accepts it."""
    meta = {
        "PassageID": 1,
        "QuestionID": "q",
        "PassageEditID": 0,
        "answer_type": "no",
        "answer": "NO",
        "split": None,
    }
    recs = [
        {"output": " No.", "answer": "NO", "exact_match": 1.0, "meta": meta},
        {"output": " no\n###", "answer": "NO", "exact_match": 1.0, "meta": meta},
        {"output": ' "NO"', "answer": "NO", "exact_match": 1.0, "meta": meta},
        {"output": " Yes", "answer": "YES", "exact_match": 0.0, "meta": meta},
    ]
    out = cq.rescore_generation("generate", recs)
    assert [r["em_paper"] for r in out] == [0.0, 1.0, 0.0, 0.0]
    assert [r["em_normalized"] for r in out] == [1.0, 1.0, 1.0, 0.0]
    m = cq.condaqa_metrics("generate", recs)
    assert m["accuracy"] == pytest.approx(1 / 4) and m["accuracy_normalized"] == pytest.approx(
        3 / 4
    )
    assert m["accuracy_lenient"] == pytest.approx(3 / 4)  # opens-with-label reading


# -- chain of thought (Figure 6, App. C.2) -----------------------------------------------------------
@pytest.mark.parametrize(
    "raw,expected",
    [
        (" The passage says it was unknown. So the answer is NO.", "NO"),
        (" First, x. So the answer is don't know.\n###\nPassage: y", "don't know"),
        (" Reasoning. So the answer is the Rebels.", "the Rebels"),
        (" The answer is yes, but later the answer is NO.", "NO"),  # the last one wins
        (" ... so the final answer is: YES", "YES"),
        (" Final answer: no.", "no"),
        (" I think it is no.", None),
        ("", None),
        (" So the answer is .", None),
        (" So the answer is NO.\nPassage: next So the answer is YES.", "NO"),
        (" So the answer is NO.\nAgain, so the answer is", "NO"),  # cut by the token limit
    ],
)
def test_cot_answer_extraction(raw, expected):
    assert cq.cot_answer(raw) == expected


def test_cot_prompt_and_scoring():
    docs = cq._make_docs(
        [
            (
                cq._parse(
                    obj(
                        i,
                        sentence1=f"P{i}.",
                        sentence2=f"Q{i}?",
                        label=lab,
                        **({"explanation": "Because E0."} if i == 0 else {}),
                    ),
                    "x",
                    f"line {i}",
                    None,
                ),
                "x",
                i,
            )
            for i, lab in enumerate(["NO", "DON'T KNOW", "YES"])
        ]
    )
    task = cq.make_tasks("/nonexistent")[1]
    spec = task.mode("cot")
    ctx = build_context(
        spec.render(docs[2]).query,
        [spec.render(d) for d in docs[:2]],
        task.description("cot"),
        task.target_delimiter,
        task.fewshot_delimiter,
    )
    assert ctx == (
        FIG5_DESC + "\n"
        "Passage: P0.\nQuestion: Q0?\nAnswer: Let's think step by step. Because E0. "
        "So the answer is NO.\n###\n"
        "Passage: P1.\nQuestion: Q1?\nAnswer: Let's think step by step. So the answer is "
        "DON'T KNOW.\n###\n"
        "Passage: P2.\nQuestion: Q2?\nAnswer: Let's think step by step."
    )
    req = cq.COT.requests(ctx, spec.render(docs[2]))[0]
    assert req.stop == ("###", "\nPassage:") and req.max_tokens == cq.COT_MAX_TOKENS
    recs = []
    for d, out in zip(
        docs,
        [
            " It was not. So the answer is NO.",
            " Hmm. So the answer is Don't know.",
            " It rambles on without concluding",
        ],
    ):
        s = cq.COT.score(spec.render(d), [GenerationResponse(out, 9, "eos")])
        recs.append({**s, "meta": cq._meta(d)})
    assert [r["answer"] for r in recs] == ["NO", "Don't know", None]
    assert [r["exact_match"] for r in recs] == [1.0, 1.0, 0.0]
    m = cq.condaqa_metrics("cot", recs)
    assert m["accuracy"] == pytest.approx(2 / 3) and m["n_cot_no_answer"] == 1
    assert m["accuracy_normalized"] == pytest.approx(2 / 3) and "accuracy_lenient" not in m


# -- App. D analyses: question length and cue novelty ----------------------------------------------
def test_question_length_tokens_and_buckets():
    import negbench.tasks.condaqa.analysis as an

    # Treebank: Would | he | 've | said | `` | no | '' | ?  (the regex fallback splits alike)
    assert an.question_tokens('Would he\'ve said "no"?') == 8
    assert an.question_tokens("Is it?") == 3
    assert [an.length_bucket(n) for n in (1, 10, 11, 20, 21, 40, 41, None)] == [
        "1-10",
        "1-10",
        "11-20",
        "11-20",
        "21-30",
        "31-40",
        ">40",
        None,
    ]
    outs = [
        ({"question_len": n}, ok)
        for n, ok in ((5, True), (9, False), (15, True), (50, True), (None, True))
    ]
    b = an.by_question_length(outs)
    assert b["1-10"] == {"n": 2, "acc": 0.5} and b["11-20"] == {"n": 1, "acc": 1.0}
    assert b[">40"]["n"] == 1 and b["21-30"]["n"] == 0 and math.isnan(b["21-30"]["acc"])


def test_cue_novelty_by_hand():
    import negbench.tasks.condaqa.analysis as an

    assert an.cue_flags(" Not ", frozenset({"not"}), None) == {
        "cue_seen_train": True,
        "cue_in_shots": None,
    }
    assert an.cue_flags(None, frozenset({"not"}), frozenset()) == {
        "cue_seen_train": None,
        "cue_in_shots": None,
    }
    outs = [
        ({"PassageEditID": 0, "cue_seen_train": True, "cue_in_shots": False}, True),
        ({"PassageEditID": 0, "cue_seen_train": False, "cue_in_shots": False}, False),
        ({"PassageEditID": 0, "cue_seen_train": False, "cue_in_shots": True}, True),
        ({"PassageEditID": 2, "cue_seen_train": True, "cue_in_shots": None}, False),
    ]
    c = an.by_cue_novelty(outs)
    assert c["train"]["original"]["seen"] == {"n": 1, "acc": 1.0}
    assert c["train"]["original"]["unseen"] == {"n": 2, "acc": 0.5}
    assert c["train"]["all"]["seen"] == {"n": 2, "acc": 0.5}
    assert c["shots"]["all"]["n_unknown"] == 1 and c["shots"]["original"]["unseen"]["n"] == 2


def test_cue_flags_and_lengths_reach_the_records(fake_release):
    # no train file: the paper's reference is unknown; shots of split s use PassageID 900 + s
    write_jsonl(
        fake_release / "few-shot/train_splits/sampling_c_shots_9/conda_fewshot_train_2.json",
        [obj(2000 + i, PassageID=902, **{"original cue": "unknown"}) for i in range(9)],
    )
    cq.clear_cache()
    t1 = cq.load_split("test1", fake_release)
    assert all(d["cue_seen_train"] is None and d["cue_in_shots"] is True for d in t1)
    t2 = cq.load_split("test2", fake_release)
    assert all(d["cue_in_shots"] is False for d in t2)
    assert cq.load_split("dev", fake_release)[0]["cue_in_shots"] is None
    # with a train file the paper's flag is set
    write_jsonl(
        fake_release / "condaqa_train.json",
        [obj(3000 + i, **{"original cue": "NOTHING"}) for i in range(4)],
    )
    cq.clear_cache()
    t2 = cq.load_split("test2", fake_release)
    m = cq._meta(t2[0])
    assert m["cue_seen_train"] is True and m["cue"] == "nothing" and m["question_len"] == 3
    recs = [{"meta": cq._meta(d), "output": " NO", "exact_match": 1.0} for d in t2]
    met = cq.condaqa_metrics("generate", recs)
    assert met["by_question_length"]["1-10"]["n"] == 8
    assert met["by_cue_novelty"]["train"]["all"]["seen"]["n"] == 8
    text = cq.make_tasks(fake_release)[0].tables("generate", [("u1", met)])
    # 8 items: the share and its n, no interval (under 30 items)
    assert "by question length" in text and "| u1 | train | all | 25.0 (8, no CI) |" in text
    cq.clear_cache()


@needs_real
def test_real_question_lengths_reproduce_table1(real):
    import negbench.tasks.condaqa.analysis as an

    if an.tokenizer_name() != "nltk-treebank":
        pytest.skip("nltk not installed")
    for split, over20, avg in (("test", 3616, 24.35), ("dev", 650, 26.38)):
        lens = [d["question_len"] for d in real[split]]
        assert sum(n > 20 for n in lens) == over20
        assert sum(lens) / len(lens) == pytest.approx(avg, abs=0.015)
    cues = {an.norm_cue(d["original cue"]) for d in real["test"]}
    assert len(cues) == 171  # Table 1 "# Unique negation cues"


# -- App. C.2 few-shot studies (Tables 8-9) ----------------------------------------------------------
def _pool():
    """Three complete groups (passages 1-3), one group without its affirmative edit (4), singles."""
    objs = [
        obj(0, PassageID=p, QuestionID="q1", PassageEditID=e, SampleID=100 * p + e)
        for p in (1, 2, 3)
        for e in range(4)
    ]
    objs += [
        obj(0, PassageID=4, QuestionID="q1", PassageEditID=e, SampleID=400 + e) for e in range(3)
    ]
    objs += [
        obj(0, PassageID=5 + i, QuestionID="q9", PassageEditID=3, SampleID=900 + i)
        for i in range(3)
    ]
    return cq._make_docs(
        [(cq._parse(o, "x", f"line {n}", None), "x", n) for n, o in enumerate(objs)]
    )


def test_study_draws():
    import random
    import negbench.tasks.condaqa.study as st

    pool = _pool()
    g4 = st.draw_shots("groups4", pool, 8, random.Random(1))
    keys = [(d["PassageID"], d["PassageEditID"]) for d in g4]
    assert len(g4) == 8 and [e for _, e in keys] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert keys[0][0] != keys[4][0] and keys[0][0] in (1, 2, 3)
    g3 = st.draw_shots("groups3", pool, 9, random.Random(1))
    assert [d["PassageEditID"] for d in g3] == [0, 1, 2] * 3
    assert len({d["PassageID"] for d in g3}) == 3  # passage 4 qualifies for groups3
    na = st.draw_shots("no-affirmative", pool, 9, random.Random(1))
    assert all(d["PassageEditID"] != 3 for d in na) and len({d.id for d in na}) == 9
    assert st.draw_shots("random", pool, 9, random.Random(7)) == st.draw_shots(
        "random", pool, 9, random.Random(7)
    )
    with pytest.raises(TaskError, match="complete groups"):
        st.draw_shots("groups4", pool, 16, random.Random(1))
    with pytest.raises(TaskError, match="non-affirmative"):
        st.draw_shots("no-affirmative", pool, 17, random.Random(1))


def test_study_context_budget():
    import negbench.tasks.condaqa.study as st

    pool = _pool()
    item = pool[0]
    base = (
        st.est_tokens(cq.description() + cq.render_query(item["passage"], item["question"]))
        + cq.MAX_TOKENS
    )
    per = [st.est_tokens(st.shot_block(d)) for d in pool[:5]]
    ctx = base + sum(per[:3])  # exactly three shots fit
    assert st.shots_that_fit(pool[:5], item, ctx) == 3
    assert st.shots_that_fit(pool[:5], item, ctx - 1) == 2
    sampler = st.make_sampler("random", ctx)
    lists = list(sampler([item, item], pool, 5, 3))
    assert len(lists[0]) == 3 and lists[0] == lists[1]
    assert all(len(x) == 5 for x in st.make_sampler("random")([item], pool, 5, 3))


def test_study_task_options(fake_release, monkeypatch):
    from negbench.tasks import get_task
    import negbench.tasks.condaqa.study as st

    monkeypatch.setenv("NEGBENCH_CONDAQA", str(fake_release))
    t = get_task("condaqa-split2[sampling=groups4]")
    assert t.name == "condaqa-split2[pool=dev,sampling=groups4]" and t.fewshot_split == "dev"
    assert t.default_shots == (8,) and get_task(t.name).name == t.name
    t9 = get_task("condaqa-split1[ctx=4000,pool=shots]")
    assert t9.fewshot_split == "shots1" and t9.default_shots == (18,)
    assert st.default_shots("random", 2045) == 9
    for bad, msg in (
        ("condaqa-split1[sampling=best]", "unknown sampling"),
        ("condaqa-split1[pool=test]", "unknown pool"),
        ("condaqa-split1[ctx=big]", "ctx must be"),
        ("condaqa-split1[shots=3]", "unknown CONDAQA study option"),
    ):
        with pytest.raises(TaskError, match=msg):
            get_task(bad)
    # through the runner: one seeded draw per trial, the same for every item, reproducible
    cfg = RunConfig(model="none", tasks=[])
    t3 = get_task("condaqa-split3[pool=dev,sampling=groups4]")
    a, _ = build_requests(Unit(t3, "generate", 4, 11), None, cfg)
    b, _ = build_requests(Unit(t3, "generate", 4, 11), None, cfg)
    assert [s["fewshot_ids"] for s in a] == [s["fewshot_ids"] for s in b]
    assert len({tuple(s["fewshot_ids"]) for s in a}) == 1 and len(a[0]["fewshot_ids"]) == 4
    dev = {d.id: d for d in cq.load_split("dev", fake_release)}
    assert sorted(dev[i]["PassageEditID"] for i in a[0]["fewshot_ids"]) == [0, 1, 2, 3]


def test_table8_9_markdown_from_results():
    import negbench.tasks.condaqa.study as st

    m = {
        "accuracy": 0.5,
        "consistency": 0.25,
        "consistency_paraphrase": 0.5,
        "consistency_scope": 0.25,
        "consistency_affirmative": 0.0,
        "accuracy_normalized": 0.75,
        "n": 10,
    }
    res = {
        "units": {
            "a": {
                "task": "condaqa-split1[pool=dev,sampling=groups4]",
                "mode": "generate",
                "shots": 8,
                "metrics": m,
            },
            "b": {
                "task": "condaqa-split2[pool=dev,sampling=groups4]",
                "mode": "generate",
                "shots": 8,
                "metrics": {**m, "accuracy": 0.7},
            },
            "c": {"task": "condaqa-split1", "mode": "generate", "shots": 9, "metrics": m},
        }
    }
    rows = st.study_rows(res)
    assert len(rows) == 1 and rows[0]["splits"] == [1, 2] and rows[0]["n"] == 20
    assert rows[0]["accuracy"] == pytest.approx(0.6)
    text = st.table8_9(res)
    assert "| ours | 3 (groups4) | – | dev | generate | 8 | 1,2 | 20 | 60.00 | 25.00 |" in text
    assert "52.81" in text and "59.70" in text
    assert st.table8_9({"units": {"c": res["units"]["c"]}}) is None


@pytest.mark.slow
def test_tiny_model_cot_study_and_report(fake_release, tiny_llama, tmp_path, monkeypatch, capsys):
    """End to end with a tiny random model: the cot mode and a Table 8 study task run, the
    analyses land in tables.md and results.json, rescore reproduces them, and the HTML report
    holds the Tables 8-9, question-length and cue-novelty tables."""
    from negbench.cli import main

    monkeypatch.setenv("NEGBENCH_CONDAQA", str(fake_release))
    cq.clear_cache()
    out = tmp_path / "run"
    assert (
        main(
            [
                "run",
                "--model",
                tiny_llama,
                "--tasks",
                "condaqa-split1,condaqa-split1[sampling=groups4,pool=dev]",
                "--modes",
                "generate,cot",
                "--shots",
                "0,4",
                "--limit",
                "4",
                "--output",
                str(out),
                "--quiet",
                "--no-cache",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "CONDAQA Tables 8-9" in printed and "| Table 8, GPT-3 (paper) | 3 |" in printed
    res = json.loads((out / "results.json").read_text())
    names = set(res["units"])
    assert "condaqa-split1.cot.0shot" in names
    assert "condaqa-split1[pool=dev,sampling=groups4].generate.4shot.seed1234" in names
    m = res["units"]["condaqa-split1.cot.0shot"]["metrics"]
    assert m["by_question_length"]["1-10"]["n"] == 4 and "n_cot_no_answer" in m
    assert (
        m["by_cue_novelty"]["shots"]["all"]["seen"]["n"]
        + m["by_cue_novelty"]["shots"]["all"]["unseen"]["n"]
        == 4
    )
    tables = (out / "tables.md").read_text()
    assert "by question length" in tables and "negation-cue novelty" in tables
    before = {k: u["metrics"]["accuracy"] for k, u in res["units"].items()}
    assert main(["rescore", str(out)]) == 0
    res2 = json.loads((out / "results.json").read_text())
    assert {k: u["metrics"]["accuracy"] for k, u in res2["units"].items()} == before
    assert (
        main(
            [
                "report",
                str(out),
                "--out",
                str(tmp_path / "rep"),
                "--formats",
                "md,html",
                "--no-plots",
            ]
        )
        == 0
    )
    md = "\n".join(p.read_text() for p in (tmp_path / "rep").rglob("*.md"))
    assert "Tables 8-9" in md or "Table 8" in md
    assert "question length" in md and "cue novelty" in md
    cq.clear_cache()


def test_table4_ignores_study_tasks():
    m = {
        "accuracy": 0.5,
        "consistency": 0.0,
        "consistency_paraphrase": 0.0,
        "consistency_scope": 0.0,
        "consistency_affirmative": 0.0,
        "n": 4,
    }
    res = {
        "units": {
            "s": {
                "task": "condaqa-split1[pool=dev,sampling=groups4]",
                "mode": "generate",
                "shots": 8,
                "metrics": m,
            }
        }
    }
    assert cq.table4(res) is None  # a study-only run has no Table 4 rows
    res["units"]["p"] = {
        "task": "condaqa-split1",
        "mode": "generate",
        "shots": 9,
        "metrics": m,
        "headline": {"metric": "accuracy", "value": 0.5, "ci95": [0.3, 0.7]},
        "subset": {"n": 4, "full": 1448, "subset": True},
    }
    text = cq.table4(res)
    assert "| 9-shot, generate |" in text and "8-shot" not in text
    # n of the full size, marked as a subset; the accuracy's 95 % CI from the split's interval
    assert "| 1 | 4 of 1448 * | 50.00 | 30.00–70.00 |" in text
