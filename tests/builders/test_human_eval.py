"""Human-evaluation sheets (negbench.builders.human_eval): drawing, the Table 3 arithmetic against hand
computations, agreement (Cohen's / Fleiss' kappa), and the errors for malformed filled sheets.

Every filled sheet here is made by the test itself; no real annotations are used."""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pytest

from negbench.builders import human_eval as he
from negbench.scoring import sheets
import negbench.tasks.notadataset.human_eval as nhe
from negbench.scoring.agreement import cohen_kappa
from negbench.cli import main
from negbench.errors import DataError, OptionError, TaskError
import negbench.tasks.notadataset.tasks as nad
import negbench.tasks.nubench.tasks as nb
from locations import TEST_DATA

DATA = TEST_DATA
RAW = DATA / "notadataset" / "raw"  # our own 30-sentence raw release (5 blocks)
NUBENCH = DATA / "nubench"


def read(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def fill(path: Path, sheet: list[dict], answers: dict[str, list[str]]) -> Path:
    """A filled copy of ``sheet``: ``answers[column][i]`` for row i."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(sheet[0]))
        w.writeheader()
        for i, r in enumerate(sheet):
            w.writerow({**r, **{c: v[i] for c, v in answers.items()}})
    return path


# -- sampling -------------------------------------------------------------------------------------
def test_seeded_sample_plain_and_stratified():
    assert sheets.seeded_sample([0] * 10, 4, 7, False) == sorted(
        random.Random(7).sample(range(10), 4)
    )
    strata = ["a"] * 6 + ["b"] * 3 + ["c"]
    got = sheets.seeded_sample(strata, 5, 1, True)
    # one each, then 2 more over the remaining sizes 5, 2, 0 (of 7): 10/7 -> 1 (rem 3/7),
    # 4/7 -> 0 (rem 4/7), 0: the last one goes to b, the larger remainder -> a 2, b 2, c 1
    assert [[strata[i] for i in got].count(x) for x in "abc"] == [2, 2, 1]
    # fewer items than strata: plain proportional shares (6·2/10 = 1.2, 3·2/10 = .6, .2)
    two = sheets.seeded_sample(strata, 2, 1, True)
    assert [[strata[i] for i in two].count(x) for x in "abc"] == [1, 1, 0]
    assert got == sorted(got) and sheets.seeded_sample(strata, 5, 1, True) == got
    assert len(sheets.seeded_sample(strata, 10, 3, True)) == 10  # everything


def test_notadataset_sheet_has_no_labels_and_key_matches_release(tmp_path):
    paths = he.write_sheet("notadataset", tmp_path / "s", n=8, seed=2, source=str(RAW))
    sheet, key = read(paths["sheet"]), read(paths["key"])
    assert list(sheet[0]) == [
        "item",
        "sentence",
        "true_false",
        "grammatical",
        "understandable",
        "plausible",
    ]
    assert all(v == "" for r in sheet for c, v in r.items() if c not in ("item", "sentence"))
    rel = nad.load_release(str(RAW))
    by_text = {s.sentence: s for s in rel.sentences}
    assert len(key) == 8 and [r["item"] for r in key] == [str(i) for i in range(1, 9)]
    for s_row, k_row in zip(sheet, key):
        s = by_text[s_row["sentence"]]
        assert k_row["label"] == str(s.label) and k_row["block"] == s.block
        assert k_row["negation_type"] == s.negation_type and k_row["pattern"] == str(s.pattern_id)
    md = paths["markdown"].read_text()
    assert "Is the sentence grammatically correct?" in md and "label" not in md.lower()
    again = he.write_sheet("notadataset", tmp_path / "again", n=8, seed=2, source=str(RAW))
    assert again["key"].read_text() == paths["key"].read_text()
    other = he.write_sheet("notadataset", tmp_path / "other", n=8, seed=3, source=str(RAW))
    assert other["key"].read_text() != paths["key"].read_text()


def test_stratified_notadataset_draw_covers_both_patterns(tmp_path):
    paths = he.write_sheet(
        "notadataset", tmp_path / "s", n=5, seed=0, source=str(RAW), stratify="pattern"
    )
    pats = [r["pattern"] for r in read(paths["key"])]
    # 12 sentences of pattern 2 (two blocks), 18 of pattern 6 (three): one each, then 3 over
    # 11 and 17 (of 28): 33/28 -> 1, 51/28 -> 1 (larger remainder: +1) -> 2 and 3
    assert pats.count("2") == 2 and pats.count("6") == 3
    assert "stratified by pattern" in paths["markdown"].read_text()


def test_bad_sheet_options(tmp_path):
    with pytest.raises(OptionError, match="not a field of notadataset"):
        he.write_sheet("notadataset", tmp_path / "x", n=3, source=str(RAW), stratify="colour")
    with pytest.raises(OptionError, match="drop --stratify"):
        he.write_sheet("konubench", tmp_path / "x", n=3, stratify="pattern")
    with pytest.raises(TaskError, match="unknown task 'nosuch'"):
        he.write_sheet("nosuch", tmp_path / "x")
    with pytest.raises(TaskError, match="--n 31"):
        he.write_sheet("notadataset", tmp_path / "x", n=31, source=str(RAW))
    assert not (tmp_path / "x").exists()


# -- Table 3 arithmetic ---------------------------------------------------------------------------
def four_item_key(tmp_path) -> tuple[Path, list[dict]]:
    """Four items with labels True, False, True, False (our own sentences)."""
    items = [
        {
            "item": i + 1,
            "sentence": s,
            "block": f"b{i}",
            "pattern": 6,
            "template": "1-1",
            "negation_type": nt,
            "semantic_type": "none" if nt == "affirmation" else "analytic",
            "syntactic_scope": "none" if nt == "affirmation" else "clausal",
            "distractor": d,
            "label": lab,
        }
        for i, (s, nt, d, lab) in enumerate(
            [
                ("Wheels are commonly part of carts.", "affirmation", 0, "True"),
                ("Wheels are not part of carts.", "verbal", 0, "False"),
                ("Wheels are never part of soups.", "non_verbal", 1, "True"),
                ("Wheels are commonly part of soups.", "affirmation", 1, "False"),
            ]
        )
    ]
    paths = nhe.write_judge_sheet(items, tmp_path / "sheet", "test")
    return paths["key"], read(paths["sheet"])


def test_table3_and_kappas_by_hand(tmp_path):
    key, sheet = four_item_key(tmp_path)
    a = fill(
        tmp_path / "A.csv",
        sheet,
        {
            "true_false": ["true", "false", "false", "false"],
            "grammatical": ["yes", "yes", "no", "yes"],
            "understandable": ["y", "Y", "yes", "n"],
            "plausible": ["no"] * 4,
        },
    )
    b = fill(
        tmp_path / "B.csv",
        sheet,
        {
            "true_false": ["T", "true", "True", "F"],
            "grammatical": ["yes"] * 4,
            "understandable": ["yes", "yes", "no", "no"],
            "plausible": ["No"] * 4,
        },
    )
    res = nhe.score_judge_sheets(key, [a, b])
    t = res["table3"]
    # T/F vs labels T F T F: A matches 1,2,4; B matches 1,3,4 -> 75 / 75; both 1,4; either all
    assert t["true_false"]["per_annotator"] == {"A": 75.0, "B": 75.0}
    assert (t["true_false"]["all"], t["true_false"]["any"]) == (50.0, 100.0)
    # raw answers A t f f f, B t t t f: p_o = .5, p_e = .25·.75 + .75·.25 = .375 -> κ = .2
    assert t["true_false"]["agreement"] == 50.0
    assert t["true_false"]["cohen"]["A vs B"] == pytest.approx(0.2)
    # Fleiss: P_i = 1, 0, 0, 1 -> P̄ = .5; p_true = 4/8 -> P̄e = .5 -> κ = 0
    assert t["true_false"]["fleiss"] == pytest.approx(0.0)
    # understandable A y y y n, B y y n n: 75 / 50, ∩ 50, ∪ 75; p_o .75, p_e .75·.5+.25·.5 = .5
    u = t["understandable"]
    assert (u["per_annotator"]["A"], u["per_annotator"]["B"], u["all"], u["any"]) == (
        75,
        50,
        50,
        75,
    )
    assert u["cohen"]["A vs B"] == pytest.approx(0.5)
    # Fleiss: P_i 1 1 0 1 -> .75; p_yes 5/8 -> P̄e 34/64 -> κ = (.75 - .53125) / .46875
    assert u["fleiss"] == pytest.approx((0.75 - 34 / 64) / (1 - 34 / 64))
    g = t["grammatical"]  # B always yes: p_e = p_o = .75 -> κ = 0
    assert (g["per_annotator"]["A"], g["per_annotator"]["B"], g["all"], g["any"]) == (
        75,
        100,
        75,
        100,
    )
    assert g["cohen"]["A vs B"] == pytest.approx(0.0)
    p = t["plausible"]  # everyone "no": 0 %, agreement 100 %, kappas undefined
    assert (p["all"], p["any"], p["agreement"], p["cohen"]["A vs B"], p["fleiss"]) == (
        0,
        0,
        100,
        None,
        None,
    )
    # T/F by distractor: items 1-2 WordNet triple (A 2/2, B 1/2), 3-4 distractor (A 1/2, B 2/2)
    d = res["true_false_by"]["distractor"]
    assert d["WordNet triple"] == {"items": 2, "A": 100.0, "B": 50.0}
    assert d["distractor"] == {"items": 2, "A": 50.0, "B": 100.0}
    text = nhe.format_table3(res)
    assert "| T/F prediction | 75.00 | 75.00 | 50.00 | 100.00 |" in text
    assert "| Plausibility | 100.00 | – | – |" in text and "A ∩ B" in text
    assert text.index("Comprehensibility") < text.index("Grammaticality")  # Table 3's row order


def test_three_annotators_and_one(tmp_path):
    key, sheet = four_item_key(tmp_path)
    answers = {
        "true_false": ["true", "false", "true", "false"],
        "grammatical": ["yes"] * 4,
        "understandable": ["yes"] * 4,
        "plausible": ["yes", "no", "yes", "no"],
    }
    files = [fill(tmp_path / f"{n}.csv", sheet, answers) for n in ("x", "y", "z")]
    res = nhe.score_judge_sheets(key, files)
    assert res["table3"]["true_false"]["fleiss"] == pytest.approx(1.0)
    assert len(res["table3"]["true_false"]["cohen"]) == 3
    assert "| % | x | y | z | all | any |" in nhe.format_table3(res)
    one = nhe.score_judge_sheets(key, files[:1])
    assert "cohen" not in one["table3"]["plausible"] and one["table3"]["plausible"]["all"] == 50.0
    assert "Cohen" not in nhe.format_table3(one)


def test_cohen_kappa_matches_fleiss_definition_on_a_known_table():
    # the classic 2×2 example: 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no (n=50): p_o = .7,
    # p_e = .5·.6 + .5·.4 = .5 -> κ = .4
    a = ["y"] * 25 + ["n"] * 25
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    with pytest.raises(ValueError):
        cohen_kappa(a, b[:3])


# -- malformed filled sheets ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "change,what,line,column",
    [
        ({"item": "9"}, "item '9' is not in the key", "line 3", "item"),
        ({"item": "1"}, "item 1 answered twice", "line 3", "item"),
        ({"grammatical": ""}, "no answer", "line 3", "grammatical"),
        ({"true_false": "yes"}, "'yes' is not one of true / false", "line 3", "true_false"),
        ({"plausible": "maybe"}, "'maybe' is not one of yes / no", "line 3", "plausible"),
    ],
)
def test_filled_sheet_errors_name_file_line_column(tmp_path, change, what, line, column):
    key, sheet = four_item_key(tmp_path)
    good = {
        "true_false": ["true"] * 4,
        "grammatical": ["yes"] * 4,
        "understandable": ["yes"] * 4,
        "plausible": ["no"] * 4,
    }
    rows = [dict(r) for r in sheet]
    bad = fill(tmp_path / "bad.csv", rows, good)
    rows = read(bad)
    rows[1].update(change)
    fill(bad, rows, {})
    with pytest.raises(DataError) as e:
        nhe.score_judge_sheets(key, [bad])
    msg = str(e.value)
    assert what in msg and "bad.csv" in msg and line in msg and f"'{column}'" in msg


def test_missing_items_and_columns(tmp_path):
    key, sheet = four_item_key(tmp_path)
    short = fill(
        tmp_path / "short.csv",
        sheet[:2],
        {
            "true_false": ["true"] * 2,
            "grammatical": ["yes"] * 2,
            "understandable": ["yes"] * 2,
            "plausible": ["no"] * 2,
        },
    )
    with pytest.raises(DataError, match="items missing: 3, 4"):
        nhe.score_judge_sheets(key, [short])
    nocol = tmp_path / "nocol.csv"
    nocol.write_text("item,sentence,true_false\n1,x,true\n")
    with pytest.raises(DataError, match="no 'grammatical' column"):
        nhe.score_judge_sheets(key, [nocol])
    junk = tmp_path / "junk.csv"
    junk.write_text("item,b\n1,2\n")
    with pytest.raises(DataError, match="neither a judge key"):
        he.score(junk, [nocol])


def test_cli_checks_every_sheet_before_printing(tmp_path, capsys):
    key, sheet = four_item_key(tmp_path)
    ok = {
        "true_false": ["true"] * 4,
        "grammatical": ["yes"] * 4,
        "understandable": ["yes"] * 4,
        "plausible": ["no"] * 4,
    }
    a = fill(tmp_path / "a.csv", sheet, ok)
    b = fill(tmp_path / "b.csv", sheet, {**ok, "plausible": ["no", "no", "no", "perhaps"]})
    assert main(["human-eval", "score", str(key), str(a), str(b)]) != 0
    cap = capsys.readouterr()
    assert cap.out == "" and "b.csv" in cap.err and "line 5" in cap.err and "plausible" in cap.err


# -- round trips through the command --------------------------------------------------------------
def test_notadataset_round_trip_through_the_cli(tmp_path, capsys):
    """sheet -> two sheets filled here (programmatically) -> Table 3 with agreement."""
    out = tmp_path / "he"
    assert (
        main(
            [
                "human-eval",
                "sheet",
                "--task",
                "notadataset",
                "--source",
                str(RAW),
                "--n",
                "10",
                "--seed",
                "4",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    sheet, key = read(out / "sheet.csv"), read(out / "key.csv")
    labels = [k["label"].lower() for k in key]
    flip = {"true": "false", "false": "true"}
    a = fill(
        tmp_path / "ann1.csv",
        sheet,
        {
            "true_false": labels,
            "grammatical": ["yes"] * 10,
            "understandable": ["yes"] * 10,
            "plausible": ["yes", "no"] * 5,
        },
    )
    b_tf = labels[:8] + [flip[x] for x in labels[8:]]
    b = fill(
        tmp_path / "ann2.csv",
        sheet,
        {
            "true_false": b_tf,
            "grammatical": ["yes"] * 9 + ["no"],
            "understandable": ["yes"] * 10,
            "plausible": ["yes"] * 10,
        },
    )
    capsys.readouterr()
    assert (
        main(
            [
                "human-eval",
                "score",
                str(out / "key.csv"),
                str(a),
                str(b),
                "--json",
                str(tmp_path / "t3.json"),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "| T/F prediction | 100.00 | 80.00 | 80.00 | 100.00 |" in text
    assert "| Comprehensibility | 100.00 | 100.00 | 100.00 | 100.00 |" in text
    assert "Fleiss' κ" in text and "Paper (Table 3" in text
    import json

    res = json.loads((tmp_path / "t3.json").read_text())
    assert res["table3"]["plausible"]["agreement"] == 50.0 and res["annotators"] == ["ann1", "ann2"]


def test_nubench_answer_sheet_and_table7(tmp_path, capsys):
    out = tmp_path / "nb"
    assert (
        main(
            [
                "human-eval",
                "sheet",
                "--task",
                "nubench",
                "--source",
                str(NUBENCH),
                "--n",
                "3",
                "--seed",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    sheet, key = read(out / "sheet.csv"), read(out / "key.csv")
    docs = {str(d["index"]): d for d in nb.load_split("test", str(NUBENCH))}
    for s_row, k_row in zip(sheet, key):
        d = docs[k_row["idx"]]
        keys = list(d["option_keys"])
        assert [s_row[c] for c in "ABCD"][: len(keys)] == [d[k] for k in keys]  # option-mode order
        assert s_row[k_row["gold"]] == d["choice1"] and s_row["answer"] == ""
        assert k_row["option_types"].split("+")[0] == nb.KEY_TYPES[keys[0]]
    right = fill(tmp_path / "p1.csv", sheet, {"answer": [k["gold"] for k in key]})
    wrong = fill(
        tmp_path / "p2.csv", sheet, {"answer": [("B" if k["gold"] == "A" else "A") for k in key]}
    )
    capsys.readouterr()
    assert main(["human-eval", "score", str(out / "key.csv"), str(right), str(wrong)]) == 0
    assert "| 100.0 | 0.0 | 50.0 | 50.0 |" in capsys.readouterr().out
    # a letter beyond a three-option item's options is refused
    three = [i for i, k in enumerate(key) if len(k["option_types"].split("+")) == 3]
    if three:
        ans = [k["gold"] for k in key]
        ans[three[0]] = "D"
        bad = fill(tmp_path / "p3.csv", sheet, {"answer": ans})
        with pytest.raises(DataError, match="not an option letter"):
            he.score(out / "key.csv", [bad])


def test_any_multiple_choice_task_gets_a_shuffled_answer_sheet(tmp_path, capsys):
    """negation-mini (built in): its cloze mode lists the gold first; the sheet shuffles."""
    from negbench.tasks import get_task

    out = tmp_path / "nm"
    assert (
        main(
            [
                "human-eval",
                "sheet",
                "--task",
                "negation-mini",
                "--n",
                "6",
                "--seed",
                "2",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    sheet, key = read(out / "sheet.csv"), read(out / "key.csv")
    assert list(sheet[0])[:2] == ["item", "prompt"] and "gold" not in sheet[0]
    docs = {d.id: d for d in get_task("negation-mini").load("test")}
    spec = get_task("negation-mini").modes["cloze"]
    for s_row, k_row in zip(sheet, key):
        r = spec.render(docs[k_row["idx"]])
        order = [int(t[len("option") :]) - 1 for t in k_row["option_types"].split("+")]
        assert [s_row[c] for c in "ABCD"][: len(order)] == [r.choices[j] for j in order]
        assert s_row[k_row["gold"]] == r.choices[r.gold] and s_row["prompt"] == r.query
    assert len({k["gold"] for k in key}) > 1  # not always the first letter
    again = tmp_path / "again"
    he.write_sheet("negation-mini", again, n=6, seed=2)
    assert (again / "key.csv").read_text() == (out / "key.csv").read_text()
    right = fill(tmp_path / "r.csv", sheet, {"answer": [k["gold"] for k in key]})
    capsys.readouterr()
    assert main(["human-eval", "score", str(out / "key.csv"), str(right)]) == 0
    assert "| 100.0 | 100.0 | 100.0 | 100.0 |" in capsys.readouterr().out
    with pytest.raises(OptionError, match="--source is for"):
        he.write_sheet("negation-mini", tmp_path / "x", n=2, source="somewhere")
    assert not (tmp_path / "x").exists()
