"""The Hugging Face hub, asked in one place: whether it can be reached (one probe per process),
the switch to its offline mode, and what its local caches hold.

Models (:mod:`negbench.backends.sources`), benchmark data (:mod:`negbench.tasks.data_source`)
and ``negbench lm-eval`` all ask here, so a process probes the hub once and, when it cannot be
reached, goes offline once: huggingface_hub, transformers and datasets then read only their
caches and fail at once on a miss, where they would otherwise retry each file for about half a
minute.  Nothing here imports the rest of negbench.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

log = logging.getLogger("negbench")
#: Seconds the one probe of the hub may take.
PROBE_TIMEOUT = 5.0
_state: dict[str, str | None] = {}  # endpoint -> why it cannot be reached (None: it can)
_OFF = ("", "0", "false", "no", "off")


def _env_offline() -> str | None:
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "0").strip().lower() not in _OFF:
            return f"{var} is set"
    return None


def endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def unreachable() -> str | None:
    """Why the hub cannot be used now, or None when it can: an offline variable is set
    (``HF_HUB_OFFLINE``, ``HF_DATASETS_OFFLINE``, ``TRANSFORMERS_OFFLINE``), or one HEAD request
    to the endpoint (``HF_ENDPOINT``, through the proxies huggingface_hub uses, else plain
    urllib) failed within :data:`PROBE_TIMEOUT` seconds.  Asked once per process and endpoint."""
    ep = endpoint()
    if ep in _state and _state[ep] is not None:  # probed: the reason found then
        return _state[ep]
    why = _env_offline()
    if why:
        return why
    if ep not in _state:
        try:
            try:
                from huggingface_hub.utils import get_session
            except ImportError:  # no huggingface_hub: the standard library
                import urllib.request

                urllib.request.urlopen(
                    urllib.request.Request(ep, method="HEAD"), timeout=PROBE_TIMEOUT
                ).close()
            else:
                get_session().head(ep, timeout=PROBE_TIMEOUT)
            _state[ep] = None
        except Exception as exc:  # DNS, refused, timeout, proxy, TLS: all "unreachable"
            text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            _state[ep] = f"{ep}: {text}"
    return _state[ep]


def reachable() -> bool:
    return unreachable() is None


def forget() -> None:
    """Forget the probe's answer (tests; a process whose network changed)."""
    _state.clear()


def use_offline() -> None:
    """Put this process and its children in the hub's offline mode."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    consts = sys.modules.get("huggingface_hub.constants")
    if consts is not None:
        setattr(consts, "HF_HUB_OFFLINE", True)
    cfg = sys.modules.get("datasets.config")  # datasets reads the variable when imported
    if cfg is not None:
        setattr(cfg, "HF_HUB_OFFLINE", True)
        setattr(cfg, "HF_DATASETS_OFFLINE", True)


def offline_when_unreachable(note: str | None = None) -> str | None:
    """:func:`use_offline` when the hub cannot be reached; returns why, or None when it can.
    Called before anything reads from the hub.  ``note``: what the user is told on stderr when
    the switch happens (e.g. that a cached copy is used)."""
    why = unreachable()
    if why is not None and os.environ.get("HF_HUB_OFFLINE", "0") in _OFF:
        if note:
            log.warning("note: the Hugging Face hub cannot be reached (%s): %s", why, note)
        use_offline()
    elif why is not None:
        use_offline()  # also set datasets' flags, imported or not
    return why


def data_fix(local: str) -> str:
    """The fix of a data set that could not be loaded from the hub: ``local`` (e.g. "use a local
    folder of the release"), and why the hub did not serve it."""
    why = unreachable()
    if why is None:
        return f"check the id and the network, or {local}"
    return (
        f"the Hugging Face hub is not available ({why}) and its local cache does not hold "
        f"this data set: {local}, or load it once where the hub is reachable (datasets "
        "keeps a copy in its cache)"
    )


def cache_dir() -> str:
    """The hub's model and data set cache (``HF_HUB_CACHE``, under ``HF_HOME``)."""
    from huggingface_hub import constants

    return constants.HF_HUB_CACHE


def snapshot(repo_id: str, revision: str | None = None, repo_type: str = "model") -> Path | None:
    """The local hub cache's snapshot folder of ``repo_id`` at ``revision`` (default: main), or
    None when it holds none; nothing is downloaded."""
    from huggingface_hub import snapshot_download

    try:
        return Path(
            snapshot_download(
                repo_id, revision=revision, repo_type=repo_type, local_files_only=True
            )
        )
    except Exception:  # not cached (every failure means the same here)
        return None


def cached(repo_id: str, revision: str | None = None, repo_type: str = "model") -> bool:
    """The local hub cache holds a snapshot of ``repo_id`` at ``revision`` (default: main)."""
    return snapshot(repo_id, revision, repo_type) is not None


def dataset_cached(repo_id: str) -> bool:
    """A copy of the hub data set ``repo_id`` is on this machine: in the hub cache or in
    datasets' own cache (``HF_DATASETS_CACHE``) — a cheap look at folder names, nothing loaded."""
    home = os.environ.get("HF_HOME") or os.path.join(
        os.path.expanduser("~"), ".cache", "huggingface"
    )
    hub = os.environ.get("HF_HUB_CACHE") or os.path.join(home, "hub")
    ds = os.environ.get("HF_DATASETS_CACHE") or os.path.join(home, "datasets")
    owner, _, name = repo_id.partition("/")
    if os.path.isdir(os.path.join(hub, f"datasets--{owner}--{name}")):
        return True
    return os.path.isdir(os.path.join(ds, f"{owner}___{name}".lower())) or os.path.isdir(
        os.path.join(ds, f"{owner}___{name}")
    )
