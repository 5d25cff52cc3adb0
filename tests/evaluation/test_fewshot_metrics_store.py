"""Few-shot sampling (lm-eval 0.4 semantics), metrics, atomic files and the cache."""

from __future__ import annotations

import json
import math
import random

from negbench.core.cache import ResponseCache
from negbench.scoring.fewshot import build_context, fewshot_draws
from negbench.scoring.metrics import over_seeds, sd, stderr, summarize
from negbench.scoring.formulations import ChoiceLoglikelihood, Generation, first_letter
from negbench.core.requests import GenerationResponse, LoglikelihoodResponse, NextTokenResponse
from negbench.files import atomic_write_text, package_versions
from negbench.evaluation.store import RunStore
from negbench.scoring.task import Doc, Rendered


def docs(n, prefix="d"):
    return [Doc(f"{prefix}{i}", {"i": i}) for i in range(n)]


def test_lm_eval_sampler_consumes_one_rng_sequentially():
    test, pool = docs(5, "t"), docs(20, "p")
    got = list(fewshot_draws(test, pool, 3, 1234, same_split=False))
    rnd = random.Random(1234)
    assert got == [rnd.sample(pool, 3) for _ in test]  # lm-eval: rnd.sample(docs, n)
    assert len({tuple(d.id for d in g) for g in got}) > 1  # different shots per item


def test_same_split_draws_one_extra_and_drops_the_item():
    pool = docs(6)
    rnd = random.Random(42)
    for d, shots in zip(pool, fewshot_draws(pool, pool, 2, 42, same_split=True)):
        drawn = rnd.sample(pool, 3)
        assert shots == [x for x in drawn if x.id != d.id][:2]
        assert d not in shots


def test_fixed_sampler_same_shots_for_all():
    got = list(fewshot_draws(docs(4), docs(10, "p"), 3, 5, same_split=False, sampler="fixed"))
    assert all(g == got[0] for g in got) and len(got[0]) == 3


def test_context_layout_matches_lm_eval():
    ex = [Rendered("Q1", ["a", "b"], 1), Rendered("Q2", ["c"], None, target="z")]
    assert build_context("Q3", ex, "DESC\n") == "DESC\nQ1 b\n\nQ2 z\n\nQ3"
    assert build_context("Q", []) == "Q"


def test_choice_scoring_acc_and_acc_norm():
    f = ChoiceLoglikelihood()
    r = Rendered("q", ["a long answer", "b"], 0)
    rec = f.score(r, [LoglikelihoodResponse(-6.0, 3, False), LoglikelihoodResponse(-2.0, 1, True)])
    assert rec["pred"] == 1 and rec["acc"] == 0.0  # -2 > -6
    assert rec["pred_norm"] == 0 and rec["acc_norm"] == 1.0  # -6/13 > -2/1
    tie = f.score(r, [LoglikelihoodResponse(-1.0, 1, True)] * 2)
    assert tie["pred"] == 0  # first maximum, like argmax


def test_generation_filter_and_exact_match():
    g = Generation(extract=first_letter("ABCD"))
    r = Rendered("q", ["A", "B"], "B")
    assert g.score(r, [GenerationResponse(" B. because", 3, "\n")])["exact_match"] == 1.0
    bad = g.score(r, [GenerationResponse(" I think so", 3, "\n")])
    assert bad["exact_match"] == 0.0 and bad["format_ok"] is False


def test_next_token_normalisation():
    resp = NextTokenResponse(
        {"True": math.log(0.3), "False": math.log(0.1)}, {"True": 1, "False": 2}
    )
    assert abs(resp.normalized()["True"] - 0.75) < 1e-12


def test_metric_functions():
    recs = [{"acc": 1.0}, {"acc": 0.0}, {"acc": 1.0}, {"acc": 1.0}]
    s = summarize(recs, ["acc"])
    assert s["n"] == 4 and s["acc"] == 0.75
    assert abs(s["acc_stderr"] - math.sqrt(0.25 / 4)) < 1e-12  # var(n-1)=0.25; se = sd/sqrt(n)
    assert abs(sd([1, 2, 3]) - 1.0) < 1e-12 and math.isnan(stderr([1.0]))
    assert over_seeds([0.5, 0.7])["mean"] == 0.6


def test_atomic_write_never_leaves_partial(tmp_path):
    p = tmp_path / "r.json"
    atomic_write_text(p, "old")

    class Boom(Exception):
        pass

    import negbench.evaluation.store as st

    orig = st.os.replace
    try:
        st.os.replace = lambda *a: (_ for _ in ()).throw(Boom())
        try:
            atomic_write_text(p, "new")
        except Boom:
            pass
    finally:
        st.os.replace = orig
    assert p.read_text() == "old"
    assert [x.name for x in tmp_path.iterdir()] == ["r.json"]


def test_cache_roundtrip(tmp_path):
    c = ResponseCache(tmp_path / "x.sqlite")
    c.put_many(
        [
            ("k1", "loglikelihood", "m", LoglikelihoodResponse(-1.5, 2, True)),
            ("k2", "generate", "m", GenerationResponse("hé", 1, "eos")),
        ]
    )
    got = ResponseCache(tmp_path / "x.sqlite").get_many(["k1", "k2", "k3"])
    assert got["k1"] == LoglikelihoodResponse(-1.5, 2, True)
    assert got["k2"].text == "hé" and "k3" not in got


def test_provenance_and_store(tmp_path):
    v = package_versions()
    assert v["negbench"] and v["torch"] and v["python"]
    s = RunStore(tmp_path / "run")
    s.write_samples("u", [{"a": 1}, {"b": "ü"}])
    assert s.read_samples("u") == [{"a": 1}, {"b": "ü"}]
    s.write_results({"x": 1})
    assert json.loads((tmp_path / "run" / "results.json").read_text()) == {"x": 1}


def test_chat_layout_follows_lm_eval_apply_chat_template():
    """Description (+ system prompt) in the system message; shots + query in one user turn."""
    import json as _json
    from negbench.evaluation.runner import RunConfig, chat_context
    from negbench.tasks import get_task
    from negbench.scoring.task import Rendered

    class Templater:
        def apply_chat_template(self, msgs, add_generation_prompt=True):
            return _json.dumps(msgs)

    task = get_task("negation-mini")
    shots = [Rendered("Q1", ["a1"], 0)]
    lm = _json.loads(
        chat_context(
            Templater(),
            RunConfig("m", [], chat=True, system_prompt="Be brief."),
            "Q2",
            shots,
            "Describe.\n\n",
            task,
        )
    )
    assert lm == [
        {"role": "system", "content": "Be brief.\n\nDescribe.\n\n"},
        {"role": "user", "content": "Q1 a1\n\nQ2"},
    ]
    user = _json.loads(
        chat_context(
            Templater(),
            RunConfig("m", [], chat=True, chat_layout="user"),
            "Q2",
            shots,
            "Describe.\n\n",
            task,
        )
    )
    assert user == [{"role": "user", "content": "Describe.\n\nQ1 a1\n\nQ2"}]
    none = _json.loads(chat_context(Templater(), RunConfig("m", [], chat=True), "Q2", [], "", task))
    assert none == [{"role": "user", "content": "Q2"}]


def test_jsonl_reader_skips_bom_and_names_the_bad_line(tmp_path):
    import pytest

    from negbench.errors import DataError
    from negbench.records import iter_jsonl

    p = tmp_path / "export.jsonl"
    p.write_bytes("\ufeff".encode() + b'{"id": 1}\n\n{"id": 2}\n')  # spreadsheet-style BOM
    assert list(iter_jsonl(p)) == [(1, {"id": 1}), (3, {"id": 2})]
    p.write_text('{"id": 1}\n[2]\n', encoding="utf-8")
    with pytest.raises(DataError, match="not a JSON object") as e:
        list(iter_jsonl(p, fix="one record per line"))
    assert e.value.record == "line 2" and e.value.fix == "one record per line"
    with pytest.raises(DataError, match="sheet missing") as e:
        list(iter_jsonl(tmp_path / "nope.jsonl", missing="sheet missing"))
    assert "nope.jsonl" in e.value.where
