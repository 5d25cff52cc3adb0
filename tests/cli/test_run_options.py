"""negbench run's choices said out loud: default run folders named by what differs, task/mode
pairs that do not exist are errors in every form, "did you mean" for names, --sample / --seed,
and negbench tasks telling where each benchmark's data is."""

from __future__ import annotations

import json

import pytest

from negbench.cli import main
from negbench.evaluation.session import run_folder_name


def test_folder_names_differ_by_what_differs():
    base = run_folder_name("smollm2-135m-instruct", ["negation-mini"])
    assert base == "smollm2-135m-instruct__negation-mini"  # the README's default
    variants = [
        dict(modes=["cloze"]),
        dict(shots=[0, 5]),
        dict(shots=[0, 5], seeds=[1, 2]),
        dict(limit=12),
        dict(sample=12),
        dict(sample=12, sample_seed=3),
        dict(protocol=True),
        dict(adapter="./out/lora/"),
        dict(chat=True),
        dict(other={"dtype": "bfloat16"}),
        dict(other={"system_prompt": "Be brief."}),
        dict(modes=["cloze"], limit=12),
    ]
    names = [run_folder_name("smollm2-135m-instruct", ["negation-mini"], **v) for v in variants]
    assert len(set(names + [base])) == len(names) + 1  # no two collide
    assert names[3] == base + "__limit-12" and names[5] == base + "__sample-12-seed-3"
    assert names[7] == base + "__adapter-lora" and names[1] == base + "__shots-0+5"
    long = run_folder_name("m", [f"task-{i}" for i in range(40)], shots=list(range(30)))
    assert len(long) <= 120 and long.startswith("m__task-0+task-1")
    assert long != run_folder_name("m", [f"task-{i}" for i in range(40)], shots=list(range(31)))


def test_default_folder_refuses_a_different_run_of_the_same_name(
    tiny_llama, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    common = ["run", "--model", tiny_llama, "--tasks", "negation-mini", "--quiet", "--no-cache"]
    assert main(common + ["--limit", "3"]) == 0
    assert main(common + ["--limit", "4"]) == 0  # another folder, no refusal
    runs = sorted(p.name for p in (tmp_path / "runs").iterdir())
    assert len(runs) == 2 and all(r.endswith(("__limit-3", "__limit-4")) for r in runs)
    folder = tmp_path / "runs" / runs[0]
    assert main(common + ["--limit", "3", "--modes", "cloze", "--output", str(folder)]) == 2
    assert "--overwrite" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv,words",
    [
        (
            ["--tasks", "negation-mini,truefalse-mini", "--modes", "letter"],
            [
                "'truefalse-mini' has no mode 'letter'",
                "negation-mini:letter,truefalse-mini:next_token",
            ],
        ),
        (
            ["--tasks", "negation-mini,truefalse-mini", "--modes", "cloze,next_token"],
            ["'negation-mini' has no mode 'next_token'"],
        ),
        (
            ["--tasks", "negation-mini", "--modes", "letters"],
            ["task 'negation-mini' has no mode 'letters' (did you mean 'letter'?)"],
        ),
        (
            [
                "--tasks",
                "negation-mini,truefalse-mini",
                "--modes",
                "negation-mini:cloze,truefalse:cloze",
            ],
            [
                "--modes names task 'truefalse', which is not in --tasks",
                "did you mean 'truefalse-mini'",
            ],
        ),
        (
            ["--tasks", "negaton-mini"],
            ["unknown task 'negaton-mini' (did you mean 'negation-mini'?)"],
        ),
        (
            ["--tasks", "scone-nil[split=one_scoped]"],
            ["unknown task 'scone-nil' (did you mean 'scone-nli'"],
        ),
        (
            ["--model", "smollm2-135m-instrct"],
            ["unknown model 'smollm2-135m-instrct' (did you mean 'smollm2-135m-instruct'"],
        ),
        (["--seed", "3"], ["(--seed) is the seed of --sample's draw, but --sample is not given"]),
        (["--sample-seed", "3"], ["--sample-seed (--seed) is the seed of --sample's draw"]),
        (["--limit", "3", "--sample", "4"], ["--limit and --sample both choose a subset"]),
    ],
)
def test_mistakes_are_errors_with_suggestions(argv, words, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["run", *argv, "--quiet"]) == 2
    err = capsys.readouterr().err
    for w in words:
        assert w in err, err
    assert "Traceback" not in err and not (tmp_path / "runs").exists()


def test_per_task_modes_run_only_the_pairs_asked(tiny_llama, tmp_path):
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
                "cloze,negation-mini:letter,truefalse-mini:next_token",
                "--limit",
                "2",
                "--output",
                str(out),
                "--quiet",
                "--no-cache",
            ]
        )
        == 0
    )
    units = json.loads((out / "results.json").read_text())["units"]
    assert set(units) == {
        "negation-mini.cloze.0shot",
        "negation-mini.letter.0shot",
        "truefalse-mini.cloze.0shot",
        "truefalse-mini.next_token.0shot",
    }


def test_sample_and_seed_reach_the_run(tiny_llama, tmp_path):
    out = tmp_path / "run"
    assert (
        main(
            [
                "run",
                "--model",
                tiny_llama,
                "--tasks",
                "truefalse-mini",
                "--sample",
                "6",
                "--seed",
                "4",
                "--output",
                str(out),
                "--quiet",
                "--no-cache",
            ]
        )
        == 0
    )
    res = json.loads((out / "results.json").read_text())
    sub = res["units"]["truefalse-mini.next_token.0shot"]["subset"]
    assert (sub["how"], sub["n"], sub["seed"], sub["full"]) == ("sample", 6, 4, 56)
    assert res["config"]["sample"] == 6 and res["config"]["sample_seed"] == 4
    ids = [
        json.loads(x)["doc_id"]
        for x in (out / "samples" / "truefalse-mini.next_token.0shot.jsonl")
        .read_text()
        .splitlines()
    ]
    assert len(ids) == 6 and ids != [f"tf-{i}" for i in range(6)]


def test_tasks_lists_where_each_benchmark_is_looked_for(tmp_path, monkeypatch, capsys):
    for var in ("NEGBENCH_SCONE", "NEGBENCH_CONDAQA", "NEGBENCH_DATA"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scone").mkdir()
    monkeypatch.setenv("NEGBENCH_SCONE", str(tmp_path / "scone"))
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    scone = lines[lines.index(next(x for x in lines if x.startswith("scone-nli:"))) + 1]
    assert scone.strip() == f"data: found — {tmp_path / 'scone'} ($NEGBENCH_SCONE)"
    cq = lines[lines.index(next(x for x in lines if x.startswith("condaqa:"))) + 1]
    assert cq.strip().startswith(
        "data: NOT FOUND — looked in $NEGBENCH_CONDAQA (unset); "
        "$NEGBENCH_DATA (unset), the local data folder "
    )
    assert "hf:lasha-nlp/CONDAQA (the hub is not reachable and the local cache lacks it)" in cq
    nm = lines[lines.index(next(x for x in lines if x.startswith("negation-mini:"))) + 1]
    assert nm.strip() == "data: built in" and "data source(s) not found here" in out


def test_rescore_gives_an_old_run_its_subset_headline_and_warnings(tiny_llama, tmp_path):
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
    u = res["units"]["negation-mini.cloze.0shot"]
    del u["subset"], u["headline"]  # as an older negbench saved it
    res["warnings"] = ["negation-mini.cloze.0shot: an old plain-text warning"]
    (out / "results.json").write_text(json.dumps(res))
    assert main(["rescore", str(out)]) == 0
    again = json.loads((out / "results.json").read_text())
    u = again["units"]["negation-mini.cloze.0shot"]
    assert (u["subset"]["how"], u["subset"]["n"], u["subset"]["full"]) == ("limit", 5, 40)
    assert "the first 5 of 40 records" in u["subset"]["rule"]
    assert u["headline"]["metric"] == "acc" and u["headline"]["n"] == 5
    assert all(isinstance(w, dict) for w in again["warnings"])
