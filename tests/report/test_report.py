"""Reports (issue 7) on real saved runs made by the engine with tiny random models: paper-shaped
tables whose every cell is recomputed from the per-sample records, plots, the HTML file, run
comparisons (flips, McNemar, paired bootstrap), the JSON schema and the CSV export, and clear
errors for folders that are not runs.

Models: A = the ``tiny_llama`` fixture, B = the same weights with seeded noise (a different
model), and A + a random LoRA adapter (a "fine-tuned" run, zero-shot).  Two sets of runs, each
with one run per model (a report has one row per run):

* the main runs (~20 s; shared with the browser test): negation-mini, truefalse-mini and the
  NUBench fixtures, shots 0 and 1 (seeds 1, 2), ``limit=8``;
* the not-a-dataset runs (~2 s; shared too): the real ``notadataset`` task on our whole fixture
  (5 blocks, 30 sentences, $NEGBENCH_NOTADATASET; no limit: coherence needs whole blocks),
  zero-shot as in the paper's Table 4: A next-token and cloze, B next-token and the official
  generation path, A + LoRA next-token;
* the JSTS-Neg runs (~12 s): the real ``jsts-neg`` task on our whole fixture (14 instances, 15
  minimal pairs, $NEGBENCH_JSTS_NEG) at the paper's shots 0 / 4 / 11 — its Tables 3, 4 and 5 —
  in ``loglik`` mode (A, seeds 1 and 2), and zero-shot in ``loglik`` and the paper's ``generate``
  mode (B).  (A run has one shots list for all its tasks, hence separate runs per benchmark.)
"""

from __future__ import annotations

import csv
import json
import math
import shutil
import statistics
from pathlib import Path

import pytest

from negbench.errors import DataError, NegbenchError, OutputError
from negbench.report import compare as cmpmod
from negbench.report.build import build, write
from negbench.cli.report import main as report_main
from negbench.scoring.runs import load_run, load_runs
from negbench.report.schema import COMPARE, REPORT, RESULTS, validate
from negbench.scoring.tables import ref_samples, resolve_ref
from locations import TEST_DATA

DATA = TEST_DATA
NUBENCH_FIX = DATA / "nubench"
NAD_FIX = DATA / "notadataset" / "raw"
JSTS_FIX = DATA / "jsts_neg"


def _nubench_short_generation():
    """The real ``nubench`` task on the fixtures, its option mode generating at most 12 tokens
    instead of 256 (a random model never stops early; prompts, filter and scoring unchanged)."""
    import dataclasses
    import negbench.tasks.nubench.tasks as nb

    task = next(t for t in nb.make_tasks(NUBENCH_FIX) if t.name == "nubench")
    opt = task.modes["option"]
    modes = {
        **task.modes,
        "option": dataclasses.replace(
            opt, formulation=dataclasses.replace(opt.formulation, max_tokens=12)
        ),
    }
    return dataclasses.replace(task, modes=modes)


@pytest.fixture(scope="module", autouse=True)
def _fixture_data():
    """The real tasks read our fixtures (and nubench generates 12 tokens at most)."""
    import negbench.tasks as registry

    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(registry.REGISTRY.table("task"), "nubench", _nubench_short_generation())
        mp.setenv("NEGBENCH_NUBENCH", str(NUBENCH_FIX))
        mp.setenv("NEGBENCH_NOTADATASET", str(NAD_FIX))
        mp.setenv("NEGBENCH_JSTS_NEG", str(JSTS_FIX))
        yield


# -- engine runs -----------------------------------------------------------------------------------
_MODELS: dict[str, tuple[str, str, str]] = {}
_RUNS: dict[str, dict[str, Path]] = {}
_JSTS: dict[str, dict[str, Path]] = {}


def _perturbed_model(src: str, dst: Path) -> str:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(src)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.add_(torch.randn(p.shape, generator=g) * p.std() * 0.7)
    model.save_pretrained(dst)
    for f in Path(src).iterdir():
        if (
            f.name.startswith(("tokenizer", "special_tokens"))
            or f.name == "vocab.json"
            or f.name == "merges.txt"
        ):
            shutil.copy(f, dst / f.name)
    return str(dst)


def _lora_adapter(src: str, dst: Path) -> str:
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(2)
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(src),
        LoraConfig(
            r=4, lora_alpha=16, target_modules=["q_proj", "v_proj"], init_lora_weights=False
        ),
    )
    model.save_pretrained(dst)
    return str(dst)


def _run(model: str, out: Path, tasks, modes, shots, seeds, limit, adapter=None) -> Path:
    from negbench.backends.hf import HFBackend
    from negbench.core.engine import Engine, EngineConfig
    from negbench.evaluation.runner import RunConfig, evaluate
    from negbench.evaluation.store import RunStore

    be = HFBackend(model, dtype="float32", device="cpu", adapter=adapter)
    eng = Engine(be, None, EngineConfig(progress=False))
    cfg = RunConfig(
        model=model,
        tasks=list(tasks),
        modes=list(modes),
        shots=list(shots),
        seeds=list(seeds),
        limit=limit,
        backend={"adapter": adapter} if adapter else {},
    )
    evaluate(cfg, be, eng, RunStore(out), log=lambda s: None)
    return out


def _check_fixture_env() -> None:
    import os
    import negbench.tasks as registry

    assert registry.get_task("nubench").modes[
        "option"
    ].formulation.max_tokens == 12 and os.environ.get("NEGBENCH_NOTADATASET") == str(NAD_FIX), (
        "the _fixture_data fixture must be active"
    )


def models(root: Path, tiny_llama: str) -> tuple[str, str, str]:
    """Model A, model B and a LoRA adapter on A (made once per session)."""
    if tiny_llama not in _MODELS:
        model_a = str(shutil.copytree(tiny_llama, root / "tiny-a"))
        _MODELS[tiny_llama] = (
            model_a,
            _perturbed_model(model_a, root / "tiny-b"),
            _lora_adapter(model_a, root / "lora"),
        )
    return _MODELS[tiny_llama]


def engine_runs(root: Path, tiny_llama: str) -> dict[str, Path]:
    """The main saved runs and the not-a-dataset runs (made once per session)."""
    if tiny_llama in _RUNS:
        return _RUNS[tiny_llama]
    _check_fixture_env()
    tasks = ["negation-mini", "truefalse-mini", "nubench"]
    modes = ["negation-mini:cloze", "truefalse-mini:cloze+next_token", "nubench:completion+option"]
    model_a, model_b, adapter = models(root, tiny_llama)
    runs = {
        "a": _run(model_a, root / "run-a", tasks, modes, [0, 1], [1, 2], 8),
        "b": _run(model_b, root / "run-b", tasks, modes, [0, 1], [1, 2], 8),
        "sft": _run(model_a, root / "run-sft", tasks, modes, [0], [1], 8, adapter=adapter),
        "tf": _run(model_a, root / "run-tf", ["truefalse-mini"], ["next_token"], [0], [1], 4),
        "nm": _run(model_a, root / "run-nm", ["negation-mini"], ["cloze"], [0], [1], 4),
        "nad-a": _run(
            model_a, root / "nad-a", ["notadataset"], ["next_token", "cloze"], [0], [1], None
        ),
        "nad-b": _run(
            model_b, root / "nad-b", ["notadataset"], ["next_token", "generate"], [0], [1], None
        ),
        "nad-sft": _run(
            model_a,
            root / "nad-sft",
            ["notadataset"],
            ["next_token"],
            [0],
            [1],
            None,
            adapter=adapter,
        ),
    }
    _RUNS[tiny_llama] = runs
    return runs


def jsts_runs(root: Path, tiny_llama: str) -> dict[str, Path]:
    """Runs of the real jsts-neg task on the whole fixture (once per session)."""
    if tiny_llama in _JSTS:
        return _JSTS[tiny_llama]
    _check_fixture_env()
    model_a, model_b, _ = models(root, tiny_llama)
    _JSTS[tiny_llama] = {
        # Tables 3-5: 0 / 4 / 11 shots, two seeds, log-likelihood of the six labels
        "ja-a": _run(model_a, root / "ja-a", ["jsts-neg"], ["loglik"], [0, 4, 11], [1, 2], None),
        # zero-shot, also in the paper's generation mode
        "ja-b": _run(model_b, root / "ja-b", ["jsts-neg"], ["loglik", "generate"], [0], [1], None),
    }
    return _JSTS[tiny_llama]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_llama):
    root = tmp_path_factory.mktemp("report-runs")
    return {**engine_runs(root, tiny_llama), **jsts_runs(root, tiny_llama)}


@pytest.fixture(scope="module")
def report(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    rep = build(
        [runs["a"], runs["b"], runs["sft"]], groups={"tiny": ["tiny-a", "tiny-b"]}, n_resamples=500
    )
    write(rep, out)
    return rep, out


@pytest.fixture(scope="module")
def nad_report(runs, tmp_path_factory):
    """This is not a Dataset, zero-shot: A (next-token, cloze), B (next-token, generate), A + LoRA."""
    out = tmp_path_factory.mktemp("nad-report")
    rep = build([runs["nad-a"], runs["nad-b"], runs["nad-sft"]], n_resamples=500)
    write(rep, out)
    return rep, out


@pytest.fixture(scope="module")
def jsts_report(runs, tmp_path_factory):
    """JSTS-Neg: A at 0 / 4 / 11 shots (loglik), B zero-shot (loglik, generate)."""
    out = tmp_path_factory.mktemp("jsts-report")
    rep = build([runs["ja-a"], runs["ja-b"]], n_resamples=500)
    write(rep, out)
    return rep, out


def _samples(run: Path, unit: str) -> list[dict]:
    return [
        json.loads(l)
        for l in (run / "samples" / f"{unit}.jsonl").read_text().splitlines()
        if l.strip()
    ]


def _table(rep, id_):
    return next(t for t in rep.tables if t.id == id_)


def _row(table, row_labels):
    return next(r for r in table.rows if r.labels[: len(row_labels)] == list(row_labels))


def _cell(table, row_labels, column_key):
    ci = next(i for i, c in enumerate(table.columns) if c.key == column_key)
    return _row(table, row_labels).cells[ci]


# -- tables ----------------------------------------------------------------------------------------
def test_report_writes_every_format(report):
    rep, out = report
    labels = [r.label for r in rep.runs]
    assert labels == ["tiny-a", "tiny-b", "tiny-a+lora"]
    for f in (
        "report.md",
        "report.tex",
        "report.html",
        "report.json",
        "csv/units.csv",
        "csv/groups.csv",
        "csv/tables.csv",
        "csv/samples.csv",
        "csv/comparisons.csv",
        "csv/flips.csv",
    ):
        assert (out / f).is_file(), f
    ids = {t.id for t in rep.tables}
    assert {
        "nubench-accuracy",
        "nubench-completion-errors",
        "nubench-option-errors",
        "negation-mini-accuracy",
        "negation-mini-cloze-errors",
        "truefalse-mini-accuracy",
    } <= ids
    md = (out / "report.md").read_text()
    assert "Thunder-NUBench (nubench, simple prompt)" in md and "| model |" in md
    tex = (out / "report.tex").read_text()
    # the paper tables, after the Headline table (n, subset, 95 % CI of every group)
    assert tex.count("\\begin{tabular}") == tex.count("\\end{tabular}") == len(rep.tables) + 1
    assert rep.headline is not None and "Headline metric per unit" in md and "95 % CI" in md
    assert "\\multicolumn{2}{c}{zero-shot}" in tex and "$\\pm$" in tex
    # NUBench Table 11 shape: shots × (completion, option) and the fine-tuned run's After SFT column
    t11 = _table(rep, "nubench-accuracy")
    assert [c.path for c in t11.columns] == [
        ("zero-shot", "completion"),
        ("zero-shot", "option"),
        ("1-shot", "completion"),
        ("1-shot", "option"),
        ("After SFT", "completion"),
        ("After SFT", "option"),
    ]
    assert [r.labels[0] for r in t11.rows] == ["tiny-a", "tiny-b", "tiny average", "total average"]
    sft = _cell(t11, ["tiny-a"], "sft.completion")
    assert sft.ref.run == 2 and sft.ref.units == ["nubench.completion.0shot"]
    assert _cell(t11, ["tiny-b"], "sft.completion") is None
    few = _cell(t11, ["tiny-a"], "1shot.completion")
    assert few.n == 2 and few.sd is not None and " ± " in few.text()
    # NUBench Table 6 shape for option mode: the answer-format-wrong count is there
    t6 = _table(rep, "nubench-option-errors")
    assert t6.row_header == ["model", "setting", "shots"]
    assert [c.key for c in t6.columns][:2] == ["error_rate", "format_wrong"]
    assert {tuple(r.labels[1:]) for r in t6.rows} >= {
        ("baseline", "zero-shot"),
        ("SFT", "zero-shot"),
    }


def test_notadataset_tables(nad_report):
    """This is not a Dataset Tables 4, 5 and 7 (columns) from the real task's runs."""
    rep, out = nad_report
    assert [r.label for r in rep.runs] == ["tiny-a", "tiny-b", "tiny-a+lora"]
    assert not [w for w in rep.warnings if "not compared" in w or "saved" in w]
    assert [t.id for t in rep.tables] == [
        "notadataset-table4",
        "notadataset-table5",
        "notadataset-table7",
    ]
    # Table 4: the paper's columns, its Random row, a row per model × mode (zero-shot)
    t4 = _table(rep, "notadataset-table4")
    assert [c.path for c in t4.columns] == [
        ("Coherence", "All"),
        ("Coherence", "W/o Distractor"),
        ("Coherence", "W/ Distractor"),
        ("Accuracy", "All"),
        ("Accuracy", "W/o Distractor", "Affirmation"),
        ("Accuracy", "W/o Distractor", "Negation"),
        ("Accuracy", "W/ Distractor", "Affirmation"),
        ("Accuracy", "W/ Distractor", "Negation"),
    ]
    assert [(r.kind, r.labels) for r in t4.rows] == [
        ("baseline", ["Random", "fair coin (expected)", "same sentences"]),
        ("run", ["tiny-a", "next_token", "zero-shot"]),
        ("run", ["tiny-a", "cloze", "zero-shot"]),
        ("run", ["tiny-b", "next_token", "zero-shot"]),
        ("run", ["tiny-b", "generate", "zero-shot"]),
        ("run", ["tiny-a+lora", "next_token", "zero-shot"]),
    ]
    c = _cell(t4, ["tiny-a", "next_token"], "acc_neg_w")
    assert c.ref.units == ["notadataset.next_token.0shot"] and c.ref.field == "acc" and c.n == 1
    # generation records carry exact_match, not acc: the accuracy cells read it
    gen = _cell(t4, ["tiny-b", "generate"], "acc")
    assert gen is not None and gen.ref.field == "exact_match"
    units = json.loads((rep.runs[1].path / "results.json").read_text())["units"]
    assert gen.value == pytest.approx(
        100 * units["notadataset.generate.0shot"]["metrics"]["exact_match"]
    )
    # the Random row is the task's own random_baseline (percent) on the same 30 sentences
    saved = units["notadataset.next_token.0shot"]["metrics"]["random_baseline"]
    assert [c.value for c in _row(t4, ["Random"]).cells] == pytest.approx(
        [saved[c.key] for c in t4.columns], nan_ok=True
    )
    html = t4.to_html()
    assert 'colspan="5"' in html and 'colspan="2"' in html and 'rowspan="2"' in html
    # Table 5: the patterns #01-#04 of the fixture (#02 Antonymy), without distractor
    t5 = _table(rep, "notadataset-table5")
    assert [c.path for c in t5.columns] == [
        ("W/o Distractor", "Affirmation"),
        ("W/o Distractor", "Negation"),
    ]
    assert [r.labels for r in t5.rows] == [r.labels + ["#02 Antonymy"] for r in t4.rows[1:]]
    # Table 7 columns
    t7 = _table(rep, "notadataset-table7")
    assert [c.label() for c in t7.columns] == [
        "Verbal",
        "Non-Verbal",
        "Analytic",
        "Synthetic",
        "Clausal",
        "Subclausal",
        "Affirmation",
    ]
    md = (out / "report.md").read_text()
    assert (
        "This is not a Dataset (notadataset): coherence and accuracy" in md and "| Random |" in md
    )
    tex = (out / "report.tex").read_text()
    assert (
        tex.count("\\begin{tabular}") == 3 + 1 and "\\multicolumn{5}{c}{Accuracy}" in tex
    )  # + Headline


def test_jsts_neg_tables(jsts_report):
    """JSTS-Neg Tables 3, 4 and 5 (0 / 4 / 11 shots) from the real task's runs."""
    rep, out = jsts_report
    assert [r.label for r in rep.runs] == ["tiny-a", "tiny-b"]
    assert [t.id for t in rep.tables] == [
        "jsts-neg-generate-0shot-accchg",
        "jsts-neg-loglik-0shot-accchg",
        "jsts-neg-loglik-4shot-accchg",
        "jsts-neg-loglik-11shot-accchg",
    ]
    for k, paper, rows in (
        (0, "Table 3", ["tiny-a", "tiny-b"]),
        (4, "Table 4", ["tiny-a"]),
        (11, "Table 5", ["tiny-a"]),
    ):
        t = _table(rep, f"jsts-neg-loglik-{k}shot-accchg")
        assert t.paper == f"JSTS-Neg {paper} (shape)" and [r.labels for r in t.rows] == [
            [x] for x in rows
        ]
        assert [c.path for c in t.columns] == [
            (s, st) for s in ("M", "M_i", "M_u") for st in ("Acc", "Acc'", "AccChg")
        ]
        assert all(c.n == (1 if k == 0 else 2) for _, _, _, _, c in t.cells())
        if k:
            assert all(c.sd is not None and " ± " in c.text() for _, _, _, _, c in t.cells())
    assert [r.labels for r in _table(rep, "jsts-neg-generate-0shot-accchg").rows] == [["tiny-b"]]
    md = (out / "report.md").read_text()
    assert "JSTS-Neg (jsts-neg, loglik): AccChg results in the 11-shot setting" in md
    tex = (out / "report.tex").read_text()
    assert (
        tex.count("\\begin{tabular}") == 4 + 1 and "\\multicolumn{3}{c}{M\\_i}" in tex
    )  # + Headline


def _trace(rep) -> int:
    cache: dict = {}
    checked = 0
    for t in rep.tables:
        for _, _, row, col, c in t.cells():
            if row.kind in ("average", "paper"):
                assert c.ref is None
                continue
            assert c.ref is not None, (t.id, row.labels, col.path)
            v, s = resolve_ref(rep.runs[c.ref.run], c.ref, cache)
            if c.value is None or (isinstance(c.value, float) and math.isnan(c.value)):
                assert math.isnan(v), (t.id, row.labels, col.path)
            else:
                assert v == pytest.approx(c.value, abs=1e-9), (t.id, row.labels, col.path)
            if c.n > 1:
                assert s == pytest.approx(c.sd, abs=1e-9)
            checked += 1
    return checked


def test_every_table_cell_traces_back_to_samples(report, nad_report, jsts_report):
    """Each cell's Ref recomputes it from samples/*.jsonl alone (the task's metric code for
    group-level metrics such as coherence and the minimal-pair scores, plain filters otherwise)
    and gives the table's value and SD."""
    assert _trace(report[0]) > 150
    assert _trace(nad_report[0]) > 80 and _trace(jsts_report[0]) > 40


def test_cells_recomputed_independently(report, runs):
    """A few cells recomputed here from the JSON lines, with no negbench code."""
    rep, _ = report
    a = runs["a"]
    # NUBench Table 11: completion 1-shot accuracy, mean ± SD over seeds 1 and 2
    c = _cell(_table(rep, "nubench-accuracy"), ["tiny-a"], "1shot.completion")
    per_seed = [
        statistics.mean(r["acc"] for r in _samples(a, f"nubench.completion.1shot.seed{s}"))
        for s in (1, 2)
    ]
    assert c.value == pytest.approx(statistics.mean(per_seed))
    assert c.sd == pytest.approx(statistics.stdev(per_seed))
    # After SFT cell from the adapter run
    c = _cell(_table(rep, "nubench-accuracy"), ["tiny-a"], "sft.option")
    assert c.value == pytest.approx(
        statistics.mean(r["exact_match"] for r in _samples(runs["sft"], "nubench.option.0shot"))
    )
    # NUBench Table 6: option zero-shot error rate and format-wrong count
    t6 = _table(rep, "nubench-option-errors")
    recs = _samples(a, "nubench.option.0shot")
    wrong = [r for r in recs if r["answer"] is None or r["answer"] != r["choices"][r["gold_index"]]]
    assert _cell(t6, ["tiny-a", "baseline", "zero-shot"], "error_rate").value == pytest.approx(
        len(wrong) / len(recs)
    )
    assert _cell(t6, ["tiny-a", "baseline", "zero-shot"], "format_wrong").value == sum(
        r["answer"] is None for r in recs
    )
    # negation-mini cloze zero-shot: incorrect-choice share and confusion for one clause type
    t = _table(rep, "negation-mini-cloze-errors")
    for run, label in ((a, "tiny-a"), (runs["b"], "tiny-b")):
        recs = _samples(run, "negation-mini.cloze.0shot")
        picked = [
            r["meta"]["option_types"][r["pred"]] for r in recs if r["pred"] != r["gold_index"]
        ]
        want = 100 * picked.count("contradiction") / len(picked) if picked else float("nan")
        got = _cell(t, [label, "baseline", "zero-shot"], "incorrect.contradiction").value
        assert (math.isnan(want) and math.isnan(got)) or got == pytest.approx(want)
        for sub in ("relative_part", "pp_part"):
            items = [r for r in recs if r["meta"]["local_negation_type"] == sub]
            local = [r for r in items if r["meta"]["option_types"][r["pred"]] == "local"]
            got = _cell(t, [label, "baseline", "zero-shot"], f"confusion.{sub}")
            assert got.value == pytest.approx(100 * len(local) / len(items))
    # truefalse-mini: accuracy on negated statements, next-token, 1-shot, both seeds
    t = _table(rep, "truefalse-mini-accuracy")
    per_seed = [
        statistics.mean(
            r["acc"]
            for r in _samples(a, f"truefalse-mini.next_token.1shot.seed{s}")
            if r["meta"]["negated"]
        )
        for s in (1, 2)
    ]
    assert _cell(t, ["tiny-a", "next_token", "1-shot"], "acc_negated").value == pytest.approx(
        100 * statistics.mean(per_seed)
    )


# -- This is not a Dataset and JSTS-Neg cells by hand (src/negbench/tasks/notadataset/README.md, src/negbench/tasks/jsts_neg/README.md) ------
def _nad_pred(r: dict) -> bool:
    """§4.2: True iff P(t)/(P(t)+P(f)) > 0.5, i.e. log P(t) > log P(f) (a tie is False);
    generation: True iff 'true' occurs in the lower-cased output."""
    if r["mode"] == "generate":
        return "true" in r["output"].lower()
    lt, lf = r["logprobs"]
    return lt > lf


def _nad_coherence(recs: list[dict]) -> dict[str, float]:
    """Table 4's coherence columns in percent (2 decimals, as the official scorer): per block,
    only the sentences whose label is the pattern's regular one (Table 10: without distractor,
    affirmations True and negations False, the other way round in the antonymy patterns #02 and
    #04; with distractor, affirmations False and negations True) take part; the affirmative
    answers must all be equal, the negated ones too, and the two opposite — without distractor
    (W/o) and with (W/). All: both, and every answer of the block right or every one wrong."""
    blocks: dict[str, list[dict]] = {}
    for r in recs:
        blocks.setdefault(r["meta"]["block"], []).append(r)
    verdicts = []
    for block in blocks.values():
        assert len(block) == block[0]["meta"]["block_size"]  # whole blocks
        antonymy = block[0]["meta"]["pattern_id"] in (2, 4)
        side: dict[tuple[bool, bool], list[bool]] = {}
        for r in block:
            m = r["meta"]
            aff = m["negation_type"] == "affirmation"
            regular = (not aff) if m["is_distractor"] else (aff != antonymy)
            if m["label"] == regular:
                side.setdefault((m["is_distractor"], aff), []).append(_nad_pred(r))
        coh = {}
        for name, d in (("wo", False), ("w", True)):
            a, n = side[(d, True)], side[(d, False)]
            coh[name] = len(set(a)) == 1 and len(set(n)) == 1 and a[0] != n[0]
        right = [_nad_pred(r) == r["meta"]["label"] for r in block]
        coh["all"] = coh["wo"] and coh["w"] and (all(right) or not any(right))
        verdicts.append(coh)
    return {
        k: round(100 * sum(v[k] for v in verdicts) / len(verdicts), 2) for k in ("all", "wo", "w")
    }


def test_notadataset_cells_by_hand(nad_report, runs):
    """Table 4 accuracy and coherence cells (and one of Table 5) of every next-token and
    generation row, recomputed from the records with the definitions of src/negbench/tasks/notadataset/README.md."""
    rep, _ = nad_report
    t4, t5 = _table(rep, "notadataset-table4"), _table(rep, "notadataset-table5")
    seen = set()
    for label, run, mode in (
        ("tiny-a", runs["nad-a"], "next_token"),
        ("tiny-b", runs["nad-b"], "next_token"),
        ("tiny-b", runs["nad-b"], "generate"),
        ("tiny-a+lora", runs["nad-sft"], "next_token"),
    ):
        recs = _samples(run, f"notadataset.{mode}.0shot")
        assert len(recs) == 30
        row = [label, mode, "zero-shot"]
        right = [_nad_pred(r) == r["meta"]["label"] for r in recs]
        # accuracy: the right truth value said, on a subset of the sentences
        for col, keep in (
            ("acc", lambda m: True),
            (
                "acc_aff_wo",
                lambda m: not m["is_distractor"] and m["negation_type"] == "affirmation",
            ),
            (
                "acc_neg_wo",
                lambda m: not m["is_distractor"] and m["negation_type"] != "affirmation",
            ),
            ("acc_aff_w", lambda m: m["is_distractor"] and m["negation_type"] == "affirmation"),
            ("acc_neg_w", lambda m: m["is_distractor"] and m["negation_type"] != "affirmation"),
        ):
            sub = [ok for ok, r in zip(right, recs) if keep(r["meta"])]
            assert _cell(t4, row, col).value == pytest.approx(100 * statistics.mean(sub)), (
                row,
                col,
            )
        # coherence per block
        coh = _nad_coherence(recs)
        for col, k in (
            ("coherence_all", "all"),
            ("coherence_wo_distractor", "wo"),
            ("coherence_w_distractor", "w"),
        ):
            assert _cell(t4, row, col).value == pytest.approx(coh[k]), (row, col)
            seen.add(coh[k])
        # Table 5: #02 Antonymy, negations without distractor
        sub = [
            ok
            for ok, r in zip(right, recs)
            if r["meta"]["pattern"] == "Antonymy1"
            and not r["meta"]["is_distractor"]
            and r["meta"]["negation_type"] != "affirmation"
        ]
        assert _cell(t5, row, "acc_neg_wo").value == pytest.approx(100 * statistics.mean(sub))
    assert len(seen) > 1, "the coherence cells should not all be equal"


def _jsts_pairs(recs: list[dict]) -> list[tuple[dict, dict]]:
    """(control, treatment): the treatment is the control with one negation cue added to one
    sentence, in the same group (M = M_single ∪ M_both, §3.3)."""
    key = {(r["meta"]["group"], r["meta"]["s1_neg_id"], r["meta"]["s2_neg_id"]): r for r in recs}
    out = []
    for t in recs:
        g, a, b = t["meta"]["group"], t["meta"]["s1_neg_id"], t["meta"]["s2_neg_id"]
        for ck in ([(g, None, b)] if a is not None else []) + (
            [(g, a, None)] if b is not None else []
        ):
            if ck in key:
                out.append((key[ck], t))
    return out


def _jsts_right(r: dict) -> bool:
    """loglik: the highest-scoring label is the gold score; generate: the first number of the
    output (NFKC) is the gold score."""
    if r["mode"] == "loglik":
        return r["scores"].index(max(r["scores"])) == r["meta"]["gold"]
    return r["answer"] is not None and int(r["answer"]) == r["meta"]["gold"]


def test_jsts_neg_cells_by_hand(jsts_report, runs):
    rep, _ = jsts_report
    for run, label, mode, k in (
        (runs["ja-a"], "tiny-a", "loglik", 4),
        (runs["ja-a"], "tiny-a", "loglik", 11),
        (runs["ja-b"], "tiny-b", "loglik", 0),
        (runs["ja-b"], "tiny-b", "generate", 0),
    ):
        units = (
            [f"jsts-neg.{mode}.0shot"]
            if k == 0
            else [f"jsts-neg.{mode}.{k}shot.seed{s}" for s in (1, 2)]
        )
        t = _table(rep, f"jsts-neg-{mode}-{k}shot-accchg")
        per: dict[str, list[float]] = {}
        for u in units:
            recs = _samples(run, u)
            pairs = _jsts_pairs(recs)
            assert (len(pairs), sum(c["meta"]["gold"] != x["meta"]["gold"] for c, x in pairs)) == (
                15,
                10,
            )
            for s, keep in (
                ("M", lambda c, x: True),
                ("Mi", lambda c, x: c["meta"]["gold"] != x["meta"]["gold"]),
                ("Mu", lambda c, x: c["meta"]["gold"] == x["meta"]["gold"]),
            ):
                ps = [(c, x) for c, x in pairs if keep(c, x)]
                acc = 100 * statistics.mean(_jsts_right(c) for c, _ in ps)
                acc_p = 100 * statistics.mean(_jsts_right(x) for _, x in ps)
                per.setdefault(f"{s}.acc", []).append(acc)
                per.setdefault(f"{s}.acc_prime", []).append(acc_p)
                per.setdefault(f"{s}.acc_chg", []).append(acc_p - acc)
        for key, vals in per.items():
            c = _cell(t, [label], key)
            assert c.value == pytest.approx(statistics.mean(vals)), (mode, k, key)
            if len(vals) > 1:
                assert c.sd == pytest.approx(statistics.stdev(vals))


def test_ref_samples_are_the_counted_records(report, nad_report, runs):
    rep, _ = report
    t = _table(rep, "negation-mini-cloze-errors")
    c = _cell(t, ["tiny-b", "baseline", "1-shot"], "incorrect.local")
    got = ref_samples(rep.runs[c.ref.run], c.ref)
    want = [
        (u, r["doc_id"])
        for u in ("negation-mini.cloze.1shot.seed1", "negation-mini.cloze.1shot.seed2")
        for r in _samples(runs["b"], u)
        if r["pred"] != r["gold_index"] and r["meta"]["option_types"][r["pred"]] == "local"
    ]
    assert [(v["u"], v["id"]) for v in got] == want
    assert all(v["error_type"] == "local" and v["correct"] is False for v in got)
    # not-a-dataset: the samples behind an accuracy cell are its sentences, behind coherence all
    brep, _ = nad_report
    t4 = _table(brep, "notadataset-table4")
    c = _cell(t4, ["tiny-a", "cloze", "zero-shot"], "acc_neg_w")
    got = ref_samples(brep.runs[c.ref.run], c.ref)
    want = [
        (u, r["doc_id"])
        for u in c.ref.units
        for r in _samples(runs["nad-a"], u)
        if r["meta"]["is_distractor"] and r["meta"]["negation_type"] != "affirmation"
    ]
    assert len(want) == 10 and [(v["u"], v["id"]) for v in got] == want
    c = _cell(t4, ["tiny-a", "next_token", "zero-shot"], "coherence_all")
    assert len(ref_samples(brep.runs[c.ref.run], c.ref)) == 30


def test_json_schema_and_csv(report, nad_report, jsts_report, runs):
    rep, out = report
    data = json.loads((out / "report.json").read_text())
    assert validate(data, REPORT) == []
    assert data["schema"] == "negbench.report/1"
    for c in data["comparisons"]:
        assert validate(c, COMPARE) == []
    for name in ("compare-cmp0.json", "compare-cmp1.json"):
        assert validate(json.loads((out / name).read_text()), COMPARE) == []
    res = json.loads((runs["a"] / "results.json").read_text())
    assert validate(res, RESULTS) == []
    assert validate({**res, "schema": 2}, RESULTS)  # the validator does reject things
    for k in ("nad-a", "nad-b", "nad-sft", "ja-a", "ja-b"):
        assert validate(json.loads((runs[k] / "results.json").read_text()), RESULTS) == []
    for _, folder in (nad_report, jsts_report):
        assert validate(json.loads((folder / "report.json").read_text()), REPORT) == []
    rows = list(csv.DictReader((out / "csv" / "tables.csv").open()))
    assert len(rows) == sum(1 for t in rep.tables for _ in t.cells())
    cell = _cell(_table(rep, "nubench-accuracy"), ["tiny-a"], "1shot.completion")
    r = next(
        x
        for x in rows
        if x["table"] == "nubench-accuracy"
        and x["row"] == "tiny-a"
        and x["column"] == "1-shot / completion"
    )
    assert float(r["value"]) == pytest.approx(cell.value) and float(r["sd"]) == pytest.approx(
        cell.sd
    )
    units = list(csv.DictReader((out / "csv" / "units.csv").open()))
    u = next(
        x
        for x in units
        if x["label"] == "tiny-a"
        and x["unit"] == "nubench.completion.0shot"
        and x["metric"] == "acc"
    )
    assert float(u["value"]) == res["units"]["nubench.completion.0shot"]["metrics"]["acc"]
    groups = list(csv.DictReader((out / "csv" / "groups.csv").open()))
    g = next(
        x
        for x in groups
        if x["label"] == "tiny-a"
        and x["task"] == "nubench"
        and x["mode"] == "completion"
        and x["shots"] == "1"
        and x["metric"] == "acc"
    )
    assert float(g["mean"]) == pytest.approx(
        res["groups"]["nubench.completion.1shot"]["metrics"]["acc"]["mean"]
    )
    samples = list(csv.DictReader((out / "csv" / "samples.csv").open()))
    assert (
        len(samples)
        == len(rep.views)
        == sum(
            len(_samples(runs[k], u))
            for k in ("a", "b", "sft")
            for u in json.loads((runs[k] / "results.json").read_text())["units"]
        )
    )
    flips = list(csv.DictReader((out / "csv" / "flips.csv").open()))
    assert len(flips) == sum(len(c["flips"]) for c in rep.comparisons)


def test_plots(report, nad_report, jsts_report):
    rep, out = report
    assert {p.kind for p in rep.plots} == {
        "accuracy_vs_shots",
        "incorrect_choice",
        "confusion",
        "calibration",
    }
    for p in rep.plots:
        assert p.svg.startswith("<svg") and "</svg>" in p.svg
        assert (out / p.files[0]).is_file() and (out / p.files[1]).stat().st_size > 1000
    shots = next(p for p in rep.plots if p.id == "shots-nubench")
    assert "tiny-a+lora (SFT)" in shots.svg and "tiny average" in shots.svg
    assert "calibration-truefalse-mini-next-token" in {p.id for p in rep.plots}
    # not-a-dataset: calibration of P(True) (next-token records); zero-shot only: no shots plot
    assert [p.id for p in nad_report[0].plots] == [
        "shots-notadataset",
        "calibration-notadataset-next-token",
    ]
    # JSTS-Neg: AccChg per mode (generation and log-likelihood are never averaged together)
    assert {p.id for p in jsts_report[0].plots} == {
        "shots-jsts-neg",
        "accchg-jsts-neg-generate",
        "accchg-jsts-neg-loglik",
    }
    for rep, out in (nad_report, jsts_report):
        for p in rep.plots:
            assert p.svg.startswith("<svg") and (out / p.files[1]).stat().st_size > 1000


def test_calibration_bins():
    from negbench.report.plots import calibration_bins

    bins, ece = calibration_bins(
        [(0.05, False), (0.15, True), (0.95, True), (0.9, True)], n_bins=10
    )
    assert bins[0]["n"] == 1 and bins[1]["freq"] == 1.0 and bins[9]["n"] == 2
    assert ece == pytest.approx((0.05 + 0.85 + 0.05 + 0.1) / 4)


# -- comparisons -----------------------------------------------------------------------------------
def test_mcnemar_known_values():
    m = cmpmod.mcnemar(10, 2)
    assert m["exact_p"] == pytest.approx(0.03857421875)  # 2 · P(Bin(12, ½) ≤ 2)
    assert m["chi2"] == pytest.approx(49 / 12)
    assert m["chi2_p"] == pytest.approx(0.043308, abs=1e-5)
    assert cmpmod.mcnemar(0, 0)["exact_p"] == 1.0 and cmpmod.mcnemar(3, 3)["exact_p"] == 1.0
    try:
        from scipy.stats import binomtest, chi2
    except ImportError:
        return
    for b, c in ((7, 1), (0, 5), (40, 25)):
        m = cmpmod.mcnemar(b, c)
        assert m["exact_p"] == pytest.approx(binomtest(min(b, c), b + c, 0.5).pvalue)
        assert m["chi2_p"] == pytest.approx(chi2.sf(m["chi2"], 1))


def test_paired_bootstrap():
    a = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1] * 5
    b = [1, 1, 1, 1, 1, 0, 1, 1, 1, 1] * 5
    r1 = cmpmod.paired_bootstrap(a, b, n_resamples=2000, seed=3)
    r2 = cmpmod.paired_bootstrap(a, b, n_resamples=2000, seed=3)
    assert r1 == r2 and r1["delta"] == pytest.approx(0.3)
    assert r1["ci_low"] <= 0.3 <= r1["ci_high"] and r1["ci_low"] > 0 and r1["p"] < 0.01
    same = cmpmod.paired_bootstrap(a, a, n_resamples=500)
    assert same["delta"] == 0 and same["p"] == 1.0 and same["ci_low"] == same["ci_high"] == 0


@pytest.mark.parametrize("pair", [("a", "b"), ("nad-a", "nad-b"), ("ja-a", "ja-b")])
def test_compare_two_models_flips_and_tests(runs, tmp_path, pair):
    a, b = load_runs([runs[pair[0]], runs[pair[1]]])
    cmp = cmpmod.compare_runs(a, b, n_resamples=500)
    assert validate(cmp, COMPARE) == []
    if pair == ("a", "b"):
        assert {g["id"] for g in cmp["groups"]} >= {
            "nubench.completion.1shot",
            "truefalse-mini.next_token.0shot",
        }
    elif pair[0] == "nad-a":  # the modes only one of them ran are listed as skipped
        assert [g["id"] for g in cmp["groups"]] == ["notadataset.next_token.0shot"]
        assert cmp["skipped"] == [
            {"unit": "notadataset.cloze.0shot", "reason": "only in A"},
            {"unit": "notadataset.generate.0shot", "reason": "only in B"},
        ]
    else:  # B is zero-shot only, with the generation mode A lacks
        assert [g["id"] for g in cmp["groups"]] == ["jsts-neg.loglik.0shot"]
        assert {(s["reason"], s["unit"].split(".")[1]) for s in cmp["skipped"]} == {
            ("only in A", "loglik"),
            ("only in B", "generate"),
        }
    for g in cmp["groups"]:
        gains = losses = 0
        pa, pb = [], []
        for unit in g["units"]:
            ra = {r["doc_id"]: r for r in _samples(runs[pair[0]], unit)}
            rb = {r["doc_id"]: r for r in _samples(runs[pair[1]], unit)}
            for d in ra:
                x, y = ra[d][g["metric"]], rb[d][g["metric"]]
                pa.append(x)
                pb.append(y)
                gains += y > x
                losses += y < x
        assert (g["gains"], g["losses"], g["n_pairs"]) == (gains, losses, len(pa))
        assert g["delta"] == pytest.approx(statistics.mean(pb) - statistics.mean(pa))
        assert g["mcnemar"]["b"] == losses and g["mcnemar"]["c"] == gains
        bt, ts = g["bootstrap"], g["test"]
        for lo, hi in ((bt["ci_low"], bt["ci_high"]), (ts["ci_low"], ts["ci_high"])):
            if lo is None:  # too few units: no interval, and said so
                assert (bt if lo is bt["ci_low"] else ts)["too_small"]
                continue
            assert lo - 1e-12 <= g["delta"] <= hi + 1e-12
        # the tests go by the benchmark's units: This is not a Dataset's blocks, not items
        if pair[0] == "nad-a":
            assert g["n_units"] < g["n_pairs"] and ts["method"] == "cluster-t"
        flips = [f for f in cmp["flips"] if f["group"] == g["id"]]
        assert len(flips) == gains + losses
    if pair != ("a", "b"):
        return
    assert cmp["skipped"] == []
    # a run against itself: nothing flips, nothing is significant
    same = cmpmod.compare_runs(a, load_run(runs["a"]), n_resamples=200)
    assert same["flips"] == [] and not any(g["significant"] for g in same["groups"])
    assert all(
        g["mcnemar"]["exact_p"] == 1.0 and g["test"]["p"] in (None, 1.0) for g in same["groups"]
    )


def test_compare_before_after_finetuning_cli(runs, tmp_path, capsys):
    out = tmp_path / "cmp"
    assert (
        report_main(
            ["compare", str(runs["a"]), str(runs["sft"]), "--out", str(out), "--bootstrap", "300"]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "A = tiny-a, B = tiny-a+lora" in text and "McNemar p (exact, items)" in text
    data = json.loads((out / "compare.json").read_text())
    assert validate(data, COMPARE) == [] and data["b"]["adapter"]
    # the fine-tuned run is zero-shot only: its few-shot-less units are compared, A's 1-shot skipped
    assert {g["shots"] for g in data["groups"]} == {0}
    assert any(s["reason"] == "only in A" for s in data["skipped"])
    html = (out / "compare.html").read_text()
    assert "nb-cmp" in html and "#ref=cmp0.g0.gain" in html
    flips = list(csv.DictReader((out / "csv" / "flips.csv").open()))
    assert len(flips) == len(data["flips"])


def test_report_cli(runs, tmp_path, capsys):
    out = tmp_path / "rep"
    assert (
        report_main(
            [
                "report",
                str(runs["tf"]),
                str(runs["a"]),
                "--out",
                str(out),
                "--no-plots",
                "--formats",
                "md,json,csv",
                "--recompute",
                "--label",
                "small",
                "--label",
                "full",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "2 run(s)" in text and "report.md" in text
    data = json.loads((out / "report.json").read_text())
    assert [r["label"] for r in data["runs"]] == ["small", "full"] and data["plots"] == []
    assert not (out / "report.html").exists() and not (out / "plots").exists()
    assert not any("recomputed" in w for w in data["warnings"])  # saved metrics = recomputed ones
    # the one shared task is compared
    assert [c["groups"][0]["task"] for c in data["comparisons"]] == ["truefalse-mini"]
    # the real benchmark tasks: every saved metric equals the one recomputed from the samples
    out = tmp_path / "bench"
    assert (
        report_main(
            [
                "report",
                str(runs["nad-a"]),
                str(runs["nad-b"]),
                str(runs["ja-a"]),
                "--label",
                "tiny-a",
                "--label",
                "tiny-b",
                "--label",
                "tiny-a (JSTS-Neg)",
                "--out",
                str(out),
                "--no-plots",
                "--formats",
                "md,json",
                "--recompute",
                "--bootstrap",
                "200",
            ]
        )
        == 0
    )
    data = json.loads((out / "report.json").read_text())
    assert [t["id"] for t in data["tables"]][:3] == [
        "notadataset-table4",
        "notadataset-table5",
        "notadataset-table7",
    ] and len(data["tables"]) == 6
    assert data["warnings"] == ["tiny-a (JSTS-Neg) not compared with tiny-a: no task in common"]


# -- errors ----------------------------------------------------------------------------------------
def test_not_a_run_folder(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    with pytest.raises(OutputError, match="no results.json") as e:
        load_run(tmp_path / "empty")
    assert str(tmp_path / "empty") in e.value.render()
    with pytest.raises(OutputError, match="run folder not found"):
        load_run(tmp_path / "nope")
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(OutputError, match="a file"):
        load_run(tmp_path / "f.txt")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "results.json").write_text("{not json")
    with pytest.raises(DataError, match="invalid JSON") as e:
        load_run(bad)
    assert "results.json" in e.value.where
    assert report_main(["report", str(tmp_path / "empty")]) == 2
    assert "no results.json" in capsys.readouterr().err


def test_missing_or_broken_samples(runs, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(runs["nm"], run)
    f = run / "samples" / "negation-mini.cloze.0shot.jsonl"
    f.write_text(f.read_text() + "{broken\n")
    with pytest.raises(DataError, match="invalid JSON") as e:
        load_run(run).samples("negation-mini.cloze.0shot")
    assert str(f) in e.value.where and "line 5" in e.value.where
    f.unlink()
    with pytest.raises(DataError, match="per-sample records of this unit are missing") as e:
        load_run(run)
    assert str(f) in e.value.where


def test_compare_errors(runs, tmp_path):
    tf, nm = load_runs([runs["tf"], runs["nm"]])
    with pytest.raises(DataError, match="different tasks") as e:
        cmpmod.compare_runs(tf, nm)
    assert "results.json" in e.value.where
    a = load_run(runs["a"])
    with pytest.raises(DataError, match="not in both runs"):
        cmpmod.compare_runs(a, tf, tasks=["nubench"])
    other = tmp_path / "other"
    shutil.copytree(runs["tf"], other)
    res = json.loads((other / "results.json").read_text())
    res["datasets"]["truefalse-mini"]["test"]["sha256"] = "0" * 64
    (other / "results.json").write_text(json.dumps(res))
    with pytest.raises(DataError, match="different data"):
        cmpmod.compare_runs(tf, load_run(other))
    assert cmpmod.compare_runs(tf, load_run(other), force=True, n_resamples=50)["warnings"]
    assert isinstance(DataError("x", path="p"), NegbenchError)


def test_browser_subset_spreads_over_the_unit_and_keeps_flips():
    from negbench.report.build import browsable_subset

    got = browsable_subset(1000, 50, {990, 5}, seed="u")
    assert len(got) == 50 == len(set(got)) and got == sorted(got)
    assert {5, 990} <= set(got) and max(got) >= 500  # not the first 50
    assert got == browsable_subset(1000, 50, {990, 5}, seed="u")  # same report, same samples
    assert got != browsable_subset(1000, 50, {990, 5}, seed="v")
    assert browsable_subset(10, 50) == list(range(10))
    assert browsable_subset(100, 2, {7, 8, 9}) == [7, 8]


def test_capped_browser_keeps_flipped_items(runs):
    capped = build(
        [runs["nad-a"], runs["nad-b"], runs["nad-sft"]],
        n_resamples=50,
        plots=False,
        max_samples_per_unit=4,
    )
    flipped: dict[tuple, set[str]] = {}
    for c in capped.comparisons:
        for f in c["flips"]:
            for r in (c["a"]["index"], c["b"]["index"]):
                flipped.setdefault((r, f["unit"]), set()).add(f["doc_id"])
    assert flipped  # the fixture runs do disagree
    per_unit: dict[tuple, list[int]] = {}
    for v in capped.views:
        per_unit.setdefault((v["r"], v["u"]), []).append(v["i"])
    assert set(per_unit) == {(r.index, u) for r in capped.runs for u in r.units}
    for (r, u), idx in per_unit.items():
        recs = capped.runs[r].samples(u)
        assert len(idx) == min(4, len(recs)) and idx == sorted(idx)
        kept = {str(recs[i].get("doc_id", i)) for i in idx}
        want = flipped.get((r, u), set())
        assert want <= kept if len(want) <= 4 else kept <= want
    assert any("at most 4 samples per unit" in w for w in capped.warnings)
