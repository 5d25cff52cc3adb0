"""Files a researcher can share (issue 27): every JSON file and JSON line that ``negbench run``,
``report`` and ``compare`` write parses with a strict parser (no NaN / Infinity), every file and
folder they create has the modes the user's umask gives, ``--no-text`` leaves the dataset's words
out of a report, old run folders that still hold NaN keep working, and ``report`` and
``compare`` give the same bootstrap p-values by default.

The runs are real: the ``tiny_llama`` and ``tiny_gemma`` models on the built-in tasks, in a
subprocess (``python -m negbench``) started under the umask being tested.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from negbench.cli import main

TASKS = [
    "--tasks",
    "negation-mini,truefalse-mini",
    "--modes",
    "negation-mini:cloze+letter+generate,truefalse-mini:next_token",
    "--limit",
    "4",
    "--quiet",
]


def negbench(
    *args: str, umask: int = 0o022, cwd: Path, cache: Path | None = None
) -> subprocess.CompletedProcess:
    """``python -m negbench ARGS`` under ``umask`` (as a user's shell would start it)."""
    env = dict(os.environ, NEGBENCH_CACHE=str(cache or cwd / "cache"))
    r = subprocess.run(
        [sys.executable, "-m", "negbench", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
        preexec_fn=lambda: os.umask(umask),
        env=env,
    )
    assert r.returncode == 0, r.stderr
    return r


def _reject(name: str):
    raise ValueError(f"not JSON: {name}")


def strict(text: str):
    """json.loads that refuses NaN, Infinity and -Infinity (as JSON.parse, jq and RFC 8259 do)."""
    return json.loads(text, parse_constant=_reject)


def parse_every_file(folder: Path) -> dict[str, int]:
    """Parse every .json file, every line of every .jsonl file and every JSON block embedded in
    an .html page under ``folder`` strictly; returns how many of each were parsed."""
    seen = {"json": 0, "jsonl lines": 0, "html blocks": 0}
    for p in sorted(folder.rglob("*")):
        if not p.is_file():
            continue
        if p.suffix == ".json":
            strict(p.read_text(encoding="utf-8"))
            seen["json"] += 1
        elif p.suffix == ".jsonl":
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
                try:
                    strict(line)
                except ValueError as exc:
                    raise AssertionError(f"{p}:{n}: {exc}") from None
                seen["jsonl lines"] += 1
        elif p.suffix == ".html":
            for block in re.findall(
                r'<script type="application/json"[^>]*>(.*?)</script>',
                p.read_text(encoding="utf-8"),
                re.S,
            ):
                strict(block.replace("<\\/", "</").replace("<\\!--", "<!--"))
                seen["html blocks"] += 1
    return seen


def nulls(obj, path=()) -> list[tuple]:
    """Paths of the nulls in a nested object."""
    if obj is None:
        return [path]
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in nulls(v, path + (k,))]
    if isinstance(obj, list):
        return [p for i, v in enumerate(obj) for p in nulls(v, path + (i,))]
    return []


def modes(folder: Path) -> dict[str, set[str]]:
    """The permission bits of every file and folder under ``folder`` (itself included)."""
    out: dict[str, set[str]] = {
        "files": set(),
        "folders": {oct(stat.S_IMODE(folder.stat().st_mode))},
    }
    for p in folder.rglob("*"):
        out["folders" if p.is_dir() else "files"].add(oct(stat.S_IMODE(p.stat().st_mode)))
    return out


@pytest.fixture(scope="module")
def shared(tmp_path_factory, tiny_llama, tiny_gemma):
    """Two runs (A: tiny Llama, B: tiny Gemma), a report of both, a comparison and a report of
    A alone in its own folder, all made under umask 022."""
    home = tmp_path_factory.mktemp("share")
    negbench("run", "--model", tiny_llama, *TASKS, "--output", "A", cwd=home)
    negbench("run", "--model", tiny_gemma, *TASKS, "--output", "B", cwd=home)
    rep = negbench("report", "A", "B", "--out", "rep", cwd=home)
    cmp = negbench("compare", "A", "B", "--out", "cmp", "--json", cwd=home)
    negbench("report", "A", cwd=home)  # -> A/report
    return {"home": home, "report_out": rep.stdout, "compare_json": cmp.stdout}


def test_every_file_a_run_report_and_compare_write_is_strict_json(shared):
    home = shared["home"]
    res = strict((home / "A" / "results.json").read_text())
    undefined = [(u, path) for u, x in res["units"].items() for path in nulls(x["metrics"])]
    assert undefined, "the runs were meant to have undefined metrics (NaN): the check is empty"
    counts = {name: parse_every_file(home / name) for name in ("A", "B", "rep", "cmp")}
    assert counts["A"]["json"] >= 3 and counts["A"]["jsonl lines"] == 4 * 4  # + A/report/*.json
    assert counts["B"]["jsonl lines"] == 4 * 4
    assert counts["rep"]["json"] >= 2 and counts["rep"]["html blocks"] == 3
    assert counts["cmp"]["json"] == 1 and counts["cmp"]["html blocks"] == 3
    strict(shared["compare_json"])  # what --json prints, too
    assert {p.name for p in (home / "A" / "report").iterdir()} >= {"report.json", "report.html"}
    # an undefined metric reads back as NaN
    from negbench.evaluation.store import load_results

    unit, path = undefined[0]
    value = load_results(home / "A")["units"][unit]["metrics"]
    for k in path:
        value = value[k]
    assert math.isnan(value)


def test_files_and_folders_have_the_modes_of_umask_022(shared):
    home = shared["home"]
    for name in ("A", "B", "rep", "cmp"):
        m = modes(home / name)
        assert m == {"files": {"0o644"}, "folders": {"0o755"}}, (name, m)


def test_umask_077_is_respected(tmp_path, tiny_llama):
    negbench(
        "run",
        "--model",
        tiny_llama,
        "--tasks",
        "negation-mini",
        "--modes",
        "cloze",
        "--limit",
        "2",
        "--quiet",
        "--output",
        "run",
        umask=0o077,
        cwd=tmp_path,
    )
    negbench("report", "run", "--no-plots", umask=0o077, cwd=tmp_path)
    assert modes(tmp_path / "run") == {"files": {"0o600"}, "folders": {"0o700"}}


def _dataset_strings(run: Path) -> set[str]:
    """Every prompt, choice, output and answer (of 12+ characters) that a run's samples hold."""
    out = set()
    for f in (run / "samples").glob("*.jsonl"):
        for line in f.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            vals = [
                rec.get("context"),
                rec.get("output"),
                rec.get("gold"),
                rec.get("target"),
                *(rec.get("choices") or []),
            ]
            out |= {v.strip() for v in vals if isinstance(v, str) and len(v.strip()) >= 12}
    return out


def test_no_text_leaves_the_dataset_out_of_report_and_compare(shared, tmp_path):
    home = shared["home"]
    words = _dataset_strings(home / "A") | _dataset_strings(home / "B")
    sentences = [w for w in words if "\n" not in w]
    assert len(sentences) > 20
    full = "".join(
        p.read_text(encoding="utf-8")
        for p in (home / "rep").rglob("*")
        if p.is_file() and p.suffix in (".html", ".md", ".json", ".csv")
    )
    assert any(s in full for s in sentences)  # the full report holds them
    assert (
        main(
            [
                "report",
                str(home / "A"),
                str(home / "B"),
                "--out",
                str(tmp_path / "rep"),
                "--no-text",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "compare",
                str(home / "A"),
                str(home / "B"),
                "--out",
                str(tmp_path / "cmp"),
                "--no-text",
            ]
        )
        == 0
    )
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".png"]
    assert {p.name for p in files} >= {
        "report.html",
        "report.md",
        "report.json",
        "samples.csv",
        "compare.html",
        "compare.md",
        "compare.json",
        "flips.csv",
    }
    for p in files:
        text = p.read_text(encoding="utf-8")
        leaked = [s for s in sentences if s in text]
        assert not leaked, f"{p} holds dataset text: {leaked[:2]}"
    rep = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert any("--no-text" in n for n in rep["notes"])
    assert "--no-text" in (tmp_path / "rep" / "report.html").read_text()
    html = (tmp_path / "rep" / "report.html").read_text()
    views = strict(
        re.search(r'id="nb-samples">(.*?)</script>', html, re.S).group(1).replace("<\\/", "</")
    )
    assert views and all("prompt" not in v and "output" not in v for v in views)
    assert any(v.get("pred", "").startswith("choice ") for v in views if v.get("pred"))


def test_report_and_compare_give_the_same_p_by_default(shared):
    """One bootstrap default (resamples and seed) for compare and report."""
    from negbench.report.compare import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
    from negbench.cli.report import BOOTSTRAP_HELP

    home = shared["home"]
    cmp = strict(shared["compare_json"])
    rep = strict((home / "rep" / "report.json").read_text())["comparisons"][0]
    assert (
        cmp["settings"]["bootstrap_resamples"]
        == rep["settings"]["bootstrap_resamples"]
        == BOOTSTRAP_RESAMPLES
    )
    assert cmp["settings"]["seed"] == rep["settings"]["seed"] == BOOTSTRAP_SEED
    assert [(g["id"], g["bootstrap"]) for g in cmp["groups"]] == [
        (g["id"], g["bootstrap"]) for g in rep["groups"]
    ]
    assert (
        f"{BOOTSTRAP_RESAMPLES:,}" in BOOTSTRAP_HELP[0]
        and f"{BOOTSTRAP_SEED})" in BOOTSTRAP_HELP[1]
    )


def test_old_run_folders_holding_nan_still_read(shared, tmp_path, capsys):
    """A run folder written before files were strict JSON (bare NaN in results.json) is shown,
    rescored, reported and compared as before; rescoring writes it strict."""
    old = tmp_path / "old"
    shutil.copytree(shared["home"] / "A", old)
    shutil.rmtree(old / "report")
    from negbench.files import nan_for_null

    res = json.loads((old / "results.json").read_text())
    for part in ("units", "groups"):
        for u in res[part].values():
            u["metrics"] = nan_for_null(u["metrics"])
    (old / "results.json").write_text(json.dumps(res, indent=2))
    assert "NaN" in (old / "results.json").read_text()
    assert main(["show", str(old)]) == 0
    shown = capsys.readouterr().out
    assert main(["show", str(shared["home"] / "A")]) == 0
    assert capsys.readouterr().out == shown  # NaN and null read the same
    assert main(["report", str(old), "--out", str(tmp_path / "rep"), "--no-plots"]) == 0
    assert main(["compare", str(old), str(shared["home"] / "B"), "--bootstrap", "200"]) == 0
    assert main(["rescore", str(old)]) == 0
    parse_every_file(old)
