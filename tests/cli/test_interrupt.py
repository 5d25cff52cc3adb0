"""Ctrl-C (SIGINT) stops a run within seconds with exit code 130, and the same command resumes
it from the cache (issue 27).

Each run is a real ``python -m negbench run`` subprocess on the ``tiny_llama`` model; the
progress of a run is read from its response cache, where every batch's answers are committed
the moment they arrive.  The signal is sent

* while the first batch runs, between two batches (right after one was committed) and inside a
  later batch (half a batch's time after the previous commit), to a generation run;
* to a run started with SIGINT ignored — what a non-interactive shell does to ``negbench run …
  &`` — which once ignored the signal and ran to the end, exiting 0;
* to a scoring run, and to an API run whose server never answers (its requests in flight used
  to hold the exit for the whole --timeout).

After each stop the rerun must reuse every committed answer and give the same samples as a run
that was never interrupted.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

N_ITEMS = 160  # 10 generation batches of 16
STOP_S = 15  # a stopped run exits within this (measured: 1.5-3 s on a busy machine)


def write_task(path: Path, n: int = N_ITEMS) -> Path:
    words = "the cat dog is not a house river moon never bridge city council award".split()
    with open(path, "w") as f:
        for i in range(n):
            q = " ".join(words[(i * 7 + j) % len(words)] for j in range(60 + i % 40))
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
    return path


def rows(cache: Path) -> int:
    try:
        with sqlite3.connect(cache, timeout=1) as db:
            return db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    except sqlite3.Error:
        return 0


def command(model: str, task: Path, out: Path, cache: Path, mode: str = "generate") -> list[str]:
    return [
        sys.executable,
        "-m",
        "negbench",
        "run",
        "--model",
        model,
        "--tasks",
        str(task),
        "--modes",
        mode,
        "--output",
        str(out),
        "--cache",
        str(cache),
    ]


def start(cmd: list[str], log: Path, ignore_sigint: bool = False) -> subprocess.Popen:
    def child_setup():
        if ignore_sigint:  # as a non-interactive shell starts `cmd &`
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    return subprocess.Popen(
        cmd,
        stdout=subprocess.DEVNULL,
        stderr=open(log, "w"),
        preexec_fn=child_setup,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )


def wait_for(proc: subprocess.Popen, log: Path, cond, what: str, timeout: float = 300) -> float:
    t0 = time.time()
    while not cond():
        assert proc.poll() is None, f"the run ended before {what}: " + log.read_text()
        assert time.time() - t0 < timeout, f"no {what} after {timeout} s: " + log.read_text()
        time.sleep(0.005)
    return time.time()


def interrupt(proc: subprocess.Popen, log: Path) -> float:
    """SIGINT; returns the seconds until the process ended (which must be with 130)."""
    t0 = time.time()
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the run did not stop within 120 s of SIGINT")
    took = time.time() - t0
    err = log.read_text()
    assert proc.returncode == 130, f"exit {proc.returncode}: {err}"
    assert "interrupted: answered requests are cached" in err and "Traceback" not in err, err
    assert took < STOP_S, took
    return took


def resume(cmd: list[str], out: Path, answered: int) -> dict:
    r = subprocess.run(cmd + ["--quiet"], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    res = json.loads((out / "results.json").read_text())
    assert res["engine"]["cached"] == answered  # nothing answered is redone
    assert res["engine"]["computed"] == res["engine"]["unique"] - answered
    return res


def samples(out: Path) -> str:
    (f,) = (out / "samples").glob("*.jsonl")
    return f.read_text()


@pytest.fixture(scope="module")
def generation(tiny_llama, tmp_path_factory):
    """The task and the samples of a run that was never interrupted."""
    home = tmp_path_factory.mktemp("gen")
    task = write_task(home / "items.jsonl")
    cmd = command(tiny_llama, task, home / "ref", home / "ref.sqlite") + ["--quiet"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    return {"task": task, "reference": samples(home / "ref")}


POINTS = [
    pytest.param("while the first batch runs", marks=pytest.mark.slow),
    "between two batches",
    "inside a later batch",
    "started with SIGINT ignored",
]


@pytest.mark.parametrize("point", POINTS)
def test_sigint_stops_a_generation_run_which_then_resumes(point, generation, tiny_llama, tmp_path):
    out, cache, log = tmp_path / "run", tmp_path / "cache.sqlite", tmp_path / "stderr.txt"
    cmd = command(tiny_llama, generation["task"], out, cache)
    proc = start(cmd, log, ignore_sigint=point == "started with SIGINT ignored")
    if point == "while the first batch runs":
        wait_for(proc, log, lambda: "1 unit(s)" in log.read_text(), "the first batch")
        time.sleep(0.1)
    elif point == "between two batches":
        wait_for(proc, log, lambda: rows(cache) >= 16, "a finished batch")
    else:  # half a batch's time after a batch was committed
        t1 = wait_for(proc, log, lambda: rows(cache) >= 16, "a finished batch")
        n = rows(cache)
        t2 = wait_for(proc, log, lambda: rows(cache) > n, "a second finished batch")
        time.sleep((t2 - t1) / 2)
    at_signal = rows(cache)
    interrupt(proc, log)
    answered = rows(cache)
    assert answered < N_ITEMS and answered - at_signal <= 16  # stopped, at most one batch later
    assert not (out / "results.json").exists()
    resume(cmd, out, answered)
    assert samples(out) == generation["reference"]


@pytest.mark.slow  # the SIGKILL resume of a scoring run is tested by test_resume.py
def test_sigint_stops_a_scoring_run_which_then_resumes(tiny_llama, tmp_path):
    task = write_task(tmp_path / "items.jsonl", 300)
    out, cache, log = tmp_path / "run", tmp_path / "cache.sqlite", tmp_path / "stderr.txt"
    cmd = command(tiny_llama, task, out, cache, mode="cloze") + [
        "--no-prefix-sharing",
        "--batch-size",
        "2",
    ]
    proc = start(cmd, log)
    wait_for(proc, log, lambda: rows(cache) >= 40, "40 answers")
    interrupt(proc, log)
    answered = rows(cache)
    assert 40 <= answered < 600
    resume(cmd, out, answered)


class _Silent(BaseHTTPRequestHandler):
    """An OpenAI-compatible server that lists one model (the tiny model, whose tokenizer the
    client reads from its folder) and never answers a completion."""

    root = ""

    def log_message(self, *args):
        pass

    def do_GET(self):
        body = json.dumps(
            {
                "object": "list",
                "data": [
                    {"id": "tiny", "object": "model", "root": self.root, "max_model_len": 1024}
                ],
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        time.sleep(30)  # longer than the test; the client waits --timeout


def test_sigint_stops_an_api_run_with_requests_in_flight(tiny_llama, tmp_path):
    pytest.importorskip("openai")
    handler = type("Silent", (_Silent,), {"root": tiny_llama})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        task = write_task(tmp_path / "items.jsonl", 8)
        log = tmp_path / "stderr.txt"
        proc = start(
            command(f"openai-compatible:{url}", task, tmp_path / "run", tmp_path / "cache.sqlite")
            + ["--timeout", "120"],
            log,
        )
        wait_for(proc, log, lambda: "1 unit(s)" in log.read_text(), "the requests")
        time.sleep(1.0)  # four requests are in flight, none answered
        interrupt(proc, log)
    finally:
        server.shutdown()


@pytest.mark.slow  # a local Ray cluster starts in ≈10-20 s
def test_ctrl_c_stops_a_ray_run_and_its_local_cluster(tiny_llama, tmp_path):
    """A terminal's Ctrl-C reaches the whole process group (the driver and the local cluster
    it started): the run exits 130 within seconds, leaves no Ray process, and resumes."""
    pytest.importorskip("ray")
    task = write_task(tmp_path / "items.jsonl", 300)
    out, cache, log = tmp_path / "run", tmp_path / "cache.sqlite", tmp_path / "stderr.txt"
    cmd = command(tiny_llama, task, out, cache, mode="cloze") + ["--group-tokens", "400"]
    proc = subprocess.Popen(
        cmd + ["--ray", "local:2"],
        stdout=subprocess.DEVNULL,
        stderr=open(log, "w"),
        start_new_session=True,
    )
    wait_for(proc, log, lambda: rows(cache) >= 40, "40 answers")
    t0 = time.time()
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("the Ray run did not stop within 120 s of Ctrl-C")
    assert proc.returncode == 130, log.read_text()
    assert time.time() - t0 < STOP_S
    time.sleep(2)
    left = subprocess.run(["ps", "-o", "pid=", "-g", str(proc.pid)], capture_output=True, text=True)
    assert not left.stdout.strip(), "Ray processes left: " + left.stdout
    answered = rows(cache)
    assert answered < 600
    resume(cmd, out, answered)  # the same groups in one process: same samples
