"""The check every user-mistake test makes: exit 2, one error message naming what is wrong, no
traceback, no model loaded, nothing written."""

from __future__ import annotations

from pathlib import Path


def assert_one_clear_error(code: int, err: str, words, out: Path) -> None:
    assert code == 2, err
    assert err.count("error:") == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, f"{w!r} not in {err}"
    assert "loading " not in err, "the model was loaded before the mistake was found"
    assert not out.exists(), "something was written"
