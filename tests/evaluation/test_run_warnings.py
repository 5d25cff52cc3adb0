"""Every kind of run warning, from hand-made records of the real tasks (what triggers it and
what does not), their merging, the old plain-text form, and one run on a tiny model that shows
them on the console and in results.json."""

from __future__ import annotations

import json

from negbench.evaluation.run_warnings import RunWarning, merged, unit_warnings
from negbench.tasks import get_task


def kinds(ws):
    return [w.kind for w in ws]


def test_unparseable_jnli_generate():
    t = get_task("jnli-neg")
    recs = [
        {
            "doc_id": str(i),
            "output": "はい、そうです。",
            "answer": None,
            "format_ok": False,
            "gold": "neutral",
            "exact_match": 0.0,
            "meta": {"group": str(i // 3)},
        }
        for i in range(12)
    ]
    ws = unit_warnings(
        "jnli-neg.generate.0shot", t, "generate", recs, {"unparseable_rate": 1.0, "n": 12}
    )
    w = next(w for w in ws if w.kind == "unparseable")
    assert w.unit == "jnli-neg.generate.0shot" and "100 % of the outputs (12 of 12)" in w.message
    assert "loglik" in w.fix and "--chat" in w.fix
    ok = [dict(r, answer="neutral", format_ok=True) for r in recs[:11]] + recs[11:]
    assert "unparseable" not in kinds(
        unit_warnings("u", t, "generate", ok, {"unparseable_rate": 1 / 12})
    )


def test_constant_prediction_only_when_the_gold_is_mixed():
    t = get_task("scone-nli")
    recs = [
        {
            "doc_id": str(i),
            "pred": 0,
            "gold_index": i % 2,
            "choices": ["Yes", "Maybe"],
            "acc": float(i % 2 == 0),
            "meta": {"split": "no_negation"},
        }
        for i in range(12)
    ]
    w = next(
        w
        for w in unit_warnings("scone-nli.cloze.0shot", t, "cloze", recs, {})
        if w.kind == "constant_prediction"
    )
    assert "'Yes' for 100 % of the 12 items" in w.message and "50 %" in w.message
    # negation-mini cloze: the gold is always the first option, so answering it is no alarm
    nm = get_task("negation-mini")
    right = [
        {
            "doc_id": str(i),
            "pred": 0,
            "gold_index": 0,
            "choices": ["a", "b"],
            "acc": 1.0,
            "meta": {},
        }
        for i in range(12)
    ]
    assert "constant_prediction" not in kinds(unit_warnings("u", nm, "cloze", right, {}))
    # This is not a Dataset: P(True) below 0.5 for all but one sentence
    nad = get_task("notadataset")
    tf = [
        {"doc_id": str(i), "pred_bool": i == 0, "label": i % 3 == 0, "acc": 0.0, "meta": {}}
        for i in range(5000)
    ]
    w = next(
        w
        for w in unit_warnings("nad", nad, "next_token", tf, {})
        if w.kind == "constant_prediction"
    )
    assert "False for 99.98 % of the 5000 items" in w.message
    few = tf[:9]  # too few to judge
    assert "constant_prediction" not in kinds(unit_warnings("nad", nad, "next_token", few, {}))


def test_strict_vs_lenient_condaqa():
    t = get_task("condaqa")
    ws = unit_warnings(
        "condaqa.generate.0shot",
        t,
        "generate",
        [],
        {"accuracy": 0.0, "accuracy_lenient": 0.6, "accuracy_normalized": 0.05},
    )
    w = [w for w in ws if w.kind == "strict_vs_lenient"]
    assert (
        len(w) == 1
        and "accuracy (the paper's strict reading) is 0.00 but accuracy_lenient is 0.60"
        in w[0].message
    )
    close = unit_warnings("u", t, "generate", [], {"accuracy": 0.5, "accuracy_lenient": 0.6})
    assert "strict_vs_lenient" not in kinds(close)


def test_undefined_metric_names_the_subset_and_the_headline():
    t = get_task("truefalse-mini")
    recs = [{"doc_id": "1", "pred": 0, "gold_index": 0, "acc": 1.0, "meta": {"pair": 1}}]
    sub = {"subset": True, "n": 1, "full": 56, "missing_strata": []}
    ws = unit_warnings(
        "tf",
        t,
        "next_token",
        recs,
        {"acc": 1.0, "pair_consistency": float("nan"), "acc_stderr": float("nan")},
        sub,
        headline="pair_consistency",
    )
    w = next(w for w in ws if w.kind == "undefined_metric")
    assert w.message.startswith("pair_consistency undefined") and "acc_stderr" not in w.message
    assert "the headline pair_consistency" in w.message
    assert "keep whole affirmative/negated pairs" in w.fix


def test_undefined_correlation_of_constant_predictions_says_why():
    t = get_task("jsts-neg")
    recs = [
        {"doc_id": str(i), "output": "1", "answer": "1", "gold": str(i % 5), "meta": {}}
        for i in range(20)
    ]
    metrics = {"M.acc_chg": 0.0, "pearson": float("nan"), "spearman": float("nan")}
    ws = unit_warnings("jsts-neg.generate.0shot", t, "generate", recs, metrics)
    w = next(w for w in ws if w.kind == "undefined_metric")
    assert w.message.startswith("pearson, spearman undefined: every prediction is '1'")
    assert "constant_prediction" in w.fix and "constant_prediction" in kinds(ws)
    # varied predictions: the correlations are undefined for another reason, said as before
    varied = [dict(r, answer=str(i % 3)) for i, r in enumerate(recs)]
    w = next(
        w
        for w in unit_warnings("u", t, "generate", varied, metrics)
        if w.kind == "undefined_metric"
    )
    assert "hold none of what they are computed over" in w.message


def test_empty_generations_and_subset_incomplete():
    t = get_task("scone-nli")
    recs = [
        {
            "doc_id": str(i),
            "output": "",
            "stopped_by": "eos",
            "answer": "neutral",
            "gold": "entailment",
            "exact_match": 0.0,
            "meta": {"split": "no_negation"},
        }
        for i in range(4)
    ]
    ws = unit_warnings(
        "scone-nli.cond-q.0shot",
        t,
        "cond-q",
        recs,
        {},
        {"subset": True, "missing_strata": ["two_scoped", "one_scoped"]},
    )
    assert kinds(ws) == ["empty_generations", "subset_incomplete"]
    assert ws[0].message.startswith("4 of 4 generations are empty (stopped by eos")
    assert ws[1].unit == "scone-nli" and "2 conditions: two_scoped, one_scoped" in ws[1].message


def test_merged_and_old_plain_warnings():
    a = RunWarning("t.m.1shot.seed1", "subset_incomplete", "same", "fix")
    b = RunWarning("t.m.1shot.seed2", "subset_incomplete", "same", "fix")
    c = RunWarning("t.x.0shot", "unparseable", "other", "")
    out = merged([a, b, c, a])
    assert [w.unit for w in out] == ["t.m.1shot.seed1, t.m.1shot.seed2", "t.x.0shot"]
    old = RunWarning.of("x: 3 of 4 generations are empty")
    assert (old.unit, old.kind, old.message) == (None, "note", "x: 3 of 4 generations are empty")
    assert RunWarning.of(a.to_dict()) == a


def test_a_run_prints_and_saves_its_warnings(tiny_llama, tmp_path, capsys):
    from negbench.cli import main
    from negbench.evaluation.results import Results

    out = tmp_path / "run"
    assert (
        main(
            [
                "run",
                "--model",
                tiny_llama,
                "--tasks",
                "truefalse-mini",
                "--limit",
                "12",
                "--output",
                str(out),
                "--quiet",
                "--no-cache",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    res = json.loads((out / "results.json").read_text())
    ws = Results.load(out).warnings
    assert all(isinstance(w, RunWarning) for w in ws)
    assert [w.to_dict() for w in ws] == res["warnings"]
    for w in ws:  # each one on the console, after the tables
        assert w.message in text and text.index(w.message) > text.index("unique requests")
    u = res["units"]["truefalse-mini.next_token.0shot"]
    assert u["subset"]["n"] == 12 and u["subset"]["full"] == 56 and u["subset"]["subset"]
    # 12 items in affirmative/negated pairs: too few units for an interval with its coverage,
    # so none is shown and a warning says how many units are needed (docs/statistics.md)
    assert u["headline"]["metric"] == "acc" and u["headline"]["ci95"] is None
    note = u["headline"]["ci_withheld"]
    assert note["units"] < note["units_needed"]
    assert any(w.kind == "interval_withheld" and str(note["units_needed"]) in w.fix for w in ws)
    assert "12 of 56 *" in text and "whole affirmative/negated pairs" in text
