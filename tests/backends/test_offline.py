"""Without the Hugging Face hub (issue 27): a hub id fails at once with one clear error — no
minute of retries, no traceback — through ``negbench run``, ``train`` and ``lm-eval``; a hub id
whose files are in the local cache still loads, with ``HF_HUB_OFFLINE`` set or not; lm-eval's
own errors for a user's mistakes are one line; the example lm-eval task YAML runs on local data.

Every command runs in a subprocess with its own Hugging Face cache (``HF_HOME``) and the hub's
address pointed at a port where nothing listens (``HF_ENDPOINT``), so the tests behave the same
on a machine with network.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from locations import ROOT

DOWN = "http://127.0.0.1:9"  # the discard port: connection refused at once
MEM = [
    {
        "instruction": "Negate the sentence.",
        "input": f"Sentence: The cat is on mat {i}.",
        "output": f"The cat is not on mat {i}.",
    }
    for i in range(4)
]


def negbench(
    *args: str, home: Path, offline: bool = False, cwd: Path | None = None, timeout: int = 600
) -> tuple[subprocess.CompletedProcess, float]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
    }
    env.update(HF_HOME=str(home / "hf"), HF_ENDPOINT=DOWN, NEGBENCH_CACHE=str(home / "nb"))
    if offline:
        env["HF_HUB_OFFLINE"] = "1"
    t0 = time.perf_counter()
    r = subprocess.run(
        [sys.executable, "-m", "negbench", *args],
        capture_output=True,
        text=True,
        cwd=cwd or home,
        env=env,
        timeout=timeout,
    )
    return r, time.perf_counter() - t0


def cache_model(home: Path, repo_id: str, folder: str) -> None:
    """Put ``folder``'s files in ``home``'s hub cache as the snapshot of ``repo_id`` at main, the
    layout huggingface_hub writes when it downloads a model."""
    repo = home / "hf" / "hub" / ("models--" + repo_id.replace("/", "--"))
    commit = "0123456789abcdef0123456789abcdef01234567"
    shutil.copytree(folder, repo / "snapshots" / commit)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)


def one_clear_error(r: subprocess.CompletedProcess, *words: str) -> None:
    err = r.stderr
    assert r.returncode == 2, err
    assert "Traceback" not in err and "Retrying" not in err and "thrown while requesting" not in err
    assert err.count("error:") == 1, err
    for w in words:
        assert w in err, err


# -- negbench run -----------------------------------------------------------------------------------
def test_run_with_an_uncached_hub_id_fails_at_once(tmp_path):
    r, took = negbench(
        "run",
        "--model",
        "negbench-test/absent",
        "--tasks",
        "negation-mini",
        "--output",
        "out",
        home=tmp_path,
    )
    one_clear_error(
        r,
        "negbench-test/absent",
        "not in the local Hugging Face cache",
        "127.0.0.1:9",
        "hf download",
    )
    assert took < 30, took  # ~1 s; retries took ~70 s
    assert not (tmp_path / "out").exists()


def test_run_with_hf_hub_offline_and_an_uncached_id(tmp_path):
    r, _ = negbench(
        "run",
        "--model",
        "negbench-test/absent",
        "--tasks",
        "negation-mini",
        home=tmp_path,
        offline=True,
    )
    one_clear_error(r, "HF_HUB_OFFLINE is set")


@pytest.mark.parametrize("offline", [False, True])
def test_a_cached_hub_model_loads_without_the_hub(tmp_path, tiny_llama, offline):
    cache_model(tmp_path, "negbench-test/tiny-llama", tiny_llama)
    r, _ = negbench(
        "run",
        "--model",
        "negbench-test/tiny-llama",
        "--tasks",
        "negation-mini",
        "--modes",
        "cloze",
        "--limit",
        "3",
        "--output",
        "out",
        "--quiet",
        home=tmp_path,
        offline=offline,
    )
    assert r.returncode == 0, r.stderr
    assert "Retrying" not in r.stderr
    assert ("cached copy of negbench-test/tiny-llama" in r.stderr) is not offline
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    assert res["model"]["spec"] == "negbench-test/tiny-llama"
    assert res["model"]["details"]["weights"].startswith("hub:negbench-test/tiny-llama@0123456789")
    assert res["units"]["negation-mini.cloze.0shot"]["metrics"]["n"] == 3


def test_a_hub_data_set_fails_at_once(tmp_path, tiny_llama):
    pytest.importorskip("datasets")  # without it the error says to install it (tested elsewhere)
    r, took = negbench(
        "run",
        "--model",  # a local model: the data set alone is at stake
        tiny_llama,
        "--tasks",
        "notadataset[source=hf:negbench-test/absent-data]",
        "--output",
        "out",
        home=tmp_path,
    )
    one_clear_error(r, "negbench-test/absent-data", "hub is not available", "raw release zip")
    assert took < 30, took


# -- negbench train ---------------------------------------------------------------------------------
def test_train_with_an_uncached_hub_id_fails_at_once(tmp_path):
    data = tmp_path / "mem.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in MEM))
    r, took = negbench(
        "train",
        "--recipe",
        "nubench-simple",
        "--model",
        "negbench-test/absent",
        "--data",
        str(data),
        "--no-eval",
        "--max-steps",
        "1",
        "--out",
        "out",
        home=tmp_path,
    )
    one_clear_error(r, "negbench-test/absent", "not in the local Hugging Face cache")
    assert took < 30, took


# -- negbench lm-eval -------------------------------------------------------------------------------
LM_EVAL_CASES = {
    # what the user typed after `negbench lm-eval --`, and words the one error must hold
    "negbench model, uncached hub id": (
        [
            "--model",
            "negbench",
            "--model_args",
            "model=negbench-test/absent",
            "--tasks",
            "negation_mini_cloze",
            "--include_path",
            "examples/lm_eval",
            "--device",
            "cpu",
        ],
        ["negbench-test/absent", "not in the local Hugging Face cache"],
    ),
    "hf model, uncached hub id": (
        [
            "--model",
            "hf",
            "--model_args",
            "pretrained=negbench-test/absent",
            "--tasks",
            "negation_mini_cloze",
            "--include_path",
            "examples/lm_eval",
            "--device",
            "cpu",
        ],
        ["lm-eval could not load a model or data set", "hub is not available"],
    ),
    "task data on the hub, not cached": (
        [
            "--model",
            "negbench",
            "--model_args",
            "model={tiny}",
            "--tasks",
            "arc_easy",
            "--device",
            "cpu",
            "--limit",
            "2",
        ],
        ["allenai/ai2_arc", "hub is not available"],
    ),
    "unknown task": (
        [
            "--model",
            "negbench",
            "--model_args",
            "model={tiny}",
            "--tasks",
            "no_such_task",
            "--device",
            "cpu",
        ],
        ["Tasks not found: no_such_task", "lm-eval ls tasks"],
    ),
    "unknown lm-eval model": (
        [
            "--model",
            "no_such_model",
            "--tasks",
            "negation_mini_cloze",
            "--include_path",
            "examples/lm_eval",
        ],
        ["no model for this name found", "--model"],
    ),
}


@pytest.mark.slow  # each lm-eval command line indexes its thousands of task YAMLs (5-40 s)
@pytest.mark.parametrize("case", list(LM_EVAL_CASES))
def test_lm_eval_errors_are_one_line(case, tmp_path, tiny_llama):
    pytest.importorskip("lm_eval")
    args, words = LM_EVAL_CASES[case]
    args = [a.format(tiny=tiny_llama) for a in args]
    r, took = negbench("lm-eval", "--", *args, home=tmp_path, cwd=ROOT)
    one_clear_error(r, *words)
    assert took < 120, took


@pytest.mark.slow
def test_the_example_lm_eval_task_runs_offline(tmp_path, tiny_llama):
    """examples/lm_eval/negation_mini.yaml through `negbench lm-eval`, without the hub: its 48
    items answered as negbench's own negation-mini cloze mode answers them (same prompts, same
    options, same log-likelihood argmax)."""
    pytest.importorskip("lm_eval")
    out = tmp_path / "lm"
    r, _ = negbench(
        "lm-eval",
        "--",
        "--model",
        "negbench",
        "--model_args",
        f"model={tiny_llama},dtype=float32",
        "--tasks",
        "negation_mini_cloze",
        "--include_path",
        "examples/lm_eval",
        "--device",
        "cpu",
        "--output_path",
        str(out),
        "--log_samples",
        home=tmp_path,
        offline=True,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr
    (res,) = out.rglob("results_*.json")
    acc = json.loads(res.read_text())["results"]["negation_mini_cloze"]["acc,none"]
    (samples,) = out.rglob("samples_negation_mini_cloze_*.jsonl")
    lm = {
        json.loads(line)["doc"]["id"]: json.loads(line)["acc"]
        for line in samples.read_text().splitlines()
    }
    assert len(lm) == 48 and acc == pytest.approx(sum(lm.values()) / 48)
    # negbench's own task (its 40 test items) gives the same answer on each of them
    r, _ = negbench(
        "run",
        "--model",
        tiny_llama,
        "--tasks",
        "negation-mini",
        "--modes",
        "cloze",
        "--output",
        str(tmp_path / "nb-run"),
        "--quiet",
        home=tmp_path,
        offline=True,
    )
    assert r.returncode == 0, r.stderr
    nb = [
        json.loads(line)
        for line in (tmp_path / "nb-run" / "samples" / "negation-mini.cloze.0shot.jsonl")
        .read_text()
        .splitlines()
    ]
    assert len(nb) == 40 and all(lm[s["doc_id"]] == s["acc"] for s in nb)
