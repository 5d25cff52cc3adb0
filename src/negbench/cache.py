"""On-disk response cache: every answered request, keyed by model fingerprint + exact request.

SQLite in WAL mode gives atomic commits, so a run killed at any moment leaves every batch that
finished before the kill on disk and nothing half-written.
"""
from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from negbench.errors import OutputError
from negbench.requests import Response, response_from_json, response_to_json


class ResponseCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(self.path), timeout=60)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, "
                            "kind TEXT NOT NULL, model TEXT NOT NULL, value TEXT NOT NULL, "
                            "created REAL NOT NULL)")
            self.db.commit()
        except (OSError, sqlite3.Error) as exc:
            raise OutputError(f"cannot open the response cache {self.path}: {exc}",
                              fix="pass --cache PATH in a writable folder, or --no-cache") from exc

    def get_many(self, keys: list[str]) -> dict[str, Response]:
        found: dict[str, Response] = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            q = "SELECT key, kind, value FROM responses WHERE key IN (%s)" % ",".join("?" * len(chunk))
            for key, kind, value in self.db.execute(q, chunk):
                found[key] = response_from_json(kind, value)
        return found

    def put_many(self, items: list[tuple[str, str, str, Response]]) -> None:
        """items: (key, kind, model fingerprint, response); committed atomically together."""
        if not items:
            return
        now = time.time()
        try:
            with self.db:
                self.db.executemany(
                    "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)",
                    [(k, kind, model, response_to_json(r), now) for k, kind, model, r in items])
        except sqlite3.Error as exc:
            raise OutputError(f"cannot write the response cache {self.path}: {exc}",
                              fix="free disk space or pass --cache PATH elsewhere") from exc

    def count(self, model: str | None = None) -> int:
        if model is None:
            return self.db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        return self.db.execute("SELECT COUNT(*) FROM responses WHERE model=?", (model,)).fetchone()[0]

    def keys(self) -> set[str]:
        return {k for (k,) in self.db.execute("SELECT key FROM responses")}

    def close(self) -> None:
        self.db.close()
