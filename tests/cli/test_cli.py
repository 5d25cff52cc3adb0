"""The command line: listings, a small run, and one clear message per user mistake."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from negbench.cli import main


def test_help_explains_every_option(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for opt in (
        "--model",
        "--tasks",
        "--modes",
        "--shots",
        "--seeds",
        "--limit",
        "--chat",
        "--adapter",
        "--cache",
        "--no-cache",
        "--batch-size",
        "--no-prefix-sharing",
        "--output",
    ):
        assert opt in out


def test_tasks_and_models_listings(capsys):
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    assert "negation-mini" in out and "truefalse-mini" in out and "next_token" in out
    assert main(["models"]) == 0
    assert "smollm2-135m-instruct" in capsys.readouterr().out


def test_unknown_task(capsys):
    assert main(["run", "--tasks", "nubench-typo", "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "unknown task 'nubench-typo'" in err and "negation-mini" in err


def test_unknown_mode(capsys):
    assert main(["run", "--modes", "banana", "--no-cache"]) == 2
    assert "has no mode 'banana'" in capsys.readouterr().err


def test_missing_model_file(tmp_path, capsys):
    assert (
        main(
            [
                "run",
                "--model",
                str(tmp_path / "nope.gguf"),
                "--output",
                str(tmp_path / "o"),
                "--no-cache",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "GGUF file not found" in err and "nope.gguf" in err


def test_missing_model_folder(tmp_path, capsys):
    assert (
        main(
            [
                "run",
                "--model",
                str(tmp_path / "absent"),
                "--output",
                str(tmp_path / "o"),
                "--no-cache",
            ]
        )
        == 2
    )
    assert "model folder not found" in capsys.readouterr().err


def test_malformed_record_names_file_line_field(tmp_path, tiny_llama, capsys):
    task = tmp_path / "bad.jsonl"
    task.write_text(
        json.dumps({"question": "q?", "choices": ["a", "b"], "answer": 0})
        + "\n"
        + json.dumps({"question": "q2?", "choices": ["a", "b"]})
        + "\n"
    )
    assert (
        main(
            [
                "run",
                "--model",
                tiny_llama,
                "--tasks",
                str(task),
                "--output",
                str(tmp_path / "o"),
                "--no-cache",
                "--quiet",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "missing field" in err and "bad.jsonl" in err and "line 2" in err and "'answer'" in err


def test_unwritable_output(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["run", "--output", str(blocker / "sub"), "--no-cache"]) == 2
    err = capsys.readouterr().err
    assert "output folder is not writable" in err and "--output" in err


def test_real_exit_code_and_no_traceback(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "negbench.cli", "run", "--tasks", "nope"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr and "unknown task" in r.stderr


def test_small_run_writes_results_and_show(tmp_path, tiny_llama, capsys):
    out = tmp_path / "run"
    assert (
        main(
            [
                "run",
                "--model",
                tiny_llama,
                "--tasks",
                "negation-mini,truefalse-mini",
                "--modes",
                "cloze,negation-mini:letter+generate,truefalse-mini:next_token",
                "--shots",
                "0,1",
                "--seeds",
                "3",
                "--limit",
                "6",
                "--output",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "negation-mini" in text and "results.json" in text
    res = json.loads((out / "results.json").read_text())
    assert set(res["units"]) == {
        "negation-mini.cloze.0shot",
        "negation-mini.cloze.1shot.seed3",
        "negation-mini.letter.0shot",
        "negation-mini.letter.1shot.seed3",
        "negation-mini.generate.0shot",
        "negation-mini.generate.1shot.seed3",
        "truefalse-mini.cloze.0shot",
        "truefalse-mini.cloze.1shot.seed3",
        "truefalse-mini.next_token.0shot",
        "truefalse-mini.next_token.1shot.seed3",
    }
    assert res["provenance"]["packages"]["transformers"] and "git" in res["provenance"]
    assert res["datasets"]["negation-mini"]["test"]["n"] == 40
    assert len(res["datasets"]["negation-mini"]["test"]["sha256"]) == 64
    samples = [
        json.loads(l) for l in (out / "samples" / "negation-mini.cloze.1shot.seed3.jsonl").open()
    ]
    assert len(samples) == 6 and all(len(s["fewshot_ids"]) == 1 for s in samples)
    # metrics are recomputable from the records alone
    acc = sum(s["acc"] for s in samples) / len(samples)
    assert res["units"]["negation-mini.cloze.1shot.seed3"]["metrics"]["acc"] == acc
    assert main(["show", str(out)]) == 0
    assert "truefalse-mini" in capsys.readouterr().out
    # error analysis is saved with the run, as a table file and in results.json
    ea = res["units"]["negation-mini.cloze.0shot"]["metrics"]["error_analysis"]
    cloze = [json.loads(l) for l in (out / "samples" / "negation-mini.cloze.0shot.jsonl").open()]
    assert ea["n"] == 6 and ea["n_wrong"] == sum(1 for s in cloze if s["acc"] == 0.0)
    tables = (out / "tables.md").read_text()
    assert "## negation-mini.cloze" in tables and "local negation (%)" in tables


def test_rescore_recomputes_from_samples(tmp_path, tiny_llama, capsys):
    out = tmp_path / "run"
    assert (
        main(
            [
                "run",
                "--model",
                tiny_llama,
                "--tasks",
                "negation-mini",
                "--modes",
                "cloze",
                "--limit",
                "5",
                "--output",
                str(out),
                "--quiet",
                "--no-cache",
            ]
        )
        == 0
    )
    res = json.loads((out / "results.json").read_text())
    before = res["units"]["negation-mini.cloze.0shot"]["metrics"]
    res["units"]["negation-mini.cloze.0shot"]["metrics"] = {"n": 5}  # as if saved by an old version
    (out / "results.json").write_text(json.dumps(res))
    (out / "tables.md").unlink()
    assert main(["rescore", str(out)]) == 0
    after = json.loads((out / "results.json").read_text())
    assert after["units"]["negation-mini.cloze.0shot"]["metrics"] == before
    assert after["rescored"]["negbench"] and (out / "tables.md").is_file()
    assert main(["rescore", str(tmp_path / "nothing")]) == 2
    assert "run folder not found" in capsys.readouterr().err


def test_protocol_expands_the_papers_shots_and_seeds():
    from dataclasses import replace
    from negbench.evaluation.runner import RunConfig, plan_units
    from negbench.tasks import get_task, register

    register(
        replace(
            get_task("negation-mini"),
            name="nm-protocol",
            protocol_shots=(0, 1, 5),
            protocol_seeds=(42, 7),
        )
    )
    names = [
        u.name for u in plan_units(RunConfig("m", ["nm-protocol"], modes=["cloze"], protocol=True))
    ]
    assert names == [
        "nm-protocol.cloze.0shot",
        "nm-protocol.cloze.1shot.seed42",
        "nm-protocol.cloze.1shot.seed7",
        "nm-protocol.cloze.5shot.seed42",
        "nm-protocol.cloze.5shot.seed7",
    ]
    # explicit --shots wins over the protocol; without --protocol the defaults apply
    assert [
        u.shots
        for u in plan_units(
            RunConfig("m", ["nm-protocol"], modes=["cloze"], shots=[1], seeds=[3], protocol=True)
        )
    ] == [1]
    assert [u.name for u in plan_units(RunConfig("m", ["nm-protocol"], modes=["cloze"]))] == [
        "nm-protocol.cloze.0shot"
    ]


def test_export_lists_and_rejects_unknown(capsys):
    assert main(["export"]) == 0
    assert main(["export", "nope"]) == 2
    assert "unknown export 'nope'" in capsys.readouterr().err
