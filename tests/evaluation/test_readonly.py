"""Read-only is fine: a read-only cache is read, a read-only run folder is shown.

The folders are made read-only for real: a read-only bind mount inside a private mount namespace
(``unshare -rm``), which holds even for root (CI runs as root, where chmod changes nothing).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def _can_mount_readonly() -> bool:
    if not shutil.which("unshare"):
        return False
    r = subprocess.run(
        [
            "unshare",
            "-rm",
            "sh",
            "-c",
            "mount --bind / / 2>/dev/null; "
            "mount --bind /tmp /tmp && mount -o remount,ro,bind /tmp /tmp && "
            "! touch /tmp/.negbench-ro-probe 2>/dev/null",
        ],
        capture_output=True,
    )
    return r.returncode == 0


pytestmark = pytest.mark.skipif(
    not _can_mount_readonly(), reason="needs unshare -rm (a private read-only bind mount)"
)


def negbench_readonly(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """``negbench ARGS`` with ``folder`` mounted read-only."""
    script = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" "$1" && shift && exec "$@"'
    return subprocess.run(
        [
            "unshare",
            "-rm",
            "sh",
            "-c",
            script,
            "sh",
            str(folder),
            sys.executable,
            "-m",
            "negbench.cli",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )


def negbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "negbench.cli", *args], capture_output=True, text=True, timeout=600
    )


def test_readonly_cache_is_read(tiny_llama, tmp_path):
    ro = tmp_path / "ro"
    cache = ro / "responses.sqlite"
    base = ["run", "--model", tiny_llama, "--modes", "cloze", "--cache", str(cache), "--quiet"]
    r = negbench(*base, "--limit", "3", "--output", str(tmp_path / "first"))
    assert r.returncode == 0, r.stderr
    files = {p.name: p.read_bytes() for p in ro.iterdir()}

    r = negbench_readonly(ro, *base, "--limit", "3", "--output", str(tmp_path / "again"))
    assert r.returncode == 0, r.stderr
    assert "read-only" in r.stderr
    res = json.loads((tmp_path / "again" / "results.json").read_text())
    assert res["engine"]["cached"] == res["engine"]["unique"] > 0  # every answer was read
    first = json.loads((tmp_path / "first" / "results.json").read_text())
    assert res["units"] == first["units"]

    r = negbench_readonly(ro, *base, "--limit", "4", "--output", str(tmp_path / "more"))
    assert r.returncode == 0, r.stderr
    res = json.loads((tmp_path / "more" / "results.json").read_text())
    assert res["engine"]["computed"] > 0 and res["engine"]["cached"] > 0
    assert "were not saved" in r.stderr
    assert {p.name: p.read_bytes() for p in ro.iterdir()} == files  # nothing was written


def test_readonly_run_folder_is_shown_not_rescored(tiny_llama, tmp_path):
    run = tmp_path / "run"
    r = negbench(
        "run",
        "--model",
        tiny_llama,
        "--modes",
        "cloze",
        "--limit",
        "3",
        "--output",
        str(run),
        "--no-cache",
        "--quiet",
    )
    assert r.returncode == 0, r.stderr
    r = negbench_readonly(run, "show", str(run))
    assert r.returncode == 0, r.stderr
    assert "negation-mini" in r.stdout and "acc" in r.stdout
    r = negbench_readonly(run, "rescore", str(run))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "cannot write" in r.stderr and "Read-only file system" in r.stderr
    r = negbench_readonly(
        tmp_path,
        "run",
        "--model",
        tiny_llama,
        "--modes",
        "cloze",
        "--limit",
        "3",
        "--output",
        str(tmp_path / "new"),
        "--no-cache",
        "--quiet",
    )
    assert r.returncode == 2 and "not writable" in r.stderr and "loading" not in r.stderr
