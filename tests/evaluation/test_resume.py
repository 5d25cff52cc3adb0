"""A run killed with SIGKILL half-way resumes: no finished request is recomputed, and the results
equal those of an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path


def write_task(path: Path, n: int) -> None:
    words = "the cat dog is not a house river moon".split()
    with open(path, "w") as f:
        for i in range(n):
            q = " ".join(words[(i * 7 + j) % len(words)] for j in range(3 + i % 5))
            f.write(
                json.dumps(
                    {
                        "id": f"q{i}",
                        "question": f"{q} {i}?",
                        "choices": [f"yes {i % 3}", f"no {i % 4}"],
                        "answer": i % 2,
                    }
                )
                + "\n"
            )


def cmd(model: str, task: Path, out: Path, cache: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "negbench.cli",
        "run",
        "--model",
        model,
        "--tasks",
        str(task),
        "--modes",
        "cloze",
        "--no-prefix-sharing",
        "--batch-size",
        "1",
        "--output",
        str(out),
        "--cache",
        str(cache),
        "--quiet",
    ]


def rows(cache: Path) -> int:
    try:
        with sqlite3.connect(cache, timeout=1) as db:
            return db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    except sqlite3.Error:
        return 0


def strip(results: dict) -> dict:
    return {"units": results["units"], "groups": results["groups"], "datasets": results["datasets"]}


def test_sigkill_then_resume(tiny_llama, tmp_path):
    task = tmp_path / "items.jsonl"
    write_task(task, 1500)
    cache = tmp_path / "cache.sqlite"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        cmd(tiny_llama, task, tmp_path / "run", cache),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.time() + 300
    while rows(cache) < 200:
        assert proc.poll() is None, (
            "run ended before it could be killed: " + proc.stderr.read().decode()
        )
        assert time.time() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    done_before = rows(cache)
    assert 200 <= done_before < 3000
    assert not (tmp_path / "run" / "results.json").exists()

    r = subprocess.run(
        cmd(tiny_llama, task, tmp_path / "run", cache),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    resumed = json.loads((tmp_path / "run" / "results.json").read_text())
    assert resumed["engine"]["unique"] == 3000
    assert resumed["engine"]["cached"] == done_before  # nothing answered was redone
    assert resumed["engine"]["computed"] == 3000 - done_before

    r = subprocess.run(
        cmd(tiny_llama, task, tmp_path / "fresh", tmp_path / "fresh.sqlite"),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr
    fresh = json.loads((tmp_path / "fresh" / "results.json").read_text())
    assert fresh["engine"]["cached"] == 0
    assert strip(resumed) == strip(fresh)
    a = (tmp_path / "run" / "samples" / "items.cloze.0shot.jsonl").read_text()
    b = (tmp_path / "fresh" / "samples" / "items.cloze.0shot.jsonl").read_text()
    assert a == b and a.count("\n") == 1500
