"""OpenAI and OpenAI-compatible servers (vLLM, …) as a request-level backend, on the official
``openai`` SDK.

Model specs::

    openai:gpt-4o-mini                              # api.openai.com, key in OPENAI_API_KEY
    openai-compatible:http://127.0.0.1:8000/v1#NAME # any compatible server, model NAME
    openai-compatible:http://127.0.0.1:8000/v1      # the server's first (only) model

How each request kind is asked (see ``docs/backends.md``):

* **log-likelihood** — ``/v1/completions`` on the *token ids* of context + continuation
  (tokenised locally with the served model's tokenizer exactly as the transformers backend and
  lm-eval do), ``max_tokens=1``, ``temperature=0`` and vLLM's ``prompt_logprobs=1``: the
  continuation tokens' log-probabilities and ranks (rank 1 = greedy).  Servers without
  ``prompt_logprobs`` are asked with ``echo=True, logprobs=1`` instead (the legacy OpenAI
  protocol; greedy = the top-1 alternative is the token itself).
* **next-token over labels** — the same, on context + each label's first token (one HTTP request
  holding one prompt per label): exact log-probabilities, not a top-k list that may miss a label.
* **generation** — ``/v1/completions`` on the exact prompt token ids (greedy, ``stop``,
  ``max_tokens``, ``seed``); lm-eval's stop post-processing applied.  With ``--chat`` the local
  chat template writes the prompt (as for the transformers backend).  Without a local tokenizer
  (and always for ``openai:``) generation goes through ``/v1/chat/completions``: the prompt is
  one user turn, or with ``--chat`` the system + user messages, and the server applies its
  template.

OpenAI's hosted chat models return no prompt log-probabilities: log-likelihood and next-token
modes fail before the run starts, naming the generation modes to use instead.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from negbench.backends.api_common import (
    ApiError,
    Fatal,
    LocalTokenizer,
    Malformed,
    Retryable,
    Transport,
    TransportConfig,
    Usage,
    api_key_from_env,
    apply_stops,
    chat_marker,
    check_url,
    finite_logprob,
    parse_retry_after,
    prompt_messages,
    scrub,
)
from negbench.core.backend import RequestJob
from negbench.core.requests import (
    GenerationRequest,
    GenerationResponse,
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    NextTokenRequest,
    NextTokenResponse,
)

log = logging.getLogger("negbench")

API_NUMERICS = "1"  # bump when a change alters answers, so cached ones are not reused
SCORED_KINDS = ("loglikelihood", "next_token")


def parse_spec(spec: str) -> tuple[str, str | None, str | None]:
    """(flavour, base URL, model): ``openai:MODEL`` or ``openai-compatible:URL[#MODEL]``."""
    if spec.startswith("openai-compatible:"):
        rest = spec[len("openai-compatible:") :]
        url, _, model = rest.partition("#")
        return "openai-compatible", check_url(url), model or None
    if spec.startswith("openai:"):
        model = spec[len("openai:") :]
        if not model:
            raise ApiError(
                "no model name after 'openai:'",
                where="--model",
                fix="e.g. --model openai:gpt-4o-mini",
            )
        return "openai", None, model
    raise ApiError(f"not an OpenAI model spec: {spec!r}", where="--model")


# -- parsing answers (pure functions of the JSON body) -------------------------------------------
def _choices(body: Any, n: int) -> list[dict]:
    if not isinstance(body, dict):
        raise Malformed("the body is not a JSON object")
    ch = body.get("choices")
    if not isinstance(ch, list) or len(ch) != n or not all(isinstance(c, dict) for c in ch):
        raise Malformed(
            f"expected {n} choice(s), got {type(ch).__name__}"
            + (f" of {len(ch)}" if isinstance(ch, list) else "")
        )
    try:
        return sorted(ch, key=lambda c: int(c.get("index", 0)))
    except (TypeError, ValueError):
        raise Malformed("bad choice index") from None


def _prompt_lp(choice: dict, tokens: list[int], start: int) -> list[tuple[float, bool]]:
    """(log-probability, is top-1) of tokens[start:] from vLLM's ``prompt_logprobs``."""
    pl = choice.get("prompt_logprobs")
    if not isinstance(pl, list) or len(pl) != len(tokens):
        raise Malformed(f"prompt_logprobs: expected a list of {len(tokens)} entries")
    out = []
    for i in range(start, len(tokens)):
        entry = pl[i]
        if not isinstance(entry, dict):
            raise Malformed(f"prompt_logprobs[{i}] is not an object")
        d = entry.get(str(tokens[i]))
        if not isinstance(d, dict):
            raise Malformed(f"prompt_logprobs[{i}] lacks token {tokens[i]}")
        lp = finite_logprob(d.get("logprob"), f"prompt_logprobs[{i}]")
        rank = d.get("rank")
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            raise Malformed(f"prompt_logprobs[{i}]: bad rank {rank!r}")
        out.append((lp, rank == 1))
    return out


def _echo_lp(choice: dict, n_prompt: int, start: int) -> list[tuple[float, bool]]:
    """The same from the legacy ``echo=True, logprobs=1`` answer (the prompt's tokens come
    first; a generated token may follow)."""
    lp = choice.get("logprobs")
    if not isinstance(lp, dict):
        raise Malformed("no logprobs object")
    tl, top = lp.get("token_logprobs"), lp.get("top_logprobs")
    if not isinstance(tl, list) or len(tl) < n_prompt:
        raise Malformed(f"token_logprobs: expected at least {n_prompt} entries")
    if not isinstance(top, list) or len(top) < n_prompt:
        raise Malformed(f"top_logprobs: expected at least {n_prompt} entries")
    out = []
    for i in range(start, n_prompt):
        x = finite_logprob(tl[i], f"token_logprobs[{i}]")
        alts = top[i]
        if not isinstance(alts, dict) or not alts:
            raise Malformed(f"top_logprobs[{i}] is empty")
        best = max(finite_logprob(v, f"top_logprobs[{i}]") for v in alts.values())
        out.append((x, best <= x + 1e-6))
    return out


def parse_loglikelihood(body: Any, job: RequestJob, protocol: str) -> LoglikelihoodResponse:
    c = _choices(body, 1)[0]
    tokens = job.tokens
    assert tokens is not None  # scored jobs are tokenised (tokenizes = True)
    start = len(tokens) - job.n_scored
    vals = (
        _prompt_lp(c, tokens, start)
        if protocol == "prompt_logprobs"
        else _echo_lp(c, len(tokens), start)
    )
    return LoglikelihoodResponse(sum(v for v, _ in vals), len(vals), all(g for _, g in vals))


def parse_next_token(body: Any, job: RequestJob, protocol: str) -> NextTokenResponse:
    tokens, labels = job.tokens, job.labels
    assert tokens is not None and labels is not None  # set by the engine for next-token jobs
    ch = _choices(body, len(labels))
    lps, ids = {}, {}
    n = len(tokens)
    for (lab, tid), c in zip(labels, ch):
        vals = (
            _prompt_lp(c, tokens + [tid], n)
            if protocol == "prompt_logprobs"
            else _echo_lp(c, n + 1, n)
        )
        lps[lab], ids[lab] = vals[0][0], tid
    return NextTokenResponse(lps, ids)


def parse_completion_text(body: Any, stop) -> GenerationResponse:
    c = _choices(body, 1)[0]
    text = c.get("text")
    if not isinstance(text, str):
        raise Malformed("choice has no text")
    return _generation(body, c, text, stop)


def parse_chat_text(body: Any, stop) -> GenerationResponse:
    c = _choices(body, 1)[0]
    msg = c.get("message")
    if not isinstance(msg, dict):
        raise Malformed("choice has no message")
    text = msg.get("content")
    if text is None and msg.get("refusal"):
        text = ""
    if not isinstance(text, str):
        raise Malformed("message has no content")
    return _generation(body, c, text, stop)


def _generation(body: dict, c: dict, text: str, stop) -> GenerationResponse:
    finish = c.get("finish_reason")
    if finish not in ("stop", "length", "content_filter", "eos"):
        # None/absent: the answer was cut off (a truncated body) — never take it as complete
        raise Malformed(f"unexpected finish_reason {finish!r}")
    text, hit = apply_stops(text, stop)
    sr = c.get("stop_reason")
    if finish == "length":
        why = hit
    elif isinstance(sr, str) and sr:
        why = sr
    else:
        why = hit or "eos"
    u = body.get("usage")
    usage = u if isinstance(u, dict) else {}
    n = usage.get("completion_tokens")
    return GenerationResponse(text, int(n) if isinstance(n, int) else 0, why)


def answer_meta(body: dict) -> dict:
    u = body.get("usage")
    usage = u if isinstance(u, dict) else {}
    return {
        "served_model": body.get("model"),
        "system_fingerprint": body.get("system_fingerprint"),
        "usage": {
            k: usage.get(k)
            for k in ("prompt_tokens", "completion_tokens")
            if isinstance(usage.get(k), int)
        },
    }


def decode_body(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise Malformed(f"the body is not JSON ({text[:60]!r}…)") from None


# -- the backend -----------------------------------------------------------------------------------
class OpenAIBackend:
    """A request-level backend over the OpenAI API or an OpenAI-compatible server."""

    level = "request"

    def __init__(
        self,
        spec: str,
        *,
        tokenizer: str | None = None,
        add_bos: str | bool = "auto",
        max_length: int | None = None,
        api_key_env: str | None = None,
        transport: TransportConfig | None = None,
        weights_folder: str | None = None,
        served_by: str | None = None,
        fingerprint_extra: dict | None = None,
    ):
        try:
            import openai
        except ModuleNotFoundError:
            raise ApiError(
                "the OpenAI backend needs the Python package 'openai'",
                fix="pip install 'negbench[api]'",
            ) from None
        self.openai = openai
        for name in ("httpx", "httpx2", "openai"):  # no line per HTTP request at INFO level
            logging.getLogger(name).setLevel(logging.WARNING)
        self.spec = spec
        self.flavour, self.base_url, model = parse_spec(spec)
        self.name = self.flavour
        self.cfg = transport or TransportConfig()
        env = api_key_env or (
            "OPENAI_API_KEY" if self.flavour == "openai" else "OPENAI_COMPATIBLE_API_KEY"
        )
        key = api_key_from_env(env, required=self.flavour == "openai", spec=spec)
        self._secrets = [key]
        self.client = openai.OpenAI(
            api_key=key or "EMPTY", base_url=self.base_url, max_retries=0, timeout=self.cfg.timeout
        )
        self.transport = Transport(self.cfg, self._describe, self._secrets)
        self.protocol: str | None = None  # "prompt_logprobs" | "echo" | "none"
        info: dict[str, Any] = {}
        if self.flavour == "openai-compatible":
            info = self._server_model(model)
            model = info["id"]
            self.protocol = None
        else:
            self.protocol = "none"
        assert model is not None  # openai: names it; a server's answer names it otherwise
        self.model = model
        root = info.get("root")
        folder = tokenizer or weights_folder or (root if root and Path(root).is_dir() else None)
        self.tok = LocalTokenizer(folder, add_bos) if folder else None
        self.tokenizes = self.tok is not None
        server_max = info.get("max_model_len")
        limits = [x for x in (max_length, (server_max - 2) if server_max else None) if x]
        if (
            not limits
            and self.tok
            and self.tok.model_max_length
            and self.tok.model_max_length < 10**7
        ):
            limits.append(self.tok.model_max_length)
        self.max_length = min(limits) if limits else 4096
        self.usage = Usage(model)
        fp = {
            "backend": self.flavour,
            "api": API_NUMERICS,
            "model": model,
            "tokenizer": self.tok.fingerprint() if self.tok else None,
            "add_bos": self.tok.add_bos if self.tok else None,
            "max_length": self.max_length,
        }
        fp.update(fingerprint_extra or {})
        wf = weights_folder or (root if root and Path(root, "config.json").is_file() else None)
        if wf:
            from negbench.backends.sources import ModelSource, source_fingerprint

            fp["weights"] = source_fingerprint(ModelSource(wf, folder=str(Path(wf).resolve())))
        self.fingerprint = hashlib.sha256(json.dumps(fp, sort_keys=True).encode()).hexdigest()[:32]
        self.fingerprint_info = dict(fp)
        self.fingerprint_info["api_usage"] = self.usage.summary()
        if served_by:
            self.fingerprint_info["served_by"] = served_by

    # -- server discovery ------------------------------------------------------------------------
    def _describe(self) -> str:
        if self.flavour == "openai":
            return f"the OpenAI API (model {getattr(self, 'model', '?')})"
        return f"the server at {self.base_url}"

    def _server_model(self, model: str | None) -> dict:
        def call():
            return self._http(lambda: self.client.models.with_raw_response.list())

        body = self.transport.with_retries(call, "the model list (GET /models)")
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or not data:
            raise ApiError(f"{self._describe()} lists no models", where="--model")
        ids = [d.get("id") for d in data if isinstance(d, dict)]
        if model is None:
            return data[0]
        for d in data:
            if isinstance(d, dict) and d.get("id") == model:
                return d
        raise ApiError(
            f"{self._describe()} serves no model {model!r} (it serves: {', '.join(map(str, ids))})",
            where="--model",
            fix=f"openai-compatible:{self.base_url}#{ids[0]}",
        )

    # -- one HTTP exchange -----------------------------------------------------------------------
    def _http(self, send) -> Any:
        """Send, map every failure to Retryable or Fatal, and return the parsed JSON body."""
        o = self.openai
        try:
            raw = send()
        except o.APITimeoutError as exc:
            raise Retryable(f"timeout ({exc.__class__.__name__})", kind="timeout") from None
        except o.APIConnectionError as exc:
            raise Retryable(
                f"connection failed: {scrub(str(exc), self._secrets)}", kind="connection"
            ) from None
        except o.APIStatusError as exc:
            status = exc.status_code
            msg = scrub(str(exc), self._secrets)[:300]
            if status == 429 or status == 408 or status == 409 or status >= 500:
                kind = "429" if status == 429 else ("5xx" if status >= 500 else str(status))
                raise Retryable(
                    f"HTTP {status}: {msg}",
                    parse_retry_after(getattr(exc.response, "headers", None)),
                    kind=kind,
                ) from None
            raise Fatal(f"HTTP {status}: {msg}") from None
        except o.APIError as exc:  # e.g. a response that failed validation
            raise Malformed(scrub(str(exc), self._secrets)[:300]) from None
        try:
            text = raw.http_response.text
        except Exception as exc:  # noqa: BLE001 - a body cut off mid-read
            raise Retryable(
                f"reading the body failed: {exc.__class__.__name__}", kind="connection"
            ) from None
        return decode_body(text)

    # -- capabilities ----------------------------------------------------------------------------
    def check_kinds(self, kinds: set[str]) -> None:
        scored = sorted(k for k in kinds if k in SCORED_KINDS)
        if not scored:
            return
        if self.flavour == "openai":
            raise ApiError(
                f"the OpenAI API returns no prompt log-probabilities, so the "
                f"{'/'.join(scored)} modes cannot be scored with {self.spec}",
                where="--model / --modes",
                fix="use a generation mode (e.g. --modes gen; see 'negbench tasks': "
                "the modes of kind 'generate'), or serve an open model with vLLM "
                "(--model vllm:PATH or openai-compatible:URL#NAME)",
            )
        if not self.tokenizes:
            raise ApiError(
                f"scoring {'/'.join(scored)} through {self.spec} needs the served "
                "model's tokenizer (to split context and continuation exactly)",
                where="--model",
                fix="pass --tokenizer FOLDER (the served model's folder), or use a generation mode",
            )
        self._probe_protocol(scored)

    def _probe_protocol(self, scored) -> None:
        if self.protocol in ("prompt_logprobs", "echo"):
            return
        tok = self._tokenizer
        ids = tok.encode("Hello world", add_special_tokens=False)[:2] or [tok.prefix_token_id]
        probe = RequestJob("probe", None, [tok.prefix_token_id] + ids, len(ids))
        for proto in ("prompt_logprobs", "echo"):
            try:  # transport failures are retried; a well-formed answer without
                body = self.transport.with_retries(  # the log-probabilities is a "no"
                    lambda: self._http(lambda: self._completion_raw(probe.tokens, proto)),
                    "a log-probability probe",
                )
                parse_loglikelihood(body, probe, proto)
            except (ApiError, Malformed) as exc:
                if isinstance(exc, ApiError) and "did not answer" in exc.what:
                    raise
                continue
            self.protocol = proto
            self.fingerprint_info["logprobs_protocol"] = proto
            return
        self.protocol = "none"
        raise ApiError(
            f"{self._describe()} returns no prompt log-probabilities (neither vLLM's "
            f"prompt_logprobs nor echo + logprobs), so the {'/'.join(scored)} modes "
            "cannot be scored",
            where="--model / --modes",
            fix="use a generation mode, or a server that returns prompt "
            "log-probabilities (vLLM: --model vllm:PATH)",
        )

    # -- requests --------------------------------------------------------------------------------
    def _completion_raw(self, prompt, protocol: str):
        kw: dict[str, Any] = {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": 1,
            "temperature": 0.0,
        }
        if protocol == "prompt_logprobs":
            kw["extra_body"] = {"prompt_logprobs": 1}
        else:
            kw.update(echo=True, logprobs=1)
        return self.client.completions.with_raw_response.create(**kw)

    def request_body(self, job: RequestJob) -> tuple[str, dict]:
        """(endpoint, keyword arguments of the SDK call) for one job — pure, for tests."""
        r = job.request
        if isinstance(r, LoglikelihoodRequest):
            return "completions", self._scoring_kw(job.tokens)
        if isinstance(r, NextTokenRequest):
            tokens, labels = job.tokens, job.labels
            assert tokens is not None and labels is not None  # set by the engine
            return "completions", self._scoring_kw([tokens + [t] for _, t in labels])
        if not isinstance(r, GenerationRequest):
            raise TypeError(f"unknown request {r!r}")
        use_chat = self.flavour == "openai" or not self.tokenizes or r.context.startswith("\x00")
        kw: dict[str, Any]
        if use_chat:
            kw = {
                "model": self.model,
                "messages": prompt_messages(r.context),
                "temperature": 0.0,
                "seed": self.cfg.seed,
            }
            kw["max_completion_tokens" if self.flavour == "openai" else "max_tokens"] = r.max_tokens
            stops = [s for s in r.stop if s]
            if stops:
                kw["stop"] = stops[:4] if self.flavour == "openai" else stops
            return "chat", kw
        kw = {
            "model": self.model,
            "prompt": job.tokens,
            "max_tokens": r.max_tokens,
            "temperature": 0.0,
            "seed": self.cfg.seed,
        }
        stops = [s for s in r.stop if s]
        if stops:
            kw["stop"] = stops
        return "completions", kw

    def _scoring_kw(self, prompt) -> dict:
        kw: dict[str, Any] = {
            "model": self.model,
            "prompt": prompt,
            "max_tokens": 1,
            "temperature": 0.0,
        }
        if self.protocol == "prompt_logprobs":
            kw["extra_body"] = {"prompt_logprobs": 1}
        else:
            kw.update(echo=True, logprobs=1)
        return kw

    def _one(self, job: RequestJob):
        endpoint, kw = self.request_body(job)
        api = self.client.chat.completions if endpoint == "chat" else self.client.completions
        r = job.request

        def call():
            body = self._http(lambda: api.with_raw_response.create(**kw))
            if isinstance(r, LoglikelihoodRequest):
                resp = parse_loglikelihood(body, job, self.protocol)
            elif isinstance(r, NextTokenRequest):
                resp = parse_next_token(body, job, self.protocol)
            elif endpoint == "chat":
                resp = parse_chat_text(body, r.stop)
            else:
                resp = parse_completion_text(body, r.stop)
            return resp, answer_meta(body)

        resp, meta = self.transport.with_retries(call, f"a {r.kind} request")
        self.usage.add(meta)
        return resp, meta

    def answer(self, jobs: list[RequestJob], done) -> dict:
        kinds = {j.request.kind for j in jobs}
        self.check_kinds(kinds)
        st = self.transport.stats
        before = (st.calls, st.retries)
        try:
            self.transport.run_all(
                jobs,
                self._one,
                lambda items: done([(j.key, j.request, resp, meta) for j, resp, meta in items]),
            )
        finally:
            self.fingerprint_info["api_usage"] = self.usage.summary()
            self.fingerprint_info["transport"] = {
                "calls": st.calls,
                "retries": st.retries,
                "faults": dict(st.faults),
            }
        return {"calls": st.calls - before[0], "retries": st.retries - before[1]}

    # -- prompts ---------------------------------------------------------------------------------
    @property
    def has_chat_template(self) -> bool:
        """Whether chat prompts can be made: the local tokenizer's template, or the API's own
        (hosted OpenAI, and servers scored without a local tokenizer: /v1/chat/completions)."""
        if self.tok is not None and self.flavour != "openai":
            return self.tok.has_chat_template
        return True

    def apply_chat_template(self, messages: list[dict], add_generation_prompt: bool = True) -> str:
        """With a local tokenizer that has a chat template: the exact templated text (scored and
        generated as a raw prompt, as the transformers backend does).  Otherwise the messages
        themselves, sent to /v1/chat/completions."""
        if self.tok is not None and self.tok.has_chat_template and self.flavour != "openai":
            return self.tok.apply_chat_template(messages, add_generation_prompt)
        return chat_marker(messages)

    # token-level helpers the engine uses when tokenizes=True
    @property
    def _tokenizer(self) -> LocalTokenizer:
        assert self.tok is not None  # called only when tokenizes (a local tokenizer is set)
        return self.tok

    def encode(self, text: str, add_special_tokens: bool | None = None) -> list[int]:
        return self._tokenizer.encode(text, add_special_tokens)

    def encode_batch(self, texts, add_special_tokens: bool | None = None):
        return self._tokenizer.encode_batch(texts, add_special_tokens)

    def decode(self, tokens) -> str:
        return self._tokenizer.decode(tokens)

    @property
    def prefix_token_id(self) -> int:
        return self._tokenizer.prefix_token_id

    def close(self) -> None:
        try:
            self.client.close()
        except Exception:  # noqa: BLE001
            pass
