"""The Python API (negbench.evaluate / Session / open_model / Results): the doc's example runs,
and an evaluation through the API is the same run as through `negbench run` — byte-identical
samples, the same results, answers from the same cache."""

from __future__ import annotations

import json
import re

import pytest

import negbench
from locations import ROOT
from negbench.cli import main
from negbench.errors import ModelError, OptionError

DOC = ROOT / "docs" / "python_api.md"
TIMES = ("started", "finished", "wall_s")


def doc_example(name: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    m = re.search(rf"<!-- example: {name} -->\n```python\n(.*?)```", text, re.S)
    assert m, f"no '{name}' example in {DOC}"
    return m.group(1)


def samples_bytes(run) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((run / "samples").glob("*.jsonl"))}


def same_results(a: dict, b: dict) -> None:
    a, b = dict(a), dict(b)
    for k in TIMES:
        a.pop(k), b.pop(k)
    a["engine"], b["engine"] = {}, {}  # cached vs computed counts differ by design
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_doc_example_runs(tiny_llama, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = doc_example("evaluate").replace('"smollm2-135m-instruct"', repr(tiny_llama))
    exec(compile(code, str(DOC), "exec"), {})
    out = capsys.readouterr().out
    assert "Results(model=" in out and "negation-mini  cloze" in out and "cloze accuracy:" in out
    assert (tmp_path / "runs" / "api-negation-mini" / "samples").is_dir()


def test_api_and_cli_write_the_same_run(tiny_llama, tmp_path):
    cache = str(tmp_path / "c.sqlite")
    api = negbench.evaluate(
        model=tiny_llama,
        tasks=["negation-mini", "truefalse-mini"],
        shots=[0, 1],
        seeds=[3, 4],
        limit=6,
        output=tmp_path / "api",
        cache=cache,
        progress=False,
    )
    assert (
        main(
            [
                "run",
                "--model",
                tiny_llama,
                "--tasks",
                "negation-mini,truefalse-mini",
                "--shots",
                "0,1",
                "--seeds",
                "3,4",
                "--limit",
                "6",
                "--output",
                str(tmp_path / "cli"),
                "--cache",
                cache,
                "--quiet",
            ]
        )
        == 0
    )
    a, b = samples_bytes(tmp_path / "api"), samples_bytes(tmp_path / "cli")
    assert a and a == b
    cli = json.loads((tmp_path / "cli" / "results.json").read_text())
    same_results(api.to_dict(), cli)
    assert cli["engine"]["computed"] == 0 and cli["engine"]["cached"] == cli["engine"]["unique"]
    # to_dict() is results.json's content
    disk = json.loads((tmp_path / "api" / "results.json").read_text())
    assert json.dumps(api.to_dict(), sort_keys=True) == json.dumps(disk, sort_keys=True)
    # typed views agree with the dict
    g = api.groups["negation-mini.cloze.1shot"]
    assert g.units == ("negation-mini.cloze.1shot.seed3", "negation-mini.cloze.1shot.seed4")
    assert g.mean("acc") == disk["groups"]["negation-mini.cloze.1shot"]["metrics"]["acc"]["mean"]
    u = api.units["truefalse-mini.next_token.0shot"]
    assert (u.task, u.mode, u.shots, u.seed) == ("truefalse-mini", "next_token", 0, None)
    assert len(api.samples(u.name)) == u.metrics["n"] == 6


def test_session_shares_one_model(tiny_llama, tmp_path, monkeypatch):
    from negbench.backends import hf

    loads = []
    init = hf.HFBackend.__init__

    def counting(self, *a, **kw):
        loads.append(a[0] if a else kw.get("model"))
        init(self, *a, **kw)

    monkeypatch.setattr(hf.HFBackend, "__init__", counting)
    with negbench.Session(
        tiny_llama, cache=str(tmp_path / "c.sqlite"), progress=False, log=lambda s: None
    ) as s:
        assert not s.loaded  # checked, not loaded
        first = s.evaluate(["negation-mini"], modes=["cloze"], limit=4)
        again = s.evaluate(["negation-mini"], modes=["cloze"], limit=4)
        other = s.evaluate(["truefalse-mini"], limit=4)
    assert loads == [tiny_llama]
    assert first.engine["computed"] > 0 and again.engine["computed"] == 0
    assert again.engine["cached"] == again.engine["unique"]
    assert first.samples("negation-mini.cloze.0shot") == again.samples("negation-mini.cloze.0shot")
    assert first.output is None and "truefalse-mini.next_token.0shot" in other.units


def test_results_in_memory(tiny_llama, tmp_path):
    res = negbench.evaluate(
        tiny_llama,
        ["negation-mini"],
        modes=["cloze"],
        limit=5,
        cache=None,
        progress=False,
        log=lambda s: None,
    )
    d = res.to_dict()
    assert d["units"]["negation-mini.cloze.0shot"]["metrics"]["n"] == 5
    assert "negation-mini.cloze" in res.tables  # the error-analysis table
    tables = res.paper_tables()
    assert tables and any("negation-mini" in t.id for t in tables)
    assert all(t.to_markdown() for t in tables)
    pd = pytest.importorskip("pandas")
    df = res.to_pandas()
    assert isinstance(df, pd.DataFrame)
    row = df[(df.metric == "acc") & (df.unit == "negation-mini.cloze.0shot")]
    ms = res.units["negation-mini.cloze.0shot"].metrics
    assert row["value"].item() == ms["acc"]
    # 5 items: below the 30 a Wilson interval needs to reach its coverage (docs/statistics.md)
    assert ms["acc_ci95"] is None and row["ci_low"].item() is None and row["ci_high"].item() is None
    res.data["units"]["negation-mini.cloze.0shot"]["metrics"]["acc_ci95"] = [0.25, 0.75]
    shown = res.to_pandas()
    shown = shown[(shown.metric == "acc") & (shown.unit == "negation-mini.cloze.0shot")]
    assert [shown["ci_low"].item(), shown["ci_high"].item()] == [0.25, 0.75]  # where there is one
    assert row["n"].item() == 5
    assert not df.metric.str.endswith(("_ci95", "_stderr")).any() and "n" not in set(df.metric)
    with pytest.raises(KeyError):
        res.samples("no-such-unit")


def test_results_load_a_saved_run(tiny_llama, tmp_path):
    out = tmp_path / "run"
    negbench.evaluate(
        tiny_llama,
        "negation-mini",
        modes=["cloze"],
        limit=3,
        output=out,
        cache=None,
        progress=False,
        log=lambda s: None,
    )
    res = negbench.Results.load(out)
    assert res.output == out and len(res.samples("negation-mini.cloze.0shot")) == 3
    assert res.summary().startswith("task")


def test_session_checks_before_loading(tmp_path):
    with pytest.raises(ModelError):
        negbench.Session(str(tmp_path / "no-such-model"))
    with pytest.raises(OptionError, match="--quantize"):
        negbench.Session("openai:gpt-4o-mini", quantize="8bit")
    with pytest.raises(ModelError, match="adapter_config.json"):
        negbench.Session("smollm2-135m-instruct", adapter=str(tmp_path))


def test_model_spec_is_parsed_once():
    s = negbench.ModelSpec.parse("openai-compatible:http://localhost:8000/v1#my-model")
    assert (s.kind, s.is_api, s.slug) == ("openai-compatible", True, "openai-compatible-my-model")
    assert negbench.ModelSpec.parse("vllm:/models/x.gguf").slug == "vllm-x.gguf"
    local = negbench.ModelSpec.parse("./models/My Model")
    assert (local.kind, local.is_api, local.slug) == ("local", False, "My-Model")
    assert negbench.ModelSpec.parse(local) is local
