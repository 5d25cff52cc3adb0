"""A real negbench run (tiny random Llama, built-in tasks) written in lm-evaluation-harness's
results layout and read back with lm-eval's own utilities: ``make_table`` (what ``lm_eval``
prints), ``get_results_filenames`` / ``get_latest_filename`` (how its tracker finds saved
results) and the ``datasets`` JSON reader its tracker uses on them; then the model-card snippet
of the same run.  The slow test compares the layout with a file lm-eval itself writes."""

from __future__ import annotations

import json
import math
import re

import pytest

from negbench.profile.lm_eval_layout import (
    dumps,
    flat_metrics,
    higher_is_better,
    results_filename,
    sanitize_model_name,
    to_lm_eval,
    write_lm_eval,
)
from negbench.scoring.intervals import wilson
from negbench.profile.model_card import card_rows, model_card_markdown

lm_utils = pytest.importorskip("lm_eval.utils")

RESERVED = {"name", "alias", "sample_len", "sample_count"}


@pytest.fixture(scope="module")
def run(tiny_llama, tmp_path_factory) -> dict:
    from negbench.cli import main

    out = tmp_path_factory.mktemp("profile-run") / "run"
    assert (
        main(
            [
                "run",
                "--model",
                tiny_llama,
                "--tasks",
                "negation-mini,truefalse-mini",
                "--modes",
                "cloze,negation-mini:generate,truefalse-mini:next_token",
                "--shots",
                "0,1",
                "--seeds",
                "3,4",
                "--limit",
                "4",
                "--output",
                str(out),
                "--quiet",
                "--no-cache",
            ]
        )
        == 0
    )
    text = (out / "results.json").read_text()
    return _no_constants(text)  # results.json is strict JSON too


def _no_constants(text: str):
    def bad(c):
        raise AssertionError(f"non-strict JSON constant {c}")

    return json.loads(text, parse_constant=bad)


def test_layout_is_lm_evals_and_strict_json(run):
    d = to_lm_eval(run)
    data = _no_constants(dumps(d))
    assert data == d
    for key in (
        "results",
        "groups",
        "group_subtasks",
        "configs",
        "versions",
        "n-shot",
        "higher_is_better",
        "n-samples",
        "config",
        "git_hash",
        "date",
        "model_name",
        "model_name_sanitized",
        "total_evaluation_time_seconds",
    ):
        assert key in d, key
    units = run["units"]
    assert set(units) <= set(d["results"]) and set(d["configs"]) == set(units)
    for name, u in units.items():
        entry = d["results"][name]
        assert entry["sample_len"] == u["metrics"]["n"] == d["n-samples"][name]["effective"] == 4
        assert d["n-samples"][name]["original"] == run["datasets"][u["task"]]["test"]["n"]
        assert d["n-shot"][name] == u["shots"]
        for key, v in entry.items():
            if key in RESERVED:
                continue
            metric, sep, filt = key.partition(",")
            assert sep and filt == "none", key
            if metric.endswith("_stderr"):
                assert v == "N/A" or (isinstance(v, float) and math.isfinite(v))
            else:
                assert v == u["metrics"][metric] and f"{metric}_stderr,none" in entry
                assert d["higher_is_better"][name][metric] is True
        # the per-sample metrics carry their stderr as negbench computed it
        first = next(m for m in ("acc", "exact_match") if m in u["metrics"])
        assert entry[f"{first}_stderr,none"] == u["metrics"][f"{first}_stderr"]
        cfg = d["configs"][name]
        assert cfg["task"] == name and cfg["num_fewshot"] == u["shots"]
        assert cfg["metadata"]["mode"] == u["mode"] and cfg["metadata"]["seed"] == u["seed"]
        assert cfg["output_type"] == (
            "generate_until" if u["mode"] == "generate" else "multiple_choice"
        )
    gen = d["configs"]["negation-mini.generate.0shot"]["generation_kwargs"]
    assert gen == {"until": ["\n"], "do_sample": False, "max_gen_toks": 8}
    # seed groups hold negbench's seed means; each task nests its units as lm-eval nests a family
    g = d["groups"]["negation-mini.cloze.1shot"]
    assert g["acc,none"] == run["groups"]["negation-mini.cloze.1shot"]["metrics"]["acc"]["mean"]
    assert g["acc_stderr,none"] == "N/A"
    assert d["group_subtasks"]["negation-mini.cloze.1shot"] == [
        "negation-mini.cloze.1shot.seed3",
        "negation-mini.cloze.1shot.seed4",
    ]
    assert set(d["group_subtasks"]["truefalse-mini"]) == {
        f"truefalse-mini.{m}.{k}shot" for m in ("cloze", "next_token") for k in (0, 1)
    }
    assert "negation-mini" not in d["groups"] and "negation-mini" not in d["n-shot"]  # mixed shots
    assert d["n-shot"]["negation-mini.cloze.1shot"] == 1
    assert d["config"]["model"] == "negbench" and d["config"]["limit"] == 4
    assert d["config"]["model_args"].startswith(f"model={run['config']['model']},")
    assert d["git_hash"] == run["provenance"]["git"]["commit"]
    assert d["model_name_sanitized"] == lm_utils.sanitize_model_name(d["model_name"])


def test_lm_evals_make_table_prints_every_unit(run):
    d = to_lm_eval(run)
    table = lm_utils.make_table(d)
    for name, u in run["units"].items():
        line = next(
            line for line in table.splitlines() if re.search(rf"- {re.escape(name)}\s*\|", line)
        )
        first = next(m for m in ("acc", "exact_match") if m in u["metrics"])
        cells = [c.strip() for c in line.split("|")]
        assert cells[4] == str(u["shots"]) and cells[5] == first, line
        assert float(cells[7]) == pytest.approx(u["metrics"][first], abs=5e-5), line
    groups = lm_utils.make_table(d, "groups")
    assert "negation-mini.cloze.1shot" in groups and "N/A" in groups


def test_saved_file_is_found_ordered_and_read_by_lm_evals_readers(run, tmp_path):
    path = write_lm_eval(run, tmp_path)
    assert path.parent.name == sanitize_model_name(run["model"]["spec"])
    assert re.fullmatch(r"results_\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.json", path.name)
    later = dict(run, finished="2999-01-01T00:00:00+00:00")
    path2 = write_lm_eval(later, tmp_path)
    files = [str(p) for p in tmp_path.rglob("*.json")]
    assert sorted(lm_utils.get_results_filenames(files)) == sorted([str(path), str(path2)])
    assert lm_utils.get_latest_filename(files) == str(path2)
    # lm-eval's tracker reads saved results with the datasets JSON loader, row 0 of "results"
    datasets = pytest.importorskip("datasets")
    ds = datasets.load_dataset(
        "json", data_files=str(path), split="train", cache_dir=str(tmp_path / "hf-cache")
    )
    back = ds["results"][0]
    for name, entry in to_lm_eval(run)["results"].items():
        got = {k: v for k, v in back[name].items() if v is not None}
        assert got == entry, name


def test_flat_metrics_and_directions():
    values, stderrs, undefined = flat_metrics(
        {
            "n": 10,
            "acc": 0.5,
            "acc_stderr": 0.1,
            "acc_norm": 0.4,
            "acc_norm_stderr": float("nan"),
            "pair_consistency": float("nan"),
            "n_pairs": 3,
            "error_analysis": {"n": 1},
            "ok": True,
            "coherence_all": 0.2,
        }
    )
    assert values == {"acc": 0.5, "acc_norm": 0.4, "coherence_all": 0.2}
    assert stderrs == {"acc": 0.1, "acc_norm": "N/A", "coherence_all": "N/A"}
    assert undefined == ["pair_consistency"]
    assert (
        higher_is_better("acc")
        and higher_is_better("M.acc")
        and higher_is_better("consistency_scope")
    )
    assert (
        higher_is_better("error_rate") is False
        and higher_is_better("confusion_pp_part_pct") is False
    )
    assert (
        higher_is_better("incorrect_local_pct") is None and higher_is_better("Mi.acc_chg") is None
    )
    d = to_lm_eval(
        {
            "units": {
                "t.m.0shot": {
                    "task": "t",
                    "mode": "m",
                    "shots": 0,
                    "seed": None,
                    "metrics": {"n": 2, "x": float("nan"), "acc": 1.0},
                }
            },
            "finished": "2026-01-02T03:04:05+00:00",
        }
    )
    assert d["configs"]["t.m.0shot"]["metadata"]["undefined_metrics"] == ["x"]
    assert "unavailable" in d["configs"]["t.m.0shot"]["metadata"]["task_definition"]
    assert (
        results_filename({"finished": "2026-01-02T03:04:05+00:00"})
        == "results_2026-01-02T03-04-05.json"
    )
    _no_constants(dumps(d))


def test_model_card_snippet(run):
    md = model_card_markdown(run)
    rows = card_rows(run)
    assert len(rows) == len(run["groups"])
    # 4 items: the run withheld its intervals (under 30), and so does the card
    assert all(g["headline"]["ci95"] is None for g in run["groups"].values())
    for r in rows:
        assert r.low is None and r.high is None and r.n == 4 and r.subset
        head = f"| {r.task} | {r.mode} | {r.shots} |"
        line = next(line for line in md.splitlines() if line.startswith(head))
        assert f"| {100 * r.value:.1f}" in line and "| % | – | 4 |" in line
        assert ("seeds 3, 4" in line) == (r.shots == 1)
    assert run["provenance"]["git"]["commit"][:12] in md
    assert run["datasets"]["negation-mini"]["test"]["sha256"][:12] in md
    lo, hi = wilson(0.0, 4)
    assert lo == 0.0 and 0.4 < hi < 0.5  # not a zero-width interval at 0 %


def test_model_card_says_units_settings_and_the_runs_warnings():
    """AccChg in points (signed, no Wilson interval on a difference), a subset with its size and
    rule, the chat template, and every warning of the runs with its row marked."""
    unit = {
        "task": "jnli-neg",
        "mode": "loglik",
        "shots": 0,
        "seed": None,
        "group": "g1",
        "chat": True,
        "metrics": {"n": 40, "M.acc_chg": -0.05, "M.acc_chg_stderr": 0.02},
        "subset": {"subset": True, "n": 40, "full": 2000, "rule": "whole groups, seed 0"},
    }
    other = {
        "task": "negation-mini",
        "mode": "cloze",
        "shots": 0,
        "seed": None,
        "group": "g2",
        "chat": False,
        "metrics": {"n": 40, "acc": 0.7},
    }
    results = {
        "units": {"jnli-neg.loglik.0shot": unit, "negation-mini.cloze.0shot": other},
        "groups": {},
        "warnings": [
            {
                "unit": "jnli-neg.loglik.0shot",
                "kind": "constant_prediction",
                "message": "the model answers 'entailment' for 100 % of the 80 items",
                "fix": "try --chat",
            }
        ],
    }
    md = model_card_markdown(results)
    acc_chg = next(line for line in md.splitlines() if line.startswith("| jnli-neg |"))
    # −5.0 points, its interval from the stderr (not Wilson on a difference), flagged
    assert "| -5.0 ⚠ | points | -8.9 to -1.1 |" in acc_chg
    assert "chat template" in acc_chg and "no chat template" not in acc_chg
    assert "subset: 40 of 2,000 items: whole groups, seed 0" in acc_chg
    mini = next(line for line in md.splitlines() if line.startswith("| negation-mini |"))
    assert "| 70.0 | % |" in mini and "no chat template; all items" in mini
    assert "[constant_prediction]** `jnli-neg.loglik.0shot`: the model answers 'entailment'" in md
    assert "Warnings (1)" in md and "AccChg" in md and "in points" in md


@pytest.mark.slow
def test_layout_keys_match_a_file_lm_eval_writes(run, tiny_llama, tmp_path):
    """lm-eval 0.4.13 itself (hf model, a local multiple-choice and generation task, saved by its
    EvaluationTracker): our file has its top-level keys, per-task keys, config keys and
    n-samples shape."""
    import lm_eval
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    (tmp_path / "mc.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "question": f"Negate: The cat is on mat {i}.",
                    "choices": [f"The cat is not on mat {i}.", "A dog."],
                    "answer": 0,
                }
            )
            + "\n"
            for i in range(3)
        )
    )
    common = (
        f"dataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {tmp_path / 'mc.jsonl'}\n"
        "test_split: test\n"
    )
    (tmp_path / "nb_mc.yaml").write_text(
        "task: nb_mc\n" + common + "output_type: multiple_choice\n"
        'doc_to_text: "{{question}}"\ndoc_to_target: answer\n'
        'doc_to_choice: "{{choices}}"\nmetric_list:\n  - metric: acc\n'
    )
    (tmp_path / "nb_gen.yaml").write_text(
        "task: nb_gen\n" + common + "output_type: generate_until\n"
        'doc_to_text: "{{question}}"\ndoc_to_target: "{{choices[0]}}"\n'
        'generation_kwargs:\n  until: ["\\n"]\n  max_gen_toks: 4\n'
        "metric_list:\n  - metric: exact_match\n"
    )
    tracker = EvaluationTracker(output_path=str(tmp_path / "lm-eval-out"))
    res = lm_eval.simple_evaluate(
        model="hf",
        model_args=f"pretrained={tiny_llama},dtype=float32",
        tasks=["nb_mc", "nb_gen"],
        task_manager=TaskManager(include_path=str(tmp_path)),
        device="cpu",
        evaluation_tracker=tracker,
        num_fewshot=1,
    )
    tracker.save_results_aggregated(results=res, samples=None)
    theirs = json.loads(next((tmp_path / "lm-eval-out").rglob("results_*.json")).read_text())
    ours = to_lm_eval(run)
    lm_only = {
        "pretty_env_info",
        "lm_eval_version",
        "tokenizer_pad_token",
        "tokenizer_eos_token",
        "tokenizer_bos_token",
        "eot_token_id",
        "samples",
    }
    assert set(theirs) - lm_only <= set(ours) <= set(theirs) | {"groups", "negbench"}
    assert set(ours["config"]) == set(theirs["config"])
    for task in ("nb_mc", "nb_gen"):
        assert set(theirs["results"][task]) & RESERVED == {"name", "alias", "sample_len"}
        assert all(
            re.fullmatch(r"[^,]+,none", k) for k in theirs["results"][task] if k not in RESERVED
        )
        assert set(theirs["n-samples"][task]) == {"original", "effective"}
    ours_cfg = ours["configs"]["negation-mini.generate.1shot.seed3"]
    theirs_cfg = theirs["configs"]["nb_gen"]
    assert set(ours_cfg) - {"tag", "fewshot_split"} <= set(theirs_cfg) | {"description"}
    assert set(ours_cfg["generation_kwargs"]) <= set(theirs_cfg["generation_kwargs"]) | {
        "do_sample"
    }
    assert set(ours_cfg["fewshot_config"]) <= set(theirs_cfg["fewshot_config"])
