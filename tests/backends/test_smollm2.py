"""Engine correctness on the real embedded model (SmolLM2-135M-Instruct, fp32)."""

from __future__ import annotations

import random

import pytest

from conftest import naive_scores
from negbench.core.engine import Engine, EngineConfig
from negbench.core.requests import LoglikelihoodRequest, LoglikelihoodResponse

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def smollm2():
    import os

    os.environ.pop("NEGBENCH_CACHE", None)  # reuse the converted model between runs
    from negbench.backends.hf import HFBackend

    return HFBackend("smollm2-135m-instruct", dtype="float32", device="cpu")


def test_engine_equals_naive_on_smollm2(smollm2):
    rng = random.Random(7)
    words = (
        "the not never no cat river museum sentence negation true false was did open "
        "visitors last year quickly"
    ).split()
    shots = "Negate the sentence.\nSentence: The door is open.\nNegation: The door is not open.\n\n"
    reqs = []
    for i in range(16):
        ctx = (
            (shots if i % 2 else "")
            + "Sentence: "
            + " ".join(rng.choice(words) for _ in range(rng.randint(3, 25)))
            + "\nNegation:"
        )
        for _ in range(4):
            reqs.append(
                LoglikelihoodRequest(
                    ctx, " " + " ".join(rng.choice(words) for _ in range(rng.randint(1, 8)))
                )
            )
    ref = naive_scores(smollm2, reqs)
    worst = 0.0
    for share in (True, False):
        for bs in (1, 7, 32):
            out = Engine(
                smollm2,
                config=EngineConfig(
                    batch_size=bs,
                    share_prefix=share,
                    max_row_tokens=2048 if bs != 7 else 40,
                    progress=False,
                ),
            ).run(reqs)
            for o, r in zip(out, ref):
                assert isinstance(o, LoglikelihoodResponse)
                worst = max(worst, abs(o.logprob - r[0]))
                assert o.is_greedy == r[1]
    assert worst < 1e-4, worst


def test_main_job_on_embedded_default(tmp_path):
    """README command (a): the embedded default model on the built-in task, table + file paths."""
    import json
    import subprocess
    import sys
    import os

    out = tmp_path / "run"
    env = {
        k: v for k, v in os.environ.items() if k != "NEGBENCH_CACHE"
    }  # reuse the converted model
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "negbench.cli",
            "run",
            "--output",
            str(out),
            "--quiet",
            "--no-cache",
        ],
        capture_output=True,
        text=True,
        timeout=1200,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert "negation-mini" in r.stdout and "acc" in r.stdout and "results.json" in r.stdout
    res = json.loads((out / "results.json").read_text())
    acc = res["groups"]["negation-mini.cloze.0shot"]["metrics"]["acc"]["mean"]
    assert 0.25 < acc <= 1.0  # well above chance for a real model on cloze
    assert res["model"]["details"]["weights"].startswith("gguf:")
