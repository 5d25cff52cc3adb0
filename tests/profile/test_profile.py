"""``negbench profile`` on the tiny random models over the benchmarks whose fixtures we wrote
(tests/data: NUBench, JSTS-Neg, This is not a Dataset), every other benchmark's data pointed at
an empty folder: the runs, the page and its JSON, every number traced back to its items, the
missing benchmarks listed with how to get them, resumption, the comparison of two profiles
against ``negbench compare``'s own statistics, the lm-eval layout read back by lm-eval, and bad
input (unknown preset, benchmark, mode; another profile in the folder; an API model without
prompt log-probabilities)."""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

import negbench
from negbench.cli import main
from negbench.errors import NegbenchError, OptionError, OutputError
from negbench.profile.folder import load_profile_run, read_manifest
from negbench.profile.presets import benchmarks
from negbench.scoring.tables import resolve_ref

from browser import needs_chromium, table_boxes
from locations import SHARED, TEST_DATA

FIXTURES = {
    "NEGBENCH_NUBENCH": TEST_DATA / "nubench",
    "NEGBENCH_JSTS_NEG": TEST_DATA / "jsts_neg",
    "NEGBENCH_NOTADATASET": TEST_DATA / "notadataset" / "raw",
}
WITH_DATA = ("nubench", "notadataset", "jsts-neg")
LIMIT = 8


def _env(mp: pytest.MonkeyPatch, empty: Path) -> None:
    mp.setenv("NEGBENCH_DATA", str(empty))  # every other benchmark: no data here
    mp.setenv("HF_HUB_OFFLINE", "1")  # hub sets: fail at once, not after a probe
    for k, v in FIXTURES.items():
        mp.setenv(k, str(v))
    for k in (
        "NEGBENCH_KONUBENCH",
        "NEGBENCH_CONDAQA",
        "NEGBENCH_SCONE",
        "NEGBENCH_JNLI_NEG",
        "NEGBENCH_KOBEST_BOOLQ",
    ):
        mp.delenv(k, raising=False)


@pytest.fixture()
def fixtures_env(tmp_path, monkeypatch):
    empty = tmp_path / "no-data"
    empty.mkdir()
    _env(monkeypatch, empty)


def _profile(tmp_path_factory, model: str, name: str):
    root = tmp_path_factory.mktemp(name)
    empty = root / "no-data"
    empty.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        _env(mp, empty)
        logs: list[str] = []
        prof = negbench.profile(
            model,
            out=root / "profile",
            limit=LIMIT,
            progress=False,
            cache=str(root / "cache.sqlite"),
            log=logs.append,
        )
    return prof, logs


@pytest.fixture(scope="module")
def prof_a(tiny_llama, tmp_path_factory):
    return _profile(tmp_path_factory, tiny_llama, "prof-a")


@pytest.fixture(scope="module")
def prof_b(tiny_gemma, tmp_path_factory):
    return _profile(tmp_path_factory, tiny_gemma, "prof-b")


def test_profile_runs_what_has_data_and_lists_the_rest(prof_a):
    prof, logs = prof_a
    m = read_manifest(prof.folder)
    status = {b["key"]: b["status"] for b in m["benchmarks"]}
    assert {k for k, s in status.items() if s == "done"} == set(WITH_DATA)
    quick = [b.key for b in benchmarks() if b.quick]
    assert list(status) == quick  # nothing silently skipped, in page order
    missing = {x["benchmark"] for x in m["not_run"]}
    assert missing == set(quick) - set(WITH_DATA)
    for x in m["not_run"]:
        assert x["status"] == "no data" and x["why"] and x["how"]
        assert any(w in x["how"] for w in ("NEGBENCH_", "hub", "github"))
    for key in missing:  # the log said so too, before running
        assert any(f"{key}: not run, no data" in line for line in logs)
    # one session: the model was loaded once for every benchmark
    assert sum("loading" in line for line in logs) == 1
    for b in m["benchmarks"]:
        for p in b["parts"]:
            if p["status"] == "done":
                assert (prof.folder / p["run"] / "results.json").is_file()


def test_every_number_on_the_page_comes_from_its_items(prof_a):
    prof, _ = prof_a
    m = read_manifest(prof.folder)
    run = load_profile_run(prof.folder)
    rows = m["headline"]
    assert {r["benchmark"] for r in rows} == set(WITH_DATA)
    for r in rows:
        v, _ = resolve_ref(run, r["ref"])
        assert v == pytest.approx(r["value"], abs=1e-9), r["label"]
        sub = run.results["units"][r["units"][0]]["subset"]
        assert r["n"] == sub["n"] and r["full"] == sub["full"] and sub["how"] == "limit"
        assert r["subset"] == sub["rule"] and sub["n"] <= LIMIT + 4  # whole units, about N
        if r["ci95"]:
            assert r["ci95"][0] <= r["value"] <= r["ci95"][1]
    nub = next(r for r in rows if r["benchmark"] == "nubench")
    # chance: a uniform pick among each item's options; NUBench Table 11's models beside it
    recs = run.samples(nub["units"][0])
    assert nub["chance"] == pytest.approx(
        100 * sum(1 / len(r["choices"]) for r in recs) / len(recs)
    )
    assert nub["metric"] == "acc"
    assert len(nub["papers"]) >= 14 and all(
        p["source"].startswith("Thunder-NUBench Table 11") for p in nub["papers"]
    )
    assert nub["rank"]["of"] == sum(p["kind"] == "model" for p in nub["papers"]) + 1
    # phenomena: every condition recomputed from the records
    phen = m["phenomena"]
    assert {p["benchmark"] for p in phen} == set(WITH_DATA)
    names = {(p["benchmark"], p["phenomenon"]) for p in phen}
    assert ("nubench", "standard vs local negation") in names
    assert ("notadataset", "negated vs affirmative sentences") in names
    assert ("jsts-neg", "minimal-pair accuracy change") in names
    for p in phen:
        for c in (p["condition"], p["reference"]):
            if c is None or c["value"] is None:
                continue
            v, _ = resolve_ref(run, c["ref"])
            assert v == pytest.approx(c["value"], abs=1e-9), (p["phenomenon"], c["label"])
    # the contrast of the minimal pairs is the task's own AccChg
    jsts = next(u for u in run.units.values() if u.task == "jsts-neg")
    m_row = next(
        p for p in phen if p["benchmark"] == "jsts-neg" and p["condition"]["label"].startswith("M:")
    )
    assert m_row["delta"] == pytest.approx(100 * jsts.metrics["M.acc_chg"], abs=1e-9)


def test_phenomena_carry_n_intervals_and_flags_from_the_records(prof_a):
    """Each contrast: n on both sides, its Δ inside its 95 % interval or a reason for none; a
    side flagged "one answer" answers one label on ≥ 95 % of its records; flagged contrasts are
    not drawn, and the others are."""
    from collections import Counter

    from negbench.evaluation.run_warnings import CONSTANT_SHARE, prediction
    from negbench.profile.phenomena import MIN_SIDE_N
    from negbench.scoring.runs import matches, sample_view

    prof, _ = prof_a
    run = load_profile_run(prof.folder)
    phen = read_manifest(prof.folder)["phenomena"]
    contrasts = [p for p in phen if p["reference"] is not None and p["delta"] is not None]
    assert contrasts
    for p in contrasts:
        c, r = p["condition"], p["reference"]
        assert c["n"] > 0 and r["n"] > 0, p
        if p["ci95"]:
            lo, hi = p["ci95"]
            assert lo <= p["delta"] + 1e-9 and p["delta"] - 1e-9 <= hi and -100 <= lo <= hi <= 100
        else:
            assert p["ci_note"], p
        assert p["drawn"] == (not p["flags"]), p
        for side in (c, r):
            assert ("n < " in " ".join(side["flags"])) == (side["n"] < MIN_SIDE_N)
            ref = side["ref"]
            if ref["stat"] not in ("mean", "share"):
                continue
            preds: Counter = Counter()
            for name in ref["units"]:
                u = run.units[name]
                for i, rec in enumerate(run.samples(name)):
                    if matches(sample_view(run, u, rec, i), ref["where"]):
                        pr, _, ok = prediction(rec)
                        preds[repr(pr)] += ok
            top = preds.most_common(1)[0][1] / max(1, sum(preds.values())) if preds else 0
            assert (side["constant_answer"] is not None) == (top >= CONSTANT_SHARE), (p, preds)
    assert any(p["flags"] for p in contrasts)  # 8-item subsets: small sides are flagged
    html = prof.page.read_text(encoding="utf-8")
    assert "95 % CI of Δ" in html and "⚠" in html


def test_the_page_html_markdown_and_model_card(prof_a):
    prof, _ = prof_a
    html = prof.page.read_text(encoding="utf-8")
    m = read_manifest(prof.folder)
    for tid in ("profile-headline", "profile-phenomena", "profile-not-run"):
        assert f'id="{tid}"' in html
    assert html.index('id="plot-profile-glance"') < html.index('id="sec-runs"')  # the glance first
    assert "<svg" in html and 'href="#ref=profile-headline.r0.c2"' in html
    samples = json.loads(
        html.split('<script type="application/json" id="nb-samples">')[1]
        .split("</script>")[0]
        .replace("<\\/", "</")
    )
    run = load_profile_run(prof.folder)
    assert len(samples) == sum(len(run.samples(u)) for u in run.units)
    md = (prof.folder / "profile.md").read_text(encoding="utf-8")
    assert "Headline" in md and "Not run" in md and "plots/profile-glance.png" in md
    assert (prof.folder / "plots" / "profile-glance.png").is_file()
    card = (prof.folder / "model_card.md").read_text(encoding="utf-8")
    for u in run.units.values():
        assert f"| {u.task} | {u.mode} |" in card
    assert m["files"]["html"] == "profile.html"
    assert "rank" in prof.summary() and "not run:" in prof.summary()


@needs_chromium
def test_the_page_reads_at_a_laptops_width(prof_a, tmp_path):
    """At 1366 px in a real Chromium: no table of the profile page is wider than its box (long
    text wraps; nothing to scroll sideways), and the page itself does not scroll sideways."""
    prof, _ = prof_a
    page, boxes = table_boxes(prof.page, tmp_path, 1366)
    assert page["inner"] == 1366 and page["doc"] <= 1366, page
    ids = {b.id for b in boxes}
    assert {"profile-headline", "profile-phenomena", "profile-not-run"} <= ids, ids
    assert any(i.startswith("profile-standing-") for i in ids), ids
    wide = [b for b in boxes if not b.fits]
    assert wide == [], wide
    assert all(b.boxed for b in boxes if b.id.startswith("profile-"))


def test_the_lm_eval_layout_is_read_by_lm_evals_own_utilities(prof_a, tmp_path):
    lm_utils = pytest.importorskip("lm_eval.utils")
    prof, _ = prof_a
    files = [str(p) for p in (prof.folder / "lm-eval").rglob("*.json")]
    latest = lm_utils.get_latest_filename(files)
    assert lm_utils.get_results_filenames(files) == [latest]
    data = json.loads(Path(latest).read_text(encoding="utf-8"))
    run = load_profile_run(prof.folder)
    table = lm_utils.make_table(data)
    for name, u in run.units.items():
        assert name in data["results"] and name in table
        first = next(k for k in ("acc", "exact_match") if k in u.metrics)
        assert data["results"][name][f"{first},none"] == pytest.approx(u.metrics[first])
    datasets = pytest.importorskip("datasets")
    ds = datasets.load_dataset(
        "json", data_files=latest, split="train", cache_dir=str(tmp_path / "hf")
    )
    assert set(data["results"]) <= set(ds["results"][0])


def test_a_killed_profile_resumes_without_recomputing_finished_benchmarks(
    tiny_llama, tmp_path, fixtures_env, monkeypatch
):
    from negbench.evaluation.session import Session

    real = Session.evaluate
    calls: list[list[str]] = []

    def evaluate(self, tasks, **kw):
        calls.append(list(tasks))
        if len(calls) == 2 and not getattr(evaluate, "resumed", False):
            raise KeyboardInterrupt  # killed while the second benchmark runs
        return real(self, tasks, **kw)

    monkeypatch.setattr(Session, "evaluate", evaluate)
    out = tmp_path / "p"
    kw = dict(
        out=out,
        benchmarks=["nubench", "jsts-neg", "scone-nli"],
        limit=4,
        progress=False,
        cache=str(tmp_path / "c.sqlite"),
        log=lambda s: None,
    )
    with pytest.raises(KeyboardInterrupt):
        negbench.profile(tiny_llama, **kw)
    m = read_manifest(out)
    parts = {p["name"]: p["status"] for b in m["benchmarks"] for p in b["parts"]}
    assert parts == {"nubench": "done", "jsts-neg": "pending", "scone-nli": "missing"}
    first = json.loads((out / "runs" / "nubench" / "results.json").read_text())
    evaluate.resumed = True
    calls.clear()
    prof = negbench.profile(tiny_llama, **kw)
    assert calls == [["jsts-neg"]]  # nubench is not run again
    again = json.loads((out / "runs" / "nubench" / "results.json").read_text())
    assert again == first
    assert {b["key"]: b["status"] for b in prof.benchmarks} == {
        "nubench": "done",
        "jsts-neg": "done",
        "scone-nli": "missing",
    }
    calls.clear()
    negbench.profile(tiny_llama, **kw)  # a finished profile: nothing runs
    assert calls == []


def test_compare_two_profiles_with_negbench_compares_statistics(prof_a, prof_b, tmp_path):
    from negbench.profile.compare import compare_profiles
    from negbench.report.compare import compare_runs
    from negbench.scoring.runs import load_run

    a, b = prof_a[0].folder, prof_b[0].folder
    pc = compare_profiles([a, b])
    assert pc.labels == ["tiny-llama0", "tiny-gemma0"] or len(set(pc.labels)) == 2
    cmp = pc.comparisons[0]
    for part in ("nubench", "jsts-neg", "notadataset"):
        ref = compare_runs(load_run(a / "runs" / part), load_run(b / "runs" / part))
        for g in ref["groups"]:
            ours = next(x for x in cmp["groups"] if x["id"] == g["id"])
            for k in ("a_mean", "b_mean", "gains", "losses", "mcnemar", "bootstrap", "significant"):
                assert ours[k] == g[k], (g["id"], k)
    assert cmp["settings"]["bootstrap_resamples"] == 10_000 and cmp["settings"]["seed"] == 0
    # phenomena: every per-item condition was tested, group metrics were not
    moved = pc.moved[0]
    assert moved and all(m.tested == (m.bootstrap_p is not None) for m in moved)
    # per-item conditions: tested by units, or "too small" with no p-value; group metrics: neither
    assert any(m.tested or m.too_small for m in moved) and any(not m.n_pairs for m in moved)
    assert all(m.p_holm is None for m in moved if not m.tested)
    assert all(m.p_holm >= m.bootstrap_p for m in moved if m.tested)  # Holm only raises p
    for m in moved:
        assert m.delta == pytest.approx(m.b - m.a) or math.isnan(m.delta)
    # the page's rules: a condition flagged in either profile (one answer throughout, too few
    # items) is marked and never counted as moved
    va, vb = ({(p.benchmark, p.name, p.condition.label): p for p in v.phen} for v in pc.views)
    for m in moved:
        k = (m.benchmark, m.phenomenon, m.condition)
        assert bool(m.flags) == bool(va[k].condition.flags() or vb[k].condition.flags())
        assert not (m.flags and m.significant)
    assert any(m.flags for m in moved)  # 8-item subsets: small sides
    out = tmp_path / "cmp"
    assert main(["profile", "compare", str(a), str(b), "--out", str(out)]) == 0
    data = json.loads((out / "compare.json").read_text())
    assert data["schema"] == "negbench.profile-compare/1" and len(data["profiles"]) == 2
    html = (out / "compare.html").read_text(encoding="utf-8")
    assert 'id="profile-compare-headline"' in html and 'id="profile-compare-phenomena"' in html
    assert 'id="cmp0"' in html  # negbench compare's table, flips linked
    # negbench report on profile folders: the page again, or the comparison
    assert main(["report", str(a), str(b), "--out", str(tmp_path / "rep")]) == 0
    assert (tmp_path / "rep" / "compare.html").is_file()


def test_report_writes_a_profiles_page_again(prof_a):
    prof, _ = prof_a
    page = prof.page
    page.unlink()
    assert main(["report", str(prof.folder)]) == 0
    assert page.is_file()


def test_bad_input_is_refused_before_the_model_loads(tmp_path, fixtures_env, capsys):
    out = tmp_path / "p"
    bogus = str(tmp_path / "no-such-model")  # never opened: the checks come first
    assert main(["profile", "--model", bogus, "--preset", "fast", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "unknown preset 'fast'" in err and "quick" in err and "paper" in err
    assert (
        main(["profile", "--model", bogus, "--benchmarks", "nubench,mmlu", "--out", str(out)]) == 2
    )
    assert "unknown benchmark(s) mmlu" in capsys.readouterr().err
    assert main(["profile", "--model", bogus, "--mode", "nubench", "--out", str(out)]) == 2
    assert "BENCH=MODE" in capsys.readouterr().err
    assert not out.exists()
    with pytest.raises(NegbenchError, match="has no mode 'api'"):
        negbench.profile("smollm2-135m-instruct", out=out, modes={"nubench": "api"})
    with pytest.raises(OptionError, match="not a benchmark of this profile"):
        negbench.profile("smollm2-135m-instruct", out=out, modes={"kmmlu": "symbol"})
    assert not out.exists()


def test_a_profile_without_data_lists_what_to_get_and_loads_no_model(
    tmp_path, fixtures_env, capsys
):
    out = tmp_path / "p"
    bogus = str(tmp_path / "no-such-model")
    assert (
        main(
            [
                "profile",
                "--model",
                "smollm2-135m-instruct",
                "--benchmarks",
                "condaqa,scone-nli",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    text = capsys.readouterr()
    assert "loading" not in text.err
    assert "not run: condaqa (condaqa): no data" in text.out and "NEGBENCH_CONDAQA" in text.out
    m = read_manifest(out)
    assert [b["status"] for b in m["benchmarks"]] == ["missing", "missing"] and m["headline"] == []
    html = (out / "profile.html").read_text(encoding="utf-8")
    assert 'id="profile-not-run"' in html and "github.com/selenashe/ScoNe" in html
    assert bogus not in html


def test_a_folder_holding_another_profile_is_refused(prof_a, tmp_path, tiny_llama, fixtures_env):
    prof, _ = prof_a
    with pytest.raises(OutputError, match="different configuration"):
        negbench.profile(tiny_llama, out=prof.folder, limit=LIMIT + 1, progress=False)
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="holds no negbench profile"):
        negbench.profile(tiny_llama, out=tmp_path / "x", progress=False)


class _FakeOpenAI(BaseHTTPRequestHandler):
    """The chat-completions endpoint of an OpenAI-style API, answering '3' (no log-probabilities:
    what a hosted API gives)."""

    def do_POST(self):  # noqa: N802  (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps(
            {
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": "fake",
                "system_fingerprint": "fp_test",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "3"},
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


def test_an_api_model_without_log_probabilities_runs_the_rest(tmp_path, fixtures_env, monkeypatch):
    pytest.importorskip("openai")
    server = HTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-negbench-FAKE-0123456789")
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{server.server_port}/v1")
        logs: list[str] = []
        prof = negbench.profile(
            "openai:gpt-4o-mini",
            out=tmp_path / "p",
            benchmarks=["nubench", "jsts-neg"],
            limit=4,
            max_retries=0,
            cache=str(tmp_path / "c.sqlite"),
            progress=False,
            log=logs.append,
        )
    finally:
        server.shutdown()
    st = {b["key"]: b for b in prof.benchmarks}
    assert st["jsts-neg"]["status"] == "done"  # the rest of the profile ran
    nub = st["nubench"]["parts"][0]
    assert st["nubench"]["status"] == "unsupported"
    assert "nubench" in nub["message"] and "completion" in nub["message"]
    assert "--mode nubench=option" in nub["fix"]  # the mode to use instead
    assert any("--mode nubench=option" in line for line in logs)
    row = next(x for x in prof.missing if x["benchmark"] == "nubench")
    assert row["status"] == "unsupported" and "--mode nubench=option" in row["how"]
    html = prof.page.read_text(encoding="utf-8")
    assert "--mode nubench=option" in html


def test_train_checks_its_profile_option_before_training(tmp_path, capsys):
    assert (
        main(
            ["train", "--recipe", "notadataset", "--out", str(tmp_path / "t"), "--profile", "fast"]
        )
        == 2
    )
    assert "unknown preset 'fast'" in capsys.readouterr().err
    assert not (tmp_path / "t").exists()


@pytest.mark.slow
@pytest.mark.skipif(
    not (SHARED / "data" / "scone").is_dir(), reason="../shared/data/scone not present"
)
def test_quick_preset_on_smollm2(tmp_path, monkeypatch):
    """The quick preset as shipped (its subset size, 0-shot, the headline mode) on the embedded
    SmolLM2 over ScoNe-NLI: the subset keeps every scope condition and the page shows each."""
    monkeypatch.setenv("NEGBENCH_DATA", str(SHARED / "data"))
    prof = negbench.profile(out=tmp_path / "p", benchmarks=["scone-nli"], progress=False)
    row = prof.headline[0]
    assert row["benchmark"] == "scone-nli" and row["shots"] == 0 and row["subset"]
    conds = {p["condition"]["label"] for p in prof.phenomena if p["benchmark"] == "scone-nli"}
    from negbench.tasks.scone.tasks import CONDITIONS

    assert conds == {c.replace("_", " ") for c in CONDITIONS if c != "no_negation"}


def test_a_part_of_several_tasks_gives_each_task_its_own_modes():
    """KoNUBench's diagnostics: KMMLU has only 'symbol', BoolQ only 'cloze' — the part asks each
    task for the modes it has (a task/mode pair that does not exist is an error in a run)."""
    from negbench.evaluation.runner import task_modes
    from negbench.profile.presets import by_key
    from negbench.profile.runner import task_mode_specs
    from negbench.tasks import get_task

    part = by_key()["konubench-diagnostics"].quick[0]
    specs = task_mode_specs(list(part.tasks), part.modes)
    assert specs == [
        "kmmlu-neg:symbol",
        "kmmlu-pos:symbol",
        "kobest-boolq-neg:cloze",
        "kobest-boolq:cloze",
    ]
    tasks = [get_task(t) for t in part.tasks]
    assert task_modes(list(part.tasks), tasks, specs) == {
        "kmmlu-neg": ["symbol"],
        "kmmlu-pos": ["symbol"],
        "kobest-boolq-neg": ["cloze"],
        "kobest-boolq": ["cloze"],
    }
    assert task_mode_specs(["kmmlu-neg", "kobest-boolq-neg"], part.modes) == [
        "kmmlu-neg:symbol",
        "kobest-boolq-neg:cloze",
    ]  # a task without data left out
    assert task_mode_specs(["nubench"], ("completion",)) == ["completion"]


def test_docs_state_the_quick_sizes_and_standard_errors_the_code_takes():
    """docs/profile.md's quick column and its standard errors are the presets' own numbers (it
    once said 250 / 150 / 200 items where the code took 60 / 30 / 32)."""
    import re

    from locations import ROOT
    from negbench.profile.presets import quick_sizes, quick_standard_errors

    doc = (ROOT / "docs" / "profile.md").read_text(encoding="utf-8")
    stated = {}
    for line in doc.splitlines():
        m = re.match(r"\| `([a-z-]+)` [^|]*\|[^|]*\|[^|]*\| ([0-9,]+|–)(?= )", line)
        if m:
            stated[m.group(1)] = None if m.group(2) == "–" else int(m.group(2).replace(",", ""))
    sizes = quick_sizes()
    assert set(stated) == {b.key for b in benchmarks()}, stated
    assert {k: v for k, v in stated.items() if v is not None} == sizes
    assert all(stated[b.key] is None for b in benchmarks() if not b.quick)
    block = re.search(
        r"<!-- quick-standard-errors -->\n(.*?)\n<!-- /quick-standard-errors -->", doc, re.S
    )
    assert block and block.group(1) == quick_standard_errors()


def test_a_missing_package_is_the_reason_and_its_fix_says_install_it(monkeypatch, tmp_path):
    """KoBEST BoolQ without the 'datasets' package: the not-run row's reason names the package
    and its "how" line starts with installing it (it used to give only the benchmark's
    where-to-get-the-data line, which does not answer that reason)."""
    import sys

    from negbench.profile.page import not_run
    from negbench.profile.presets import by_key
    from negbench.profile.runner import task_data

    monkeypatch.delenv("NEGBENCH_KOBEST_BOOLQ", raising=False)
    monkeypatch.setenv("NEGBENCH_DATA", str(tmp_path))
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets fails
    miss = task_data("kobest-boolq", shots=False)
    assert miss is not None and "needs the 'datasets' package" in miss["message"]
    b = by_key()["konubench-diagnostics"]
    manifest = {
        "benchmarks": [
            {
                "key": b.key,
                "how_to_get": b.how_to_get,
                "parts": [{"status": "done", "spec": {"tasks": []}, "missing": [miss]}],
            }
        ]
    }
    (row,) = not_run(manifest)
    assert row["why"] == miss["message"]
    assert row["how"].startswith("pip install -c constraints.txt datasets"), row["how"]
    assert "NEGBENCH_KOBEST_BOOLQ" in row["how"] and b.how_to_get in row["how"]


def test_glance_plot_marks_a_constant_answer_score():
    """A score the model got by answering one label throughout is drawn hollow and labelled
    '(one label)': it is the items' label balance, not a measure of the model."""
    pytest.importorskip("matplotlib")
    from negbench.profile.page import HeadlineRow, glance_plot

    def row(task: str, value: float, constant: str | None) -> HeadlineRow:
        return HeadlineRow(
            benchmark=task,
            title=task,
            task=task,
            tasks=[task],
            mode="symbol",
            shots=0,
            metric="acc",
            units=[f"{task}.symbol.0shot"],
            value=value,
            ci=(value - 10, value + 10),
            n=60,
            full=None,
            subset="",
            seeds=[],
            seed_sd=None,
            chance=50.0,
            constant=constant,
        )

    p = glance_plot([("m", [row("kmmlu-pos", 70.0, "answers 'A'"), row("konubench", 40.0, None)])])
    assert p is not None
    ax = p._fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == [
        "kmmlu-pos · symbol · 0-shot\nacc (one label)",
        "konubench · symbol · 0-shot\nacc",
    ]
    faces = {
        round(float(ln.get_xdata()[0])): ln.get_markerfacecolor()
        for ln in ax.lines
        if ln.get_marker() not in ("None", "", None, "|") and len(ln.get_xdata()) == 1
    }
    assert faces[70] == "white" and faces[40] != "white"
    assert "one label throughout" in [t.get_text() for t in ax.get_legend().get_texts()]
    import matplotlib.pyplot as plt

    plt.close(p._fig)
