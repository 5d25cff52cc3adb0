"""A page as a reader at a laptop's width sees it, measured in headless Chromium (Debian's
``chromium``; tests that need it are skipped when it is not installed): for every table its
scroll box's width and the table's, after the page's own script ran."""

from __future__ import annotations

import html as _html
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

CHROMIUM = (
    shutil.which("chromium")
    or (Path("/usr/bin/chromium").is_file() and "/usr/bin/chromium")
    or None
)
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--virtual-time-budget=8000",
]
#: Added to a copy of the page: each table, the box that holds it, and how wide both are.
PROBE = r"""<script>(function(){
const out=Array.from(document.querySelectorAll('#nb-main table')).map(t=>{
  const b=t.parentElement, r=t.getBoundingClientRect(), q=b.getBoundingClientRect();
  return {id:t.id, table:r.width, box:b.clientWidth, scroll:b.scrollWidth, right:r.right,
          boxRight:q.right, boxed:b.classList.contains('nb-scroll')};});
document.body.setAttribute('data-tables', JSON.stringify({inner:window.innerWidth,
  doc:document.documentElement.scrollWidth, tables:out}));
})();</script>"""


@dataclass(frozen=True)
class TableBox:
    id: str
    table: float  # the table's rendered width (px)
    box: int  # its box's visible width
    scroll: int  # its box's scroll width (> box: the table scrolls sideways)
    boxed: bool

    @property
    def fits(self) -> bool:
        return self.scroll <= self.box + 1 and self.table <= self.box + 1


def table_boxes(
    page: Path, tmp: Path, width: int = 1366, height: int = 900
) -> tuple[dict, list[TableBox]]:
    """Open a copy of ``page`` at ``width`` × ``height``: ({inner, doc} widths, every table)."""
    probe = tmp / f"probe-{width}-{page.name}"
    text = page.read_text(encoding="utf-8")
    assert text.count("</body>") == 1
    probe.write_text(text.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    profile = tmp / f"chromium-{len(list(tmp.glob('chromium-*')))}"
    r = subprocess.run(
        [
            str(CHROMIUM),
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            "--dump-dom",
            probe.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    m = re.search(r'<body data-tables="([^"]*)"', r.stdout)
    assert m, "the probe did not run"
    d = json.loads(_html.unescape(m.group(1)))
    boxes = [TableBox(t["id"], t["table"], t["box"], t["scroll"], t["boxed"]) for t in d["tables"]]
    return {"inner": d["inner"], "doc": d["doc"]}, boxes


def screenshot(page: Path, out: Path, tmp: Path, width: int = 1366, height: int = 900) -> Path:
    profile = tmp / f"chromium-{len(list(tmp.glob('chromium-*')))}"
    r = subprocess.run(
        [
            str(CHROMIUM),
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            f"--screenshot={out}",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0 and out.is_file(), r.stderr[-2000:]
    return out
