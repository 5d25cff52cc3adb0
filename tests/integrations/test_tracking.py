"""Experiment trackers (issue 27): ``negbench run --report-to`` logs a finished run — every
metric as a scalar, the table of metrics, the configuration — and ``negbench train
--report-to`` hands the Trainer its trackers; what each tracker stored is read back with its own
reader and compared with results.json / negbench_train.json.

TensorBoard writes event files (read with TensorBoard's EventAccumulator), W&B runs offline
(``WANDB_MODE=offline``: the run's record log is read with W&B's own protobuf messages), MLflow
uses a file store (``file:`` tracking URI, read with ``MlflowClient``).  A tracker that cannot
work here (not installed, no login, a store the client cannot open) stops the command before
the model loads, with one clear error.
"""

from __future__ import annotations

import json
import math
import struct
import time
from pathlib import Path

import pytest

from negbench.cli import main
from negbench.evaluation.tracking import metric_rows, scalars

RUN = [
    "--tasks",
    "negation-mini,truefalse-mini",
    "--modes",
    "negation-mini:cloze,truefalse-mini:next_token",
    "--limit",
    "4",
    "--quiet",
]
MEM = [
    {
        "instruction": "Negate the sentence.",
        "input": f"Sentence: The cat is on mat {i}.",
        "output": f"The cat is not on mat {i}.",
    }
    for i in range(8)
]
FAST = [
    "--set",
    "learning_rate=1e-2",
    "--set",
    "gradient_accumulation_steps=1",
    "--set",
    "per_device_train_batch_size=4",
    "--set",
    "logging_steps=1",
    "--set",
    "warmup_ratio=0",
    "--max-steps",
    "3",
    "--no-eval",
    "--device",
    "cpu",
    "--threads",
    "1",
    "--quiet",
]


@pytest.fixture
def trackers_here(tmp_path, monkeypatch):
    """Each tracker writes under tmp_path: W&B offline, MLflow's file store."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    for k in (
        "TENSORBOARD_LOGGING_DIR",
        "WANDB_PROJECT",
        "MLFLOW_EXPERIMENT_NAME",
        "MLFLOW_EXPERIMENT_ID",
        "WANDB_API_KEY",
    ):
        monkeypatch.delenv(k, raising=False)
    yield tmp_path
    import sys

    if "wandb" in sys.modules:  # W&B keeps its first settings (WANDB_DIR) per process
        sys.modules["wandb"].teardown()


def run_logged(tmp_path: Path, model: str, targets: str) -> dict:
    assert (
        main(
            [
                "run",
                "--model",
                model,
                *RUN,
                "--output",
                str(tmp_path / "run"),
                "--report-to",
                targets,
            ]
        )
        == 0
    )
    return json.loads((tmp_path / "run" / "results.json").read_text())


# -- readers -----------------------------------------------------------------------------------------
def tensorboard_scalars(logdir: Path) -> tuple[dict[str, list[tuple[int, float]]], dict[str, str]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    sc = {t: [(e.step, e.value) for e in acc.Scalars(t)] for t in acc.Tags()["scalars"]}
    texts = {}
    for tag in acc.Tags()["tensors"]:  # add_text is stored as a string tensor
        ev = acc.Tensors(tag)[-1]
        texts[tag] = ev.tensor_proto.string_val[0].decode()
    return sc, texts


def wandb_records(run_dir: Path, wait: float = 20.0) -> list:
    """The records of an offline W&B run, once its last record (``exit``) is written (W&B's
    service may still be writing when ``finish()`` has returned)."""
    t0 = time.time()
    while True:
        recs = _wandb_log(run_dir)
        if any(r.WhichOneof("record_type") == "exit" for r in recs) or time.time() - t0 > wait:
            return recs
        time.sleep(0.2)


def _wandb_log(run_dir: Path) -> list:
    """The records of ``run-<id>.wandb``: W&B's 7-byte header, then the LevelDB log format
    (32 KiB blocks; each chunk: CRC32, length, type full/first/middle/last), each record one
    ``wandb_internal_pb2.Record``."""
    from wandb.proto import wandb_internal_pb2 as pb

    paths = list(run_dir.glob("run-*.wandb"))
    if not paths:
        return []
    data, pos, block, out, buf = paths[0].read_bytes(), 7, 32768, [], b""
    assert data[:4] == b":W&B" or not data
    while pos + 7 <= len(data):
        if block - pos % block < 7:
            pos += block - pos % block
            continue
        _, n, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if kind == 0 and n == 0:  # zero padding to the end of a block
            pos += block - pos % block
            continue
        chunk = data[pos + 7 : pos + 7 + n]
        pos += 7 + n
        buf = chunk if kind in (1, 2) else buf + chunk
        if kind in (1, 4):
            rec = pb.Record()
            rec.ParseFromString(buf)
            out.append(rec)
    return out


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


# -- negbench run --report-to ---------------------------------------------------------------------
def test_run_to_tensorboard(trackers_here, tiny_llama):
    pytest.importorskip("tensorboard")
    res = run_logged(trackers_here, tiny_llama, "tensorboard")
    want = scalars(res)
    assert len(want) > 10 and "negation-mini.cloze.0shot/acc" in want
    sc, texts = tensorboard_scalars(trackers_here / "run" / "tensorboard")
    assert set(sc) == set(want)
    assert all(len(v) == 1 and v[0][0] == 0 and close(v[0][1], want[t]) for t, v in sc.items())
    table = texts["metrics/text_summary"]
    assert table.count("\n") == 1 + len(metric_rows(res))  # header rule + one row each
    assert "| negation-mini.cloze.0shot | negation-mini | cloze | 0 |" in table
    assert f"| model | {tiny_llama} |" in texts["config/text_summary"]


def test_run_to_wandb_offline(trackers_here, tiny_llama):
    pytest.importorskip("wandb")
    res = run_logged(trackers_here, tiny_llama, "wandb")
    (run_dir,) = (trackers_here / "wandb").glob("offline-run-*")
    recs = wandb_records(run_dir)
    (run,) = [r.run for r in recs if r.WhichOneof("record_type") == "run"]
    assert run.project == "negbench" and run.display_name == "run"
    config = {u.key: json.loads(u.value_json) for u in run.config.update}
    assert config["model"] == tiny_llama and config["tasks"] == ["negation-mini", "truefalse-mini"]
    assert config["git.commit"] == res["provenance"]["git"]["commit"]
    summary = {}
    for r in recs:
        if r.WhichOneof("record_type") == "summary":
            for u in r.summary.update:
                summary[u.key or ".".join(u.nested_key)] = json.loads(u.value_json)
    want = scalars(res)
    assert all(close(summary[k], v) for k, v in want.items())
    (table,) = (run_dir / "files" / "media" / "table").glob("metrics_*.table.json")
    logged = json.loads(table.read_text())
    assert logged["columns"] == ["unit", "task", "mode", "shots", "seed", "metric", "value"]
    assert len(logged["data"]) == len(metric_rows(res))
    for got, row in zip(logged["data"], metric_rows(res)):
        assert got[:6] == row[:6] and (got[6] is None) == (row[6] is None)
        assert row[6] is None or close(got[6], row[6])


def test_run_to_mlflow_file_store(trackers_here, tiny_llama):
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    res = run_logged(trackers_here, tiny_llama, "mlflow")
    client = MlflowClient((trackers_here / "mlruns").as_uri())
    exp = client.get_experiment_by_name("negbench")
    (run,) = client.search_runs([exp.experiment_id])
    assert run.info.run_name == "run"
    want = scalars(res)
    assert set(run.data.metrics) == set(want)
    assert all(close(run.data.metrics[k], v) for k, v in want.items())
    assert run.data.params["model"] == tiny_llama
    arts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"results.json", "config.json", "negbench_metrics.json"} <= arts
    local = client.download_artifacts(run.info.run_id, "results.json", str(trackers_here / "dl"))
    assert json.loads(Path(local).read_text())["units"].keys() == res["units"].keys()


# -- negbench train --report-to --------------------------------------------------------------------
def test_train_hands_the_trainer_its_trackers(trackers_here, tiny_llama):
    """One training to the three trackers; each holds the training loss of every logged step,
    equal to the loss history negbench saves with the adapter."""
    for mod in ("tensorboard", "wandb", "mlflow", "peft"):
        pytest.importorskip(mod)
    data = trackers_here / "mem.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in MEM))
    out = trackers_here / "out"
    assert (
        main(
            [
                "train",
                "--recipe",
                "nubench-simple",
                "--model",
                tiny_llama,
                "--data",
                str(data),
                "--out",
                str(out),
                *FAST,
                "--report-to",
                "tensorboard,wandb,mlflow",
            ]
        )
        == 0
    )
    info = json.loads((out / "adapter" / "negbench_train.json").read_text())
    losses = {h["step"]: h["loss"] for h in info["loss_history"]}
    assert sorted(losses) == [1, 2, 3]
    # TensorBoard: OUT/logs (the checkpoints folder, the Trainer's default, is deleted)
    sc, _ = tensorboard_scalars(out / "logs")
    assert {s: v for s, v in sc["train/loss"]} == pytest.approx(losses, rel=1e-5)
    # W&B: the Trainer's history records
    (run_dir,) = (trackers_here / "wandb").glob("offline-run-*")
    hist = {}
    for r in wandb_records(run_dir):
        if r.WhichOneof("record_type") == "history":
            row = {
                i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in r.history.item
            }
            if "train/loss" in row:
                hist[row["train/global_step"]] = row["train/loss"]
    assert hist == pytest.approx(losses, rel=1e-5)
    # MLflow: the metric history of "loss"
    from mlflow.tracking import MlflowClient

    client = MlflowClient((trackers_here / "mlruns").as_uri())
    (run,) = client.search_runs([client.get_experiment_by_name("negbench").experiment_id])
    got = {m.step: m.value for m in client.get_metric_history(run.info.run_id, "loss")}
    assert got == pytest.approx(losses, rel=1e-5)
    assert run.info.run_name == "negbench-train-nubench-simple-out"


# -- what stops a run before it starts ---------------------------------------------------------------
def test_trackers_that_cannot_work_stop_the_run_first(
    trackers_here, tiny_llama, monkeypatch, capsys
):
    out = str(trackers_here / "never")
    with pytest.raises(SystemExit):  # argparse: unknown tracker name
        main(["run", "--report-to", "excel"])
    assert "unknown tracker excel" in capsys.readouterr().err
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a)
    )
    assert main(["run", "--model", tiny_llama, *RUN, "--output", out, "--report-to", "wandb"]) == 2
    err = capsys.readouterr().err
    assert "needs the Python package 'wandb'" in err and "negbench[wandb]" in err
    monkeypatch.setattr(importlib.util, "find_spec", real)
    if real("mlflow") is not None:
        monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE")
        assert (
            main(["run", "--model", tiny_llama, *RUN, "--output", out, "--report-to", "mlflow"])
            == 2
        )
        assert "MLFLOW_ALLOW_FILE_STORE=true" in capsys.readouterr().err
    if real("wandb") is not None:
        monkeypatch.delenv("WANDB_MODE")
        monkeypatch.setenv("HOME", str(trackers_here))  # no ~/.netrc login
        monkeypatch.setenv("NETRC", str(trackers_here / "no-netrc"))
        assert (
            main(["run", "--model", tiny_llama, *RUN, "--output", out, "--report-to", "wandb"]) == 2
        )
        assert "WANDB_MODE=offline" in capsys.readouterr().err
    assert not Path(out).exists()
