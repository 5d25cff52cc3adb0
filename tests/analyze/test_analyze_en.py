"""The English negation detector (negbench.analyze.en_negation) and ``negbench analyze negation
--lang en``.  Every sentence here is our own."""

from __future__ import annotations

import json

import pytest

from negbench.analyze.en_negation import EnNegationDetector, corpus_stats, sentence_label
from negbench.cli import main

DET = EnNegationDetector()


def cues(s: str) -> list[tuple[str, str, str, str]]:
    return [(h.cue, h.kind, h.form, h.clause) for h in DET.detect(s)]


@pytest.mark.parametrize(
    "sentence,expected",
    [
        # verbal: on an auxiliary / modal / copula, contracted or not
        ("The kettle does not whistle.", [("not", "verbal", "analytic", "main")]),
        ("Our cat isn't hungry.", [("n't", "verbal", "analytic", "main")]),
        ("Our cat isn’t hungry.", [("n't", "verbal", "analytic", "main")]),  # curly apostrophe
        ("Pebbles cannot float.", [("not", "verbal", "analytic", "main")]),
        ("She won't sing and he can't dance.", [("n't", "verbal", "analytic", "main")] * 2),
        ("Kettles may really not be part of gardens.", [("not", "verbal", "analytic", "main")]),
        # non-verbal: analytic "no", constituent "not", synthetic words
        ("No spoon is a small replica of a lake.", [("no", "non_verbal", "analytic", "main")]),
        ("Not a single pebble is a kind of bread.", [("not", "non_verbal", "analytic", "main")]),
        ("Spoons are part of lakes in no context.", [("no", "non_verbal", "analytic", "main")]),
        ("Kettles are never part of clouds.", [("never", "non_verbal", "synthetic", "main")]),
        (
            "Nobody sang; nothing moved.",
            [
                ("nobody", "non_verbal", "synthetic", "main"),
                ("nothing", "non_verbal", "synthetic", "main"),
            ],
        ),
        ("No one answered.", [("no one", "non_verbal", "synthetic", "main")]),
        (
            "Neither the kettle nor the spoon was clean.",
            [("neither…nor", "non_verbal", "synthetic", "main")],
        ),
        ("The soup came without salt.", [("without", "non_verbal", "synthetic", "main")]),
        (
            "None of the spoons were bent, nor were the forks.",
            [
                ("none", "non_verbal", "synthetic", "main"),
                ("nor", "non_verbal", "synthetic", "main"),
            ],
        ),
        # clause of the cue
        (
            "If the kettle does not whistle, the water is cold.",
            [("not", "verbal", "analytic", "subordinate")],
        ),
        (
            "The claim that the kettle does not whistle is wrong.",
            [("not", "verbal", "analytic", "subordinate")],
        ),
        (
            "The gardener, who is not tall, owns a rake, but not a hoe.",
            [
                ("not", "verbal", "analytic", "subordinate"),
                ("not", "non_verbal", "analytic", "main"),
            ],
        ),
        ("A tool that digs holes is not a spoon.", [("not", "verbal", "analytic", "main")]),
        (
            "A tool that has been sharpened is never blunt.",
            [("never", "non_verbal", "synthetic", "main")],
        ),
        ("The cat that was not fed meowed.", [("not", "verbal", "analytic", "subordinate")]),
        ("She chose not to sing.", [("not", "verbal", "analytic", "nonfinite")]),
        ("A prize not wanted by anyone is a burden.", [("not", "verbal", "analytic", "nonfinite")]),
        (
            "A lid that is closed and does not leak is useful.",
            [("not", "verbal", "analytic", "subordinate")],
        ),
        (
            "A shape (one that is not round) is never a circle.",
            [
                ("not", "verbal", "analytic", "subordinate"),
                ("never", "non_verbal", "synthetic", "main"),
            ],
        ),
        ("A soup (hot) is not a drink.", [("not", "verbal", "analytic", "main")]),
        (
            "Never having sailed, he stayed ashore.",
            [("never", "non_verbal", "synthetic", "nonfinite")],
        ),
        # not negation cues
        ("The kettle whistled at noon.", []),
        ("Not only did the kettle whistle, it sang.", []),
        ("No, the kettle whistled.", []),
        ("Room No. 4 has a kettle.", []),
        ("The knot is notable and nonetheless snowy.", []),
        ("The spoon is unbreakable.", []),  # affixal: out of scope
    ],
)
def test_detector_cases(sentence, expected):
    assert cues(sentence) == expected


def test_offsets_and_label_hit():
    s = "If it does not rain, nobody will come."
    hits = DET.detect(s)
    assert [s[h.start : h.end] for h in hits] == ["not", "nobody"]
    lab = sentence_label(hits)
    assert lab.cue == "nobody" and lab.clause == "main"  # the first main-clause hit
    assert sentence_label([]) is None
    assert DET.detect("Neither cats nor dogs.")[0].text == "Neither cats nor"


def test_corpus_stats_counts_each_sentence_once():
    sents = [
        "The kettle does not whistle and it never sings.",
        "The kettle sings.",
        "If it does not rain, we walk.",
        "She chose not to sing.",
    ]
    st = corpus_stats(DET.detect_many(sents))
    assert st["sentences"] == 4 and st["negated"] == 3 and st["negated_share"] == 0.75
    assert st["kinds"] == {"verbal": 3, "non_verbal": 0}
    assert st["clauses"] == {"main": 1, "subordinate": 1, "nonfinite": 1}
    assert st["cues"] == {"not": 3, "never": 1}


def test_cli_english(tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text("The kettle does not whistle.\n\nThe kettle sings.\nNobody came.\n")
    out, stats = tmp_path / "hits.jsonl", tmp_path / "st.md"
    assert (
        main(
            [
                "analyze",
                "negation",
                "--lang",
                "en",
                str(src),
                "--output",
                str(out),
                "--stats",
                str(stats),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "3 sentences, 2 with negation (66.7%)" in printed
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["line"] for r in rows] == [1, 3, 4]
    assert rows[0]["negated"] and rows[0]["type"] == "verbal" and rows[0]["clause"] == "main"
    assert rows[0]["hits"][0] == {
        "cue": "not",
        "start": 16,
        "end": 19,
        "text": "not",
        "kind": "verbal",
        "form": "analytic",
        "clause": "main",
    }
    assert not rows[1]["negated"] and rows[1]["hits"] == []
    assert rows[2]["type"] == "non_verbal"
    js = json.loads((tmp_path / "st.json").read_text())
    assert js["negated"] == 2 and js["cues"] == {"nobody": 1, "not": 1}
    assert stats.read_text().startswith("### Negation in English sentences")


def test_cli_english_jsonl_field(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"t": "I can't swim."}) + "\n" + json.dumps({"t": "I swim."}) + "\n")
    assert main(["analyze", "negation", "--lang", "en", str(src), "--field", "t"]) == 0
    assert "2 sentences, 1 with negation" in capsys.readouterr().out


@pytest.mark.parametrize("flag", ["--kmmlu", "--lexical"])
def test_cli_korean_only_flags(tmp_path, capsys, flag):
    src = tmp_path / "in.txt"
    src.write_text("Nobody came.\n")
    assert main(["analyze", "negation", "--lang", "en", flag, str(src)]) != 0
    err = capsys.readouterr().err
    assert f"{flag} is for Korean" in err
