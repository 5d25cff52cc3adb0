"""A benchmark is one folder: a toy benchmark written here, in a folder outside the source tree,
is found by ``negbench tasks``, ``run``, ``report``, ``profile`` and ``train`` with no edit
anywhere else — the registry's scan of the benchmark folders is the only thing that names it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

#: the toy benchmark's folder, as a user would write it (our own sentences)
TOY_INIT = '''
"""A toy negation benchmark (tests only)."""

ORDER = 99
BENCHMARK = "toy-neg"


def register(r) -> None:
    from negbench.tasks.toybench.bench import TASK

    r.tasks([TASK])
    r.add("paper_tables", BENCHMARK, "negbench.tasks.toybench.bench:tables")
    r.add("profile", BENCHMARK, "negbench.tasks.toybench.bench:PROFILE")
    r.add("phenomena", BENCHMARK, "negbench.tasks.toybench.bench:PHENOMENA")
    r.add("exporter", "toy-neg-sft", "negbench.tasks.toybench.bench:EXPORTER")
    r.add("recipe", "toy-neg-lora", "negbench.tasks.toybench.bench:RECIPE")
'''

TOY_BENCH = """
from negbench.scoring.formulations import ChoiceLoglikelihood
from negbench.scoring.paper_tables import Context
from negbench.scoring.phenomena import PhenomenonSpec, Side
from negbench.scoring.profile_parts import Benchmark, Part
from negbench.scoring.recipes import Recipe
from negbench.scoring.tables import Column, Row, Table, metric_cell
from negbench.scoring.task import Doc, ModeSpec, Rendered, Task
from negbench.tasks.alpaca import Exporter

SENTENCES = [
    ("The door is open.", "The door is not open."),
    ("The lamp is on.", "The lamp is not on."),
    ("The cup is full.", "The cup is not full."),
    ("The road is wet.", "The road is not wet."),
    ("The shop is busy.", "The shop is not busy."),
    ("The tea is hot.", "The tea is not hot."),
]


def load(split):
    docs = []
    for i, (pos, neg) in enumerate(SENTENCES):
        docs.append(Doc(f"{i}-pos", {"text": pos, "label": 0, "negated": False}, "toy"))
        docs.append(Doc(f"{i}-neg", {"text": neg, "label": 1, "negated": True}, "toy"))
    return docs


def render(d):
    return Rendered(
        f"Sentence: {d['text']}\\nDoes it deny something?", ["no", "yes"], d["label"],
        meta={"negated": d["negated"]},
    )


TASK = Task(
    name="toy-neg",
    summary="toy: does the sentence deny something (tests only)",
    load=load,
    modes={"cloze": ModeSpec(render, ChoiceLoglikelihood())},
    default_modes=("cloze",),
)


def tables(ctx: Context, tasks):
    t = Table("toy-table", "Toy table: accuracy", "toy-neg", ["Model"], [Column(("Accuracy",))])
    for run in ctx.runs_with("toy-neg"):
        units = run.select("toy-neg")
        t.rows.append(Row([run.label], [metric_cell(run, units, "acc", scale=100.0)]))
    return [t]


PROFILE = Benchmark(
    key="toy-neg",
    title="Toy negation",
    order=99,
    paper="",
    quick=(Part("toy-neg", ("toy-neg",), ("cloze",), sample=8),),
    full=(Part("toy-neg", ("toy-neg",), ("cloze",)),),
)

PHENOMENA = [
    PhenomenonSpec(
        "negated vs affirmative",
        Side("negated", "mean", {"meta.negated": True}),
        Side("affirmative", "mean", {"meta.negated": False}),
    )
]

EXPORTER = Exporter(
    "toy-neg-sft",
    "toy sentences with their answer",
    lambda split: [
        {"instruction": "Does it deny something?", "input": d["text"], "output": "yes" if d["label"] else "no"}
        for d in load(split)
    ],
)

RECIPE = Recipe(
    name="toy-neg-lora",
    paper="tests",
    data="toy-neg-sft",
    per_device_train_batch_size=2,
    gradient_accumulation_steps=1,
    max_steps=1,
    cutoff_len=64,
    bf16=False,
)
"""


@pytest.fixture()
def toy_folder(tmp_path) -> Path:
    root = tmp_path / "plugins"
    (root / "toybench").mkdir(parents=True)
    (root / "toybench" / "__init__.py").write_text(textwrap.dedent(TOY_INIT))
    (root / "toybench" / "bench.py").write_text(textwrap.dedent(TOY_BENCH))
    return root


def negbench(toy: Path, *args: str) -> subprocess.CompletedProcess:
    """``negbench ARGS`` in a fresh process whose benchmark folders include the toy's (the same
    scan finds it as finds the shipped ones: it is one more folder of ``negbench.tasks``)."""
    code = (
        "import sys, negbench.tasks as t\n"
        f"t.__path__.append({str(toy)!r})\n"
        "from negbench.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600
    )


def test_a_toy_benchmark_folder_is_found_everywhere(toy_folder, tiny_llama, tmp_path):
    cpu = ("--device", "cpu", "--quiet")
    listed = negbench(toy_folder, "tasks")
    assert listed.returncode == 0, listed.stderr
    assert "toy-neg" in listed.stdout

    run = tmp_path / "run"
    r = negbench(
        toy_folder, "run", "--model", tiny_llama, "--tasks", "toy-neg", "--output", str(run), *cpu
    )
    assert r.returncode == 0, r.stderr
    res = json.loads((run / "results.json").read_text())
    assert [u["task"] for u in res["units"].values()] == ["toy-neg"]
    assert res["units"]["toy-neg.cloze.0shot"]["metrics"]["n"] == 12

    rep = tmp_path / "report"
    r = negbench(toy_folder, "report", str(run), "--out", str(rep))
    assert r.returncode == 0, r.stderr
    report = json.loads((rep / "report.json").read_text())
    assert "toy-table" in [t["id"] for t in report["tables"]]

    prof = tmp_path / "profile"
    r = negbench(
        toy_folder,
        "profile",
        "--model",
        tiny_llama,
        "--benchmarks",
        "toy-neg",
        "--out",
        str(prof),
        *cpu,
    )
    assert r.returncode == 0, r.stderr
    manifest = json.loads((prof / "profile.json").read_text())
    assert [b["key"] for b in manifest["benchmarks"]] == ["toy-neg"]
    assert manifest["benchmarks"][0]["status"] == "done"
    phen = [p for p in manifest["phenomena"] if p["benchmark"] == "toy-neg"]
    assert [p["phenomenon"] for p in phen] == ["negated vs affirmative"]
    assert phen[0]["condition"]["n"] + phen[0]["reference"]["n"] == 8

    out = tmp_path / "train"
    r = negbench(
        toy_folder,
        "train",
        "--recipe",
        "toy-neg-lora",
        "--model",
        tiny_llama,
        "--out",
        str(out),
        "--no-eval",
        *cpu,
    )
    assert r.returncode == 0, r.stderr
    info = json.loads((out / "adapter" / "negbench_train.json").read_text())
    assert info["recipe"]["name"] == "toy-neg-lora" and info["data"]["n_records"] == 12
