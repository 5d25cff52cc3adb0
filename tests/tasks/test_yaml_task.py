"""A task described in YAML over the user's own negation data (written here; no third-party text)
runs like a built-in one in every mode it declares; bad files and records get errors naming file,
record and field before a model loads; `negbench run --config` is the same run as its flags."""

from __future__ import annotations

import json
import re

import pytest

import negbench
from locations import ROOT
from negbench.cli import main
from negbench.errors import DataError, TaskError
from negbench.tasks import get_task

DOC = ROOT / "docs" / "yaml_tasks.md"
#: our own statements: (sentence, true?, negated?)
STATEMENTS = [
    ("A square has four sides.", True, False),
    ("A square does not have four sides.", False, True),
    ("Water is wet.", True, False),
    ("Water is not wet.", False, True),
    ("The sun rises in the east.", True, False),
    ("The sun does not rise in the east.", False, True),
    ("Fish can fly to the moon.", False, False),
    ("Fish cannot fly to the moon.", True, True),
    ("Ice is cold.", True, False),
    ("Ice is never cold.", False, True),
]
EXAMPLES = [("A cat is an animal.", True, False), ("A cat is not an animal.", False, True)]


def doc_block(name: str, lang: str = "yaml") -> str:
    m = re.search(rf"<!-- example: {name} -->\n```{lang}\n(.*?)```", DOC.read_text(), re.S)
    assert m, f"no '{name}' example in {DOC}"
    return m.group(1)


def write_jsonl(path, rows, prefix):
    path.write_text(
        "".join(
            json.dumps({"id": f"{prefix}{i}", "sentence": s, "label": lab, "negated": neg}) + "\n"
            for i, (s, lab, neg) in enumerate(rows, 1)
        ),
        encoding="utf-8",
    )


@pytest.fixture
def task_file(tmp_path):
    d = tmp_path / "mytask"
    d.mkdir()
    write_jsonl(d / "statements.jsonl", STATEMENTS, "s")
    write_jsonl(d / "examples.jsonl", EXAMPLES, "e")
    p = d / "my_negation.yaml"
    p.write_text(doc_block("yaml-task"), encoding="utf-8")
    return p


def test_doc_task_runs_in_every_mode_it_declares(task_file, tiny_llama, tmp_path):
    task = get_task(str(task_file))
    assert task.name == "my-negation" and set(task.modes) == {
        "cloze",
        "letter",
        "next_token",
        "generate",
    }
    out = tmp_path / "run"
    assert (
        main(
            [
                "run",
                "--model",
                tiny_llama,
                "--tasks",
                str(task_file),
                "--modes",
                ",".join(task.modes),
                "--shots",
                "0,1",
                "--seeds",
                "7",
                "--output",
                str(out),
                "--cache",
                str(tmp_path / "c.sqlite"),
                "--quiet",
            ]
        )
        == 0
    )
    res = negbench.Results.load(out)
    for mode in task.modes:
        for shots in (0, 1):
            name = f"my-negation.{mode}.{shots}shot" + (".seed7" if shots else "")
            u = res.units[name]
            recs = res.samples(name)
            assert u.metrics["n"] == len(recs) == len(STATEMENTS)
            metric = "exact_match" if mode == "generate" else "acc"
            assert 0.0 <= u.metrics[metric] <= 1.0
            by = u.metrics[f"{metric}_by_negated"]
            assert set(by) == {"False", "True"} and by["True"]["n"] == by["False"]["n"] == 5
            if mode == "letter":
                assert (
                    recs[0]["choices"] == ["A", "B"]
                    and "A. true\nB. false\nAnswer:" in recs[0]["context"]
                )
            if mode == "generate":
                assert recs[1]["gold"] == "false" and "output" in recs[1]
            if shots:  # the shot comes from the train file
                assert recs[0]["fewshot_ids"][0] in ("e1", "e2")
    first = res.samples("my-negation.cloze.0shot")[0]
    assert (
        first["context"]
        == "Is the following statement true or false? A square has four sides.\nAnswer:"
    )
    assert first["choices"] == ["true", "false"] and first["gold"] == 0
    assert res.units["my-negation.cloze.0shot"].metrics.keys() >= {"acc", "acc_norm"}
    # the Python API runs the same task, and the answers come from the cache
    again = negbench.evaluate(
        tiny_llama,
        [str(task_file)],
        modes=["next_token"],
        cache=str(tmp_path / "c.sqlite"),
        progress=False,
        log=lambda s: None,
    )
    assert again.engine["computed"] == 0
    assert again.samples("my-negation.next_token.0shot") == res.samples(
        "my-negation.next_token.0shot"
    )


def test_default_modes_and_a_single_file(tmp_path):
    write_jsonl(tmp_path / "data.jsonl", STATEMENTS, "x")
    p = tmp_path / "t.yaml"
    p.write_text(
        "dataset: data.jsonl\nprompt: '{{ sentence }}'\nchoices: ['yes', 'no']\n"
        'answer: "{{ 0 if label else 1 }}"\n',
        encoding="utf-8",
    )
    t = get_task(str(p))
    assert t.name == "t" and list(t.modes) == ["cloze"] and list(t.default_modes) == ["cloze"]
    docs = t.load("test")
    assert [d.id for d in docs[:2]] == ["1", "2"] and docs[1]["gold"] == 1
    r = t.mode("cloze").render(docs[0])
    assert (r.query, r.choices, r.gold) == ("A square has four sides.", ["yes", "no"], 0)


@pytest.mark.parametrize(
    "yaml_text, match",
    [
        (
            "dataset: d.jsonl\nprompt: x\nchoices: [a, b]\nanswer: label\nmodez: [cloze]\n",
            "unknown key 'modez'",
        ),
        (
            "dataset: d.jsonl\nprompt: x\nchoices: [a, b]\nanswer: label\nmodes: [sentiment]\n",
            "unknown mode 'sentiment'",
        ),
        ("dataset: d.jsonl\nprompt: x\nchoices: [a]\nanswer: label\n", "at least two"),
        ("dataset: d.jsonl\nprompt: x\nchoices: [a, b]\n", "missing 'answer'"),
        (
            "dataset: d.jsonl\nprompt: x\nchoices: [a, b]\nanswer: label\nmodes: [cloze]\n"
            "metrics: [exact_match]\n",
            "not computed by the modes",
        ),
        (
            "dataset: d.jsonl\nprompt: '{{ sentence '\nchoices: [a, b]\nanswer: label\n",
            "not a valid template",
        ),
        ("dataset: [d.jsonl\n", "not valid YAML"),
    ],
)
def test_bad_task_files(tmp_path, yaml_text, match):
    p = tmp_path / "bad.yaml"
    p.write_text(yaml_text, encoding="utf-8")
    with pytest.raises(TaskError, match=match) as e:
        get_task(str(p))
    assert str(p) in e.value.render()


def test_bad_records_name_file_record_and_field(tmp_path, capsys):
    data = tmp_path / "d.jsonl"
    data.write_text(
        '{"id": "a", "sentence": "Snow is white.", "label": true}\n{"id": "b", "label": false}\n',
        encoding="utf-8",
    )
    p = tmp_path / "t.yaml"
    p.write_text(
        "dataset: d.jsonl\nid_field: id\nprompt: '{{ sentence }}'\n"
        "choices: ['true', 'false']\nanswer: \"{{ 'true' if label else 'false' }}\"\n",
        encoding="utf-8",
    )
    with pytest.raises(DataError) as e:
        get_task(str(p)).load("test")
    assert (e.value.path, e.value.record, e.value.field) == (str(data), "line 2", "sentence")
    # through the command line: exit 2, before the model loads, nothing written
    out = tmp_path / "never"
    assert (
        main(["run", "--model", "smollm2-135m-instruct", "--tasks", str(p), "--output", str(out)])
        == 2
    )
    err = capsys.readouterr().err
    assert "line 2" in err and "sentence" in err and "loading" not in err and not out.exists()
    data.write_text('{"id": "a", "sentence": "Snow is white.", "label": 3}\n', encoding="utf-8")
    p.write_text(
        "dataset: d.jsonl\nprompt: '{{ sentence }}'\nchoices: ['true', 'false']\nanswer: label\n",
        encoding="utf-8",
    )
    with pytest.raises(DataError, match="not an index") as e:
        get_task(str(p)).load("test")
    assert e.value.field == "label"


def test_run_config_is_the_same_as_its_flags(task_file, tiny_llama, tmp_path):
    cfg = (
        doc_block("run-config")
        .replace("smollm2-135m-instruct", tiny_llama)
        .replace("my_negation.yaml", str(task_file))
    )
    (tmp_path / "run.yaml").write_text(cfg, encoding="utf-8")
    cache = str(tmp_path / "c.sqlite")
    a, b = tmp_path / "from-config", tmp_path / "from-flags"
    assert (
        main(
            [
                "run",
                "--config",
                str(tmp_path / "run.yaml"),
                "--limit",
                "5",
                "--output",
                str(a),
                "--cache",
                cache,
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "run",
                "--model",
                tiny_llama,
                "--tasks",
                f"negation-mini,{task_file}",
                "--modes",
                "cloze",
                "--shots",
                "0,1",
                "--seeds",
                "1,2",
                "--limit",
                "5",
                "--quiet",
                "--output",
                str(b),
                "--cache",
                cache,
            ]
        )
        == 0
    )
    sa = {p.name: p.read_bytes() for p in (a / "samples").glob("*.jsonl")}
    sb = {p.name: p.read_bytes() for p in (b / "samples").glob("*.jsonl")}
    assert len(sa) == 6 and sa == sb
    ra, rb = (json.loads((x / "results.json").read_text()) for x in (a, b))
    assert ra["config"] == rb["config"] and ra["config"]["limit"] == 5  # the command line won
    assert rb["engine"]["computed"] == 0


def test_bad_run_config(tmp_path, capsys):
    p = tmp_path / "run.yaml"
    p.write_text("taks: [negation-mini]\n", encoding="utf-8")
    assert main(["run", "--config", str(p)]) == 2
    assert "unknown option 'taks'" in capsys.readouterr().err
    p.write_text("chat: maybe\n", encoding="utf-8")
    assert main(["run", "--config", str(p)]) == 2
    assert "flag" in capsys.readouterr().err
    assert main(["run", "--config", str(tmp_path / "none.yaml")]) == 2


def test_group_by_breakdown_is_shown_with_n_and_interval(task_file, tiny_llama, tmp_path, capsys):
    """``acc_by_negated`` — for a negation study the number that matters — is printed by ``run``
    and ``show`` and is a table of the report (Markdown and HTML), each cell with its n and
    its Wilson interval (from 30 items), recomputed here from the samples."""
    from negbench.scoring.intervals import wilson

    # 70 statements (35 a cell), so that each cell has the interval its coverage allows
    write_jsonl(task_file.parent / "statements.jsonl", STATEMENTS * 7, "s")
    out = tmp_path / "run"
    args = ["run", "--model", tiny_llama, "--tasks", str(task_file), "--modes", "cloze"]
    assert main(args + ["--output", str(out), "--no-cache"]) == 0
    printed = capsys.readouterr().out
    recs = negbench.Results.load(out).samples("my-negation.cloze.0shot")
    lines = []
    for neg in ("False", "True"):
        xs = [r["acc"] for r in recs if str(r["meta"]["negated"]) == neg]
        lo, hi = wilson(sum(xs), len(xs))
        lines.append(
            re.compile(rf"{neg}\s+{len(xs)}\s+{sum(xs) / len(xs):.4f}\s+\[{lo:.3f}, {hi:.3f}\]")
        )
    assert "my-negation.cloze.0shot · acc_by_negated" in printed
    assert all(p.search(printed) for p in lines), printed
    assert main(["show", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "acc_by_negated" in shown and all(p.search(shown) for p in lines)
    rep = tmp_path / "rep"
    assert main(["report", str(out), "--out", str(rep), "--no-plots"]) == 0
    md = (rep / "report.md").read_text(encoding="utf-8")
    assert (
        "my-negation.cloze.0shot: acc by negated" in md and "| negated | n | acc | 95 % CI |" in md
    )
    html = (rep / "report.html").read_text(encoding="utf-8")
    assert "acc by negated" in html and "95 % CI" in html
