"""negbench train: the papers' recipes, training data, LoRA training of tiny random models
(loss goes down, the adapter changes scores, a killed training resumes exactly), provenance, the
before/after evaluation, and one clear error for each user mistake."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from clear_error import assert_one_clear_error

pytest.importorskip("peft")

from negbench.cli import main  # noqa: E402
from negbench.errors import NegbenchError, OptionError  # noqa: E402
from negbench.scoring import recipes as R  # noqa: E402
from negbench.train.data import load_training_data, render, tokenize  # noqa: E402
from locations import TEST_DATA

DATA = TEST_DATA
NOTADATASET_RAW = DATA / "notadataset" / "raw"
NUBENCH = DATA / "nubench"

#: Eight pairs a tiny model can memorise.
MEM = [
    {
        "instruction": "Negate the sentence.",
        "input": f"Sentence: The cat is on mat {i}.",
        "output": f"The cat is not on mat {i}.",
    }
    for i in range(8)
]
#: Fast settings for tiny models (the recipe's own values are tested against the papers).
FAST = {
    "learning_rate": 1e-2,
    "gradient_accumulation_steps": 1,
    "per_device_train_batch_size": 4,
    "logging_steps": 1,
    "save_steps": 1000,
    "warmup_ratio": 0.0,
}


@pytest.fixture(scope="module")
def mem_file(tmp_path_factory) -> str:
    p = tmp_path_factory.mktemp("data") / "mem.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in MEM))
    return str(p)


def _train(model, out, data, *, overrides=None, **kw):
    from negbench.train.trainer import train

    kw.setdefault("progress", False)
    kw.setdefault("threads", 1)
    kw.setdefault("device", "cpu")  # the same numbers on a machine with a GPU
    kw.setdefault("log", lambda s: None)
    return train(
        "nubench-simple", model, out, data=data, overrides={**FAST, **(overrides or {})}, **kw
    )


def _info(adapter: Path) -> dict:
    return json.loads((adapter / "negbench_train.json").read_text())


# -- recipes -----------------------------------------------------------------------------------------
def test_recipe_values_equal_the_papers():
    for style, data, task in (
        ("simple", "nubench-negation", "nubench"),
        ("definition", "nubench-negation-definition", "nubench-definition"),
        ("detail", "nubench-negation-detail", "nubench-detail"),
    ):
        r = R.get_recipe(f"nubench-{style}")  # App. N, Listing 10 (+ LLaMA-Factory defaults)
        assert (r.lora_rank, r.lora_target, r.num_train_epochs) == (8, ("all",), 3.0)
        assert (r.per_device_train_batch_size, r.gradient_accumulation_steps) == (1, 8)
        assert (r.learning_rate, r.lr_scheduler_type, r.warmup_ratio) == (1e-4, "cosine", 0.1)
        assert (r.bf16, r.cutoff_len, r.max_samples) == (True, 512, 5000)
        assert (r.logging_steps, r.save_steps) == (10, 500)
        assert (r.lora_alpha, r.lora_dropout, r.prompt_loss_weight) == (16.0, 0.0, 0.0)
        assert (r.data, r.eval_task, r.eval_modes) == (data, task, ("completion", "option"))
    for fmt in ("cloze", "symbol"):
        paper, official = (
            R.get_recipe(f"konubench-{fmt}"),
            R.get_recipe(f"konubench-{fmt}-official"),
        )
        for r in (paper, official):  # App. G
            assert (r.lora_rank, r.lora_alpha, r.lora_dropout) == (8, 32.0, 0.05)
            assert r.effective_batch == 128 and r.lr_scheduler_type == "cosine" and r.bf16
            assert (r.learning_rate, r.num_train_epochs, r.seed) == (3e-5, 3.0, 1200)  # README
            assert (r.template, r.prompt_join, r.response_prefix, r.append_eos) == (
                "plain",
                "\n\n",
                " ",
                False,
            )  # official sft/load.py text format
            assert r.eval_modes == (fmt,) and r.eval_task == "konubench"
        assert paper.lora_target == ("all",) and paper.variant == "paper"
        assert official.lora_target == ("q_proj", "k_proj", "v_proj", "o_proj")
    assert R.get_recipe("konubench-symbol").data == "konubench-symbol[target=letter]"
    assert R.get_recipe("konubench-symbol-official").data == "konubench-symbol"
    n = R.get_recipe("notadataset")  # App. B + official configs/train
    assert (n.quantization, n.lora_rank, n.lora_alpha, n.lora_dropout) == (8, 8, 16.0, 0.05)
    assert (n.per_device_train_batch_size, n.gradient_accumulation_steps) == (32, 1)
    assert (n.learning_rate, n.warmup_ratio, n.num_train_epochs) == (3e-4, 0.03, 3.0)
    assert (n.prompt_loss_weight, n.cutoff_len, n.data_split) == (0.05, 512, "train")
    assert n.eval_task == "notadataset[split=test]" and n.eval_modes == ("next_token",)


def test_recipes_command_lists_every_setting(capsys, tmp_path):
    assert main(["recipes"]) == 0
    out = capsys.readouterr().out
    for name in R.recipes():
        assert name in out
    for key in R.setting_names():
        assert key in out
    assert main(["recipes", "konubench-cloze", "--yaml"]) == 0
    cfg = tmp_path / "ko.yaml"
    cfg.write_text(capsys.readouterr().out)
    assert R.resolve_recipe(None, config=cfg) == R.get_recipe("konubench-cloze")
    assert main(["recipes", "nubench-simple", "--llama-factory"]) == 0
    out = capsys.readouterr().out
    for line in (
        "lora_rank: 8",
        "lora_target: all",
        "cutoff_len: 512",
        "max_samples: 5000",
        "gradient_accumulation_steps: 8",
        "learning_rate: 0.0001",
        "warmup_ratio: 0.1",
    ):
        assert line in out


def test_overrides_yaml_then_set(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "recipe: notadataset\nlora_rank: 16\nlearning_rate: 1e-4\n"
        'lora_target: [q_proj, v_proj]\nprompt_join: "\\n"\n'
    )
    r = R.resolve_recipe(
        None,
        config=cfg,
        overrides=["lora_rank=32", "max_samples=none", "response_prefix=\\n", "bf16=no"],
    )
    assert (r.lora_rank, r.learning_rate, r.lora_target) == (32, 1e-4, ("q_proj", "v_proj"))
    assert (r.prompt_join, r.response_prefix, r.max_samples, r.bf16) == ("\n", "\n", None, False)
    assert r.identity() != R.get_recipe("notadataset").identity()
    assert R.apply(r, {"eval_limit": 5}).identity() == r.identity()  # evaluation is not training


# -- data ----------------------------------------------------------------------------------------------
def test_training_data_sources(monkeypatch, mem_file, tiny_llama):
    monkeypatch.setenv("NEGBENCH_NUBENCH", str(NUBENCH))
    td = load_training_data("nubench-negation", "train", max_samples=5)
    assert len(td.records) == 5 and td.n_available == 20
    assert td.records[0]["instruction"] == "Negate the sentence."  # Listing 11
    assert td.records[0]["input"].startswith("Sentence: ")
    monkeypatch.setenv("NEGBENCH_NOTADATASET", str(NOTADATASET_RAW))
    every = load_training_data("notadataset[split=all]")
    neg = load_training_data("notadataset[split=all,polarity=negative]")
    aff = load_training_data("notadataset[split=all,polarity=affirmative]")
    assert len(neg.records) + len(aff.records) == len(every.records) and neg.records and aff.records
    assert {r["negation_type"] for r in aff.records} == {"affirmation"}
    assert "affirmation" not in {r["negation_type"] for r in neg.records}
    p2 = load_training_data("notadataset[split=all,patterns=2]")
    assert {r["pattern"] for r in p2.records} == {"Antonymy1"}
    train_blocks = {r["block"] for r in load_training_data("notadataset").records}
    test_blocks = {r["block"] for r in load_training_data("notadataset[split=test]").records}
    assert train_blocks and test_blocks and not train_blocks & test_blocks  # by block (§6)
    assert load_training_data(mem_file).records[3]["output"] == "The cat is not on mat 3."


def test_symbol_target_letter():
    try:
        td = load_training_data("konubench-symbol[target=letter]", max_samples=20)
        full = load_training_data("konubench-symbol", max_samples=20)
    except NegbenchError:
        pytest.skip("Thunder-KoNUBench data not here")
    assert all(r["output"] in "ABCD" and len(r["output"]) == 1 for r in td.records)
    assert all(f["output"].startswith(r["output"] + ". ") for r, f in zip(td.records, full.records))


def test_tokenisation_masks_the_prompt(tiny_llama, mem_file):
    from negbench.train.trainer import load_tokenizer
    from negbench.backends.sources import resolve

    tok = load_tokenizer(resolve(tiny_llama))
    r = R.get_recipe("nubench-simple")
    td = load_training_data(mem_file)
    t = tokenize(td, r, tok)
    assert t.template == "plain"
    ex = t.examples[0]
    prompt = tok("Negate the sentence.\nSentence: The cat is on mat 0.", add_special_tokens=False)[
        "input_ids"
    ]
    n = len(prompt)
    assert ex["input_ids"][:n] == prompt and ex["labels"][:n] == [-100] * n
    assert ex["labels"][n:] == ex["input_ids"][n:] and ex["input_ids"][-1] == tok.eos_token_id
    assert tok.decode(ex["input_ids"][n:-1]) == "\nThe cat is not on mat 0."
    # a chat template: the prompt is the user turn, the response the assistant turn
    tok.chat_template = (
        "{% for m in messages %}<s>{{ m['role'] }}\n{{ m['content'] }}</s>\n"
        "{% endfor %}{% if add_generation_prompt %}<s>assistant\n{% endif %}"
    )
    p, resp, _ = render(td.records[0], r, tok, "chat")
    assert p.endswith("Sentence: The cat is on mat 0.</s>\n<s>assistant\n")
    assert resp == "The cat is not on mat 0.</s>\n"
    many = load_training_data(mem_file)
    many.records, many.where = many.records * 10, many.where * 10  # the fast path (≥ 50)
    assert tokenize(many, r, tok).examples[:8] == tokenize(td, r, tok, "chat").examples
    # prompt_loss_weight: the prompt carries that share of the loss (official NaD prepare_data)
    w = tokenize(td, R.apply(r, {"prompt_loss_weight": 0.05}), tok).examples[0]["loss_weight"]
    assert abs(sum(x for x in w if x < 1) / sum(w) - 0.05) < 1e-9


# -- training ------------------------------------------------------------------------------------------
def test_loss_decreases_and_provenance(tiny_llama, mem_file, tmp_path):
    adapter = _train(tiny_llama, tmp_path / "out", mem_file, max_steps=15)
    assert adapter == tmp_path / "out" / "adapter"
    assert (adapter / "adapter_config.json").is_file()
    assert (adapter / "adapter_model.safetensors").is_file()
    info = _info(adapter)
    losses = [h["loss"] for h in info["loss_history"]]
    assert len(losses) == 15 and losses[-1] < 0.5 * losses[0], losses
    assert info["recipe"]["name"] == "nubench-simple" and info["recipe"]["learning_rate"] == 1e-2
    assert info["recipe"]["lora_rank"] == 8 and info["steps"] == 15
    from negbench.backends.sources import resolve, source_fingerprint

    assert info["base_model"]["fingerprint"] == source_fingerprint(resolve(tiny_llama))
    assert info["data"]["n_records"] == 8 and len(info["data"]["fingerprint"]) == 64
    assert info["seeds"]["seed"] == 42 and info["packages"]["peft"] and "git" in info
    assert info["precision"] == "fp32" and any("bf16" in n for n in info["notes"])
    assert not (tmp_path / "out" / ".adapter.partial").exists()
    assert info["throughput"]["tokens_seen"] > 0


def test_resume_restores_state(tiny_llama, mem_file, tmp_path):
    """Killed after checkpoint-4 of 8 steps, the same call resumes there (optimizer, scheduler,
    RNG, data order) and the loss curve equals an uninterrupted run's."""
    from transformers import TrainerCallback

    class Kill(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            if state.global_step == 4:
                raise KeyboardInterrupt("simulated kill")

    over = {
        "save_steps": 4,
        "per_device_train_batch_size": 2,
        "gradient_accumulation_steps": 2,
        "lora_dropout": 0.1,
        "warmup_ratio": 0.1,
        "learning_rate": 5e-3,
    }
    with pytest.raises(KeyboardInterrupt):
        _train(
            tiny_llama, tmp_path / "a", mem_file, overrides=over, max_steps=8, callbacks=[Kill()]
        )
    ckpt = tmp_path / "a" / ".adapter.partial" / "checkpoints"
    assert [p.name for p in ckpt.iterdir()] == ["checkpoint-4"]
    assert not (tmp_path / "a" / "adapter").exists()
    (ckpt / "checkpoint-6").mkdir()  # killed while saving: skipped
    (ckpt / "checkpoint-6" / "adapter_model.safetensors").write_bytes(b"cut short")
    a = _info(_train(tiny_llama, tmp_path / "a", mem_file, overrides=over, max_steps=8))
    b = _info(_train(tiny_llama, tmp_path / "b", mem_file, overrides=over, max_steps=8))
    assert a["resumed_from"] == "checkpoint-4" and b["resumed_from"] is None
    assert a["steps"] == b["steps"] == 8
    la, lb = (
        [(h["step"], h["loss"], h["learning_rate"]) for h in x["loss_history"]] for x in (a, b)
    )
    assert [s for s, _, _ in la] == list(range(1, 9))
    for (s, x, lx), (_, y, ly) in zip(la, lb):
        assert abs(x - y) < 1e-5 and abs(lx - ly) < 1e-12, (s, x, y)


def test_last_step_is_logged(tiny_llama, mem_file, tmp_path):
    """With logging_steps beyond the run, the history still ends at the final step."""
    logs = []
    adapter = _train(
        tiny_llama,
        tmp_path / "o",
        mem_file,
        max_steps=3,
        overrides={"logging_steps": 10},
        log=logs.append,
    )
    hist = _info(adapter)["loss_history"]
    assert [h["step"] for h in hist] == [3] and hist[0]["loss"] == hist[0]["loss"]  # not NaN
    assert any("final logged loss" in s and "nan" not in s for s in logs)


def test_finished_adapter_is_reused_or_protected(tiny_llama, mem_file, tmp_path, capsys):
    out = tmp_path / "o"
    first = _train(tiny_llama, out, mem_file, max_steps=2)
    stamp = _info(first)["finished"]
    logs = []
    _train(tiny_llama, out, mem_file, max_steps=2, log=logs.append)  # same: reused
    assert any("reusing it" in s for s in logs) and _info(first)["finished"] == stamp
    argv = [
        "train",
        "--recipe",
        "nubench-simple",
        "--model",
        tiny_llama,
        "--out",
        str(out),
        "--data",
        mem_file,
        "--max-steps",
        "3",
        "--no-eval",
        "--quiet",
        "--threads",
        "1",
        "--device",
        "cpu",
    ]
    for k, v in FAST.items():
        argv += ["--set", f"{k}={v}"]
    assert main(argv) == 2  # different: refused
    assert "different training" in capsys.readouterr().err and _info(first)["finished"] == stamp
    assert main(argv + ["--overwrite"]) == 0
    assert _info(first)["steps"] == 3
    # killed after saving, before the move into place: the rerun finishes the move, no training
    stamp = _info(first)["finished"]
    first.rename(out / ".adapter.partial")
    logs = []
    _train(tiny_llama, out, mem_file, max_steps=3, log=logs.append)
    assert any("interrupted save" in s for s in logs) and _info(first)["finished"] == stamp


def test_evaluation_after_training(tiny_llama, mem_file, tmp_path):
    """Base and adapter through negbench run, then a compare; results.json names the adapter and
    its recipe; the adapter changes the scores."""
    out = tmp_path / "ev"
    _train(
        tiny_llama,
        out,
        mem_file,
        max_steps=10,
        eval=True,
        eval_limit=6,
        cache="none",
        overrides={"eval_task": "negation-mini", "eval_modes": "cloze"},
    )
    base = json.loads((out / "eval" / "base" / "results.json").read_text())
    lora = json.loads((out / "eval" / "adapter" / "results.json").read_text())
    assert base["config"]["backend"]["adapter"] is None
    assert lora["config"]["backend"]["adapter"] == str(out / "adapter")
    at = lora["model"]["details"]["adapter_train"]
    assert at["recipe"] == "nubench-simple" and at["base_model"] == tiny_llama
    cmp = json.loads((out / "compare.json").read_text())
    assert cmp["groups"][0]["n_pairs"] == 6 and "McNemar" in (out / "compare.md").read_text()

    def scores(run):
        rows = [
            json.loads(x)
            for x in (out / "eval" / run / "samples" / "negation-mini.cloze.0shot.jsonl")
            .read_text()
            .splitlines()
        ]
        return [r["scores"] for r in rows]

    sb, sa = scores("base"), scores("adapter")
    assert len(sb) == len(sa) == 6
    assert max(abs(x - y) for a, b in zip(sb, sa) for x, y in zip(a, b)) > 1e-3


# -- user mistakes: one message, non-zero exit, nothing written ----------------------------------------
@pytest.fixture(scope="module")
def trained(tiny_llama, mem_file, tmp_path_factory) -> Path:
    return _train(tiny_llama, tmp_path_factory.mktemp("trained") / "o", mem_file, max_steps=1)


@pytest.fixture(scope="module")
def other_llama(tiny_llama, tmp_path_factory) -> str:
    """The tiny Llama with other weights (same architecture)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    p = tmp_path_factory.mktemp("other-llama")
    m = AutoModelForCausalLM.from_pretrained(tiny_llama)
    with torch.no_grad():
        m.lm_head.weight.add_(0.01)
    m.save_pretrained(p)
    AutoTokenizer.from_pretrained(tiny_llama).save_pretrained(p)
    return str(p)


def _case_files(tmp: Path) -> dict[str, str]:
    files = {
        "bad_yaml": "lora_rank: [8\nlearning_rate: 1e-4\n",
        "yaml_key": "lora_rnk: 8\n",
        "yaml_list": "- lora_rank\n",
        "bad_json": '{"instruction": "a", "output": "b"}\n{oops\n',
        "no_output": '{"instruction": "a", "input": "b"}\n',
    }
    out = {}
    for name, text in files.items():
        p = tmp / (name + (".yaml" if "yaml" in name else ".jsonl"))
        p.write_text(text)
        out[name] = str(p)
    return out


CASES = [  # (id, extra argv, words the one message must hold, env)
    (
        "unknown recipe",
        ["--recipe", "nubench-simpel"],
        ["unknown recipe 'nubench-simpel'", "did you mean 'nubench-simple'"],
        {},
    ),
    (
        "empty subset",
        ["--recipe", "notadataset", "--data", "notadataset[patterns=5]"],
        ["selects no records"],
        {"NEGBENCH_NOTADATASET": str(NOTADATASET_RAW)},
    ),
    (
        "polarity and types exclude each other",
        ["--recipe", "notadataset", "--data", "notadataset[polarity=affirmative,types=verbal]"],
        ["select nothing"],
        {"NEGBENCH_NOTADATASET": str(NOTADATASET_RAW)},
    ),
    (
        "split that does not exist",
        ["--recipe", "nubench-simple", "--set", "data_split=test"],
        ["not 'test'"],
        {"NEGBENCH_NUBENCH": str(NUBENCH)},
    ),
    (
        "notadataset split that does not exist",
        ["--recipe", "notadataset", "--data", "notadataset[split=validation]"],
        ["no split 'validation'"],
        {"NEGBENCH_NOTADATASET": str(NOTADATASET_RAW)},
    ),
    (
        "cutoff shorter than the prompt",
        ["--recipe", "nubench-simple", "--data", "{mem}", "--set", "cutoff_len=6"],
        ["cutoff_len=6 is shorter than the prompt", "line 1", "--set cutoff_len="],
        {},
    ),
    (
        "unknown setting",
        ["--recipe", "nubench-simple", "--set", "lora_rnk=4"],
        ["unknown recipe setting 'lora_rnk'", "did you mean 'lora_rank'"],
        {},
    ),
    (
        "bad value",
        ["--recipe", "nubench-simple", "--set", "lora_rank=four"],
        ["lora_rank: expected a whole number", "--set lora_rank"],
        {},
    ),
    (
        "value out of range",
        ["--recipe", "nubench-simple", "--set", "warmup_ratio=1.5"],
        ["warmup_ratio: must lie in [0, 1.0)"],
        {},
    ),
    ("not key=value", ["--recipe", "nubench-simple", "--set", "lora_rank"], ["not key=value"], {}),
    (
        "unreadable YAML",
        ["--recipe", "nubench-simple", "--config", "{bad_yaml}"],
        ["not valid YAML", "line 2"],
        {},
    ),
    (
        "YAML with an unknown key",
        ["--recipe", "nubench-simple", "--config", "{yaml_key}"],
        ["unknown recipe setting 'lora_rnk'", "yaml_key.yaml"],
        {},
    ),
    (
        "YAML that is not a mapping",
        ["--recipe", "nubench-simple", "--config", "{yaml_list}"],
        ["must be a mapping"],
        {},
    ),
    (
        "config file missing",
        ["--recipe", "nubench-simple", "--config", "{tmp}/none.yaml"],
        ["config file not found"],
        {},
    ),
    (
        "unknown training data",
        ["--recipe", "nubench-simple", "--data", "nubench-negaton"],
        ["unknown training data 'nubench-negaton'", "did you mean 'nubench-negation'"],
        {},
    ),
    (
        "broken data file",
        ["--recipe", "nubench-simple", "--data", "{bad_json}"],
        ["invalid JSON", "bad_json.jsonl", "line 2"],
        {},
    ),
    (
        "record without output",
        ["--recipe", "nubench-simple", "--data", "{no_output}"],
        ["missing field", "line 1", "'output'"],
        {},
    ),
    (
        "unknown evaluation task",
        ["--recipe", "nubench-simple", "--data", "{mem}", "--set", "eval_task=no-such-task"],
        ["no-such-task"],
        {},
    ),
    (
        "memory budget of nothing",
        ["--recipe", "nubench-simple", "--memory-budget", "0"],
        ["memory_budget_gb", "must be positive"],
        {},
    ),
    (
        "unknown gradient checkpointing",
        ["--recipe", "nubench-simple", "--set", "gradient_checkpointing=sometimes"],
        ["gradient_checkpointing", "'sometimes'", "auto, on, off"],
        {},
    ),
    (
        "unknown lr scheduler",
        ["--recipe", "nubench-simple", "--set", "lr_scheduler_type=cosin"],
        ["unknown scheduler 'cosin'"],
        {},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_user_mistake(case, tiny_llama, mem_file, tmp_path, capsys, monkeypatch):
    _, extra, words, env = case
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    subs = {"mem": mem_file, "tmp": str(tmp_path), **_case_files(tmp_path)}
    extra = [x.format(**subs) for x in extra]
    out = tmp_path / "out"
    code = main(
        ["train", "--model", tiny_llama, "--out", str(out), "--quiet", "--device", "cpu", *extra]
    )
    assert_one_clear_error(code, capsys.readouterr().err, words, out)


def test_adapter_on_another_base_is_an_error(trained, other_llama, tmp_path, capsys):
    out = tmp_path / "run"
    code = main(
        [
            "run",
            "--model",
            other_llama,
            "--adapter",
            str(trained),
            "--tasks",
            "negation-mini",
            "--modes",
            "cloze",
            "--limit",
            "2",
            "--output",
            str(out),
            "--no-cache",
            "--quiet",
            "--device",
            "cpu",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.count("error:") == 1, err
    assert "was trained on the base model" in err and "--model" in err
    assert not out.exists()


def test_tokenizer_is_in_provenance_and_checked(trained, tiny_llama, tmp_path, caplog):
    """The adapter records how its training data was tokenised; a backend whose tokenizer
    tokenises differently (another transformers version reading the same GGUF) says so, and its
    fingerprint (the response cache key) differs."""
    import shutil
    from transformers import AutoTokenizer
    from negbench.backends.hf import HFBackend
    from negbench.backends.tokenizing import tokenizer_fingerprint

    tok = AutoTokenizer.from_pretrained(tiny_llama)
    want = _info(trained)["data"]["tokenized"]["tokenizer"]
    assert want == tokenizer_fingerprint(tok) and len(want) == 16
    tok.add_tokens(["negbench-probe-token"])
    assert tokenizer_fingerprint(tok) != want
    moved = tmp_path / "adapter"
    shutil.copytree(trained, moved)
    info = _info(moved)
    info["data"]["tokenized"]["tokenizer"] = "0" * 16  # as if trained elsewhere
    (moved / "negbench_train.json").write_text(json.dumps(info))
    plain = HFBackend(tiny_llama, device="cpu", threads=1)
    with caplog.at_level("WARNING", logger="negbench"):
        b = HFBackend(tiny_llama, device="cpu", threads=1, adapter=str(moved))
    assert b.fingerprint_info["tokenizer"] == plain.fingerprint_info["tokenizer"] == want
    assert any("tokenises differently" in r.getMessage() for r in caplog.records)


def test_adapter_of_a_gguf_fits_its_converted_copy(trained, tiny_llama, tmp_path, monkeypatch):
    """An adapter trained on a GGUF may be evaluated on negbench's converted copy of that GGUF
    (the same weights), and on no other folder."""
    import shutil
    from negbench.backends.hf import check_adapter_base
    from negbench.errors import ModelError
    from negbench.backends.sources import resolve

    monkeypatch.setenv("NEGBENCH_CACHE", str(tmp_path / "cache"))
    gguf_fp = "gguf:" + "ab12" * 16
    copy = tmp_path / "cache" / "models" / ("model.Q4-" + "ab12" * 5)
    shutil.copytree(tiny_llama, copy)
    (copy / ".complete").write_text("model.Q4.gguf")
    adapter = tmp_path / "adapter"
    shutil.copytree(trained, adapter)
    info = _info(adapter)
    info["base_model"] = {"spec": "model.Q4.gguf", "fingerprint": gguf_fp}
    (adapter / "negbench_train.json").write_text(json.dumps(info))
    assert check_adapter_base(str(adapter), resolve(str(copy)))["base_fingerprint"] == gguf_fp
    with pytest.raises(ModelError, match="was trained on the base model"):
        check_adapter_base(str(adapter), resolve(tiny_llama))
    (copy / ".complete").unlink()  # an unfinished copy: no
    with pytest.raises(ModelError, match="was trained on the base model"):
        check_adapter_base(str(adapter), resolve(str(copy)))


def test_lora_target_that_does_not_exist(tiny_llama, mem_file, tmp_path):
    with pytest.raises(OptionError, match="lora_target"):
        _train(
            tiny_llama, tmp_path / "t", mem_file, overrides={"lora_target": "wq,wv"}, max_steps=1
        )
    assert not (tmp_path / "t").exists()


# -- a real model ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_smollm2_notadataset_recipe(tmp_path, monkeypatch):
    """The embedded SmolLM2 with the notadataset recipe (chat template, prompt-weighted loss) on
    the fixture's train blocks, evaluated on its test blocks."""
    monkeypatch.setenv("NEGBENCH_NOTADATASET", str(NOTADATASET_RAW))
    from negbench.train.trainer import train

    adapter = train(
        "notadataset",
        "smollm2-135m-instruct",
        tmp_path / "nad",
        max_steps=2,
        overrides={"per_device_train_batch_size": 4, "logging_steps": 1},
        eval=True,
        cache="none",
        progress=False,
        threads=2,
    )
    info = _info(adapter)
    assert info["data"]["tokenized"]["template"] == "chat" and info["steps"] == 2
    assert any("8-bit" in n for n in info["notes"])
    assert (tmp_path / "nad" / "compare.md").is_file()
    shutil.rmtree(tmp_path / "nad")
