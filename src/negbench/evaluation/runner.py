"""An evaluation run: tasks × modes × shots × seeds → requests → engine → records → metrics.

A run that fits in one shard (``shard_size`` samples) sends all its requests to the engine in one
call, so identical requests across units (e.g. a 0-shot prompt shared by several modes, or the
same few-shot block) are computed once.  A bigger run is streamed shard by shard: prompts,
requests and records exist for one shard at a time, finished shards are saved (a killed run
resumes shard by shard), and the metrics are computed from the saved samples as a stream.
"""

from __future__ import annotations

import datetime as _dt
import gc
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Iterator, Sequence

from negbench import __version__
from negbench.core.engine import Engine, EngineStats, is_request_level, progress_bar, skip_done
from negbench.core.requests import request_key
from negbench.scoring.fewshot import build_context, fewshot_draws
from negbench.scoring.headline import Parts, add_intervals, group_headline, unit_note
from negbench.scoring.metrics import over_seeds, unit_metrics
from negbench.evaluation.run_warnings import RunWarning, interval_warning, merged, unit_warnings
from negbench.files import fingerprint_records, git_commit, package_versions
from negbench.evaluation.store import RunStore
from negbench.scoring.subsets import Selection, combine, select
from negbench.tasks import Task, get_task
from negbench.scoring.task import Doc

SCHEMA_VERSION = 1


@dataclass
class RunConfig:
    model: str
    tasks: list[str]
    modes: list[str] | None = None  # None: each task's default modes
    shots: list[int] | None = None  # None: each task's default shots
    seeds: list[int] | None = None  # None: each task's default seeds
    limit: int | float | None = None  # about N records (or a share 0 < x < 1 of each
    # task's records): whole units, across strata, data order
    protocol: bool = False  # each task's paper protocol (shots × seeds)
    chat: bool = False
    system_prompt: str | None = None
    chat_layout: str = "lm-eval"  # "lm-eval": description in the system turn; "user"
    backend: dict[str, Any] = field(default_factory=dict)
    engine: dict[str, Any] = field(default_factory=dict)
    shard_size: int = 20_000  # samples per shard: each finished shard is saved, so a
    # killed run over 381k sentences resumes shard by shard
    sample: int | None = None  # about N records drawn at random: whole units, strata
    sample_seed: int = 0  # the seed of that draw (``--seed``)


@dataclass
class Unit:
    """One cell of the protocol: a task, a mode, a number of shots, a seed."""

    task: Task
    mode: str
    shots: int
    seed: int | None

    @property
    def name(self) -> str:
        s = f"{self.task.name}.{self.mode}.{self.shots}shot"
        return s if self.seed is None else f"{s}.seed{self.seed}"

    @property
    def group(self) -> str:
        return f"{self.task.name}.{self.mode}.{self.shots}shot"


def plan_units(cfg: RunConfig) -> list[Unit]:
    """Expand the config into units.  ``modes`` apply to every task, except ``task:mode+mode``
    entries, which give one task its own; a task/mode pair that does not exist is an error (with
    the pairs that do), never a silent skip."""
    units = []
    tasks = [get_task(t) for t in cfg.tasks]
    per_task = task_modes(cfg.tasks, tasks, cfg.modes)
    for spec, task in zip(cfg.tasks, tasks):
        modes = per_task.get(spec) or list(task.default_modes or task.modes)
        for m in modes:
            for k in cfg.shots if cfg.shots is not None else _protocol(task, cfg)[0]:
                seeds = cfg.seeds if cfg.seeds is not None else _protocol(task, cfg)[1]
                for seed in [None] if k == 0 else seeds:
                    units.append(Unit(task, m, k, seed))
    return units


def task_modes(
    specs: Sequence[str], tasks: Sequence[Task], modes: Sequence[str] | None
) -> dict[str, list[str]]:
    """Task spec -> its requested modes (absent: the task's defaults).  ``modes`` entries are
    ``mode`` (every task) or ``task:mode+mode`` (that task); every pair must exist."""
    from negbench.errors import TaskError
    from negbench.options import did_you_mean

    if not modes:
        return {}
    common: list[str] = []
    own: dict[str, list[str]] = {}
    for m in modes:
        name, sep, ms = m.rpartition(":")
        if sep:
            if name not in specs:
                raise TaskError(
                    f"--modes names task '{name}', which is not in --tasks"
                    + did_you_mean(name, specs),
                    where="--modes",
                    fix="write task:mode+mode for a task of --tasks: " + ", ".join(specs),
                )
            own.setdefault(name, []).extend(x for x in ms.split("+") if x)
        else:
            common.append(m)
    out: dict[str, list[str]] = {}
    bad: list[str] = []
    for spec, task in zip(specs, tasks):
        want = list(dict.fromkeys(common + own.get(spec, [])))
        for m in want:
            if m not in task.modes:
                bad.append(f"'{task.name}' has no mode '{m}'" + did_you_mean(m, task.modes))
        out[spec] = want
    if bad:
        if len(tasks) == 1:
            tasks[0].mode(next(m for m in out[specs[0]] if m not in tasks[0].modes))

        def fits(spec: str, t: Task) -> str:
            have = [m for m in out[spec] if m in t.modes] or list(t.default_modes or t.modes)
            return f"{spec}:" + "+".join(have)

        example = ",".join(fits(sp, t) for sp, t in zip(specs, tasks))
        raise TaskError(
            "; ".join(bad),
            where="--modes",
            fix="give each task its own modes, e.g. --modes "
            + example
            + " (modes: "
            + "; ".join(f"{t.name}: {', '.join(t.modes)}" for t in tasks)
            + ")",
        )
    return out


def _protocol(task: Task, cfg: RunConfig) -> tuple:
    """(shots, seeds) when not given explicitly: the paper's protocol with ``--protocol``."""
    if cfg.protocol and task.protocol_shots is not None:
        return task.protocol_shots, task.protocol_seeds or task.default_seeds
    return task.default_shots, task.default_seeds


@dataclass
class UnitData:
    """A unit's records and few-shot pool, checked: everything but the model.  Prompts are not
    kept; they are rendered again shard by shard (:class:`UnitBuilder`), so a 381k-sentence run
    never holds them all."""

    unit: Unit
    docs: Sequence[Doc]
    pool: Sequence[Doc]
    same_split: bool
    n_requests: int  # requests its samples make (for the progress bar)
    selection: Selection | None = None  # how its records were chosen (--limit, --sample)

    def draws(self) -> Iterator[list[Doc]]:
        """The records' few-shot examples, in record order (one sampler stream per unit)."""
        task = self.unit.task
        return iter(
            fewshot_draws(
                self.docs,
                self.pool,
                self.unit.shots,
                self.unit.seed,
                same_split=self.same_split,
                sampler=task.fewshot_sampler,
            )
        )


@dataclass
class Plan:
    """A run checked against its data before any model is loaded or anything is written."""

    units: list[UnitData]
    datasets: dict[str, dict]


def prepare(cfg: RunConfig) -> Plan:
    """Load every split, draw every few-shot example and render every prompt of the run (then
    drop them).  All data errors surface here, before the model loads and before the run folder
    is touched."""
    check_subset_options(cfg)
    units = plan_units(cfg)
    loaded = [load_unit(u, cfg) for u in units]
    datasets: dict[str, dict] = {}
    for d in loaded:
        u = d.unit
        if u.task.name not in datasets:
            shots = any(v.shots for v in units if v.task.name == u.task.name)
            datasets[u.task.name] = _dataset_info(u.task, d.selection, shots)
    return Plan(loaded, datasets)


def check_subset_options(cfg: RunConfig) -> None:
    """``limit`` and ``sample`` exclude each other; both are at least 1."""
    from negbench.errors import OptionError

    if cfg.limit is not None and cfg.sample is not None:
        raise OptionError(
            "--limit and --sample both choose a subset",
            where="--limit / --sample",
            fix="give one: --limit N (data order) or --sample N --seed S (random)",
        )
    if isinstance(cfg.limit, float) and not 0 < cfg.limit < 1:
        raise OptionError(
            f"--limit as a share must lie between 0 and 1, got {cfg.limit}",
            where="--limit",
            fix="give a whole number of records, or a fraction such as 0.1",
        )
    for name, v in (("--limit", cfg.limit), ("--sample", cfg.sample)):
        if v is not None and not isinstance(v, float) and v < 1:
            raise OptionError(f"{name} must be at least 1, got {v}", where=name)


def load_unit(unit: Unit, cfg: RunConfig) -> UnitData:
    """A unit's records and pool, every record rendered once to check it (nothing rendered is
    kept: prompts cost hundreds of bytes per record, the records themselves may be lazy)."""
    task = unit.task
    spec = task.mode(unit.mode)
    docs = task.load(task.test_split)
    if spec.include is not None:
        docs = [d for d in docs if spec.include(d)]
    docs, selection = select(docs, task.structure, cfg.limit, cfg.sample, cfg.sample_seed)
    if task.own_subset is not None:
        selection = combine(task.own_subset(task.test_split), selection)
    fs_split = task.fewshot_split or task.test_split
    pool = task.load(fs_split) if unit.shots else []
    data = UnitData(unit, docs, pool, fs_split == task.test_split, 0, selection)
    render = _renderer(spec, use_chat(task, cfg))  # a check only: chat or plain, same data
    formulation = spec.formulation
    checked: set[str] = set()
    n_requests = 0
    for doc, shots in zip(docs, data.draws()):
        n_requests += len(formulation.requests("", render(doc)))
        for d in shots:
            if d.id not in checked:
                render(d)
                checked.add(d.id)
    data.n_requests = n_requests
    return data


def _renderer(spec, chat: bool):
    return spec.render_chat if chat and spec.render_chat else spec.render


def use_chat(task: Task, cfg: RunConfig, backend=None) -> bool:
    """Whether a task's prompts go through the chat template.  ``--chat`` decides for every task,
    except a task with its own ``chat`` setting (notadataset, as its official ``run.py``):
    ``"on"`` / ``"off"`` force it; ``"auto"`` follows ``--chat``, else uses the chat prompt when
    the backend's tokenizer has a chat template (no backend yet: as ``--chat``)."""
    pref = getattr(task, "chat", None)
    if pref == "on":
        return True
    if pref == "off":
        return False
    if pref == "auto":
        return cfg.chat or bool(
            backend is not None and getattr(backend, "has_chat_template", False)
        )
    return cfg.chat


class UnitBuilder:
    """Builds a unit's samples and requests in record order, a slice at a time: the few-shot
    sampler is consumed as the records come, so slices give exactly the whole unit's draws."""

    def __init__(self, data: UnitData, backend, cfg: RunConfig):
        self.data, self.backend, self.cfg = data, backend, cfg
        task = data.unit.task
        self.spec = task.mode(data.unit.mode)
        self.chat = use_chat(task, cfg, backend)
        self.render = _renderer(self.spec, self.chat)
        self.description = task.description(data.unit.mode)
        self.draws = data.draws()
        self.memo: dict[str, Any] = {}  # rendered few-shot examples (bounded by the pool)
        self.pos = 0

    def _shot(self, d: Doc):
        r = self.memo.get(d.id)
        if r is None:
            r = self.memo[d.id] = self.render(d)
        return r

    def build(self, start: int, stop: int) -> tuple[list[dict], list[list]]:
        """(sample skeletons, requests per sample) of records ``start:stop``; slices must come in
        order."""
        if start != self.pos:
            raise RuntimeError(f"unit slices out of order: {start} after {self.pos}")
        unit, task, cfg = self.data.unit, self.data.unit.task, self.cfg
        samples, reqs = [], []
        for i in range(start, stop):
            doc = self.data.docs[i]
            shots = next(self.draws)
            r = self.render(doc)
            examples = [self._shot(d) for d in shots]
            if self.chat:
                context = chat_context(self.backend, cfg, r.query, examples, self.description, task)
            else:
                context = build_context(
                    r.query,
                    examples,
                    self.description,
                    task.target_delimiter,
                    task.fewshot_delimiter,
                )
            gold_index = (
                r.gold
                if isinstance(r.gold, int)
                else (r.choices.index(r.gold) if r.gold in r.choices else None)
            )
            samples.append(
                {
                    "doc_id": doc.id,
                    "task": task.name,
                    "mode": unit.mode,
                    "shots": unit.shots,
                    "seed": unit.seed,
                    "fewshot_ids": [d.id for d in shots],
                    "context": context,
                    "choices": r.choices,
                    "gold": r.gold,
                    "gold_index": gold_index,
                    "meta": r.meta,
                    "_rendered": r,
                }
            )
            reqs.append(self.spec.formulation.requests(context, r))
        self.pos = stop
        return samples, reqs


def build_requests(data: UnitData | Unit, backend, cfg: RunConfig):
    """A unit's prompts in their final form; returns (samples skeletons, requests per sample)."""
    if isinstance(data, Unit):
        data = load_unit(data, cfg)
    return UnitBuilder(data, backend, cfg).build(0, len(data.docs))


IDENTITY_BACKEND = ("dtype", "adapter", "max_length", "add_bos")


def run_identity(cfg: RunConfig) -> dict:
    """What makes two runs the same run: everything that can change a result (engine settings,
    threads and shard size cannot, by the engine's batching invariance)."""
    d = asdict(cfg)
    d.pop("engine"), d.pop("shard_size")
    if cfg.sample is None:  # only when set: runs without one keep their identity
        d.pop("sample"), d.pop("sample_seed")
    d["backend"] = {k: cfg.backend.get(k) for k in IDENTITY_BACKEND}
    if cfg.backend.get("quantize"):  # only when set: 16-bit runs keep their identity
        d["backend"]["quantize"] = cfg.backend["quantize"]
    return d


def chat_context(
    backend, cfg: RunConfig, query: str, examples, description: str, task: Task
) -> str:
    """The prompt under the model's chat template, laid out as lm-eval 0.4.13
    ``--apply_chat_template`` does (``chat_layout="lm-eval"``): the system prompt and the task
    description joined into one system message, the few-shot block and the query as one user
    turn.  ``chat_layout="user"`` puts the description in the user turn instead."""
    if cfg.chat_layout == "user":
        system = cfg.system_prompt or ""
        user = build_context(
            query, examples, description, task.target_delimiter, task.fewshot_delimiter
        )
    else:
        system = _maybe_delimit(cfg.system_prompt, description, task.fewshot_delimiter)
        user = build_context(query, examples, "", task.target_delimiter, task.fewshot_delimiter)
    msgs = [{"role": "system", "content": system}] if system else []
    return backend.apply_chat_template(msgs + [{"role": "user", "content": user}])


def _maybe_delimit(prefix: str | None, suffix: str | None, delimiter: str) -> str:
    """lm-eval's join: the delimiter only when neither side has whitespace at the boundary."""
    if not prefix:
        return suffix or ""
    if not suffix:
        return prefix
    return (
        prefix + suffix
        if prefix[-1].isspace() or suffix[0].isspace()
        else prefix + delimiter + suffix
    )


def evaluate(
    cfg: RunConfig,
    backend,
    engine: Engine,
    store: RunStore | None = None,
    log=print,
    plan: Plan | None = None,
    keep: dict[str, list[dict]] | None = None,
) -> dict:
    """Run the plan shard by shard: each shard's samples and requests are built from the records,
    scored in one engine call, saved, and dropped; the samples files are then assembled from the
    saved shards and the metrics computed from them as a stream.  At most one shard of prompts,
    requests and records is held at a time (without a store, finished records stay in memory,
    and ``keep`` receives them by unit name)."""
    t0 = time.perf_counter()
    plan = plan or prepare(cfg)
    units = [d.unit for d in plan.units]
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    builders = [UnitBuilder(d, backend, cfg) for d in plan.units]
    for d, b in zip(plan.units, builders):  # the backend's part of a prompt (its chat template)
        if b.chat and len(d.docs):  # works, before anything is written
            UnitBuilder(d, backend, cfg).build(0, 1)
    n_requests = sum(d.n_requests for d in plan.units)
    sizes = [len(d.docs) for d in plan.units]
    n_samples = sum(sizes)
    datasets = plan.datasets
    if store:  # prompts are checked: nothing can fail on the data now
        store.write_config(
            {
                "schema": SCHEMA_VERSION,
                "negbench": __version__,
                "started": started,
                **asdict(cfg),
                "identity": run_identity(cfg),
                "units": [u.name for u in units],
            }
        )
    shards = _shards(sizes, cfg.shard_size)
    log(
        f"{len(units)} unit(s), {n_samples} samples, {n_requests} requests"
        + (f", {len(shards)} shards of ≤{cfg.shard_size} samples" if len(shards) > 1 else "")
    )
    on_disk = store is not None and len(shards) > 1
    kept: list[list[dict]] = [[] for _ in units]  # records held when not on disk
    stats = _score_shards(
        builders, shards, backend, engine, store if on_disk else None, n_requests, log, kept
    )
    results_units: dict[str, dict] = {}
    parts: dict[str, Parts | None] = {}
    warnings: list[RunWarning] = []
    for ui, u in enumerate(units):
        if on_disk and store is not None:
            store.write_samples_from_shards(u.name, _unit_parts(shards, ui))
            records: Iterable[dict] = store.samples(u.name)
        else:
            records = kept[ui]
            if store:
                store.write_samples(u.name, records)
            if keep is not None:
                keep[u.name] = records
        sel = plan.units[ui].selection or Selection("all", sizes[ui], sizes[ui])
        results_units[u.name], parts[u.name], found = unit_result(
            u, records, builders[ui].chat, sel.to_dict()
        )
        warnings += found
    groups = group_results(results_units, parts)
    tables = _tables(units, results_units)
    results = {
        "schema": SCHEMA_VERSION,
        "negbench": __version__,
        "started": started,
        "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "config": asdict(cfg),
        "model": {
            "spec": cfg.model,
            "fingerprint": backend.fingerprint,
            "details": getattr(backend, "fingerprint_info", {}),
        },
        "provenance": {"packages": package_versions(), "git": git_commit()},
        "datasets": datasets,
        "units": results_units,
        "groups": groups,
        "engine": asdict(stats),
        "cluster": engine.cluster_summary(),
        "wall_s": time.perf_counter() - t0,
        "shards": len(shards),
        "tables": tables,
        "warnings": [w.to_dict() for w in merged(warnings)],
    }
    if store:
        store.write_results(results)
        _write_tables(store, tables)
        store.clear_shards()
    return results


Shard = list[tuple[int, int, int]]  # (unit index, first record, end record) segments


def _shards(sizes: list[int], shard_size: int) -> list[Shard]:
    """The run's records (units in order, each unit's records in order) cut into shards of
    ``shard_size`` samples, as (unit, start, stop) segments.  A run that fits in one shard is
    one engine call (all cross-unit sharing kept)."""
    total = sum(sizes)
    if not shard_size or total <= shard_size:
        return [[(ui, 0, n) for ui, n in enumerate(sizes) if n]] if total else [[]]
    shards: list[Shard] = []
    cur: Shard = []
    room = shard_size
    for ui, n in enumerate(sizes):
        start = 0
        while start < n:
            take = min(room, n - start)
            cur.append((ui, start, start + take))
            start += take
            room -= take
            if room == 0:
                shards.append(cur)
                cur, room = [], shard_size
    if cur:
        shards.append(cur)
    return shards


def _unit_parts(shards: list[Shard], ui: int) -> list[tuple[int, int, int]]:
    """Where unit ``ui``'s records lie in the saved shards: (shard, first line, end line)."""
    parts = []
    for n, shard in enumerate(shards):
        line = 0
        for u, a, b in shard:
            if u == ui:
                parts.append((n, line, line + b - a))
            line += b - a
    return parts


def _score_shards(
    builders: list[UnitBuilder],
    shards: list[Shard],
    backend,
    engine: Engine,
    store: RunStore | None,
    n_requests: int,
    log,
    kept: list[list[dict]],
) -> EngineStats:
    """Score shard by shard.  With ``store`` each finished shard's records are saved in the run
    folder with a digest of its requests and dropped; a rerun of the same run loads the digest
    instead of asking the engine (and unfinished shards still find their answered requests in the
    cache).  Without it the records are appended to ``kept`` (one list per unit)."""
    stats = EngineStats()
    bar = progress_bar(n_requests, "scoring", engine.config.progress)
    t0 = time.perf_counter()
    done_samples = loaded_samples = 0  # the rate counts only samples scored now
    total = sum(b - a for sh in shards for _, a, b in sh)
    for n, shard in enumerate(shards):
        samples: list[dict] = []
        per: list[list] = []
        owner: list[int] = []
        for ui, a, b in shard:
            built, rendered = builders[ui].build(a, b)
            samples += built
            per += rendered
            owner += [ui] * (b - a)
        reqs = [r for rs in per for r in rs]
        digest = _digest(reqs, backend.fingerprint) if store else None
        if digest and store is not None and store.has_shard(n, digest, len(samples)):
            skip_done(bar, len(reqs))
            done_samples += len(samples)
            loaded_samples += len(samples)
            continue
        answers = engine.run(reqs, desc=f"shard {n + 1}/{len(shards)}", bar=bar)
        stats.add(answers.stats)
        metas = engine.provenance(answers.keys) if is_request_level(backend) else None
        k = 0
        for ui, s, rs in zip(owner, samples, per):
            u = builders[ui].data.unit
            r = s.pop("_rendered")
            s.update(u.task.mode(u.mode).formulation.score(r, answers[k : k + len(rs)]))
            if metas is not None and any(metas[k : k + len(rs)]):
                s["answered_by"] = answered_by(metas[k : k + len(rs)])
            k += len(rs)
        if store is not None and digest is not None:  # digest is set whenever store is
            store.write_shard(n, digest, samples)
        else:
            for ui, s in zip(owner, samples):
                kept[ui].append(s)
        done_samples += len(samples)
        del samples, per, reqs, answers, metas
        if len(shards) > 1:
            # the engine's per-chunk planning state (token trie, closures) is cyclic garbage
            # that the collector may leave for many shards: free it with the shard
            gc.collect()
            el = time.perf_counter() - t0
            rate = (done_samples - loaded_samples) / el if el else float("inf")
            log(
                f"shard {n + 1}/{len(shards)} done: {done_samples}/{total} samples, "
                f"{rate:.0f} samples/s, ETA {_hms((total - done_samples) / rate if rate else 0)}"
            )
    bar.close()
    return stats


def answered_by(metas: list[dict | None]) -> list[dict]:
    """Who answered a sample's requests (request-level backends): the distinct served model ids
    and system fingerprints, so a result can be traced to the exact model version behind an API."""
    seen: list[dict] = []
    for m in metas:
        row = {
            "served_model": (m or {}).get("served_model"),
            "system_fingerprint": (m or {}).get("system_fingerprint"),
        }
        if row not in seen:
            seen.append(row)
    return seen


def unit_result(
    u: Unit, records: Iterable[dict], chat: bool, subset: dict
) -> tuple[dict, Parts | None, list[RunWarning]]:
    """A unit's ``results.json`` entry (metrics with their 95 % intervals, headline, subset),
    its headline's parts (for the group's interval) and its warnings — from the records (a list
    or a re-iterable stream of the saved samples)."""
    metrics = unit_metrics(u.task, u.mode, records)
    head, parts = add_intervals(u.task, u.mode, records, metrics)
    head["n"] = head["n"] or subset.get("n", 0)
    entry = {
        "task": u.task.name,
        "mode": u.mode,
        "shots": u.shots,
        "seed": u.seed,
        "group": u.group,
        "chat": chat,
        "metrics": metrics,
        "headline": head,
        "subset": subset,
    }
    found = unit_warnings(u.name, u.task, u.mode, records, metrics, subset, head["metric"])
    if head.get("ci_withheld"):
        found.append(interval_warning(u.name, head["ci_withheld"]))
    return entry, parts, found


def _digest(reqs, fingerprint: str) -> str:
    import hashlib

    h = hashlib.sha256(fingerprint.encode())
    for r in reqs:
        h.update(request_key(r, fingerprint).encode())
    return h.hexdigest()


def _hms(s: float) -> str:
    s = int(s)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def group_results(
    results_units: dict[str, dict], parts: dict[str, Parts | None] | None = None
) -> dict[str, dict]:
    """Units that differ only by seed form a group: numeric metrics as mean / SD over seeds, the
    headline with the interval of the seeds' pooled parts (``parts``: per unit, when at hand),
    and the subset (the same for every seed)."""
    groups: dict[str, dict] = {}
    for name, res in results_units.items():
        g = groups.setdefault(
            res["group"],
            {
                "task": res["task"],
                "mode": res["mode"],
                "shots": res["shots"],
                "units": [],
                "metrics": {},
            },
        )
        g["units"].append(name)
    for g in groups.values():
        units = [results_units[n] for n in g["units"]]
        per = [u["metrics"] for u in units]
        for m, v in per[0].items():
            if (
                isinstance(v, (int, float))
                and not isinstance(v, bool)
                and not m.endswith("_stderr")
                and m != "n"
            ):
                g["metrics"][m] = over_seeds([p[m] for p in per])
        if all("headline" in u for u in units):
            try:
                task: Task | None = get_task(g["task"])
            except Exception:  # a task gone since (a deleted YAML file)
                task = None
            g["headline"] = group_headline(
                task, g["mode"], units, [(parts or {}).get(n) for n in g["units"]]
            )
        if "subset" in units[0]:
            g["subset"] = units[0]["subset"]
    return groups


def rescore(store: RunStore) -> dict:
    """Recompute every metric, group and table of a saved run from its samples (no model):
    after a metric is added or fixed, old runs get it too."""
    results = store.read_results()
    units = []
    parts: dict[str, Parts | None] = {}
    warnings: list[RunWarning] = []
    for name, u in results["units"].items():
        task = get_task(u["task"])
        unit = Unit(task, u["mode"], u["shots"], u["seed"])
        subset = u.get("subset") or _old_subset(results, task, u)
        entry, parts[name], found = unit_result(
            unit, store.samples(name), bool(u.get("chat")), subset
        )
        u.update(entry)
        warnings += found
        units.append(unit)
    results["groups"] = group_results(results["units"], parts)
    results["tables"] = _tables(units, results["units"])
    results["warnings"] = [w.to_dict() for w in merged(warnings)]
    results["rescored"] = {
        "negbench": __version__,
        "git": git_commit(),
        "at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    store.write_results(results)
    _write_tables(store, results["tables"])
    return results


def _old_subset(results: dict, task: Task, u: dict) -> dict:
    """The subset of a unit saved before subsets were recorded: ``--limit`` then took the first
    N records (the full size from the run's dataset record)."""
    n = int((u.get("metrics") or {}).get("n") or 0)
    info = ((results.get("datasets") or {}).get(u["task"]) or {}).get(task.test_split) or {}
    full = int(info.get("n") or n)
    if n >= full:
        return Selection("all", n, n, rule=f"all {n:,} records").to_dict()
    return Selection(
        "limit",
        n,
        full,
        rule=f"the first {n:,} of {full:,} records (a run saved before subsets kept whole units)",
        asked=(results.get("config") or {}).get("limit"),
    ).to_dict()


def _write_tables(store: RunStore, tables: dict[str, str]) -> None:
    if tables:
        store.write_text(
            "tables.md", "\n\n".join(f"## {k}\n\n{v}" for k, v in tables.items()) + "\n"
        )


def _tables(units: list[Unit], results_units: dict[str, dict]) -> dict[str, str]:
    """Task-defined Markdown tables (e.g. error analysis), one per task × mode, rows = units."""
    out: dict[str, str] = {}
    seen: dict[tuple[str, str], list[tuple[str, dict]]] = {}
    makers: dict[str, Callable[[str, list[tuple[str, dict]]], str]] = {}
    for u in units:
        if u.task.tables is not None:
            seen.setdefault((u.task.name, u.mode), []).append(
                (u.name, results_units[u.name]["metrics"])
            )
            makers[u.task.name] = u.task.tables
    for (tname, mode), rows in seen.items():
        text = makers[tname](mode, rows)
        if text:
            notes = [unit_note(name, results_units[name]) for name, _ in rows]
            out[f"{tname}.{mode}"] = text.rstrip("\n") + "\n\n" + "\n".join(n for n in notes if n)
    return out


def _dataset_info(task: Task, selection: Selection | None, shots: bool = True) -> dict:
    """Size and fingerprint of each split the run reads: the few-shot split only when a unit
    draws shots (a 0-shot run of a set built without one, e.g. by ``negbench build mcq``, works);
    ``evaluated``: the records of the test split a unit evaluates (its subset)."""
    out: dict[str, Any] = {"source": task.source}
    splits = (
        {task.test_split, task.fewshot_split or task.test_split} if shots else {task.test_split}
    )
    for split in splits:
        docs = task.load(split)
        out[split] = {
            "n": len(docs),
            "sha256": fingerprint_records(d.fields for d in docs),
            "evaluated": selection.n
            if selection is not None and split == task.test_split
            else len(docs),
        }
    return out
