"""Thunder-NUBench: loaders, prompts (Listings 7-9, 12-14), the option shuffle, the Listing 8
filter, error analysis, Alpaca export, and an end-to-end run on a tiny random model.

The fixture data in tests/data/nubench is our own (invented sentences in the App. L schema).  The
only paper text in this file is the Chromosome 2 example of Listings 13 and 14, used to compare
rendered prompts with the paper's literal formats.
"""

from __future__ import annotations

import csv
import json
import random
import sys
import types
from pathlib import Path

import pytest

from negbench.errors import DataError, NegbenchError, TaskError
from negbench.scoring.fewshot import build_context
from negbench.scoring.negation_errors import error_analysis
from negbench.core.requests import GenerationResponse
from negbench.evaluation.runner import RunConfig, Unit, build_requests
import negbench.tasks.nubench.tasks as nb
from negbench.scoring.task import Doc
from locations import TEST_DATA

FIX = TEST_DATA / "nubench"


def read_raw(split: str) -> list[dict]:
    return [
        json.loads(l) for l in (FIX / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
    ]


def write_jsonl(path: Path, objs) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(o) + "\n" for o in objs), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _fresh_cache():
    nb.clear_cache()
    yield
    nb.clear_cache()


@pytest.fixture
def tasks():
    return {t.name: t for t in nb.make_tasks(FIX)}


# -- the paper's listings, as literal strings ------------------------------------------------------
CHR2 = (
    "Chromosome 2 is the second-largest human chromosome, spanning more than 242 million base "
    "pairs and representing almost eight percent of the total DNA in human cells."
)
CHR2_C1 = (
    "Chromosome 2 isn't the second-largest human chromosome, which measures more than 242 "
    "million base pairs and represents almost eight percent of the entire DNA in human cells."
)
CHR2_C2 = (
    "Chromosome 2 is the second-largest human chromosome, which doesn't span more than 242 "
    "million base pairs or represent nearly eight percent of the whole DNA in human cells."
)
CHR2_C3 = (
    "Chromosome 2 is the smallest human chromosome, spanning fewer than 50 million base pairs "
    "and representing less than two percent of the total DNA in human cells."
)
CHR2_C4 = (
    "Chromosome 2 is the second-biggest human chromosome, with over 242 million base pairs, "
    "making up nearly 8% of all DNA in human cells."
)

#: Listing 13 (PDF line wraps joined).
LISTING13_PROMPT = "Negate the sentence.\nSentence: " + CHR2 + "\nNegation:"
#: Listing 14 as Listing 9's code writes it.  Three places where the listing's text and the code
#: differ, and the code wins (src/negbench/tasks/nubench/README.md): an empty line where the listing shows a lone "."
#: after the sentence (the instruction ends in "\n" and the lines are joined with "\n"); no stray
#: backslash after option C; "Only output the letter." on its own line (the listing runs it on
#: after "A, B, C, D.").
LISTING14_PROMPT = (
    "Given the following instruction and candidate answers, choose the single best answer.\n"
    "Instruction: Negate the sentence.\n"
    "Sentence: " + CHR2 + "\n"
    "\n"
    "A. " + CHR2_C1 + "\n"
    "B. " + CHR2_C2 + "\n"
    "C. " + CHR2_C3 + "\n"
    "D. " + CHR2_C4 + "\n"
    "\n"
    "Your response should be one of A, B, C, D.\n"
    "Only output the letter.\n"
    "Answer:"
)


def chr2_obj(**kw) -> dict:
    o = {
        "wikipedia_index": "W1",
        "index": 7,
        "sentence": CHR2,
        "choice1": CHR2_C1,
        "choice2": CHR2_C2,
        "choice3": CHR2_C3,
        "choice4": CHR2_C4,
        "choice2_type": "pp_part",
        "choice2_element": "spanning",
    }
    o.update(kw)
    return o


def test_completion_prompt_is_listing13(tasks):
    [d] = nb.docs_from_objects([chr2_obj()], "test")
    r = tasks["nubench"].mode("completion").render(d)
    assert r.query == LISTING13_PROMPT
    assert r.choices == [CHR2_C1, CHR2_C2, CHR2_C3, CHR2_C4] and r.gold == 0
    assert r.meta["option_types"] == ["standard", "local", "contradiction", "paraphrase"]
    assert r.meta["choice2_type"] == "pp_part"
    # Listing 13's prompt-response pair is what a completion shot shows (target = choice1)
    ctx = build_context("Q", [r])
    assert ctx == LISTING13_PROMPT + " " + CHR2_C1 + "\n\n" + "Q"


def test_option_prompt_is_listing14(tasks):
    [d] = nb.docs_from_objects([chr2_obj()], "test")
    # Listing 14 shows the options in dataset order: render that order (render is pure)
    d = Doc(d.id, {**d.fields, "option_keys": list(nb.CHOICE_KEYS)})
    r = tasks["nubench"].mode("option").render(d)
    assert r.query == LISTING14_PROMPT
    assert r.choices == ["A", "B", "C", "D"] and r.gold == 0 and r.target_text() == "A"
    assert build_context("Q", [r]) == LISTING14_PROMPT + " A\n\n" + "Q"  # Response] "A"
    assert tasks["nubench"].mode("letter").render(d).query == LISTING14_PROMPT
    # a shuffled order moves the gold letter with choice1
    d2 = Doc(d.id, {**d.fields, "option_keys": ["choice4", "choice2", "choice1", "choice3"]})
    r2 = tasks["nubench"].mode("option").render(d2)
    assert r2.gold == 2 and r2.target_text() == "C"
    assert "\nC. " + CHR2_C1 + "\n" in r2.query and "\nA. " + CHR2_C4 + "\n" in r2.query
    assert r2.meta["option_types"] == ["paraphrase", "local", "standard", "contradiction"]


# -- Listing 9, re-implemented independently (its code, with dataset.map as a loop) ---------------
def listing9_completion(doc):
    prompt = f"Negate the sentence.\nSentence: {doc['sentence']}\nNegation:"
    if doc.get("choice2_type", "") == "non-applicable":
        choices = [doc["choice1"], doc["choice3"], doc["choice4"]]
    else:
        choices = [doc["choice1"], doc["choice2"], doc["choice3"], doc["choice4"]]
    return {"query": prompt, "choices": choices, "gold": 0}


def listing9_option(dataset, seed=42):
    rng = random.Random(seed)

    def _process_doc(doc):
        initial_prompt = f"Negate the sentence.\nSentence: {doc['sentence']}\n"
        c1 = doc.get("choice1", "")
        c2 = doc.get("choice2", "")
        c3 = doc.get("choice3", "")
        c4 = doc.get("choice4", "")
        c2_na = str(doc.get("choice2_type", "")).lower() == "non-applicable"
        gathered, keys = [], []
        if c1:
            gathered.append(c1)
            keys.append("choice1")
        if c2 and not c2_na:
            gathered.append(c2)
            keys.append("choice2")
        if c3:
            gathered.append(c3)
            keys.append("choice3")
        if c4:
            gathered.append(c4)
            keys.append("choice4")
        assert len(gathered) >= 3
        paired = list(zip(gathered, keys))
        rng.shuffle(paired)
        choices, choice_keys = zip(*paired)
        answer_idx = choice_keys.index("choice1")
        labels = ["A", "B", "C", "D"][: len(choices)]
        lines = [
            "Given the following instruction and candidate answers, choose the single best answer.",
            f"Instruction: {initial_prompt}",
        ]
        for lab, ch in zip(labels, choices):
            lines.append(f"{lab}. {ch}")
        joined = ", ".join(labels)
        lines += [
            "",
            f"Your response should be one of {joined}.",
            "Only output the letter.",
            "Answer:",
        ]
        return {
            "query": "\n".join(lines),
            "choices": list(choices),
            "choice_keys": list(choice_keys),
            "answerKey": answer_idx,
            "answerLetter": labels[answer_idx],
        }

    return [_process_doc(doc) for doc in dataset]  # datasets.map: one call per row, in order


@pytest.mark.parametrize("split", ["test", "demonstration"])
def test_shuffle_and_prompts_equal_listing9(tasks, split):
    raw = read_raw(split)
    docs = nb.load_split(split, FIX)
    ref = listing9_option(raw)  # a fresh Random(42) per split, as lm-eval
    t = tasks["nubench"]
    assert [d["sentence"] for d in docs] == [o["sentence"] for o in raw]
    for d, o, want in zip(docs, raw, ref):
        assert d["option_keys"] == want["choice_keys"]
        r = t.mode("option").render(d)
        assert r.query == want["query"]
        assert r.choices[r.gold] == want["answerLetter"] and r.gold == want["answerKey"]
        c = t.mode("completion").render(d)
        w = listing9_completion(o)
        assert (c.query, c.choices, c.gold) == (w["query"], w["choices"], w["gold"])
    # the shuffle really is sequential: one generator per item would give other orders
    per_item = [listing9_option([o])[0]["choice_keys"] for o in raw]
    assert per_item != [d["option_keys"] for d in docs]
    # ... and it is the split's own generator: the demonstration order does not depend on test
    if split == "demonstration":
        assert listing9_option(read_raw("test") + raw)[-len(raw) :] != ref


def test_gold_letters_are_spread(tasks):
    """With Random(42) over the fixture test split the gold is not always one letter."""
    golds = [tasks["nubench"].mode("option").render(d).gold for d in nb.load_split("test", FIX)]
    assert len(set(golds)) >= 3


def test_definition_and_detail_prompts(tasks):
    [d] = nb.docs_from_objects([chr2_obj()], "test")
    q = tasks["nubench-definition"].mode("completion").render(d).query
    assert q == (
        "Negate the main predicate of the main clause so that the proposition is logically "
        "reversed.\nSentence: " + CHR2 + "\nNegation:"
    )
    q = tasks["nubench-detail"].mode("completion").render(d).query
    assert q.startswith(
        "Reverse the truth value of the main predicate (verbal phrase) in the main "
        "clause, while preserving all other elements of the main clause unchanged.\n\n"
        "1) Identify the main clause and its main verb (main predicate). Ignore "
        "subordinate clauses.\n2) Preserve all other main-clause content.\n3) Insert"
    )
    assert q.endswith(
        "(e.g., A and B => not A or not B; If A then B => A and not B).\n\n"
        "Sentence: " + CHR2 + "\nNegation:"
    )
    o = tasks["nubench-detail"].mode("option").render(d).query
    assert o.startswith(nb.OPTION_HEADER + "\nInstruction: Reverse the truth value")
    assert "\n\nSentence: " + CHR2 + "\n\nA. " in o
    o = tasks["nubench-definition"].mode("option").render(d).query
    assert (
        "\nInstruction: Negate the main predicate of the main clause so that the proposition is "
        "logically reversed.\nSentence: " + CHR2 + "\n\nA. "
    ) in o


# -- three options --------------------------------------------------------------------------------
def test_non_applicable_items_have_three_options(tasks):
    docs = nb.load_split("test", FIX)
    na = [d for d in docs if d["choice2_type"] == "non-applicable"]
    assert len(na) == 5 and all(d["choice2"] is None for d in na)
    raw = {o["index"]: o for o in read_raw("test")}
    # the fixture spells "no choice2" three ways: "", null and absent
    assert {repr(raw[d["index"]].get("choice2", "absent")) for d in na} == {
        "''",
        "None",
        "'absent'",
    }
    t = tasks["nubench"]
    for d in na:
        c = t.mode("completion").render(d)
        assert c.choices == [d["choice1"], d["choice3"], d["choice4"]] and c.gold == 0
        assert c.meta["option_types"] == ["standard", "contradiction", "paraphrase"]
        o = t.mode("option").render(d)
        assert o.choices == ["A", "B", "C"] and "choice2" not in o.meta["option_keys"]
        assert "\nYour response should be one of A, B, C.\n" in o.query and "\nD. " not in o.query
        assert sorted(o.meta["option_types"]) == ["contradiction", "paraphrase", "standard"]
    full = [d for d in docs if d["choice2_type"] != "non-applicable"]
    assert all(len(t.mode("completion").render(d).choices) == 4 for d in full)


# -- the Listing 8 filter --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "raw, filtered, answer",
    [
        ("A", "A", "A"),
        (" B", "B", "B"),  # the usual " X" after "Answer:"
        ("  c.", "c.", "C"),  # case and punctuation ignored
        ("(D)", "(D)", "D"),
        ("A\nB", "A", "A"),  # first line only
        ("B  \t", "B", "B"),
        ("\nA", "", None),  # empty first line
        ("", "", None),
        ("A .", "A .", None),  # lm-eval keeps the inner space: "a " != "a"
        ("A. The chef prepared the soup.", "A. The chef prepared the soup.", None),
        ("The answer is B", "The answer is B", None),
        ("E", "E", None),
        ("AB", "AB", None),
    ],
)
def test_listing8_filter(raw, filtered, answer):
    assert nb.listing8_filter(raw) == filtered
    assert nb.option_answer(raw) == answer


def test_option_scoring_exact_match_and_format():
    docs = nb.load_split("test", FIX)
    four = docs[0]
    three = next(d for d in docs if d["choice2_type"] == "non-applicable")
    r4, r3 = nb.render_option(four), nb.render_option(three)
    gold4 = r4.choices[r4.gold]
    wrong4 = next(c for c in r4.choices if c != gold4)

    def score(r, text):
        return nb.OPTION.score(r, [GenerationResponse(text, 2, "\n")])

    s = score(r4, " " + gold4.lower() + ".")
    assert s["exact_match"] == 1.0 and s["answer"] == gold4 and s["format_ok"]
    assert s["filtered"] == gold4.lower() + "."
    s = score(r4, " " + wrong4)
    assert s["exact_match"] == 0.0 and s["answer"] == wrong4 and s["format_ok"]
    s = score(r4, " Negation of the sentence")
    assert s["exact_match"] == 0.0 and s["answer"] is None and not s["format_ok"]
    s = score(r3, " D")  # a letter the three-option item does not offer
    assert s["exact_match"] == 0.0 and s["answer"] is None and not s["format_ok"]
    assert s["filtered"] == "D"
    assert nb.OPTION.stop == ("</s>", "\n") and nb.OPTION.max_tokens == 256


# -- loading and validation -----------------------------------------------------------------------
def test_fixture_splits_and_fields():
    test, demo, train = (nb.load_split(s, FIX) for s in ("test", "demonstration", "train"))
    assert (len(test), len(demo), len(train)) == (40, 12, 20)
    assert {d["choice2_type"] for d in test} == set(nb.CHOICE2_TYPES)
    assert {d["choice2_type"] for d in demo} == set(nb.CHOICE2_TYPES)
    assert test[0].id == "test-0" and demo[0].id == "demonstration-0" and train[0].id == "train-0"
    assert not {d["sentence"] for d in test} & {d["sentence"] for d in demo}
    assert set(test[0].fields) == {
        "wikipedia_index",
        "index",
        "sentence",
        "choice1",
        "choice2",
        "choice3",
        "choice4",
        "choice2_type",
        "choice2_element",
        "split",
        "option_keys",
    }
    assert test[0].source.endswith("test.jsonl")
    assert set(train[0].fields) == {"index", "premise", "hypothesis", "split"}
    assert any(isinstance(d["wikipedia_index"], str) for d in test)  # "S..." indices
    for d in test + demo:  # sanity of our own items
        assert len({d["choice1"], d["choice2"], d["choice3"], d["choice4"]} - {None}) == (
            3 if d["choice2_type"] == "non-applicable" else 4
        )
        assert " not " in d["choice1"] or "n't" in d["choice1"]


def _bad(tmp_path, split, obj_index, change, drop=()):
    objs = read_raw(split)
    objs[obj_index].update(change)
    for k in drop:
        objs[obj_index].pop(k, None)
    root = tmp_path / "bad"
    write_jsonl(root / f"{split}.jsonl", objs)
    return root


@pytest.mark.parametrize(
    "split, i, change, drop, fld, what",
    [
        ("test", 2, {}, ("choice3",), "choice3", "missing field"),  # missing option
        ("test", 2, {"choice1": None}, (), "choice1", "missing field"),
        ("test", 5, {"choice4": "   "}, (), "choice4", "empty string"),  # empty string
        ("test", 0, {"sentence": ""}, (), "sentence", "empty string"),
        ("test", 1, {"choice2": ""}, (), "choice2", "empty string"),  # applicable, no choice2
        ("test", 1, {}, ("choice2",), "choice2", "missing field"),
        (
            "test",
            4,
            {"choice2": "A fourth option."},
            (),
            "choice2",
            "non-applicable",
        ),  # NA with choice2
        ("test", 3, {"choice2_type": "noun_part"}, (), "choice2_type", "unknown choice2_type"),
        ("test", 3, {"choice2_type": "Non-applicable"}, (), "choice2_type", "unknown choice2_type"),
        ("test", 3, {}, ("choice2_type",), "choice2_type", "missing field"),
        ("demonstration", 6, {"index": 0}, (), "index", "duplicate index"),
        ("demonstration", 6, {"wikipedia_index": ""}, (), "wikipedia_index", "empty value"),
        ("demonstration", 6, {"choice3": 3}, (), "choice3", "expected str"),
        ("train", 4, {}, ("hypothesis",), "hypothesis", "missing field"),
        ("train", 4, {"premise": " "}, (), "premise", "empty string"),
    ],
)
def test_malformed_records_name_file_record_field(tmp_path, split, i, change, drop, fld, what):
    root = _bad(tmp_path, split, i, change, drop)
    with pytest.raises(DataError) as ei:
        nb.load_split(split, root)
    e = ei.value
    assert e.path.endswith(f"{split}.jsonl") and e.record == f"line {i + 1}" and e.field == fld
    assert what in str(e) and f"{split}.jsonl" in str(e) and f"'{fld}'" in str(e)


def test_json_array_and_csv_give_the_same_records(tmp_path):
    ref = nb.load_split("test", FIX)
    raw = read_raw("test")
    arr = tmp_path / "arr"
    arr.mkdir()
    (arr / "test.json").write_text(json.dumps(raw, indent=1), encoding="utf-8")
    lines = tmp_path / "lines"
    write_jsonl(lines / "test.json", raw)  # .json holding JSON lines
    cs = tmp_path / "csv"
    cs.mkdir()
    cols = [
        "",
        "wikipedia_index",
        "index",
        "sentence",
        "choice1",
        "choice2",
        "choice3",
        "choice4",
        "choice2_type",
        "choice2_element",
    ]  # pandas writes an index column
    with open(cs / "test.csv", "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for n, o in enumerate(raw):
            w.writerow([n] + ["" if o.get(c) is None else o.get(c) for c in cols[1:]])
    for root in (arr, lines, cs):
        docs = nb.load_split("test", root)
        assert [d.id for d in docs] == [d.id for d in ref]
        for a, b in zip(docs, ref):
            for k in (
                "sentence",
                "choice1",
                "choice2",
                "choice3",
                "choice4",
                "choice2_type",
                "option_keys",
            ):
                assert a[k] == b[k]
            assert str(a["wikipedia_index"]) == str(b["wikipedia_index"])
    assert nb.load_split("test", arr)[0].source.endswith("test.json")
    # a malformed CSV row is named by its data-row number
    rows = (cs / "test.csv").read_text(encoding="utf-8").splitlines()
    rows[1] = rows[1].replace("relative_part", "clause_part")
    (cs / "test.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    nb.clear_cache()
    with pytest.raises(DataError) as ei:
        nb.load_split("test", cs)
    assert ei.value.record == "row 1" and ei.value.field == "choice2_type"
    # a JSON-array item is named by its position
    bad = list(raw)
    bad[6] = {**bad[6], "choice1": ""}
    (arr / "test.json").write_text(json.dumps(bad), encoding="utf-8")
    nb.clear_cache()
    with pytest.raises(DataError) as ei:
        nb.load_split("test", arr)
    assert ei.value.record == "item 6" and ei.value.field == "choice1"


def test_folder_layouts_and_ambiguity(tmp_path):
    root = tmp_path / "NUBench"
    write_jsonl(root / "multiple-choice" / "test.jsonl", read_raw("test"))
    write_jsonl(root / "multiple-choice" / "demo.jsonl", read_raw("demonstration"))
    write_jsonl(root / "sentence-negation" / "train" / "train.jsonl", read_raw("train"))
    assert len(nb.load_split("test", root)) == 40
    assert len(nb.load_split("demonstration", root)) == 12
    assert len(nb.load_split("train", root)) == 20
    # Hugging Face shards are joined in order
    sh = tmp_path / "shards"
    raw = read_raw("test")
    write_jsonl(sh / "data" / "test-00000-of-00002.jsonl", raw[:25])
    write_jsonl(sh / "data" / "test-00001-of-00002.jsonl", raw[25:])
    assert [d["sentence"] for d in nb.load_split("test", sh)] == [o["sentence"] for o in raw]
    # two formats of one split, or two folders at the same depth, are refused
    (root / "multiple-choice" / "test.csv").write_text("index\n", encoding="utf-8")
    nb.clear_cache()
    with pytest.raises(DataError, match="ambiguous test split"):
        nb.load_split("test", root)
    twin = tmp_path / "twin"
    write_jsonl(twin / "a" / "test.jsonl", raw)
    write_jsonl(twin / "b" / "test.jsonl", raw)
    with pytest.raises(DataError, match="ambiguous test split"):
        nb.load_split("test", twin)
    # a file at the top wins over deeper ones
    write_jsonl(twin / "test.jsonl", raw[:3])
    nb.clear_cache()
    assert len(nb.load_split("test", twin)) == 3
    with pytest.raises(DataError, match="demonstration split not found"):
        nb.load_split("demonstration", twin)
    with pytest.raises(DataError, match="folder not found"):
        nb.load_split("test", tmp_path / "nowhere" / "deeper")
    with pytest.raises(TaskError, match="no split 'validation'"):
        nb.load_split("validation", root)
    with pytest.raises(DataError, match="invalid JSON"):
        (tmp_path / "j").mkdir()
        (tmp_path / "j" / "test.jsonl").write_text('{"index": 1}\n{oops\n', encoding="utf-8")
        nb.load_split("test", tmp_path / "j")


def test_hf_without_datasets(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets -> ImportError
    with pytest.raises(DataError, match="'datasets' package") as ei:
        nb.load_split("test", "hf:" + nb.HF_ID)
    assert isinstance(ei.value, NegbenchError) and "pip install -c constraints.txt datasets" in str(
        ei.value
    )
    nb.clear_cache()
    with pytest.raises(DataError, match="'datasets' package"):
        nb.load_split("train", nb.HF_ID)  # a bare owner/name id works too


def test_hf_loading_with_a_stand_in_datasets_module(monkeypatch):
    """The hub path, with a stand-in ``datasets`` module (the hub is not reachable here): the
    Listing 7 configuration name first, then a configuration the dataset lists."""
    calls = []
    rows = {
        "test": read_raw("test"),
        "demonstration": read_raw("demonstration"),
        "train": read_raw("train"),
    }

    def load_dataset(path, name=None, split=None):
        calls.append((path, name, split))
        if name not in ("multiple_choice", "pairs"):
            raise ValueError(f"BuilderConfig '{name}' not found")
        return rows[split]

    fake = types.SimpleNamespace(
        load_dataset=load_dataset,
        get_dataset_config_names=lambda path: ["multiple_choice", "pairs"],
    )
    monkeypatch.setitem(sys.modules, "datasets", fake)
    docs = nb.load_split("test", "hf:" + nb.HF_ID)
    assert [d["option_keys"] for d in docs] == [
        d["option_keys"] for d in nb.load_split("test", FIX)
    ]
    assert calls[:2] == [
        (nb.HF_ID, "multiple-choice", "test"),
        (nb.HF_ID, "multiple_choice", "test"),
    ]
    assert docs[0].source == f"hf:{nb.HF_ID}/multiple_choice/test"
    assert len(nb.load_split("train", "hf:" + nb.HF_ID)) == 20
    assert (nb.HF_ID, "pairs", "train") in calls
    # malformed hub rows are named by row number
    rows["demonstration"] = [dict(o) for o in rows["demonstration"]]
    rows["demonstration"][3]["choice2_type"] = "other"
    with pytest.raises(DataError) as ei:
        nb.load_split("demonstration", "hf:" + nb.HF_ID)
    assert ei.value.record == "row 3" and ei.value.field == "choice2_type"
    fake.get_dataset_config_names = lambda path: []
    nb.clear_cache()
    with pytest.raises(DataError, match="could not load") as ei:
        nb.load_split("test", "hf:" + nb.HF_ID)
    assert "BuilderConfig" in str(ei.value)


def test_zero_shot_run_needs_no_demonstration_split(tmp_path, tiny_llama, monkeypatch):
    """A set with only test.jsonl (e.g. from `negbench build mcq`) runs at 0 shots; the
    demonstration split is read (and fingerprinted) only when shots are drawn."""
    import shutil
    import negbench.tasks as registry
    from negbench.backends.hf import HFBackend
    from negbench.core.engine import Engine, EngineConfig
    from negbench.evaluation.runner import evaluate
    from negbench.evaluation.store import RunStore

    src = tmp_path / "built"
    src.mkdir()
    shutil.copy(FIX / "test.jsonl", src / "test.jsonl")
    for t in nb.make_tasks(str(src)):
        monkeypatch.setitem(registry.REGISTRY.table("task"), t.name, t)
    be = HFBackend(tiny_llama, dtype="float32", device="cpu")
    eng = Engine(be, config=EngineConfig(progress=False))
    res = evaluate(
        RunConfig(model=tiny_llama, tasks=["nubench"], modes=["completion"], shots=[0], limit=2),
        be,
        eng,
        RunStore(tmp_path / "run"),
        log=lambda s: None,
    )
    assert set(res["datasets"]["nubench"]) == {"source", "test"}
    assert len(RunStore(tmp_path / "run").read_samples("nubench.completion.0shot")) == 2
    with pytest.raises(DataError):  # with shots, the missing split is an error, as before
        evaluate(
            RunConfig(
                model=tiny_llama,
                tasks=["nubench"],
                modes=["completion"],
                shots=[1],
                seeds=[42],
                limit=2,
            ),
            be,
            eng,
            RunStore(tmp_path / "run1"),
            log=lambda s: None,
        )


def test_data_location_env(monkeypatch, tmp_path):
    monkeypatch.setenv("NEGBENCH_DATA", str(tmp_path))
    monkeypatch.delenv("NEGBENCH_NUBENCH", raising=False)
    assert nb.data_root() == tmp_path / "nubench"
    assert nb.default_source() == str(tmp_path / "nubench")
    monkeypatch.setenv("NEGBENCH_NUBENCH", "hf:" + nb.HF_ID)
    assert nb.default_source() == "hf:" + nb.HF_ID
    monkeypatch.setenv("NEGBENCH_NUBENCH", str(FIX))
    t = next(t for t in nb.make_tasks() if t.name == "nubench")  # source read at load time
    assert len(t.load("test")) == 40
    monkeypatch.delenv("NEGBENCH_NUBENCH")
    monkeypatch.delenv("NEGBENCH_DATA")
    monkeypatch.chdir(tmp_path)
    assert nb.data_root() == tmp_path.parent / "shared" / "data" / "nubench"


# -- tasks and protocol -----------------------------------------------------------------------------
def test_tasks_and_protocol():
    assert [t.name for t in nb.TASKS] == ["nubench", "nubench-definition", "nubench-detail"]
    for t in nb.TASKS:
        assert set(t.modes) == {"completion", "option", "letter"}
        assert t.test_split == "test" and t.fewshot_split == "demonstration"
        assert tuple(t.default_shots) == (0,) and tuple(t.protocol_shots) == (0, 1, 5, 10)
        assert tuple(t.protocol_seeds) == (42, 1234, 3000, 5000, 7000)
        assert t.fewshot_sampler == "lm-eval" and t.description("option") == ""
        assert t.target_delimiter == " " and t.fewshot_delimiter == "\n\n"
        assert t.extra_metrics is nb.nubench_metrics and t.tables is nb.error_tables
    assert nb.COMPLETION.metrics == ("acc", "acc_norm") and nb.OPTION.metrics == ("exact_match",)
    for split in ("demonstration", "test"):  # Table 10 adds up to Table 5
        assert sum(nb.PAPER_TYPE_COUNTS[split].values()) == nb.PAPER_COUNTS[split]
    with pytest.raises(TaskError):
        nb.make_tasks(FIX)[0].load("train")


def test_fewshot_contexts_come_from_demonstration(tasks):
    t = tasks["nubench"]
    cfg = RunConfig(model="none", tasks=[])
    demo = {d.id: d for d in nb.load_split("demonstration", FIX)}
    test = {d.id: d for d in nb.load_split("test", FIX)}
    for mode in ("completion", "option"):
        samples, reqs = build_requests(Unit(t, mode, 5, 1234), None, cfg)
        assert len(samples) == 40
        for s in samples:
            assert len(s["fewshot_ids"]) == 5 and set(s["fewshot_ids"]) <= set(demo)
            own = test[s["doc_id"]]["sentence"]
            assert s["context"].count(own) == 1  # only in the query
            for fid in s["fewshot_ids"]:
                shot = t.mode(mode).render(demo[fid])
                assert shot.query + " " + shot.target_text() + "\n\n" in s["context"]
            assert s["context"].endswith(t.mode(mode).render(test[s["doc_id"]]).query)
        # lm-eval's sampler: Random(1234).sample over the demonstration split, item after item
        rnd = random.Random(1234)
        pool = list(demo.values())
        assert [s["fewshot_ids"] for s in samples] == [
            [x.id for x in rnd.sample(pool, 5)] for _ in samples
        ]


# -- error analysis -----------------------------------------------------------------------------
def _rec(types_, gold, sub, **kw):
    return {
        "gold_index": gold,
        "choices": [chr(65 + i) for i in range(len(types_))],
        "meta": {"option_types": types_, "choice2_type": sub},
        **kw,
    }


FOUR = ["standard", "local", "contradiction", "paraphrase"]
THREE = ["standard", "contradiction", "paraphrase"]


def test_error_analysis_completion_by_hand():
    R = [
        _rec(FOUR, 0, "relative_part", pred=0),
        _rec(FOUR, 0, "relative_part", pred=1),  # local
        _rec(FOUR, 0, "pp_part", pred=1),  # local
        _rec(FOUR, 0, "pp_part", pred=2),  # contradiction
        _rec(FOUR, 0, "compound_part", pred=0),
        _rec(FOUR, 0, "adverb_part", pred=3),  # paraphrase
        _rec(THREE, 0, "non-applicable", pred=1),  # contradiction (no local option)
        _rec(THREE, 0, "non-applicable", pred=0),
    ]
    m = nb.nubench_metrics("completion", R)
    assert m["error_rate"] == pytest.approx(5 / 8)
    assert m["incorrect_local_pct"] == pytest.approx(40.0)
    assert m["incorrect_contradiction_pct"] == pytest.approx(40.0)
    assert m["incorrect_paraphrase_pct"] == pytest.approx(20.0)
    assert m["confusion_relative_part_pct"] == pytest.approx(50.0)
    assert m["confusion_pp_part_pct"] == pytest.approx(50.0)
    assert m["confusion_compound_part_pct"] == 0.0 and m["confusion_adverb_part_pct"] == 0.0
    assert "n_format_wrong" not in m
    ea = m["error_analysis"]
    assert ea == error_analysis(R, pred_field="pred", subtype_key="choice2_type")
    assert "non-applicable" not in ea["local_confusion"]
    assert ea["local_confusion"]["pp_part"] == {"n_items": 2, "n_picked_local": 1, "pct": 50.0}


def test_error_analysis_option_by_hand():
    # option positions are shuffled: types follow the shown order
    R = [
        _rec(["local", "standard", "paraphrase", "contradiction"], 1, "adverb_part", answer="B"),
        _rec(["local", "standard", "paraphrase", "contradiction"], 1, "adverb_part", answer="A"),
        _rec(["paraphrase", "contradiction", "standard", "local"], 2, "compound_part", answer=None),
        _rec(["paraphrase", "contradiction", "standard", "local"], 2, "compound_part", answer="D"),
        _rec(["contradiction", "standard", "paraphrase"], 1, "non-applicable", answer="C"),
    ]
    m = nb.nubench_metrics("option", R)
    assert m["error_rate"] == pytest.approx(4 / 5) and m["n_format_wrong"] == 1
    assert m["incorrect_local_pct"] == pytest.approx(200 / 3)  # 2 of the 3 readable errors
    assert m["incorrect_paraphrase_pct"] == pytest.approx(100 / 3)
    assert m["incorrect_contradiction_pct"] == 0.0
    assert m["confusion_adverb_part_pct"] == 50.0 and m["confusion_compound_part_pct"] == 50.0
    assert m["confusion_relative_part_pct"] != m["confusion_relative_part_pct"]  # NaN: no items


def test_error_table():
    R0 = [_rec(FOUR, 0, "relative_part", pred=1), _rec(FOUR, 0, "pp_part", pred=0)]
    R1 = [_rec(FOUR, 0, "relative_part", pred=0), _rec(FOUR, 0, "pp_part", pred=2)]
    rows = [
        ("nubench.completion.0shot", nb.nubench_metrics("completion", R0)),
        ("nubench.completion.1shot.seed42", nb.nubench_metrics("completion", R0)),
        ("nubench.completion.1shot.seed1234", nb.nubench_metrics("completion", R1)),
    ]
    text = nb.error_tables("completion", rows)
    paper, ours = text.split("Ours (not in the paper)")
    lines = paper.splitlines()
    assert "argmax log-likelihood (acc)" in lines[0]
    assert "seed 1234 only" in paper
    header = next(
        l for l in lines if l.startswith("| run") or l.startswith("| unit") or "relative_part" in l
    )
    assert (
        header.index("relative_part")
        < header.index("pp_part")
        < header.index("compound_part")
        < header.index("adverb_part")
    )  # Table 6's column order
    rows_p = [l for l in lines if l.startswith("| nubench")]
    # App. R: zero-shot and the seed-1234 few-shot unit only (R1: both wrong, both local picks)
    assert [l.split(" | ")[0] for l in rows_p] == [
        "| nubench.completion.0shot",
        "| nubench.completion.1shot.seed1234",
    ]
    # the paper's values, each with its n (2 items; 1 wrong answer; 1 item of a clause type)
    # and no interval under 30 items
    assert rows_p[0].startswith(
        "| nubench.completion.0shot | 0.500 (2, no CI) | 0 | 100.00 (1, no CI) | 0.00 (1, no CI) "
        "| 0.00 (1, no CI) | 100.00 (1, no CI) | 0.00 (1, no CI) | – | – |"
    )
    assert rows_p[1].startswith(
        "| nubench.completion.1shot.seed1234 | 0.500 (2, no CI) | 0 | 0.00 (1, no CI) "
        "| 100.00 (1, no CI) | 0.00 (1, no CI) |"
    )
    rows_o = [l for l in ours.splitlines() if l.startswith("| nubench")]
    assert any(l.startswith("| nubench.completion.1shot.seed42 |") for l in rows_o)
    mean = next(l for l in rows_o if "mean of 2 seeds" in l)
    # a seed mean has no counts: the values alone, and the note says so
    assert mean.startswith(
        "| nubench.completion.1shot (mean of 2 seeds) | 0.500 | 0.0 | 50.00 | 50.00 | 0.00 | 50.00 | 0.00 |"
    )
    assert "mean over seeds have no n and no interval" in ours
    assert "mean over seeds" not in paper
    # only seed 1234 and zero-shot: no "ours" table; a few-shot setting without 1234 is named
    assert "Ours" not in nb.error_tables("completion", rows[::2])
    only42 = nb.error_tables("completion", rows[:2])
    assert "No seed-1234 unit for: nubench.completion.1shot" in only42 and "Ours" in only42
    assert nb.error_tables("completion", [("x", {"acc": 1.0})]) == ""


def _error_records(shift: int = 0) -> list[dict]:
    """40 relative-clause items (12 local-negation picks, 4 paraphrase picks) and 10
    participle-clause items (2 local-negation picks); ``shift`` moves one relative-clause
    local pick to a right answer (a second seed)."""
    R = [
        _rec(FOUR, 0, "relative_part", pred=1 if i < 12 - shift else 3 if i < 16 else 0)
        for i in range(40)
    ]
    R += [_rec(FOUR, 0, "pp_part", pred=1 if i < 2 else 0) for i in range(10)]
    for i, r in enumerate(R):
        r["doc_id"] = f"n{i}"
        r["acc"] = float(r["pred"] == r["gold_index"])
    return R


def test_error_table_cells_carry_n_and_wilson_interval():
    """NUBench's error tables (run, show; report): each rate with its n and the project's
    Wilson interval from 30 items, 'no CI' under 30; a seed mean's cells say ± is the SD over
    seeds and withhold the interval (50 items under 2 seeds: under 150 clusters)."""
    from pathlib import Path

    from negbench.scoring.intervals import wilson
    from negbench.scoring.paper_tables import Context, build_tables
    from negbench.scoring.runs import Run, UnitResult

    R = _error_records()
    m = nb.nubench_metrics("completion", R)
    text = nb.error_tables("completion", [("nubench.completion.0shot", m)])
    row = next(l for l in text.splitlines() if l.startswith("| nubench.completion.0shot"))
    e_lo, e_hi = wilson(18, 50)  # 18 of 50 wrong
    r_lo, r_hi = wilson(12, 40)  # 12 of the 40 relative-clause items picked the local negation
    assert row == (
        f"| nubench.completion.0shot | 0.360 [{e_lo:.3f}–{e_hi:.3f}] (50) | 0 "
        "| 77.78 (18, no CI) | 0.00 (18, no CI) | 22.22 (18, no CI) "
        f"| 30.00 [{100 * r_lo:.2f}–{100 * r_hi:.2f}] (40) | 20.00 (10, no CI) | – | – |"
    )
    # the report: a zero-shot unit and a 1-shot setting under two seeds
    units, samples = {}, {}
    for name, shots, seed, recs in (
        ("nubench.completion.0shot", 0, None, R),
        ("nubench.completion.1shot.seed1234", 1, 1234, R),
        ("nubench.completion.1shot.seed42", 1, 42, _error_records(shift=1)),
    ):
        mm = {**nb.nubench_metrics("completion", recs), "acc": sum(r["acc"] for r in recs) / 50}
        units[name] = UnitResult(name, "nubench", "completion", shots, seed, name, mm)
        samples[name] = recs
    run = Run(Path("/nonexistent/run"), {"schema": 1, "units": {}}, "toy", units, 0)
    run._samples = samples
    tables = {t.id: t for t in build_tables(Context([run]))}
    paper = tables["nubench-completion-errors"]
    keys = [c.key for c in paper.columns]
    zero = dict(zip(keys, paper.rows[0].cells))
    assert zero["error_rate"].items == 50 and zero["error_rate"].ci == pytest.approx(wilson(18, 50))
    rel, pp = zero["confusion.relative_part"], zero["confusion.pp_part"]
    assert rel.value == pytest.approx(30.0) and rel.items == 40
    assert rel.ci == pytest.approx([100 * x for x in wilson(12, 40)])
    assert pp.items == 10 and pp.ci is None and "below 30" in pp.ci_withheld
    assert "(10, no CI)" in paper.to_markdown()
    # the seed mean (ours): ± is the SD over the two seeds; the pooled items are clustered by
    # item (each under two seeds), 50 clusters < 150: no interval, n = the 50 distinct items
    mean = tables["nubench-completion-errors-seed-mean"]
    few = dict(zip([c.key for c in mean.columns], mean.rows[1].cells))
    err = few["error_rate"]
    assert err.n == 2 and err.sd is not None and err.items == 50 and err.ci is None
    assert "rests on 50 items" in err.ci_withheld and "below 150" in err.ci_withheld
    md = mean.to_markdown()
    assert f"{err.value:.3f} ± {err.sd:.3f} (50, no CI)" in md
    assert "± is the standard deviation over the seeds a cell averages" in md
    assert "not a 95 % margin" in md
    # one seed: no SD, so no ± and no SD legend
    assert "±" not in "".join(c.full_text() for c in paper.rows[0].cells if c)
    assert "standard deviation" not in paper.to_markdown()


# -- Alpaca export -----------------------------------------------------------------------------
def test_alpaca_export(tmp_path):
    import negbench.tasks.nubench.export as nx
    from negbench.tasks import alpaca

    assert alpaca.get_exporter("nubench-negation") is nx.EXPORTERS[0]
    assert {"nubench-negation-definition", "nubench-negation-detail"} <= set(alpaca.exporters())
    ex = {e.name: e for e in nx.make_exporters(FIX)}
    recs = ex["nubench-negation"].records("train")
    raw = read_raw("train")
    assert len(recs) == 20 and ex["nubench-negation"].default_split == "train"
    assert recs[0] == {
        "instruction": "Negate the sentence.",
        "input": "Sentence: " + raw[0]["premise"],
        "output": raw[0]["hypothesis"],
    }
    assert all(
        r
        == {
            "instruction": "Negate the sentence.",
            "input": f"Sentence: {o['premise']}",
            "output": o["hypothesis"],
        }
        for r, o in zip(recs, raw)
    )
    d = ex["nubench-negation-definition"].records("train")[0]
    assert d["instruction"] == nb.INSTRUCTIONS["definition"] and d["input"] == recs[0]["input"]
    out = alpaca.write_alpaca(recs, tmp_path / "a.jsonl")
    assert json.loads(out.read_text(encoding="utf-8").splitlines()[1]) == recs[1]
    with pytest.raises(TaskError, match="--split train"):
        ex["nubench-negation"].records("test")


# -- end to end on a tiny random model --------------------------------------------------------------
def test_end_to_end_tiny_model(tmp_path, tiny_llama, monkeypatch):
    import negbench.tasks as registry
    from negbench.backends.hf import HFBackend
    from negbench.core.engine import Engine, EngineConfig
    from negbench.evaluation.runner import evaluate
    from negbench.evaluation.store import RunStore

    for t in nb.make_tasks(FIX):
        monkeypatch.setitem(registry.REGISTRY.table("task"), t.name, t)
    be = HFBackend(tiny_llama, dtype="float32", device="cpu")
    eng = Engine(be, config=EngineConfig(progress=False))
    cfg = RunConfig(
        model=tiny_llama,
        tasks=["nubench"],
        modes=["completion", "option", "letter"],
        shots=[0, 1],
        seeds=[42],
        limit=6,
    )
    store = RunStore(tmp_path / "run")
    res = evaluate(cfg, be, eng, store, log=lambda s: None)
    names = {
        f"nubench.{m}.{k}"
        for m in ("completion", "option", "letter")
        for k in ("0shot", "1shot.seed42")
    }
    assert set(res["units"]) == names
    assert res["datasets"]["nubench"]["test"]["n"] == 40
    assert res["datasets"]["nubench"]["demonstration"]["n"] == 12
    demo = {d.id: d for d in nb.load_split("demonstration", FIX)}
    test = {d.id: d for d in nb.load_split("test", FIX)}
    for name in names:
        unit = res["units"][name]
        recs = store.read_samples(name)
        assert len(recs) == 6 and [r["doc_id"] for r in recs] == [f"test-{i}" for i in range(6)]
        m = unit["metrics"]
        key = "exact_match" if unit["mode"] == "option" else "acc"
        assert m["error_rate"] == pytest.approx(1 - m[key])
        assert m["error_analysis"]["n"] == 6
        for r in recs:
            d = test[r["doc_id"]]
            n_opt = 3 if d["choice2_type"] == "non-applicable" else 4
            assert r["meta"]["choice2_type"] == d["choice2_type"]
            assert len(r["meta"]["option_types"]) == n_opt
            assert r["context"].count(d["sentence"]) == 1
            if unit["shots"]:
                assert len(r["fewshot_ids"]) == 1 and r["fewshot_ids"][0] in demo
                assert demo[r["fewshot_ids"][0]]["sentence"] in r["context"]
                assert r["context"].count("Negate the sentence.") == 2
            else:
                assert r["fewshot_ids"] == [] and r["context"].count("Negate the sentence.") == 1
            if unit["mode"] == "completion":
                assert (
                    r["gold"] == 0 and len(r["scores"]) == n_opt and r["choices"][0] == d["choice1"]
                )
                assert r["context"].endswith("\nNegation:")
            else:
                assert r["choices"] == list(nb.LETTERS[:n_opt])
                assert r["meta"]["option_types"][r["gold"]] == "standard"
                assert r["context"].endswith("Only output the letter.\nAnswer:")
            if unit["mode"] == "option":
                assert set(r) >= {"output", "filtered", "answer", "format_ok", "exact_match"}
                assert r["answer"] == nb.option_answer(r["output"]) or r["answer"] is None
                assert r["gold_answer"] == nb.LETTERS[r["gold"]]
            if unit["mode"] == "letter":
                assert len(r["scores"]) == n_opt and r["pred"] in range(n_opt)
    assert res["units"]["nubench.option.0shot"]["metrics"]["n_format_wrong"] >= 0
    assert set(res["tables"]) == {"nubench.completion", "nubench.option", "nubench.letter"}
    assert "relative_part" in res["tables"]["nubench.option"]
    assert "nubench.option" in (tmp_path / "run" / "tables.md").read_text(encoding="utf-8")


def test_report_error_table_uses_seed_1234_for_few_shot(tmp_path, tiny_llama, monkeypatch):
    """The report's App. R table: few-shot cells from the seed-1234 unit only; the seed mean is a
    separate table labelled as ours."""
    import negbench.tasks as registry
    from negbench.backends.hf import HFBackend
    from negbench.core.engine import Engine, EngineConfig
    from negbench.scoring.runs import load_runs
    from negbench.scoring.paper_tables import Context, build_tables
    from negbench.evaluation.runner import evaluate
    from negbench.evaluation.store import RunStore

    for t in nb.make_tasks(FIX):
        monkeypatch.setitem(registry.REGISTRY.table("task"), t.name, t)
    be = HFBackend(tiny_llama, dtype="float32", device="cpu")
    cfg = RunConfig(
        model=tiny_llama,
        tasks=["nubench"],
        modes=["completion"],
        shots=[0, 1],
        seeds=[42, 1234, 7000],
        limit=12,
    )
    store = RunStore(tmp_path / "run")
    res = evaluate(
        cfg, be, Engine(be, config=EngineConfig(progress=False)), store, log=lambda s: None
    )
    tables = {t.id: t for t in build_tables(Context(load_runs([store.root])))}
    paper, ours = tables["nubench-completion-errors"], tables["nubench-completion-errors-seed-mean"]
    assert "Table 6" in paper.paper and "not in the paper" in ours.paper and "ours" in ours.title
    ea = {
        s: res["units"][f"nubench.completion.1shot.seed{s}"]["metrics"]["error_analysis"]
        for s in (42, 1234, 7000)
    }
    few = next(r for r in paper.rows if r.labels[-1] == "1-shot")
    cell = few.cells[[c.key for c in paper.columns].index("error_rate")]
    assert cell.value == pytest.approx(ea[1234]["error_rate"]) and cell.n == 1
    few = next(r for r in ours.rows if r.labels[-1] == "1-shot")
    cell = few.cells[[c.key for c in ours.columns].index("error_rate")]
    assert (
        cell.value == pytest.approx(sum(a["error_rate"] for a in ea.values()) / 3) and cell.n == 3
    )
    # the task's own tables.md: the paper's table first, seed 1234 only
    text = res["tables"]["nubench.completion"]
    paper_md = text.split("Ours (not in the paper)")[0]
    assert "1shot.seed1234" in paper_md and "1shot.seed42" not in paper_md
