"""A negbench run's results in lm-evaluation-harness 0.4.13's results layout.

Tools that read lm-eval output (leaderboards, ``lm_eval.utils.make_table``, the Hugging Face
results datasets lm-eval pushes) then read negbench's too.  The mapping:

* each negbench **unit** (task × mode × shots × seed) is an lm-eval task, named as the unit
  (``nubench.completion.5shot.seed42``), with ``sample_len``, its ``n-shot``, ``n-samples``
  (``original``: the split's size, ``effective``: the items evaluated) and a ``configs`` entry
  in the shape of an lm-eval task config (splits, delimiters, few-shot sampler, output type and
  generation settings, metric list) whose ``metadata`` carries what negbench adds (mode, seed,
  chat, dataset fingerprints);
* metric keys are written as lm-eval writes them, ``"<metric>,none"`` and
  ``"<metric>_stderr,none"`` (filter ``none``: negbench's answer extraction is part of its
  mode); a stderr negbench does not compute is ``"N/A"``, as lm-eval writes it.  Only flat,
  finite numbers are metrics: nested analyses and counts stay in negbench's own
  ``results.json``, and a metric that is undefined on the run (NaN) is left out and named in
  the unit's ``metadata.undefined_metrics`` — the file is strict JSON;
* units that differ only by seed form an lm-eval **group** (the seed mean, as negbench's
  ``groups``; stderr ``"N/A"``), and every negbench task is a group of its units without an
  aggregate, as lm-eval nests benchmark families;
* the top-level ``config`` and provenance fields are lm-eval's (model ``negbench``, the model
  args ``negbench lm-eval`` would take, ``git_hash``, ``date``, ``transformers_version``, chat
  settings, ``total_evaluation_time_seconds``); a ``negbench`` block keeps the run's full
  provenance.  Fields only an lm-eval process knows (``pretty_env_info``, tokenizer tokens,
  ``lm_eval_version``) are not written.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any, Mapping, TypeGuard

LAYOUT_VERSION = "0.4.13"  # the lm-evaluation-harness release whose layout is written
FILTER = "none"

#: metrics where lower is better (errors, miscalibration, confusions, unreadable answers); no
#: direction (``None``) for distributions, signed changes and block tallies
_LOWER = re.compile(r"(^|\.)(error_rate|brier|ece|unparseable(_rate)?)$|^confusion_.*_pct$")
_NO_DIRECTION = re.compile(r"^incorrect_.*_pct$|(^|\.)acc_chg$|^pred_true_rate$|^blocks_")


def higher_is_better(metric: str) -> bool | None:
    """The direction of a negbench metric, for lm-eval's ``higher_is_better``."""
    if _LOWER.search(metric):
        return False
    if _NO_DIRECTION.search(metric):
        return None
    return True


def sanitize_model_name(name: str) -> str:
    """lm-eval's ``utils.sanitize_model_name`` (the results folder's name)."""
    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", name)


def _finite(v: Any) -> TypeGuard[float]:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def flat_metrics(
    metrics: Mapping[str, Any],
) -> tuple[dict[str, float], dict[str, float | str], list[str]]:
    """(values, stderrs, undefined) of a unit's flat metrics: numbers that are not counts
    (``n``, ``n_*``) or standard errors; a NaN value is undefined, a missing or NaN stderr
    ``"N/A"``."""
    values: dict[str, float] = {}
    stderrs: dict[str, float | str] = {}
    undefined: list[str] = []
    for k, v in metrics.items():
        if k == "n" or k.startswith("n_") or k.endswith("_stderr"):
            continue
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            continue
        if not _finite(v):
            undefined.append(k)
            continue
        values[k] = float(v)
        se = metrics.get(k + "_stderr")
        stderrs[k] = float(se) if _finite(se) else "N/A"
    return values, stderrs, undefined


def _task_config(
    unit_name: str, u: Mapping[str, Any], results: Mapping[str, Any], values, undefined: list[str]
) -> dict:
    """An lm-eval-shaped task config for one unit (what negbench knows of its task definition)."""
    from negbench.errors import NegbenchError

    ds = (results.get("datasets") or {}).get(u["task"], {})
    cfg: dict[str, Any] = {
        "task": unit_name,
        "tag": [u["task"]],
        "dataset_path": ds.get("source", ""),
    }
    meta: dict[str, Any] = {
        "version": results.get("negbench"),
        "negbench_task": u["task"],
        "mode": u["mode"],
        "shots": u["shots"],
        "seed": u.get("seed"),
        "chat": u.get("chat"),
    }
    from negbench.tasks import Task
    from negbench.scoring.task import ModeSpec

    task: Task | None = None
    spec: ModeSpec | None = None
    try:
        from negbench.tasks import get_task

        task = get_task(u["task"])
        spec = task.mode(u["mode"])
    except NegbenchError as exc:  # e.g. a user's JSONL task file that moved
        meta["task_definition"] = f"unavailable: {exc.what}"
    if task is not None and spec is not None:
        f = spec.formulation
        fs_split = task.fewshot_split or task.test_split
        sampler = task.fewshot_sampler if isinstance(task.fewshot_sampler, str) else "custom"
        cfg.update(
            {
                "test_split": task.test_split,
                "fewshot_split": fs_split,
                "description": task.description(u["mode"]),
                "target_delimiter": task.target_delimiter,
                "fewshot_delimiter": task.fewshot_delimiter,
                "fewshot_config": {
                    "sampler": "default" if sampler == "lm-eval" else sampler,
                    "split": fs_split,
                },
                "num_fewshot": u["shots"],
                "output_type": "generate_until" if f.kind == "generate" else "multiple_choice",
            }
        )
        if f.kind == "generate":
            cfg["generation_kwargs"] = {
                "until": list(getattr(f, "stop", ())),
                "do_sample": False,
                "max_gen_toks": getattr(f, "max_tokens", None),
            }
        meta["formulation"] = f.kind
        per_sample = set(f.metrics)
    else:
        cfg["num_fewshot"] = u["shots"]
        per_sample = set()
    cfg["metric_list"] = [
        {
            "metric": m,
            **({"aggregation": "mean"} if m in per_sample else {}),
            "higher_is_better": higher_is_better(m),
        }
        for m in values
    ]
    cfg["repeats"] = 1
    cfg["should_decontaminate"] = False
    meta["split"] = {k: v for k, v in ds.items() if k != "source"}
    if undefined:
        meta["undefined_metrics"] = sorted(undefined)
    cfg["metadata"] = meta
    return cfg


def _test_split_size(
    results: Mapping[str, Any], u: Mapping[str, Any], cfg: Mapping[str, Any]
) -> int | None:
    ds = (results.get("datasets") or {}).get(u["task"], {})
    split = cfg.get("test_split")
    if split in ds and isinstance(ds[split], dict):
        return ds[split].get("n")
    sizes = [
        int(v["n"]) for k, v in ds.items() if isinstance(v, dict) and isinstance(v.get("n"), int)
    ]
    return max(sizes) if sizes else None


def _model_args(config: Mapping[str, Any]) -> str:
    args = {"model": config.get("model")}
    for k, v in (config.get("backend") or {}).items():
        if v is not None and k in (
            "dtype",
            "device",
            "adapter",
            "max_length",
            "threads",
            "add_bos",
        ):
            args[k] = v
    return ",".join(f"{k}={v}" for k, v in args.items())


def _timestamp(iso: str | None) -> float | None:
    if not iso:
        return None
    return _dt.datetime.fromisoformat(iso).timestamp()


def to_lm_eval(results: Mapping[str, Any]) -> dict:
    """The lm-eval results dict of a negbench ``results.json`` (see the module docstring)."""
    units: Mapping[str, Mapping[str, Any]] = results["units"]
    config = results.get("config") or {}
    res: dict[str, dict] = {}
    groups: dict[str, dict] = {}
    subtasks: dict[str, list[str]] = {}
    configs: dict[str, dict] = {}
    versions: dict[str, Any] = {}
    n_shot: dict[str, int] = {}
    hib: dict[str, dict[str, bool | None]] = {}
    n_samples: dict[str, dict] = {}
    for name, u in units.items():
        metrics = u.get("metrics") or {}
        values, stderrs, undefined = flat_metrics(metrics)
        entry: dict[str, Any] = {
            "name": name,
            "alias": name,
            "sample_len": int(metrics.get("n", 0)),
        }
        for m, v in values.items():
            entry[f"{m},{FILTER}"] = v
            entry[f"{m}_stderr,{FILTER}"] = stderrs[m]
        res[name] = entry
        configs[name] = _task_config(name, u, results, values, undefined)
        versions[name] = results.get("negbench")
        n_shot[name] = int(u["shots"])
        hib[name] = {m: higher_is_better(m) for m in values}
        n_samples[name] = {
            "original": _test_split_size(results, u, configs[name]) or entry["sample_len"],
            "effective": entry["sample_len"],
        }
    # seed groups: the seed mean of each metric, as negbench's groups
    by_task: dict[str, list[str]] = {}
    for gname, g in (results.get("groups") or {}).items():
        members = [n for n in g.get("units", []) if n in res]
        if len(members) < 2:
            by_task.setdefault(g["task"], []).extend(members)
            continue
        entry = {
            "name": gname,
            "alias": gname,
            "sample_len": sum(res[n]["sample_len"] for n in members),
        }
        for m, stat in (g.get("metrics") or {}).items():
            mean = stat.get("mean") if isinstance(stat, dict) else None
            if _finite(mean) and all(f"{m},{FILTER}" in res[n] for n in members):
                entry[f"{m},{FILTER}"] = float(mean)
                entry[f"{m}_stderr,{FILTER}"] = "N/A"
        res[gname] = entry
        groups[gname] = dict(entry)
        subtasks[gname] = members
        by_task.setdefault(g["task"], []).append(gname)
    listed = {n for ms in by_task.values() for n in ms} | {
        n for ms in subtasks.values() for n in ms
    }
    for name, u in units.items():  # units of a run saved without groups
        if name not in listed:
            by_task.setdefault(u["task"], []).append(name)
    for task, members in by_task.items():
        res[task] = {"name": task, "alias": task}
        subtasks[task] = members

    # lm-eval's propagation to groups: n-shot where the units agree, directions merged
    def leaves(name: str) -> list[str]:
        return [x for c in subtasks[name] for x in (leaves(c) if c in subtasks else [c])]

    for g in subtasks:
        under = leaves(g)
        shots = {n_shot[c] for c in under}
        if len(shots) == 1:
            n_shot[g] = shots.pop()
        merged: dict[str, bool | None] = {}
        for c in under:
            for m, h in hib[c].items():
                merged[m] = h if m not in merged or merged[m] == h else None
        if merged:
            hib[g] = merged
    prov = results.get("provenance") or {}
    git = prov.get("git") or {}
    packages = prov.get("packages") or {}
    backend = config.get("backend") or {}
    engine = config.get("engine") or {}
    seeds = config.get("seeds") or []
    system = config.get("system_prompt")
    model = (results.get("model") or {}).get("spec") or config.get("model") or ""
    details = (results.get("model") or {}).get("details") or {}
    out: dict[str, Any] = {
        "results": res,
        **({"groups": groups} if groups else {}),
        "group_subtasks": subtasks,
        "configs": dict(sorted(configs.items())),
        "versions": dict(sorted(versions.items())),
        "n-shot": dict(sorted(n_shot.items())),
        "higher_is_better": dict(sorted(hib.items())),
        "n-samples": n_samples,
        "config": {
            "model": "negbench",
            "model_args": _model_args({**config, "model": model}),
            "model_num_parameters": None,
            "model_dtype": backend.get("dtype"),
            "model_revision": None,
            "model_sha": (results.get("model") or {}).get("fingerprint"),
            "batch_size": engine.get("batch_size"),
            "batch_sizes": [],
            "device": backend.get("device"),
            "use_cache": None,
            "limit": config.get("limit"),
            "bootstrap_iters": 0,
            "gen_kwargs": None,
            "random_seed": None,
            "numpy_seed": None,
            "torch_seed": None,
            "fewshot_seed": seeds[0] if len(seeds) == 1 else None,
        },
        "git_hash": git.get("commit"),
        "date": _timestamp(results.get("started")),
        "transformers_version": packages.get("transformers"),
        "upper_git_hash": None,
        "max_length": details.get("max_length"),
        "task_hashes": {},
        "model_source": "negbench",
        "model_name": model,
        "model_name_sanitized": sanitize_model_name(model),
        "system_instruction": system,
        "system_instruction_sha": hashlib.sha256(system.encode()).hexdigest() if system else None,
        "fewshot_as_multiturn": False,
        "chat_template": None,
        "chat_template_sha": None,
        "total_evaluation_time_seconds": str(results.get("wall_s")),
        "negbench": {
            k: results.get(k)
            for k in (
                "schema",
                "negbench",
                "started",
                "finished",
                "model",
                "provenance",
                "datasets",
                "warnings",
            )
        }
        | {
            "layout": f"lm-evaluation-harness {LAYOUT_VERSION}",
            "chat_units": sorted(n for n, u in units.items() if u.get("chat")),
        },
    }
    return _strict(out)


def _strict(obj: Any) -> Any:
    """The object with every non-finite float replaced by None (strict JSON everywhere, including
    the provenance copied from results.json)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_strict(v) for v in obj]
    return obj


def dumps(obj: Any) -> str:
    """Strict JSON text (``allow_nan=False``: a NaN is a bug here, not a value)."""
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def results_filename(results: Mapping[str, Any]) -> str:
    """``results_<date>.json`` as lm-eval's ``EvaluationTracker`` names it (the run's finish time,
    ``:`` replaced by ``-``), so ``lm_eval.utils.get_results_filenames`` and
    ``get_latest_filename`` find and order it."""
    when = results.get("finished") or results.get("started")
    t = _dt.datetime.fromisoformat(when) if when else _dt.datetime.now(_dt.timezone.utc)
    if t.tzinfo is not None:
        t = t.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return f"results_{t.isoformat().replace(':', '-')}.json"


def write_lm_eval(results: Mapping[str, Any], out_dir: str | Path) -> Path:
    """Write ``<out_dir>/<model_name_sanitized>/results_<date>.json`` (lm-eval's layout on disk)
    atomically; returns its path."""
    from negbench.files import atomic_write_text

    data = to_lm_eval(results)
    folder = Path(out_dir) / data["model_name_sanitized"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / results_filename(results)
    atomic_write_text(path, dumps(data))
    return path
