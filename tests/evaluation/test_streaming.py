"""Streaming runs: a run cut into many shards gives the same samples and metrics as a one-shard
run, a streamed run rescored from its saved samples gives its metrics again, and the memory a run
holds does not grow with its number of sentences (only a shard is held at a time)."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path

import pytest

from negbench.backends.hf import HFBackend
from negbench.core.engine import Engine, EngineConfig
from negbench.evaluation.runner import RunConfig, _shards, _unit_parts, evaluate, rescore
from negbench.evaluation.store import RunStore
from locations import TEST_DATA

DATA = TEST_DATA / "notadataset"
PARTS = ["wheel", "leaf", "key", "door", "roof", "page", "wing", "root", "tooth", "knob"]
WHOLES = ["bicycle", "tree", "keyboard", "house", "car", "book", "bird", "plant", "comb", "drawer"]


def write_release(folder: Path, blocks: int) -> int:
    """A raw-format release of ``blocks`` pattern-6 (Part) blocks of 6 sentences (the release's
    own line format, so the real parser reads it); returns the number of sentences."""
    lines = []
    for b in range(blocks):
        part, whole = PARTS[b % 10], WHOLES[(b // 10) % 10]
        other = WHOLES[(b // 10 + 3) % 10]
        lines.append(
            f"% Test {b + 1:06d}\tSource: wn_part(1-n {whole}_1,2-n {part}_1)\t"
            f"Distractor: {other} [3-n]"
        )
        for tmpl, neg, sem, scope, text in (
            ("1-1", "affirmation", "none", "none", "A {p} is commonly part of a {w} {n}."),
            ("2-1", "verbal", "analytic", "clausal", "A {p} is not part of a {w} {n}."),
            ("3-1", "non_verbal", "synthetic", "subclausal", "A {p} is never part of a {w} {n}."),
        ):
            aff = neg == "affirmation"
            for kind, w in (("Input", whole), ("Distractor", other)):
                label = "T" if aff == (kind == "Input") else "F"
                lines.append(
                    "\t".join((tmpl, neg, sem, scope, kind, label, text.format(p=part, w=w, n=b)))
                )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "#06.Pattern.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 6 * blocks


def _evaluate(model: str, store: RunStore | None, tasks, **kw) -> dict:
    be = HFBackend(model, dtype="float32", device="cpu")
    eng = Engine(be, None, EngineConfig(progress=False))
    cfg = RunConfig(model=model, tasks=tasks, **kw)
    return evaluate(cfg, be, eng, store, log=lambda s: None)


def close(a, b, where: str = "") -> None:
    """Equal, floats to 1e-5: rows packed differently by the engine (other shards) may differ in
    the last bits of a log-probability (as they did before streaming); everything discrete —
    prompts, predictions, counts — must be identical."""
    if isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-5, abs=1e-6, nan_ok=True), where
    elif isinstance(a, dict) and isinstance(b, dict):
        assert list(a) == list(b), where
        for k in a:
            close(a[k], b[k], f"{where}/{k}")
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            close(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def _same(a: dict, b: dict) -> None:
    for k in ("units", "groups", "warnings"):
        close(a[k], b[k], k)


def test_shard_segments_cover_every_record_once():
    sizes = [5, 0, 12, 3]
    shards = _shards(sizes, 7)
    assert [sum(b - a for _, a, b in s) for s in shards] == [7, 7, 6]
    for ui, n in enumerate(sizes):
        lines = [(sh, i) for sh, a, b in _unit_parts(shards, ui) for i in range(a, b)]
        assert len(lines) == n == len(set(lines))
    assert _shards(sizes, 100) == [[(0, 0, 5), (2, 0, 12), (3, 0, 3)]]


def test_streamed_run_equals_one_shard_run_and_rescores(tmp_path, tiny_llama, monkeypatch):
    """Several units (cross-unit shards), few-shot draws split across shards, three modes of
    This is not a Dataset: byte-identical samples and equal metrics; rescore gives them again."""
    monkeypatch.setenv("NEGBENCH_NOTADATASET", str(DATA / "raw"))
    tasks = ["truefalse-mini", "notadataset"]
    kw = dict(modes=["next_token"], shots=[0, 2], seeds=[7], limit=20)
    one = _evaluate(tiny_llama, RunStore(tmp_path / "one"), tasks, shard_size=100_000, **kw)
    many = _evaluate(tiny_llama, RunStore(tmp_path / "many"), tasks, shard_size=9, **kw)
    assert one["shards"] == 1 and many["shards"] == 9  # 80 samples, 4 units, 9 per shard
    _same(one, many)
    names = sorted(p.name for p in (tmp_path / "one" / "samples").glob("*.jsonl"))
    assert len(names) == len(one["units"]) == 4
    for n in names:
        a = [json.loads(x) for x in (tmp_path / "one" / "samples" / n).read_text().splitlines()]
        b = [json.loads(x) for x in (tmp_path / "many" / "samples" / n).read_text().splitlines()]
        assert [r["context"] for r in a] == [r["context"] for r in b]  # same draws, same order
        close(a, b, n)
    assert not (tmp_path / "many" / "samples" / ".shards").exists()
    m = many["units"]["notadataset.next_token.2shot.seed7"]["metrics"]
    # --limit 20 keeps whole blocks: 3 blocks of 6 sentences
    assert m["n"] == 18 and (m["blocks_complete"], m["blocks_partial"]) == (3, 0) and "brier" in m
    # the streamed run's metrics come back from its saved samples alone
    saved = json.loads((tmp_path / "many" / "results.json").read_text())
    again = rescore(RunStore(tmp_path / "many"))  # exactly, to the bit
    assert json.dumps(again["units"]) == json.dumps(saved["units"])
    assert again["groups"] == saved["groups"] and again["tables"] == saved["tables"]
    # and a run without a store (records kept in memory) agrees
    _same(one, _evaluate(tiny_llama, None, tasks, shard_size=9, **kw))


def _peak_traced(model: str, root: Path, n_blocks: int, monkeypatch) -> tuple[int, int]:
    """(sentences, peak Python memory traced during evaluate) for a fresh release of n_blocks."""
    import negbench.tasks.notadataset.tasks as nad

    src = root / f"release-{n_blocks}"
    n = write_release(src, n_blocks)
    monkeypatch.setenv("NEGBENCH_NOTADATASET", str(src))
    nad.load_release(str(src))  # the parsed release is the data, not run state
    be = HFBackend(model, dtype="float32", device="cpu")
    eng = Engine(be, None, EngineConfig(progress=False))
    cfg = RunConfig(model=model, tasks=["notadataset"], shard_size=120)
    store = RunStore(root / f"run-{n_blocks}")
    # modules imported on first use are not run state: scipy's t quantile is first needed when a
    # unit has enough blocks for an interval (the larger run), and its import alone traces ~14 MB
    import scipy.stats  # noqa: F401

    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        res = evaluate(cfg, be, eng, store, log=lambda s: None)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert res["units"]["notadataset.next_token.0shot"]["metrics"]["n"] == n
    return n, peak


@pytest.mark.slow
def test_memory_held_per_sentence_is_bounded(tmp_path, tiny_llama, monkeypatch):
    """10x the sentences, the same shard size: the peak of traced Python memory grows by a few
    hundred bytes per extra sentence at most (the metrics' columns, ~100 B), not by the
    kilobytes a held prompt, request and record cost."""
    n1, p1 = _peak_traced(tiny_llama, tmp_path, 30, monkeypatch)  # 180 sentences
    n2, p2 = _peak_traced(tiny_llama, tmp_path, 300, monkeypatch)  # 1,800 sentences
    per_sentence = (p2 - p1) / (n2 - n1)
    print(
        f"peak traced: {n1} sentences {p1 / 1e6:.2f} MB, {n2} sentences {p2 / 1e6:.2f} MB, "
        f"{per_sentence:.0f} B per extra sentence"
    )
    assert per_sentence < 400, (p1, p2)
    assert p2 < 3 * p1
