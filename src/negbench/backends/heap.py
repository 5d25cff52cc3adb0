"""Give freed heap memory back to the operating system (glibc ``malloc_trim``).

Why: loading a tokenizer leaves hundreds of megabytes freed but still mapped in glibc's heap —
Gemma 3's ``tokenizer.json`` (262k words, 515k merges) is parsed into temporary strings that take
~290 MB at peak and ~45 MB once built — and glibc keeps freed small blocks for reuse instead of
returning them, so the process's resident size keeps the load's peak for the whole run.
``malloc_trim(0)`` releases every free page.  A no-op where the C library is not glibc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys


@functools.lru_cache(maxsize=1)
def _malloc_trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):  # musl and others have no malloc_trim
        return None


def trim() -> bool:
    """Return free heap pages to the OS; True where that was possible."""
    fn = _malloc_trim()
    if fn is None:
        return False
    fn(0)
    return True
