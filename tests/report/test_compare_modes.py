"""negbench compare pairs two runs of the same items in two scoring modes (cloze in one run,
letter in the other) by document id, instead of refusing them."""

from __future__ import annotations

import json

from negbench.cli import main
from negbench.report import compare as cmpmod
from negbench.scoring.runs import load_run


def _run(tiny_llama, out, mode: str) -> None:
    argv = ["run", "--model", tiny_llama, "--tasks", "negation-mini", "--modes", mode]
    assert main(argv + ["--output", str(out), "--quiet", "--no-cache", "--limit", "8"]) == 0


def test_compare_pairs_the_same_items_across_modes(tiny_llama, tmp_path, capsys):
    a, b = tmp_path / "cloze", tmp_path / "letter"
    _run(tiny_llama, a, "cloze")
    _run(tiny_llama, b, "letter")
    cmp = cmpmod.compare_runs(load_run(a), load_run(b), n_resamples=200)
    [g] = cmp["groups"]
    assert g["mode"] == "cloze vs letter" and g["id"] == "negation-mini.cloze-vs-letter.0shot"
    ra = {
        json.loads(x)["doc_id"]: json.loads(x)
        for x in (a / "samples" / "negation-mini.cloze.0shot.jsonl").read_text().splitlines()
    }
    rb = {
        json.loads(x)["doc_id"]: json.loads(x)
        for x in (b / "samples" / "negation-mini.letter.0shot.jsonl").read_text().splitlines()
    }
    assert set(ra) == set(rb) and g["n_pairs"] == len(ra)
    metric = g["metric"]
    gains = sum(rb[d][metric] > ra[d][metric] for d in ra)
    losses = sum(rb[d][metric] < ra[d][metric] for d in ra)
    assert (g["gains"], g["losses"]) == (gains, losses)
    assert cmp["skipped"] == []
    capsys.readouterr()
    assert main(["compare", str(a), str(b)]) == 0
    assert "cloze vs letter" in capsys.readouterr().out
