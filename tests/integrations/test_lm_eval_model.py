"""negbench as an lm-evaluation-harness model (``--model negbench``) answers lm-eval's tasks as
lm-eval's own ``hf`` model does, sample for sample.

Three tasks are defined here, locally (YAML + JSON lines written to ``tmp_path``, text written
by us, nothing downloaded): a ``multiple_choice`` task, a ``loglikelihood_rolling`` task (as
wikitext: word/byte perplexity, bits per byte) whose documents are longer than the model's
length so they are cut into several windows, and a ``generate_until`` task.  Each is run through
``lm_eval.simple_evaluate(log_samples=True)`` once with ``hf`` (HFLM, float32, batch 1) and once
with ``negbench`` on the ``tiny_llama`` fixture.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

pytest.importorskip("lm_eval")

MAX_LENGTH = 48  # small, so rolling documents need several windows and contexts truncate

SUBJECTS = ["The cat", "A dog", "The river", "She", "The museum", "Peter", "Mary", "He"]
PREDICATES = [
    ("is on the mat", "is not on the mat"),
    ("flows north", "does not flow north"),
    ("opened last year", "did not open last year"),
    ("was happy", "wasn't happy"),
    ("arrived", "never arrived"),
    ("is an animal", "is not an animal"),
]


def mc_docs() -> list[dict]:
    docs = []
    for i, s in enumerate(SUBJECTS):
        pos, neg = PREDICATES[i % len(PREDICATES)]
        other = PREDICATES[(i + 1) % len(PREDICATES)][1]
        choices = [f"{s} {neg}.", f"{s} {pos}.", f"{s} {other}."]
        docs.append(
            {
                "question": f"Negate the sentence.\nSentence: {s} {pos}.\nNegation:",
                "choices": choices,
                "answer": 0,
            }
        )
    return docs


def rolling_docs() -> list[dict]:
    out = []
    for i in range(4):
        sents = [
            f"{SUBJECTS[(i + j) % len(SUBJECTS)]} {PREDICATES[(i * j) % len(PREDICATES)][j % 2]}."
            for j in range(6 + 4 * i)
        ]
        out.append({"text": " ".join(sents)})
    out.append({"text": "A dog."})  # shorter than one window
    return out


def gen_docs() -> list[dict]:
    return [
        {"question": f"Sentence: {s} {p}.\nNegation:", "answer": f" {s} {n}"}
        for s in SUBJECTS[:5]
        for p, n in PREDICATES[:1]
    ]


def write_tasks(folder: Path) -> Path:
    """Three local lm-eval tasks (nb_mc, nb_roll, nb_gen) in ``folder``; returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, docs in (("mc", mc_docs()), ("roll", rolling_docs()), ("gen", gen_docs())):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    common = (
        "dataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {path}\ntest_split: test\n"
    )
    (folder / "nb_mc.yaml").write_text(
        "task: nb_mc\n"
        + common.format(path=folder / "mc.jsonl")
        + 'output_type: multiple_choice\ndoc_to_text: "{{question}}"\n'
        'doc_to_target: answer\ndoc_to_choice: "{{choices}}"\n'
        "metric_list:\n  - metric: acc\n  - metric: acc_norm\n"
    )
    (folder / "nb_roll.yaml").write_text(
        "task: nb_roll\n"
        + common.format(path=folder / "roll.jsonl")
        + 'output_type: loglikelihood_rolling\ndoc_to_text: ""\ndoc_to_target: "{{text}}"\n'
        "metric_list:\n  - metric: word_perplexity\n  - metric: byte_perplexity\n"
        "  - metric: bits_per_byte\n"
    )
    (folder / "nb_gen.yaml").write_text(
        "task: nb_gen\n"
        + common.format(path=folder / "gen.jsonl")
        + 'output_type: generate_until\ndoc_to_text: "{{question}}"\n'
        'doc_to_target: "{{answer}}"\n'
        'generation_kwargs:\n  until: ["\\n", "."]\n  do_sample: false\n'
        "  max_gen_toks: 12\n"
        "metric_list:\n  - metric: exact_match\n"
    )
    return folder


def evaluate(model: str, model_args: str, tasks: list[str], include: Path) -> dict:
    import lm_eval
    from negbench.integrations.lm_eval import task_manager  # also registers "negbench"

    return lm_eval.simple_evaluate(
        model=model,
        model_args=model_args,
        tasks=tasks,
        task_manager=task_manager(tasks, str(include)),
        log_samples=True,
        bootstrap_iters=0,
        device="cpu",
    )


@pytest.fixture(scope="module")
def tasks(tmp_path_factory) -> Path:
    return write_tasks(tmp_path_factory.mktemp("lm-eval-tasks"))


TASKS = ["nb_mc", "nb_roll", "nb_gen"]


def nb_args(model: str, cache: Path) -> str:
    return f"model={model},dtype=float32,max_length={MAX_LENGTH},cache={cache},progress=false"


@pytest.fixture(scope="module")
def runs(tasks, tiny_llama, tmp_path_factory) -> dict:
    """lm-eval's hf model and negbench on the same three tasks (negbench with a fresh cache)."""
    cache = tmp_path_factory.mktemp("nb-cache") / "responses.sqlite"
    hf = evaluate(
        "hf",
        f"pretrained={tiny_llama},dtype=float32,batch_size=1,max_length={MAX_LENGTH}",
        TASKS,
        tasks,
    )
    nb = evaluate("negbench", nb_args(tiny_llama, cache), TASKS, tasks)
    return {"hf": hf, "nb": nb, "cache": cache}


def _pairs(runs, task):
    a = sorted(runs["hf"]["samples"][task], key=lambda s: s["doc_id"])
    b = sorted(runs["nb"]["samples"][task], key=lambda s: s["doc_id"])
    assert [s["doc_id"] for s in a] == [s["doc_id"] for s in b] and a
    return list(zip(a, b))


def _metrics(res, task) -> dict:
    return {
        k: v
        for k, v in res["results"][task].items()
        if k not in ("name", "alias") and not k.endswith("_stderr,none")
    }


def test_rolling_windows_are_lm_evals():
    import random
    from lm_eval.utils import get_rolling_token_windows, make_disjoint_window
    from negbench.core.engine import rolling_windows

    rng = random.Random(0)
    for _ in range(2000):
        toks = [rng.randrange(1, 99) for _ in range(rng.randrange(0, 60))]
        n = rng.randrange(1, 12)
        want = [
            tuple(w) for w in map(make_disjoint_window, get_rolling_token_windows(toks, 0, n, 1))
        ]
        assert [tuple(w) for w in rolling_windows(toks, 0, n)] == want


def test_multiple_choice_matches_hf(runs):
    deltas = []
    for a, b in _pairs(runs, "nb_mc"):
        assert len(a["resps"]) == len(b["resps"]) == 3
        for (ra,), (rb,) in zip(a["resps"], b["resps"]):
            deltas.append(abs(ra[0] - rb[0]))
            assert ra[1] == rb[1]  # is_greedy
        assert (a["acc"], a["acc_norm"]) == (b["acc"], b["acc_norm"])
    print(f"\nmultiple_choice: {len(deltas)} log-likelihoods, max |Δ| {max(deltas):.2e}")
    assert max(deltas) < 1e-4
    assert _metrics(runs["hf"], "nb_mc") == _metrics(runs["nb"], "nb_mc")


def test_rolling_matches_hf(runs):
    import sqlite3

    deltas = []
    for a, b in _pairs(runs, "nb_roll"):
        ((la,),), ((lb,),) = a["resps"], b["resps"]
        deltas.append(abs(la - lb))
        assert a["target"] == b["target"]
    print(f"\nloglikelihood_rolling: {len(deltas)} documents, max |Δ| {max(deltas):.2e}")
    assert max(deltas) < 1e-3  # sums over up to ~600 tokens
    ma, mb = _metrics(runs["hf"], "nb_roll"), _metrics(runs["nb"], "nb_roll")
    assert ma.keys() == mb.keys() and len(ma) == 4
    for k in ma:
        assert mb[k] == pytest.approx(ma[k], rel=1e-5), k
    # the long documents really were cut into windows (and the short one was not)
    db = sqlite3.connect(str(runs["cache"]))
    wins = sorted(
        json.loads(v)["n_windows"]
        for (v,) in db.execute("SELECT value FROM responses WHERE kind='loglikelihood_rolling'")
    )
    assert wins[0] == 1 and wins[-1] >= 3 and len(wins) == 5


def test_generation_matches_hf(runs):
    for a, b in _pairs(runs, "nb_gen"):
        assert a["resps"] == b["resps"] and a["filtered_resps"] == b["filtered_resps"]
    assert _metrics(runs["hf"], "nb_gen") == _metrics(runs["nb"], "nb_gen")


def test_second_run_is_served_from_the_cache(runs, tasks, tiny_llama):
    first = runs["nb"]["config"]["negbench_engine"]
    assert first["computed"] > 0 and first["model_calls"] > 0
    again = evaluate("negbench", nb_args(tiny_llama, runs["cache"]), TASKS, tasks)
    st = again["config"]["negbench_engine"]
    assert st["computed"] == 0 and st["model_calls"] == 0 and st["cached"] == st["unique"] > 0
    for t in TASKS:
        assert [s["resps"] for s in again["samples"][t]] == [
            s["resps"] for s in runs["nb"]["samples"][t]
        ]


@pytest.mark.slow  # lm-eval's command line indexes its thousands of task YAMLs (10-40 s)
def test_cli_runs_lm_eval_end_to_end(tasks, tiny_llama, tmp_path, capsys):
    from negbench.cli import main

    out = tmp_path / "lm-eval-out"
    code = main(
        [
            "lm-eval",
            "--",
            "--model",
            "negbench",
            "--model_args",
            nb_args(tiny_llama, tmp_path / "c.sqlite"),
            "--tasks",
            "nb_mc,nb_roll",
            "--include_path",
            str(tasks),
            "--device",
            "cpu",
            "--output_path",
            str(out),
        ]
    )
    assert code == 0
    (results,) = out.rglob("results_*.json")
    res = json.loads(results.read_text())
    assert (
        set(res["results"]) == {"nb_mc", "nb_roll"}
        and 0 <= res["results"]["nb_mc"]["acc,none"] <= 1
    )
    assert math.isfinite(res["results"]["nb_roll"]["bits_per_byte,none"])
    assert "nb_mc" in capsys.readouterr().out  # lm-eval's table
    # a bad model argument: one clear negbench error, non-zero exit
    code = main(
        [
            "lm-eval",
            "--model",
            "negbench",
            "--model_args",
            f"model={tiny_llama},colour=red",
            "--tasks",
            "nb_mc",
            "--include_path",
            str(tasks),
            "--device",
            "cpu",
        ]
    )
    assert code == 2 and "unknown negbench model argument(s): colour" in capsys.readouterr().err


def test_engine_rolling_requests(tiny_llama):
    """Dedup, an empty text, agreement with a plain float64 forward, and a clear error from a
    request-level backend."""
    import torch
    from negbench.backends.hf import HFBackend
    from negbench.core.engine import Engine, rolling_windows
    from negbench.errors import ModelError
    from negbench.core.requests import RollingLoglikelihoodRequest as R

    be = HFBackend(tiny_llama, dtype="float32", device="cpu", max_length=16)
    text = " ".join(f"{s} {p[1]}." for s, p in zip(SUBJECTS, PREDICATES))
    eng = Engine(be)
    res = eng.run([R(text), R(text), R(""), R("A dog.")])
    a, b, empty, short = res
    assert res.stats.unique == 3 and a == b and (empty.logprob, empty.n_windows) == (0.0, 0)
    toks = be.encode(text)
    assert (
        a.n_tokens == len(toks)
        and a.n_windows == len(rolling_windows(toks, be.prefix_token_id, 16)) > 3
    )
    ref = 0.0
    for ctx, cont in rolling_windows(toks, be.prefix_token_id, 16):
        seq = ctx + cont
        with torch.inference_mode():
            lp = torch.log_softmax(be.model(torch.tensor([seq[:-1]])).logits[0].double(), -1)
        ref += sum(lp[p - 1, seq[p]].item() for p in range(len(ctx), len(seq)))
    assert a.logprob == pytest.approx(ref, abs=1e-4)

    class Served:
        level, name, fingerprint = "request", "openai-compatible", "x"

        def check_kinds(self, kinds):
            pass

    with pytest.raises(ModelError, match="rolling log-likelihood"):
        Engine(Served()).run([R(text)])


def test_sampling_and_unknown_arguments_are_refused(tiny_llama, tmp_path):
    from negbench.errors import OptionError
    from negbench.integrations.lm_eval import NegbenchLM

    lm = NegbenchLM(tiny_llama, cache=str(tmp_path / "c.sqlite"), device="cpu")
    greedy = lm._generation(
        "Q:",
        {"until": ["\n"], "do_sample": False, "temperature": 0, "max_gen_toks": 5, "top_p": 1.0},
    )
    assert greedy.stop == ("\n", "</s>") and greedy.max_tokens == 5
    for bad in (
        {"do_sample": True, "temperature": 0.7},
        {"temperature": 0.5},
        {"until": ["\n"], "num_beams": 4},
    ):
        with pytest.raises(OptionError):
            lm._generation("Q:", bad)
    with pytest.raises(OptionError, match="colour"):
        NegbenchLM(tiny_llama, colour="red")
    # cache=none (lm-eval parses it to None) means no cache; the default is negbench's cache
    assert NegbenchLM.create_from_arg_string(f"model={tiny_llama},cache=none").cache is None
    assert NegbenchLM(tiny_llama).cache.path.name == "responses.sqlite"


def test_train_general_tasks(tasks, tiny_llama, tmp_path, capsys):
    pytest.importorskip("peft")
    from negbench.cli import main

    data = tmp_path / "mem.jsonl"
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
            for i in range(4)
        )
    )
    out = tmp_path / "o"
    argv = [
        "train",
        "--recipe",
        "nubench-simple",
        "--model",
        tiny_llama,
        "--out",
        str(out),
        "--data",
        str(data),
        "--max-steps",
        "1",
        "--no-eval",
        "--quiet",
        "--threads",
        "1",
        "--device",
        "cpu",
        "--cache",
        str(tmp_path / "c.sqlite"),
        "--set",
        "per_device_train_batch_size=2",
        "--set",
        "gradient_accumulation_steps=1",
    ]
    # an unknown task: one clear error before any training
    assert main(argv + ["--general-tasks", "nb_nope", "--general-include-path", str(tasks)]) == 2
    assert "unknown lm-eval task(s): nb_nope" in capsys.readouterr().err and not out.exists()
    assert (
        main(
            argv
            + [
                "--general-tasks",
                "nb_mc",
                "--general-include-path",
                str(tasks),
                "--general-limit",
                "4",
            ]
        )
        == 0
    )
    for name in ("base", "adapter"):
        res = json.loads((out / "general" / f"{name}.json").read_text())
        assert 0 <= res["results"]["nb_mc"]["acc,none"] <= 1
        assert res["config"]["negbench_adapter"] == (
            None if name == "base" else str(out / "adapter")
        )
