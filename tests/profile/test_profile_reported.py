"""The papers' reported results (src/negbench/tasks/*/reported_results.csv) against the papers.

Every row must name a table of its paper (``../shared/papers/<paper>.md``) whose text holds the
row's value (and its spread, delta and row label); rows of one-line-per-row tables must sit on
their row's line, and every number of a transcribed line must be in the table; the protocol
fields must name real negbench tasks, modes, seeds and metrics (metrics as negbench's own task
code computes them); :func:`comparable` must show a paper's number only where the protocol is
the unit's.
"""

from __future__ import annotations

import os
import random
import re
from collections import Counter, defaultdict

import pytest

from negbench.profile.presets import by_key
from negbench.profile.reported import (
    PAPER_ONLY_MODES,
    papers,
    ReportedResult,
    comparable,
    comparable_to_unit,
    load_reported,
    references,
)
from negbench.scoring.registry import benchmark_of
from negbench.tasks import all_tasks, get_task

from locations import ROOT, SHARED

PAPERS_DIR = SHARED / "papers"
needs_papers = pytest.mark.skipif(
    not PAPERS_DIR.is_dir(), reason="../shared/papers (the five papers as Markdown) not present"
)

#: papers whose captions precede their tables (the others print the caption below the table)
CAPTION_FIRST = {"jsts-neg"}
#: tables whose rows are one line each (label cell + value cells): checked line by line
ONE_LINE_ROWS = {
    "thunder-nubench": {"Table 11", "Table 12", "Table 13"},
    "thunder-konubench": {"Table 3", "Table 9", "Table 15", "Table 16", "Table 17", "Table 19"},
    "condaqa": {"Table 4", "Table 8", "Table 9", "Table 10", "Table 11"},
    "this-is-not-a-dataset": {"Table 4", "Table 5", "Table 6", "Table 7", "Table 8", "Table 9"},
    "jsts-neg": {"Table 3", "Table 4", "Table 5"},
}
#: cells of a transcribed line left out on purpose: KoNUBench Table 9's ARC / HellaSwag /
#: Winogrande columns (not negation benchmarks); value = index of the first such cell
SKIPPED_FROM_COLUMN = {("thunder-konubench", "Table 9"): 7}
#: the tables the profile needs (headline and phenomenon tables of each paper)
REQUIRED = {
    "thunder-nubench": {"Table 6", "Table 11", "Table 12", "Table 13"}
    | {f"Table {i}" for i in range(15, 24)},
    "thunder-konubench": {
        "Table 3",
        "Table 7",
        "Table 8",
        "Table 9",
        "Table 15",
        "Table 16",
        "Table 17",
        "Table 19",
        "Table 21",
        "Table 22",
        "Table 23",
    },
    "condaqa": {"Table 4", "Table 8", "Table 9", "Table 10", "Table 11"},
    "this-is-not-a-dataset": {
        "Table 3",
        "Table 4",
        "Table 5",
        "Table 6",
        "Table 7",
        "Table 8",
        "Table 9",
    },
    "jsts-neg": {"Table 3", "Table 4", "Table 5"},
}
NUMBER = re.compile(r"(?<![A-Za-z\d.])[-+]?\d+(?:,\d{3})*(?:\.\d+)?")
MARKUP = re.compile(r"</?(?:b|u|i|sup)>")


def rows() -> tuple[ReportedResult, ...]:
    return load_reported()


def table_block(paper: str, label: str) -> list[str]:
    """The lines of a table: the tab-separated lines next to its caption ``Table N:``."""
    lines = (PAPERS_DIR / f"{paper}.md").read_text(encoding="utf-8").split("\n")
    caps = [i for i, line in enumerate(lines) if re.match(rf"{re.escape(label)}[:.]", line)]
    assert len(caps) == 1, f"{paper}: {label} has {len(caps)} captions"
    step = 1 if paper in CAPTION_FIRST else -1
    j = caps[0] + step
    while 0 <= j < len(lines) and not lines[j].strip():
        j += step
    out = []
    while 0 <= j < len(lines) and "\t" in lines[j]:
        out.append(MARKUP.sub("", lines[j]))
        j += step
    return out[::step]


def numbers(text: str) -> list[str]:
    return NUMBER.findall(text)


def test_table_loads_typed_with_no_duplicate_fact():
    rs = rows()
    assert len(rs) > 4000
    key = Counter(
        (
            r.paper,
            r.model,
            r.tasks,
            r.task_options,
            r.subset,
            r.training,
            r.condition,
            r.mode,
            r.shots,
            r.seeds,
            r.chat,
            r.metric,
        )
        for r in rs
    )
    dup = [k for k, n in key.items() if n > 1]
    assert not dup, dup[:3]
    exact = Counter(tuple(vars(r).values()) for r in rs)
    assert max(exact.values()) == 1
    for r in rs:
        assert isinstance(r.shots, int) and r.value and r.model and r.row_label
        r.number  # parses
        assert (r.spread == "") == (r.spread_kind == "")


def test_every_required_table_is_transcribed():
    have = defaultdict(set)
    for r in rows():
        have[r.paper] |= {r.source, *r.also_in}
    for paper, tables in REQUIRED.items():
        assert tables <= have[paper], (paper, sorted(tables - have[paper]))
    assert set(have) == set(papers())


@needs_papers
def test_every_row_names_a_table_of_its_paper_that_prints_its_value():
    blocks: dict[tuple[str, str], list[str]] = {}

    def block(paper, label):
        if (paper, label) not in blocks:
            blocks[paper, label] = table_block(paper, label)
        return blocks[paper, label]

    for r in rows():
        lines = block(r.paper, r.source)
        text = "\n".join(lines)
        toks = set(numbers(text))
        assert r.value in toks, (r.paper, r.source, r.model, r.metric, r.value)
        for extra in (r.spread, r.delta):
            assert not extra or extra in toks, (r.paper, r.source, r.model, extra)
        assert r.row_label in text, (r.paper, r.source, r.row_label)
        for other in r.also_in:
            other_text = "\n".join(block(r.paper, other))
            assert r.value in set(numbers(other_text)), (r.paper, other, r.model, r.value)
        if r.model_id:
            paper_text = (PAPERS_DIR / f"{r.paper}.md").read_text(encoding="utf-8")
            assert r.model_id in paper_text, r.model_id


@needs_papers
def test_one_line_rows_sit_on_their_line_and_every_cell_is_transcribed():
    by_table = defaultdict(list)
    for r in rows():
        if r.source in ONE_LINE_ROWS.get(r.paper, ()):
            by_table[r.paper, r.source].append(r)
    assert len(by_table) == sum(len(v) for v in ONE_LINE_ROWS.values())
    checked = 0
    for (paper, table), rs in by_table.items():
        lines = [[c.strip() for c in line.split("\t")] for line in table_block(paper, table)]
        by_label = defaultdict(list)
        for r in rs:
            by_label[r.row_label].append(r)
        for label, group in by_label.items():
            hits = [cells for cells in lines if label in cells]
            assert hits, (paper, table, label)
            on_line = Counter(t for cells in hits for c in cells for t in numbers(c) if c != label)
            recorded = Counter(x for r in group for x in (r.value, r.spread, r.delta) if x)
            assert not recorded - on_line, (paper, table, label, recorded - on_line)
            # the line's number cells, left to right, are the label's rows in table order:
            # nothing dropped, nothing moved to another column
            cut = SKIPPED_FROM_COLUMN.get((paper, table))
            cells_in_order = []
            for cells in hits:
                for i, c in enumerate(cells):
                    if (
                        c == label
                        or (cut and i >= cut)
                        or not numbers(c)
                        or not re.fullmatch(r"[-+\d.,$_{}()\\pm ±]+", c)
                    ):
                        continue
                    for t in numbers(c):
                        assert recorded[t] > 0, (paper, table, label, c)
                        checked += 1
                    cells_in_order.append(numbers(c)[0])
            assert [r.value for r in group] == cells_in_order, (paper, table, label)
    assert checked > 1500


#: tasks whose data comes only from the hub (unreachable here), checked through their twin with
#: the same task code
HUB_ONLY = {"kobest-boolq": "kobest-boolq-neg"}


#: tables transcribed only in part, whose cells are not all rows: NUBench Table 6 and KoNUBench
#: Table 8 repeat appendix tables (their cells are rows' ``also_in``); of This is not a Dataset's
#: Table 3 only the T/F-prediction line is a result
PARTIAL = {
    ("thunder-nubench", "Table 6"),
    ("thunder-konubench", "Table 8"),
    ("this-is-not-a-dataset", "Table 3"),
}


@needs_papers
def test_multi_line_tables_are_transcribed_cell_by_cell_in_order():
    """Tables whose rows span lines (the error analyses): their number cells, read left to
    right and top to bottom, are exactly the rows citing them, in the CSV's order — except
    cells the paper's text lost (named in the row that takes the value from Table 6)."""
    by_table = defaultdict(list)
    for r in rows():
        if r.source not in ONE_LINE_ROWS.get(r.paper, ()) and (r.paper, r.source) not in PARTIAL:
            by_table[r.paper, r.source].append(r)
    assert len(by_table) >= 13
    for (paper, table), rs in by_table.items():
        cells = [c.strip() for line in table_block(paper, table) for c in line.split("\t")]
        seq = [c for c in cells if re.fullmatch(r"[-+]?\d+(?:,\d{3})*(?:\.\d+)?", c)]
        assert [r.value for r in rs] == seq, (paper, table)


def _fake_response(req, rng):
    from negbench.core.requests import GenerationResponse, LoglikelihoodResponse, NextTokenResponse

    if req.kind == "loglikelihood":
        return LoglikelihoodResponse(-10 * rng.random(), 3, False)
    if req.kind == "generate":
        return GenerationResponse(
            rng.choice(["A", "B", "C", "1", "3", "NO", "YES", "True"]), 1, "\n"
        )
    return NextTokenResponse(
        {lab: -5 * rng.random() for lab in req.labels}, {lab: i for i, lab in enumerate(req.labels)}
    )


def _flat(d: dict, prefix: str = "") -> set[str]:
    out = set()
    for k, v in d.items():
        out |= _flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + str(k)}
    return out


@pytest.fixture(scope="module")
def metric_keys():
    """The metric keys negbench's task code computes per (task, mode): a few real or fixture
    records of each task, answered at random (no model), through the runner's request builder
    and the tasks' own metrics."""
    from negbench.evaluation.runner import RunConfig, Unit, build_requests
    from negbench.scoring.metrics import unit_metrics

    env = {
        "NEGBENCH_NUBENCH": str(ROOT / "tests/data/nubench"),
        "NEGBENCH_JSTS_NEG": str(ROOT / "tests/data/jsts_neg"),
        "NEGBENCH_NOTADATASET": str(ROOT / "tests/data/notadataset/raw"),
    }
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    keys: dict[tuple[str, str], set[str]] = {}
    rng = random.Random(0)
    try:
        cells = {(t, r.mode) for r in rows() for t in r.tasks if r.mode not in PAPER_ONLY_MODES}
        for task, mode in sorted(cells):
            t = get_task(HUB_ONLY.get(task, task))
            try:
                samples, reqs = build_requests(
                    Unit(t, mode, 0, None), None, RunConfig(model="-", tasks=[t.name], limit=60)
                )
            except Exception as exc:  # data absent on this machine
                keys[task, mode] = exc
                continue
            spec = t.mode(mode)
            for s, rs in zip(samples, reqs):
                answers = [_fake_response(q, rng) for q in rs]
                s.update(spec.formulation.score(s.pop("_rendered"), answers))
            keys[task, mode] = _flat(unit_metrics(t, mode, samples))
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return keys


def test_protocol_fields_name_real_tasks_modes_seeds_and_metrics(metric_keys):
    from negbench.tasks.notadataset.truth_scorer import PATTERNS

    tasks = all_tasks()
    missing_data = set()
    for r in rows():
        assert r.benchmark in by_key()
        for name in r.tasks:
            assert name in tasks, name
            assert benchmark_of(name) == r.benchmark
            task = tasks[name]
            assert r.mode in task.modes or r.mode in PAPER_ONLY_MODES, (name, r.mode)
            if task.protocol_shots is not None and r.model_kind != "human":
                assert r.shots in task.protocol_shots, (name, r.shots)
            if r.seed_list:
                assert set(r.seed_list) <= set(task.protocol_seeds or ()), (name, r.seeds)
            modes = [r.mode] if r.mode in task.modes else list(task.modes)
            found = False
            for m in modes:
                keys = metric_keys.get((name, m))
                if keys is None:
                    continue
                if isinstance(keys, Exception):
                    missing_data.add(name)
                    found = True
                    break
                metric = r.metric
                if metric.startswith("by_pattern."):  # the fixture holds two of the 11 patterns
                    _, pat, leaf = metric.split(".")
                    assert pat in PATTERNS.values()
                    found = any(
                        k.startswith("by_pattern.") and k.endswith("." + leaf) for k in keys
                    )
                else:
                    found = metric in keys
                if found:
                    break
            assert found, (r.paper, r.source, name, r.mode, r.metric)
        if r.shots == 0:
            assert not r.seed_list
    assert not missing_data, missing_data


def test_headline_metrics_are_the_papers():
    def headline_metric(task, mode):
        return get_task(task).headline(mode)

    assert headline_metric("konubench", "cloze") == "acc_norm"
    assert headline_metric("konubench", "symbol") == "acc"
    assert headline_metric("nubench-detail", "option") == "exact_match"
    assert headline_metric("nubench", "completion") == "acc"
    assert headline_metric("condaqa-split2", "generate") == "accuracy"
    assert headline_metric("notadataset[sample=10]", "next_token") == "acc"
    assert headline_metric("jsts-neg", "generate") == "M.acc_chg"
    # the headline of each benchmark is among the papers' rows for it
    metrics = {(r.benchmark, r.mode, r.metric) for r in rows()}
    for bench, mode in [
        ("nubench", "completion"),
        ("nubench", "option"),
        ("konubench", "cloze"),
        ("konubench", "symbol"),
        ("condaqa", "generate"),
        ("notadataset", "next_token"),
        ("jsts-neg", "generate"),
    ]:
        assert (bench, mode, headline_metric(bench, mode)) in metrics


def test_comparable_matches_the_protocol_and_only_it():
    five = comparable("nubench", "completion", 5, "acc", seed=42)
    assert five and {r.source for r in five} == {"Table 11"} and all(r.shots == 5 for r in five)
    assert {r.model for r in five} >= {"Llama-3.1-8B", "gemma-7b", "total average"}
    # App. R error analysis is seed 1234 only: another seed does not compare, a seed mean does
    assert not comparable("nubench", "completion", 5, "error_rate", seed=42)
    r1234 = comparable("nubench", "completion", 5, "error_rate", seed=1234)
    assert {r.source for r in r1234} == {"Table 15", "Table 17", "Table 19", "Table 21"}
    assert comparable("nubench", "completion", 5, "error_rate") == r1234
    # prompt style is the task; SFT rows only for a fine-tuned model
    assert {r.source for r in comparable("nubench-detail", "option", 0, "exact_match")} == {
        "Table 13"
    }
    sft = comparable("nubench", "completion", 0, "acc", training="sft-lora")
    assert sft and all(r.training == "sft-lora" for r in sft)
    assert all(r.training == "none" for r in comparable("nubench", "completion", 0, "acc"))
    # API rows state a chat template: a plain run does not compare with them
    api = {"gpt-4o-mini", "gpt-4.1-mini", "claude-3-5-haiku-latest"}
    assert api <= {r.model for r in comparable("nubench", "option", 0, "exact_match", chat=True)}
    assert not api & {
        r.model for r in comparable("nubench", "option", 0, "exact_match", chat=False)
    }
    # KoNUBench: cloze is reported as acc_norm, not acc; API models only in the api mode
    assert comparable("konubench", "cloze", 0, "acc_norm") and not comparable(
        "konubench", "cloze", 0, "acc"
    )
    assert {r.model for r in comparable("konubench", "api", 2, "exact_match")} == {
        "claude-haiku-4-5-20251001",
        "claude-sonnet-4-5-20250929",
        "gpt-4.1-mini",
        "gpt-4.1",
    }
    # CONDAQA: a split task at 9 shots compares with the five-split means, not with a study
    few = comparable("condaqa-split3", "generate", 9, "accuracy")
    assert {r.model for r in few} == {"GPT-3 (davinci)", "InstructGPT (text-davinci-002)"}
    assert {r.source for r in few} == {"Table 11"}
    study = comparable("condaqa-split1[pool=dev,sampling=random]", "generate", 9, "accuracy")
    assert [r.source for r in study] == ["Table 8"]
    assert not comparable(
        "condaqa-split1[ctx=2045,pool=shots,sampling=groups3]", "generate", 9, "accuracy"
    )
    # the paper's CoT shots carry 45 unreleased explanations: negbench's cot mode is not that
    assert not comparable("condaqa-split1", "cot", 9, "accuracy")
    assert {r.model for r in comparable("condaqa", "generate", 0, "consistency")} == {
        "GPT-3 (davinci)",
        "InstructGPT (text-davinci-002)",
    }
    # This is not a Dataset: a sample compares with the full-set rows; the test split does not
    full = comparable("notadataset[sample=2000,seed=0]", "next_token", 0, "acc_neg_w")
    assert len(full) == 27 and {r.source for r in full} == {"Table 4", "Table 8", "Table 9"}
    assert not comparable("notadataset[split=test]", "next_token", 0, "acc")
    assert (
        len(
            comparable("notadataset[split=test]", "next_token", 0, "acc", training="finetuned-lora")
        )
        == 2
    )
    # JSTS-Neg: the minimal-pair change per shots setting
    chg = comparable("jsts-neg", "generate", 11, "M.acc_chg")
    assert len(chg) == 26 and all(r.unit == "points" for r in chg)
    # paper-only protocols never compare
    assert not any(
        r.mode in PAPER_ONLY_MODES for r in comparable("condaqa", "generate", 0, "accuracy")
    )


def test_comparable_to_a_saved_unit_and_references():
    unit = {
        "task": "konubench",
        "mode": "symbol",
        "shots": 5,
        "seed": 308,
        "chat": False,
        "metrics": {"acc": 0.5},
    }
    got = comparable_to_unit(unit, "acc")
    assert got and all(r.source == "Table 16" and r.shots == 5 for r in got)
    assert {r.model for r in references("condaqa")} == {
        "Majority",
        "Question-Only (UnifiedQA-v2-Large)",
        "Edit-Type Only (UnifiedQA-v2-Large)",
        "Negation-Cue Only (UnifiedQA-v2-Large)",
        "Human",
    }


def test_values_on_negbench_scale():
    rs = rows()
    pick = {(r.paper, r.source, r.model, r.metric, r.shots, r.mode, r.training): r for r in rs}
    r = pick["thunder-konubench", "Table 16", "Qwen3-8B-Base", "acc_norm", 0, "cloze", "none"]
    assert r.value == "60.5" and r.negbench_value() == pytest.approx(0.605)
    r = pick["thunder-nubench", "Table 11", "Llama-3.1-8B", "acc", 0, "completion", "none"]
    assert r.value == "0.439" and r.negbench_value() == pytest.approx(0.439)
    r = pick[
        "thunder-nubench",
        "Table 17",
        "Llama-3.1-8B",
        "incorrect_local_pct",
        0,
        "completion",
        "none",
    ]
    assert (
        r.value == "70.62"
        and r.negbench_value() == pytest.approx(70.62)
        and r.also_in == ("Table 6",)
    )
    r = pick[
        "thunder-nubench", "Table 16", "gemma-1.1-2b-it", "n_format_wrong", 0, "option", "sft-lora"
    ]
    assert r.value == "1,239" and r.negbench_value() == 1239  # after SFT
    r = pick["jsts-neg", "Table 3", "GPT-5", "Mu.acc_chg", 0, "generate", "none"]
    assert r.value == "14.58" and r.negbench_value() == pytest.approx(0.1458)


def test_a_bad_row_names_file_line_and_field(tmp_path):
    from negbench.errors import DataError
    from negbench.profile.reported import COLUMNS

    lines = papers()["thunder-nubench"].csv.read_text(encoding="utf-8").splitlines()[:3]
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "\n".join([lines[0], lines[1], lines[2].replace(",unstated,", ",maybe,")]) + "\n"
    )
    with pytest.raises(DataError) as e:
        load_reported(bad)
    assert e.value.path == str(bad) and e.value.record == "line 3" and e.value.field == "chat"
    (tmp_path / "cols.csv").write_text(",".join(reversed(COLUMNS)) + "\n")
    with pytest.raises(DataError, match="unexpected columns"):
        load_reported(tmp_path / "cols.csv")
