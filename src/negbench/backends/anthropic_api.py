"""Anthropic's Messages API as a request-level backend (``--model anthropic:claude-…``), on the
official ``anthropic`` SDK.  Generation modes only: the API returns no log-probabilities.

The prompt is one user turn, or with ``--chat`` the system message + user turn (the system
message goes to the API's ``system`` field).  Greedy (``temperature=0``); stop strings that are
not only whitespace are sent as ``stop_sequences`` (the API refuses whitespace-only ones), and
every stop string is also applied to the text afterwards (lm-eval's post-processing), so
``"\\n"`` stops work, at the cost of generating past them.  Key: ``ANTHROPIC_API_KEY`` (or
``--api-key-env``), never written anywhere.  Same transport guarantees as the OpenAI backend.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

from negbench.backends.api_common import (
    ApiError,
    Fatal,
    Malformed,
    Retryable,
    Transport,
    TransportConfig,
    Usage,
    api_key_from_env,
    apply_stops,
    chat_marker,
    check_url,
    parse_retry_after,
    prompt_messages,
    scrub,
)
from negbench.core.backend import RequestJob
from negbench.core.requests import GenerationRequest, GenerationResponse

API_NUMERICS = "1"


def request_kwargs(model: str, req: GenerationRequest) -> dict:
    """The Messages API call for one generation request (pure)."""
    msgs = prompt_messages(req.context)
    system = "\n\n".join(m["content"] for m in msgs if m["role"] == "system")
    turns = [{"role": m["role"], "content": m["content"]} for m in msgs if m["role"] != "system"]
    kw: dict[str, Any] = {
        "model": model,
        "max_tokens": req.max_tokens,
        "messages": turns,
        "temperature": 0.0,
    }
    if system:
        kw["system"] = system
    stops = [s for s in req.stop if s and s.strip()]
    if stops:
        kw["stop_sequences"] = stops
    return kw


def parse_message(body: Any, stop) -> GenerationResponse:
    if not isinstance(body, dict) or body.get("type") != "message":
        raise Malformed("the body is not a message")
    content = body.get("content")
    if not isinstance(content, list):
        raise Malformed("message has no content list")
    parts = []
    for block in content:
        if not isinstance(block, dict):
            raise Malformed("a content block is not an object")
        if block.get("type") == "text":
            if not isinstance(block.get("text"), str):
                raise Malformed("a text block has no text")
            parts.append(block["text"])
    reason = body.get("stop_reason")
    if reason not in ("end_turn", "max_tokens", "stop_sequence", "refusal"):
        raise Malformed(f"unexpected stop_reason {reason!r}")
    text, hit = apply_stops("".join(parts), stop)
    if reason == "stop_sequence" and isinstance(body.get("stop_sequence"), str):
        why = body["stop_sequence"]
    elif reason == "max_tokens":
        why = hit
    else:
        why = hit or "eos"
    u = body.get("usage")
    usage = u if isinstance(u, dict) else {}
    n = usage.get("output_tokens")
    return GenerationResponse(text, n if isinstance(n, int) else 0, why)


def answer_meta(body: dict) -> dict:
    u = body.get("usage")
    usage = u if isinstance(u, dict) else {}
    return {
        "served_model": body.get("model"),
        "system_fingerprint": None,
        "usage": {
            "prompt_tokens": usage.get("input_tokens"),
            "completion_tokens": usage.get("output_tokens"),
        },
    }


def classify(exc: BaseException, anthropic, secrets) -> Exception:
    """An SDK exception as Retryable (429, 408, 409, 5xx incl. 529 overloaded, timeouts,
    dropped connections, unparseable answers) or Fatal (other 4xx)."""
    if isinstance(exc, anthropic.APITimeoutError):
        return Retryable("timeout", kind="timeout")
    if isinstance(exc, anthropic.APIConnectionError):
        return Retryable(f"connection failed: {scrub(str(exc), secrets)}", kind="connection")
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        msg = scrub(str(exc), secrets)[:300]
        if status in (408, 409, 429) or status >= 500:
            return Retryable(
                f"HTTP {status}: {msg}",
                parse_retry_after(getattr(exc.response, "headers", None)),
                kind="429" if status == 429 else ("5xx" if status >= 500 else str(status)),
            )
        return Fatal(f"HTTP {status}: {msg}")
    if isinstance(exc, anthropic.APIError):
        return Malformed(scrub(str(exc), secrets)[:300])
    return exc if isinstance(exc, Exception) else RuntimeError(str(exc))


class AnthropicBackend:
    level = "request"
    tokenizes = False
    max_length = 10**9  # the API truncates nothing; it refuses too-long prompts

    def __init__(
        self,
        spec: str,
        *,
        api_key_env: str | None = None,
        transport: TransportConfig | None = None,
        base_url: str | None = None,
    ):
        try:
            import anthropic
        except ModuleNotFoundError:
            raise ApiError(
                "the Anthropic backend needs the Python package 'anthropic'",
                fix="pip install 'negbench[api]'",
            ) from None
        self.anthropic = anthropic
        for name in ("httpx", "httpx2", "anthropic"):
            logging.getLogger(name).setLevel(logging.WARNING)
        self.spec = spec
        self.model = spec.split(":", 1)[1]
        if not self.model:
            raise ApiError(
                "no model name after 'anthropic:'",
                where="--model",
                fix="e.g. --model anthropic:claude-3-5-haiku-20241022",
            )
        self.name = "anthropic"
        key = api_key_from_env(api_key_env or "ANTHROPIC_API_KEY", required=True, spec=spec)
        self._secrets = [key]
        self.cfg = transport or TransportConfig()
        self.client = anthropic.Anthropic(
            api_key=key,
            max_retries=0,
            timeout=self.cfg.timeout,
            base_url=check_url(base_url) if base_url else None,
        )
        self.transport = Transport(
            self.cfg, lambda: f"the Anthropic API (model {self.model})", self._secrets
        )
        self.usage = Usage(self.model)
        fp = {"backend": "anthropic", "api": API_NUMERICS, "model": self.model}
        self.fingerprint = hashlib.sha256(json.dumps(fp, sort_keys=True).encode()).hexdigest()[:32]
        self.fingerprint_info = dict(fp, api_usage=self.usage.summary())

    def check_kinds(self, kinds: set[str]) -> None:
        scored = sorted(k for k in kinds if k != "generate")
        if scored:
            raise ApiError(
                f"the Anthropic API returns no log-probabilities, so the "
                f"{'/'.join(scored)} modes cannot be scored with {self.spec}",
                where="--model / --modes",
                fix="use a generation mode (see 'negbench tasks': modes of kind "
                "'generate'), e.g. --modes generate",
            )

    has_chat_template = True  # the Messages API takes chat messages only

    def apply_chat_template(self, messages: list[dict], add_generation_prompt: bool = True) -> str:
        return chat_marker(messages)

    def _one(self, job: RequestJob):
        kw = request_kwargs(self.model, job.request)

        def call():
            try:
                raw = self.client.messages.with_raw_response.create(**kw)
                text = raw.http_response.text
            except Exception as exc:  # noqa: BLE001 - mapped below
                raise classify(exc, self.anthropic, self._secrets) from None
            try:
                body = json.loads(text)
            except ValueError:
                raise Malformed("the body is not JSON") from None
            return parse_message(body, job.request.stop), answer_meta(body)

        resp, meta = self.transport.with_retries(call, "a generation request")
        self.usage.add(meta)
        return resp, meta

    def answer(self, jobs: list[RequestJob], done) -> dict:
        self.check_kinds({j.request.kind for j in jobs})
        st = self.transport.stats
        before = (st.calls, st.retries)
        try:
            self.transport.run_all(
                jobs, self._one, lambda items: done([(j.key, j.request, r, m) for j, r, m in items])
            )
        finally:
            self.fingerprint_info["api_usage"] = self.usage.summary()
            self.fingerprint_info["transport"] = {
                "calls": st.calls,
                "retries": st.retries,
                "faults": dict(st.faults),
            }
        return {"calls": st.calls - before[0], "retries": st.retries - before[1]}

    def close(self) -> None:
        try:
            self.client.close()
        except Exception:  # noqa: BLE001
            pass
