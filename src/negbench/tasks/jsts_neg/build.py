"""JSTS-Neg construction (Yuasa et al., §3.2–3.3) from JGLUE JSTS, by the JNLI-Neg method.

Stages of one split (each written atomically under ``OUT/work/<split>/`` with a ``.meta.json``
holding the settings it was made with; a rerun with the same settings reuses it)::

    candidates   every JSTS pair: cues already present (neg(s)), one-cue candidates per sentence
    selected     JSTS pairs in a seeded random order, from the top: skip pairs with a cue or
                 without candidates, judge the candidates (LLM, Figure 2; answers cached), keep
                 pairs with ≥ 1 well-formed candidate on each side, until more than ``target``
                 new instances (|S'1| + |S'2| + |S'1|·|S'2|) exist
    pairs        D_orig ∪ D1 ∪ D2 ∪ D12 in the release schema, gold_score null → annotation
    jsts-neg     after importing three annotators: gold = median score, Fleiss' kappa

Ids are stable: groups sorted by JSTS ``sentence_pair_id`` (numerically), inside a group the
original, then D1, D2, D12 in candidate order, exactly as JNLI-Neg numbers its release.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from negbench.tasks.jsts_neg import ja_negation as ja
from negbench.scoring.agreement import fleiss_kappa
from negbench.errors import DataError
from negbench.records import iter_jsonl, read_text
from negbench.tasks.data_source import DataSource
from negbench.files import file_sha256, read_jsonl, write_json, write_jsonl
from negbench.scoring.registry import OpenModel

SPLITS = ("train", "valid", "test")
#: §3.3: instances were created until their number exceeded these counts.
PAPER_TARGETS = {"train": 4000, "valid": 1000, "test": 1000}
#: JNLI-Neg's sampling seed (``annotation_sampling_random_seed``); JSTS-Neg's is not published.
DEFAULT_SEED = 0
SCORES = (0, 1, 2, 3, 4, 5)
TYPES = ("original", "s1_neg", "s2_neg", "both_neg")
#: bump when the cue rules change: stage files made by older rules are then rebuilt
RULES_VERSION = 1
INHOUSE_DIR = Path(__file__).resolve().parent / "inhouse"
INHOUSE_ANNOTATOR = "negbench-dev-1"
INHOUSE_NOTE = (
    "In-house JSTS-Neg-style data built by negbench from JGLUE JSTS v1.3 with a single "
    "annotator (negbench-dev-1). NOT the official JSTS-Neg release (Yuasa et al.), "
    "whose gold scores are medians of three annotators."
)


# -- JSTS input ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class JstsPair:
    sentence_pair_id: str
    sentence1: str
    sentence2: str
    label: float


#: JGLUE JSTS v1.3, the source of JSTS-Neg (:mod:`negbench.tasks.data_source`).
JSTS_DATA = DataSource("JGLUE JSTS", None, "jsts")


def default_jsts_dir() -> Path:
    """``$NEGBENCH_DATA/jsts`` when set, else ``../shared/data/jsts`` next to the working
    directory."""
    return Path(JSTS_DATA.resolve())


def jsts_file(jsts_dir: str | Path, split: str) -> Path:
    """The JSTS v1.3 file of ``split`` inside a JGLUE checkout, its ``datasets`` folder, or a
    folder holding the files themselves."""
    if split not in SPLITS:
        raise DataError(
            f"unknown JSTS split '{split}'",
            path=str(jsts_dir),
            fix=f"use one of {', '.join(SPLITS)}",
        )
    d = Path(jsts_dir)
    for sub in (".", "jsts-v1.3", "datasets/jsts-v1.3"):
        p = d / sub / f"{split}-v1.3.json"
        if p.is_file():
            return p
    raise DataError(
        f"JSTS {split} file not found",
        path=str(d / f"{split}-v1.3.json"),
        fix="pass --jsts pointing at JGLUE's datasets/jsts-v1.3 (or set NEGBENCH_DATA "
        "to the folder holding jsts/)",
    )


def load_jsts(jsts_dir: str | Path, split: str) -> list[JstsPair]:
    path = jsts_file(jsts_dir, split)
    out: list[JstsPair] = []
    seen: set[str] = set()
    for n, r in iter_jsonl(path):
        for k in ("sentence_pair_id", "sentence1", "sentence2", "label"):
            if k not in r:
                raise DataError(
                    f"missing field '{k}'",
                    path=str(path),
                    record=f"line {n}",
                    field=k,
                    fix="JSTS records have sentence_pair_id, sentence1, sentence2, label",
                )
        for k in ("sentence1", "sentence2"):
            if not isinstance(r[k], str) or not r[k].strip():
                raise DataError(
                    "empty or non-string sentence", path=str(path), record=f"line {n}", field=k
                )
        sid = str(r["sentence_pair_id"])
        if not sid.isdigit():
            raise DataError(
                f"sentence_pair_id {sid!r} is not a non-negative integer",
                path=str(path),
                record=f"line {n}",
                field="sentence_pair_id",
            )
        if sid in seen:
            raise DataError(
                f"duplicate sentence_pair_id {sid}",
                path=str(path),
                record=f"line {n}",
                field="sentence_pair_id",
            )
        seen.add(sid)
        try:
            label = float(r["label"])
        except (TypeError, ValueError):
            raise DataError(
                f"label {r['label']!r} is not a number",
                path=str(path),
                record=f"line {n}",
                field="label",
            ) from None
        out.append(JstsPair(sid, r["sentence1"], r["sentence2"], label))
    out.sort(key=lambda p: int(p.sentence_pair_id))
    return out


def text_sha1(text: str) -> str:
    """Short digest of a built sentence: annotation files store it instead of the text, to
    detect a change of analyser or rules without holding third-party text."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


# -- stage 1: candidates -------------------------------------------------------------------------
def sentence_record(text: str) -> dict:
    cands = ja.candidates(text)
    return {
        "sentence": text,
        "cues": ja.negation_cues(text),
        "candidates": [
            {
                "neg_id": c.neg_id,
                "sentence": c.sentence,
                "target_pos": c.target_pos,
                "neg_position": c.neg_position,
                "rule": c.rule,
            }
            for c in cands
        ],
    }


def candidate_records(pairs: Iterable[JstsPair]) -> list[dict]:
    """Stage 1 for each JSTS pair; ``eligible`` = neg(s1) = neg(s2) = 0 and |S'1|, |S'2| > 0."""
    out = []
    for p in pairs:
        s1, s2 = sentence_record(p.sentence1), sentence_record(p.sentence2)
        reason = None
        if s1["cues"] or s2["cues"]:
            reason = "has_negation"
        elif not s1["candidates"] or not s2["candidates"]:
            reason = "no_candidate"
        out.append(
            {
                "jsts_sentence_pair_id": p.sentence_pair_id,
                "label": p.label,
                "eligible": reason is None,
                "reason": reason,
                "sentence1": s1,
                "sentence2": s2,
            }
        )
    return out


# -- stage 2: judge + sampling -------------------------------------------------------------------
JudgeFn = Callable[[list[tuple[str, str]]], list[tuple[str | None, str]]]
"""(original, candidate) pairs → (verdict, raw answer); verdict None = not judged (kept)."""


def no_judge(items: list[tuple[str, str]]) -> list[tuple[str | None, str]]:
    """Keep every candidate (``--judge-model none``: the annotators filter by hand)."""
    return [(None, "") for _ in items]


def judge_fn(judge) -> JudgeFn:
    """Adapter from :class:`negbench.tasks.jsts_neg.judge.Judge` to :data:`JudgeFn`."""
    from negbench.tasks.jsts_neg.judge import JudgeItem

    def run(items: list[tuple[str, str]]) -> list[tuple[str | None, str]]:
        res = judge.judge([JudgeItem(o, c) for o, c in items])
        return [(r.verdict, r.answer) for r in res]

    return run


def accepted(cands: list[dict]) -> list[dict]:
    return [c for c in cands if c.get("verdict") in (None, "well_formed")]


def sampling_order(records: Sequence[dict], seed: int) -> list[int]:
    """Positions of all JSTS pairs (sorted by id) in the seeded random order (§3.3)."""
    order = list(range(len(records)))
    random.Random(seed).shuffle(order)
    return order


def select(
    records: Sequence[dict], judge: JudgeFn, *, target: int | None, seed: int, window: int = 64
) -> tuple[list[dict], list[dict]]:
    """Walk the pairs in random order from the top, judging the candidates of eligible pairs,
    until more than ``target`` new instances exist (all pairs when ``target`` is None).

    Candidates are judged ``window`` pairs at a time (identical results, better batching); the
    returned ``judged`` list holds every verdict obtained, selected or not.
    Returns (selected groups sorted by id, judged verdict records).
    """
    order = [i for i in sampling_order(records, seed) if records[i]["eligible"]]
    selected: list[dict] = []
    judged: list[dict] = []
    total = 0
    pos = 0
    while pos < len(order) and (target is None or total <= target):
        chunk = [json.loads(json.dumps(records[i])) for i in order[pos : pos + window]]
        items, where = [], []
        for g in chunk:
            for side in ("sentence1", "sentence2"):
                orig = ja.normalize(g[side]["sentence"])
                for c in g[side]["candidates"]:
                    items.append((orig, c["sentence"]))
                    where.append((g, side, c))
        for (g, side, c), (verdict, answer) in zip(where, judge(items)):
            c["verdict"], c["answer"] = verdict, answer
            judged.append(
                {
                    "jsts_sentence_pair_id": g["jsts_sentence_pair_id"],
                    "sentence": 1 if side == "sentence1" else 2,
                    "neg_id": c["neg_id"],
                    "verdict": verdict,
                    "answer": answer,
                }
            )
        for rank, g in enumerate(chunk, pos):
            if target is not None and total > target:
                break
            a, b = (
                len(accepted(g["sentence1"]["candidates"])),
                len(accepted(g["sentence2"]["candidates"])),
            )
            if a and b:
                g["order"] = rank
                selected.append(g)
                total += a + b + a * b
        pos += window
    selected.sort(key=lambda g: int(g["jsts_sentence_pair_id"]))
    return selected, judged


# -- stage 3: instances --------------------------------------------------------------------------
def _side(text: str, cand: dict | None) -> dict:
    if cand is None:
        return {"sentence": text, "neg": None}
    return {
        "sentence": cand["sentence"],
        "neg": {
            "neg_id_in_jsts_sentence": cand["neg_id"],
            "neg_position": cand["neg_position"],
            "target_pos": cand["target_pos"],
        },
    }


def group_instances(group: dict) -> list[dict]:
    """D_orig, D1, D2, D12 of one JSTS pair (JNLI-Neg order), without ids and scores."""
    s1, s2 = group["sentence1"], group["sentence2"]
    c1, c2 = accepted(s1["candidates"]), accepted(s2["candidates"])
    sid = group["jsts_sentence_pair_id"]
    rows: list[tuple[str, dict | None, dict | None]] = [("original", None, None)]
    rows += [("s1_neg", a, None) for a in c1]
    rows += [("s2_neg", None, b) for b in c2]
    rows += [("both_neg", a, b) for a in c1 for b in c2]
    return [
        {
            "jsts_sentence_pair_id": sid,
            "type": t,
            "sentence1": _side(s1["sentence"], a),
            "sentence2": _side(s2["sentence"], b),
        }
        for t, a, b in rows
    ]


def number(groups: Iterable[list[dict]]) -> list[dict]:
    """Release ids: ``id`` over the split, ``pair_id_in_group`` inside a group (original = 0)."""
    out, i = [], 0
    for g in groups:
        for k, inst in enumerate(g):
            out.append(
                {
                    "id": i,
                    "jsts_sentence_pair_id": inst["jsts_sentence_pair_id"],
                    "pair_id_in_group": k,
                    "type": inst["type"],
                    "sentence1": inst["sentence1"],
                    "sentence2": inst["sentence2"],
                    "gold_score": inst.get("gold_score"),
                    "annotator_scores": inst.get("annotator_scores"),
                }
            )
            i += 1
    return out


def neg_key(inst: dict) -> tuple[int | None, int | None]:
    n1, n2 = inst["sentence1"]["neg"], inst["sentence2"]["neg"]
    return (
        n1["neg_id_in_jsts_sentence"] if n1 else None,
        n2["neg_id_in_jsts_sentence"] if n2 else None,
    )


def minimal_pairs(instances: Sequence[dict]) -> list[tuple[dict, dict, str]]:
    """M = M_single ∪ M_both (§3.3) as (control, treatment, subset) with subset
    ``single`` (original → s1_neg / s2_neg) or ``both`` (s1_neg / s2_neg → both_neg with the
    same neg ids)."""
    by_group: dict[str, dict[tuple, dict]] = {}
    for inst in instances:
        by_group.setdefault(inst["jsts_sentence_pair_id"], {})[neg_key(inst)] = inst
    out = []
    for g in by_group.values():
        orig = g.get((None, None))
        for (a, b), inst in sorted(g.items(), key=lambda kv: kv[1]["pair_id_in_group"]):
            if a is None and b is None:
                continue
            if a is None or b is None:
                if orig is not None:
                    out.append((orig, inst, "single"))
                continue
            for ctrl in (g.get((a, None)), g.get((None, b))):
                if ctrl is not None:
                    out.append((ctrl, inst, "both"))
    return out


# -- annotation export / import ------------------------------------------------------------------
EXPORT_FIELDS = (
    "id",
    "jsts_sentence_pair_id",
    "pair_id_in_group",
    "type",
    "sentence1",
    "sentence2",
    "score",
)


def export_annotation(instances: Sequence[dict], path: str | Path) -> None:
    """A sheet an annotator fills: one row per instance, ``score`` empty (0–5 to be written).
    ``.csv`` gives CSV (UTF-8 with BOM, opens in spreadsheets); anything else JSON lines."""
    rows = [
        {
            "id": i["id"],
            "jsts_sentence_pair_id": i["jsts_sentence_pair_id"],
            "pair_id_in_group": i["pair_id_in_group"],
            "type": i["type"],
            "sentence1": i["sentence1"]["sentence"],
            "sentence2": i["sentence2"]["sentence"],
            "score": None,
        }
        for i in instances
    ]
    path = Path(path)
    if path.suffix.lower() == ".csv":
        import io

        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(EXPORT_FIELDS), lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else v) for k, v in r.items()})
        from negbench.files import atomic_write_text

        atomic_write_text(path, "\ufeff" + buf.getvalue())
    else:
        write_jsonl(path, rows)


def _read_sheet(path: Path) -> list[tuple[int, dict]]:
    if not path.is_file():
        raise DataError("annotation file not found", path=str(path))
    if path.suffix.lower() == ".csv":
        text = read_text(path, encoding="utf-8-sig")
        return [(n, r) for n, r in enumerate(csv.DictReader(text.splitlines()), 2)]
    return list(iter_jsonl(path))


def _score(raw: Any) -> int | None:
    """An integer score 0–5 from a JSON number or a CSV cell, else None."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw if raw in SCORES else None
    if isinstance(raw, str) and raw.strip() in {str(x) for x in SCORES}:
        return int(raw.strip())
    return None


def read_scores(path: str | Path, instances: Sequence[dict]) -> dict[int, int]:
    """One annotator's sheet → {instance id: score}; every instance exactly once, score 0–5."""
    path = Path(path)
    known = {i["id"]: i for i in instances}
    scores: dict[int, int] = {}
    for n, r in _read_sheet(path):
        try:
            iid = int(r.get("id", ""))  # missing: ValueError, as None's TypeError
        except (TypeError, ValueError):
            raise DataError(
                f"id {r.get('id')!r} is not an integer", path=str(path), record=n, field="id"
            ) from None
        if iid not in known:
            raise DataError(
                f"id {iid} is not an instance of this build",
                path=str(path),
                record=n,
                field="id",
                fix="annotate the sheet exported from this build",
            )
        inst = known[iid]
        for k in ("jsts_sentence_pair_id", "pair_id_in_group", "type"):
            if r.get(k) not in (None, "") and str(r[k]) != str(inst[k]):
                raise DataError(
                    f"{k} {r[k]!r} does not match instance {iid} ({inst[k]!r})",
                    path=str(path),
                    record=n,
                    field=k,
                    fix="the sheet was exported from a different build; re-export",
                )
        raw = r.get("score")
        s = _score(raw)
        if s is None:
            raise DataError(
                f"score {raw!r} is not an integer 0–5",
                path=str(path),
                record=n,
                field="score",
                fix="write one of 0, 1, 2, 3, 4, 5",
            )
        if iid in scores:
            raise DataError(f"instance {iid} is scored twice", path=str(path), record=n, field="id")
        scores[iid] = s
    missing = sorted(set(known) - set(scores))
    if missing:
        raise DataError(
            f"{len(missing)} instance(s) have no score (first: id {missing[0]})",
            path=str(path),
            field="score",
            fix="score every row of the sheet",
        )
    return scores


def apply_annotations(
    instances: Sequence[dict], paths: Sequence[str | Path]
) -> tuple[list[dict], dict]:
    """Gold = median of the annotators' scores; Fleiss' kappa over six score categories on all
    instances (originals included, as §3.3)."""
    if len(paths) != 3:
        raise DataError(
            f"expected three annotation files, got {len(paths)}",
            path=", ".join(map(str, paths)) or "--import-annotations",
            fix="pass the three annotators' sheets",
        )
    sheets = [read_scores(p, instances) for p in paths]
    out = []
    for inst in instances:
        ss = [sh[inst["id"]] for sh in sheets]
        out.append({**inst, "gold_score": int(statistics.median(ss)), "annotator_scores": ss})
    counts = [[sum(1 for s in i["annotator_scores"] if s == c) for c in SCORES] for i in out]
    kappa: dict[str, float | str | None]
    try:
        fk = fleiss_kappa(counts)
        kappa = {"fleiss_kappa": fk.kappa, "p_bar": fk.p_bar, "p_e": fk.p_e}
    except ValueError as exc:  # e.g. every rating in one category
        kappa = {"fleiss_kappa": None, "kappa_note": str(exc)}
    stats = {**kappa, "n_instances": len(out), "annotators": [str(p) for p in paths]}
    return out, stats


def summary(instances: Sequence[dict]) -> dict:
    """Counts per type and gold score, and minimal pairs (M, M_single, M_both, M_i, M_u)."""
    by_type = {t: sum(1 for i in instances if i["type"] == t) for t in TYPES}
    by_score: dict[str, dict[str, int]] = {}
    for t in ("original", "neg"):
        sel = [i for i in instances if (i["type"] == "original") == (t == "original")]
        by_score[t] = {str(s): sum(1 for i in sel if i["gold_score"] == s) for s in SCORES}
    mp = minimal_pairs(instances)
    scored = [
        (c, t) for c, t, _ in mp if c["gold_score"] is not None and t["gold_score"] is not None
    ]
    return {
        "groups": len({i["jsts_sentence_pair_id"] for i in instances}),
        "instances": len(instances),
        "by_type": by_type,
        "by_gold_score": by_score,
        "minimal_pairs": len(mp),
        "M_single": sum(1 for *_, k in mp if k == "single"),
        "M_both": sum(1 for *_, k in mp if k == "both"),
        "M_i": sum(1 for c, t in scored if c["gold_score"] != t["gold_score"]),
        "M_u": sum(1 for c, t in scored if c["gold_score"] == t["gold_score"]),
    }


# -- the staged, resumable build -----------------------------------------------------------------
@dataclass
class BuildConfig:
    jsts_dir: str
    split: str
    out: str
    judge_model: str | None = None  # None: keep every candidate
    judge_dtype: str = "auto"
    judge_device: str = "auto"
    cache: str | None = None
    limit: int | None = None  # only the first N JSTS pairs (by id)
    target: int | None = None  # default: the paper's count for the split
    seed: int = DEFAULT_SEED


def _config_hash(d: dict) -> str:
    return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


def _stage(
    workdir: Path,
    name: str,
    settings: dict,
    make: Callable[[], list[dict]],
    log: Callable[[str], None],
) -> tuple[list[dict], bool]:
    """Reuse ``name.jsonl`` when its meta records the same settings, else make and write it
    (data file first, meta last: a crash in between only causes a rebuild)."""
    data, meta = workdir / f"{name}.jsonl", workdir / f"{name}.meta.json"
    h = _config_hash(settings)
    if data.is_file() and meta.is_file():
        try:
            if json.loads(meta.read_text(encoding="utf-8")).get("hash") == h:
                log(f"{name}: reusing {data}")
                return read_jsonl(data), True
        except json.JSONDecodeError:
            pass
    rows = make()
    write_jsonl(data, rows)
    write_json(meta, {"hash": h, "settings": settings, "records": len(rows)})
    return rows, False


def build(
    cfg: BuildConfig,
    *,
    judge: JudgeFn | None = None,
    open_model: OpenModel | None = None,
    log: Callable[[str], None] = lambda s: None,
) -> dict:
    """Run (or resume) the stages of one split; returns paths and counts.

    ``judge`` overrides loading ``cfg.judge_model`` (tests pass a function); otherwise the judge
    is opened with ``open_model`` (:func:`negbench.open_model`, given by ``negbench build``).
    """
    src = jsts_file(cfg.jsts_dir, cfg.split)
    work = Path(cfg.out) / "work" / cfg.split
    s1 = {
        "jsts": file_sha256(src),
        "split": cfg.split,
        "limit": cfg.limit,
        "rules": RULES_VERSION,
        "dictionary": ja.dictionary_version(),
    }
    cands, _ = _stage(
        work,
        "candidates",
        s1,
        lambda: candidate_records(load_jsts(cfg.jsts_dir, cfg.split)[: cfg.limit]),
        log,
    )
    target = cfg.target if cfg.target is not None else PAPER_TARGETS[cfg.split]
    s2 = {
        **s1,
        "judge": cfg.judge_model,
        "dtype": cfg.judge_dtype,
        "seed": cfg.seed,
        "target": target,
        "custom_judge": judge is not None and cfg.judge_model is None,
    }
    judged_box: list[list[dict]] = []

    def make_selected() -> list[dict]:
        fn = judge
        if fn is None:
            if cfg.judge_model:
                from negbench.tasks.jsts_neg.judge import load_judge

                if open_model is None:
                    raise TypeError("build(): a judge model needs open_model")
                log(f"loading judge {cfg.judge_model} …")
                fn = judge_fn(
                    load_judge(
                        cfg.judge_model,
                        open_model,
                        dtype=cfg.judge_dtype,
                        device=cfg.judge_device,
                        cache_path=cfg.cache,
                    )
                )
            else:
                fn = no_judge
        sel, judged = select(cands, fn, target=target, seed=cfg.seed)
        judged_box.append(judged)
        return sel

    selected, reused = _stage(work, "selected", s2, make_selected, log)
    if judged_box:
        write_jsonl(work / "judged.jsonl", judged_box[0])
    instances = number(group_instances(g) for g in selected)
    pairs_path = Path(cfg.out) / f"pairs-{cfg.split}.jsonl"
    write_jsonl(pairs_path, instances)
    eligible = sum(1 for c in cands if c["eligible"])
    return {
        "split": cfg.split,
        "jsts_pairs": len(cands),
        "eligible": eligible,
        "selected_groups": len(selected),
        "instances": len(instances),
        "summary": summary(instances),
        "pairs": str(pairs_path),
        "reused": reused,
        "verdicts": verdict_counts(work / "judged.jsonl"),
    }


def verdict_counts(path: Path) -> dict[str, int]:
    """How many judged candidates got each verdict (from the last judging run)."""
    if not path.is_file():
        return {}
    out: dict[str, int] = {}
    for r in read_jsonl(path):
        k = "not_judged" if r["verdict"] is None else str(r["verdict"])
        out[k] = out.get(k, 0) + 1
    return out


def finish(out: str | Path, split: str, annotation_files: Sequence[str | Path]) -> dict:
    """Import three annotators' sheets into ``pairs-<split>.jsonl``: writes
    ``jsts-neg-<split>.jsonl`` (gold = median) and ``stats-<split>.json`` (kappa, counts)."""
    pairs_path = Path(out) / f"pairs-{split}.jsonl"
    if not pairs_path.is_file():
        raise DataError(
            "no built pairs to annotate",
            path=str(pairs_path),
            fix="run 'negbench build jsts-neg' for this split and --out first",
        )
    instances, stats = apply_annotations(read_jsonl(pairs_path), annotation_files)
    final = Path(out) / f"jsts-neg-{split}.jsonl"
    write_jsonl(final, instances)
    stats = {**stats, **summary(instances)}
    write_json(Path(out) / f"stats-{split}.json", stats)
    return {"path": str(final), **stats}


# -- the in-house set ----------------------------------------------------------------------------
def _inhouse_rows(path: Path) -> list[tuple[int, dict]]:
    if not path.is_file():
        raise DataError(
            "in-house annotation file not found",
            path=str(path),
            fix="reinstall negbench (the file ships with the package)",
        )
    return _read_sheet(path)


def build_inhouse(
    jsts_dir: str | Path | None = None, annotations: str | Path | None = None
) -> dict[str, list[dict]]:
    """The in-house JSTS-Neg-style set (split → instances in the release schema).

    Rebuilt from JGLUE JSTS and our annotation file, which holds ids, well-formedness judgements
    and scores only (plus a short digest of each negated sentence to detect analyser drift).
    gold_score = our single annotator's score; annotator_scores is null.
    """
    jsts_dir = Path(jsts_dir) if jsts_dir else default_jsts_dir()
    path = Path(annotations) if annotations else INHOUSE_DIR / "annotations.jsonl"
    rows = _inhouse_rows(path)
    wf: dict[tuple[str, str, int], dict[int, tuple[bool, str, int]]] = {}
    scores: dict[tuple[str, str, int | None, int | None], tuple[int, int]] = {}
    for n, r in rows:
        kind = r.get("kind")
        if kind == "meta":
            continue
        split, sid = r.get("split"), str(r.get("jsts_sentence_pair_id"))
        if split not in SPLITS:
            raise DataError(f"unknown split {split!r}", path=str(path), record=n, field="split")
        if kind == "wellformed":
            side = r.get("sentence")
            if side not in (1, 2):
                raise DataError(
                    "sentence must be 1 or 2", path=str(path), record=n, field="sentence"
                )
            wf.setdefault((split, sid, side), {})[int(r["neg_id"])] = (
                bool(r["well_formed"]),
                r.get("sha1", ""),
                n,
            )
        elif kind == "score":
            s = _score(r.get("score"))
            if s is None:
                raise DataError(
                    f"score {r.get('score')!r} is not an integer 0–5",
                    path=str(path),
                    record=n,
                    field="score",
                )
            key = (split, sid, r.get("s1_neg_id"), r.get("s2_neg_id"))
            if key in scores:
                raise DataError("instance scored twice", path=str(path), record=n)
            scores[key] = (s, n)
        else:
            raise DataError(
                f"unknown record kind {kind!r}",
                path=str(path),
                record=n,
                field="kind",
                fix="kinds are meta, wellformed, score",
            )
    out: dict[str, list[dict]] = {}
    used: set = set()
    for split in sorted({k[0] for k in scores}, key=SPLITS.index):
        jsts = {p.sentence_pair_id: p for p in load_jsts(jsts_dir, split)}
        groups = []
        for sid in sorted({k[1] for k in scores if k[0] == split}, key=int):
            if sid not in jsts:
                raise DataError(
                    f"JSTS {split} has no sentence_pair_id {sid}",
                    path=str(path),
                    field="jsts_sentence_pair_id",
                )
            p = jsts[sid]
            group: dict[str, Any] = {"jsts_sentence_pair_id": sid}
            for side, text, k in (("sentence1", p.sentence1, 1), ("sentence2", p.sentence2, 2)):
                rec = sentence_record(text)
                judged = wf.get((split, sid, k), {})
                for c in rec["candidates"]:
                    if c["neg_id"] not in judged:
                        raise DataError(
                            f"{split} pair {sid} sentence {k}: candidate {c['neg_id']} "
                            "has no well-formedness judgement",
                            path=str(path),
                        )
                    ok, digest, n = judged[c["neg_id"]]
                    if digest and digest != text_sha1(c["sentence"]):
                        raise DataError(
                            f"{split} pair {sid} sentence {k}: candidate {c['neg_id']} "
                            "no longer builds the annotated sentence",
                            path=str(path),
                            record=n,
                            field="sha1",
                            fix="the analyser or the cue rules changed; re-annotate",
                        )
                    c["verdict"] = "well_formed" if ok else "ill_formed"
                if len(judged) != len(rec["candidates"]):
                    raise DataError(
                        f"{split} pair {sid} sentence {k}: {len(judged)} judgements for "
                        f"{len(rec['candidates'])} candidates",
                        path=str(path),
                    )
                group[side] = rec
            insts = group_instances(group)
            for inst in insts:
                key = (split, sid, *neg_key(inst))
                if key not in scores:
                    raise DataError(
                        f"{split} pair {sid}: instance {inst['type']} {neg_key(inst)} has no score",
                        path=str(path),
                        field="score",
                    )
                inst["gold_score"] = scores[key][0]
                used.add(key)
            groups.append(insts)
        out[split] = number(groups)
    extra = sorted(set(scores) - used, key=lambda k: scores[k][1])
    if extra:
        raise DataError(
            "score for an instance the set does not contain (ill-formed candidate?)",
            path=str(path),
            record=scores[extra[0]][1],
        )
    return out


def inhouse_judge_agreement(
    judge: JudgeFn, jsts_dir: str | Path | None = None, annotations: str | Path | None = None
) -> dict:
    """Run a judge over every candidate of the in-house groups and compare its verdicts with
    our well-formedness judgements (agreement rate; unparsed answers count as rejections)."""
    jsts_dir = Path(jsts_dir) if jsts_dir else default_jsts_dir()
    path = Path(annotations) if annotations else INHOUSE_DIR / "annotations.jsonl"
    ours = [r for _, r in _inhouse_rows(path) if r.get("kind") == "wellformed"]
    texts: dict[str, dict[str, JstsPair]] = {}
    items = []
    for r in ours:
        split = r["split"]
        if split not in texts:
            texts[split] = {p.sentence_pair_id: p for p in load_jsts(jsts_dir, split)}
        p = texts[split][str(r["jsts_sentence_pair_id"])]
        orig = ja.normalize(p.sentence1 if r["sentence"] == 1 else p.sentence2)
        items.append((orig, ja.candidates(orig)[int(r["neg_id"])].sentence))
    verdicts = [v for v, _ in judge(items)]
    table: dict[str, int] = {}
    for r, v in zip(ours, verdicts):
        k = f"ours_{'ok' if r['well_formed'] else 'bad'}__judge_{v}"
        table[k] = table.get(k, 0) + 1
    agree = sum(1 for r, v in zip(ours, verdicts) if (v == "well_formed") == bool(r["well_formed"]))
    return {
        "candidates": len(ours),
        "ours_well_formed": sum(1 for r in ours if r["well_formed"]),
        "judge_well_formed": sum(1 for v in verdicts if v == "well_formed"),
        "judge_ill_formed": sum(1 for v in verdicts if v == "ill_formed"),
        "judge_unparsed": sum(1 for v in verdicts if v == "unparsed"),
        "agreement": agree / len(ours) if ours else float("nan"),
        "table": table,
    }
