"""negbench build mcq: resumable LLM stages through the real transformers backend (tiny random
llama), sheet validation, disagreement-rate arithmetic, and release files the nubench / konubench
loaders read.  Every sentence here is written for this test."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from negbench.builders import mcq as M
from negbench.errors import DataError, OptionError

EN_TEXT = (
    "The cat sat on the warm mat near the door. The dog is an animal that barks at night.\n"
    "The museum opened last year in the old harbour. Short one.\n"
    "The river does not flow north past the mill. She arrived early, but he stayed at home.\n"
)
KO_TEXT = (
    "고양이가 따뜻한 방석 위에 앉았다. 개는 밤마다 짖는 동물이다. 박물관은 작년에 문을 열었다. "
    "강물이 마을 앞을 지나 남쪽으로 흐른다.\n"
)


def _cfg(tmp_path: Path, model: str, text: str = EN_TEXT, **kw) -> M.McqConfig:
    src = tmp_path / "src.txt"
    if not src.exists():
        src.write_text(text, encoding="utf-8")
    base = dict(
        input=str(src), out=str(tmp_path / "B"), lang="en", model=model, min_words=6, max_tokens=12
    )
    base.update(kw)
    return M.McqConfig(**base)


def _rows(path: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8-sig"))))


def _write_csv(path: Path, rows: list[dict], columns=None) -> Path:
    cols = list(columns or rows[0].keys())
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: r.get(k, "") for k in cols})
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def _fill_author(sheet: Path, out: Path, lang: str = "en") -> Path:
    rows = _rows(sheet)
    types = M.local_types(lang)
    for i, r in enumerate(rows):
        r["standard_negation"] = f"It is not the case: {r['original']}"
        r["contradiction"] = r["contradiction"] or f"Contradiction {i}."
        r["paraphrase"] = r["paraphrase"] or f"Paraphrase {i}."
        if i == len(rows) - 1:  # one three-option item
            r["local_negation_type"] = M.EN_NON_APPLICABLE if lang == "en" else ""
        else:
            r["local_negation_type"] = types[i % len(types)]
            r["local_negation"] = f"Local negation {i}."
            r["local_negation_element"] = "a part"
    return _write_csv(out, rows)


def _review(sheet: Path, out: Path, disagree: dict[int, list[str]]) -> Path:
    """Agree everywhere except item i's labels in ``disagree[i]`` (revised: ' (revised)')."""
    rows = _rows(sheet)
    for i, r in enumerate(rows):
        for lab in M.LABELS:
            r[f"agree_{lab}"] = "agree"
        for lab in disagree.get(i, []):
            r[f"agree_{lab}"] = "disagree"
            if lab != "local_negation" or r["local_negation"]:
                r[lab] = r[lab] + " (revised)"
        r["comment"] = "fixed" if i in disagree else ""
    return _write_csv(out, rows)


def test_prompts_are_the_papers(tmp_path):
    en, ko = M.language("en").prompts, M.language("ko").prompts
    assert set(en) == {"merge", "conditionals", "contradiction", "paraphrase"}
    assert set(ko) == {"merge", "contradiction", "paraphrase"}
    for p in list(en.values()) + list(ko.values()):
        assert p.user.count("{sentence}") == 1 and p.source
    r = en["contradiction"].render("A dog barks.")
    assert r.endswith('Original sentence: "A dog barks."\n\nContradicted sentence:')
    assert "'isn't', 'doesn't', or 'can't'" in r
    assert ko["contradiction"].user.startswith("넌 부정 표현을 사용하지 않고")
    assert ko["merge"].system.startswith("너는 자연스럽게")
    assert en["merge"].render("A. B.") == (
        "Merge these sentences: A. B. \n Provide only the "
        "resulting sentence without any additional "
        "explanation or introduction."
    )


def test_extract_split_filter_sample():
    docs = [
        ("1", "One two three four five six. Seven eight. Nine ten eleven twelve thirteen fourteen!")
    ]
    _, fn = M.splitter("en")
    units = M.extract_units(docs, fn, merge=False, min_words=6, limit=None, seed=42)
    assert [u["text"] for u in units] == [
        "One two three four five six.",
        "Nine ten eleven twelve thirteen fourteen!",
    ]
    assert [u["uid"] for u in units] == ["1-0", "1-2"]
    pairs = M.extract_units(docs, fn, merge=True, min_words=0, limit=None, seed=42)
    assert [u["sentences"] for u in pairs] == [["One two three four five six.", "Seven eight."]]
    docs2 = [(str(i), f"w{i} " * 8) for i in range(10)]
    a = M.extract_units(docs2, fn, merge=False, min_words=0, limit=4, seed=1)
    b = M.extract_units(docs2, fn, merge=False, min_words=0, limit=4, seed=1)
    assert (
        a == b and len(a) == 4 and [u["doc"] for u in a] == sorted((u["doc"] for u in a), key=int)
    )


def test_clean_answer():
    assert M.clean_answer(' "The room was lit."\nmore') == "The room was lit."
    assert M.clean_answer("Here is the sentence:\nContradicted sentence: 'X y.'") == "X y."
    assert M.clean_answer("\n\n") == ""


def test_stages_resume_and_cache(tmp_path, tiny_llama):
    cfg = _cfg(tmp_path, tiny_llama, conditionals=1)
    r1 = M.build(cfg, progress=False)
    assert r1["items"] == 5 and r1["next"] == "author"  # "Short one." filtered out
    assert r1["model_opened"] and r1["model_computed"] == r1["model_requests"] == 1 + 5 + 5
    assert set(r1["stages"]) == {"extract", "conditionals", "contradiction", "paraphrase"}
    sheet = tmp_path / "B" / "sheets" / "author.csv"
    rows = _rows(sheet)
    assert [r["id"] for r in rows] == ["1-0", "1-1", "2-0", "3-0", "3-1"]
    assert sum(r["note"] == "origin: conditional" for r in rows) == 1
    assert (tmp_path / "B" / "sheets" / "author.jsonl").is_file()
    for name in r1["stages"]:
        assert (tmp_path / "B" / "work" / f"{name}.jsonl").is_file()
    # a rerun reuses every stage: the model is not even opened
    r2 = M.build(cfg, progress=False)
    assert not r2["model_opened"] and r2["model_computed"] == 0
    assert all(s["reused"] for s in r2["stages"].values())
    # stage files gone: recomputed from the response cache, 0 model calls
    shutil.rmtree(tmp_path / "B" / "work")
    r3 = M.build(cfg, progress=False)
    assert r3["model_requests"] == 11 and r3["model_computed"] == 0
    assert _rows(sheet) == rows
    # another prompt setting (max_tokens) invalidates the LLM stages but not extract
    r4 = M.build(_cfg(tmp_path, tiny_llama, conditionals=1, max_tokens=5), progress=False)
    assert r4["stages"]["extract"]["reused"] and not r4["stages"]["paraphrase"]["reused"]
    assert r4["model_computed"] == 11


def test_full_flow_en_loads_through_nubench(tmp_path, tiny_llama):
    import negbench.tasks.nubench.tasks as nubench

    cfg = _cfg(tmp_path, tiny_llama)
    M.build(cfg, progress=False)
    sheets = tmp_path / "B" / "sheets"
    author = _fill_author(sheets / "author.csv", tmp_path / "author-filled.csv")
    r = M.build(_cfg(tmp_path, tiny_llama, author=str(author)), progress=False)
    assert r["next"] == "review-1" and r["model_computed"] == 0
    rev1 = _review(
        sheets / "review-1.csv",
        tmp_path / "r1.csv",
        {0: ["contradiction"], 2: ["paraphrase", "standard_negation"]},
    )
    r = M.build(_cfg(tmp_path, tiny_llama, author=str(author), reviews=[str(rev1)]), progress=False)
    assert r["next"] == "review-2"
    assert r["rounds"][0]["disagreements"] == 2 and r["rounds"][0]["items"] == 5
    assert r["rounds"][0]["rate"] == pytest.approx(0.4)
    assert r["rounds"][0]["by_label"]["paraphrase"] == 1 and r["rounds"][0]["revised"] == 2
    assert "(revised)" in _rows(sheets / "review-2.csv")[0]["contradiction"]
    rev2 = _review(sheets / "review-2.csv", tmp_path / "r2.csv", {4: ["original"]})
    r = M.build(
        _cfg(tmp_path, tiny_llama, author=str(author), reviews=[str(rev1), str(rev2)]),
        progress=False,
    )
    assert r["next"] is None and r["rounds"][1]["rate"] == pytest.approx(0.2)
    docs = nubench.load_split("test", tmp_path / "B" / "nubench")
    assert len(docs) == 5
    assert docs[0]["choice3"].endswith("(revised)")
    assert docs[4]["choice2_type"] == "non-applicable" and docs[4]["choice2"] is None
    assert docs[4]["sentence"].endswith("(revised)")
    assert [d["index"] for d in docs] == [0, 1, 2, 3, 4]
    man = json.loads((tmp_path / "B" / "manifest.json").read_text())
    assert man["model"]["fingerprint"] and set(man["prompts"]) == set(M.language("en").prompts)
    assert [x["rate"] for x in man["reviews"]] == [pytest.approx(0.4), pytest.approx(0.2)]
    assert set(man["stages"]) == {"extract", "contradiction", "paraphrase"}


def test_korean_merge_loads_through_konubench(tmp_path, tiny_llama):
    import negbench.tasks.konubench.tasks as konubench

    cfg = _cfg(tmp_path, tiny_llama, text=KO_TEXT, lang="ko", min_words=None)
    r = M.build(cfg, progress=False)
    assert r["items"] == 2 and "merge" in r["stages"] and r["model_requests"] == 2 + 2 + 2
    assert 0 < r["model_computed"] <= 6  # identical merged sentences are asked once
    rows = _rows(tmp_path / "B" / "sheets" / "author.csv")
    assert rows[0]["source"] == "고양이가 따뜻한 방석 위에 앉았다. 개는 밤마다 짖는 동물이다."
    author = _fill_author(tmp_path / "B" / "sheets" / "author.csv", tmp_path / "a.csv", "ko")
    r = M.build(
        _cfg(
            tmp_path,
            tiny_llama,
            text=KO_TEXT,
            lang="ko",
            min_words=None,
            author=str(author),
            rounds=1,
        ),
        progress=False,
    )
    rev = _review(
        tmp_path / "B" / "sheets" / "review-1.csv", tmp_path / "r1.csv", {1: ["local_negation"]}
    )
    r = M.build(
        _cfg(
            tmp_path,
            tiny_llama,
            text=KO_TEXT,
            lang="ko",
            min_words=None,
            author=str(author),
            rounds=1,
            reviews=[str(rev)],
        ),
        progress=False,
    )
    assert r["next"] is None and r["rounds"][0]["rate"] == pytest.approx(0.5)
    docs = konubench.load_split("test", tmp_path / "B" / "konubench")
    assert [d["idx"] for d in docs] == ["0", "1"]
    assert docs[0]["local_negation_type"] == "관형절"
    assert docs[1]["local_negation"] is None and docs[1]["local_negation_type"] is None


def test_disagreement_arithmetic():
    def row(uid, *bad):
        return M.ReviewRow(uid, {}, {k: k not in bad for k in M.LABELS}, "", uid)

    rows = {
        r.uid: r
        for r in [
            row("a"),
            row("b", "original", "paraphrase"),
            row("c", "paraphrase"),
            row("d"),
            row("e"),
            row("f"),
            row("g"),
            row("h"),
        ]
    }
    s = M.disagreement_stats(1, rows)
    assert (s.items, s.disagreements) == (8, 2) and s.rate == pytest.approx(0.25)
    assert s.by_label == {
        "original": 1,
        "standard_negation": 0,
        "local_negation": 0,
        "contradiction": 0,
        "paraphrase": 2,
    }
    assert M.disagreement_stats(2, {}).rate == 0.0


@pytest.fixture(scope="module")
def _built_once(tmp_path_factory, tiny_llama):
    d = tmp_path_factory.mktemp("mcq-built")
    M.build(_cfg(d, tiny_llama, cache=str(d / "responses.sqlite")), progress=False)
    return d


@pytest.fixture
def built(tmp_path, _built_once):
    """A build waiting for its author sheet (stage files present: reruns open no model)."""
    for name in ("src.txt", "B"):
        src = _built_once / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, tmp_path / name)
    return tmp_path


def _err(cfg) -> DataError:
    with pytest.raises(DataError) as ei:
        M.build(cfg, progress=False)
    return ei.value


@pytest.mark.parametrize(
    "edit, field, words",
    [
        (
            lambda rs: [r.pop("standard_negation") for r in rs],
            "standard_negation",
            "missing column",
        ),
        (lambda rs: rs[1].update(standard_negation="  "), "standard_negation", "empty standard"),
        (
            lambda rs: rs[0].update(local_negation_type="clause_part"),
            "local_negation_type",
            "unknown local",
        ),
        (lambda rs: rs[0].update(local_negation=""), "local_negation", "empty local negation"),
        (
            lambda rs: rs[2].update(local_negation_type="non-applicable"),
            "local_negation",
            "type says",
        ),
        (lambda rs: rs[3].update(id=rs[2]["id"]), "id", "twice"),
        (
            lambda rs: rs[0].update(standard_negation=rs[0]["original"]),
            "standard_negation",
            "equals",
        ),
    ],
)
def test_author_sheet_errors(built, tiny_llama, edit, field, words):
    rows = _rows(_fill_author(built / "B" / "sheets" / "author.csv", built / "good.csv"))
    edit(rows)
    bad = _write_csv(built / "bad.csv", rows)
    e = _err(_cfg(built, tiny_llama, author=str(bad)))
    assert e.path == str(bad) and e.field == field and words in str(e)
    assert not (built / "B" / "sheets" / "review-1.csv").exists()


def test_sheet_errors_before_anything_is_written(tmp_path, tiny_llama):
    bad = _write_csv(tmp_path / "a.csv", [{"id": "1-0", "original": "x"}])
    e = _err(_cfg(tmp_path, tiny_llama, author=str(bad)))
    assert "missing column" in str(e) and e.record == "header"
    assert not (tmp_path / "B").exists()  # no stage ran, no model was loaded


def test_author_sheet_from_another_build(built, tiny_llama):
    rows = _rows(_fill_author(built / "B" / "sheets" / "author.csv", built / "good.csv"))
    rows[0]["id"] = "9-9"
    e = _err(_cfg(built, tiny_llama, author=str(_write_csv(built / "bad.csv", rows))))
    assert "missing" in str(e) and e.field == "id"


def test_review_sheet_errors(built, tiny_llama):
    author = _fill_author(built / "B" / "sheets" / "author.csv", built / "a.csv")
    M.build(_cfg(built, tiny_llama, author=str(author)), progress=False)
    good = _review(built / "B" / "sheets" / "review-1.csv", built / "r1.csv", {})
    rows = _rows(good)
    rows[1]["agree_paraphrase"] = "maybe"
    e = _err(
        _cfg(
            built,
            tiny_llama,
            author=str(author),
            reviews=[str(_write_csv(built / "bad1.csv", rows))],
        )
    )
    assert e.field == "agree_paraphrase" and e.record == "row 2" and "maybe" in str(e)
    rows = _rows(good)
    rows[0]["agree_contradiction"] = ""
    e = _err(
        _cfg(
            built,
            tiny_llama,
            author=str(author),
            reviews=[str(_write_csv(built / "bad2.csv", rows))],
        )
    )
    assert e.field == "agree_contradiction" and "no decision" in str(e)
    rows = _rows(good)
    rows[2]["paraphrase"] += " changed"  # a revision marked agree
    e = _err(
        _cfg(
            built,
            tiny_llama,
            author=str(author),
            reviews=[str(_write_csv(built / "bad3.csv", rows))],
        )
    )
    assert e.field == "agree_paraphrase" and "changed but marked agree" in str(e)
    rows = _rows(good)
    e = _err(
        _cfg(
            built,
            tiny_llama,
            author=str(author),
            reviews=[
                str(_write_csv(built / "bad4.csv", rows, [c for c in rows[0] if c != "comment"]))
            ],
        )
    )
    assert e.field == "comment"
    assert not (built / "B" / "sheets" / "review-2.csv").exists()
    assert not (built / "B" / "manifest.json").exists()


def test_options_checked():
    with pytest.raises(OptionError):
        M.McqConfig(input="x", out="y", lang="ko", conditionals=2).resolved()
    with pytest.raises(OptionError):
        M.McqConfig(input="x", out="y", reviews=["r.csv"]).resolved()
    with pytest.raises(OptionError):
        M.McqConfig(input="x", out="y", split="train").resolved()


def test_cli_error_exit(tmp_path, tiny_llama, capsys):
    from negbench.cli import main

    src = tmp_path / "s.txt"
    src.write_text(EN_TEXT, encoding="utf-8")
    bad = _write_csv(tmp_path / "a.csv", [{"id": "1-0"}])
    rc = main(
        [
            "build",
            "mcq",
            "--input",
            str(src),
            "--out",
            str(tmp_path / "B"),
            "--model",
            tiny_llama,
            "--author",
            str(bad),
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert rc != 0 and str(bad) in err and "missing column" in err
    rc = main(
        [
            "build",
            "mcq",
            "--input",
            str(src),
            "--out",
            str(tmp_path / "B"),
            "--model",
            tiny_llama,
            "--min-words",
            "6",
            "--max-tokens",
            "4",
            "--quiet",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "5 items" in out and "author sheet" in out


@pytest.mark.slow
def test_end_to_end_smollm2(tmp_path, monkeypatch):
    """Three sentences through the real embedded SmolLM2 (chat template, transformers backend):
    stages, cache, sheets, one review round, a release the nubench loader reads."""
    import negbench.tasks.nubench.tasks as nubench

    monkeypatch.delenv("NEGBENCH_CACHE", raising=False)  # the converted model is shared
    text = (
        "The old lighthouse on the northern cape was painted red and white by the harbour "
        "workers last summer. The ferry that crosses the bay leaves the pier every morning at "
        "seven, and it returns shortly before noon.\nThe village choir sings in the stone "
        "chapel on Sundays because the acoustics there are excellent.\n"
    )
    cfg = _cfg(
        tmp_path,
        "smollm2-135m-instruct",
        text=text,
        min_words=10,
        max_tokens=48,
        cache=str(tmp_path / "responses.sqlite"),
        dtype="float32",
        device="cpu",
    )
    r = M.build(cfg, progress=False)
    assert r["items"] == 3 and r["model_requests"] == 6 and r["model_computed"] == 6
    rows = _rows(tmp_path / "B" / "sheets" / "author.csv")
    assert all(row["contradiction"] and row["paraphrase"] for row in rows)
    r = M.build(cfg, progress=False)
    assert not r["model_opened"] and r["model_computed"] == 0
    author = _fill_author(tmp_path / "B" / "sheets" / "author.csv", tmp_path / "a.csv")
    M.build(M.McqConfig(**{**cfg.__dict__, "author": str(author), "rounds": 1}), progress=False)
    rev = _review(
        tmp_path / "B" / "sheets" / "review-1.csv", tmp_path / "r1.csv", {0: ["paraphrase"]}
    )
    r = M.build(
        M.McqConfig(**{**cfg.__dict__, "author": str(author), "rounds": 1, "reviews": [str(rev)]}),
        progress=False,
    )
    assert r["rounds"][0]["rate"] == pytest.approx(1 / 3)
    docs = nubench.load_split("test", tmp_path / "B" / "nubench")
    assert len(docs) == 3 and docs[0]["choice4"].endswith("(revised)")
