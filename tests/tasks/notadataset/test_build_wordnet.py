"""The WordNet half of ``negbench build notadataset``: the wndb reader, triple extraction,
seeded distractors, the release's own triples and the command's validation.

Fast tests run on a tiny WordNet written here (byte offsets computed by the test); the slow ones
use Debian's wordnet-base at /usr/share/wordnet and skip without it."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

import negbench.tasks.notadataset.build.triples as T
from negbench.tasks.notadataset.build.wordnet import (
    LEXNAMES,
    open_wordnet,
    parse_data_line,
    split_gloss,
)
from negbench.errors import NegbenchError

LICENSE = "  1 This tiny database was written for negbench's tests.\n  2 \n"

# key: (pos, lexname, words, pointers [(symbol, target key, source word, target word)], gloss)
NOUNS = {
    "entity": ("noun.Tops", ["entity"], [], "that which exists"),
    "person": (
        "noun.person",
        ["person", "individual"],
        [("@", "entity", 0, 0), ("%p", "character", 0, 0)],
        'a human being; "a nice person"',
    ),
    "character": (
        "noun.attribute",
        ["character"],
        [("#p", "person", 0, 0), ("@", "entity", 0, 0)],
        "the traits of a person",
    ),
    "animal": (
        "noun.animal",
        ["animal", "beast"],
        [("@", "entity", 0, 0)],
        "a living thing that moves",
    ),
    "bird": (
        "noun.animal",
        ["bird"],
        [("@", "animal", 0, 0), ("%p", "beak", 0, 0)],
        'a warm-blooded egg-laying vertebrate; "birds sing"; "a bird flew"',
    ),
    "beak": (
        "noun.animal",
        ["beak", "bill"],
        [("#p", "bird", 0, 0), ("@", "entity", 0, 0)],
        "horny projecting mouth of a bird",
    ),
    "income": (
        "noun.possession",
        ["income"],
        [("!", "expense", 1, 2), ("@", "entity", 0, 0)],
        "the financial gain that accrues",
    ),
    "expense": (
        "noun.possession",
        ["outgo", "expenditure"],
        [("!", "income", 2, 1), ("@", "entity", 0, 0)],
        "money paid out",
    ),
    "wood": (
        "noun.substance",
        ["wood"],
        [("@", "entity", 0, 0)],
        "the hard fibrous substance of trees",
    ),
    "water": (
        "noun.substance",
        ["water", "H2O"],
        [("%s", "hydrogen", 0, 0), ("@", "entity", 0, 0)],
        "binary compound that occurs at room temperature as a clear liquid",
    ),
    "hydrogen": (
        "noun.substance",
        ["hydrogen"],
        [("#s", "water", 0, 0), ("@", "entity", 0, 0)],
        "a nonmetallic univalent element",
    ),
    "people": (
        "noun.group",
        ["people"],
        [("%m", "person", 0, 0), ("@", "entity", 0, 0)],
        "(plural) any group of human beings",
    ),
    "flock": (
        "noun.group",
        ["flock"],
        [("%m", "wood", 0, 0), ("@", "entity", 0, 0)],
        "a made-up group",
    ),
    "teacher": (
        "noun.person",
        ["teacher", "instructor"],
        [("@", "person", 0, 0), ("+", "teach", 1, 1)],
        "a person whose occupation is teaching",
    ),
    "kettle": (
        "noun.artifact",
        ["kettle", "boiler"],
        [("+", "boil", 2, 1), ("@", "entity", 0, 0)],
        "a metal pot for stewing or boiling",
    ),
    "song": (
        "noun.communication",
        ["song"],
        [("@", "entity", 0, 0), ("+", "sing", 1, 1)],
        "a short musical composition",
    ),
    "bill_money": (
        "noun.communication",
        ["bill", "account"],
        [("@", "entity", 0, 0)],
        "an itemized statement of money owed",
    ),
}
VERBS = {
    "teach": (
        "verb.communication",
        ["teach"],
        [("+", "teacher", 1, 1)],
        "impart skills or knowledge",
    ),
    "boil": ("verb.change", ["boil"], [("+", "kettle", 1, 2)], "come to the boiling point"),
    "sing": ("verb.communication", ["sing"], [("+", "song", 1, 1)], "deliver by singing"),
}
TAGS = {
    "person": 50,
    "bird": 20,
    "beak": 3,
    "income": 9,
    "expense": 4,
    "wood": 12,
    "water": 30,
    "hydrogen": 2,
    "people": 40,
    "teacher": 15,
    "kettle": 2,
    "song": 8,
    "animal": 25,
    "teach": 10,
    "boil": 5,
    "sing": 7,
    "character": 6,
    "flock": 1,
    "bill_money": 9,
}


def _data_lines(specs: dict, pos: str, offsets: dict) -> list[str]:
    out = []
    for key, (lexname, words, ptrs, gloss) in specs.items():
        ws = " ".join(f"{w.replace(' ', '_')} 0" for w in words)
        ps = " ".join(
            f"{sym} {offsets.get(t, 0):08d} {'v' if t in VERBS else 'n'} {sw:02x}{tw:02x}"
            for sym, t, sw, tw in ptrs
        )
        frames = " 01 + 02 00" if pos == "v" else ""
        out.append(
            f"{offsets.get(key, 0):08d} {LEXNAMES.index(lexname):02d} {pos} {len(words):02x} {ws} "
            f"{len(ptrs):03d} {ps}{frames} | {gloss}  \n"
        )
    return out


def write_wndb(folder: Path) -> dict[str, str]:
    """Write data/index files for NOUNS and VERBS; returns key -> "00001234-n"."""
    folder.mkdir(parents=True, exist_ok=True)
    offsets: dict[str, int] = {}
    for specs, pos in ((NOUNS, "n"), (VERBS, "v")):  # offsets: byte position of each line
        at = len(LICENSE.encode())
        for key, line in zip(specs, _data_lines(specs, pos, {})):
            offsets[key] = at
            at += len(line.encode())
    index: dict[tuple[str, str], list[str]] = {}
    for specs, pos, name in ((NOUNS, "n", "noun"), (VERBS, "v", "verb")):
        lines = _data_lines(specs, pos, offsets)
        text = LICENSE + "".join(lines)
        (folder / f"data.{name}").write_text(text, encoding="utf-8")
        for key, line in zip(specs, lines):
            assert text.encode()[offsets[key] :].startswith(line.encode())
            for w in specs[key][1]:
                index.setdefault((w.lower().replace(" ", "_"), pos), []).append(key)
    cnt = []
    for pos, name in (("n", "noun"), ("v", "verb")):
        rows = []
        for (lemma, p), keys in sorted(index.items()):
            if p != pos:
                continue
            keys = sorted(keys, key=lambda k: -TAGS.get(k, 0))  # sense order
            rows.append(
                f"{lemma} {pos} {len(keys)} 0 {len(keys)} 0 "
                + " ".join(f"{offsets[k]:08d}" for k in keys)
                + "  \n"
            )
            for n, k in enumerate(keys, 1):
                specs = NOUNS if pos == "n" else VERBS
                lex = LEXNAMES.index(specs[k][0])
                cnt.append(
                    f"{lemma}%{1 if pos == 'n' else 2}:{lex:02d}:00:: {n} {TAGS.get(k, 0)}\n"
                )
        (folder / f"index.{name}").write_text(LICENSE + "".join(rows), encoding="utf-8")
    (folder / "cntlist.rev").write_text("".join(sorted(cnt)), encoding="utf-8")
    (folder / "noun.exc").write_text("geese goose\n", encoding="utf-8")
    return {k: f"{offsets[k]:08d}-{'v' if k in VERBS else 'n'}" for k in offsets}


@pytest.fixture()
def tiny_wn(tmp_path, monkeypatch):
    ids = write_wndb(tmp_path / "wn")
    monkeypatch.setattr(T, "PERSON", ids["person"])  # the tiny WordNet's person / animal
    monkeypatch.setattr(T, "ANIMAL", ids["animal"])
    return open_wordnet(tmp_path / "wn"), ids


def all_senses(wn, ids) -> T.Resources:
    """Every sense of the tiny WordNet as 'core', no BLCs, links from derivation."""
    core = {"n": [], "v": []}
    for key, off in ids.items():
        s = wn.synset(off)
        core[s.pos] += [(w, off) for w in s.words]
    return T.Resources(core, frozenset(), T.morpho_from_derivation(wn))


# -- the reader ------------------------------------------------------------------------------------
def test_synset_fields_and_offsets(tiny_wn):
    wn, ids = tiny_wn
    s = wn.synset(ids["bird"])
    assert s.offset == ids["bird"] and s.pos == "n" and s.lexname == "noun.animal"
    assert s.words == ("bird",)
    assert s.definition == "a warm-blooded egg-laying vertebrate"
    assert s.examples == ("birds sing", "a bird flew")
    assert s.targets("%p") == [ids["beak"]] and s.targets("@") == [ids["animal"]]
    assert wn.synset(ids["teach"]).lexname == "verb.communication"
    assert wn.synset(ids["income"]).lexical("!") == [(1, ids["expense"], 2)]
    with pytest.raises(NegbenchError, match="no synset"):
        wn.synset("99999999-n")


def test_sense_numbers_lookup_and_counts(tiny_wn):
    wn, ids = tiny_wn
    # "bill": bill_money (9 tags) before beak (3) in our index's sense order
    assert wn.sense_number("bill", ids["bill_money"]) == 1
    assert wn.sense_number("bill", ids["beak"]) == 2
    assert [s.offset for s in wn.lookup("bills", "n")] == [ids["bill_money"], ids["beak"]]
    assert wn.tag_count("bill", ids["beak"]) == 3
    assert wn.synset_frequency(ids["beak"]) == 3 + 3  # beak and bill both counted
    with pytest.raises(NegbenchError):
        wn.sense_number("wood", ids["bird"])


def test_gloss_split_and_satellites():
    assert split_gloss('a human being; "there was too much for one person to do"') == (
        "a human being",
        ("there was too much for one person to do",),
    )
    assert split_gloss("no examples here") == ("no examples here", ())
    s = parse_data_line(
        '00001740 00 s 01 able(a) 0 001 & 00001000 a 0000 | having power; "able to swim"'
    )
    assert s.offset == "00001740-a" and s.words == ("able",) and s.lexname == "adj.all"


def test_open_wordnet_errors_and_search_order(tmp_path, monkeypatch):
    with pytest.raises(NegbenchError) as e:
        open_wordnet(tmp_path / "missing")
    assert (
        "apt-get install wordnet-base" in e.value.render()
        and str(tmp_path / "missing") in e.value.render()
    )
    write_wndb(tmp_path / "nltk" / "corpora" / "wordnet")
    monkeypatch.setenv("NLTK_DATA", str(tmp_path / "nltk"))
    monkeypatch.setenv("NEGBENCH_WORDNET", str(tmp_path / "nowhere"))
    found = open_wordnet()
    if not Path("/usr/share/wordnet/data.noun").is_file():
        assert found.path == tmp_path / "nltk" / "corpora" / "wordnet"
    write_wndb(tmp_path / "env")
    monkeypatch.setenv("NEGBENCH_WORDNET", str(tmp_path / "env"))
    assert open_wordnet().path == tmp_path / "env"


# -- triples ---------------------------------------------------------------------------------------
def _pairs(wn, res, p):
    return {(a.word, a.synset, b.word, b.synset) for a, b in T._pairs_for(wn, res, p)}


def test_relation_extraction(tiny_wn):
    wn, ids = tiny_wn
    res = all_senses(wn, ids)
    assert ("bird", ids["bird"], "beak", ids["beak"]) in _pairs(wn, res, 6)
    assert ("bird", ids["bird"], "bill", ids["beak"]) in _pairs(wn, res, 6)
    assert ("person", ids["person"], "character", ids["character"]) in _pairs(wn, res, 6)
    assert _pairs(wn, res, 7) == {
        ("water", ids["water"], "hydrogen", ids["hydrogen"]),
        ("H2O", ids["water"], "hydrogen", ids["hydrogen"]),
    }
    # member meronymy only where the member is a person or an animal (Top Ontology substitute)
    members = _pairs(wn, res, 8)
    assert ("people", ids["people"], "person", ids["person"]) in members
    assert not any(a == "flock" for a, *_ in members)
    # antonymy is synset-level and goes both ways, to every (core) word of the other synset
    ant = _pairs(wn, res, 2)
    assert ("income", ids["income"], "expenditure", ids["expense"]) in ant
    assert ("expenditure", ids["expense"], "income", ids["income"]) in ant
    assert ("outgo", ids["expense"], "income", ids["income"]) in ant
    assert _pairs(wn, res, 4) == ant
    hyp = _pairs(wn, res, 5)
    assert ("bird", ids["bird"], "animal", ids["animal"]) in hyp
    assert ("bird", ids["bird"], "beast", ids["animal"]) in hyp
    syn = _pairs(wn, res, 3)
    assert ("outgo", ids["expense"], "expenditure", ids["expense"]) in syn
    assert all(a != b and sa == sb for a, sa, b, sb in syn)
    assert ("teach", ids["teach"], "teacher", ids["teacher"]) in _pairs(wn, res, 9)
    assert ("boil", ids["boil"], "kettle", ids["kettle"]) in _pairs(wn, res, 10)
    assert ("sing", ids["sing"], "song", ids["song"]) in _pairs(wn, res, 11)
    assert not _pairs(wn, res, 11) & _pairs(wn, res, 10)


def test_blc_excludes_synonymy_and_hyponymy(tiny_wn):
    wn, ids = tiny_wn
    res = all_senses(wn, ids)
    res.blc = frozenset({ids["animal"]})
    assert not any(sb == ids["animal"] for *_, sb in _pairs(wn, res, 5))
    assert not any(sa == ids["animal"] for _, sa, _, _ in _pairs(wn, res, 1))


def test_person_or_animal_and_blc_substitute(tiny_wn):
    wn, ids = tiny_wn
    assert T.person_or_animal(wn, ids["teacher"]) and T.person_or_animal(wn, ids["bird"])
    assert not T.person_or_animal(wn, ids["kettle"]) and not T.person_or_animal(wn, ids["people"])
    blc = T.blc_synsets(wn, min_subsumed=3)
    assert ids["entity"] in blc and ids["bird"] not in blc


def _drawn(wn, ids, seed):
    res = all_senses(wn, ids)
    return T.extract(wn, res, T.PATTERNS, seed=seed)


def test_distractors_seeded_and_lexname_rule(tiny_wn):
    wn, ids = tiny_wn
    first, again = _drawn(wn, ids, 7), _drawn(wn, ids, 7)
    assert first == again and sum(len(v) for v in first.values()) > 0
    others = [_drawn(wn, ids, s) for s in range(8)]
    assert len({repr(o) for o in others}) > 1  # the seed matters
    pool = T.DistractorPool(wn, all_senses(wn, ids))
    n = 0
    for p, triples in first.items():
        for tr in triples:
            assert len(tr.distractors) == len(T.DISTRACTOR_SLOTS[p])
            for (slot, kind), d in zip(T.DISTRACTOR_SLOTS[p], tr.distractors):
                rep = tr.a if slot == "a" else tr.b
                avoid = {wn.synset(o).lexname for o in wn.index(rep.synset[-1])[rep.word.lower()]}
                if kind == "synset":
                    got = {wn.synset(d.synset).lexname}
                    assert d.definition == wn.synset(d.synset).definition
                else:
                    got = {wn.synset(o).lexname for o in d.synsets}
                    assert d.synsets == tuple(sorted(wn.index(rep.synset[-1])[d.word.lower()]))
                    assert d.word.lower() not in (tr.a.word.lower(), tr.b.word.lower())
                assert not (got & avoid), (tr.source, d)
                n += 1
    assert n > 10
    # limiting the number of triples does not change the distractors of the ones kept
    limited = T.extract(wn, all_senses(wn, ids), [5], seed=7, limit=1, pool=pool)
    assert limited[5] == first[5][:1]


def test_weights_follow_log_frequency(tiny_wn):
    wn, ids = tiny_wn
    pool = T.DistractorPool(wn, all_senses(wn, ids))
    term = T.Term("income", ids["income"], None, (), 1)
    rng = random.Random(0)
    counts: dict[str, int] = {}
    for _ in range(4000):
        d = pool.draw(rng, term, "word", set())
        counts[d.word] = counts.get(d.word, 0) + 1
    w = {c[0]: c[2] for c in pool.words["n"]}
    assert "income" not in counts and "outgo" not in counts  # same lexicographer file
    a, b = "person", "hydrogen"  # log(51) vs log(3)
    assert counts[a] / counts[b] == pytest.approx(w[a] / w[b], rel=0.25)


def test_headers_round_trip(tiny_wn):
    wn, ids = tiny_wn
    for text in (
        "whale [02062744-n,10129133-n]",
        "10668666-n [(subject,6),(case,7),(guinea pig,1)]",
    ):
        assert T.format_distractor(T.parse_distractor(text)) == text
    d = T.parse_distractor(f"{ids['wood']} [(wood,1)]", wn)
    assert d.definition == "the hard fibrous substance of trees" and d.word == "wood"
    rel, parts = T.parse_source("wn_part(00007846-n person_1,05217168-n human body_1)")
    assert rel == "wn_part" and parts[1] == ("05217168-n", "human body", 1)
    with pytest.raises(NegbenchError, match="Source"):
        T.parse_source("part of something")


def test_triples_from_release(tiny_wn):
    from negbench.tasks.notadataset.tasks import Block, Release

    wn, ids = tiny_wn
    blocks = {
        "p01.b1": Block(
            "p01.b1",
            1,
            f"variant({ids['bird']} bird_1)",
            (("Distractor", f"{ids['wood']} [(wood,1)]"),),
            2,
        ),
        "p06.b1": Block(
            "p06.b1",
            6,
            f"wn_part({ids['bird']} bird_1,{ids['beak']} bill_2)",
            (("Distractor", f"song [{ids['song']}]"),),
            2,
        ),
    }
    ts = T.triples_from_release(Release([], blocks, "mem"), wn)
    assert [t.pattern_id for t in ts] == [1, 6]
    v, p = ts
    assert v.a == v.b and v.a.definition == "a warm-blooded egg-laying vertebrate"
    assert v.distractors[0].definition == "the hard fibrous substance of trees"
    assert (p.a.word, p.b.word, p.b.sense) == ("bird", "bill", 2)
    assert p.distractors[0] == T.Term("song", None, None, (ids["song"],))
    assert p.distractor_headers() == blocks["p06.b1"].distractors
    assert T.is_real_relation(wn, "wn_part", p.a.synset, "bird", p.b.synset, "bill")
    assert not T.is_real_relation(wn, "wn_part", p.b.synset, "bill", p.a.synset, "bird")
    assert T.is_real_relation(wn, "ant", ids["expense"], "outgo", ids["income"], "income")


def test_core_and_morphosemantic_files(tiny_wn, tmp_path):
    wn, ids = tiny_wn
    core = tmp_path / "core.txt"
    core.write_text(
        "n [bird] bird%1:05:00:: bird\nv [teach] teach%2:32:00:: teach\nn [nope] nope%1:05:00::\n"
    )
    c = T.load_core(wn, str(core))
    assert c["n"] == [("bird", ids["bird"])] and c["v"] == [("teach", ids["teach"])]
    ms = tmp_path / "ms.csv"
    ms.write_text(
        "verb,relation,noun\nteach%2:32:00::,agent,teacher%1:18:00::\n"
        "boil%2:30:00::,instrument,kettle%1:06:00::\n"
    )
    m = T.load_morphosemantic(wn, str(ms))
    assert m["agent"] == {(ids["teach"], ids["teacher"])} and m["instrument"] == {
        (ids["boil"], ids["kettle"])
    }
    xls = tmp_path / "m.xls"
    xls.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 64)
    with pytest.raises(NegbenchError, match="CSV"):
        T.load_morphosemantic(wn, str(xls))
    with pytest.raises(NegbenchError, match="not found"):
        T.load_core(wn, str(tmp_path / "absent.txt"))


# -- the command -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv, message",
    [
        (["--patterns", "1,12"], "not a pattern number"),
        (["--patterns", "one"], "not a pattern number"),
        (["--lang", "ko"], "only English"),
        (["--limit", "0"], "--limit"),
        (["--wordnet", "MISSING"], "WordNet 3.0 database not found"),
        (["--core", "MISSING"], "--core: file not found"),
    ],
)
def test_cli_validation_writes_nothing(tmp_path, capsys, argv, message):
    from negbench.cli import main

    out = tmp_path / "out"
    argv = [str(tmp_path / "missing") if a == "MISSING" else a for a in argv]
    rc = main(["build", "notadataset", "--out", str(out)] + argv)
    assert rc != 0
    assert message in capsys.readouterr().err
    assert not out.exists()


def _tiny_templates(folder: Path) -> None:
    import negbench.tasks.notadataset.build.templates as TP

    truth = {
        "affirmation": {"Input": True, "Distractor": False},
        "negation": {"Input": False, "Distractor": True},
    }
    pts = {}
    for pid, aff, neg in (
        (5, "{a:pl} are {b:pl}.", "{a:pl} are never {b:pl}."),
        (6, "{b:pl} are part of {a:pl}.", "{b:pl} are never part of {a:pl}."),
    ):
        temps = (
            TP.Template(1, "affirmation", "none", "none", (aff,)),
            TP.Template(2, "verbal", "analytic", "clausal", (neg,)),
        )
        pts[pid] = TP.PatternTemplates(pid, T.RELATION[pid], (("Distractor", "a"),), truth, temps)
    TP.write_templates(folder, pts)


def test_cli_builds_loadable_output_and_rerun_is_noop(tmp_path, capsys, monkeypatch):
    from negbench.cli import main
    from negbench.tasks.notadataset.tasks import load_release

    write_wndb(tmp_path / "wn")
    _tiny_templates(tmp_path / "tpl")
    out = tmp_path / "out"
    argv = [
        "build",
        "notadataset",
        "--wordnet",
        str(tmp_path / "wn"),
        "--templates",
        str(tmp_path / "tpl"),
        "--patterns",
        "5,6",
        "--seed",
        "3",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    rel = load_release(str(out / "raw"))
    assert {b.pattern_id for b in rel.blocks.values()} == {5, 6}
    assert len(rel.sentences) == 4 * len(rel.blocks)
    true6 = {
        x.sentence for x in rel.sentences if x.pattern_id == 6 and x.distractor == 0 and x.label
    }
    wholes = {"bird": ("beak", "bill"), "person": ("character",), "individual": ("character",)}
    assert true6 and true6 <= {
        f"{p.capitalize()}s are part of {w}s." for w, ps in wholes.items() for p in ps
    }
    import json

    man = json.loads((out / "manifest.json").read_text())
    assert man["seed"] == 3 and man["patterns"] == [5, 6] and len(man["wordnet"]["sha256"]) == 64
    assert man["counts"]["06"]["triples"] == sum(b.pattern_id == 6 for b in rel.blocks.values())
    stamps = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    assert main(argv) == 0
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == stamps


# -- the real WordNet (slow) -------------------------------------------------------------------
REAL = Path(os.environ.get("NEGBENCH_WORDNET") or "/usr/share/wordnet")


@pytest.mark.slow
def test_known_triples_of_the_paper_in_wordnet_30():
    if not (REAL / "data.noun").is_file():
        pytest.skip(f"WordNet 3.0 not installed at {REAL} (apt-get install wordnet-base)")
    wn = open_wordnet(REAL)
    bird = wn.index("n")["bird"][0]
    bill = wn.index("n")["bill"][9]  # bill_n^10 (§3.2)
    assert wn.synset(bill).definition == "horny projecting mouth of a bird"
    assert wn.sense_number("bill", bill) == 10 and wn.synset(bird).lexname == "noun.animal"
    assert T.is_real_relation(wn, "wn_part", bird, "bird", bill, "bill")
    income, expenditure = wn.index("n")["income"][0], wn.index("n")["expenditure"][0]
    assert T.is_real_relation(wn, "ant", expenditure, "expenditure", income, "income")
    # App. C: wood is a legal distractor for expenditure, registration is not
    pool = T.DistractorPool.__new__(T.DistractorPool)
    pool.wn = wn
    exp = T.Term("expenditure", expenditure, None, (), 1)
    avoid = pool.word_mask(exp)
    assert {wn.synset(o).lexname for o in wn.index("n")["expenditure"]} == {
        "noun.possession",
        "noun.act",
    }
    assert not pool.mask(wn.index("n")["wood"]) & avoid
    assert pool.mask(wn.index("n")["registration"]) & avoid
    # the extractor finds the paper's part triple once bill_10 and bird_1 are core senses
    res = T.Resources(
        {"n": [("bird", bird), ("bill", bill), ("wood", wn.index("n")["wood"][0])], "v": []},
        frozenset(),
        {},
    )
    pairs = {(a.word, a.sense, b.word, b.sense) for a, b in T._pairs_for(wn, res, 6)}
    assert ("bird", 1, "bill", 10) in pairs


def test_cli_refuses_templates_that_replace_another_slot(tmp_path, capsys):
    import negbench.tasks.notadataset.build.templates as TP
    from negbench.cli import main

    write_wndb(tmp_path / "wn")
    truth = {
        "affirmation": {"Input": True, "Distractor": False},
        "negation": {"Input": False, "Distractor": True},
    }
    temps = (TP.Template(1, "affirmation", "none", "none", ("{a:pl} are {b:pl}.",)),)
    TP.write_templates(
        tmp_path / "tpl", {5: TP.PatternTemplates(5, "hyp", (("Distractor", "b"),), truth, temps)}
    )
    out = tmp_path / "out"
    rc = main(
        [
            "build",
            "notadataset",
            "--wordnet",
            str(tmp_path / "wn"),
            "--templates",
            str(tmp_path / "tpl"),
            "--patterns",
            "5",
            "--out",
            str(out),
        ]
    )
    assert rc != 0 and "replace ['b']" in capsys.readouterr().err
    assert not out.exists()
