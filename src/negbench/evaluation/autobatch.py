"""``--batch-size auto``: on a GPU, the largest forward call that fits, found once per model,
device and dtype and remembered; on a CPU, 32 rows (larger calls only add memory there).

The probe forwards synthetic batches of masked rows (the engine's most memory-hungry form: a
mask per row, one scored position in eight) of ``PROBE_ROW`` tokens, doubling the rows from the
backend's default token budget until a call runs out of memory or ``MAX_TOKENS`` is reached;
the last size that fitted, less a margin, becomes the engine's ``max_batch_tokens`` and the
row count is left to that bound.  The answer is kept in ``$NEGBENCH_CACHE/batch_sizes.json``
under the model's fingerprint, the device's name and memory, and the dtype, so the next run on
the same model and device starts at once.  A call that still runs out of memory is split and
retried by the engine (:mod:`negbench.core.oom`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np

from negbench.core.backend import PackedBatch
from negbench.core.oom import free_device_memory, is_oom

#: Rows per call on a CPU, and the cap on rows per call under auto (the token bound decides).
CPU_BATCH, AUTO_ROWS = 32, 4096
#: Tokens per probe row, the largest call tried, and the share of the largest fitting call used.
PROBE_ROW, MAX_TOKENS, MARGIN = 2048, 1 << 20, 0.8


def store_path() -> Path:
    from negbench.backends.sources import cache_root

    return cache_root() / "batch_sizes.json"


def device_key(backend) -> str:
    """The model fingerprint, the device (name and memory) and the dtype."""
    device = str(getattr(backend, "device", "cpu"))
    name = device
    torch = getattr(backend, "torch", None)
    if torch is not None and device.startswith("cuda"):
        props = torch.cuda.get_device_properties(torch.device(device))
        name = f"{props.name}:{props.total_memory}"
    dtype = str(getattr(backend, "dtype", ""))
    return f"{getattr(backend, 'fingerprint', '?')}|{name}|{dtype}"


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _write(path: Path, data: dict[str, Any]) -> None:
    from negbench.files import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def synthetic_batch(rows: int, length: int, vocab: int = 1000) -> PackedBatch:
    """``rows`` masked rows of ``length`` tokens (causal through the mask), one position in
    eight scored."""
    ids = (np.arange(rows * length, dtype=np.int64).reshape(rows, length) * 7919) % vocab
    pos = np.tile(np.arange(length, dtype=np.int64), (rows, 1))
    end = np.full((rows, length), length - 1, dtype=np.int64)
    cols = np.arange(length - 1, -1, -8, dtype=np.int64)[::-1]
    q_row = np.repeat(np.arange(rows, dtype=np.int64), len(cols))
    q_col = np.tile(cols, rows)
    t_query = np.arange(len(q_row), dtype=np.int64)
    return PackedBatch(
        ids,
        pos,
        end,
        np.full(rows, length, dtype=np.int64),
        q_row,
        q_col,
        t_query,
        ids[q_row, q_col],
    )


def find_batch_tokens(backend, start: int, row: int, cap: int = MAX_TOKENS) -> int:
    """The largest call (tokens, a power of two times ``start``) that ``backend`` forwards
    without running out of memory, at most ``cap``."""
    forward = backend.forward_batch
    stage = getattr(backend, "stage", None)
    fits = 0
    tokens = max(row, start)
    while tokens <= cap:
        batch = synthetic_batch(max(1, tokens // row), row)
        try:
            pending, _ = forward(batch if stage is None else stage(batch), None, 0, False)
            pending.result()
        except Exception as exc:
            if not is_oom(exc):
                raise
            free_device_memory()
            break
        fits = tokens
        tokens *= 2
    free_device_memory()
    return fits


def resolve_batch(
    backend, spec=None, *, log: Callable[[str], None] = print, path: Path | None = None
) -> dict[str, Any]:
    """The engine options ``--batch-size auto`` stands for on ``backend``: on a CPU (or an API)
    ``batch_size`` 32; on a GPU ``batch_size`` :data:`AUTO_ROWS` and ``max_batch_tokens`` from
    the remembered (or now measured) largest call that fits."""
    device = str(getattr(backend, "device", "cpu"))
    if (
        getattr(backend, "level", None) == "request"
        or not device.startswith("cuda")
        or not hasattr(backend, "forward_batch")
    ):
        return {"batch_size": CPU_BATCH}
    path = path or Path(os.environ.get("NEGBENCH_BATCH_SIZES", "") or store_path())
    key = device_key(backend)
    known = _read(path)
    found = known.get(key)
    if not isinstance(found, dict) or not isinstance(found.get("tokens"), int):
        row = min(PROBE_ROW, int(getattr(backend, "max_length", None) or PROBE_ROW))
        start = int(getattr(backend, "batch_tokens", 32768))
        log(f"batch size auto: finding the largest forward call that fits on {device} …")
        tokens = find_batch_tokens(backend, start, row)
        if tokens == 0:
            log("batch size auto: even the smallest probe ran out of memory; using 1 row")
            return {"batch_size": 1}
        found = {"tokens": tokens, "row": row}
        known[key] = found
        try:
            _write(path, known)
        except OSError:
            pass  # a read-only cache: measured again next time
    tokens = int(found["tokens"] * MARGIN)
    log(
        f"batch size auto: up to {tokens:,} tokens per forward call "
        f"(largest that fitted: {found['tokens']:,}; remembered in {path})"
    )
    return {"batch_size": AUTO_ROWS, "max_batch_tokens": tokens}
