"""``negbench profile``: every negation benchmark whose data is available, on one session.

One :class:`~negbench.evaluation.session.Session` (one loaded model, one response cache, one
engine) runs every part of the preset into ``PROFILE/runs/<part>``; the manifest
(``profile.json``) is rewritten after each part, so a killed profile rerun skips every finished
part and resumes the unfinished one (its staging folder and the cache keep what it had done).

Nothing is silently skipped: a benchmark whose data is missing is listed with how to get it; a
benchmark whose mode the model cannot answer (an API model without prompt log-probabilities)
is listed with the mode to use instead; a benchmark that fails is listed with its error — and
the rest of the profile runs.  Options, the preset, the benchmarks, the modes and the output
folder are checked before the model loads or anything is written.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from negbench.errors import NegbenchError, OptionError
from negbench.profile.folder import (
    MANIFEST,
    RUNS,
    SCHEMA,
    check_target,
    now,
    read_manifest,
    write_manifest,
)
from negbench.profile.presets import benchmarks as all_benchmarks, check_preset, select, with_modes
from negbench.scoring.profile_parts import Benchmark, Part

DEFAULT_MODEL = "smollm2-135m-instruct"


def _stderr(s: str) -> None:
    print(s, file=sys.stderr)


@dataclass
class PartPlan:
    """A part as it will run: the tasks whose data is there, and those whose data is not."""

    benchmark: Benchmark
    part: Part
    tasks: list[str]
    missing: list[dict] = field(default_factory=list)  # {"task", "message", "fix"}

    def spec(self) -> dict:
        """What the part runs (as JSON holds it: lists, not tuples): its run folder is reused
        only when this is unchanged."""
        return json.loads(json.dumps({**self.part.to_dict(), "tasks": list(self.tasks)}))


def default_out(model: str, preset: str, adapter: str | None = None) -> Path:
    """``profiles/<model>[+<adapter>]__<preset>`` (as ``negbench run``'s ``runs/<model>__<task>``)."""
    from negbench.scoring.runs import short_name

    name = short_name(model) + (f"+{short_name(adapter)}" if adapter else "")
    return Path("profiles") / f"{name}__{preset}"


def check_modes(
    modes: Mapping[str, str] | None, chosen: Sequence[Benchmark], preset: str
) -> dict[str, str]:
    """``--mode BENCH=MODE``: a benchmark of the profile, and a mode every task of its headline
    part has."""
    from negbench.tasks import get_task

    out = dict(modes or {})
    keys = {p.name: b for b in chosen for p in b.parts(preset)}
    for k, m in out.items():
        if k not in keys:
            raise OptionError(
                f"--mode {k}={m}: '{k}' is not a benchmark of this profile",
                where="--mode",
                fix="benchmarks: " + ", ".join(keys),
            )
        part = next(p for p in keys[k].parts(preset) if p.name == k)
        for t in part.tasks:
            get_task(t).mode(m)  # names the task and its modes
    return out


def task_data(task: str, shots: bool) -> dict | None:
    """None when the task's data can be read (test split, and the few-shot split when shots
    are drawn), else what is missing: the loader's message and fix."""
    from negbench.tasks import get_task

    try:
        t = get_task(task)
        t.load(t.test_split)
        if shots and t.fewshot_split and t.fewshot_split != t.test_split:
            t.load(t.fewshot_split)
    except NegbenchError as exc:
        return {"task": task, "message": exc.what, "fix": exc.fix or ""}
    return None


def plan(
    chosen: Sequence[Benchmark],
    preset: str,
    modes: Mapping[str, str],
    sample: int | None = None,
    limit: int | None = None,
) -> list[PartPlan]:
    """Every part of the chosen benchmarks, with the tasks whose data is available.  ``sample``
    replaces the preset's subset sizes; ``limit`` replaces its subsets (``--limit``'s: in data order)."""
    plans = []
    for b in chosen:
        for part in b.parts(preset):
            part = with_modes(part, dict(modes))
            if limit is not None or (sample is not None and part.sample is not None):
                part = Part(
                    part.name,
                    part.tasks,
                    part.modes,
                    part.shots,
                    part.seeds,
                    part.protocol,
                    None if limit is not None else sample,
                    part.sample_seed,
                    part.pooled,
                )
            shots = part.shots is None or any(k for k in part.shots)
            missing = [m for m in (task_data(t, shots) for t in part.tasks) if m]
            gone = {m["task"] for m in missing}
            plans.append(PartPlan(b, part, [t for t in part.tasks if t not in gone], missing))
    return plans


def identity(
    model: str,
    backend: Mapping[str, Any],
    preset: str,
    modes: Mapping[str, str],
    sample: int | None,
    limit: int | None,
) -> dict:
    """What makes two profiles the same profile (a rerun with it resumes)."""
    from negbench.evaluation.runner import IDENTITY_BACKEND

    return {
        "model": model,
        "backend": {k: backend.get(k) for k in IDENTITY_BACKEND},
        "preset": preset,
        "modes": dict(sorted(modes.items())),
        "sample": sample,
        "limit": limit,
    }


def task_mode_specs(tasks: Sequence[str], modes: Sequence[str]) -> list[str]:
    """The part's modes as ``Session.evaluate`` takes them: each task with the modes it has
    (``task:mode+mode``; a task/mode pair that does not exist is an error there)."""
    from negbench.tasks import get_task

    if len(tasks) == 1:
        return list(modes)
    return [f"{t}:" + "+".join(m for m in modes if m in get_task(t).modes) for t in tasks]


def _kinds(part: PartPlan) -> set[str]:
    from negbench.tasks import get_task

    kinds = set()
    for t in part.tasks:
        task = get_task(t)
        for m in part.part.modes:
            if m in task.modes:
                kinds.add(task.mode(m).formulation.kind)
    return kinds


def unsupported(p: PartPlan, model: str, exc: NegbenchError) -> dict:
    """The message for a part the model cannot answer: the benchmark, its mode, and the mode to
    use instead (a generation mode of the same tasks), as an option of this command."""
    alt = [p.benchmark.generation_mode.get(m) for m in p.part.modes]
    alt_modes = sorted({a for a in alt if a})
    modes = "/".join(p.part.modes)
    if alt_modes:
        fix = (
            f"profile {p.benchmark.key} in its generation mode: add --mode "
            f"{p.part.name}={alt_modes[0]} (Python: modes={{'{p.part.name}': '{alt_modes[0]}'}})"
        )
    else:
        fix = (
            f"{p.benchmark.title} has no generation mode: profile a model that gives prompt "
            "log-probabilities (a local model, or a vLLM server), or leave it out with --benchmarks"
        )
    return {
        "message": f"{p.benchmark.key}: {model} cannot answer mode {modes} ({exc.what})",
        "fix": fix,
    }


@dataclass
class Profile:
    """A finished (or partly finished) profile: its folder and manifest, and the page."""

    folder: Path
    manifest: dict

    @property
    def page(self) -> Path:
        return self.folder / "profile.html"

    @property
    def benchmarks(self) -> list[dict]:
        return list(self.manifest.get("benchmarks", []))

    @property
    def headline(self) -> list[dict]:
        return list(self.manifest.get("headline", []))

    @property
    def phenomena(self) -> list[dict]:
        return list(self.manifest.get("phenomena", []))

    @property
    def missing(self) -> list[dict]:
        """Benchmarks (or their tasks) not run, with why and how to get them."""
        return list(self.manifest.get("not_run", []))

    def results(self, part: str):
        """The :class:`~negbench.evaluation.results.Results` of one part's run folder."""
        from negbench.evaluation.results import Results

        for b in self.benchmarks:
            for p in b.get("parts", []):
                if p["name"] == part and p.get("status") == "done":
                    return Results.load(self.folder / p["run"])
        raise OptionError(
            f"the profile has no finished part '{part}'",
            where="part",
            fix="parts: "
            + ", ".join(p["name"] for b in self.benchmarks for p in b.get("parts", [])),
        )

    def summary(self) -> str:
        from negbench.profile.page import summary_text

        return summary_text(self.manifest)

    def __repr__(self) -> str:
        return (
            f"Profile(model={self.manifest.get('model')!r}, preset={self.manifest.get('preset')!r}, "
            f"folder='{self.folder}')"
        )

    @classmethod
    def load(cls, folder: str | Path) -> "Profile":
        return cls(Path(folder), read_manifest(folder))


def profile(
    model: "str | None" = None,
    *,
    preset: str = "quick",
    out: "str | Path | None" = None,
    benchmarks: Sequence[str] | None = None,
    modes: Mapping[str, str] | None = None,
    sample: int | None = None,
    limit: int | None = None,
    session: Any = None,
    overwrite: bool = False,
    log: Callable[[str], None] = _stderr,
    **options: Any,
) -> Profile:
    """Profile ``model`` (or the model of ``session``) on every negation benchmark of
    ``preset`` whose data is available, into the folder ``out`` (default
    ``profiles/<model>__<preset>``), and write the page.

    ``benchmarks``: only these (keys of :func:`negbench.profile.presets.benchmarks`);
    ``modes``: ``{benchmark: mode}`` in place of a headline mode (e.g. a generation mode for a
    model without prompt log-probabilities); ``sample``: items per benchmark instead of the
    preset's; ``limit``: about N items of each task in data order instead of a seeded subset (for
    a trial);
    ``options``: the :class:`~negbench.evaluation.session.Session`'s (``cache``, ``dtype``,
    ``device``, ``adapter``, ``threads``, ``progress`` …) when no ``session`` is given."""
    from negbench.evaluation.session import Session

    check_preset(preset)
    if session is not None and (model is not None or options):
        raise OptionError(
            "give a model (and its options) or a session, not both",
            where="negbench.profile",
            fix="profile(session=s) or profile('model', …)",
        )
    if sample is not None and sample < 1 or limit is not None and limit < 1:
        raise OptionError("sample and limit are numbers of items (≥ 1)", where="--sample / --limit")
    if sample is not None and limit is not None:
        raise OptionError(
            "--sample and --limit both choose the items",
            where="--sample / --limit",
            fix="give one: --sample N (a seeded subset) or --limit N (the first N)",
        )
    chosen = select(preset, list(benchmarks) if benchmarks else None)
    modes = check_modes(modes, chosen, preset)
    own = session is None
    if own:
        session = Session(model or DEFAULT_MODEL, log=log, **options)  # checks the model's files
    try:
        spec = session.spec
        adapter = session.backend_options.get("adapter")
        folder = Path(out) if out else default_out(spec.raw, preset, adapter)
        ident = identity(spec.raw, session.backend_options, preset, modes, sample, limit)
        old = check_target(folder, ident, overwrite)
        plans = plan(chosen, preset, modes, sample, limit)
        manifest = _manifest(old, ident, spec.raw, adapter, preset, plans)
        write_manifest(folder, manifest)
        _run_parts(session, folder, manifest, plans, limit, log)
    finally:
        if own:
            session.close()
    from negbench.profile.page import write_profile_page

    write_profile_page(folder, manifest)
    return Profile(folder, manifest)


def _manifest(
    old: dict | None,
    ident: dict,
    model: str,
    adapter: str | None,
    preset: str,
    plans: Sequence[PartPlan],
) -> dict:
    """The manifest of this profile: the benchmarks of ``plans`` (finished parts of ``old``
    kept where their spec is unchanged), and benchmarks ``old`` had that this call does not
    select."""
    from negbench import __version__

    done = {}
    for b in (old or {}).get("benchmarks", []):
        for p in b.get("parts", []):
            if p.get("status") == "done":
                done[p["name"]] = p
    benches: dict[str, dict] = {}
    for pl in plans:
        b = benches.setdefault(
            pl.benchmark.key,
            {
                "key": pl.benchmark.key,
                "title": pl.benchmark.title,
                "paper": pl.benchmark.paper,
                "how_to_get": pl.benchmark.how_to_get,
                "parts": [],
            },
        )
        prev = done.get(pl.part.name)
        entry = {
            "name": pl.part.name,
            "run": f"{RUNS}/{pl.part.name}",
            "spec": pl.spec(),
            "missing": pl.missing,
            "status": "pending",
        }
        if prev and prev.get("spec") == entry["spec"]:
            entry.update(
                status="done",
                **{k: prev[k] for k in ("started", "finished", "wall_s") if k in prev},
            )
        if not pl.tasks:
            entry["status"] = "missing"
        b["parts"].append(entry)
    for ob in (old or {}).get("benchmarks", []):  # kept from an earlier --benchmarks call
        if ob["key"] not in benches and any(p.get("status") == "done" for p in ob.get("parts", [])):
            benches[ob["key"]] = ob
    order = {b.key: i for i, b in enumerate(all_benchmarks())}
    bench_list = sorted(benches.values(), key=lambda b: order.get(b["key"], len(order)))
    for b in bench_list:
        b["status"] = _status(b)
    return {
        "schema": SCHEMA,
        "negbench": __version__,
        "model": model,
        "adapter": adapter,
        "preset": preset,
        "identity": ident,
        "started": (old or {}).get("started") or now(),
        "finished": None,
        "benchmarks": bench_list,
    }


def _status(b: Mapping[str, Any]) -> str:
    """done / partial (some tasks or parts missing) / missing / unsupported / failed / pending."""
    st = [p.get("status") for p in b.get("parts", [])]
    if st and all(s == "done" for s in st):
        return "partial" if any(p.get("missing") for p in b["parts"]) else "done"
    if st and all(s == "missing" for s in st):
        return "missing"
    if any(s == "done" for s in st):
        return "partial"
    for s in ("unsupported", "failed", "pending"):
        if s in st:
            return s
    return "missing"


def _run_parts(
    session,
    folder: Path,
    manifest: dict,
    plans: Sequence[PartPlan],
    limit: int | None,
    log: Callable[[str], None],
) -> None:
    parts = {p["name"]: (b, p) for b in manifest["benchmarks"] for p in b["parts"]}
    todo = [pl for pl in plans if parts[pl.part.name][1]["status"] == "pending"]
    for pl in plans:
        entry = parts[pl.part.name][1]
        if entry["status"] == "done":
            log(f"profile: {pl.part.name}: finished earlier ({folder / entry['run']})")
        elif entry["status"] == "missing":
            log(f"profile: {pl.benchmark.key}: not run, no data ({pl.missing[0]['message']})")
    n = len(todo)
    for i, pl in enumerate(todo, 1):
        bench, entry = parts[pl.part.name]
        log(
            f"profile: [{i}/{n}] {pl.part.name}: {', '.join(pl.tasks)} · "
            f"{'/'.join(pl.part.modes)}"
            + (f" · about {pl.part.sample} items" if pl.part.sample else "")
        )
        if session.spec.is_api:  # before any request: can it answer the mode?
            try:
                session.backend.check_kinds(_kinds(pl))
            except NegbenchError as exc:
                entry.update(status="unsupported", **unsupported(pl, session.spec.raw, exc))
                log(f"profile: {entry['message']}\n  fix: {entry['fix']}")
                _save(folder, manifest)
                continue
        entry["started"] = now()
        t0 = time.perf_counter()
        try:
            kw: dict[str, Any] = {}
            if pl.part.sample is not None:
                kw.update(sample=pl.part.sample, sample_seed=pl.part.sample_seed)
            session.evaluate(
                pl.tasks,
                modes=task_mode_specs(pl.tasks, pl.part.modes),
                shots=None if pl.part.shots is None else list(pl.part.shots),
                seeds=None if pl.part.seeds is None else list(pl.part.seeds),
                protocol=pl.part.protocol,
                limit=limit,
                output=folder / entry["run"],
                overwrite=True,
                **kw,
            )
        except NegbenchError as exc:
            entry.update(status="failed", message=f"{pl.part.name}: {exc.what}", fix=exc.fix or "")
            log(
                f"profile: {pl.part.name} failed: {exc.what}"
                + (f"\n  fix: {exc.fix}" if exc.fix else "")
                + "\n  the rest of the profile runs"
            )
        else:
            entry.update(status="done", finished=now(), wall_s=round(time.perf_counter() - t0, 2))
        _save(folder, manifest)
    manifest["finished"] = now()


def _save(folder: Path, manifest: dict) -> None:
    for b in manifest["benchmarks"]:
        b["status"] = _status(b)
    write_manifest(folder, manifest)


__all__ = ["profile", "Profile", "default_out", "MANIFEST"]
