"""Run folders: atomic files, per-sample records, results with full provenance.

Layout of a run folder::

    config.json            what was asked (model, tasks, modes, shots, seeds, engine settings)
    samples/<unit>.jsonl   one record per scored item (prompt, choices, scores, prediction, gold…)
    results.json           metrics per unit + provenance (versions, git commit, data fingerprints)

Every file is written to a temporary name and renamed into place, so a crash never leaves a
truncated file that a rerun would trip over; files and folders get the modes the user's umask
gives (0644 / 0755 under umask 022), so a teammate can read a shared run.  Every JSON file is
strict JSON (RFC 8259): a NaN or infinite number is written as ``null``, which any parser reads
(``JSON.parse``, ``jq``, pandas); readers of metrics take ``null`` as NaN (:func:`nan_for_null`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

from negbench.errors import DataError, OutputError
from negbench.files import (
    atomic_write_chunks,
    atomic_write_text,
    iter_records,
    read_jsonl,
    write_json,
    write_jsonl,
)
from negbench.scoring.runs import metrics_as_floats


class Samples:
    """A unit's saved samples, read again on each iteration (one record at a time): metrics of a
    381k-sentence unit are computed without holding its records."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def __iter__(self) -> Iterator[dict]:
        return iter_records(self.path)


class RunStore:
    """One run folder."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = self.root / f".write-test-{os.getpid()}"
            probe.write_text("ok")
            probe.unlink()
        except OSError as exc:
            raise OutputError(
                f"cannot write into the run folder {self.root} ({exc.strerror})",
                where=str(self.root),
                fix="choose a folder you can write to "
                "(a read-only run can still be shown, reported and compared)",
            ) from None

    def samples_path(self, unit: str) -> Path:
        return self.root / "samples" / f"{unit}.jsonl"

    def write_samples(self, unit: str, records: list[dict]) -> None:
        write_jsonl(self.samples_path(unit), records)

    def read_samples(self, unit: str) -> list[dict]:
        return read_jsonl(self.samples_path(unit))

    def samples(self, unit: str) -> Samples:
        """The unit's samples as a re-iterable stream (not loaded)."""
        return Samples(self.samples_path(unit))

    def write_samples_from_shards(self, unit: str, parts: list[tuple[int, int, int]]) -> None:
        """samples/<unit>.jsonl from the saved shards: lines ``[start, stop)`` of shard ``n`` for
        each ``(n, start, stop)`` in order, copied as written (never parsed or held whole)."""

        def lines() -> Iterator[str]:
            for n, start, stop in parts:
                with open(self._shard(n)[0], "rb") as f:  # lines end at b"\n" only
                    for i, line in enumerate(f):
                        if i >= stop:
                            break
                        if i >= start:
                            yield line.decode("utf-8")

        atomic_write_chunks(self.samples_path(unit), lines())

    def write_config(self, config: dict) -> None:
        write_json(self.root / "config.json", config)

    def write_results(self, results: dict) -> None:
        write_json(self.root / "results.json", results)

    def write_text(self, name: str, text: str) -> None:
        atomic_write_text(self.root / name, text)

    def read_results(self) -> dict:
        return load_results(self.root)

    # shards of a run in progress: records + the digest of the requests they answer
    def _shard(self, n: int) -> tuple[Path, Path]:
        d = self.root / "samples" / ".shards"
        return d / f"{n:05d}.jsonl", d / f"{n:05d}.digest"

    def write_shard(self, n: int, digest: str, records: list[dict]) -> None:
        data, key = self._shard(n)
        write_jsonl(data, records)
        atomic_write_text(key, digest)  # written last: its presence marks completion

    def has_shard(self, n: int, digest: str, count: int) -> bool:
        """Shard ``n`` is saved, answers exactly these requests (``digest``) and holds ``count``
        readable records (checked one line at a time, nothing kept)."""
        data, key = self._shard(n)
        try:
            if key.read_text(encoding="utf-8") != digest:
                return False
            return sum(1 for _ in iter_records(data)) == count
        except (OSError, ValueError, DataError):
            return False

    def clear_shards(self) -> None:
        import shutil

        shutil.rmtree(self.root / "samples" / ".shards", ignore_errors=True)


def load_results(run: str | Path) -> dict:
    """results.json of a finished run folder (read-only: creates nothing)."""
    root = Path(run)
    p = root / "results.json"
    if not root.is_dir():
        raise OutputError(
            f"run folder not found: {root}",
            where=str(root),
            fix="give a folder that a finished 'negbench run' wrote (--output)",
        )
    if not p.is_file():
        partial = staging_path(root)
        fix = (
            "this run has not finished: rerun its command to resume it"
            if partial.is_dir()
            else "give a folder that a finished 'negbench run' wrote (--output)"
        )
        raise OutputError(f"no results.json in {root}", where=str(root), fix=fix)
    from negbench.records import read_text

    try:
        res = json.loads(read_text(p))
    except json.JSONDecodeError as exc:
        raise DataError(
            f"results.json is damaged ({exc.msg} at line {exc.lineno}, column {exc.colno})",
            path=str(p),
            fix="rerun the command that made this run (answers come from the cache), "
            "or 'negbench rescore' if its samples are intact",
        ) from None
    missing = [
        k for k in ("units", "groups", "config") if not isinstance(res, dict) or k not in res
    ]
    if missing:
        raise DataError(
            "results.json is not a negbench results file (no "
            + ", ".join(repr(k) for k in missing)
            + ")",
            path=str(p),
            fix="give a folder that a finished 'negbench run' wrote",
        )
    return metrics_as_floats(res)


# -- run folders that appear whole ----------------------------------------------------------------
def staging_path(final: str | Path) -> Path:
    """Where a run lives until it finishes: a hidden sibling of its folder.  A killed run leaves
    its finished shards there, and the same command resumes from them."""
    final = Path(final)
    return final.parent / f".{final.name}.partial"


class RunTarget:
    """The output of one ``negbench run``: checked before anything is loaded or written, filled
    in a staging folder, and moved into place only when the run has finished.

    * a new folder, or an empty one: the run goes there;
    * a finished run with the same configuration: it is redone (answers come from the cache) and
      replaced; with a different configuration it is refused unless ``overwrite``;
    * anything else that is not a negbench run is refused unless ``overwrite``.
    """

    def __init__(self, final: str | Path, identity: dict, overwrite: bool = False):
        self.final = Path(final)
        self.staging = staging_path(self.final)
        self.identity = identity
        self.replaces = False
        f = self.final
        if f.exists() and not f.is_dir():
            raise OutputError(
                f"--output {f} is a file, not a folder",
                where="--output",
                fix="choose another --output",
            )
        if f.is_dir() and any(f.iterdir()):
            if (f / "results.json").is_file():
                old = self._identity_of(f)
                if old != identity and not overwrite:
                    diff = sorted(
                        k
                        for k in set(old or {}) | set(identity)
                        if (old or {}).get(k) != identity.get(k)
                    )
                    raise OutputError(
                        f"{f} holds a finished run of a different configuration"
                        + (f" (differs in: {', '.join(diff)})" if old else ""),
                        where="--output",
                        fix="choose another --output, or pass --overwrite to replace that run",
                    )
            elif not overwrite:
                raise OutputError(
                    f"{f} is not empty and holds no finished negbench run",
                    where="--output",
                    fix="choose another --output, or pass --overwrite to replace it",
                )
            self.replaces = True
        probe = f.absolute().parent
        while not probe.exists():
            probe = probe.parent
        if not probe.is_dir():
            raise OutputError(
                f"output folder is not writable: {probe} is a file, not a folder",
                where="--output",
                fix="choose another --output",
            )
        if not os.access(probe, os.W_OK):
            raise OutputError(
                f"output folder is not writable: {probe} is read-only",
                where="--output",
                fix="choose a folder you can write to",
            )
        if self.replaces and not os.access(f, os.W_OK):
            raise OutputError(
                f"the run folder {f} is read-only", where="--output", fix="choose another --output"
            )
        self.resumes = (self.staging / "config.json").is_file() and self._identity_of(
            self.staging
        ) == identity

    @staticmethod
    def _identity_of(folder: Path) -> dict | None:
        try:
            cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            return cfg.get("identity")
        except (OSError, ValueError, AttributeError):
            return None

    def open(self) -> "RunStore":
        """The staging folder's store (resumed when it holds the same run, else fresh)."""
        import shutil

        if not self.resumes:
            shutil.rmtree(self.staging, ignore_errors=True)
        return RunStore(self.staging)

    def commit(self) -> None:
        """Move the finished run into place (replacing an earlier one of the same folder)."""
        import shutil

        old = None
        if self.final.exists():
            old = self.final.parent / f".{self.final.name}.old-{os.getpid()}"
            os.replace(self.final, old)
        os.replace(self.staging, self.final)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    def abandon(self) -> None:
        """After a failure: keep the staging folder only when it holds finished shards."""
        import shutil

        if not any((self.staging / "samples" / ".shards").glob("*.digest")):
            shutil.rmtree(self.staging, ignore_errors=True)
