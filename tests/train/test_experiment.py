"""negbench experiment notadataset-generalisation (This is not a Dataset, Figure 2): a 2×2 matrix
of tiny LoRA adapters with its files, a rerun that redoes nothing, a killed cell that is redone
alone, the matrix in the report, one clear error per user mistake; and negbench export
--llama-factory (dataset, dataset_info.json and a YAML whose values are the recipe's)."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from clear_error import assert_one_clear_error

pytest.importorskip("peft")

from negbench.cli import main  # noqa: E402
from locations import TEST_DATA

DATA = TEST_DATA
NOTADATASET_RAW = DATA / "notadataset" / "raw"  # patterns 2 and 6; 1 train block each

#: Small batches, so that two steps see the records (the recipe's batch is 32).
FAST = [
    "--set",
    "per_device_train_batch_size=4",
    "--set",
    "logging_steps=1",
    "--set",
    "warmup_ratio=0",
]
ARGS = ["--patterns", "2,Part", "--max-steps", "2", "--sample", "5", "--eval-sample", "5", *FAST]


@pytest.fixture
def nad(monkeypatch):
    monkeypatch.setenv("NEGBENCH_NOTADATASET", str(NOTADATASET_RAW))


def _experiment(model: str, out: Path, *extra: str) -> int:
    return main(
        [
            "experiment",
            "notadataset-generalisation",
            "--model",
            model,
            "--out",
            str(out),
            "--quiet",
            "--threads",
            "1",
            *extra,
        ]
    )


def _png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", head[16:24])


def _stamps(out: Path) -> dict[str, int]:
    files = [*out.glob("cells/*/*/results.json"), *out.glob("adapters/*/adapter/*")]
    return {str(p.relative_to(out)): p.stat().st_mtime_ns for p in files}


@pytest.fixture(scope="module")
def experiment(tiny_llama, tmp_path_factory):
    """One 2×2 experiment (patterns 2 and 6, two steps per adapter), shared by the tests below."""
    mp = pytest.MonkeyPatch()
    mp.setenv("NEGBENCH_NOTADATASET", str(NOTADATASET_RAW))
    root = tmp_path_factory.mktemp("experiment")
    mp.setenv("NEGBENCH_CACHE", str(root / "cache"))
    out = root / "exp"
    try:
        assert _experiment(tiny_llama, out, *ARGS) == 0
        yield out
    finally:
        mp.undo()


def test_matrix_files_have_the_right_shape(experiment, nad):
    out = experiment
    m = json.loads((out / "matrix.json").read_text())
    assert m["schema"] == "negbench.experiment/1" and m["complete"] and m["axis"] == "patterns"
    assert [c["key"] for c in m["columns"]] == ["p02", "p06"]
    assert [r["key"] for r in m["rows"]] == ["p02", "p06"]
    assert [c["label"] for c in m["columns"]] == ["#02 Antonymy1", "#06 Part"]
    for row in (m["base"], *m["rows"]):
        assert len(row["cells"]) == 2
        for cell, col in zip(row["cells"], m["columns"]):
            assert 0.0 <= cell["acc"] <= 1.0 and cell["n"] == col["n"] > 0
            res = json.loads((out / cell["run"] / "results.json").read_text())
            # a negbench run per cell, told the recipe's prompt choice (the tiny model has no
            # chat template: the plain prompt, as in training)
            assert res["config"]["tasks"] == [col["task"][:-1] + ",chat=off]"]
            assert col["task"].startswith("notadataset[split=test,")  # held-out blocks
            has_adapter = bool(res["config"]["backend"].get("adapter"))
            assert has_adapter == (row is not m["base"])
            if has_adapter:  # results name the adapter
                assert res["model"]["details"]["adapter_train"]["recipe"] == "notadataset"
    for row in m["rows"]:  # trained on the train split
        info = json.loads((out / row["adapter"] / "negbench_train.json").read_text())
        assert info["steps"] == 2 and info["data"]["split"] == "train"
        assert row["train_data"].startswith("notadataset[split=train,")
        train_blocks = {r["block"] for r in _records(row["train_data"])}
        test_blocks = {r["block"] for r in _records(m["columns"][m["rows"].index(row)]["task"])}
        assert train_blocks and test_blocks and not train_blocks & test_blocks  # by block
    md = (out / "matrix.md").read_text()
    assert "| base (zero-shot) |" in md and "| #06 Part |" in md and "## Accuracy (%)" in md
    assert md.count("**") >= 4  # the diagonal in bold
    w, h = _png_size(out / "heatmap.png")
    assert w > 300 and h > 200


def _records(spec: str) -> list[dict]:
    """The sentences of a subset's split (its sample option dropped: every block of it)."""
    from negbench.scoring.task import parse_spec
    from negbench.train.data import load_training_data

    base, opts = parse_spec(spec)
    opts.pop("sample", None)
    split = opts.pop("split")
    inner = ",".join(f"{k}={v}" for k, v in opts.items())
    return load_training_data(f"{base}[{inner}]" if inner else base, split).records


def test_rerun_redoes_nothing_and_a_lost_cell_is_redone_alone(
    experiment, tiny_llama, capsys, monkeypatch
):
    out = experiment
    monkeypatch.setenv("NEGBENCH_NOTADATASET", str(NOTADATASET_RAW))
    monkeypatch.setenv("NEGBENCH_CACHE", str(out.parent / "cache"))
    before = _stamps(out)
    capsys.readouterr()
    assert _experiment(tiny_llama, out, *ARGS) == 0
    cap = capsys.readouterr()
    assert "0 adapter(s) trained, 2 reused; 0 cell(s) evaluated, 6 reused" in cap.out
    assert "loading " not in cap.err, "a model was loaded on a rerun of a finished experiment"
    assert _stamps(out) == before
    # a killed experiment: one cell's run never finished -> only that cell is evaluated again
    import shutil

    shutil.rmtree(out / "cells" / "p06" / "p02")
    assert _experiment(tiny_llama, out, *ARGS) == 0
    cap = capsys.readouterr()
    assert "0 adapter(s) trained, 2 reused; 1 cell(s) evaluated, 5 reused" in cap.out
    after = _stamps(out)
    changed = {k for k in after if before.get(k) != after[k]}
    assert changed == {"cells/p06/p02/results.json"}


def test_another_configuration_in_the_same_folder_is_refused(
    experiment, tiny_llama, capsys, monkeypatch
):
    out = experiment
    monkeypatch.setenv("NEGBENCH_NOTADATASET", str(NOTADATASET_RAW))
    before = _stamps(out)
    matrix = (out / "matrix.json").read_text()
    capsys.readouterr()
    code = _experiment(tiny_llama, out, *[a if a != "5" else "50" for a in ARGS])
    err = capsys.readouterr().err
    assert code == 2 and err.count("error:") == 1, err
    assert "different configuration" in err and "eval_sample" in err and "--overwrite" in err
    assert _stamps(out) == before and (out / "matrix.json").read_text() == matrix


def test_report_shows_the_matrix_and_heatmap(experiment, tmp_path, capsys):
    rep = tmp_path / "report"
    assert main(["report", str(experiment), "--out", str(rep), "--formats", "md,html,plots"]) == 0
    md = (rep / "report.md").read_text()
    assert "trained on (rows) × tested on (columns), accuracy (%)" in md
    assert "| base (zero-shot) |" in md and "experiment0-heatmap.png" in md
    assert (rep / "plots" / "experiment0-heatmap.png").is_file()
    html = (rep / "report.html").read_text()
    assert "#06 Part" in html and "<svg" in html
    # beside a run folder (one of the cells)
    rep2 = tmp_path / "report2"
    cell = experiment / "cells" / "base" / "p02"
    assert (
        main(
            [
                "report",
                str(cell),
                str(experiment / "matrix.json"),
                "--out",
                str(rep2),
                "--formats",
                "md",
                "--no-plots",
            ]
        )
        == 0
    )
    md2 = (rep2 / "report.md").read_text()
    assert "accuracy (%)" in md2 and "Runs: 0:" in md2


CASES = [  # (id, argv after --out, words the one message must hold)
    ("patterns and types", ["--patterns", "2", "--types", "verbal"], ["both given"]),
    ("pattern out of range", ["--patterns", "2,12"], ["no pattern 12", "1..11"]),
    (
        "misspelt pattern name",
        ["--patterns", "antonimy1"],
        ["unknown pattern 'antonimy1'", "did you mean 'Antonymy1'"],
    ),
    ("pattern given twice", ["--patterns", "2,#02"], ["given twice"]),
    (
        "misspelt type",
        ["--types", "verbl"],
        ["unknown negation type 'verbl'", "did you mean 'verbal'"],
    ),
    (
        "subset that selects nothing",
        ["--patterns", "2,5"],
        ["'#05 Hypernymy' selects nothing", "--patterns 5"],
    ),
    (
        "test split without blocks",
        ["--patterns", "6,2", "--eval-split", "dev"],
        ["'#02 Antonymy1' selects nothing in the dev split"],
    ),
    (
        "data set by hand",
        ["--patterns", "2", "--set", "data=notadataset"],
        ["the experiment sets 'data' itself"],
    ),
    (
        "unknown recipe",
        ["--recipe", "notadatset"],
        ["unknown recipe 'notadatset'", "did you mean 'notadataset'"],
    ),
    (
        "recipe of another benchmark",
        ["--recipe", "nubench-simple"],
        ["not a This-is-not-a-Dataset recipe"],
    ),
    ("unknown setting", ["--set", "lora_rnk=4"], ["unknown recipe setting 'lora_rnk'"]),
    (
        "cutoff shorter than the prompt",
        ["--patterns", "2,6", "--set", "cutoff_len=4"],
        ["cutoff_len=4 is shorter than the prompt", "--patterns"],
    ),
    ("model that does not exist", ["--model", "/nonexistent/model"], ["model folder not found"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_user_mistake(case, tiny_llama, nad, tmp_path, capsys):
    _, extra, words = case
    out = tmp_path / "out"
    argv = [
        "experiment",
        "notadataset-generalisation",
        "--model",
        tiny_llama,
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]
    code = main(argv)
    assert_one_clear_error(code, capsys.readouterr().err, words, out)


def test_output_folder_mistakes(tiny_llama, nad, tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    for out, words in ((f, "is a file"), (other, "holds no negbench experiment")):
        assert _experiment(tiny_llama, out, "--patterns", "2") == 2
        err = capsys.readouterr().err
        assert err.count("error:") == 1 and words in err, err
    assert sorted(p.name for p in other.iterdir()) == ["notes.txt"] and f.read_text() == "x"


# -- LLaMA-Factory export ------------------------------------------------------------------------------
ALPACA = {"prompt": "instruction", "query": "input", "response": "output"}


def _check_yaml_equals_recipe(y: dict, r) -> None:
    assert y["stage"] == "sft" and y["do_train"] is True and y["finetuning_type"] == "lora"
    assert y["learning_rate"] == pytest.approx(r.learning_rate)
    assert (y["lora_rank"], y["lora_alpha"], y["lora_dropout"]) == (
        r.lora_rank,
        r.lora_alpha,
        r.lora_dropout,
    )
    assert y["lora_target"] == ("all" if r.lora_target == ("all",) else ",".join(r.lora_target))
    assert y["num_train_epochs"] == r.num_train_epochs
    assert (y["per_device_train_batch_size"], y["gradient_accumulation_steps"]) == (
        r.per_device_train_batch_size,
        r.gradient_accumulation_steps,
    )
    assert y["cutoff_len"] == r.cutoff_len and y["lr_scheduler_type"] == r.lr_scheduler_type
    assert y["warmup_ratio"] == pytest.approx(r.warmup_ratio)
    assert (y["bf16"], y["seed"], y["train_on_prompt"]) == (r.bf16, r.seed, False)
    assert y.get("max_samples") == r.max_samples and y.get("quantization_bit") == r.quantization


def _export(tmp: Path, name: str) -> tuple[dict, dict, list, str]:
    import yaml

    out = tmp / name
    info = json.loads((out / "dataset_info.json").read_text())
    ((ds, desc),) = info.items()
    assert desc["formatting"] == "alpaca" and desc["columns"] == ALPACA
    records = json.loads((out / desc["file_name"]).read_text())  # a JSON array
    assert isinstance(records, list) and records
    assert all(set(r) == {"instruction", "input", "output"} for r in records)
    (ypath,) = out.glob("*_lora_sft.yaml")
    y = yaml.safe_load(ypath.read_text())
    assert y["dataset"] == ds and y["dataset_dir"] == "."
    return y, desc, records, (out / "README.txt").read_text()


def test_llama_factory_export_of_the_notadataset_recipe(tiny_llama, nad, tmp_path, capsys):
    from negbench.train.data import load_training_data
    from negbench.scoring.recipes import resolve_recipe

    code = main(
        [
            "export",
            "--llama-factory",
            str(tmp_path / "lf"),
            "--recipe",
            "notadataset",
            "--model",
            tiny_llama,
            "--data",
            "notadataset[patterns=6]",
            "--set",
            "lora_rank=16",
            "--set",
            "learning_rate=2e-4",
        ]
    )
    assert code == 0, capsys.readouterr().err
    y, _, records, readme = _export(tmp_path, "lf")
    r = resolve_recipe("notadataset", overrides=["lora_rank=16", "learning_rate=2e-4"])
    _check_yaml_equals_recipe(y, r)
    assert (y["lora_rank"], y["learning_rate"], y["quantization_bit"]) == (16, 2e-4, 8)
    assert y["model_name_or_path"] == str(Path(tiny_llama).resolve())
    assert y["template"] == "empty"  # no chat template: plain text, as negbench trains
    src = load_training_data("notadataset[patterns=6]").records
    assert len(records) == len(src)
    for a, b in zip(records, src):  # prompt_join " " and EOS, written into the data
        assert a["instruction"] == b["instruction"] + " " + b["input"] and a["input"] == ""
        assert a["output"] == b["output"] + "</s>"
    assert "prompt_loss_weight=0.05" in readme and "llamafactory-cli train" in readme


@pytest.mark.parametrize("recipe", ["nubench-simple", "konubench-cloze-official"])
def test_llama_factory_yaml_values_equal_the_recipe(recipe, tiny_llama, tmp_path, capsys):
    from negbench.scoring.recipes import get_recipe

    data = tmp_path / "pairs.jsonl"
    data.write_text(
        "".join(
            json.dumps(
                {
                    "instruction": "Negate the sentence.",
                    "input": f"Sentence: The cat is on mat {i}.",
                    "output": f"The cat is not on mat {i}.",
                }
            )
            + "\n"
            for i in range(3)
        )
    )
    assert (
        main(
            [
                "export",
                "--llama-factory",
                str(tmp_path / recipe),
                "--recipe",
                recipe,
                "--model",
                tiny_llama,
                "--data",
                str(data),
            ]
        )
        == 0
    ), capsys.readouterr().err
    y, _, records, _ = _export(tmp_path, recipe)
    r = get_recipe(recipe)
    _check_yaml_equals_recipe(y, r)
    assert len(records) == 3
    if recipe == "nubench-simple":  # Listing 11 records as they are (prompt_join "\n")
        assert records[0]["instruction"] == "Negate the sentence."
        assert records[0]["input"] == "Sentence: The cat is on mat 0."
    else:  # sft/load.py text: "\n\n" join, " " + target
        assert y["lora_target"] == "q_proj,k_proj,v_proj,o_proj"
        assert records[0]["instruction"] == "Negate the sentence.\n\nSentence: The cat is on mat 0."
        assert records[0]["output"] == " The cat is not on mat 0."


@pytest.mark.parametrize(
    "argv,words",
    [
        (
            ["--recipe", "notadataset"],
            ["belong to the LLaMA-Factory export", "--llama-factory DIR"],
        ),
        (["--llama-factory", "{tmp}/lf"], ["needs a recipe"]),
        (["--llama-factory", "{tmp}/lf", "--recipe", "nubench-simpel"], ["unknown recipe"]),
        (["--llama-factory", "{tmp}/busy", "--recipe", "notadataset"], ["holds other files"]),
        (
            [
                "--llama-factory",
                "{tmp}/lf",
                "--recipe",
                "notadataset",
                "--data",
                "notadataset[patterns=5]",
            ],
            ["selects no records"],
        ),
    ],
    ids=["recipe without dir", "dir without recipe", "unknown recipe", "busy folder", "empty data"],
)
def test_llama_factory_export_mistakes(argv, words, tiny_llama, nad, tmp_path, capsys):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine")
    argv = [a.format(tmp=tmp_path) for a in argv]
    code = main(["export", "--model", tiny_llama, *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.count("error:") == 1, err
    for w in words:
        assert w in err, f"{w!r} not in {err}"
    assert not (tmp_path / "lf").exists()
    assert [p.name for p in (tmp_path / "busy").iterdir()] == ["keep.txt"]
