"""Every user mistake is one clear message and a non-zero exit, and never touches a finished run.

Each case runs the real command line against a finished run folder (made once, with a tiny random
model) and checks: the exit code, the words of the message (what, where, fix), that no traceback
was printed, that the finished run folder is byte-for-byte what it was, and that no staging
folder is left behind.  Data and option mistakes must also be caught before the model loads.

``python tests/test_user_errors.py`` prints the table of cases (exit code, message, folder intact).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest


from negbench.cli import main  # noqa: E402

GOOD = {
    "question": "Which one negates 'the cat sleeps'?",
    "choices": ["the cat does not sleep", "the cat sleeps"],
    "answer": 0,
}


@dataclass
class Ctx:
    tmp: Path
    model: str  # tiny random Llama folder
    run: Path  # a finished run folder that no failure may touch

    def jsonl(self, name: str, lines: list) -> str:
        p = self.tmp / name
        p.write_bytes(
            b"".join(x if isinstance(x, bytes) else (json.dumps(x) + "\n").encode() for x in lines)
        )
        return str(p)

    def base(self, *extra: str, tasks: str = "negation-mini") -> list[str]:
        """The finished run's own command, plus the mistake."""
        return [
            "run",
            "--model",
            self.model,
            "--tasks",
            tasks,
            "--modes",
            "cloze",
            "--limit",
            "3",
            "--output",
            str(self.run),
            "--no-cache",
            "--quiet",
            *extra,
        ]


@dataclass
class Case:
    name: str
    argv: Callable[[Ctx], list[str]]
    expect: tuple[str, ...]  # words the message must contain
    before_model: bool = True  # caught before the model loads
    env: Callable[[Ctx], dict] = field(default=lambda c: {})
    code: int = 2


def _trunc(src: Path, dst: Path, keep: float) -> None:
    data = src.read_bytes()
    dst.write_bytes(data[: int(len(data) * keep)])


def _copy_model(c: Ctx, name: str) -> Path:
    d = c.tmp / name
    if not d.exists():
        shutil.copytree(c.model, d)
    return d


def _damaged_safetensors(c: Ctx) -> str:
    d = _copy_model(c, "torn-model")
    _trunc(Path(c.model) / "model.safetensors", d / "model.safetensors", 0.5)
    return str(d)


def _bad_config(c: Ctx) -> str:
    d = _copy_model(c, "bad-config-model")
    (d / "config.json").write_text('{"model_type": "llama", ')
    return str(d)


def _truncated_gguf(c: Ctx) -> str:
    from negbench.backends.sources import resolve

    try:
        src = resolve("smollm2-135m-instruct")
    except Exception:
        pytest.skip("the embedded SmolLM2 GGUF is not installed")
    dst = c.tmp / "cut.gguf"
    with open(Path(src.folder) / src.gguf_file, "rb") as f:
        dst.write_bytes(f.read(3 << 20))
    return str(dst)


def _other_folder(c: Ctx) -> str:
    d = c.tmp / "notes"
    d.mkdir(exist_ok=True)
    (d / "mine.txt").write_text("my notes")
    return str(d)


def _damaged_copy(c: Ctx, how: str) -> str:
    d = c.tmp / f"copy-{how}"
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(c.run, d)
    if how == "results":
        _trunc(c.run / "results.json", d / "results.json", 0.6)
    elif how == "samples":
        p = d / "samples" / "negation-mini.cloze.0shot.jsonl"
        lines = p.read_text().splitlines(keepends=True)
        lines[2] = lines[2][: len(lines[2]) // 2] + "\n"
        p.write_text("".join(lines))
    elif how == "array":
        (d / "results.json").write_text("[]")
    return str(d)


def _garbage_cache(c: Ctx) -> str:
    p = c.tmp / "garbage.sqlite"
    p.write_bytes(b"this is not a database" * 100)
    return str(p)


CASES = [
    # -- options ----------------------------------------------------------------------------------
    Case("--limit 0", lambda c: c.base("--limit", "0"), ("--limit", "at least 1, got 0")),
    Case("--limit -3", lambda c: c.base("--limit", "-3"), ("--limit", "at least 1, got -3")),
    Case("--limit abc", lambda c: c.base("--limit", "abc"), ("--limit", "whole number", "'abc'")),
    Case("--shots -1", lambda c: c.base("--shots", "-1"), ("--shots", "at least 0, got -1")),
    Case("--shots 1,1", lambda c: c.base("--shots", "1,1"), ("--shots", "1 is given twice")),
    Case("--seeds x", lambda c: c.base("--seeds", "1,x"), ("--seeds", "'x'")),
    Case("--batch-size 0", lambda c: c.base("--batch-size", "0"), ("--batch-size", "at least 1")),
    Case("--max-length 1", lambda c: c.base("--max-length", "1"), ("--max-length", "at least 2")),
    Case("--threads 0", lambda c: c.base("--threads", "0"), ("--threads", "at least 1")),
    Case("--shard-size 0", lambda c: c.base("--shard-size", "0"), ("--shard-size", "at least 1")),
    Case("--tasks ''", lambda c: c.base(tasks=","), ("--tasks", "got nothing")),
    Case(
        "task named twice",
        lambda c: c.base(tasks="negation-mini,negation-mini"),
        ("--tasks", "'negation-mini' is given twice"),
    ),
    Case(
        "--system-prompt without --chat",
        lambda c: c.base("--system-prompt", "Be brief."),
        ("--chat", "is not given"),
    ),
    Case("--dtype int8", lambda c: c.base("--dtype", "int8"), ("--dtype", "invalid choice")),
    # -- tasks and modes --------------------------------------------------------------------------
    Case(
        "unknown task",
        lambda c: c.base(tasks="nubench-typo"),
        ("unknown task 'nubench-typo'", "negation-mini"),
    ),
    Case("unknown mode", lambda c: c.base("--modes", "banana"), ("has no mode 'banana'", "cloze")),
    Case(
        "more shots than the pool",
        lambda c: c.base("--shots", "50"),
        ("50 shots asked", "only 8 records", "--shots"),
    ),
    Case(
        "options on a plain task",
        lambda c: c.base(tasks="negation-mini[k=1]"),
        ("takes no options",),
    ),
    Case(
        "unclosed task options",
        lambda c: c.base(tasks="notadataset[split=test"),
        ("bad task options",),
    ),
    Case(
        "task file not found",
        lambda c: c.base(tasks=str(c.tmp / "absent.jsonl")),
        ("task file not found", "absent.jsonl"),
    ),
    # -- user JSON lines --------------------------------------------------------------------------
    Case(
        "JSONL not UTF-8",
        lambda c: c.base(
            tasks=c.jsonl(
                "latin1.jsonl",
                [
                    GOOD,
                    GOOD | {"id": "b"},
                    '{"question": "caf\xe9?", "choices": ["a", "b"], "answer": 0}\n'.encode(
                        "latin-1"
                    ),
                ],
            )
        ),
        ("latin1.jsonl", "line 3", "not UTF-8", "iconv"),
    ),
    Case(
        "JSONL invalid JSON",
        lambda c: c.base(
            tasks=c.jsonl(
                "broken.jsonl",
                [GOOD | {"id": 1}, GOOD | {"id": 2}, b'{"question": "q", "choices": [\n'],
            )
        ),
        ("broken.jsonl", "line 3", "invalid JSON"),
    ),
    Case(
        "JSONL missing answer",
        lambda c: c.base(
            tasks=c.jsonl("noanswer.jsonl", [GOOD, {"question": "q?", "choices": ["a", "b"]}])
        ),
        ("noanswer.jsonl", "line 2", "'answer'", "missing field"),
    ),
    Case(
        "JSONL answer out of range",
        lambda c: c.base(tasks=c.jsonl("range.jsonl", [GOOD | {"answer": 2}])),
        ("range.jsonl", "line 1", "'answer'", "0-based index"),
    ),
    Case(
        "JSONL answer text not a choice",
        lambda c: c.base(tasks=c.jsonl("text.jsonl", [GOOD | {"answer": "maybe"}])),
        ("text.jsonl", "'answer'", "not one of the choices"),
    ),
    Case(
        "JSONL answer is true",
        lambda c: c.base(tasks=c.jsonl("bool.jsonl", [GOOD | {"answer": True}])),
        ("bool.jsonl", "'answer'", "expected int or str, got bool"),
    ),
    Case(
        "JSONL duplicate id",
        lambda c: c.base(
            tasks=c.jsonl(
                "dups.jsonl", [GOOD | {"id": "a"}, GOOD | {"id": "b"}, GOOD | {"id": "a"}]
            )
        ),
        ("dups.jsonl", "line 3", "'id'", "duplicate id 'a' (first on line 1)"),
    ),
    Case(
        "JSONL one choice",
        lambda c: c.base(tasks=c.jsonl("one.jsonl", [GOOD | {"choices": ["only"]}])),
        ("one.jsonl", "'choices'", "at least two"),
    ),
    Case(
        "JSONL same choice twice",
        lambda c: c.base(tasks=c.jsonl("twice.jsonl", [GOOD | {"choices": ["x", "x"]}])),
        ("twice.jsonl", "'choices'", "same text"),
    ),
    Case(
        "JSONL empty file",
        lambda c: c.base(tasks=c.jsonl("empty.jsonl", [])),
        ("empty.jsonl", "no records"),
    ),
    Case(
        "JSONL line is an array",
        lambda c: c.base(tasks=c.jsonl("array.jsonl", [GOOD, ["q", ["a", "b"], 0]])),
        ("array.jsonl", "line 2", "not a JSON object"),
    ),
    # -- benchmark data ---------------------------------------------------------------------------
    Case(
        "KoNUBench data missing",
        lambda c: c.base(tasks="konubench"),
        ("konubench", "NEGBENCH_KONUBENCH"),
        env=lambda c: {"NEGBENCH_KONUBENCH": str(c.tmp / "no-konubench")},
    ),
    Case(
        "CONDAQA data missing",
        lambda c: c.base("--modes", "loglik", tasks="condaqa"),
        ("CONDAQA", "NEGBENCH_CONDAQA"),
        env=lambda c: {"NEGBENCH_CONDAQA": str(c.tmp / "no-condaqa")},
    ),
    Case(
        "not-a-dataset data missing",
        lambda c: c.base(tasks="notadataset[sample=10]"),
        ("not-a-dataset", "NEGBENCH_NOTADATASET"),
        env=lambda c: {"NEGBENCH_NOTADATASET": str(c.tmp / "no-tinad")},
    ),
    Case(
        "not-a-dataset bad sample", lambda c: c.base(tasks="notadataset[sample=lots]"), ("sample",)
    ),
    # -- models -----------------------------------------------------------------------------------
    Case(
        "unknown model name", lambda c: c.base("--model", "smollm9"), ("unknown model 'smollm9'",)
    ),
    Case(
        "GGUF file not found",
        lambda c: c.base("--model", str(c.tmp / "nope.gguf")),
        ("GGUF file not found", "nope.gguf"),
    ),
    Case(
        "model folder not found",
        lambda c: c.base("--model", str(c.tmp / "absent-model")),
        ("model folder not found",),
    ),
    Case(
        "folder without config.json",
        lambda c: c.base("--model", _other_folder(c)),
        ("no config.json",),
    ),
    Case(
        "truncated GGUF",
        lambda c: c.base("--model", _truncated_gguf(c)),
        ("GGUF file", "damaged or incomplete", "download the file again"),
        before_model=False,
    ),
    Case(
        "corrupt safetensors",
        lambda c: c.base("--model", _damaged_safetensors(c)),
        ("could not load model", "damaged"),
        before_model=False,
    ),
    Case(
        "config.json not JSON",
        lambda c: c.base("--model", _bad_config(c)),
        ("could not load model",),
        before_model=False,
    ),
    Case(
        "--device cuda without CUDA",
        lambda c: c.base("--device", "cuda"),
        ("--device cuda", "no CUDA", "--device cpu"),
        before_model=False,
    ),
    Case(
        "--device banana",
        lambda c: c.base("--device", "banana"),
        ("device 'banana'",),
        before_model=False,
    ),
    Case(
        "adapter folder missing",
        lambda c: c.base("--adapter", str(c.tmp / "no-lora")),
        ("adapter_config.json", "--adapter"),
    ),
    Case(
        "--chat, no chat template",
        lambda c: c.base("--chat"),
        ("no chat template",),
        before_model=False,
    ),
    # -- output and cache -------------------------------------------------------------------------
    Case(
        "different run in --output",
        lambda c: c.base("--limit", "4"),
        ("finished run of a different configuration", "limit", "--overwrite"),
    ),
    Case(
        "--output not a run",
        lambda c: c.base("--output", _other_folder(c)),
        ("not empty", "holds no finished negbench run", "--overwrite"),
    ),
    Case(
        "--output is a file",
        lambda c: c.base("--output", str(c.run / "results.json")),
        ("is a file, not a folder",),
    ),
    Case(
        "--cache is a folder",
        lambda c: [a for a in c.base("--cache", str(c.tmp)) if a != "--no-cache"],
        ("is a folder", "--cache"),
    ),
    Case(
        "--cache not a database",
        lambda c: [a for a in c.base("--cache", _garbage_cache(c)) if a != "--no-cache"],
        ("not a negbench cache", "--cache"),
    ),
    # -- saved runs -------------------------------------------------------------------------------
    Case(
        "show: truncated results.json",
        lambda c: ["show", _damaged_copy(c, "results")],
        ("results.json is damaged", "line", "rescore"),
    ),
    Case(
        "show: results.json not a results file",
        lambda c: ["show", _damaged_copy(c, "array")],
        ("not a negbench results file",),
    ),
    Case(
        "show: no such folder", lambda c: ["show", str(c.tmp / "no-run")], ("run folder not found",)
    ),
    Case(
        "rescore: damaged samples line 3",
        lambda c: ["rescore", _damaged_copy(c, "samples")],
        ("negation-mini.cloze.0shot.jsonl", "line 3", "invalid JSON"),
    ),
    Case("export: unknown exporter", lambda c: ["export", "nope"], ("nope",)),
    Case(
        "export: --out is a folder",
        lambda c: ["export", "notadataset[sample=10]", "--split", "test", "--out", str(c.tmp)],
        ("it is a folder", "give a file name"),
    ),
]


@pytest.fixture(scope="module")
def finished_run(tiny_llama, tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("finished") / "run"
    assert (
        main(
            [
                "run",
                "--model",
                tiny_llama,
                "--tasks",
                "negation-mini",
                "--modes",
                "cloze",
                "--limit",
                "3",
                "--output",
                str(run),
                "--no-cache",
                "--quiet",
            ]
        )
        == 0
    )
    return run


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        h.update(str(p.relative_to(folder)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def run_case(case: Case, ctx: Ctx, capsys) -> tuple[int, str]:
    env = case.env(ctx)
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        argv = case.argv(ctx)
        if argv[0] == "run" and not case.before_model:
            argv.append("--overwrite")  # even allowed to replace it, a failed run keeps it
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's own usage errors
            code = exc.code
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return code, capsys.readouterr().err


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_user_mistake(case, finished_run, tiny_llama, tmp_path, capsys):
    ctx = Ctx(tmp_path, tiny_llama, finished_run)
    before = digest(finished_run)
    code, err = run_case(case, ctx, capsys)
    assert code == case.code, err
    assert "Traceback" not in err
    for words in case.expect:
        assert words in err, f"{words!r} not in: {err}"
    if case.before_model:
        assert "loading " not in err, "the model was loaded before the mistake was found"
    assert digest(finished_run) == before, "the finished run folder changed"
    assert not any(p.name.endswith(".partial") for p in finished_run.parent.iterdir())


def test_failed_new_run_leaves_no_folder(tiny_llama, tmp_path, capsys):
    """A run that fails after the model loaded (no chat template) leaves no run folder, and no
    staging folder either."""
    out = tmp_path / "new"
    assert (
        main(
            [
                "run",
                "--model",
                tiny_llama,
                "--modes",
                "cloze",
                "--limit",
                "2",
                "--chat",
                "--output",
                str(out),
                "--no-cache",
                "--quiet",
            ]
        )
        == 2
    )
    assert "no chat template" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["nb-cache"]  # the test's own cache only


def test_interrupted_rerun_keeps_the_finished_run(
    finished_run, tiny_llama, tmp_path, capsys, monkeypatch
):
    """Ctrl-C while redoing a finished run: exit 130, the finished folder is untouched."""
    from negbench.core import engine as E

    before = digest(finished_run)

    def interrupted(self, *a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(E.Engine, "run", interrupted)
    code = main(Ctx(tmp_path, tiny_llama, finished_run).base())
    assert code == 130 and "rerun the same command to resume" in capsys.readouterr().err
    assert digest(finished_run) == before
    assert not (finished_run.parent / ".run.partial").exists()


def test_same_run_again_is_redone_and_overwrite_replaces(tiny_llama, tmp_path, capsys):
    out = tmp_path / "run"
    argv = [
        "run",
        "--model",
        tiny_llama,
        "--modes",
        "cloze",
        "--limit",
        "2",
        "--output",
        str(out),
        "--quiet",
    ]
    assert main(argv) == 0
    first = json.loads((out / "results.json").read_text())
    assert main(argv) == 0  # same configuration: redone from the cache
    again = json.loads((out / "results.json").read_text())
    assert again["engine"]["cached"] == again["engine"]["unique"] > 0
    assert again["units"] == first["units"]
    assert main(argv[:-1] + ["--limit", "3", "--quiet"]) == 2
    assert main(argv + ["--limit", "3", "--overwrite"]) == 0
    assert json.loads((out / "results.json").read_text())["config"]["limit"] == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nb-cache", "run"]


def test_empty_generations_are_flagged(tiny_llama, tmp_path, capsys):
    """A user task in generate mode whose outputs are mostly empty says so (stderr and
    results.json) instead of silently scoring 0."""
    from negbench.core import engine as E
    from negbench.core.requests import GenerationResponse

    task = tmp_path / "items.jsonl"
    task.write_text("".join(json.dumps(GOOD | {"id": i}) + "\n" for i in range(4)))
    orig = E.Engine._generate

    def eos_at_once(self, items, done, st):  # the model's first token is EOS
        done([(k, r, GenerationResponse("", 1, "eos")) for k, r in items])

    E.Engine._generate = eos_at_once
    try:
        assert (
            main(
                [
                    "run",
                    "--model",
                    tiny_llama,
                    "--tasks",
                    str(task),
                    "--modes",
                    "generate",
                    "--output",
                    str(tmp_path / "run"),
                    "--no-cache",
                    "--quiet",
                ]
            )
            == 0
        )
    finally:
        E.Engine._generate = orig
    out = capsys.readouterr().out
    assert "4 of 4 generations are empty" in out and "--chat" in out and "WARNINGS (" in out
    res = json.loads((tmp_path / "run" / "results.json").read_text())
    w = res["warnings"][0]
    assert w["kind"] == "empty_generations" and "generations are empty" in w["message"]
    assert w["unit"] == "items.generate.0shot" and "--chat" in w["fix"]


@pytest.mark.parametrize(
    "module,words",
    [
        (
            "accelerate",
            ("loading GGUF models needs the Python package 'accelerate'", "pip install accelerate"),
        ),
        ("matplotlib", ("report plots needs the Python package 'matplotlib'",)),
    ],
)
def test_missing_dependency_is_named(module, words, tmp_path, monkeypatch, capsys):
    """A dependency missing from a broken install is named with the command that installs it
    (the README's main job once died in ``ValueError: accelerate is required``)."""
    monkeypatch.setitem(sys.modules, module, None)  # import of it now fails
    if module == "accelerate":
        _truncated_gguf(Ctx(tmp_path, "", tmp_path))  # skips when SmolLM2 is not installed
        argv = ["run", "--limit", "1", "--output", str(tmp_path / "run"), "--no-cache"]
    else:
        run = tmp_path / "run"
        from conftest import _save_model

        model = str(_save_model(tmp_path / "m", "llama"))
        assert (
            main(
                [
                    "run",
                    "--model",
                    model,
                    "--modes",
                    "cloze",
                    "--limit",
                    "2",
                    "--output",
                    str(run),
                    "--no-cache",
                    "--quiet",
                ]
            )
            == 0
        )
        for name in list(sys.modules):
            if name.startswith("negbench.report.plots"):
                monkeypatch.delitem(sys.modules, name)
        argv = ["report", str(run), "--out", str(tmp_path / "rep")]
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    for w in words:
        assert w in err, err
    assert (
        "Traceback" not in err
        and not (tmp_path / "run" / "results.json").exists()
        or module != "accelerate"
    )


if __name__ == "__main__":  # the closing note's table of cases
    import contextlib
    import io
    import tempfile

    from conftest import _save_model

    class _Cap:
        def __init__(self):
            self.buf = io.StringIO()

        def readouterr(self):
            v = self.buf.getvalue()
            self.buf.seek(0)
            self.buf.truncate()
            return type("R", (), {"err": v})()

    root = Path(tempfile.mkdtemp())
    os.environ["NEGBENCH_CACHE"] = str(root / "cache")
    model = str(_save_model(root / "tiny", "llama"))
    run = root / "finished" / "run"
    cap = _Cap()
    with contextlib.redirect_stderr(cap.buf), contextlib.redirect_stdout(io.StringIO()):
        main(
            [
                "run",
                "--model",
                model,
                "--tasks",
                "negation-mini",
                "--modes",
                "cloze",
                "--limit",
                "3",
                "--output",
                str(run),
                "--no-cache",
                "--quiet",
            ]
        )
    cap.readouterr()
    print("| # | case | exit | message | run folder intact |\n|---|---|---|---|---|")
    for i, case in enumerate(CASES, 1):
        tmp = root / f"case{i}"
        tmp.mkdir()
        before = digest(run)
        with contextlib.redirect_stderr(cap.buf), contextlib.redirect_stdout(io.StringIO()):
            try:
                code, err = run_case(case, Ctx(tmp, model, run), cap)
            except BaseException as exc:  # noqa: BLE001 - the table shows it
                code, err = "skip", str(exc)
        lines = err.splitlines()
        first = next((i for i, ln in enumerate(lines) if "error" in ln), None)
        msg = (
            " — ".join(ln.strip() for ln in lines[first : first + 2])
            if first is not None
            else err.strip()[:100]
        )
        msg = msg.replace("|", "\\|").replace(str(root), "…")
        intact = "yes" if digest(run) == before else "NO"
        print(f"| {i} | {case.name} | {code} | `{msg.strip()}` | {intact} |")
