"""Runs spread over a real local Ray cluster (2 workers, tiny random Llama): samples byte-identical
to a one-process run, also when a worker is SIGKILLed mid-run; clear errors for --ray mistakes."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

from negbench.cli import main
from negbench.core.engine import _lcp, _Scored, cut_groups
from locations import TEST_DATA

GROUP_TOKENS = "400"  # negation-mini (≈6,400 tokens) → a few dozen groups


def _run(tiny_llama, tmp_path: Path, name: str, *extra: str) -> Path:
    out = tmp_path / name
    argv = [
        "run",
        "--model",
        tiny_llama,
        "--tasks",
        "negation-mini",
        "--dtype",
        "float32",
        "--device",
        "cpu",
        "--threads",
        "1",
        "--group-tokens",
        GROUP_TOKENS,
        "--quiet",
        "--output",
        str(out),
        "--cache",
        str(tmp_path / f"{name}.sqlite"),
        *extra,
    ]
    assert main(argv) == 0
    return out


def _samples(run: Path) -> dict[str, bytes]:
    files = sorted((run / "samples").glob("*.jsonl"))
    assert files
    return {f.name: f.read_bytes() for f in files}


def _engine(run: Path) -> dict:
    return json.loads((run / "results.json").read_text())["engine"]


def _cached(run_cache: Path) -> int:
    with sqlite3.connect(run_cache) as db:
        return db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]


# -- grouping (no Ray) --------------------------------------------------------------------------------
def test_groups_are_deterministic_bounded_and_cut_at_short_prefixes():
    import random

    rng = random.Random(0)
    blocks = [[rng.randrange(50) for _ in range(rng.randint(5, 40))] for _ in range(12)]
    items = sorted(
        (
            _Scored(str(i), None, b + [rng.randrange(50) for _ in range(rng.randint(1, 9))])
            for i, b in enumerate(blocks * 5)
        ),
        key=lambda s: s.inputs,
    )
    target = 300
    groups = cut_groups(items, target)
    assert [s for g in groups for s in g] == items  # order kept, nothing lost
    assert [[s.key for s in g] for g in groups] == [
        [s.key for s in g] for g in cut_groups(list(items), target)
    ]  # deterministic
    for g in groups[:-1]:
        size = sum(len(s.inputs) for s in g)
        assert target / 2 <= size <= target
    start = 0
    for g in groups[:-1]:  # each cut is at the shortest common prefix available
        end = start + len(g)
        acc, window = 0, []
        for j in range(start + 1, len(items)):
            acc += len(items[j - 1].inputs)
            if acc > target:
                break
            if acc * 2 >= target:
                window.append(_lcp(items[j - 1].inputs, items[j].inputs))
        assert _lcp(items[end - 1].inputs, items[end].inputs) == min(window)
        start = end


# -- user errors (no cluster needed) -------------------------------------------------------------------
def test_ray_not_installed_names_the_extra(tiny_llama, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as when not installed
    assert (
        main(
            [
                "run",
                "--model",
                tiny_llama,
                "--ray",
                "local",
                "--no-cache",
                "--output",
                str(tmp_path / "r"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "pip install 'negbench[ray]'" in err and "--ray" in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()


def test_bad_ray_addresses(tiny_llama, tmp_path, capsys):
    pytest.importorskip("ray")
    assert (
        main(
            [
                "run",
                "--model",
                tiny_llama,
                "--ray",
                "127.0.0.1:1",
                "--no-cache",
                "--output",
                str(tmp_path / "r"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "no Ray cluster answers at 127.0.0.1:1" in err and "where: --ray" in err
    assert "loading" not in err  # refused before the model loads
    assert main(["run", "--model", tiny_llama, "--ray", "my-cluster", "--no-cache"]) == 2
    assert "is not auto, local[:N] or HOST:PORT" in capsys.readouterr().err
    assert main(["run", "--model", tiny_llama, "--ray-workers", "2", "--no-cache"]) == 2
    assert "--ray-workers given without --ray" in capsys.readouterr().err
    assert main(["run", "--ray", "local:2", "--ray-workers", "3", "--no-cache"]) == 2
    assert "disagree" in capsys.readouterr().err


# -- a real local cluster ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cluster():
    """One local 2-CPU cluster for the module (≈10 s to start); runs join it (`--ray local:2`
    uses the connection this process holds)."""
    ray = pytest.importorskip("ray")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        logging_level="ERROR",
    )
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def reference(tiny_llama, tmp_path_factory):
    """The one-process run with the same groups and threads."""
    tmp = tmp_path_factory.mktemp("ref")
    out = _run(tiny_llama, tmp, "one-process")
    return out, tmp / "one-process.sqlite"


@pytest.mark.slow  # ≈25 s; the killed-worker test below checks identity too
def test_cluster_run_is_byte_identical(cluster, reference, tiny_llama, tmp_path, capsys):
    ref, ref_cache = reference
    run = _run(tiny_llama, tmp_path, "ray", "--ray", "local:2")
    assert _samples(run) == _samples(ref)
    e, r = _engine(run), _engine(ref)
    for k in (
        "requests",
        "unique",
        "computed",
        "model_calls",
        "forwarded_tokens",
        "padded_tokens",
        "unique_tokens",
        "naive_tokens",
        "scored_positions",
    ):
        assert e[k] == r[k], k  # the same rows and batches, once each
    assert e["retries"] == 0
    assert _cached(tmp_path / "ray.sqlite") == _cached(ref_cache) == e["unique"]
    out = capsys.readouterr().out
    assert "on 2 worker(s), 0 retried" in out


def test_killed_worker_is_retried_and_nothing_changes(
    cluster, reference, tiny_llama, tmp_path, capsys, monkeypatch
):
    ref, _ = reference
    monkeypatch.setenv("NEGBENCH_RAY_KILL", "after=2,seed=0")
    run = _run(tiny_llama, tmp_path, "killed", "--ray", "local:2")
    assert _samples(run) == _samples(ref)
    e, r = _engine(run), _engine(ref)
    assert e["retries"] == 1
    for k in ("computed", "model_calls", "forwarded_tokens", "scored_positions"):
        assert e[k] == r[k], k  # the lost attempt is not counted
    assert _cached(tmp_path / "killed.sqlite") == e["unique"]
    out = capsys.readouterr().out
    assert "1 retried" in out
    lines = out[out.index("group  worker") :].splitlines()[1:]
    rows = [ln.split(None, 3) for ln in lines if ln[:5].strip().isdigit()]
    assert len(rows) == 1 and rows[0][3].startswith("ActorDiedError")  # group, worker, attempt
    group, worker, attempt = (int(x) for x in rows[0][:3])
    assert worker in (0, 1) and attempt == 1 and group >= 0


@pytest.mark.slow  # two 2×2 experiments with tiny LoRA trainings (minutes)
def test_experiment_cells_on_the_cluster_match_one_process(
    cluster, tiny_llama, tmp_path, monkeypatch, capsys
):
    pytest.importorskip("peft")
    data = TEST_DATA / "notadataset" / "raw"
    monkeypatch.setenv("NEGBENCH_NOTADATASET", str(data))
    args = [
        "--patterns",
        "2,Part",
        "--max-steps",
        "2",
        "--sample",
        "5",
        "--eval-sample",
        "5",
        "--set",
        "per_device_train_batch_size=4",
        "--set",
        "logging_steps=1",
        "--set",
        "warmup_ratio=0",
        "--quiet",
        "--threads",
        "1",
        "--model",
        tiny_llama,
    ]
    mats = {}
    for name, extra in (("one", []), ("ray", ["--ray", "local:2"])):
        out = tmp_path / name
        monkeypatch.setenv("NEGBENCH_CACHE", str(tmp_path / f"cache-{name}"))
        assert (
            main(["experiment", "notadataset-generalisation", "--out", str(out), *args, *extra])
            == 0
        )
        mats[name] = json.loads((out / "matrix.json").read_text())
    one, ray_m = mats["one"], mats["ray"]
    assert ray_m["complete"] and ray_m["cluster"]["workers"] == 2
    cells = lambda m: [[c["acc"] for c in r["cells"]] for r in [m["base"], *m["rows"]]]
    assert cells(ray_m) == cells(one)
    assert [r["train_loss"] for r in ray_m["rows"]] == [r["train_loss"] for r in one["rows"]]
    assert ray_m["stats"]["trained"] == 2 and ray_m["stats"]["evaluated"] == 6
    assert "ray: 4 jobs" in capsys.readouterr().err
