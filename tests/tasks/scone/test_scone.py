"""ScoNe: the CSV loaders and their errors (on small CSVs of our own sentences, same columns as the
release), the real release when ../shared/data has it, the published prompts, the few-shot draw,
the answer parsing, the metrics, and an end-to-end ``negbench run`` + ``rescore`` + ``report``
with a tiny random model.  No dataset text is written into this file."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from negbench.cli import main
from negbench.errors import DataError, TaskError
from negbench.scoring.fewshot import build_context
from negbench.scoring.intervals import wilson
from negbench.core.requests import GenerationResponse
from negbench.tasks import get_task
import negbench.tasks.scone.tasks as sc
from locations import SHARED

REAL = SHARED / "data" / "scone"
needs_real = pytest.mark.skipif(
    not (REAL / "scone_nli" / "test").is_dir(), reason="../shared/data/scone not present"
)

# Our own sentences: (general word, specific word) pairs and a frame per condition; entailment
# when the specific word is in the premise of an upward context, as in the release's design.
PAIRS = [
    ("fruit", "pear"),
    ("tool", "hammer"),
    ("bird", "robin"),
    ("vehicle", "tram"),
    ("drink", "cocoa"),
    ("flower", "tulip"),
]
FRAMES = {
    "no_negation": "The cook bought a {w}.",
    "one_not_scoped": "The cook, who is not tired, bought a {w}.",
    "two_not_scoped": "The cook, who is not tired, bought a {w}, not a lamp.",
    "two_scoped": "It is false that the cook did not buy a {w}.",
    "one_scoped": "The cook did not buy a {w}.",
    "one_scoped_one_not_scoped": "The cook, who is not tired, did not buy a {w}.",
}
DOWNWARD = {"one_scoped", "one_scoped_one_not_scoped"}


def rows_for(cond: str, pairs) -> list[dict]:
    s1, s2, lab = sc.COLUMNS[cond]
    out = []
    for i, (gen, spec) in enumerate(pairs):
        f = FRAMES[cond]
        for j, (a, b) in enumerate(((spec, gen), (gen, spec))):
            up = j == 0
            label = "entailment" if up != (cond in DOWNWARD) else "neutral"
            row = {"": str(2 * i + j), s1: f.format(w=a), s2: f.format(w=b), lab: label}
            if cond != "one_scoped":  # the release's other columns, for realism
                row.update({"sentence1": "x", "sentence2": "y", "group_index": str(i)})
            out.append(row)
    return out


def write_csv(path: Path, rows: list[dict], header: list[str] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = header or list(rows[0])
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=header)
        w.writeheader()
        w.writerows(rows)
    return path


NLG_ROWS = [  # two frames × (hyper, hypo) triplets, our own narratives
    (
        "I checked that Ann keeps no pets at all. So when Bo asked if Ann has a {o},",
        "pet",
        "cat",
        "I said no",
        "neg",
        0,
    ),
    (
        "I did not see Ann's {o} that is not small. But when Bo asked if Ann has a pet,",
        "pet",
        "cat",
        "I said yes",
        "not_scope",
        0,
    ),
    (
        "I saw Ann walk her {o} today. So when Bo asked if Ann has a pet,",
        "pet",
        "cat",
        "I said yes",
        "pos",
        0,
    ),
    (
        "The shop down the road sells no fruit. When I asked for {o} there, the clerk said",
        "fruit",
        "plums",
        "we have no HYPO",
        "neg",
        1,
    ),
    (
        "The shop that is not far sells {o}. When I asked for fruit there, the clerk said",
        "fruit",
        "plums",
        "here are the HYPO",
        "not_scope",
        1,
    ),
    (
        "The shop down the road sells {o}. When I asked for fruit there, the clerk said",
        "fruit",
        "plums",
        "here are the HYPO",
        "pos",
        1,
    ),
]


def write_nlg(root: Path, rows=NLG_ROWS) -> Path:
    recs = [
        {
            "": str(i),
            "sentence": s.format(o=hypo),
            "hyper": hyper,
            "hypo": hypo,
            "gold_outcome": out,
            "prompt_type": t,
            "frame_num": str(fr),
        }
        for i, (s, hyper, hypo, out, t, fr) in enumerate(rows)
    ]
    return write_csv(root / "scone_nlg" / "scone_nlg.csv", recs)


@pytest.fixture
def fake(tmp_path, monkeypatch) -> Path:
    """A small release of our own: 12 test and 12 train rows per condition, and ScoNe-NLG."""
    root = tmp_path / "scone"
    for cond in sc.CONDITIONS:
        write_csv(root / "scone_nli" / "test" / f"{cond}.csv", rows_for(cond, PAIRS))
        train = [(g + "s", s + "s") for g, s in PAIRS]  # different words
        write_csv(root / "scone_nli" / "train" / f"{cond}.csv", rows_for(cond, train))
    write_nlg(root)
    monkeypatch.setenv("NEGBENCH_SCONE", str(root))
    return root


# -- loading ---------------------------------------------------------------------------------------
def test_synthetic_loader(fake):
    docs = sc.load_nli("test")
    assert len(docs) == 6 * 12 and len({d.id for d in docs}) == len(docs)
    assert [d["split"] for d in docs[::12]] == list(sc.CONDITIONS)
    d = next(x for x in docs if x["split"] == "one_scoped")
    assert d["premise"] == "The cook did not buy a pear." and d["label"] == "neutral"
    assert d.id == "test/one_scoped/0"
    # the registered task reads $NEGBENCH_SCONE at load time; the split option selects a condition
    assert len(get_task("scone-nli").load("test")) == 72
    one = get_task("scone-nli[split=two_scoped]")
    assert one.name == "scone-nli[split=two_scoped]"
    assert {x["split"] for x in one.load("test")} == {"two_scoped"} and len(one.load("train")) == 12


def test_task_options_are_checked():
    with pytest.raises(TaskError, match="unknown ScoNe condition"):
        get_task("scone-nli[split=three_scoped]")
    with pytest.raises(TaskError, match="unknown option"):
        get_task("scone-nli[sample=3]")


@needs_real
def test_real_release(monkeypatch):
    monkeypatch.setenv("NEGBENCH_SCONE", str(REAL))
    test, train = sc.load_nli("test"), sc.load_nli("train")
    assert len(test) == 6 * 200 and len(train) == 6 * 1002
    for cond in sc.CONDITIONS:
        ds = [d for d in test if d["split"] == cond]
        assert len(ds) == 200
        assert sum(d["label"] == "entailment" for d in ds) == 100
        # one_scoped.csv holds sentence1/2 + gold_label; the others the *_edited columns
        with open(REAL / "scone_nli" / "test" / f"{cond}.csv", encoding="utf-8") as f:
            first = next(csv.DictReader(f))
        s1 = first["sentence1" if cond == "one_scoped" else "sentence1_edited"]
        assert ds[0]["premise"] == s1.strip()
    nlg = list(sc._nlg(str(REAL)))
    assert len(nlg) == 222 and len({d["triplet"] for d in nlg}) == 74
    assert all(len(d["outcomes"]) == 2 and "HYPO" not in d["outcome"] for d in nlg)


# -- validation errors -----------------------------------------------------------------------------
def _err(fn) -> DataError:
    with pytest.raises(DataError) as e:
        fn()
    return e.value


def test_malformed_nli_rows(tmp_path):
    p = tmp_path / "no_negation.csv"
    good = rows_for("no_negation", PAIRS[:1])
    write_csv(p, [good[0], {**good[1], "gold_label_edited": "contradiction"}])
    e = _err(lambda: sc.read_nli(p, "no_negation", "test"))
    assert e.path == str(p) and e.record == "row 2" and e.field == "gold_label_edited"
    write_csv(p, [{**good[0], "sentence1_edited": "  "}])
    e = _err(lambda: sc.read_nli(p, "no_negation", "test"))
    assert (e.record, e.field) == ("row 1", "sentence1_edited")
    write_csv(p, [{k: v for k, v in good[0].items() if k != "sentence2_edited"}])
    e = _err(lambda: sc.read_nli(p, "no_negation", "test"))
    assert e.field == "sentence2_edited" and e.record == "header"
    p.write_text(
        ",sentence1_edited,sentence2_edited,gold_label_edited\n0,a b,c d,neutral,extra\n",
        encoding="utf-8",
    )
    e = _err(lambda: sc.read_nli(p, "no_negation", "test"))
    assert e.record == "row 1" and "5 fields" in str(e)
    write_csv(p, [good[0], good[0]])
    assert "duplicate row index" in str(_err(lambda: sc.read_nli(p, "no_negation", "test")))
    assert "not found" in str(
        _err(lambda: sc.read_nli(tmp_path / "nope.csv", "no_negation", "test"))
    )


def test_malformed_nlg_rows(tmp_path):
    p = write_nlg(tmp_path, NLG_ROWS[:2] + NLG_ROWS[3:])  # a triplet without its pos row
    e = _err(lambda: sc.read_nlg(p))
    assert e.field == "prompt_type" and "triplet 0/pet/cat" in str(e)
    bad = [r[:4] + ("negative",) + r[5:] if i == 0 else r for i, r in enumerate(NLG_ROWS)]
    e = _err(lambda: sc.read_nlg(write_nlg(tmp_path, bad)))
    assert (e.record, e.field) == ("row 1", "prompt_type")
    same = [r[:3] + ("I said yes",) + r[4:] if i < 3 else r for i, r in enumerate(NLG_ROWS)]
    assert _err(lambda: sc.read_nlg(write_nlg(tmp_path, same))).field == "gold_outcome"
    frame = [r[:5] + ("x",) if i == 4 else r for i, r in enumerate(NLG_ROWS)]
    e = _err(lambda: sc.read_nlg(write_nlg(tmp_path, frame)))
    assert (e.record, e.field) == ("row 5", "frame_num")


def test_cli_reports_bad_rows_before_loading_a_model(fake, tiny_llama, capsys):
    p = fake / "scone_nli" / "test" / "two_scoped.csv"
    rows = rows_for("two_scoped", PAIRS)
    rows[3]["gold_label_edited"] = "maybe"
    write_csv(p, rows)
    sc._nli.cache_clear()
    rc = main(
        [
            "run",
            "--model",
            tiny_llama,
            "--tasks",
            "scone-nli",
            "--no-cache",
            "--output",
            str(fake / "out"),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "two_scoped.csv" in err and "row 4" in err and "gold_label_edited" in err
    assert not (fake / "out").exists()


# -- prompts ---------------------------------------------------------------------------------------
TOY = sc.Doc(
    "t/0",
    {
        "premise": "We didn't eat pizza.",
        "hypothesis": "We didn't eat food.",
        "label": "neutral",
        "split": "one_scoped",
        "row": "0",
    },
)


def test_published_zero_shot_prompts():
    task = get_task("scone-nli")
    q = {m: task.mode(m).render(TOY).query for m in task.modes}
    # the authors' examples (toy example of gpt3_negation.ipynb)
    assert q["cond-q"] == "Is it true that if we didn't eat pizza, then we didn't eat food?"
    assert q["hyp-q"] == (
        "Assume that we didn't eat pizza. Is it then definitely true that we "
        "didn't eat food? Answer Yes or No."
    )
    assert q["cond-truth"] == "If we didn't eat pizza, then we didn't eat food. Is this true?"
    assert q["brown"] == "C: We didn't eat pizza.\nQ: We didn't eat food. Yes, No, or Maybe?"
    assert q["structured"] == "P: We didn't eat pizza.\nH: We didn't eat food.\nL:"
    assert q["reasoning"].startswith("Logical and commonsense reasoning exam.\n\nExplain")
    assert q["reasoning"].endswith(
        "Premise: we didn't eat pizza\nQuestion: Can we logically "
        "conclude for sure that we didn't eat food?\nReasoning: Let's "
        "think logically step by step. The premise basically tells us that"
    )
    assert (
        q["cloze"]
        == q["cond-q-fs"]
        == ("Q: Is it true that if we didn't eat pizza, then we didn't eat food?\nA:")
    )
    assert q["cond-truth-fs"].startswith("C:If we")
    r = task.mode("cloze").render(TOY)
    assert r.choices == ["Yes", "Maybe"] and r.gold == 1 and r.meta["split"] == "one_scoped"
    assert task.mode("cloze-hyp").render(TOY).choices == ["Yes", "No"]
    g = task.mode("cond-q").render(TOY)
    assert g.gold == "neutral" and g.choices == []


def test_fewshot_context_matches_the_published_layout(fake):
    task = get_task("scone-nli")
    docs, pool = task.load("test"), task.load("train")
    rec = next(d for d in docs if d["split"] == "two_scoped")
    shots = next(sc.paired_sampler([rec], pool, 4, 1234))
    assert [s["label"] for s in shots] == ["entailment", "entailment", "neutral", "neutral"]
    assert all(s["split"] == "two_scoped" for s in shots)
    for mode, first in (
        ("cond-q-fs", "Q1: Is it true that if "),
        ("brown-fs", "C1: "),
        ("structured-fs", "P1: "),
    ):
        spec = task.mode(mode)
        ex = [spec.render(s) for s in shots]
        ctx = build_context(
            spec.render(rec).query, ex, "", task.target_delimiter, task.fewshot_delimiter
        )
        blocks = ctx.split("\n\n")
        assert len(blocks) == 5 and blocks[0].startswith(first)
        if mode == "cond-q-fs":
            assert [b.splitlines()[-1] for b in blocks[:4]] == [
                "A1: Yes",
                "A2: Yes",
                "A3: Maybe",
                "A4: Maybe",
            ]
            assert blocks[4].startswith("Q: Is it true that if ") and blocks[4].endswith("\nA:")
        if mode == "brown-fs":  # the authors' answer numbering runs one ahead
            assert (
                blocks[0].splitlines()[-1] == "A2: Yes"
                and blocks[3].splitlines()[-1] == "A5: Maybe"
            )
        if mode == "structured-fs":
            assert blocks[2].splitlines()[-1] == "L3: neutral"


def test_paired_sampler_rules(fake):
    pool = sc.load_nli("train")
    docs = sc.load_nli("test")
    a = [list(x) for x in sc.paired_sampler(docs, pool, 4, 7)]
    b = [list(x) for x in sc.paired_sampler(docs, pool, 4, 7)]
    assert [[s.id for s in x] for x in a] == [[s.id for s in x] for x in b]
    for d, shots in zip(docs, a):
        assert [s[sc.DEMO_INDEX] for s in shots] == [1, 2, 3, 4]
        assert all(s["split"] == d["split"] for s in shots)
        assert all(
            s["premise"] != d["premise"] and s["hypothesis"] != d["hypothesis"] for s in shots
        )
        assert len({s.id.split("#")[0] for s in shots}) == 4
    with pytest.raises(TaskError, match="odd"):
        next(sc.paired_sampler(docs, pool, 3, 7))
    # drawing from the test split itself excludes records sharing a premise or hypothesis
    same = next(sc.paired_sampler(docs[:1], docs, 2, 1))
    assert all(s["premise"] != docs[0]["premise"] for s in same)


def test_answer_parsing():
    assert sc.infer_label("Yes, it is.") == "entailment"
    assert sc.infer_label("No.\nWell... YES") == "entailment"
    assert sc.infer_label("Maybe") == "neutral"
    assert sc.infer_label("yesterday it rained") == "neutral"
    assert sc.infer_label("") == "neutral"
    r = get_task("scone-nli").mode("cond-q").render(TOY)
    s = sc.GENERATE.score(r, [GenerationResponse("I think yes.", 4, None)])
    assert s["answer"] == "entailment" and s["exact_match"] == 0.0
    s = sc.GENERATE.score(r, [GenerationResponse("Not necessarily.", 3, None)])
    assert s["answer"] == "neutral" and s["exact_match"] == 1.0


# -- metrics ---------------------------------------------------------------------------------------
def _rec(split: str, label: str, ok: bool, field: str = "acc") -> dict:
    pred = label if ok else ("neutral" if label == "entailment" else "entailment")
    r = {field: float(ok), "meta": {"split": split, "label": label}}
    if field == "acc":
        r["pred"] = sc.LABELS.index(pred)
    else:
        r["answer"] = pred
    return r


@pytest.mark.parametrize("field", ["acc", "exact_match"])
def test_nli_metrics(field):
    recs = []
    for i, cond in enumerate(sc.CONDITIONS):  # condition i: i of 5 right
        for j in range(5):
            recs.append(_rec(cond, sc.LABELS[j % 2], j < i, field))
    m = sc.nli_metrics("m", recs)
    for i, cond in enumerate(sc.CONDITIONS):
        assert m[f"acc_{cond}"] == pytest.approx(i / 5) and m[f"n_{cond}"] == 5
    assert m["accuracy"] == pytest.approx(sum(range(6)) / 30)
    right_ent = sum(1 for r in recs if r["meta"]["label"] == "entailment" and r[field])
    assert m["acc_gold_entailment"] == pytest.approx(right_ent / 18)
    preds = [r.get("answer") or sc.LABELS[r["pred"]] for r in recs]
    assert m["pred_entailment_rate"] == pytest.approx(preds.count("entailment") / 30)
    table = sc.nli_table("m", [("u0", m)])
    # each condition's cell: percent and n; 5 items are too few for an interval (30 needed)
    assert "| 20.0 (5, no CI) |" in table
    assert table.splitlines()[2] == (
        "| unit | No negation | One not scoped | Two not scoped | "
        "Two scoped | One scoped | One scoped, one not | Overall |"
    )
    cells = [f"{20.0 * k:.1f} (5, no CI)" for k in range(6)]
    assert "| u0 | " + " | ".join(cells) + " | 50.0 |" in table  # overall: no n in m
    # 30 items a condition: its Wilson interval over them
    m30 = sc.nli_metrics("m", recs * 6)
    cells = []
    for k in range(6):
        lo, hi = wilson(6 * k, 30)
        cells.append(f"{20.0 * k:.1f} [{100 * lo:.1f}–{100 * hi:.1f}] (30)")
    assert "| u0 | " + " | ".join(cells) + " |" in sc.nli_table("m", [("u0", m30)])


def test_report_by_split_table_cells_carry_n_and_interval():
    """ScoNe-NLI by condition in the report, from a saved run (in memory, as the report reads
    it): a condition of 40 items shows the Wilson interval of the project's function (percent)
    and its n; one of 10 items its n and no interval, with the reason; the caption's ± is
    labelled an SD and a single seed has none."""
    from pathlib import Path

    from negbench.scoring.paper_tables import Context, build_tables
    from negbench.scoring.runs import Run, UnitResult

    recs = [_rec("no_negation", sc.LABELS[j % 2], j < 30) for j in range(40)]
    recs += [_rec("one_not_scoped", sc.LABELS[j % 2], j < 5) for j in range(10)]
    for i, r in enumerate(recs):
        r["doc_id"] = f"s{i}"
    m = {**sc.nli_metrics("cloze", recs), "acc": 35 / 50, "n": 50}
    name = "scone-nli.cloze.0shot"
    unit = UnitResult(name, "scone-nli", "cloze", 0, None, name, m)
    run = Run(Path("/nonexistent/run"), {"schema": 1, "units": {}}, "toy", {name: unit}, 0)
    run._samples = {name: recs}
    t = {t.id: t for t in build_tables(Context([run]))}["scone-nli-by-split"]
    cells = dict(zip([c.key for c in t.columns], t.rows[0].cells))
    none, one = cells["acc_no_negation"], cells["acc_one_not_scoped"]
    assert none.value == pytest.approx(75.0) and none.items == 40
    assert none.ci == pytest.approx([100 * x for x in wilson(30, 40)])
    assert one.value == pytest.approx(50.0) and one.items == 10 and one.ci is None
    assert "rests on 10 items" in one.ci_withheld
    overall = cells["accuracy"]
    assert overall.items == 50 and overall.ci == pytest.approx([100 * x for x in wilson(35, 50)])
    lo, hi = (100 * x for x in wilson(30, 40))
    md = t.to_markdown()
    assert f"| toy | cloze | zero-shot | 75.0 [{lo:.1f}–{hi:.1f}] (40) | 50.0 (10, no CI) |" in md
    assert "±" not in md.split("\n\n")[2]  # one seed: no SD in the table itself
    assert "± is the SD over seeds" in t.caption
    html = t.to_html()
    assert (
        f'<span class="nb-ci"><span>[{lo:.1f}–</span><wbr><span>{hi:.1f}]</span> '
        "<span>(40)</span></span>" in html
    )
    assert '<span class="nb-ci"><span>(10,</span> <span>no CI)</span></span>' in html


def test_nli_metrics_for_one_condition():
    m = sc.nli_metrics(
        "m", [_rec("two_scoped", "neutral", True), _rec("two_scoped", "entailment", False)]
    )
    assert m["acc_two_scoped"] == 0.5 and "acc_no_negation" not in m
    assert "| – |" in sc.nli_table("m", [("u", m)])


def test_nlg_render_metrics_and_proxy(fake):
    task = get_task("scone-nlg")
    docs = task.load("test")
    assert len(docs) == 6
    r = task.mode("loglik").render(docs[3])
    assert r.choices == ["we have no plums", "here are the plums"] and r.gold == 0
    assert r.meta["split"] == "neg" and r.meta["triplet"] == "1/fruit/plums"
    assert r.query.endswith("the clerk said")
    with pytest.raises(TaskError):
        task.load("train")
    # the strict proxy: the longest outcome found in the completion
    assert sc.outcome_in(" I said yes, of course.", ["I said no", "I said yes"]) == 1
    assert (
        sc.outcome_in("No allergic reaction at all", ["Allergic reaction", "No allergic reaction"])
        == 1
    )
    assert sc.outcome_in("he sneezed", ["Allergic reaction", "No allergic reaction"]) is None
    s = sc.CompletionMatch().score(r, [GenerationResponse(" We have no plums, sorry.", 6, "\n")])
    assert s["acc"] == 1.0 and s["outcome_found"] == 1.0
    recs = [
        {"acc": float(ok), "meta": {"split": t, "triplet": tr}}
        for tr, oks in (("a", (1, 1, 1)), ("b", (1, 0, 1)))
        for t, ok in zip(sc.NLG_TYPES, oks)
    ]
    m = sc.nlg_metrics("loglik", recs)
    assert (
        m["acc_neg"] == 1.0 and m["acc_not_scope"] == 0.5 and m["accuracy"] == pytest.approx(5 / 6)
    )
    assert m["triplet_consistency"] == 0.5 and m["n_triplets"] == 2
    assert "| u | 100.0 | 50.0 | 100.0 | 83.3 | 50.0 |" in sc.nlg_table("loglik", [("u", m)])


# -- end to end ------------------------------------------------------------------------------------
def test_cli_run_rescore_report_tiny_model(fake, tiny_llama, tmp_path):
    out = tmp_path / "run"
    rc = main(
        [
            "run",
            "--model",
            tiny_llama,
            "--tasks",
            "scone-nli[split=two_scoped],scone-nlg",
            "--modes",
            "scone-nli[split=two_scoped]:cloze,scone-nlg:loglik",
            "--shots",
            "4",
            "--limit",
            "3",
            "--output",
            str(out),
            "--quiet",
        ]
    )
    assert rc == 0
    res = json.loads((out / "results.json").read_text("utf-8"))
    names = set(res["units"])
    unit = "scone-nli[split=two_scoped].cloze.4shot.seed1234"
    assert names == {unit, "scone-nlg.loglik.4shot.seed1234"}
    u = res["units"][unit]["metrics"]
    assert u["n"] == 3 and u["n_two_scoped"] == 3 and u["acc_two_scoped"] == u["accuracy"]
    samples = [
        json.loads(x) for x in (out / "samples" / f"{unit}.jsonl").read_text("utf-8").splitlines()
    ]
    assert all(s["context"].startswith("Q1: Is it true that if ") for s in samples)
    assert all(s["context"].endswith("\nA:") and s["choices"] == ["Yes", "Maybe"] for s in samples)
    assert all(len(s["fewshot_ids"]) == 4 and s["meta"]["split"] == "two_scoped" for s in samples)
    assert u["accuracy"] == sum(s["acc"] for s in samples) / 3
    tables = (out / "tables.md").read_text("utf-8")
    assert "One scoped, one not" in tables and "Triplets all right" in tables
    before = {k: v["metrics"] for k, v in res["units"].items()}
    assert main(["rescore", str(out)]) == 0
    after = {
        k: v["metrics"]
        for k, v in json.loads((out / "results.json").read_text("utf-8"))["units"].items()
    }
    assert after == before
    gen = tmp_path / "gen"  # the NLG completion mode
    assert (
        main(
            [
                "run",
                "--model",
                tiny_llama,
                "--tasks",
                "scone-nlg",
                "--modes",
                "generate",
                "--limit",
                "3",
                "--output",
                str(gen),
                "--quiet",
            ]
        )
        == 0
    )
    g = json.loads((gen / "results.json").read_text("utf-8"))["units"]["scone-nlg.generate.0shot"]
    recs = [
        json.loads(x)
        for x in (gen / "samples" / "scone-nlg.generate.0shot.jsonl")
        .read_text("utf-8")
        .splitlines()
    ]
    assert len(recs) == 3 and all(isinstance(r["output"], str) for r in recs)
    assert g["metrics"]["acc"] == sum(r["acc"] for r in recs) / 3
    assert g["metrics"]["n_triplets"] == 1
    rep = tmp_path / "rep"
    assert main(["report", str(out), "--out", str(rep), "--no-plots", "--formats", "md,html"]) == 0
    md = (rep / "report.md").read_text("utf-8")
    assert "ScoNe-NLI (scone-nli[split=two_scoped]): accuracy per negation condition" in md
    assert "Two scoped" in md and "ScoNe-NLG" in md
    assert "accuracy per negation condition" in (rep / "report.html").read_text("utf-8")
