"""Templates of `negbench build notadataset`: language, files, morphology, instantiation, the raw
and JSON-lines formats, and template recovery (on sentences we generate ourselves; the real
release only in the slow test)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import negbench.tasks.notadataset.build.inflect_en as inflect_en
from negbench.tasks.notadataset.build.inflect_en import (
    Exceptions,
    article,
    gerund,
    parse_exc,
    plural,
)
from negbench.tasks.notadataset.build.templates import (
    expand,
    gloss,
    instantiate,
    load_templates,
    raw_block,
    raw_text,
    recover_templates,
    write_jsonl,
    write_raw,
    write_templates,
)
from negbench.tasks.notadataset.build.triples import Term, Triple
from negbench.errors import DataError, NegbenchError
from negbench.tasks.notadataset.tasks import Release, parse_hub_record, parse_pattern_text
from locations import SHARED

EXC = Exceptions(
    plural={"foot": "feet", "calf": "calves", "gas": "gas"},
    gerund={"run": "running", "lie": "lying"},
)


def _triple(pid, rel, a, b, *ds):
    src = f"{rel}(" + ",".join(f"{t.synset} {t.word}_1" for t in ((a,) if a is b else (a, b))) + ")"
    return Triple(pid, rel, a, b, tuple(ds), src)


WEEK = Term("week", "15169248-n", sense=3)
MONTH = Term("month", "15209413-n", sense=1)
FENCE = Term("fence", None, None, ("03327234-n",))
PART = _triple(6, "wn_part", MONTH, WEEK, FENCE)


# -- the template language ---------------------------------------------------------------------
def test_expansion_order_left_choice_slowest_optional_first():
    assert expand("{b:a} [is commonly|may be] [used|needed] for {a:ing}.") == (
        "{b:a} is commonly used for {a:ing}.",
        "{b:a} is commonly needed for {a:ing}.",
        "{b:a} may be used for {a:ing}.",
        "{b:a} may be needed for {a:ing}.",
    )
    assert expand("{a} and {b} [are|may be] synonyms (in certain contexts).") == (
        "{a} and {b} are synonyms in certain contexts.",
        "{a} and {b} are synonyms.",
        "{a} and {b} may be synonyms in certain contexts.",
        "{a} and {b} may be synonyms.",
    )


def test_nesting_escapes_and_whitespace():
    assert expand("{a} [is (often)|may be] here , \\[sic\\].") == (
        "{a} is often here, [sic].",
        "{a} is here, [sic].",
        "{a} may be here, [sic].",
    )


@pytest.mark.parametrize(
    "text, msg",
    [
        ("{a} [is|may be", "unclosed"),
        ("{a} is] x", "unexpected"),
        ("{a} (is|may) x", "optional"),
        ("{c} is", "bad slot"),
        ("{a:plural} is", "bad slot"),
    ],
)
def test_syntax_errors_name_file_template_and_field(tmp_path, text, msg):
    f = tmp_path / "06.json"
    obj = json.loads(
        (Path(inflect_en.__file__).parent / "shipped_templates" / "06.json").read_text()
    )
    obj["templates"][1]["text"] = text
    f.write_text(json.dumps(obj))
    with pytest.raises(DataError) as e:
        load_templates(tmp_path)
    assert msg in str(e.value) and str(f) in str(e.value)
    assert "template 2" in str(e.value) and "'text'" in str(e.value)


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda o: o["templates"][0].update(negation_type="negated"), "negation_type"),
        (lambda o: o["templates"][0].update(semantic_type="analytic"), "negation_type"),
        (lambda o: o["templates"][0].pop("text"), "text"),
        (lambda o: o["templates"][1].update(id=1), "id"),
        (lambda o: o["truth"]["negation"].pop("Distractor"), "truth.negation"),
        (lambda o: o.update(distractors=[{"kind": "Distractor", "replaces": "c"}]), "distractors"),
        (lambda o: o["templates"][0].update(text="no slot here"), "text"),
        (lambda o: o["templates"][0].update(truth={"Input": "yes"}), "truth"),
    ],
)
def test_bad_fields(tmp_path, edit, field):
    obj = json.loads(
        (Path(inflect_en.__file__).parent / "shipped_templates" / "06.json").read_text()
    )
    edit(obj)
    (tmp_path / "06.json").write_text(json.dumps(obj))
    with pytest.raises(DataError) as e:
        load_templates(tmp_path)
    assert f"field '{field}'" in str(e.value)


def test_bad_json_and_missing_folder(tmp_path):
    (tmp_path / "01.json").write_text("{not json")
    with pytest.raises(DataError, match="not valid JSON"):
        load_templates(tmp_path)
    with pytest.raises(NegbenchError, match="does not exist"):
        load_templates(tmp_path / "nope")
    (tmp_path / "01.json").unlink()
    with pytest.raises(NegbenchError, match="no \\*.json"):
        load_templates(tmp_path)


# -- morphology ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "word, want",
    [
        ("person", "persons"),
        ("box", "boxes"),
        ("radio", "radioes"),
        ("series", "serieses"),
        ("lobby", "lobbies"),
        ("day", "days"),
        ("human body", "human bodies"),
        ("foot", "feet"),
        ("calf", "calves"),
        ("gas", "gas"),
        ("church", "churches"),
        ("cattle", "cattles"),
    ],
)
def test_plural(word, want):
    assert plural(word, EXC) == want


@pytest.mark.parametrize(
    "word, want",
    [
        ("rule", "ruling"),
        ("call", "calling"),
        ("die", "dying"),
        ("see", "seeing"),
        ("run", "running"),
        ("take off", "taking off"),
        ("lie", "lying"),
        ("play", "playing"),
        ("be", "being"),
    ],
)
def test_gerund(word, want):
    assert gerund(word, EXC) == want


@pytest.mark.parametrize(
    "word, want",
    [
        ("hour", "an"),
        ("honour", "an"),
        ("heir", "an"),
        ("unit", "a"),
        ("union", "a"),
        ("use", "a"),
        ("user", "a"),
        ("umbrella", "an"),
        ("uncle", "an"),
        ("apple", "an"),
        ("book", "a"),
        ("X-ray", "an"),
        ("one", "a"),
        ("euro", "a"),
        ("interaction", "an"),
    ],
)
def test_article(word, want):
    assert article(word) == want


def test_exception_files_read_backwards():
    exc = parse_exc("gas gas\ngasses gas\nbeeves beef\nattorneys_general attorney_general\n")
    assert exc == {"gas": "gas", "beef": "beeves", "attorney general": "attorneys general"}
    assert parse_exc("dying die\nran run\nrunning run\n", "ing") == {
        "die": "dying",
        "run": "running",
    }


def test_exceptions_from_a_wndb_folder(tmp_path):
    (tmp_path / "noun.exc").write_text("mice mouse\n")
    (tmp_path / "verb.exc").write_text("ran run\nrunning run\n")
    exc = inflect_en.exceptions_from(tmp_path)
    assert plural("mouse", exc) == "mice" and gerund("run", exc) == "running"
    assert inflect_en.exceptions_from(tmp_path / "absent") == Exceptions()


def test_gloss_as_the_release_uses_it():
    assert gloss("(computer science) written programs; software for short") == "written programs"
    assert (
        gloss("a person who is subjected to procedures; someone who is an object")
        == "a person who is subjected to procedures"
    )


# -- instantiation -------------------------------------------------------------------------------
def test_instantiate_pattern_06_as_in_the_paper():
    ts = load_templates()
    out = instantiate(PART, ts, EXC)
    got = [(g.template, g.kind, g.label, g.sentence) for g in out]
    assert got[:4] == [
        ("1-1", "Input", True, "A week is commonly part of a month."),
        ("1-1", "Distractor", False, "A week is commonly part of a fence."),
        ("1-2", "Input", True, "A week may be part of a month."),
        ("1-2", "Distractor", False, "A week may be part of a fence."),
    ]
    assert ("2-1", "Input", False, "A week is never part of a month.") in got
    assert ("2-1", "Distractor", True, "A week is never part of a fence.") in got
    assert ("3-1", "Input", True, "Weeks are commonly part of months.") in got
    assert len(out) == ts[6].sentences_per_block
    assert {g.negation_type for g in out if g.template.startswith("2-")} == {"non_verbal"}


def test_instantiate_gloss_patterns_and_label_overrides():
    ts = load_templates()
    flight = Term(
        "flight",
        "00302394-n",
        'a scheduled trip by plane between designated airports; "I took the 10 o\'clock flight"',
        sense=9,
    )
    troop = Term("troop", "08213424-n", "(military) a group of soldiers", sense=1)
    out = instantiate(_triple(1, "variant", flight, flight, troop), ts, EXC)
    sents = {(g.template, g.kind): (g.label, g.sentence) for g in out}
    assert sents[("1-1", "Input")] == (
        True,
        "A flight is commonly a scheduled trip by plane between designated airports.",
    )
    assert sents[("1-2", "Distractor")] == (False, "A flight is a group of soldiers.")
    assert sents[("2-1", "Distractor")] == (True, "A flight is not a group of soldiers.")
    path, route = Term("path", "1-n"), Term("route", "2-n")
    out = instantiate(_triple(3, "synset", path, route, Term("engine"), Term("identity")), ts, EXC)
    sents = {(g.template, g.kind): (g.label, g.sentence) for g in out}
    assert sents[("3-1", "Input")] == (False, "Path and route are always different.")
    assert sents[("3-2", "Distractor-1")] == (True, "Engine and route may be always different.")
    assert sents[("3-1", "Distractor-2")] == (True, "Path and identity are always different.")
    assert sents[("1-1", "Input")] == (True, "Path and route are synonyms in certain contexts.")


def test_instantiate_errors():
    ts = load_templates()
    with pytest.raises(NegbenchError, match="expect 1 distractor"):
        instantiate(_triple(6, "wn_part", MONTH, WEEK), ts, EXC)
    with pytest.raises(NegbenchError, match="gloss"):
        instantiate(_triple(1, "variant", WEEK, WEEK, FENCE), ts, EXC)
    with pytest.raises(NegbenchError, match="no templates for pattern #06"):
        instantiate(PART, {1: ts[1]}, EXC)


# -- output formats -----------------------------------------------------------------------------
def _blocks(ts):
    calf, cattle, chan = Term("calf", "1-n"), Term("cattle", "2-n"), Term("channel")
    trs = [
        PART,
        _triple(6, "wn_part", Term("foot", "3-n"), Term("toe", "4-n"), Term("gas")),
        _triple(8, "wn_member", cattle, calf, chan),
    ]
    return [raw_block(t, instantiate(t, ts, EXC)) for t in trs]


def test_write_raw_round_trip(tmp_path):
    ts = load_templates()
    blocks = _blocks(ts)
    paths = write_raw(tmp_path, blocks)
    assert [p.name for p in paths] == ["#06.Pattern.txt", "#08.Pattern.txt"]
    text = paths[0].read_text()
    assert text.startswith(
        "% Test 000001\tSource: wn_part(15209413-n month_1,15169248-n week_1)"
        "\tDistractor: fence [03327234-n]\n\n1-1\taffirmation\tnone\tnone\t"
        "Input     \tT\tA week is commonly part of a month.\n"
    )
    parsed, sents = parse_pattern_text(text, 6, str(paths[0]))
    assert [b.source for b in parsed] == [b.source for b in blocks[:2]]
    assert [b.distractors for b in parsed] == [b.distractors for b in blocks[:2]]
    want = [
        (
            g.template,
            g.negation_type,
            g.semantic_type,
            g.syntactic_scope,
            int(g.is_distractor),
            g.label,
            g.sentence,
        )
        for b in blocks[:2]
        for g in b.sentences
    ]
    assert [
        (
            s.template,
            s.negation_type,
            s.semantic_type,
            s.syntactic_scope,
            s.distractor,
            s.label,
            s.sentence,
        )
        for s in sents
    ] == want
    mtime = paths[0].stat().st_mtime_ns
    write_raw(tmp_path, blocks)  # same content: untouched
    assert paths[0].stat().st_mtime_ns == mtime


def test_write_jsonl_hub_fields(tmp_path):
    blocks = _blocks(load_templates())
    p = write_jsonl(tmp_path / "notadataset.jsonl", blocks)
    rows = [json.loads(x) for x in p.read_text().splitlines()]
    assert len(rows) == sum(len(b.sentences) for b in blocks)
    assert set(rows[0]) == {
        "pattern_id",
        "pattern",
        "test_id",
        "negation_type",
        "semantic_type",
        "syntactic_scope",
        "isDistractor",
        "label",
        "sentence",
    }
    recs = [parse_hub_record(r, str(p), str(i)) for i, r in enumerate(rows)]
    assert [r.block for r in recs][:1] == ["t0"] and recs[-1].block == "t2"
    assert recs[1].is_distractor and not recs[1].label and recs[1].sentence.endswith("of a fence.")


# -- recovery ------------------------------------------------------------------------------------
def _release(blocks) -> tuple[Release, dict]:
    text = {}
    for b in blocks:
        text.setdefault(b.pattern_id, []).append(b)
    allb, alls = {}, []
    for pid, bl in text.items():
        parsed, sents = parse_pattern_text(raw_text(bl), pid, f"#{pid:02d}")
        allb.update((x.key, x) for x in parsed)
        alls += sents
    return Release(alls, allb, "in-test"), allb


def test_recover_templates_inverts_instantiate(tmp_path):
    ts = load_templates()
    terms = [
        ("week", "month", "fence"),
        ("foot", "toe", "gas"),
        ("hour", "day", "union"),
        ("human body", "person", "box"),
    ]
    trs = [
        _triple(6, "wn_part", Term(w, f"{i}-n"), Term(p, f"{i + 9}-n"), Term(d))
        for i, (p, w, d) in enumerate(terms)
    ]
    blocks = [raw_block(t, instantiate(t, ts, EXC)) for t in trs]
    release, allb = _release(blocks)
    rec = recover_templates(release, dict(zip(allb, trs)), EXC, details=True)
    got = rec.templates[6]
    assert [t.variants for t in got.templates] == [t.variants for t in ts[6].templates]
    assert got.distractors == ts[6].distractors and got.relation == "wn_part"
    assert {p: dict(v) for p, v in got.truth.items()} == {
        p: dict(v) for p, v in ts[6].truth.items()
    }
    assert rec.agreement[6] == 1.0
    # what we recover regenerates every sentence, and survives a write/load round trip
    write_templates(tmp_path, rec.templates)
    again = load_templates(tmp_path)
    for t, b in zip(trs, blocks):
        assert instantiate(t, again, EXC) == list(b.sentences)


def test_recover_keeps_per_template_truth_and_gloss_slots():
    ts = load_templates()
    trs = [
        _triple(
            3, "synset", Term("path", "1-n"), Term("route", "2-n"), Term("engine"), Term("identity")
        ),
        _triple(
            3, "synset", Term("crime", "3-n"), Term("offence", "4-n"), Term("folk"), Term("title")
        ),
    ]
    food = Term("food", "5-n", "any substance that can be metabolized")
    trs.append(_triple(1, "variant", food, food, Term("few", "6-n", "a small elite group")))
    blocks = [raw_block(t, instantiate(t, ts, EXC)) for t in trs]
    release, allb = _release(blocks)
    rec = recover_templates(release, dict(zip(allb, trs)), EXC)
    assert rec[3].templates[2].truth == {"Input": False, "Distractor-1": True, "Distractor-2": True}
    assert rec[1].distractors == (("Distractor", "b"),)
    assert rec[1].templates[0].variants == ("{a:a} is commonly {b:gloss}.", "{a:a} is {b:gloss}.")
    for t, b in zip(trs, blocks):
        assert instantiate(t, rec, EXC) == list(b.sentences)


# -- the real release ------------------------------------------------------------------------------
RELEASE = SHARED / "data" / "not-a-dataset" / "data" / "This-is-not-a-dataset_RAW_DATA.zip"


@pytest.fixture(scope="module")
def real_release():
    if not RELEASE.is_file():
        pytest.skip(f"raw release not found at {RELEASE}")
    if not Path(os.environ.get("NEGBENCH_WORDNET", "/usr/share/wordnet"), "noun.exc").is_file():
        pytest.skip("WordNet 3.0 not installed (apt-get install wordnet-base)")
    from negbench.tasks.notadataset.tasks import read_raw

    return read_raw(RELEASE)


@pytest.mark.slow
@pytest.mark.parametrize("pid, bound", [(2, 1.0), (8, 1.0), (6, 1.0), (10, 1.0)])
def test_recovery_regenerates_the_release(real_release, pid, bound):
    """Recovered templates on the release's own triples give back its sentences exactly
    (measured by benchmarks/notadataset_templates.py: 100% for #02, #06, #08, #10)."""
    from negbench.tasks.notadataset.build.templates import _triples_by_block

    full = real_release
    keep = {k: b for k, b in full.blocks.items() if b.pattern_id == pid}
    release = Release([s for s in full.sentences if s.block in keep], keep, full.source)
    triples = _triples_by_block(release)
    rec = recover_templates(release, triples)
    exact = total = 0
    kinds = {0: "Input"}
    by_block: dict[str, list] = {}
    for s in release.sentences:
        by_block.setdefault(s.block, []).append(s)
    for key, sents in by_block.items():
        gen = {(g.template, g.kind): g for g in instantiate(triples[key], rec)}
        hk = [k for k, _ in keep[key].distractors]
        assert len(gen) == len(sents)
        for s in sents:
            g = gen.get((s.template, kinds.get(s.distractor) or hk[s.distractor - 1]))
            exact += g is not None and g.sentence == s.sentence and g.label == s.label
            total += 1
    assert exact / total >= bound


def test_release_definition_and_glosses():
    from negbench.tasks.notadataset.build.templates import release_definition, with_release_glosses

    assert (
        release_definition("female of domestic cattle:", ("`moo-cow' is a child's term", "x"))
        == "female of domestic cattle: \"`moo-cow' is a child's term\""
    )
    assert release_definition("a scheduled trip", ("I took the flight",)) == "a scheduled trip"

    class FakeWN:  # the two calls with_release_glosses makes
        def has(self, off):
            return off == "1-n"

        def synset(self, off):
            from types import SimpleNamespace

            return SimpleNamespace(definition="a range:", examples=("the range of a jet",))

    cow = Term("range", "1-n", "a range:")
    t = with_release_glosses(_triple(1, "variant", cow, cow, Term("few", "2-n", "few:")), FakeWN())
    assert t.a.definition == t.b.definition == 'a range: "the range of a jet"'
    assert t.distractors[0].definition == "few:"  # not in this WordNet: kept
    assert with_release_glosses(t, None) is t


def test_recovery_refuses_the_jsonl_release():
    rel = Release(
        [
            parse_hub_record(
                {
                    "pattern_id": 6,
                    "pattern": "Part",
                    "test_id": 1,
                    "negation_type": "affirmation",
                    "semantic_type": "none",
                    "syntactic_scope": "none",
                    "isDistractor": False,
                    "label": True,
                    "sentence": "A week is part of a month.",
                },
                "x.jsonl",
                "1",
            )
        ],
        {},
        "x.jsonl",
    )
    from negbench.tasks.notadataset.tasks import Block

    rel.blocks["t1"] = Block("t1", 6, "", (), 1)
    with pytest.raises(NegbenchError, match="needs the raw release"):
        recover_templates(rel)


def test_factor_variants_inverts_expand():
    from negbench.tasks.notadataset.build.templates import factor_variants

    for pt in load_templates().values():
        for t in pt.templates:
            assert factor_variants(t.variants) == t.text
    vs = ("{a} is here [x].", "{a} is there.")
    assert expand(factor_variants(vs)) == vs
    assert factor_variants(("{a} b.", "{a} c.", "{a} d.")) == "{a} [b|c|d]."
    assert factor_variants(("{a} is x.", "{a} is x.")) is None  # not a template's expansion
