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
from typing import Any, Iterable, Iterator, Sequence

from negbench import __version__
from negbench.core.engine import Engine, EngineStats, is_request_level, progress_bar, skip_done
from negbench.core.requests import request_key
from negbench.evaluation.fewshot import build_context, fewshot_draws
from negbench.evaluation.metrics import over_seeds, summarize
from negbench.evaluation.store import RunStore, fingerprint_records, git_commit, package_versions
from negbench.tasks import Task, get_task
from negbench.tasks.base import Doc

SCHEMA_VERSION = 1


@dataclass
class RunConfig:
    model: str
    tasks: list[str]
    modes: list[str] | None = None        # None: each task's default modes
    shots: list[int] | None = None        # None: each task's default shots
    seeds: list[int] | None = None        # None: each task's default seeds
    limit: int | None = None
    protocol: bool = False                # each task's paper protocol (shots × seeds)
    chat: bool = False
    system_prompt: str | None = None
    chat_layout: str = "lm-eval"          # "lm-eval": description in the system turn; "user"
    backend: dict[str, Any] = field(default_factory=dict)
    engine: dict[str, Any] = field(default_factory=dict)
    shard_size: int = 20_000              # samples per shard: each finished shard is saved, so a
                                          # killed run over 381k sentences resumes shard by shard


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
    """Expand the config into units.  With several tasks, each takes the requested modes it has;
    a requested mode that no task has is an error, not an empty run."""
    units = []
    tasks = [get_task(t) for t in cfg.tasks]
    if cfg.modes and len(tasks) > 1:
        for m in cfg.modes:
            if not any(m in t.modes for t in tasks):
                tasks[0].mode(m)                    # raises the usual "has no mode" error
    for task in tasks:
        modes = cfg.modes or list(task.default_modes or task.modes)
        modes = [m for m in modes if m in task.modes] if cfg.modes and len(tasks) > 1 else modes
        for m in modes:
            task.mode(m)
            for k in (cfg.shots if cfg.shots is not None else _protocol(task, cfg)[0]):
                seeds = cfg.seeds if cfg.seeds is not None else _protocol(task, cfg)[1]
                for seed in ([None] if k == 0 else seeds):
                    units.append(Unit(task, m, k, seed))
    return units


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
    n_requests: int                       # requests its samples make (for the progress bar)

    def draws(self) -> Iterator[list[Doc]]:
        """The records' few-shot examples, in record order (one sampler stream per unit)."""
        task = self.unit.task
        return iter(fewshot_draws(self.docs, self.pool, self.unit.shots, self.unit.seed,
                                  same_split=self.same_split, sampler=task.fewshot_sampler))


@dataclass
class Plan:
    """A run checked against its data before any model is loaded or anything is written."""

    units: list[UnitData]
    datasets: dict[str, dict]


def prepare(cfg: RunConfig) -> Plan:
    """Load every split, draw every few-shot example and render every prompt of the run (then
    drop them).  All data errors surface here, before the model loads and before the run folder
    is touched."""
    units = plan_units(cfg)
    datasets: dict[str, dict] = {}
    for u in units:
        if u.task.name not in datasets:
            shots = any(v.shots for v in units if v.task.name == u.task.name)
            datasets[u.task.name] = _dataset_info(u.task, cfg.limit, shots)
    return Plan([load_unit(u, cfg) for u in units], datasets)


def load_unit(unit: Unit, cfg: RunConfig) -> UnitData:
    """A unit's records and pool, every record rendered once to check it (nothing rendered is
    kept: prompts cost hundreds of bytes per record, the records themselves may be lazy)."""
    task = unit.task
    spec = task.mode(unit.mode)
    docs = task.load(task.test_split)
    if spec.include is not None:
        docs = [d for d in docs if spec.include(d)]
    if cfg.limit:
        docs = docs[:cfg.limit]
    fs_split = task.fewshot_split or task.test_split
    pool = task.load(fs_split) if unit.shots else []
    data = UnitData(unit, docs, pool, fs_split == task.test_split, 0)
    render = _renderer(spec, use_chat(task, cfg))      # a check only: chat or plain, same data
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
        return cfg.chat or bool(backend is not None and getattr(backend, "has_chat_template", False))
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
        self.memo: dict[str, Any] = {}       # rendered few-shot examples (bounded by the pool)
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
                context = build_context(r.query, examples, self.description, task.target_delimiter,
                                        task.fewshot_delimiter)
            gold_index = r.gold if isinstance(r.gold, int) else (
                r.choices.index(r.gold) if r.gold in r.choices else None)
            samples.append({"doc_id": doc.id, "task": task.name, "mode": unit.mode,
                            "shots": unit.shots, "seed": unit.seed,
                            "fewshot_ids": [d.id for d in shots], "context": context,
                            "choices": r.choices, "gold": r.gold, "gold_index": gold_index,
                            "meta": r.meta, "_rendered": r})
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
    d["backend"] = {k: cfg.backend.get(k) for k in IDENTITY_BACKEND}
    if cfg.backend.get("quantize"):       # only when set: 16-bit runs keep their identity
        d["backend"]["quantize"] = cfg.backend["quantize"]
    return d


def chat_context(backend, cfg: RunConfig, query: str, examples, description: str, task: Task) -> str:
    """The prompt under the model's chat template, laid out as lm-eval 0.4.13
    ``--apply_chat_template`` does (``chat_layout="lm-eval"``): the system prompt and the task
    description joined into one system message, the few-shot block and the query as one user
    turn.  ``chat_layout="user"`` puts the description in the user turn instead."""
    if cfg.chat_layout == "user":
        system = cfg.system_prompt or ""
        user = build_context(query, examples, description, task.target_delimiter,
                             task.fewshot_delimiter)
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
    return prefix + suffix if prefix[-1].isspace() or suffix[0].isspace() else prefix + delimiter + suffix


def evaluate(cfg: RunConfig, backend, engine: Engine, store: RunStore | None = None,
             log=print, plan: Plan | None = None, keep: dict[str, list[dict]] | None = None) -> dict:
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
        if b.chat and len(d.docs):          # works, before anything is written
            UnitBuilder(d, backend, cfg).build(0, 1)
    n_requests = sum(d.n_requests for d in plan.units)
    sizes = [len(d.docs) for d in plan.units]
    n_samples = sum(sizes)
    datasets = plan.datasets
    if store:                              # prompts are checked: nothing can fail on the data now
        store.write_config({"schema": SCHEMA_VERSION, "negbench": __version__, "started": started,
                            **asdict(cfg), "identity": run_identity(cfg),
                            "units": [u.name for u in units]})
    shards = _shards(sizes, cfg.shard_size)
    log(f"{len(units)} unit(s), {n_samples} samples, {n_requests} requests"
        + (f", {len(shards)} shards of ≤{cfg.shard_size} samples" if len(shards) > 1 else ""))
    on_disk = store is not None and len(shards) > 1
    kept: list[list[dict]] = [[] for _ in units]           # records held when not on disk
    stats = _score_shards(builders, shards, backend, engine, store if on_disk else None,
                          n_requests, log, kept)
    results_units: dict[str, dict] = {}
    streams = []
    for ui, u in enumerate(units):
        if on_disk:
            store.write_samples_from_shards(u.name, _unit_parts(shards, ui))
            records: Iterable[dict] = store.samples(u.name)
        else:
            records = kept[ui]
            if store:
                store.write_samples(u.name, records)
            if keep is not None:
                keep[u.name] = records
        metrics = unit_metrics(u.task, u.mode, records)
        results_units[u.name] = {"task": u.task.name, "mode": u.mode, "shots": u.shots,
                                 "seed": u.seed, "group": u.group, "chat": builders[ui].chat,
                                 "metrics": metrics}
        streams.append((u, records))
    groups = group_results(results_units)
    tables = _tables(units, results_units)
    warnings = run_warnings(streams)
    for w in warnings:
        log("warning: " + w)
    results = {
        "schema": SCHEMA_VERSION, "negbench": __version__, "started": started,
        "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "config": asdict(cfg),
        "model": {"spec": cfg.model, "fingerprint": backend.fingerprint,
                  "details": getattr(backend, "fingerprint_info", {})},
        "provenance": {"packages": package_versions(), "git": git_commit()},
        "datasets": datasets, "units": results_units, "groups": groups,
        "engine": asdict(stats), "cluster": engine.cluster_summary(), "wall_s": time.perf_counter() - t0,
        "shards": len(shards),
        "tables": tables, "warnings": warnings,
    }
    if store:
        store.write_results(results)
        _write_tables(store, tables)
        store.clear_shards()
    return results


Shard = list[tuple[int, int, int]]        # (unit index, first record, end record) segments


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


def _score_shards(builders: list[UnitBuilder], shards: list[Shard], backend, engine: Engine,
                  store: RunStore | None, n_requests: int, log, kept: list[list[dict]]) -> EngineStats:
    """Score shard by shard.  With ``store`` each finished shard's records are saved in the run
    folder with a digest of its requests and dropped; a rerun of the same run loads the digest
    instead of asking the engine (and unfinished shards still find their answered requests in the
    cache).  Without it the records are appended to ``kept`` (one list per unit)."""
    stats = EngineStats()
    bar = progress_bar(n_requests, "scoring", engine.config.progress)
    t0 = time.perf_counter()
    done_samples = loaded_samples = 0        # the rate counts only samples scored now
    total = sum(b - a for sh in shards for _, a, b in sh)
    for n, shard in enumerate(shards):
        samples: list[dict] = []
        per: list[list] = []
        owner: list[int] = []
        for ui, a, b in shard:
            s, r = builders[ui].build(a, b)
            samples += s
            per += r
            owner += [ui] * (b - a)
        reqs = [r for rs in per for r in rs]
        digest = _digest(reqs, backend.fingerprint) if store else None
        if digest and store.has_shard(n, digest, len(samples)):
            skip_done(bar, len(reqs))
            done_samples += len(samples)
            loaded_samples += len(samples)
            continue
        answers = engine.run(reqs, desc=f"shard {n + 1}/{len(shards)}", bar=bar)
        stats.add(engine.last_stats)
        metas = engine.provenance(engine.last_keys) if is_request_level(backend) else None
        k = 0
        for ui, s, rs in zip(owner, samples, per):
            u = builders[ui].data.unit
            r = s.pop("_rendered")
            s.update(u.task.mode(u.mode).formulation.score(r, answers[k:k + len(rs)]))
            if metas is not None and any(metas[k:k + len(rs)]):
                s["answered_by"] = answered_by(metas[k:k + len(rs)])
            k += len(rs)
        if store:
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
            log(f"shard {n + 1}/{len(shards)} done: {done_samples}/{total} samples, "
                f"{rate:.0f} samples/s, ETA {_hms((total - done_samples) / rate if rate else 0)}")
    bar.close()
    return stats


def answered_by(metas: list[dict | None]) -> list[dict]:
    """Who answered a sample's requests (request-level backends): the distinct served model ids
    and system fingerprints, so a result can be traced to the exact model version behind an API."""
    seen: list[dict] = []
    for m in metas:
        row = {"served_model": (m or {}).get("served_model"),
               "system_fingerprint": (m or {}).get("system_fingerprint")}
        if row not in seen:
            seen.append(row)
    return seen


def run_warnings(units: Iterable[tuple[Unit, Iterable[dict]]]) -> list[str]:
    """Signs that a run measured the prompt format rather than the model, said out loud (read
    from each generation unit's records in one pass)."""
    out = []
    for u, records in units:
        if u.task.mode(u.mode).formulation.kind != "generate":
            continue                       # only generations have outputs to judge
        n_out = 0
        how: set[str] = set()
        n_empty = 0
        for s in records:
            if "output" not in s:
                continue
            n_out += 1
            if not s["output"].strip():
                n_empty += 1
                how.add(str(s.get("stopped_by")))
        if not n_out:
            continue
        if n_empty * 2 > n_out:
            out.append(f"{u.name}: {n_empty} of {n_out} generations are empty (stopped by "
                       f"{', '.join(sorted(how))} at once): the model ends its answer before "
                       "writing one. Try --chat for an instruction-tuned model, more shots, or a "
                       "log-likelihood mode (cloze / letter)")
    return out


def _digest(reqs, fingerprint: str) -> str:
    import hashlib
    h = hashlib.sha256(fingerprint.encode())
    for r in reqs:
        h.update(request_key(r, fingerprint).encode())
    return h.hexdigest()


def _hms(s: float) -> str:
    s = int(s)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def unit_metrics(task: Task, mode: str, records: Iterable[dict]) -> dict:
    """All metrics of one unit: pure functions of its per-sample records.  ``records``: a list,
    or a re-iterable stream of a saved unit's samples (:meth:`RunStore.samples`), read once per
    metric family; tasks whose ``extra_metrics`` need a list get one."""
    metrics = summarize(records, task.mode(mode).formulation.metrics)
    if task.extra_metrics:
        if not task.stream_metrics and not isinstance(records, list):
            records = list(records)
        metrics.update(task.extra_metrics(mode, records))
    return metrics


def group_results(results_units: dict[str, dict]) -> dict[str, dict]:
    """Units that differ only by seed form a group: numeric metrics as mean / SD over seeds."""
    groups: dict[str, dict] = {}
    for name, res in results_units.items():
        g = groups.setdefault(res["group"], {"task": res["task"], "mode": res["mode"],
                                             "shots": res["shots"], "units": [], "metrics": {}})
        g["units"].append(name)
    for g in groups.values():
        per = [results_units[n]["metrics"] for n in g["units"]]
        for m, v in per[0].items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and not m.endswith("_stderr") and m != "n":
                g["metrics"][m] = over_seeds([p[m] for p in per])
    return groups


def rescore(store: RunStore) -> dict:
    """Recompute every metric, group and table of a saved run from its samples (no model):
    after a metric is added or fixed, old runs get it too."""
    results = store.read_results()
    units = []
    for name, u in results["units"].items():
        task = get_task(u["task"])
        u["metrics"] = unit_metrics(task, u["mode"], store.samples(name))
        units.append(Unit(task, u["mode"], u["shots"], u["seed"]))
    results["groups"] = group_results(results["units"])
    results["tables"] = _tables(units, results["units"])
    results["rescored"] = {"negbench": __version__, "git": git_commit(),
                           "at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    store.write_results(results)
    _write_tables(store, results["tables"])
    return results


def _write_tables(store: RunStore, tables: dict[str, str]) -> None:
    if tables:
        store.write_text("tables.md", "\n\n".join(f"## {k}\n\n{v}" for k, v in tables.items()) + "\n")


def _tables(units: list[Unit], results_units: dict[str, dict]) -> dict[str, str]:
    """Task-defined Markdown tables (e.g. error analysis), one per task × mode, rows = units."""
    out: dict[str, str] = {}
    seen: dict[tuple[str, str], list[tuple[str, dict]]] = {}
    tasks = {}
    for u in units:
        if u.task.tables is not None:
            seen.setdefault((u.task.name, u.mode), []).append((u.name, results_units[u.name]["metrics"]))
            tasks[u.task.name] = u.task
    for (tname, mode), rows in seen.items():
        text = tasks[tname].tables(mode, rows)
        if text:
            out[f"{tname}.{mode}"] = text
    return out


def _dataset_info(task: Task, limit: int | None, shots: bool = True) -> dict:
    """Size and fingerprint of each split the run reads: the few-shot split only when a unit
    draws shots (a 0-shot run of a set built without one, e.g. by ``negbench build mcq``, works)."""
    out = {"source": task.source}
    splits = {task.test_split, task.fewshot_split or task.test_split} if shots else {task.test_split}
    for split in splits:
        docs = task.load(split)
        out[split] = {"n": len(docs), "sha256": fingerprint_records(d.fields for d in docs),
                      "evaluated": min(len(docs), limit) if limit and split == task.test_split else len(docs)}
    return out
