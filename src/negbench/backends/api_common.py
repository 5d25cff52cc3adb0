"""What every request-level API backend shares: the transport (concurrency, client-side rate
limit, retries with exponential backoff and jitter honouring ``Retry-After``), API-key
handling, a local tokenizer mirror of the transformers backend, usage/cost accounting.

The transport never turns a failure into an answer: a 429, a 5xx, a timeout, a dropped
connection or a body that does not parse into a complete answer is retried; after the retry
budget the run stops with :class:`ApiError` and every answer received so far is already in the
cache (the engine commits each the moment it arrives).
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import math
import os
import queue
import random
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from negbench.backends.tokenizing import HFTokenization
from negbench.errors import NegbenchError

CHAT_MARKER = "\x00negbench-chat-messages\x00"  # a prompt that is a list of chat messages


class ApiError(NegbenchError):
    """A remote model that could not answer (after retries) or refused a request."""


class Retryable(Exception):
    """A failure worth trying again: rate limit, server error, timeout, dropped connection,
    malformed body.  ``retry_after``: seconds the server asked us to wait (or None)."""

    def __init__(self, what: str, retry_after: float | None = None, kind: str = "error"):
        super().__init__(what)
        self.retry_after = retry_after
        self.kind = kind


class Malformed(Retryable):
    """A 200 answer whose body is not a complete, well-formed answer."""

    def __init__(self, what: str):
        super().__init__(what, kind="malformed")


class Fatal(Exception):
    """A failure retrying cannot fix (bad request, authentication, unknown model)."""


# -- keys ------------------------------------------------------------------------------------------
def api_key_from_env(var: str, required: bool, spec: str) -> str | None:
    """The API key from the environment variable ``var`` (never from the command line, never
    written anywhere)."""
    key = os.environ.get(var) or None
    if required and not key:
        raise ApiError(
            f"{spec} needs an API key in the environment variable {var}",
            where="--model",
            fix=f"export {var}=... (negbench never stores it)",
        )
    return key


def scrub(text: str, secrets: list[str | None]) -> str:
    """``text`` with every secret (and every ``Bearer …``/``sk-…`` looking token) blanked."""
    import re

    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "***")
    text = re.sub(r"(?i)(bearer\s+)[A-Za-z0-9._\-]{8,}", r"\1***", text)
    text = re.sub(r"\b(sk-[A-Za-z0-9_\-]{6,})", "sk-***", text)
    return text


def check_url(url: str) -> str:
    from urllib.parse import urlsplit

    u = urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ApiError(
            f"not an http(s) URL: {url!r}",
            where="--model",
            fix="openai-compatible:http://HOST:PORT/v1#MODEL",
        )
    if u.username or u.password:
        raise ApiError(
            "the server URL carries credentials",
            where="--model",
            fix="remove them from the URL and put the key in an environment variable "
            "(--api-key-env NAME): negbench writes the model spec into run folders",
        )
    return url.rstrip("/")


# -- retry schedule --------------------------------------------------------------------------------
def parse_retry_after(headers: Any, now: float | None = None) -> float | None:
    """Seconds from ``Retry-After`` (delta-seconds or an HTTP date) or ``retry-after-ms``."""
    if headers is None:
        return None
    get = headers.get if hasattr(headers, "get") else (lambda k: None)
    ms = get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    v = get("retry-after")
    if not v:
        return None
    try:
        return max(0.0, float(v))
    except ValueError:
        pass
    try:
        dt = email.utils.parsedate_to_datetime(v)
        return max(0.0, dt.timestamp() - (time.time() if now is None else now))
    except (TypeError, ValueError, IndexError):
        return None


def backoff_delay(
    attempt: int,
    retry_after: float | None,
    rng: random.Random,
    base: float = 0.5,
    cap: float = 30.0,
    max_retry_after: float = 120.0,
) -> float:
    """Delay before retry number ``attempt`` (0-based): exponential with "equal jitter"
    (half fixed, half random, so no two clients retry in lockstep and no delay is zero), and at
    least what the server asked for in ``Retry-After`` (capped at ``max_retry_after``)."""
    d = min(cap, base * (2**attempt))
    d = d / 2 + rng.uniform(0, d / 2)
    if retry_after is not None:
        d = max(d, min(retry_after, max_retry_after))
    return d


class RateLimiter:
    """At most ``rate`` request starts per second (client side), shared by all workers."""

    def __init__(self, rate: float | None):
        self.interval = 1.0 / rate if rate else 0.0
        self.next = 0.0
        self.lock = threading.Lock()

    def acquire(self) -> None:
        if not self.interval:
            return
        with self.lock:
            now = time.monotonic()
            t = max(now, self.next)
            self.next = t + self.interval
        if t > now:
            time.sleep(t - now)


@dataclass
class TransportConfig:
    concurrency: int = 4
    rate_limit: float | None = None  # requests per second
    max_retries: int = 6
    timeout: float = 120.0
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    seed: int = 0  # jitter RNG (and the API's sampling seed)


@dataclass
class TransportStats:
    calls: int = 0  # HTTP requests sent (first tries and retries)
    retries: int = 0
    faults: dict[str, int] = field(default_factory=dict)  # retried failures by kind
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Transport:
    """Runs ``call(job)`` for many jobs with N in flight, retrying :class:`Retryable` failures."""

    def __init__(
        self, cfg: TransportConfig, describe: Callable[[], str], secrets: Sequence[str | None] = ()
    ):
        self.cfg = cfg
        self.describe = describe
        self.secrets = list(secrets)
        self.limiter = RateLimiter(cfg.rate_limit)
        self.rng = random.Random(cfg.seed)
        self.lock = threading.Lock()
        self.stats = TransportStats()
        self.stop = threading.Event()
        self.sleep = time.sleep

    def _count(self, **kw) -> None:
        with self.lock:
            for k, v in kw.items():
                setattr(self.stats, k, getattr(self.stats, k) + v)

    def with_retries(self, call: Callable[[], Any], what: str) -> Any:
        last: Retryable | None = None
        for attempt in range(self.cfg.max_retries + 1):
            if self.stop.is_set():
                raise _Aborted()
            self.limiter.acquire()
            self._count(calls=1)
            try:
                return call()
            except Retryable as exc:
                last = exc
                with self.lock:
                    self.stats.faults[exc.kind] = self.stats.faults.get(exc.kind, 0) + 1
                    delay = backoff_delay(
                        attempt,
                        exc.retry_after,
                        self.rng,
                        self.cfg.backoff_base,
                        self.cfg.backoff_cap,
                    )
                if attempt == self.cfg.max_retries:
                    break
                self._count(retries=1)
                if self.stop.wait(delay):
                    raise _Aborted()
            except Fatal as exc:
                raise ApiError(
                    f"{self.describe()} refused {what}: {scrub(str(exc), self.secrets)}",
                    fix="check the model name, the options and the API key "
                    "(retrying would not help)",
                ) from None
        raise ApiError(
            f"{self.describe()} did not answer {what} after "
            f"{self.cfg.max_retries + 1} tries (last: {scrub(str(last), self.secrets)})",
            fix="the answers received so far are in the cache: rerun the same command "
            "later to send only the rest (or raise --max-retries / --timeout, "
            "lower --concurrency / --rate-limit)",
        )

    def run_all(
        self, jobs: list, call: Callable[[Any], tuple], done: Callable[[list], None]
    ) -> None:
        """``call(job)`` -> (response, meta) for every job, ``concurrency`` in flight; ``done``
        gets [(job, response, meta)] in the calling thread as they arrive.  On the first
        failure no new job starts, those in flight finish, then the failure is raised."""
        failure: BaseException | None = None
        it = iter(jobs)
        inflight: dict = {}
        pool = DaemonPool(max(1, self.cfg.concurrency), "negbench-api")

        def submit() -> None:
            j = next(it, None)
            if j is not None:
                inflight[pool.submit(call, j)] = j

        try:
            for _ in range(max(1, self.cfg.concurrency)):
                submit()
            while inflight:
                finished, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
                batch = []
                for f in finished:
                    j = inflight.pop(f)
                    try:
                        resp, meta = f.result()
                    except _Aborted:
                        continue
                    except BaseException as exc:  # noqa: BLE001 - re-raised below
                        if failure is None:
                            failure = exc
                            self.stop.set()  # no retries of the others either
                        continue
                    batch.append((j, resp, meta))
                    if failure is None:
                        submit()
                if batch:
                    done(batch)
        except BaseException:  # Ctrl-C, or done() failing: do not wait
            self.stop.set()  # for requests in flight (up to --timeout)
            for f in inflight:
                f.cancel()
            pool.shutdown()
            raise
        pool.shutdown()
        self.stop.clear()
        if failure is not None:
            raise failure


class _Aborted(Exception):
    """A job abandoned because another one failed for good."""


class DaemonPool:
    """``n`` daemon threads running submitted calls, returning futures.  Not a
    ThreadPoolExecutor: Python joins an executor's threads when it exits, so a stopped run
    (Ctrl-C) waited for every request in flight — up to ``--timeout``, two minutes by default —
    before it could exit; a daemon thread is abandoned with its request instead."""

    def __init__(self, n: int, name: str):
        self.n = n
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        for i in range(n):
            threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True).start()

    def submit(self, fn: Callable, *args) -> Future:
        f: Future = Future()
        self.jobs.put((f, fn, args))
        return f

    def _work(self) -> None:
        while (job := self.jobs.get()) is not None:
            f, fn, args = job
            if not f.set_running_or_notify_cancel():
                continue  # cancelled before it started
            try:
                f.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                f.set_exception(exc)

    def shutdown(self) -> None:
        """The threads end after the calls already running (nobody waits for them)."""
        for _ in range(self.n):
            self.jobs.put(None)


# -- a local tokenizer, tokenising exactly as the transformers backend ----------------------------
class LocalTokenizer(HFTokenization):
    """The model's tokenizer from a local folder, with :class:`negbench.backends.hf.HFBackend`'s
    BOS rule (the tokenizer's default, never a second BOS), so requests are tokenised as the
    transformers backend tokenises them (lm-eval's ``_encode_pair``)."""

    FILES = (
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "vocab.json",
        "merges.txt",
        "tokenizer.model",
        "added_tokens.json",
        "chat_template.jinja",
        "chat_template.json",
    )

    def __init__(self, folder: str, add_bos: str | bool = "auto"):
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        import transformers

        transformers.logging.set_verbosity_error()
        from transformers import AutoTokenizer

        self.folder = folder
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(folder)
        except Exception as exc:  # noqa: BLE001 - any load failure is the user's folder
            raise ApiError(
                f"cannot load a tokenizer from {folder}: {exc}".splitlines()[0],
                where="--tokenizer",
                fix="give the served model's folder",
            ) from None
        self.add_bos = self._tokenizer_adds_bos() if add_bos == "auto" else bool(add_bos)
        self.model_max_length = getattr(self.tokenizer, "model_max_length", None)

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for name in self.FILES:
            p = Path(self.folder) / name
            if p.is_file():
                h.update(name.encode())
                h.update(hashlib.sha256(p.read_bytes()).hexdigest().encode())
        return h.hexdigest()[:32]


# -- chat prompts without a local template --------------------------------------------------------
def chat_marker(messages: list[dict]) -> str:
    """A request string that stands for a list of chat messages (for APIs that apply their own
    template): the cache key is then exactly the messages sent."""
    return CHAT_MARKER + json.dumps(messages, ensure_ascii=False, sort_keys=True)


def prompt_messages(prompt: str) -> list[dict]:
    """The chat messages a request string stands for: a marked message list, or else the whole
    prompt as one user turn."""
    if prompt.startswith(CHAT_MARKER):
        return json.loads(prompt[len(CHAT_MARKER) :])
    return [{"role": "user", "content": prompt}]


def apply_stops(text: str, stop) -> tuple[str, str | None]:
    """lm-eval's ``generate_until`` post-processing: cut at each stop string in turn."""
    hit = None
    for s in stop:
        if s and s in text:
            text = text.split(s)[0]
            hit = hit or s
    return text, hit


# -- usage and cost --------------------------------------------------------------------------------
# USD per million tokens (input, output); public list prices checked 2026-11; a model not listed
# gets no cost, only token counts.  Dated snapshots match their family by prefix.
PRICES = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4.1": (2.00, 8.00),
    "gpt-3.5-turbo": (0.50, 1.50),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-3-haiku": (0.25, 1.25),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00),
}


def price_of(model: str) -> tuple[float, float] | None:
    best = None
    for name, p in PRICES.items():
        if model.startswith(name) and (best is None or len(name) > len(best[0])):
            best = (name, p)
    return best[1] if best else None


class Usage:
    """Token usage, served model ids and system fingerprints of one backend's answers."""

    def __init__(self, model: str):
        self.model = model
        self.lock = threading.Lock()
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.answers = 0
        self.served: dict[str, int] = {}
        self.fingerprints: dict[str, int] = {}

    def add(self, meta: dict) -> None:
        with self.lock:
            self.answers += 1
            u = meta.get("usage") or {}
            self.prompt_tokens += int(u.get("prompt_tokens") or 0)
            self.completion_tokens += int(u.get("completion_tokens") or 0)
            m = meta.get("served_model")
            if m:
                self.served[m] = self.served.get(m, 0) + 1
            f = meta.get("system_fingerprint")
            if f:
                self.fingerprints[f] = self.fingerprints.get(f, 0) + 1

    def summary(self) -> dict:
        out = {
            "answers_received": self.answers,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "served_models": dict(self.served),
            "system_fingerprints": dict(self.fingerprints),
        }
        p = price_of(self.model)
        if p:
            out["cost_usd"] = round(
                (self.prompt_tokens * p[0] + self.completion_tokens * p[1]) / 1e6, 6
            )
            out["price_per_mtok_usd"] = {"input": p[0], "output": p[1]}
        return out


def finite_logprob(x: Any, what: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise Malformed(f"{what}: not a number ({x!r})")
    x = float(x)
    if math.isnan(x) or x > 1e-4:
        raise Malformed(f"{what}: not a log-probability ({x!r})")
    return x
