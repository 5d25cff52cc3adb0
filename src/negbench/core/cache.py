"""On-disk response cache: every answered request, keyed by model fingerprint + exact request.

SQLite in WAL mode gives atomic commits, so a run killed at any moment leaves every batch that
finished before the kill on disk and nothing half-written.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path

from negbench.errors import OutputError
from negbench.core.requests import Response, response_from_json, response_to_json

log = logging.getLogger(__name__)
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, kind TEXT NOT NULL, "
    "model TEXT NOT NULL, value TEXT NOT NULL, created REAL NOT NULL)"
)


class ResponseCache:
    """``readonly``: the cache could only be opened for reading (a read-only file, folder or
    file system): answers are read from it, new ones are not saved, and the run says so."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.readonly = False
        if self.path.is_dir():
            raise OutputError(
                f"the response cache {self.path} is a folder, not a file",
                where="--cache",
                fix="pass --cache PATH/responses.sqlite",
            )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(self.path), timeout=60)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute(_SCHEMA)
            self.db.commit()
        except (OSError, sqlite3.Error) as exc:
            if isinstance(exc, sqlite3.DatabaseError) and "not a database" in str(exc):
                raise OutputError(
                    f"the response cache {self.path} is not a negbench cache "
                    "(not an SQLite database)",
                    where="--cache",
                    fix="delete or move that file, or pass --cache PATH elsewhere, or --no-cache",
                ) from None
            if not self.path.is_file():
                raise OutputError(
                    f"cannot create the response cache {self.path}: {exc}",
                    where="--cache",
                    fix="pass --cache PATH in a writable folder, or --no-cache",
                ) from None
            self.db = self._open_readonly()
            self.readonly = True
            log.warning(
                "the response cache %s is read-only: cached answers are used, new "
                "answers are not saved",
                self.path,
            )

    def _open_readonly(self) -> sqlite3.Connection:
        from urllib.parse import quote

        uri = "file:" + quote(str(self.path.resolve()))
        last: Exception | None = None
        # mode=ro sees a write-ahead log left by a killed run; immutable=1 works where SQLite
        # cannot even create its lock files (a read-only folder)
        for opts in ("?mode=ro", "?mode=ro&immutable=1"):
            try:
                db = sqlite3.connect(uri + opts, uri=True, timeout=60)
                db.execute("SELECT COUNT(*) FROM responses").fetchone()
                return db
            except sqlite3.Error as exc:
                last = exc
        raise OutputError(
            f"cannot read the response cache {self.path}: {last}",
            where="--cache",
            fix="pass --cache PATH elsewhere, or --no-cache",
        )

    def get_many(self, keys: list[str]) -> dict[str, Response]:
        found: dict[str, Response] = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            q = "SELECT key, kind, value FROM responses WHERE key IN (%s)" % ",".join(
                "?" * len(chunk)
            )
            try:
                rows = self.db.execute(q, chunk).fetchall()
            except sqlite3.Error as exc:
                raise OutputError(
                    f"cannot read the response cache {self.path}: {exc}",
                    where="--cache",
                    fix="the file is damaged: delete it (answers "
                    "are recomputed) or pass --cache PATH elsewhere",
                ) from None
            for key, kind, value in rows:
                try:
                    found[key] = response_from_json(kind, value)
                except (ValueError, KeyError, TypeError):
                    log.warning("a damaged answer in %s is recomputed", self.path)
        return found

    def put_many(self, items: list[tuple[str, str, str, Response]]) -> None:
        """items: (key, kind, model fingerprint, response); committed atomically together."""
        if not items or self.readonly:
            return
        now = time.time()
        try:
            with self.db:
                self.db.executemany(
                    "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)",
                    [(k, kind, model, response_to_json(r), now) for k, kind, model, r in items],
                )
        except sqlite3.Error as exc:
            raise OutputError(
                f"cannot write the response cache {self.path}: {exc}",
                fix="free disk space or pass --cache PATH elsewhere",
            ) from exc

    def count(self, model: str | None = None) -> int:
        if model is None:
            return self.db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        return self.db.execute("SELECT COUNT(*) FROM responses WHERE model=?", (model,)).fetchone()[
            0
        ]

    def keys(self) -> set[str]:
        return {k for (k,) in self.db.execute("SELECT key FROM responses")}

    def close(self) -> None:
        self.db.close()
