"""Where a benchmark's data comes from: one resolver, one order, used by every benchmark.

The first of these that applies:

1. the benchmark's own variable (``$NEGBENCH_NUBENCH``, ``$NEGBENCH_CONDAQA`` …), as given: a
   folder, a file, or a Hugging Face id ``hf:owner/name``;
2. ``$NEGBENCH_DATA/<folder>`` when ``$NEGBENCH_DATA`` is set (a tree of releases);
3. ``../shared/data/<folder>`` next to the working directory, when it exists;
4. ``hf:<hub id>`` when the benchmark is published on the Hugging Face hub and the hub can be
   reached (``$HF_HUB_OFFLINE`` unset, its host answering within a few seconds).

When none applies, the answer is the ``../shared/data`` path, so the loader's error names the
place it looked and the variables that point elsewhere — at once, also offline.  A task's ``source=`` option (or a
loader's ``source`` argument) bypasses all of this.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path


def shared_data(sub: str) -> Path:
    """``$NEGBENCH_DATA/<sub>`` when that variable is set, else ``../shared/data/<sub>``
    relative to the current working directory (steps 2 and 3)."""
    env = os.environ.get("NEGBENCH_DATA")
    return Path(env) / sub if env else Path.cwd().parent / "shared" / "data" / sub


@lru_cache(maxsize=1)
def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face hub can be asked (checked once per process): not when
    ``$HF_HUB_OFFLINE`` / ``$HF_DATASETS_OFFLINE`` is set, nor when its host does not answer."""
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0") or \
            os.environ.get("HF_DATASETS_OFFLINE", "0") not in ("", "0"):
        return False
    import socket
    from urllib.parse import urlparse
    host = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co").hostname
    try:
        socket.create_connection((host or "huggingface.co", 443), timeout=timeout).close()
    except OSError:
        return False
    return True


@dataclass(frozen=True)
class DataSource:
    """Where one benchmark's release is looked for."""

    name: str                       # for messages: "Thunder-NUBench"
    env: str | None                 # its own variable, e.g. NEGBENCH_NUBENCH
    folder: str | None              # its place under $NEGBENCH_DATA / ../shared/data
    hub: str | None = None          # its Hugging Face id, when it is published there
    env_folder_only: bool = False   # the variable counts only when it names a folder

    def local(self) -> Path | None:
        """Steps 2-3: the release's place in the data tree (None without a folder)."""
        return shared_data(self.folder) if self.folder else None

    def resolve(self) -> str:
        """The source in the documented order (see the module docstring)."""
        env = os.environ.get(self.env) if self.env else None
        if env and (not self.env_folder_only or Path(env).is_dir()):
            return env
        local = self.local()
        if local is not None and (os.environ.get("NEGBENCH_DATA") or local.exists()):
            return str(local)
        if self.hub and (local is None or hub_reachable()):
            return f"hf:{self.hub}"
        return str(local)

    def hint(self) -> str:
        """The places a user can point at the data, for error messages."""
        out = []
        if self.env:
            out.append(f"${self.env}")
        if self.folder:
            out.append(f"$NEGBENCH_DATA/{self.folder}")
        if self.hub:
            out.append(f"hf:{self.hub}")
        return ", ".join(out)
