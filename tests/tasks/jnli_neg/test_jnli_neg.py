"""JNLI-Neg v1.1: the llm-jp-eval JNLI prompt, the loader (real release when ../shared/data has it;
otherwise synthetic records of our own sentences), the label parser, the metrics and an end-to-end
run with a tiny random model.  No dataset text is written into this file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import negbench.tasks.common.minimal_pairs as mp
from negbench.errors import DataError, TaskError
from negbench.scoring.fewshot import build_context
from negbench.core.requests import GenerationResponse
import negbench.tasks.jnli_neg.tasks as jn
from locations import SHARED, TEST_DATA

REAL = SHARED / "data" / "jnli-neg"
REAL_FILE = REAL / "data" / "jnli-neg-v1.1" / "jnli-neg-valid-v1.1.jsonl"
needs_real = pytest.mark.skipif(
    not REAL_FILE.is_file(), reason="../shared/data/jnli-neg not present"
)
JSTS_FIXTURES = TEST_DATA / "jsts_neg"

# llm-jp-eval jaster/jnli.py, output_info.instruction
LLM_JP_EVAL_JNLI = (
    "前提と仮説の関係をentailment、contradiction、neutralの中から回答してください。それ以外には何も"
    "含めないことを厳守してください。\n\n制約：\n- 前提から仮説が、論理的知識や常識的知識を用いて導出可"
    "能である場合はentailmentと出力\n- 前提と仮説が両立しえない場合はcontradictionと出力\n- そのいずれ"
    "でもない場合はneutralと出力"
)
INTRO = "以下は、タスクを説明する指示と、文脈のある入力の組み合わせです。要求を適切に満たす応答を書きなさい。"
TYPE_MAP = {"original": "p_neg", "s1_neg": "p_neg", "s2_neg": "h_neg", "both_neg": "p_neg_h_neg"}


def label_of(score: int) -> str:
    return "entailment" if score >= 4 else ("neutral" if score >= 2 else "contradiction")


def synthetic_rows(split: str) -> list[dict]:
    """Our JSTS-Neg fixture sentences in the JNLI-Neg schema (labels derived from the scores)."""
    rows = []
    for line in (JSTS_FIXTURES / f"jsts-neg-{split}.jsonl").read_text("utf-8").splitlines():
        o = json.loads(line)
        lab = label_of(o["gold_score"])
        for k in ("sentence1", "sentence2"):
            if o[k]["neg"] is not None:
                o[k]["neg"] = {
                    "neg_id_in_jnli_sentence": o[k]["neg"]["neg_id_in_jsts_sentence"],
                    "neg_position": o[k]["neg"]["neg_position"],
                    "target_pos": o[k]["neg"]["target_pos"],
                }
        orig = o["type"] == "original"
        rows.append(
            {
                "id": o["id"],
                "jnli_sentence_pair_id": int(o["jsts_sentence_pair_id"]),
                "pair_id_in_group": o["pair_id_in_group"],
                "type": "original" if orig else TYPE_MAP[o["type"]],
                "sentence1": o["sentence1"],
                "sentence2": o["sentence2"],
                "gold_label": lab,
                "annotator_labels": None
                if orig
                else {
                    **{x: 0 for x in jn.LABELS},
                    lab: 2,
                    ("neutral" if lab != "neutral" else "entailment"): 1,
                },
            }
        )
    return rows


def write_release(root: Path, splits: dict[str, list[dict]]) -> Path:
    d = root / "data" / "jnli-neg-v1.1"
    d.mkdir(parents=True, exist_ok=True)
    for split, rows in splits.items():
        (d / f"jnli-neg-{split}-v1.1.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8"
        )
    return root


@pytest.fixture
def fake(tmp_path):
    jn.clear_cache()
    yield write_release(
        tmp_path / "jnli-neg", {"train": synthetic_rows("train"), "valid": synthetic_rows("test")}
    )
    jn.clear_cache()


# -- prompt ------------------------------------------------------------------------------------
def test_llm_jp_eval_prompt(fake):
    assert jn.INSTRUCTION == LLM_JP_EVAL_JNLI
    assert jn.DESCRIPTION == f"{INTRO}\n\n### 指示:\n{LLM_JP_EVAL_JNLI}\n\n"
    docs = jn.load_split("valid", fake)
    d, s = docs[1], jn.load_split("train", fake)[0]
    r = jn.render_generate(d)
    assert r.query == f"### 入力:\n前提：{d['sentence1']}\n仮説：{d['sentence2']}\n\n### 応答:\n"
    ctx = build_context(
        r.query, [jn.render_generate(s)], jn.DESCRIPTION, jn.TARGET_DELIMITER, jn.FEWSHOT_DELIMITER
    )
    assert ctx == (
        f"{INTRO}\n\n### 指示:\n{LLM_JP_EVAL_JNLI}"
        f"\n\n### 入力:\n前提：{s['sentence1']}\n仮説：{s['sentence2']}\n\n### 応答:\n{s['gold']}"
        f"\n\n### 入力:\n前提：{d['sentence1']}\n仮説：{d['sentence2']}\n\n### 応答:\n"
    )
    lr = jn.render_loglik(d)
    assert lr.choices == ["entailment", "contradiction", "neutral"]
    assert lr.choices[lr.gold] == d["gold"] == lr.target_text()
    t = jn.TASKS[0]
    assert (t.test_split, t.fewshot_split) == ("valid", "train")
    assert tuple(t.protocol_shots) == (0, 4, 6) and len(t.protocol_seeds) == 5
    assert isinstance(t.fewshot_sampler, mp.StratifiedShots)


# -- real release -------------------------------------------------------------------------------
@needs_real
def test_real_counts_and_pairs():
    jn.clear_cache()
    for split in ("train", "valid"):
        docs = jn.load_split(split, REAL)
        assert len(docs) == jn.SPLIT_SIZES[split]
        pairs = mp.derive_pairs([jn.meta(d) for d in docs])
        assert len(pairs) == jn.PAIR_COUNTS[split]  # the README's minimal-pair counts
    valid = jn.load_split("valid", REAL)
    pairs = mp.derive_pairs([jn.meta(d) for d in valid])
    assert sum(p.kind == "single" for p in pairs) == 617 and sum(p.changed for p in pairs) == 787
    assert mp.text_inconsistencies(valid) == []
    assert len(mp.text_inconsistencies(jn.load_split("train", REAL))) == 2  # doubled '。'
    # fields and meta against the file read independently
    raw = [json.loads(x) for x in REAL_FILE.read_text("utf-8").splitlines() if x.strip()]
    for o, d in zip(raw, valid):
        assert d.id == str(o["id"]) and d["gold"] == o["gold_label"] and d["type"] == o["type"]
        assert d["sentence1"] == o["sentence1"]["sentence"] and d["group"] == str(
            o["jnli_sentence_pair_id"]
        )
        m = jn.render_loglik(d).meta
        assert m["annotator_labels"] == o["annotator_labels"]
        n1 = o["sentence1"]["neg"]
        assert m["s1_neg_id"] == (None if n1 is None else n1["neg_id_in_jnli_sentence"])
    # 4- and 6-shot draws on the real train split
    s = mp.StratifiedShots()
    pool = jn.load_split("train", REAL)
    assert s.max_shots(pool) == 6
    six = s.draw(pool, 6, 0)
    assert sorted(d["gold"] for d in six if mp.is_original(d)) == sorted(jn.LABELS)
    assert sorted(d["gold"] for d in six if not mp.is_original(d)) == sorted(jn.LABELS)


# -- loader ------------------------------------------------------------------------------------
def test_synthetic_loader_and_locations(fake, monkeypatch):
    docs = jn.load_split("validation", fake)
    assert (
        len(docs) == 14
        and docs[0]["annotators"] is None
        and docs[1]["annotators"]["contradiction"] == 2
    )
    monkeypatch.setenv("NEGBENCH_JNLI_NEG", str(fake))
    assert len(jn.load_split("train")) == 30
    monkeypatch.delenv("NEGBENCH_JNLI_NEG")
    monkeypatch.setenv("NEGBENCH_DATA", str(fake.parent))
    assert jn.default_source() == str(fake) and len(jn.load_split("valid")) == 14
    with pytest.raises(TaskError):
        jn.load_split("test", fake)
    with pytest.raises(DataError, match="data folder not found"):
        jn.load_split("valid", fake / "missing")


@pytest.mark.parametrize(
    "line,fld,value,field_named,what",
    [
        (0, "gold_label", "contradict", "gold_label", "unknown gold_label"),
        (0, "gold_label", None, "gold_label", "missing field"),
        (1, "annotator_labels", {"entailment": 3}, "annotator_labels", "keys"),
        (
            1,
            "annotator_labels",
            {"entailment": -1, "neutral": 0, "contradiction": 3},
            "annotator_labels",
            ">= 0",
        ),
        (
            1,
            "annotator_labels",
            {"entailment": 3, "neutral": 0, "contradiction": 0},
            "gold_label",
            "majority",
        ),
        (1, "jnli_sentence_pair_id", "201", "jnli_sentence_pair_id", "expected int"),
        (1, "type", "s1_neg", "type", "unknown type"),
    ],
)
def test_validation(tmp_path, line, fld, value, field_named, what):
    jn.clear_cache()
    rows = synthetic_rows("test")
    rows[line][fld] = value
    root = write_release(tmp_path, {"valid": rows})
    with pytest.raises(DataError) as e:
        jn.load_split("valid", root)
    assert e.value.field == field_named and str(e.value.record).startswith(f"line {line + 1}")
    assert e.value.path.endswith("jnli-neg-valid-v1.1.jsonl") and what in str(e.value)
    jn.clear_cache()


def test_tie_votes_are_accepted(tmp_path):
    jn.clear_cache()
    rows = synthetic_rows("test")
    rows[1]["annotator_labels"] = {"entailment": 1, "neutral": 1, "contradiction": 1}
    assert len(jn.load_split("valid", write_release(tmp_path, {"valid": rows}))) == 14
    jn.clear_cache()


# -- parser and metrics --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "out,label",
    [
        ("entailment", "entailment"),
        (" Contradiction\n", "contradiction"),
        ("ｎｅｕｔｒａｌ", "neutral"),
        ("答えはneutralです", "neutral"),
        ("矛盾", "contradiction"),
        ("含意", "entailment"),
        ("neutral or entailment", "neutral"),
        ("", None),
        (None, None),
        ("わかりません", None),
        ("### 入力: entailment", None),
    ],
)
def test_label_parser(out, label):
    assert jn.parse_label(out) == label


def _records(fake, mode: str, answer) -> list[dict]:
    recs = []
    for d in jn.load_split("valid", fake):
        if mode == "generate":
            r = jn.render_generate(d)
            s = jn.GENERATE.score(r, [GenerationResponse(answer(d), 1, None)])
        else:
            r = jn.render_loglik(d)
            pred = jn.LABELS.index(answer(d))
            s = {
                "pred": pred,
                "pred_norm": 0,
                "acc": float(pred == r.gold),
                "acc_norm": float(r.gold == 0),
            }
        recs.append({"doc_id": d.id, "meta": r.meta, "choices": r.choices, **s})
    return recs


def test_metrics(fake):
    # the model answers "neutral" to every instance but says nothing on group 201's original
    recs = _records(fake, "generate", lambda d: "" if d.id == "1000" else "neutral")
    m = jn.jnli_neg_metrics("generate", recs)
    assert m["unparseable"] == 1
    golds = [d["gold"] for d in jn.load_split("valid", fake)]
    n_neu = golds.count("neutral")
    assert m["acc_gold_neutral"] == 1.0 and m["acc_gold_entailment"] == 0.0
    assert m["confusion"]["entailment"]["none"] == 1  # 1000: gold score 4
    assert sum(m["confusion"][g]["neutral"] for g in jn.LABELS) == 13
    assert m["confusion"]["neutral"]["neutral"] == n_neu
    # pairs: as the instance-level outcomes are (gold == neutral), the pair metrics follow
    ref = mp.minimal_pair_scores(
        [{**r, "exact_match": float(r["meta"]["gold"] == "neutral")} for r in recs]
    )
    assert all(m[k] == ref[k] or (math.isnan(m[k]) and math.isnan(ref[k])) for k in ref)
    ll = jn.jnli_neg_metrics("loglik", _records(fake, "loglik", lambda d: "contradiction"))
    assert ll["unparseable"] == 0 and "pairs_acc_norm" in ll
    assert ll["acc_gold_contradiction"] == 1.0 and ll["acc_gold_neutral"] == 0.0
    assert ll["pairs_acc_norm"]["M.acc"] == pytest.approx(
        mp.minimal_pair_scores(_records(fake, "loglik", lambda d: "contradiction"), "acc_norm")[
            "M.acc"
        ]
    )
    assert "| u |" in jn.jnli_neg_tables("loglik", [("u", ll)])


# -- end to end ----------------------------------------------------------------------------------
def test_runner_end_to_end_tiny_model(fake, tiny_gemma, monkeypatch, tmp_path):
    import negbench.tasks as registry
    from negbench.backends.hf import HFBackend
    from negbench.core.engine import Engine, EngineConfig
    from negbench.evaluation.runner import RunConfig, evaluate
    from negbench.evaluation.store import RunStore

    monkeypatch.setitem(registry.REGISTRY.table("task"), "jnli-neg", jn.make_tasks(fake)[0])
    be = HFBackend(tiny_gemma, dtype="float32", device="cpu")
    eng = Engine(be, config=EngineConfig(progress=False))
    cfg = RunConfig(
        model=tiny_gemma,
        tasks=["jnli-neg"],
        modes=["loglik", "generate"],
        shots=[0, 4],
        seeds=[2],
        limit=10,
    )
    res = evaluate(cfg, be, eng, RunStore(tmp_path / "run"), log=lambda s: None)
    assert set(res["units"]) == {
        f"jnli-neg.{m}.{k}" for m in ("loglik", "generate") for k in ("0shot", "4shot.seed2")
    }
    train = {d.id: d for d in jn.load_split("train", fake)}
    for name, u in res["units"].items():
        m = u["metrics"]
        # the first 10 records: groups 201 (4 pairs) and 202 (6 instances, 7 pairs)
        assert m["n"] == 10 and m["n_pairs.M"] == 11
        samples = [
            json.loads(x)
            for x in (tmp_path / "run" / "samples" / f"{name}.jsonl")
            .read_text("utf-8")
            .splitlines()
        ]
        assert all(s["context"].startswith(jn.DESCRIPTION) for s in samples)
        assert all("annotator_labels" in s["meta"] for s in samples)
        shots = {tuple(s["fewshot_ids"]) for s in samples}
        assert len(shots) == 1
        ids = next(iter(shots))
        assert len(ids) == u["shots"]
        if ids:
            part = [mp.is_original(train[i]) for i in ids]
            assert part.count(True) == 2 and part.count(False) == 2
    assert "jnli-neg.loglik" in res["tables"] and "jnli-neg.generate" in res["tables"]


@pytest.mark.slow
@needs_real
def test_real_gemma3_270m_jnli_neg_small(monkeypatch):
    """gemma3-270m (multilingual default) on --limit 40 of valid (whole groups), loglik, 0-shot."""
    monkeypatch.delenv("NEGBENCH_CACHE", raising=False)  # reuse the converted model (3 min to make)
    from negbench.backends.hf import HFBackend
    from negbench.core.engine import Engine, EngineConfig
    from negbench.evaluation.runner import RunConfig, Unit, build_requests
    from negbench.scoring.metrics import unit_metrics

    jn.clear_cache()
    task = jn.make_tasks(REAL)[0]
    be = HFBackend("gemma3-270m", dtype="float32", device="cpu")
    eng = Engine(be, config=EngineConfig(progress=False))
    cfg = RunConfig(model="gemma3-270m", tasks=["jnli-neg"], limit=40)
    samples, reqs = build_requests(Unit(task, "loglik", 0, None), be, cfg)
    answers = eng.run([r for rs in reqs for r in rs])
    k = 0
    for s, rs in zip(samples, reqs):
        r = s.pop("_rendered")
        s.update(jn.LOGLIK.score(r, answers[k : k + len(rs)]))
        k += len(rs)
    m = unit_metrics(task, "loglik", samples)
    # --limit 40 takes whole groups of minimal pairs (about 40 records), as subsets.select says
    from negbench.scoring.subsets import select

    picked, sel = select(task.load(task.test_split), task.structure, limit=40)
    assert m["n"] == sel.n == len(picked) and sel.how == "limit" and 20 <= sel.n <= 60
    assert {s["doc_id"] for s in samples} == {d.id for d in picked}
    assert m["n_pairs.M"] > 0 and 0 <= m["M.acc"] <= 1
