"""Thunder-KoNUBench and its §3.3 diagnostics.

Prompt templates below are written out literally from SPEC §2 and the official lm-eval task
files; the dataset text they are filled with is read from ../shared/data at test time (tests that
need it are skipped when it is absent) — no dataset text lives in this file.  Synthetic records
(invented text) exercise validation and the loaders.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from negbench.tasks import alpaca
from negbench.errors import DataError, NegbenchError, TaskError
from negbench.scoring.intervals import wilson
from negbench.scoring.negation_errors import format_error_table
from negbench.core.requests import GenerationResponse
from negbench.evaluation.runner import RunConfig, Unit, build_requests
import negbench.builders.human_eval as he
import negbench.scoring.sheets as sheets
import negbench.tasks.konubench.export as kx
import negbench.tasks.konubench.human_eval as khe
import negbench.tasks.konubench.tasks as kb
from locations import SHARED

REAL = SHARED / "data" / "konubench"
BENCH = REAL / "dataset" / "Thunder_KoNUBench"
needs_real = pytest.mark.skipif(
    not (BENCH / "test" / "test.json").is_file(), reason="../shared/data/konubench not present"
)

# SPEC §2, character for character (two spaces before ¬P; ends with a blank line)
SPEC_DESCRIPTION = (
    "standard negation:\n- 주절의 서술어를 한국어의 부정 표현을 활용해 부정함으로써 원문 P를  ¬P로 만든다.\n"
    "- 주절의 서술어 외의 나머지 부분은 수정하지 않는다.\n- 원문이 조건문일 때는 논리적 규칙(¬(P → Q) ≡ P ∧ ¬Q)을 "
    "따라 부정한다.\n- 주절이 여러 개일 경우 드모르간의 법칙(예. ¬(P ∧ Q) ≡ ¬P ∨ ¬Q)에 따라 모든 주절의 서술어를 "
    "부정한다.\n\n한국어의 부정 표현:\n- 안 계열: 안, -지 않다\n- 못 계열: 못, -지 못하다\n- 말다\n- 어휘적 부정: "
    "상보 반의어를 활용한 부정(이다/아니다, 있다/없다, 참석하다/불참하다 등)\n\n"
)
CLOZE_Q = (
    "문제: 다음의 원문을 standard negation을 활용하여 올바르게 부정하시오.\n원문: {s}\n부정문:"
)
SYMBOL_HEAD = (
    "문제: 다음의 원문을 standard negation을 활용하여 올바르게 부정한 문장을 고르시오.\n원문: {s}\n"
)
API_HEAD = (
    "문제: 다음의 원문을 standard negation을 활용하여 올바르게 부정한 문장을 고르시오(정답 선지(A, B, C, D)만 "
    "답하고, 그 외에 다른 말은 하지 말 것).\n원문: {s}\n"
)
FIELD = {
    "standard": "standard_negation",
    "local": "local_negation",
    "contradiction": "contradiction",
    "paraphrase": "paraphrase",
}


def raw(split: str) -> list[dict]:
    """The release file read directly (independently of the loader)."""
    name = {
        "train": "train/train.json",
        "validation": "validation/val.json",
        "test": "test/test.json",
    }
    return json.loads((BENCH / name[split]).read_text(encoding="utf-8"))


def global_order(rec: dict) -> list[str]:
    """The official code, literally: global random.seed(int(idx sans G)); random.shuffle(strings).
    Saves and restores the global state so the test process is not disturbed."""
    state = random.getstate()
    try:
        texts = [rec["standard_negation"], rec["contradiction"], rec["paraphrase"]]
        if rec["local_negation"] not in (None, ""):
            texts.insert(1, rec["local_negation"])
        idx = rec["idx"][1:] if rec["idx"].startswith("G") else rec["idx"]
        random.seed(int(idx))
        random.shuffle(texts)
        return texts
    finally:
        random.setstate(state)


# -- synthetic release ----------------------------------------------------------------------------
def item(i: int, local: bool = True, **kw) -> dict:
    """An invented record in the release schema."""
    o = {
        "idx": str(100 + i),
        "raw_id": 1.0 * i,
        "original_sentence": f"철수는 {i}번 사과를 먹었다.",
        "standard_negation": f"철수는 {i}번 사과를 먹지 않았다.",
        "sn_절1": "안 장형",
        "sn_절2": None,
        "sn_절3": None,
        "local_negation_type": "관형절" if local else None,
        "local_negation": f"철수는 익지 않은 {i}번 사과를 먹었다." if local else None,
        "local_부정요소": None,
        "ln_절1": None,
        "ln_절2": None,
        "contradiction": f"철수는 {i}번 배를 먹었다.",
        "paraphrase": f"{i}번 사과를 철수가 먹었다.",
        "note": None,
    }
    o.update(kw)
    return o


def write_release(root: Path, splits: dict[str, list]) -> Path:
    for split, rows in splits.items():
        sub, name = {
            "train": ("train", "train.json"),
            "validation": ("validation", "val.json"),
            "test": ("test", "test.json"),
        }[split]
        p = root / "dataset" / "Thunder_KoNUBench" / sub / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    return root


@pytest.fixture
def fake(tmp_path):
    kb.clear_cache()
    root = write_release(
        tmp_path / "konubench",
        {
            "train": [item(i, local=i % 3 != 0) for i in range(6)],
            "validation": [item(10 + i) for i in range(4)],
            "test": [item(20 + i, local=i != 2) for i in range(5)],
        },
    )
    yield root
    kb.clear_cache()


# -- prompts --------------------------------------------------------------------------------------
def test_description_is_spec_exact():
    assert kb.DESCRIPTION == SPEC_DESCRIPTION
    assert "원문 P를  ¬P로" in kb.DESCRIPTION and kb.DESCRIPTION.endswith("등)\n\n")
    # the official api task and SFT code spell "-말다"; nothing else differs
    assert (
        kb.DESCRIPTION_API
        == SPEC_DESCRIPTION.replace("\n- 말다\n", "\n-말다\n")
        != SPEC_DESCRIPTION
    )
    t = kb.TASKS[0]
    assert all(t.description(m) == SPEC_DESCRIPTION for m in ("cloze", "symbol", "generate"))
    assert t.description("api") == kb.DESCRIPTION_API
    assert t.target_delimiter == " " and t.fewshot_delimiter == "\n\n"
    assert t.fewshot_split == "validation" and t.fewshot_sampler == "lm-eval"
    assert tuple(t.default_shots) == (0,) and tuple(t.protocol_shots) == (0, 1, 2, 5, 10)
    assert tuple(t.protocol_seeds) == (1234, 308, 1028)
    assert [x.name for x in kb.TASKS] == [
        "konubench",
        "kmmlu-neg",
        "kmmlu-pos",
        "kmmlu-pos-r",
        "kobest-boolq-neg",
        "kobest-boolq",
    ]


@needs_real
def test_real_counts_and_three_option_items():
    kb.clear_cache()
    for split, n in (("train", 2500), ("validation", 1000), ("test", 1284)):
        docs = kb.load_split(split, REAL)
        assert len(docs) == n == kb.SPLIT_SIZES[split]
        assert [d.id for d in docs] == [r["idx"] for r in raw(split)]
    three = {s: sum(d["local_negation"] is None for d in kb.load_split(s, REAL)) for s in kb.SPLITS}
    assert three == {"train": 75, "validation": 26, "test": 35}
    types = {d["local_negation_type"] for d in kb.load_split("test", REAL)} - {None}
    assert types == set(kb.LOCAL_TYPES)
    assert len(kb.load_diagnostic("kmmlu-neg", source=REAL)) == 7154
    assert len(kb.load_diagnostic("kmmlu-pos", source=REAL)) == 7154
    assert len(kb.load_diagnostic("kobest-boolq-neg", source=REAL)) == 1404


@needs_real
def test_cloze_prompt_on_real_records():
    docs = {d.id: d for d in kb.load_split("test", REAL)}
    rows = raw("test")
    four = rows[0]
    three = next(r for r in rows if r["local_negation"] is None)
    for rec, types in (
        (four, ["standard", "local", "contradiction", "paraphrase"]),
        (three, ["standard", "contradiction", "paraphrase"]),
    ):
        r = kb.render_cloze(docs[rec["idx"]])
        assert r.query == CLOZE_Q.format(s=rec["original_sentence"])
        assert r.choices == [rec[FIELD[t]] for t in types] and r.gold == 0
        assert r.target_text() == rec["standard_negation"]
        assert r.meta["option_types"] == types and r.meta["n_options"] == len(types)
    assert (
        kb.render_cloze(docs[four["idx"]]).meta["local_negation_type"]
        == four["local_negation_type"]
    )
    assert kb.render_cloze(docs[three["idx"]]).meta["local_negation_type"] == "none"


@needs_real
def test_symbol_prompt_order_and_gold_on_real_records():
    docs = {d.id: d for d in kb.load_split("test", REAL)}
    rows = raw("test")
    # worked out once with the official global-seed code: idx 2270 (4 options), G96, 3715 (3 options)
    expected_types = {
        "2270": ["standard", "local", "paraphrase", "contradiction"],
        "485": ["paraphrase", "contradiction", "standard", "local"],
        "G96": ["standard", "paraphrase", "local", "contradiction"],
        "3715": ["contradiction", "standard", "paraphrase"],
    }
    by_idx = {r["idx"]: r for r in rows}
    for idx, types in expected_types.items():
        rec = by_idx[idx]
        texts = [rec[FIELD[t]] for t in types]
        assert texts == global_order(rec)
        letters = "ABCD"[: len(types)]
        query = (
            SYMBOL_HEAD.format(s=rec["original_sentence"])
            + "".join(f"{L}. {t}\n" for L, t in zip(letters, texts))
            + "\n정답:"
        )
        for render, head in ((kb.render_symbol, SYMBOL_HEAD), (kb.render_api, API_HEAD)):
            r = render(docs[idx])
            assert r.query == query.replace(
                SYMBOL_HEAD.format(s=rec["original_sentence"]),
                head.format(s=rec["original_sentence"]),
            )
            assert r.choices == list(letters) and r.gold == types.index("standard")
            assert r.target_text() == letters[types.index("standard")]
            assert r.meta["option_types"] == types
    gen = kb.TASKS[0].mode("generate").render(docs["2270"])
    assert gen.query == kb.render_symbol(docs["2270"]).query and gen.gold == 0


@needs_real
def test_private_rng_equals_global_seed_everywhere_and_leaves_global_state():
    random.seed(777)
    before = random.getstate()
    n = 0
    for split in kb.SPLITS:
        for rec, d in zip(raw(split), kb.load_split(split, REAL)):
            ours = [t for _, t in kb.shuffled_options(d)]
            assert ours == global_order(rec), rec["idx"]
            r = kb.render_symbol(d)
            assert r.gold == global_order(rec).index(rec["standard_negation"])
            n += 1
    assert n == 4784
    assert random.getstate() == before  # rendering never touched the global generator


def test_official_letter_filter_and_generation_scoring():
    f = kb.official_letter
    assert f("B") == "B" and f(" C. 철수는") == "C" and f("정답: D") == "D"
    assert f("Answer: B") == "A"  # no word boundary: as lm-eval's ([A-D]) regex
    assert f("b") is None and f("") is None and f("정답은 없다") is None
    r = kb.Rendered("q", ["A", "B", "C", "D"], 2)
    ok = kb.GENERATE.score(r, [GenerationResponse(" C", 1, "\n")])
    assert ok["exact_match"] == 1.0 and ok["answer"] == "C" and ok["format_ok"]
    bad = kb.GENERATE.score(r, [GenerationResponse(" 모르겠다", 3, "\n")])
    assert bad["exact_match"] == 0.0 and bad["answer"] is None and not bad["format_ok"]
    assert kb.GENERATE.stop == ("</s>", "\n") and kb.GENERATE.max_tokens == 256


# -- loaders and validation ---------------------------------------------------------------------------
def test_synthetic_release_and_locations(fake, monkeypatch, tmp_path):
    docs = kb.load_split("test", fake)
    assert [d.id for d in docs] == [str(120 + i) for i in range(5)]
    assert docs[2]["local_negation"] is None and docs[2]["local_negation_type"] is None
    assert (
        len(kb.render_cloze(docs[2]).choices) == 3 and len(kb.render_symbol(docs[2]).choices) == 3
    )
    assert kb.load_split("val", fake) == kb.load_split("validation", fake)
    # empty string local_negation is a three-option item too
    write_release(tmp_path / "e", {"test": [item(1, local_negation="", local_negation_type="")]})
    assert kb.render_cloze(kb.load_split("test", tmp_path / "e")[0]).meta["n_options"] == 3
    # the folder may also be the dataset folder itself or hold the split files directly
    assert len(kb.load_split("test", fake / "dataset" / "Thunder_KoNUBench")) == 5
    # $NEGBENCH_KONUBENCH, then $NEGBENCH_DATA/konubench
    monkeypatch.setenv("NEGBENCH_KONUBENCH", str(fake))
    assert kb.default_source() == str(fake) and len(kb.make_tasks()[0].load("validation")) == 4
    monkeypatch.delenv("NEGBENCH_KONUBENCH")
    monkeypatch.setenv("NEGBENCH_DATA", str(fake.parent))
    assert kb.data_root() == fake and len(kb.load_split("train")) == 6
    monkeypatch.setenv("NEGBENCH_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(DataError, match="data folder not found"):
        kb.load_split("test")
    with pytest.raises(TaskError, match="no split 'dev2'"):
        kb.load_split("dev2", fake)


@pytest.mark.parametrize(
    "bad, fld, what",
    [
        ({"original_sentence": None}, "original_sentence", "missing field"),
        ({"paraphrase": "  "}, "paraphrase", "empty string"),
        ({"contradiction": 3}, "contradiction", "expected str"),
        ({"local_negation_type": "주절"}, "local_negation_type", "unknown local_negation_type"),
        ({"local_negation_type": None}, "local_negation_type", "needs its type"),
        ({"local_negation": None}, "local_negation_type", "given but local_negation is empty"),
        ({"local_negation": "   "}, "local_negation", "blank local_negation"),
        ({"idx": "X12"}, "idx", "idx must be digits"),
        ({"idx": "12a"}, "idx", "idx must be digits"),
    ],
)
def test_validation_names_file_record_field(tmp_path, bad, fld, what):
    kb.clear_cache()
    rows = [item(0), item(1, **bad), item(2)]
    if "idx" not in bad:
        rows[1]["idx"] = "101"
    write_release(tmp_path / "k", {"test": rows})
    with pytest.raises(DataError) as e:
        kb.load_split("test", tmp_path / "k")
    msg = str(e.value)
    assert what in msg and f"field '{fld}'" in msg and "test.json" in msg and "record 1" in msg


def test_file_level_errors(tmp_path):
    kb.clear_cache()
    p = tmp_path / "k" / "test" / "test.json"
    p.parent.mkdir(parents=True)
    p.write_text("[{", encoding="utf-8")
    with pytest.raises(DataError, match="invalid JSON"):
        kb.load_split("test", tmp_path / "k")
    p.write_text(json.dumps({"idx": "1"}), encoding="utf-8")
    kb.clear_cache()
    with pytest.raises(DataError, match="expected a JSON array"):
        kb.load_split("test", tmp_path / "k")
    write_release(tmp_path / "d", {"test": [item(1), item(1)]})
    with pytest.raises(DataError, match="duplicate idx '101'"):
        kb.load_split("test", tmp_path / "d")
    with pytest.raises(DataError, match="train file not found") as e:
        kb.load_split("train", tmp_path / "d")
    assert "dataset/Thunder_KoNUBench/train/train.json" in str(e.value)


def test_hub_ids_without_datasets_give_clear_errors(monkeypatch, tmp_path):
    kb.clear_cache()
    monkeypatch.setitem(sys.modules, "datasets", None)  # import fails
    with pytest.raises(DataError) as e:
        kb.load_split("test", f"hf:{kb.HF_ID}")
    assert "needs the 'datasets' package" in str(e.value) and kb.HF_ID in str(e.value)
    monkeypatch.delenv("NEGBENCH_KOBEST_BOOLQ", raising=False)
    task = {t.name: t for t in kb.make_tasks()}["kobest-boolq"]
    with pytest.raises(DataError) as e:
        task.load("test")
    assert "KoBEST BoolQ" in str(e.value) and "hf:skt/kobest_v1" in str(e.value)
    assert isinstance(e.value, NegbenchError)
    # diagnostics are not on the hub: an hf: source falls back to the data root
    monkeypatch.setenv("NEGBENCH_KONUBENCH", f"hf:{kb.HF_ID}")
    monkeypatch.setenv("NEGBENCH_DATA", str(tmp_path / "none"))
    assert kb.default_diag_source() == str(tmp_path / "none" / "konubench")
    with pytest.raises(DataError, match="GitHub release only"):
        kb.load_diagnostic("kmmlu-neg")


def test_kobest_local_folder_and_boolq_validation(tmp_path):
    kb.clear_cache()
    folder = tmp_path / "kobest"
    folder.mkdir()
    rows = [
        {"paragraph": f"단락 {i}.", "question": f"질문 {i}인가?", "label": i % 2} for i in range(4)
    ]
    (folder / "test.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    docs = kb.load_kobest_boolq("test", folder)
    r = kb.render_boolq(docs[1])
    assert (
        r.query == "단락 1. 질문: 질문 1인가? 답변: "
        and r.choices == ["아니오", "예"]
        and r.gold == 1
    )
    (folder / "train.json").write_text(json.dumps([{**rows[0], "label": 2}]), encoding="utf-8")
    with pytest.raises(DataError) as e:
        kb.load_kobest_boolq("train", folder)
    assert "label must be 0" in str(e.value) and "field 'label'" in str(e.value)
    with pytest.raises(DataError, match="validation file not found"):
        kb.load_kobest_boolq("validation", folder)


# -- diagnostics on the real files ------------------------------------------------------------------
@needs_real
def test_diagnostic_prompts_on_real_records():
    tasks = {t.name: t for t in kb.make_tasks(REAL, REAL)}
    for name, folder in (("kmmlu-neg", "kmmlu_neg"), ("kmmlu-pos", "kmmlu_pos")):
        rows = json.loads(
            (REAL / "dataset" / folder / "test" / f"{folder}.json").read_text("utf-8")
        )
        docs = tasks[name].load("test")
        for i in (0, 1, len(rows) - 1):
            r = tasks[name].mode("symbol").render(docs[i])
            assert (
                r.query
                == f"{rows[i]['question'].strip()}\nA. {rows[i]['A']}\nB. {rows[i]['B']}\n정답："
            )
            assert r.query.endswith("\n정답\uff1a")  # full-width colon
            assert (
                r.choices == ["A", "B"] and r.gold == rows[i]["answer"] and r.target_text() in "AB"
            )
    neg = tasks["kmmlu-neg"].load("test")
    pos = tasks["kmmlu-pos"].load("test")
    assert all(a["answer"] != b["answer"] for a, b in zip(neg, pos))  # the pairs flip the answer
    rows = json.loads(
        (REAL / "dataset/kobest_boolq_neg/test/kobest_boolq_neg.json").read_text("utf-8")
    )
    t = tasks["kobest-boolq-neg"]
    docs = t.load("test")
    for i in (0, 2):
        r = t.mode("cloze").render(docs[i])
        assert r.query == f"{rows[i]['paragraph']} 질문: {rows[i]['question']} 답변: "
        assert r.choices == ["아니오", "예"] and r.gold == rows[i]["label"]
    samples, reqs = build_requests(
        Unit(t, "cloze", 0, None), None, RunConfig(model="x", tasks=[], limit=2)
    )
    assert samples[0]["context"].endswith("답변: ")
    assert [q.continuation for q in reqs[0]] == [" 아니오", " 예"]
    assert (
        tasks["kmmlu-neg"].fewshot_split is None and tasks["kobest-boolq"].fewshot_split == "train"
    )


def test_boolq_trailing_space_moves_into_continuation(tiny_llama):
    from negbench.backends.hf import HFBackend
    from negbench.core.engine import Engine
    from negbench.core.requests import LoglikelihoodRequest

    be = HFBackend(tiny_llama, dtype="float32", device="cpu")
    ctx = "단락. 질문: 질문인가? 답변: "
    s = Engine(be)._prepare([("k", LoglikelihoodRequest(ctx, " 예"))])[0]
    c = be.encode(ctx[:-1])
    whole = be.encode(ctx[:-1] + "  예")
    assert s.inputs[: len(c)] == c and [t for _, t in s.asks] == whole[len(c) :]


def test_macro_f1_and_boolq_metrics():
    recs = [
        {"pred": p, "gold_index": g, "acc": float(p == g), "meta": {}}
        for p, g in [(1, 1), (1, 0), (0, 0), (0, 0), (1, 1), (0, 1)]
    ]
    # class 0: tp 2 fp 1 fn 1 -> 4/6; class 1: tp 2 fp 1 fn 1 -> 4/6
    assert kb.macro_f1(recs) == pytest.approx(2 / 3)
    m = kb.boolq_metrics("cloze", recs)
    assert m["f1"] == pytest.approx(2 / 3)
    assert m["by_gold"]["아니오"]["acc"] == pytest.approx(2 / 3) and m["by_gold"]["예"]["n"] == 3
    assert kb.macro_f1([{"pred": 0, "gold_index": 0}]) == pytest.approx(0.5)


# -- error analysis ----------------------------------------------------------------------------------
def crec(types, pred, pred_norm=None, ltype="adnominal", gold=None):
    """A per-sample record as the runner writes it (fields the metrics read)."""
    gold = types.index("standard") if gold is None else gold
    pn = pred if pred_norm is None else pred_norm
    return {
        "gold_index": gold,
        "choices": list("ABCD"[: len(types)]),
        "pred": pred,
        "pred_norm": pn,
        "acc": float(pred == gold),
        "acc_norm": float(pn == gold),
        "meta": {
            "option_types": list(types),
            "local_type": ltype if "local" in types else "none",
            "n_options": len(types),
        },
    }


FOUR = ["standard", "local", "contradiction", "paraphrase"]
THREE = ["standard", "contradiction", "paraphrase"]


def hand_cloze():
    return [
        crec(FOUR, 0, 0),
        crec(FOUR, 1, 0),
        crec(FOUR, 1, 1, "adverbial"),
        crec(FOUR, 2, 1, "adverbial"),
        crec(FOUR, 3, 0, "noun"),
        crec(THREE, 1, 0),
        crec(THREE, 2, 2),
        crec(THREE, 0, 1),
    ]


def test_cloze_error_analysis_by_hand():
    m = kb.konubench_metrics("cloze", hand_cloze())
    # raw argmax (pred): wrong = items 1,2,3,4,5,6 -> local 2, contradiction 2 (item 3 and item 5:
    # three-option position 1), paraphrase 2 (item 4, item 6)
    ea = m["error_analysis"]
    assert ea["n"] == 8 and ea["n_wrong"] == 6 and ea["error_rate"] == pytest.approx(6 / 8)
    assert {
        t: ea["incorrect_choice"][t]["n"] for t in ("local", "contradiction", "paraphrase")
    } == {"local": 2, "contradiction": 2, "paraphrase": 2}
    assert m["incorrect_local_pct"] == pytest.approx(100 / 3)
    # local confusion: adnominal 1 of 2, adverbial 1 of 2, noun 0 of 1; three-option items excluded
    assert {k: v["pct"] for k, v in ea["local_confusion"].items()} == {
        "adnominal": 50.0,
        "adverbial": 50.0,
        "noun": 0.0,
    }
    # acc_norm predictions: wrong = item 2 (local), 3 (local), 6 (paraphrase), 7 (contradiction)
    en = m["error_analysis_norm"]
    assert en["n_wrong"] == 4 and en["incorrect_choice"]["local"]["n"] == 2
    # the official analyze.py labels three-option positions 1 / 2 as local / contradiction
    eo = m["error_analysis_official"]
    assert {
        t: eo["incorrect_choice"][t]["n"] for t in ("local", "contradiction", "paraphrase")
    } == {"local": 3, "contradiction": 2, "paraphrase": 1}
    # headline = acc_norm for cloze; accuracy by clause type and by option count
    assert kb.make_tasks()[0].headline("cloze") == "acc_norm" and "paper_score" not in m
    # each cell with its n and Wilson interval (issue 33: breakdowns say how far to trust them),
    # withheld under 30 items: 2 items have none
    assert m["by_local_type"]["adverbial"] == {"n": 2, "acc_norm": 0.0, "acc_norm_ci95": None}
    many = kb.konubench_metrics("cloze", hand_cloze() * 4)["by_local_type"]["adnominal"]
    assert many["n"] == 2 * 4 and many["acc_norm_ci95"] is None
    big = kb.konubench_metrics("cloze", [crec(FOUR, 0, 1)] * 12 + [crec(FOUR, 0, 0)] * 18)
    assert big["by_local_type"]["adnominal"]["acc_norm_ci95"] == list(wilson(18, 30))
    assert m["by_n_options"]["3"]["n"] == 3 and m["by_n_options"]["3"]["acc_norm"] == pytest.approx(
        1 / 3
    )


def test_symbol_and_generation_error_analysis():
    sym = [
        crec(["local", "standard", "paraphrase", "contradiction"], 0),
        crec(["local", "standard", "paraphrase", "contradiction"], 1),
        crec(["paraphrase", "contradiction", "standard"], 0),
    ]
    m = kb.konubench_metrics("symbol", sym)
    assert kb.make_tasks()[0].headline("symbol") == "acc" and "paper_score" not in m
    assert m["error_analysis"]["incorrect_choice"]["local"]["n"] == 1
    assert m["error_analysis"]["incorrect_choice"]["paraphrase"]["n"] == 1
    assert "error_analysis_official" not in m
    gen = []
    for types, ans in ((FOUR, "A"), (FOUR, "B"), (FOUR, None), (THREE, "D"), (THREE, "C")):
        gold = types.index("standard")
        gen.append(
            {
                "gold_index": gold,
                "choices": list("ABCD"[: len(types)]),
                "answer": ans,
                "exact_match": float(ans == "ABCD"[gold]),
                "format_ok": ans is not None,
                "meta": {"option_types": types, "local_type": "noun", "n_options": len(types)},
            }
        )
    m = kb.konubench_metrics("generate", gen)
    ea = m["error_analysis"]
    # 'D' on a three-option item is no option: counted with the unreadable outputs
    assert ea["n_wrong"] == 4 and ea["n_format_wrong"] == 2 and m["n_format_wrong"] == 2
    assert (
        ea["incorrect_choice"]["local"]["n"] == 1 and ea["incorrect_choice"]["paraphrase"]["n"] == 1
    )
    assert kb.make_tasks()[0].headline("generate") == "exact_match" and "paper_score" not in m


def test_tables_markdown():
    rows = [("konubench.cloze.0shot", kb.konubench_metrics("cloze", hand_cloze()))]
    md = kb.run_tables("cloze", rows)
    paper, ours = md.split("ours (corrected labels")
    # Table 8 as printed: performance = acc of the raw argmax (2 of 8 right: 25.00, not the
    # acc_norm 50.00), the official labelling (local 3, contradiction 2, paraphrase 1 of 6)
    assert "Table 8 as in the paper" in paper
    # the paper's values unchanged, each with its n (8 items; 6 wrong answers naming an option)
    # and no interval under 30 items
    assert (
        "| konubench.cloze.0shot | 25.00 (8, no CI) | 50.00 (6, no CI) | 33.33 (6, no CI) "
        "| 16.67 (6, no CI) |" in paper
    )
    # ours: corrected labels (2 / 2 / 2)
    assert format_error_table([(rows[0][0], rows[0][1]["error_analysis"])], note=False) in ours
    assert md.count("Each rate: value [95 % Wilson interval]") == 1  # the note once, at the end
    assert (
        "| konubench.cloze.0shot | 0.750 (8, no CI) | 0 | 33.33 (6, no CI) | 33.33 (6, no CI) "
        "| 33.33 (6, no CI) |" in ours
    )
    assert "adnominal confusion (%)" in ours
    assert "| 50.00 (2, no CI) | 50.00 (2, no CI) | 0.00 (1, no CI) | – | – | – |" in ours
    assert kb.run_tables("cloze", [("x", {"acc": 1.0})]) == ""


def _clause_type_records() -> list[dict]:
    """52 cloze records: 40 adnominal (10 local-negation picks, 5 contradiction picks), 12
    adverbial (3 local-negation picks)."""
    recs = [crec(FOUR, 1 if i < 10 else 2 if i < 15 else 0) for i in range(40)]
    recs += [crec(FOUR, 1 if i < 3 else 0, ltype="adverbial") for i in range(12)]
    for i, r in enumerate(recs):
        r["doc_id"] = f"k{i}"
    return recs


def test_error_tables_show_n_and_wilson_interval_per_clause_type():
    """The run's App. I table (run, show): each rate with its n and the project's Wilson
    interval from 30 items; a clause type of 12 items says so instead of an interval."""
    from negbench.scoring.intervals import wilson

    m = kb.konubench_metrics("cloze", _clause_type_records())
    text = kb.run_tables("cloze", [("u", m)])
    app_i = text.split("Local-negation confusion by clause type")[1]
    row = next(l for l in app_i.splitlines() if l.startswith("| u |"))
    e_lo, e_hi = wilson(18, 52)  # 18 of 52 wrong
    a_lo, a_hi = wilson(10, 40)  # 10 of the 40 adnominal items: the local negation picked
    assert row == (
        f"| u | 0.346 [{e_lo:.3f}–{e_hi:.3f}] (52) | 0 | 72.22 (18, no CI) | 27.78 (18, no CI) "
        f"| 0.00 (18, no CI) | 25.00 [{100 * a_lo:.2f}–{100 * a_hi:.2f}] (40) "
        "| 25.00 (12, no CI) | – | – | – | – |"
    )
    assert "'no CI' under 30 items" in app_i


def test_report_app_i_table_cells_carry_n_and_interval():
    """The report's App. I and Table 8 from a saved run (in memory, as the report reads it):
    every rate cell has its n and Wilson's interval (scaled to percent) from 30 items, and a
    reason instead of an interval under 30; the values are the paper's, unchanged."""
    from pathlib import Path

    from negbench.scoring.intervals import wilson
    from negbench.scoring.paper_tables import Context, build_tables
    from negbench.scoring.runs import Run, UnitResult

    recs = _clause_type_records()
    m = kb.konubench_metrics("cloze", recs)
    m.update(acc=sum(r["acc"] for r in recs) / 52, acc_norm=sum(r["acc_norm"] for r in recs) / 52)
    name = "konubench.cloze.0shot"
    unit = UnitResult(name, "konubench", "cloze", 0, None, name, m)
    run = Run(Path("/nonexistent/run"), {"schema": 1, "units": {}}, "toy", {name: unit}, 0)
    run._samples = {name: recs}
    tables = {t.id: t for t in build_tables(Context([run]))}
    app_i = tables["konubench-cloze-errors"]
    assert app_i.paper == "Thunder-KoNUBench App. I"
    keys = [c.key for c in app_i.columns]
    cells = dict(zip(keys, app_i.rows[0].cells))
    adn, adv = cells["confusion.adnominal"], cells["confusion.adverbial"]
    assert adn.value == pytest.approx(25.0) and adn.items == 40
    assert adn.ci == pytest.approx([100 * x for x in wilson(10, 40)])
    assert adv.value == pytest.approx(25.0) and adv.items == 12 and adv.ci is None
    assert "rests on 12 items" in adv.ci_withheld and "below 30" in adv.ci_withheld
    err = cells["error_rate"]
    assert err.value == pytest.approx(18 / 52) and err.items == 52
    assert err.ci == pytest.approx(wilson(18, 52))
    assert cells["incorrect.local"].items == 18 and cells["incorrect.local"].ci is None
    assert cells["confusion.noun"] is None or cells["confusion.noun"].items is None
    md = app_i.to_markdown()
    lo, hi = (100 * x for x in wilson(10, 40))
    assert f"| 25.00 [{lo:.2f}–{hi:.2f}] (40) | 25.00 (12, no CI) |" in md
    assert "Wilson from 30 items" in md
    d = dict(zip(keys, app_i.to_dict()["rows"][0]["cells"]))["confusion.adverbial"]
    assert d["items"] == 12 and d["ci95"] is None and "below 30" in d["ci_withheld"]
    # Table 8 as the official script labels it: n and interval from the saved counts
    t8 = tables["konubench-table8"]
    assert t8.rows[0].labels == ["toy", "baseline", "zero-shot"]
    c8 = dict(zip([c.key for c in t8.columns], t8.rows[0].cells))
    assert c8["incorrect.local"].value == pytest.approx(100 * 13 / 18)
    assert c8["incorrect.local"].items == 18 and c8["incorrect.local"].ci is None
    perf = c8["performance"]  # 34 of 52 right
    assert perf.items == 52 and perf.ci == pytest.approx([100 * x for x in wilson(34, 52)])


def test_table8_paper_metrics():
    m = kb.konubench_metrics("cloze", hand_cloze())
    assert m["table8_performance"] == pytest.approx(2 / 8)  # not the headline acc_norm (4 / 8)
    assert m["error_analysis_paper"] == m["error_analysis_official"] != m["error_analysis"]
    # four-option items only: both labellings agree
    four = [r for r in hand_cloze() if len(r["meta"]["option_types"]) == 4]
    m4 = kb.konubench_metrics("cloze", four)
    assert (
        m4["error_analysis_paper"]["incorrect_choice"] == m4["error_analysis"]["incorrect_choice"]
    )
    # symbol: the official script finds each option's text, so the labels are ours
    sym = [
        crec(["local", "standard", "paraphrase"], 0),
        crec(["local", "standard", "paraphrase"], 1),
    ]
    ms = kb.konubench_metrics("symbol", sym)
    assert ms["error_analysis_paper"] == ms["error_analysis"] and ms["table8_performance"] == 0.5


# -- Alpaca export ---------------------------------------------------------------------------------
@needs_real
def test_alpaca_export_matches_official_sft_sequences():
    ex = alpaca.get_exporter("konubench-cloze")
    assert alpaca.get_exporter("konubench-symbol").default_split == ex.default_split == "train"
    kb.clear_cache()
    cloze = kx.export_records("cloze", "train", REAL)
    symbol = kx.export_records("symbol", "train", REAL)
    rows = raw("train")
    assert len(cloze) == len(symbol) == 2500
    desc_sft = SPEC_DESCRIPTION.replace("\n- 말다\n", "\n-말다\n")  # as the official sft/load.py
    for rec, c, s in list(zip(rows, cloze, symbol))[:50]:
        assert set(c) == set(s) == {"instruction", "input", "output"}
        # official cloze: prompt + " " + sentence + "\n부정문:" then " " + standard negation
        prompt = (
            "문제: 다음의 원문을 standard negation을 활용하여 올바르게 부정하시오.\n\n"
            + desc_sft
            + "원문:"
        )
        official = f"{prompt} {rec['original_sentence']}\n부정문:" + f" {rec['standard_negation']}"
        assert c["instruction"] + "\n\n" + c["input"] + " " + c["output"] == official
        assert c["output"] == rec["standard_negation"]
        # official symbol: description + question + options in the per-idx order, then " X. <std>"
        texts = global_order(rec)
        letter = "ABCD"[texts.index(rec["standard_negation"])]
        ctx = (
            desc_sft
            + "문제: 다음의 원문을 standard negation을 활용하여 올바르게 부정한 문장을 고르시오.\n원문:"
            + f" {rec['original_sentence']}\n"
            + "".join(f"{'ABCD'[i]}. {t}\n" for i, t in enumerate(texts))
            + "\n정답:"
        )
        target = f" {letter}. {rec['standard_negation']}"
        assert s["instruction"] + "\n\n" + s["input"] + " " + s["output"] == ctx + target
        assert s["output"].startswith(letter + ". ")


def test_alpaca_export_synthetic(fake, tmp_path):
    recs = kx.export_records("symbol", "train", fake)
    assert len(recs) == 6 and all(r["input"].endswith("\n정답:") for r in recs)
    out = alpaca.write_alpaca(kx.export_records("cloze", "train", fake), tmp_path / "c.jsonl")
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 6 and json.loads(lines[0])["output"] == "철수는 0번 사과를 먹지 않았다."


# -- end to end with a tiny random model ------------------------------------------------------------
def test_runner_end_to_end_tiny_model(fake, tiny_llama, monkeypatch, tmp_path):
    import negbench.tasks as registry
    from negbench.backends.hf import HFBackend
    from negbench.core.engine import Engine, EngineConfig
    from negbench.evaluation.runner import evaluate
    from negbench.evaluation.store import RunStore

    tasks = kb.make_tasks(fake, fake)
    monkeypatch.setitem(registry.REGISTRY.table("task"), "konubench", tasks[0])
    be = HFBackend(tiny_llama, dtype="float32", device="cpu")
    eng = Engine(be, config=EngineConfig(progress=False))
    cfg = RunConfig(
        model=tiny_llama,
        tasks=["konubench"],
        modes=["cloze", "symbol", "generate"],
        shots=[0, 1],
        seeds=[308],
        limit=3,
    )
    res = evaluate(cfg, be, eng, RunStore(tmp_path / "run"), log=lambda s: None)
    assert set(res["units"]) == {
        f"konubench.{m}.{k}"
        for m in ("cloze", "symbol", "generate")
        for k in ("0shot", "1shot.seed308")
    }
    val_ids = {d.id for d in kb.load_split("validation", fake)}
    from negbench.scoring.subsets import select

    docs, sel = select(kb.load_split("test", fake), kb.STRUCTURE, limit=3)
    test_ids = [d.id for d in docs]  # 3 records spread over the clause types
    for name, u in res["units"].items():
        m = u["metrics"]
        assert m["n"] == 3 and "error_analysis" in m
        assert u["headline"]["metric"] == kb.PAPER_METRIC[u["mode"]] and u["subset"]["n"] == 3
        samples = [
            json.loads(line)
            for line in (tmp_path / "run" / "samples" / f"{name}.jsonl")
            .read_text("utf-8")
            .splitlines()
        ]
        assert [s["doc_id"] for s in samples] == test_ids
        for s in samples:
            ctx = s["context"]
            assert ctx.startswith(SPEC_DESCRIPTION) and ctx.count("standard negation:\n") == 1
            assert len(s["fewshot_ids"]) == u["shots"] and set(s["fewshot_ids"]) <= val_ids
            if u["shots"]:
                shot = next(
                    d for d in kb.load_split("validation", fake) if d.id == s["fewshot_ids"][0]
                )
                r = kb.TASKS[0].mode(u["mode"]).render(shot)
                assert (
                    ctx
                    == SPEC_DESCRIPTION
                    + r.query
                    + " "
                    + r.target_text()
                    + "\n\n"
                    + kb.TASKS[0]
                    .mode(u["mode"])
                    .render(next(d for d in kb.load_split("test", fake) if d.id == s["doc_id"]))
                    .query
                )
                if u["mode"] == "cloze":
                    assert r.target_text() == shot["standard_negation"]
                else:
                    assert r.target_text() in "ABCD"
            else:
                assert ctx.startswith(SPEC_DESCRIPTION + "문제: ")
        if u["mode"] == "cloze":
            assert all(len(s["scores"]) == s["meta"]["n_options"] for s in samples)
            assert samples[2]["meta"]["n_options"] == 3  # the three-option item
        if u["mode"] == "generate":
            assert all("output" in s and "exact_match" in s for s in samples)
    assert "| konubench.cloze.1shot.seed308 |" in res["tables"]["konubench.cloze"]
    assert (tmp_path / "run" / "tables.md").is_file()
    g = res["groups"]["konubench.symbol.1shot"]["metrics"]
    assert g["acc"]["n_seeds"] == 1 and "incorrect_local_pct" in g


# -- kmmlu_pos_r (official lm_eval/kmmlu_pos_r/kmmlu_pos_r.yaml) --------------------------------------
def _kmmlu_folder(root: Path) -> Path:
    rows = [
        {
            "question": "  다음 중 옳은 것은? ",
            "A": "하나",
            "B": "둘",
            "answer": 1,
            "Category": "Math",
        },
        {
            "question": "다음 중 옳지 않은 것은?",
            "A": "셋 ",
            "B": "넷",
            "answer": 0,
            "Category": "Law",
        },
    ]
    p = root / "dataset" / "kmmlu_pos" / "test" / "kmmlu_pos.json"
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    return root


def test_kmmlu_pos_r_is_the_official_yaml(tmp_path):
    kb.clear_cache()
    tasks = {t.name: t for t in kb.make_tasks(diag_source=_kmmlu_folder(tmp_path))}
    t, pos = tasks["kmmlu-pos-r"], tasks["kmmlu-pos"]
    # doc_to_text "{{question.strip()}}\nA. {{B}}\nB. {{A}}\n정답：", doc_to_target
    # "{{ 1 if answer == 0 else 0 }}", choices A / B, metric acc only, fewshot_split null
    d0, d1 = t.load("test")
    r0, r1 = (t.mode("symbol").render(d) for d in (d0, d1))
    assert r0.query == "다음 중 옳은 것은?\nA. 둘\nB. 하나\n정답\uff1a" and r0.gold == 0
    assert r1.query == "다음 중 옳지 않은 것은?\nA. 넷\nB. 셋 \n정답\uff1a" and r1.gold == 1
    assert r0.choices == ["A", "B"] and t.mode("symbol").formulation.metrics == ("acc",)
    assert t.fewshot_split is None and tuple(t.default_shots) == (0,)
    # the same records as kmmlu-pos: the gold option text is the same, its letter swapped
    for d in (d0, d1):
        rp, rr = pos.mode("symbol").render(d), t.mode("symbol").render(d)
        gold_text = d["A"] if d["answer"] == 0 else d["B"]
        assert (
            f"{'AB'[rr.gold]}. {gold_text}\n" in rr.query
            and f"{'AB'[rp.gold]}. {gold_text}\n" in rp.query
        )
        assert rr.gold != rp.gold
    kb.clear_cache()


@needs_real
def test_kmmlu_pos_r_on_real_records():
    t = next(x for x in kb.make_tasks(REAL, REAL) if x.name == "kmmlu-pos-r")
    rows = json.loads((REAL / "dataset/kmmlu_pos/test/kmmlu_pos.json").read_text("utf-8"))
    docs = t.load("test")
    assert len(docs) == 7154
    for i in (0, 1, len(rows) - 1):
        r = t.mode("symbol").render(docs[i])
        assert (
            r.query
            == f"{rows[i]['question'].strip()}\nA. {rows[i]['B']}\nB. {rows[i]['A']}\n정답："
        )
        assert r.gold == (1 if rows[i]["answer"] == 0 else 0)


# -- human evaluation sheet (§4.3, Table 7) --------------------------------------------------------
def test_human_sheet_and_table7(fake, tmp_path):
    import csv

    paths = khe.write_human_sheet(tmp_path / "he", n=4, seed=3, source=fake)
    sheet = list(csv.DictReader(open(paths["sheet"], encoding="utf-8")))
    key = list(csv.DictReader(open(paths["key"], encoding="utf-8")))
    assert [r["item"] for r in sheet] == ["1", "2", "3", "4"] and "gold" not in sheet[0]
    test = {d["idx"]: d for d in kb.load_split("test", fake)}
    for s_row, k_row in zip(sheet, key):
        d = test[k_row["idx"]]
        assert s_row["original_sentence"] == d["original_sentence"] and s_row["answer"] == ""
        # the options in the official symbol order; the key's letter is the standard negation
        assert [s_row[c] for c in "ABCD" if s_row[c]] == [x for _, x in kb.shuffled_options(d)]
        assert s_row[k_row["gold"]] == d["standard_negation"]
        assert k_row["option_types"].split("+")[("ABCD").index(k_row["gold"])] == "standard"
    assert khe.write_human_sheet(tmp_path / "again", n=4, seed=3, source=fake)  # same draw
    assert open(tmp_path / "again" / "key.csv").read() == open(paths["key"]).read()

    # three participants: all right, one wrong + one blank, all wrong
    def fill(name, answers):
        p = tmp_path / f"{name}.csv"
        with open(p, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=sheets.SHEET_FIELDS)
            w.writeheader()
            for r, a in zip(sheet, answers):
                w.writerow({**r, "answer": a})
        return p

    gold = [k["gold"] for k in key]
    other = ["A" if g != "A" else "B" for g in gold]
    files = [fill("p1", gold), fill("p2", [other[0], ""] + gold[2:]), fill("p3", other)]
    res = he.score_answer_sheets(paths["key"], files)
    assert {k: v["score"] for k, v in res["participants"].items()} == {
        "p1": 100.0,
        "p2": 50.0,
        "p3": 0.0,
    }
    assert res["participants"]["p2"]["blank"] == 1
    assert res["table7"] == {"Max": 100.0, "Min": 0.0, "Median": 50.0, "Average": 50.0}
    assert "| 100.0 | 0.0 | 50.0 | 50.0 |" in he.format_table7(res)
    # errors name the file, the line and the field
    bad = fill("bad", ["Z"] + gold[1:])
    with pytest.raises(DataError) as e:
        he.score_answer_sheets(paths["key"], [bad])
    assert "bad.csv" in str(e.value) and "line 2" in str(e.value) and "answer" in str(e.value)
    with pytest.raises(DataError, match="items missing"):
        he.score_answer_sheets(paths["key"], [fill("short", gold[:2])])
    with pytest.raises(TaskError, match="--n 9"):
        khe.write_human_sheet(tmp_path / "x", n=9, source=fake)


def test_human_eval_command(fake, tmp_path, monkeypatch, capsys):
    from negbench.cli import main

    monkeypatch.setenv("NEGBENCH_KONUBENCH", str(fake))
    assert main(["human-eval", "sheet", "--out", str(tmp_path / "he"), "--n", "3"]) == 0
    key = tmp_path / "he" / "key.csv"
    assert (
        main(
            [
                "human-eval",
                "score",
                str(key),
                str(tmp_path / "he" / "sheet.csv"),
                "--json",
                str(tmp_path / "s.json"),
            ]
        )
        == 0
    )  # the empty sheet: 0 points
    out = capsys.readouterr().out
    assert "| 0.0 | 0.0 | 0.0 | 0.0 |" in out
    assert json.loads((tmp_path / "s.json").read_text())["participants"]["sheet"]["blank"] == 3


def test_report_table8_paper_labels_and_corrected(fake, tmp_path, tiny_llama, monkeypatch):
    """The report's Table 8 (paper: official labels, raw-argmax accuracy) and ours (corrected),
    every cell recomputed from the samples by its Ref."""
    import math
    import negbench.tasks as registry
    from negbench.backends.hf import HFBackend
    from negbench.core.engine import Engine, EngineConfig
    from negbench.scoring.runs import load_runs
    from negbench.scoring.paper_tables import Context, build_tables
    from negbench.scoring.tables import resolve_ref
    from negbench.evaluation.runner import evaluate
    from negbench.evaluation.store import RunStore

    monkeypatch.setitem(registry.REGISTRY.table("task"), "konubench", kb.make_tasks(fake)[0])
    be = HFBackend(tiny_llama, dtype="float32", device="cpu")
    res = evaluate(
        RunConfig(model=tiny_llama, tasks=["konubench"], modes=["cloze"]),
        be,
        Engine(be, config=EngineConfig(progress=False)),
        RunStore(tmp_path / "run"),
        log=lambda s: None,
    )
    m = res["units"]["konubench.cloze.0shot"]["metrics"]
    run = load_runs([tmp_path / "run"])[0]
    tables = {t.id: t for t in build_tables(Context([run]))}
    paper, ours = tables["konubench-table8"], tables["konubench-table8-corrected"]
    assert paper.paper == "Thunder-KoNUBench Table 8" and "ours" in ours.title
    keys = [c.key for c in paper.columns]
    row = paper.rows[0]
    assert row.cells[keys.index("performance")].value == pytest.approx(100 * m["acc"])
    for t in ("local", "contradiction", "paraphrase"):
        assert row.cells[keys.index(f"incorrect.{t}")].value == pytest.approx(
            m["error_analysis_official"]["incorrect_choice"][t]["pct"], nan_ok=True
        )
        assert ours.rows[0].cells[keys.index(f"incorrect.{t}")].value == pytest.approx(
            m["error_analysis"]["incorrect_choice"][t]["pct"], nan_ok=True
        )
    for table in (paper, ours):
        for c in table.rows[0].cells:
            if c is not None and c.ref is not None and not math.isnan(c.value):
                assert resolve_ref(run, c.ref)[0] == pytest.approx(c.value)
