"""What a reader of a report sees, and what a report does to its inputs.

* The HTML report in headless Chromium (Debian's ``chromium``): tables and plots render, the
  URL-hash-driven filters and the table-cell links select exactly the right samples, a screenshot
  is saved (under the pytest tmp dir, and copied to /tmp/negbench-report-screenshot.png), and on a
  laptop screen (1366 / 1400 px) the page never scrolls sideways: every table sits in its own
  scroll box, none is wider than its box, and the significance columns of a comparison are
  visible without scrolling.
  Chromium is driven without extra dependencies: ``--dump-dom`` gives the DOM after the page's
  JavaScript ran (it applies the state in the URL hash on load and writes what it rendered into
  ``#nb-status``; a probe script added to a copy of the page writes its measurements into the
  DOM too), ``--screenshot`` a PNG.  These tests are skipped only when chromium is not installed.
* Plots (matplotlib objects): no legend covers data or sticks out of the figure, no marker is cut
  at an axes edge — on the real runs and on made-up extreme values (P(True) = 0 and 1).
* Inputs: ``report`` and ``compare`` write nothing into the run folders (an audit hook watches
  every write, a listing with mtimes is compared, the folders are read-only, and as root the
  commands also run as an unprivileged user), and damaged run folders give one clear error that
  names the file and the real line.
"""

from __future__ import annotations

import html as _html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Sequence

import pytest

from negbench.report.build import build, write
from negbench.scoring.tables import ref_samples

from browser import CHROMIUM, needs_chromium  # one way to find the browser
from test_report import _fixture_data, engine_runs  # noqa: F401  (fixture + shared runs)

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
]
SCREENSHOT_COPY = Path("/tmp/negbench-report-screenshot.png")


def chromium(tmp: Path, url: str, *extra: str, timeout: int = 60) -> str:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"  # a fresh one each time
    cmd = [
        CHROMIUM,
        *FLAGS,
        f"--user-data-dir={profile}",
        "--virtual-time-budget=8000",
        *extra,
        url,
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def status(dom: str) -> dict[str, str]:
    m = re.search(r'<div id="nb-status"([^>]*)>', dom)
    assert m, "no #nb-status in the DOM"
    return {k: _html.unescape(v) for k, v in re.findall(r'data-([a-z-]+)="([^"]*)"', m.group(1))}


def cards(dom: str) -> list[dict[str, str]]:
    return [
        dict(re.findall(r'data-([a-z-]+)="([^"]*)"', m))
        for m in re.findall(r'<div class="nb-sample[^"]*"([^>]*)>', dom)
    ]


@pytest.fixture(scope="module")
def html_report(tmp_path_factory, tiny_llama):
    runs = engine_runs(tmp_path_factory.mktemp("report-runs"), tiny_llama)
    out = tmp_path_factory.mktemp("html-report")
    # + a real not-a-dataset run (its own label: a report has one row per run)
    rep = build(
        [runs["a"], runs["b"], runs["sft"], runs["nad-a"]],
        labels=[None, None, None, "tiny-a (notadataset)"],
        groups={"tiny": ["tiny-a", "tiny-b"]},
        n_resamples=300,
    )
    write(rep, out, formats=("html", "json"))
    return rep, out / "report.html"


@needs_chromium
def test_html_report_in_headless_chromium(html_report, tmp_path):
    rep, page = html_report
    url = page.resolve().as_uri()
    text = page.read_text(encoding="utf-8")
    # self-contained: nothing is loaded from elsewhere (XML namespace names are not loads)
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:|//)', text) and "<link" not in text
    assert "@import" not in text and "url(http" not in text

    # 1. no filter: every table and plot is in the rendered page; plots have a real size
    dom = chromium(tmp_path, url, "--window-size=1500,1100", "--dump-dom")
    st = status(dom)
    assert st["ready"] == "1"
    # the paper tables, the comparisons and the Headline table (n, subset, 95 % CI)
    assert int(st["tables"]) == len(rep.tables) + len(rep.comparisons) + 1 > 10
    assert int(st["plots"]) == len(rep.plots) > 5 and st["plots-rendered"] == st["plots"]
    assert int(st["total"]) == int(st["shown"]) == len(rep.views)

    # 2. filtering from the URL hash: incorrect answers on negation-mini
    dom = chromium(tmp_path, url + "#filter=incorrect&task=negation-mini", "--dump-dom")
    st = status(dom)
    want = [v for v in rep.views if v["task"] == "negation-mini" and v["correct"] is False]
    assert want and int(st["shown"]) == len(want) and int(st["incorrect"]) == len(want)
    assert st["correct"] == "0"
    shown = cards(dom)
    assert len(shown) == int(st["rendered"]) == min(100, len(want))
    assert all(c["correct"] == "false" and c["task"] == "negation-mini" for c in shown)

    # 3. a table-cell link (#ref=<cell id>): exactly the samples behind the cell
    table = next(t for t in rep.tables if t.id == "negation-mini-cloze-errors")
    ri, ci = next(
        (ri, ci)
        for ri, ci, row, col, c in table.cells()
        if col.key == "error_rate" and c.ref is not None and c.value
    )
    cid = table.cell_id(ri, ci)
    ref = table.rows[ri].cells[ci].ref
    behind = ref_samples(rep.runs[ref.run], ref)
    assert behind and len(behind) == sum(
        1 for u in ref.units for r in rep.runs[ref.run].samples(u) if r["pred"] != r["gold_index"]
    )
    assert f'href="#ref={cid}"' in text
    dom = chromium(tmp_path, url + f"#ref={cid}", "--dump-dom")
    st = status(dom)
    assert st["selected-cell"] == cid and int(st["shown"]) == len(behind)
    assert re.search(rf'<td class="nb-cell nb-selected" id="{re.escape(cid)}"', dom)
    got = cards(dom)
    assert sorted((c["unit"], c["run"]) for c in got) == sorted(
        (v["u"], str(v["r"])) for v in behind
    )
    assert all(c["error"] != "null" for c in got)
    # 4. This is not a Dataset Table 4: an accuracy cell (negations with distractor) links to
    #    exactly its sentences (boolean and "not" filters); with filter=incorrect, the wrong ones
    t4 = next(t for t in rep.tables if t.id == "notadataset-table4")
    ri, ci = next(
        (ri, ci)
        for ri, ci, row, col, c in t4.cells()
        if col.key == "acc_neg_w" and row.labels[1:] == ["next_token", "zero-shot"]
    )
    cid = t4.cell_id(ri, ci)
    ref = t4.rows[ri].cells[ci].ref
    behind = ref_samples(rep.runs[ref.run], ref)
    assert len(behind) == 10 and all(
        v["meta"]["is_distractor"] is True and v["meta"]["negation_type"] != "affirmation"
        for v in behind
    )
    wrong = [v for v in behind if v["correct"] is False]
    assert wrong and f'href="#ref={cid}"' in text
    dom = chromium(tmp_path, url + f"#ref={cid}&filter=incorrect", "--dump-dom")
    st = status(dom)
    assert st["selected-cell"] == cid and int(st["shown"]) == len(wrong) and st["correct"] == "0"
    got = cards(dom)
    assert sorted(c["unit"] for c in got) == sorted(v["u"] for v in wrong)
    assert all(c["task"] == "notadataset" and c["error"].startswith("false ") for c in got)

    # 5. a comparison link: the items that flipped from wrong to right
    if rep.comparisons:
        cmp = rep.comparisons[0]
        gi, g = next(((i, g) for i, g in enumerate(cmp["groups"]) if g["gains"]), (None, None))
        if g is not None:
            dom = chromium(tmp_path, url + f"#ref={cmp['_id']}.g{gi}.gain", "--dump-dom")
            assert int(status(dom)["shown"]) == g["gains"]

    # 6. screenshot of a filtered view: tables and plots on the left, filtered samples on the right
    shot = tmp_path / "report-screenshot.png"
    chromium(
        tmp_path,
        url + "#filter=incorrect&task=nubench&mode=completion",
        "--window-size=1600,2000",
        f"--screenshot={shot}",
    )
    assert shot.is_file() and shot.stat().st_size > 20_000
    import matplotlib.image as mpimg

    img = mpimg.imread(shot)
    assert img.shape[0] >= 2000 and img.shape[1] >= 1600 and float(img[..., :3].std()) > 0.05
    shutil.copy(shot, SCREENSHOT_COPY)


# -- the page on a laptop screen -------------------------------------------------------------------
#: Runs in the page after its own script: what a reader at this window size sees, as JSON in the DOM.
LAYOUT_PROBE = r"""<script>(function(){
const de=document.documentElement, W=window.innerWidth, main=document.getElementById('nb-main');
const tables=Array.from(document.querySelectorAll('table'));
const boxed=tables.filter(t=>{ const b=t.parentElement;
  return b && b.classList.contains('nb-scroll') && getComputedStyle(b).overflowX==='auto'; });
const boxes=Array.from(document.querySelectorAll('.nb-scroll'));
const sticky=tables.filter(t=>{ const c=t.querySelector('tbody tr > :first-child');
  return c && getComputedStyle(c).position==='sticky'; });
const wide=[];   // elements sticking out of the viewport that no scroll box clips
for(const e of document.querySelectorAll('#nb-main *')){ const r=e.getBoundingClientRect();
  if(r.right>W+0.5 && !e.closest('.nb-scroll, pre')) wide.push(e.tagName+'.'+e.className); }
const sig={};
for(const th of document.querySelectorAll('table.nb-cmp thead th')){
  const r=th.getBoundingClientRect(), box=(th.closest('.nb-scroll')||main).getBoundingClientRect();
  (sig[th.textContent]=sig[th.textContent]||[]).push([r.left,r.right,box.left,box.right]); }
document.body.setAttribute('data-layout', JSON.stringify({inner:W, doc:de.scrollWidth,
  body:document.body.scrollWidth, main:[main.scrollWidth, main.clientWidth], tables:tables.length,
  boxed:boxed.length, sticky:sticky.length, wide:wide.slice(0,5),
  overflowing:boxes.filter(b=>b.scrollWidth>b.clientWidth+1).length,
  over:boxes.filter(b=>b.scrollWidth>b.clientWidth+1).map(b=>{const t=b.querySelector('table');
    return [t?t.id:'', b.scrollWidth, b.clientWidth];}), sig:sig}));
})();</script>"""


def layout(tmp: Path, page: Path, width: int, height: int = 900) -> dict:
    """Open a copy of ``page`` (with the probe) at ``width`` × ``height`` and return the probe's
    measurements."""
    probe = tmp / f"probe-{width}-{page.name}"
    text = page.read_text(encoding="utf-8")
    assert text.count("</body>") == 1
    probe.write_text(text.replace("</body>", LAYOUT_PROBE + "</body>"), encoding="utf-8")
    dom = chromium(tmp, probe.resolve().as_uri(), f"--window-size={width},{height}", "--dump-dom")
    m = re.search(r'<body data-layout="([^"]*)"', dom)
    assert m, "the layout probe did not run"
    return json.loads(_html.unescape(m.group(1)))


@pytest.fixture(scope="module")
def compare_page(tmp_path_factory, tiny_llama):
    """compare.html of two models (negbench compare --out)."""
    from negbench.cli.report import main as report_main

    runs = engine_runs(tmp_path_factory.mktemp("report-runs"), tiny_llama)
    out = tmp_path_factory.mktemp("compare-page")
    assert (
        report_main(
            [
                "compare",
                str(runs["a"]),
                str(runs["b"]),
                "--out",
                str(out),
                "--bootstrap",
                "200",
                "--json",
            ]
        )
        == 0
    )
    return out / "compare.html"


SIGNIFICANCE = ("McNemar p", "95% CI", "p", "p (Holm)")


@needs_chromium
@pytest.mark.parametrize("width", [1400, 1366])
def test_page_fits_a_laptop_screen(html_report, compare_page, tmp_path, width):
    """At 1366 and 1400 px: the page never scrolls sideways; every table is in its own scroll box
    (first column sticky) and none is wider than it; in both the report and compare.html the
    comparison's significance columns are on screen without scrolling anything."""
    rep, page = html_report
    overflowing, over = [], []
    for p, n_cmp in ((page, len(rep.comparisons)), (compare_page, 1)):
        lay = layout(tmp_path, p, width)
        overflowing.append(lay["overflowing"])
        over += lay["over"]
        assert lay["inner"] == width
        assert lay["doc"] <= width and lay["body"] <= width, lay  # no sideways page scroll
        assert lay["main"][0] <= lay["main"][1], lay  # nor of the main column
        assert lay["wide"] == [], lay  # nothing sticks out unclipped
        assert lay["tables"] >= 2 and lay["boxed"] == lay["tables"] == lay["sticky"], lay
        for head in SIGNIFICANCE:
            cols = lay["sig"].get(head, [])
            assert len(cols) == n_cmp, (head, lay["sig"])
            for left, right, box_left, box_right in cols:
                assert box_left <= left and right <= box_right + 0.5 and right <= width, (
                    head,
                    cols,
                )
    # no table is wider than its box: long text wraps, headers hyphenate, nothing is clipped
    # behind a sideways scroll (issue 33: the page at a laptop's width)
    assert overflowing == [0, 0], over


def _rate_runs() -> list:
    """In-memory runs of two models whose error tables have an interval in every rate cell:
    NUBench completion (0-shot; 1-shot under seeds 1234 and 42) and KoNUBench cloze, 40 items per
    clause type, so every column carries "[a–b] (n)" (the widest cells a report prints)."""
    from negbench.scoring.runs import Run, UnitResult
    from negbench.tasks.konubench.tasks import konubench_metrics
    from negbench.tasks.nubench.tasks import nubench_metrics

    four = ["standard", "local", "contradiction", "paraphrase"]

    def recs(key: str, kinds: Sequence[str], shift: int) -> list[dict]:
        out = []
        for j, kind in enumerate(kinds):
            for i in range(40):
                pred = (1, 2, 3)[(i + j) % 3] if (i + shift) % 5 < 2 else 0
                out.append(
                    {
                        "doc_id": f"{kind}-{i}",
                        "gold_index": 0,
                        "choices": list("ABCD"),
                        "pred": pred,
                        "pred_norm": pred,
                        "acc": float(pred == 0),
                        "acc_norm": float(pred == 0),
                        "meta": {"option_types": four, key: kind, "n_options": 4},
                    }
                )
        return out

    nu = ("relative_part", "pp_part", "compound_part", "adverb_part")
    ko = ("adnominal", "adverbial", "noun", "quotation", "subordinate", "coordinated")
    runs = []
    for index, label in enumerate(("model-a", "model-b")):
        units, samples = {}, {}
        for name, task, mode, k, seed, rs in (
            (
                "nubench.completion.0shot",
                "nubench",
                "completion",
                0,
                None,
                recs("choice2_type", nu, index),
            ),
            (
                "nubench.completion.1shot.seed1234",
                "nubench",
                "completion",
                1,
                1234,
                recs("choice2_type", nu, 1),
            ),
            (
                "nubench.completion.1shot.seed42",
                "nubench",
                "completion",
                1,
                42,
                recs("choice2_type", nu, 2),
            ),
            ("konubench.cloze.0shot", "konubench", "cloze", 0, None, recs("local_type", ko, index)),
        ):
            fn = nubench_metrics if task == "nubench" else konubench_metrics
            m = {**fn(mode, rs), "acc": sum(r["acc"] for r in rs) / len(rs), "n": len(rs)}
            m["acc_norm"] = m["acc"]
            units[name] = UnitResult(name, task, mode, k, seed, name, m)
            samples[name] = rs
        run = Run(
            Path(f"/nonexistent/{label}"),
            {"schema": 1, "model": {"spec": label}, "units": {}},
            label,
            units,
            index,
        )
        run._samples = samples
        runs.append(run)
    return runs


@needs_chromium
def test_rate_cells_with_intervals_fit_a_laptop_screen(tmp_path):
    """Error tables whose every rate cell shows "[a–b] (n)" (NUBench Table 6 with four clause
    types, KoNUBench App. I with six; two models; a seed mean with ± SD) fit 1366 px: the
    interval goes under the value, small, and may wrap before its n."""
    from negbench.report.build import Report
    from negbench.scoring.paper_tables import Context, build_tables

    runs = _rate_runs()
    tables = build_tables(Context(runs))
    app_i = next(t for t in tables if t.id == "konubench-cloze-errors")
    assert all(c.ci is not None for _, _, _, col, c in app_i.cells() if col.key.startswith("conf"))
    out = tmp_path / "rates"
    write(Report(runs, tables), out, formats=("html",))
    page = out / "report.html"
    assert 'class="nb-ci"' in page.read_text(encoding="utf-8")
    lay = layout(tmp_path, page, 1366)
    assert lay["doc"] <= 1366 and lay["wide"] == [], lay
    assert lay["overflowing"] == 0, lay["over"]


# -- plots -----------------------------------------------------------------------------------------
def plot_problems(fig) -> list[str]:
    """What is wrong with a figure as drawn: a legend that overlaps an axes or a data marker or
    sticks out of the figure; a marker cut by the edge of its axes (clipped and not inside)."""
    import numpy as np

    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    out, marks = [], []
    for ax in fig.axes:
        abox = ax.get_window_extent(r)
        for ln in ax.get_lines():
            if ln.get_marker() in (None, "None", "", " ") or not ln.get_visible():
                continue
            xy = np.column_stack(
                [np.asarray(ln.get_xdata(), float), np.asarray(ln.get_ydata(), float)]
            )
            xy = xy[np.isfinite(xy).all(1)]
            rad = (ln.get_markersize() + ln.get_markeredgewidth()) * fig.dpi / 72 / 2
            for x, y in ln.get_transform().transform(xy) if len(xy) else []:
                marks.append((x - rad, y - rad, x + rad, y + rad))
                inside = (
                    abox.x0 - 0.5 <= x - rad
                    and x + rad <= abox.x1 + 0.5
                    and abox.y0 - 0.5 <= y - rad
                    and y + rad <= abox.y1 + 0.5
                )
                if ln.get_clip_on() and not inside:
                    out.append(
                        f"{ax.get_title()!r}: a marker of {ln.get_label()!r} is cut by the axes edge"
                    )
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
    for leg in legends:
        lb = leg.get_window_extent(r)
        out += [
            f"the legend overlaps the axes {ax.get_title()!r}"
            for ax in fig.axes
            if lb.overlaps(ax.get_window_extent(r))
        ]
        out += [
            "the legend covers a marker"
            for m in marks
            if lb.x0 < m[2] and m[0] < lb.x1 and lb.y0 < m[3] and m[1] < lb.y1
        ]
        fb = fig.bbox
        if lb.x0 < fb.x0 - 1 or lb.x1 > fb.x1 + 1 or lb.y0 < fb.y0 - 1 or lb.y1 > fb.y1 + 1:
            out.append("the legend sticks out of the figure")
    return out


def _made_up_runs() -> list:
    """In-memory runs with every plot kind and extreme values: accuracies of exactly 0 and 1,
    an adapter run, P(True) of exactly 0 and 1 (calibration points in the corners), AccChg."""
    from negbench.scoring.runs import Run, UnitResult

    ea = {
        "incorrect_choice": {
            "local": {"pct": 100.0},
            "contradiction": {"pct": 0.0},
            "paraphrase": {"pct": 0.0},
        },
        "local_confusion": {"relative_part": {"pct": 100.0}, "pp_part": {"pct": 0.0}},
    }
    runs = []
    for i, (label, accs, adapter) in enumerate(
        (
            ("model-a", (1.0, 0.0), None),
            ("model-b", (0.0, 1.0), None),
            ("model-a+lora", (1.0,), "lora"),
        )
    ):
        units, samples = {}, {}
        for k, acc in enumerate(accs):
            for task, mode in (
                ("negation-mini", "cloze"),
                ("truefalse-mini", "next_token"),
                ("jsts-neg", "loglik"),
            ):
                name = f"{task}.{mode}.{k}shot"
                m = {"acc": acc, "n": 4}
                if task == "negation-mini":
                    m["error_analysis"] = ea
                if task == "jsts-neg":
                    m.update({"M.acc_chg": acc - 0.5, "Mi.acc_chg": -0.5, "Mu.acc_chg": 0.5})
                units[name] = UnitResult(name, task, mode, k, None, name, m)
                pts = (
                    [(0.0, False), (0.0, False), (1.0, True), (1.0, True)]
                    if i == 0  # (0,0) (1,1)
                    else [(0.0, True), (1.0, False), (0.0, True), (1.0, False)]
                )  # (0,1) (1,0)
                samples[name] = [
                    {
                        "doc_id": str(j),
                        "p_true": p,
                        "label": y,
                        "pred_bool": p > 0.5,
                        "acc": float((p > 0.5) == y),
                    }
                    for j, (p, y) in enumerate(pts)
                ]
        res = {
            "schema": 1,
            "model": {"spec": label.split("+")[0]},
            "config": {"backend": {"adapter": adapter} if adapter else {}},
            "units": {},
        }
        run = Run(Path(f"/nonexistent/{label}"), res, label, units, i)
        run._samples = samples
        runs.append(run)
    return runs


def _check_plots(plots, kinds: set[str]) -> None:
    from negbench.report.plots import close

    try:
        assert {p.kind for p in plots} >= kinds, {p.kind for p in plots}
        bad = {p.id: plot_problems(p._fig) for p in plots}
        assert not any(bad.values()), bad
    finally:
        close(plots)


def test_plot_legends_and_markers_made_up_extremes():
    """Every plot kind, with points at the very edges (accuracy 0 / 1, P(True) 0 / 1): legends
    sit outside the axes and inside the figure, markers are whole, the calibration axes take in
    [0, 1] with a margin."""
    from negbench.scoring.paper_tables import Context
    from negbench.report.plots import all_plots, calibration

    runs = _made_up_runs()
    ctx = Context(runs, {"both": ["model-a", "model-b"]})
    _check_plots(
        all_plots(ctx),
        {"accuracy_vs_shots", "incorrect_choice", "confusion", "accchg", "calibration"},
    )
    plots = calibration(ctx)
    try:
        ax = plots[0]._fig.axes[0]
        pts = [(x, y) for ln in ax.get_lines()[1:] for x, y in zip(ln.get_xdata(), ln.get_ydata())]
        assert {(0, 0), (1, 1), (0, 1), (1, 0)} <= set(pts)  # points in the 4 corners …
        lo, hi = ax.get_xlim()
        assert lo < 0 and hi > 1 and ax.get_ylim()[0] < 0 and ax.get_ylim()[1] > 1  # … with room
        assert all(not ln.get_clip_on() for ln in ax.get_lines()[1:])
    finally:
        from negbench.report.plots import close

        close(plots)


def test_plot_legends_and_markers_real_runs(tmp_path_factory, tiny_llama):
    """The same on the engine's runs: shots, incorrect choices, confusion, calibration (three
    models, an adapter run, a group), not-a-dataset calibration."""
    from negbench.scoring.runs import load_runs
    from negbench.scoring.paper_tables import Context
    from negbench.report.plots import all_plots

    runs = engine_runs(tmp_path_factory.mktemp("report-runs"), tiny_llama)
    loaded = load_runs([runs["a"], runs["b"], runs["sft"]])
    _check_plots(
        all_plots(Context(loaded, {"tiny": ["tiny-a", "tiny-b"]})),
        {"accuracy_vs_shots", "incorrect_choice", "confusion", "calibration"},
    )
    _check_plots(all_plots(Context(load_runs([runs["nad-a"], runs["nad-b"]]), {})), {"calibration"})


def test_saved_plot_files_hold_the_legend(tmp_path):
    """The saved PNG is the whole figure, legend included (tight bounding box)."""
    import matplotlib.image as mpimg
    from negbench.scoring.paper_tables import Context
    from negbench.report.plots import calibration, save

    plots = calibration(Context(_made_up_runs(), {}))
    fig = plots[0]._fig
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    leg = fig.axes[0].get_legend().get_window_extent(r)  # display px at fig.dpi
    left = fig.get_tightbbox(r).x0  # inches; the PNG starts there
    save(plots, tmp_path)  # PNG at 110 dpi, tight box
    img = mpimg.imread(tmp_path / f"{plots[0].id}.png")
    assert img.shape[1] >= (leg.x1 / fig.dpi - left) * 110 - 2  # reaches the legend's right edge
    assert "model-a (ECE" in plots[0].svg and "model-b (ECE" in plots[0].svg


# -- read-only run folders -------------------------------------------------------------------------
_WATCH: list[Path] = []
_WRITES: list[str] = []
_HOOKED = False


def _audit(event: str, args: tuple) -> None:
    """Record every write-like operation on a watched folder (audit hooks see all of Python's
    file operations: open for writing, mkdir, rename/replace, remove, chmod, utime …)."""
    if not _WATCH:
        return
    paths = []
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        w = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
        if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & w
        ):
            paths = [path]
    elif event in (
        "os.mkdir",
        "os.remove",
        "os.rmdir",
        "os.chmod",
        "os.chown",
        "os.utime",
        "os.truncate",
        "os.symlink",
        "os.link",
        "shutil.rmtree",
        "sqlite3.connect",
    ):
        paths = [args[0]]
    elif event == "os.rename":
        paths = list(args[:2])
    for p in paths:
        if isinstance(p, (str, bytes, os.PathLike)):
            rp = Path(os.fsdecode(p)).resolve()
            if any(rp == w or w in rp.parents for w in _WATCH):
                _WRITES.append(f"{event} {rp}")


def _listing(root: Path) -> dict[str, tuple]:
    return {
        str(p.relative_to(root)): (
            p.is_dir(),
            p.stat().st_size if p.is_file() else 0,
            p.stat().st_mtime_ns,
            p.stat().st_mode,
        )
        for p in [root, *root.rglob("*")]
    }


def _read_only(root: Path, on: bool) -> None:
    import stat

    for p in [root, *root.rglob("*")]:
        m = p.stat().st_mode
        p.chmod(m & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) if on else m | stat.S_IWUSR)


@pytest.fixture
def read_only_runs(tmp_path, tiny_llama, tmp_path_factory):
    """Copies of two runs (a model and its fine-tuned version), chmod -R a-w, watched."""
    import sys

    global _HOOKED
    runs = engine_runs(tmp_path_factory.mktemp("report-runs"), tiny_llama)
    root = tmp_path / "ro"
    a, b = (
        shutil.copytree(runs["a"], root / "run-a"),
        shutil.copytree(runs["sft"], root / "run-sft"),
    )
    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED = True
    _read_only(root, True)
    before = _listing(root)
    _WATCH[:] = [root.resolve()]
    _WRITES.clear()
    try:
        yield Path(a), Path(b), root, before
    finally:
        _WATCH.clear()
        _read_only(root, False)


def test_read_only_runs_report_and_compare(read_only_runs, tmp_path, monkeypatch, capsys):
    """report (every format, plots, --recompute), compare, and a one-run report without --out
    from a read-only folder: nothing is created, changed or even opened for writing in the run
    folders, and the output is complete."""
    from negbench.cli.report import main as report_main

    a, b, root, before = read_only_runs
    rep, cmp = tmp_path / "rep", tmp_path / "cmp"
    assert (
        report_main(
            ["report", str(a), str(b), "--out", str(rep), "--bootstrap", "100", "--recompute"]
        )
        == 0
    )
    assert report_main(["compare", str(a), str(b), "--out", str(cmp), "--bootstrap", "100"]) == 0
    for f in ("report.html", "report.json", "report.md", "plots", "csv/samples.csv"):
        assert (rep / f).exists(), f
    assert json.loads((cmp / "compare.json").read_text())["groups"]
    # one run, no --out: RUN/report, unless RUN cannot be written (then ./negbench-report)
    monkeypatch.chdir(tmp_path)
    if os.geteuid() != 0:
        assert report_main(["report", str(a), "--no-plots", "--formats", "md"]) == 0
        assert (tmp_path / "negbench-report" / "report.md").is_file()
        assert "is not writable" in capsys.readouterr().err
    assert _WRITES == [] and _listing(root) == before


@pytest.mark.skipif(
    not (hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("setpriv")),
    reason="needs root and setpriv",
)
def test_read_only_runs_as_unprivileged_user(read_only_runs, tmp_path):
    """As root chmod blocks nothing: run report and compare as user 'nobody', for whom the run
    folders really are read-only, in a fresh process (the real command line)."""
    import sys
    import tempfile

    a, b, root, before = read_only_runs
    work = Path(tempfile.mkdtemp(prefix="negbench-ro-", dir="/tmp"))
    try:
        ro = work / "runs"
        shutil.copytree(root, ro)
        _read_only(ro, True)
        for p in (work, *ro.rglob("*"), ro):
            p.chmod(p.stat().st_mode | 0o555 if p.is_dir() else p.stat().st_mode | 0o444)
        home = work / "home"
        home.mkdir()
        os.chown(home, 65534, 65534)
        work.chmod(0o777)
        ra, rb = ro / "run-a", ro / "run-sft"
        ro_before = _listing(ro)
        env = {
            **os.environ,
            "HOME": str(home),
            "MPLCONFIGDIR": str(home / "mpl"),
            "NEGBENCH_CACHE": str(home / "cache"),
        }
        base = [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            sys.executable,
            "-m",
            "negbench",
        ]
        for args in (
            ["report", str(ra), str(rb), "--out", str(home / "rep"), "--bootstrap", "50"],
            ["compare", str(ra), str(rb), "--out", str(home / "cmp"), "--bootstrap", "50"],
            ["report", str(ra), "--no-plots", "--formats", "md,json"],
        ):  # no --out
            r = subprocess.run(
                base + args, capture_output=True, text=True, cwd=home, env=env, timeout=300
            )
            assert r.returncode == 0, r.stderr[-3000:]
            assert "Traceback" not in r.stderr
        assert (home / "rep" / "report.html").is_file() and (
            home / "cmp" / "compare.html"
        ).is_file()
        assert (home / "negbench-report" / "report.md").is_file() and "is not writable" in r.stderr
        assert _listing(ro) == ro_before
    finally:
        shutil.rmtree(work, ignore_errors=True)


# -- damaged inputs ----------------------------------------------------------------------------------
def _cli_error(capsys, *args: str) -> str:
    """Run the command; it must fail with one negbench error (exit 2, no traceback) and say so."""
    from negbench.cli.report import main as report_main

    assert report_main(list(args)) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err and "\n  fix:" in err, err
    return err


def test_damaged_inputs_give_one_clear_error(tmp_path, tiny_llama, tmp_path_factory, capsys):
    runs = engine_runs(tmp_path_factory.mktemp("report-runs"), tiny_llama)
    good = runs["nm"]
    out = str(tmp_path / "out")

    def copy(name: str) -> Path:
        return Path(shutil.copytree(good, tmp_path / name))

    # results.json cut in the middle of a line: "truncated", the file and the real line
    r = copy("truncated")
    text = (r / "results.json").read_text()
    cut = text[: len(text) * 2 // 3]
    cut = cut if not cut.endswith("\n") else cut[:-1]
    (r / "results.json").write_text(cut)
    for cmd in (["report", str(r), "--out", out], ["compare", str(good), str(r)]):
        err = _cli_error(capsys, *cmd)
        assert (
            "truncated" in err
            and f"{r / 'results.json'}, record line {cut.count(chr(10)) + 1}" in err
        ), err
    # a samples line that is not JSON, in the middle of the file: that line
    r = copy("badline")
    f = r / "samples" / "negation-mini.cloze.0shot.jsonl"
    lines = f.read_text().splitlines(keepends=True)
    assert len(lines) >= 4
    lines[2] = lines[2][: len(lines[2]) // 2] + "\n"  # line 3 cut in half
    f.write_text("".join(lines))
    for cmd in (["report", str(r), "--out", out], ["compare", str(good), str(r), "--out", out]):
        err = _cli_error(capsys, *cmd)
        assert f"{f}, record line 3" in err and "invalid JSON" in err, err
    # a record whose field has the wrong type (line 2), and bytes that are not UTF-8 (line 4)
    lines = (good / "samples" / f.name).read_text().splitlines(keepends=True)
    rec = json.loads(lines[1])
    rec["pred"] = "B"
    lines[1] = json.dumps(rec) + "\n"
    f.write_text("".join(lines))
    err = _cli_error(capsys, "report", str(r), "--out", out)
    assert f"{f}, record line 2, field 'pred'" in err and "expected an integer" in err, err
    data = "".join(lines[:1] + lines[2:]).encode()
    k = [i for i, c in enumerate(data) if c == 10][2] + 5  # in line 4
    f.write_bytes(data[:k] + b"\xff\xfe" + data[k:])
    err = _cli_error(capsys, "report", str(r), "--out", out)
    assert f"{f}, record line 4" in err and "not UTF-8" in err, err
    # folders that are not runs: empty; a folder of runs (the runs are suggested); a file;
    # an unfinished run (config.json, no results.json)
    (tmp_path / "empty").mkdir()
    assert "no results.json" in _cli_error(capsys, "report", str(tmp_path / "empty"), "--out", out)
    err = _cli_error(capsys, "report", str(tmp_path), "--out", out)
    assert "holds run folders" in err and str(tmp_path / "badline") in err, err
    assert "a file" in _cli_error(capsys, "compare", str(f), str(good))
    (tmp_path / "unfinished").mkdir()
    (tmp_path / "unfinished" / "config.json").write_text("{}")
    assert "did not finish" in _cli_error(
        capsys, "report", str(tmp_path / "unfinished"), "--out", out
    )
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
