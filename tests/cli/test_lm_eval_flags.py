"""lm-eval's flags on negbench's command line: aliases where the meaning is the same, a note
where negbench already does it, a one-line pointer (exit 2, no traceback) where it differs; the
table covers every flag of ``lm_eval run --help`` and docs/lm_eval_flags.md prints it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from negbench.cli import build_parser, main
from negbench.cli.lm_eval_flags import FLAGS, POINTER, markdown_table, translate_argv
from negbench.errors import OptionError

DOC = Path(__file__).resolve().parents[2] / "docs" / "lm_eval_flags.md"


def tr(line: str) -> list[str]:
    return translate_argv(line.split(), build_parser())


def test_same_meaning_flags_become_negbench_options(capsys):
    got = tr(
        "run --model hf --model_args pretrained=org/m,dtype=torch.float16 --tasks a b "
        "--num_fewshot 5 --batch_size auto:4 --limit 0.1 --output_path out --log_samples "
        "--device cpu --apply_chat_template --system_instruction hi -c c.sqlite"
    )
    assert got == [
        "run",
        "--model",
        "org/m",
        "--tasks",
        "a,b",
        "--shots",
        "5",
        "--batch-size",
        "auto",
        "--limit",
        "0.1",
        "--output",
        "out",
        "--device",
        "cpu",
        "--chat",
        "--system-prompt",
        "hi",
        "--cache",
        "c.sqlite",
        "--dtype",
        "float16",
    ]
    err = capsys.readouterr().err
    assert "--log_samples: accepted: negbench always saves every sample" in err
    assert "auto:4" in err


def test_short_forms_equals_signs_and_negbench_values_untouched():
    assert tr("run -o out -f 3 -b 8 -t x -L 5") == [
        "run",
        "--output",
        "out",
        "--shots",
        "3",
        "--batch-size",
        "8",
        "--tasks",
        "x",
        "--limit",
        "5",
    ]
    assert tr("run --batch_size=auto --output_path=o") == [
        "run",
        "--batch-size",
        "auto",
        "--output",
        "o",
    ]
    # a negbench option's value that looks like an lm-eval flag stays a value
    assert tr("run --system-prompt --output_path --chat") == [
        "run",
        "--system-prompt",
        "--output_path",
        "--chat",
    ]
    assert tr("show --output_path x") == ["show", "--output_path", "x"]  # other commands


def test_train_and_profile_get_their_own_option_names():
    assert tr("train --limit 30 --output_path o") == ["train", "--eval-limit", "30", "--out", "o"]
    assert tr("profile --model m --output_path o --batch_size 4") == [
        "profile",
        "--model",
        "m",
        "--out",
        "o",
        "--batch-size",
        "4",
    ]


@pytest.mark.parametrize(
    "line,words",
    [
        ("run --model hf --tasks x", "--model_args pretrained=X is negbench's --model X"),
        ("run --output_path r.json", "--output names a run folder"),
        ("run --apply_chat_template chatml", "named templates are not supported"),
        ("run --model_args pretrained=a,trust_remote_code=True", "trust_remote_code"),
        ("run --model openai-chat-completions --model_args model=x", "docs/backends.md"),
        ("profile --limit 3 --num_fewshot 2", "negbench profile has no such option"),
    ],
)
def test_differing_uses_point_to_negbench(line, words):
    with pytest.raises(OptionError, match="is lm-eval's") as e:
        tr(line)
    assert words in e.value.render()


@pytest.mark.parametrize("flag", [f for f in FLAGS if f.action == POINTER], ids=lambda f: f.name)
def test_every_pointer_is_one_line_and_exit_2(flag, capsys):
    argv = ["run", flag.name] + (["x=1"] if flag.takes in ("one", "many") else [])
    if flag.name == "--config":  # negbench's own --config: lm-eval's short form points
        argv = ["run", "-C", "x.yaml"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "is lm-eval's; negbench:" in err
    assert "\n" not in err and "Traceback" not in err


def test_table_covers_every_flag_of_lm_eval_run():
    harness = pytest.importorskip("lm_eval._cli.harness")
    cli = harness.HarnessCLI()
    run = cli._subparsers.choices["run"]
    theirs = {s for a in run._actions for s in a.option_strings if s.startswith("--")}
    ours = {f.name for f in FLAGS}
    assert theirs <= ours, sorted(theirs - ours)
    shorts = {s for a in run._actions for s in a.option_strings if not s.startswith("--")}
    assert shorts <= {f.short for f in FLAGS if f.short}, sorted(shorts)


def test_docs_table_is_the_table():
    text = DOC.read_text()
    assert markdown_table() in text
    for f in FLAGS:
        assert f"`{f.name}`" in text


def test_an_lm_eval_command_line_runs(tiny_llama, tmp_path, capsys):
    out = tmp_path / "run"
    argv = (
        f"run --model {tiny_llama} --tasks truefalse-mini --num_fewshot 0 --limit 0.1 "
        f"--batch_size 4 --output_path {out} --log_samples --device cpu --no-cache --quiet"
    ).split()
    assert main(argv) == 0
    assert "always saves every sample" in capsys.readouterr().err
    res = json.loads((out / "results.json").read_text())
    sub = res["units"]["truefalse-mini.next_token.0shot"]["subset"]
    assert sub["asked"] == math.ceil(56 * 0.1) and sub["how"] == "limit"
    assert sub["rule"].startswith("0.1 of the records, so 6:")
    assert res["config"]["limit"] == 0.1


def test_bad_limits_are_named():
    from negbench.options import limit_value

    assert limit_value("3") == 3 and limit_value("0.25") == 0.25
    for bad in ("0", "1.5", "-0.1", "x"):
        with pytest.raises(Exception, match="at least 1|whole number"):
            limit_value(bad)
