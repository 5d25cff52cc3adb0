"""An evaluation run: tasks × modes × shots × seeds → requests → engine → records → metrics.

All requests of the run go to the engine in one call, so identical requests across units (e.g. a
0-shot prompt shared by several modes, or the same few-shot block) are computed once.
"""
from __future__ import annotations

import datetime as _dt
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from negbench import __version__
from negbench.engine import Engine, EngineStats, is_request_level, progress_bar, skip_done
from negbench.requests import request_key
from negbench.fewshot import build_context, fewshot_draws
from negbench.metrics import over_seeds, summarize
from negbench.store import RunStore, fingerprint_records, git_commit, package_versions
from negbench.tasks import Task, get_task

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
    """A unit's records, few-shot draws and rendered prompts: everything but the model."""

    unit: Unit
    docs: list
    rendered: list                        # Rendered per record
    examples: list                        # per record: the rendered few-shot examples
    fewshot_ids: list


@dataclass
class Plan:
    """A run checked against its data before any model is loaded or anything is written."""

    units: list[UnitData]
    datasets: dict[str, dict]


def prepare(cfg: RunConfig) -> Plan:
    """Load every split, draw every few-shot example and render every prompt of the run.  All
    data errors surface here, before the model loads and before the run folder is touched."""
    units = plan_units(cfg)
    datasets: dict[str, dict] = {}
    for u in units:
        if u.task.name not in datasets:
            datasets[u.task.name] = _dataset_info(u.task, cfg.limit)
    return Plan([load_unit(u, cfg) for u in units], datasets)


def load_unit(unit: Unit, cfg: RunConfig) -> UnitData:
    task = unit.task
    spec = task.mode(unit.mode)
    docs = task.load(task.test_split)
    if spec.include is not None:
        docs = [d for d in docs if spec.include(d)]
    if cfg.limit:
        docs = docs[:cfg.limit]
    fs_split = task.fewshot_split or task.test_split
    pool = task.load(fs_split) if unit.shots else []
    draws = list(fewshot_draws(docs, pool, unit.shots, unit.seed,
                               same_split=fs_split == task.test_split, sampler=task.fewshot_sampler))
    render = spec.render_chat if cfg.chat and spec.render_chat else spec.render
    memo: dict[str, Any] = {}

    def shot(d):
        if d.id not in memo:
            memo[d.id] = render(d)
        return memo[d.id]
    return UnitData(unit, docs, [render(d) for d in docs], [[shot(s) for s in sh] for sh in draws],
                    [[s.id for s in sh] for sh in draws])


def build_requests(data: UnitData | Unit, backend, cfg: RunConfig):
    """A unit's prompts in their final form; returns (samples skeletons, requests per sample)."""
    if isinstance(data, Unit):
        data = load_unit(data, cfg)
    unit, task = data.unit, data.unit.task
    spec = task.mode(unit.mode)
    description = task.description(unit.mode)
    samples, reqs = [], []
    for doc, r, examples, ids in zip(data.docs, data.rendered, data.examples, data.fewshot_ids):
        if cfg.chat:
            context = chat_context(backend, cfg, r.query, examples, description, task)
        else:
            context = build_context(r.query, examples, description, task.target_delimiter,
                                    task.fewshot_delimiter)
        gold_index = r.gold if isinstance(r.gold, int) else (
            r.choices.index(r.gold) if r.gold in r.choices else None)
        samples.append({"doc_id": doc.id, "task": task.name, "mode": unit.mode, "shots": unit.shots,
                        "seed": unit.seed, "fewshot_ids": ids, "context": context,
                        "choices": r.choices, "gold": r.gold, "gold_index": gold_index,
                        "meta": r.meta, "_rendered": r})
        reqs.append(spec.formulation.requests(context, r))
    return samples, reqs


IDENTITY_BACKEND = ("dtype", "adapter", "max_length", "add_bos")


def run_identity(cfg: RunConfig) -> dict:
    """What makes two runs the same run: everything that can change a result (engine settings,
    threads and shard size cannot, by the engine's batching invariance)."""
    d = asdict(cfg)
    d.pop("engine"), d.pop("shard_size")
    d["backend"] = {k: cfg.backend.get(k) for k in IDENTITY_BACKEND}
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
             log=print, plan: Plan | None = None) -> dict:
    t0 = time.perf_counter()
    plan = plan or prepare(cfg)
    units = [d.unit for d in plan.units]
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    built = []
    n_requests = 0
    for data in plan.units:
        samples, reqs = build_requests(data, backend, cfg)
        built.append((data.unit, samples, reqs))
        n_requests += sum(len(rs) for rs in reqs)
    n_samples = sum(len(s) for _, s, _ in built)
    datasets = plan.datasets
    if store:                              # prompts are built: nothing can fail on the data now
        store.write_config({"schema": SCHEMA_VERSION, "negbench": __version__, "started": started,
                            **asdict(cfg), "identity": run_identity(cfg),
                            "units": [u.name for u in units]})
    shards = _shards(built, cfg.shard_size)
    log(f"{len(units)} unit(s), {n_samples} samples, {n_requests} requests"
        + (f", {len(shards)} shards of ≤{cfg.shard_size} samples" if len(shards) > 1 else ""))
    stats = _score_shards(built, shards, backend, engine, store, n_requests, log)
    results_units: dict[str, dict] = {}
    for u, samples, _ in built:
        metrics = unit_metrics(u.task, u.mode, samples)
        results_units[u.name] = {"task": u.task.name, "mode": u.mode, "shots": u.shots,
                                 "seed": u.seed, "group": u.group, "metrics": metrics}
        if store:
            store.write_samples(u.name, samples)
    groups = group_results(results_units)
    tables = _tables(units, results_units)
    warnings = run_warnings(built)
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
        "engine": asdict(stats), "wall_s": time.perf_counter() - t0,
        "shards": len(shards),
        "tables": tables, "warnings": warnings,
    }
    if store:
        store.write_results(results)
        _write_tables(store, tables)
        store.clear_shards()
    return results


def _shards(built, shard_size: int) -> list[list[tuple[int, int]]]:
    """(unit index, sample index) pairs cut into shards of ``shard_size`` samples, in run order.
    A run that fits in one shard is one engine call (all cross-unit sharing kept)."""
    items = [(ui, si) for ui, (_, samples, _) in enumerate(built) for si in range(len(samples))]
    if not shard_size or len(items) <= shard_size:
        return [items]
    return [items[i:i + shard_size] for i in range(0, len(items), shard_size)]


def _score_shards(built, shards, backend, engine: Engine, store: RunStore | None, n_requests: int,
                  log) -> EngineStats:
    """Score shard by shard.  A finished shard's records are saved in the run folder with a
    digest of its requests; a rerun of the same run loads them instead of asking the engine (and
    unfinished shards still find their answered requests in the cache)."""
    stats = EngineStats()
    bar = progress_bar(n_requests, "scoring", engine.config.progress)
    t0 = time.perf_counter()
    done_samples = loaded_samples = 0        # the rate counts only samples scored now
    total = sum(len(sh) for sh in shards)
    for n, shard in enumerate(shards):
        reqs = [r for ui, si in shard for r in built[ui][2][si]]
        digest = _digest(reqs, backend.fingerprint) if store and len(shards) > 1 else None
        saved = store.read_shard(n, digest) if digest else None
        if saved is not None and len(saved) == len(shard):
            for (ui, si), rec in zip(shard, saved):
                built[ui][1][si] = rec
            skip_done(bar, len(reqs))
            done_samples += len(shard)
            loaded_samples += len(shard)
            continue
        answers = engine.run(reqs, desc=f"shard {n + 1}/{len(shards)}", bar=bar)
        stats.add(engine.last_stats)
        metas = engine.provenance(engine.last_keys) if is_request_level(backend) else None
        k = 0
        for ui, si in shard:
            u, samples, per = built[ui]
            rs = per[si]
            s = samples[si]
            r = s.pop("_rendered")
            s.update(u.task.mode(u.mode).formulation.score(r, answers[k:k + len(rs)]))
            if metas is not None and any(metas[k:k + len(rs)]):
                s["answered_by"] = answered_by(metas[k:k + len(rs)])
            k += len(rs)
        if digest:
            store.write_shard(n, digest, [built[ui][1][si] for ui, si in shard])
        done_samples += len(shard)
        if len(shards) > 1:
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


def run_warnings(built) -> list[str]:
    """Signs that a run measured the prompt format rather than the model, said out loud."""
    out = []
    for u, samples, _ in built:
        outs = [s["output"] for s in samples if "output" in s]
        if not outs:
            continue
        empty = [s for s in samples if "output" in s and not s["output"].strip()]
        if len(empty) * 2 > len(outs):
            how = sorted({str(s.get("stopped_by")) for s in empty})
            out.append(f"{u.name}: {len(empty)} of {len(outs)} generations are empty (stopped by "
                       f"{', '.join(how)} at once): the model ends its answer before writing one. "
                       "Try --chat for an instruction-tuned model, more shots, or a "
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


def unit_metrics(task: Task, mode: str, records: list[dict]) -> dict:
    """All metrics of one unit: pure functions of its per-sample records."""
    metrics = summarize(records, task.mode(mode).formulation.metrics)
    if task.extra_metrics:
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
        u["metrics"] = unit_metrics(task, u["mode"], store.read_samples(name))
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


def _dataset_info(task: Task, limit: int | None) -> dict:
    out = {"source": task.source}
    for split in {task.test_split, task.fewshot_split or task.test_split}:
        docs = task.load(split)
        out[split] = {"n": len(docs), "sha256": fingerprint_records(d.fields for d in docs),
                      "evaluated": min(len(docs), limit) if limit and split == task.test_split else len(docs)}
    return out
