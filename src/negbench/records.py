"""Reading data files into validated records, with errors that name file, record and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from negbench.errors import DataError


def iter_jsonl(
    path: str | Path,
    *,
    missing: str = "data file not found",
    missing_fix: str = "check the path (data lives in ../shared/data or the official source)",
    fix: str = "each line must be one JSON object",
) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-empty line; a bad line raises DataError.

    A leading UTF-8 byte-order mark (spreadsheet exports) is ignored. ``missing`` and the two
    fixes let callers say what the file is for in their errors.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(missing, path=str(path), fix=missing_fix)
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise DataError(
            f"cannot read the file ({exc.strerror})", path=str(path), fix="check its permissions"
        ) from None
    with f:
        for n, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(
                    f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})",
                    path=str(path),
                    record=f"line {n}",
                    fix="save the file as UTF-8 (e.g. iconv -f LATIN1 -t UTF-8)",
                ) from None
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(
                    f"invalid JSON ({exc.msg} at column {exc.colno})",
                    path=str(path),
                    record=f"line {n}",
                    fix=fix,
                ) from None
            if not isinstance(obj, dict):
                raise DataError(
                    "a line is not a JSON object", path=str(path), record=f"line {n}", fix=fix
                )
            yield n, obj


def field(
    obj: dict,
    name: str,
    typ: type | tuple[type, ...],
    *,
    path: str,
    record: Any,
    optional: bool = False,
    nonempty: bool = True,
) -> Any:
    """Fetch ``obj[name]`` checking presence, type and (for strings) non-emptiness."""
    if name not in obj or obj[name] is None:
        if optional:
            return None
        raise DataError("missing field", path=path, record=record, field=name)
    v = obj[name]
    types = typ if isinstance(typ, tuple) else (typ,)
    if not isinstance(v, typ) or (isinstance(v, bool) and bool not in types):
        names = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
        raise DataError(
            f"expected {names}, got {type(v).__name__} {v!r:.60}",
            path=path,
            record=record,
            field=name,
        )
    if nonempty and isinstance(v, str) and not v.strip():
        if optional:
            return None
        raise DataError("empty string", path=path, record=record, field=name)
    return v


def read_text(path: str | Path, *, encoding: str = "utf-8") -> str:
    """A data file's text; bytes that are not UTF-8 give a DataError naming the line."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DataError("data file not found", path=str(path), fix="check the path") from None
    except OSError as exc:
        raise DataError(
            f"cannot read the file ({exc.strerror})", path=str(path), fix="check its permissions"
        ) from None
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DataError(
            f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {col})",
            path=str(path),
            record=f"line {line}",
            fix="save the file as UTF-8 (e.g. iconv -f LATIN1 -t UTF-8)",
        ) from None
