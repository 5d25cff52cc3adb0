"""Runs spread over a Ray cluster (``negbench run --ray …``), for when one machine is not enough.

The engine cuts the token-sorted requests of a run into deterministic prefix-sharing groups
(:func:`negbench.core.engine.cut_groups`); without Ray it scores them one after the other, with Ray a
:class:`RayPool` hands each group to a worker actor.  A worker holds one model replica, built by
the same function as the driver's (:func:`negbench.backends.registry.open_backend`, same spec and
options), and scores the group with the engine's own code (:meth:`Engine.score_group`), so a
cluster run plans exactly the rows and batches of a one-process run and its samples are
byte-identical (same ``--threads``; see ``docs/ray.md``).  Answers come back to the driver group
by group as they finish (``ray.wait``); the driver alone writes the cache and the run folder.

A worker that dies (process killed, node lost) has its group run again on another live worker
or on a replacement; nothing is lost or counted twice, and every retry is kept in a table
(:meth:`RayPool.summary`).  Test hook: ``NEGBENCH_RAY_KILL="after=K,seed=S"`` makes the driver
SIGKILL one busy worker (chosen with ``random.Random(S)``) once K groups have come back, at most
once per pool.

Ray is optional (``pip install 'negbench[ray]'``): nothing here imports it until a pool connects.
"""

from __future__ import annotations

import math
import os
import random
import re
import signal
import socket
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from negbench.errors import NegbenchError, OptionError

KILL_ENV = "NEGBENCH_RAY_KILL"
MAX_ATTEMPTS = 3  # a group that kills this many workers stops the run
PASS_ENV = re.compile(r"^(NEGBENCH_|HF_|TRANSFORMERS_|TOKENIZERS_)")  # driver env for workers


class ClusterError(NegbenchError):
    """A Ray cluster that cannot be reached or that lost its workers."""


@dataclass(frozen=True)
class ClusterOptions:
    """What ``--ray`` and the ``--ray-*`` options ask for, checked before any model loads."""

    address: str  # "local", "auto" or host:port
    workers: int | None  # None: local → 2, cluster → its CPUs (GPUs) per worker
    cpus_per_worker: float = 1.0
    gpus_per_worker: float = 0.0

    @property
    def local(self) -> bool:
        return self.address == "local"


@dataclass(frozen=True)
class KillPlan:
    """The test hook: SIGKILL one busy worker after ``after`` groups came back (seeded)."""

    after: int
    seed: int


@dataclass(frozen=True)
class WorkerSpec:
    """How a worker builds its model replica: the driver's model spec and backend options."""

    model: str
    options: dict[str, Any]  # open_backend keyword arguments (dtype, device, threads, …)
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class RetryRecord:
    """A group (or experiment job) that ran again because its worker died."""

    group: int | str  # group number in the run (experiments: "row/p02", "base/p02")
    worker: int | None  # worker number (None: a Ray task, not one of our actors)
    error: str
    attempt: int


def require_ray():
    """Import ray, or the clear error naming the extra that installs it."""
    from negbench.errors import require

    return require("ray")


def parse_options(
    ray: str | None,
    workers: int | None = None,
    cpus: float | None = None,
    gpus: float | None = None,
) -> ClusterOptions | None:
    """``--ray auto|HOST:PORT|local[:N]`` and its options, or None without ``--ray``.  Raises
    :class:`OptionError` naming the option (before anything is loaded)."""
    if ray is None:
        given = [
            n
            for n, v in (
                ("--ray-workers", workers),
                ("--ray-cpus-per-worker", cpus),
                ("--ray-gpus-per-worker", gpus),
            )
            if v is not None
        ]
        if given:
            raise OptionError(
                f"{', '.join(given)} given without --ray",
                where=given[0],
                fix="add --ray local (or auto, or HOST:PORT), or drop the option",
            )
        return None
    text = ray.strip()
    fix = (
        "--ray local[:N] (a local cluster of N workers), --ray auto (the cluster `ray start "
        "--head` started on this machine) or --ray HOST:PORT (a cluster's head)"
    )
    m = re.fullmatch(r"local(?::(\d+))?", text)
    if m:
        n = int(m[1]) if m[1] else None
        if n is not None and n < 1:
            raise OptionError(
                f"--ray {text}: a local cluster needs at least 1 worker", where="--ray", fix=fix
            )
        if n is not None and workers is not None and workers != n:
            raise OptionError(
                f"--ray {text} and --ray-workers {workers} disagree",
                where="--ray",
                fix="give the number of workers once",
            )
        address, workers = "local", (workers or n or 2)
    elif text == "auto":
        address = "auto"
    else:
        m = re.fullmatch(r"(?:ray://)?\[?([A-Za-z0-9.\-:]+?)\]?:(\d{1,5})", text)
        if not m or not 0 < int(m[2]) < 65536:
            raise OptionError(
                f"--ray {text!r} is not auto, local[:N] or HOST:PORT", where="--ray", fix=fix
            )
        address = text
    if cpus is not None and not (cpus >= 0 and math.isfinite(cpus)):
        raise OptionError(
            f"--ray-cpus-per-worker must be ≥ 0, got {cpus}", where="--ray-cpus-per-worker"
        )
    if gpus is not None and not (gpus >= 0 and math.isfinite(gpus)):
        raise OptionError(
            f"--ray-gpus-per-worker must be ≥ 0, got {gpus}", where="--ray-gpus-per-worker"
        )
    if workers is not None and workers < 1:
        raise OptionError(f"--ray-workers must be at least 1, got {workers}", where="--ray-workers")
    return ClusterOptions(
        address, workers, 1.0 if cpus is None else cpus, 0.0 if gpus is None else gpus
    )


def parse_kill(text: str | None) -> KillPlan | None:
    """``NEGBENCH_RAY_KILL="after=K,seed=S"`` (test hook), or None when unset."""
    if not text:
        return None
    kv = dict(p.split("=", 1) for p in text.split(",") if "=" in p)
    try:
        plan = KillPlan(int(kv.pop("after")), int(kv.pop("seed", "0")))
    except (KeyError, ValueError):
        plan = None
    if plan is None or kv or plan.after < 0:
        raise OptionError(
            f"{KILL_ENV}={text!r}",
            where=KILL_ENV,
            fix="after=K,seed=S (K groups back before one worker is killed)",
        )
    return plan


def worker_spec(model: str, backend_options: dict[str, Any]) -> WorkerSpec:
    """The driver's model spec (a local path made absolute: workers run elsewhere) and options,
    with the environment variables that steer model resolution (NEGBENCH_*, HF_*)."""
    p = Path(model).expanduser()
    if p.exists():
        model = str(p.resolve())
    return WorkerSpec(
        model, dict(backend_options), {k: v for k, v in os.environ.items() if PASS_ENV.match(k)}
    )


CODE_MODULES = (
    "negbench.core.engine",
    "negbench.core.trie",
    "negbench.backends.hf",
    "negbench.core.backend",
    "negbench.backends.attention",
    "negbench.backends.token_splits",
)


def code_digest() -> str:
    """A digest of the code that decides the numbers (engine, trie, transformers backend): the
    model fingerprint does not see a worker that runs another negbench (another node's install,
    or a source tree edited while a run starts workers), whose rows or kernels may differ."""
    import hashlib
    import importlib

    h = hashlib.sha256()
    for name in CODE_MODULES:
        file = importlib.import_module(name).__file__
        assert file is not None  # source modules, not namespace packages
        h.update(Path(file).read_bytes())
    return h.hexdigest()[:16]


class GroupWorker:
    """A Ray actor: one model replica that scores groups with the engine's own code."""

    def __init__(self, spec: WorkerSpec):
        os.environ.update(spec.env)
        from negbench.backends.registry import open_backend

        self.backend = open_backend(spec.model, **spec.options)

    def info(self) -> dict[str, Any]:
        import torch

        return {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "fingerprint": self.backend.fingerprint,
            "code": code_digest(),
            "threads": torch.get_num_threads(),
            "device": str(getattr(self.backend, "device", "")),
        }

    def score(self, group: list, config: dict[str, Any]) -> tuple[list, dict[str, Any]]:
        from negbench.core.engine import Engine, EngineConfig

        pairs, st = Engine(self.backend, None, EngineConfig(**config)).score_group(group)
        return pairs, asdict(st)


@dataclass
class _Slot:
    index: int  # worker number in the retry table (replacements: new ones)
    actor: Any
    ready: Any = None  # ObjectRef of info() while starting
    info: dict[str, Any] = field(default_factory=dict)
    groups: int = 0


class RayPool:
    """Workers on a Ray cluster that score the engine's groups (``Engine(…, pool=RayPool)``)."""

    def __init__(self, options: ClusterOptions):
        self.options = options
        self.kill = parse_kill(os.environ.get(KILL_ENV))
        self.ray: Any = None  # the ray module, once connected
        self._own_cluster = False
        self._spec: WorkerSpec | None = None
        self._code = ""
        self._slots: list[_Slot] = []
        self._next_index = 0
        self._restarts_left = 0
        self._groups_done = 0
        self._done_by: dict[int, int] = {}  # groups answered per worker number
        self._group_ids = 0
        self._killed: dict[str, Any] | None = None
        self.retries: list[RetryRecord] = []
        self.n_workers = 0

    # -- setup ----------------------------------------------------------------------------------
    def connect(self) -> None:
        """Join (or start) the cluster; a bad address is one clear error, before any model loads.
        A Ray connection this process already holds is used as it is."""
        ray = self.ray = require_ray()
        o = self.options
        if ray.is_initialized():
            pass
        elif o.local:
            workers = o.workers or 2  # set by parse_cluster; else the field's local default
            need_cpus = math.ceil(workers * o.cpus_per_worker)
            kw: dict[str, Any] = {"num_cpus": max(need_cpus, 1)}
            if o.gpus_per_worker:
                kw["num_gpus"] = math.ceil(workers * o.gpus_per_worker)
            ray.init(
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                log_to_driver=False,
                logging_level="ERROR",
                **kw,
            )
            self._own_cluster = True
        else:
            if o.address != "auto":
                _check_reachable(o.address)
            try:
                ray.init(address=o.address, log_to_driver=False, logging_level="ERROR")
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ClusterError(
                    f"cannot connect to the Ray cluster at {o.address}: {exc}",
                    where=f"--ray {o.address}",
                    fix="start one (ray start --head) or give its head's HOST:PORT; "
                    "--ray local[:N] starts a local one",
                ) from None
        res = ray.cluster_resources()
        n = o.workers
        if n is None:
            per = [
                res.get("CPU", 0) / o.cpus_per_worker if o.cpus_per_worker else math.inf,
                res.get("GPU", 0) / o.gpus_per_worker if o.gpus_per_worker else math.inf,
            ]
            n = int(min(per)) if min(per) != math.inf else 1
        if n < 1 or (o.gpus_per_worker and res.get("GPU", 0) < o.gpus_per_worker):
            raise ClusterError(
                f"the cluster has {res.get('CPU', 0):g} CPUs and "
                f"{res.get('GPU', 0):g} GPUs: not enough for one worker of "
                f"{o.cpus_per_worker:g} CPU / {o.gpus_per_worker:g} GPU",
                where="--ray-cpus-per-worker / --ray-gpus-per-worker",
                fix="ask for less per worker, or add nodes to the cluster",
            )
        self.n_workers = n
        self._restarts_left = 2 * n

    def start(self, spec: WorkerSpec) -> None:
        """Start the workers; each loads its replica in the background (while the driver loads
        its own) and is waited for at the first group."""
        self._spec = spec
        self._code = code_digest()  # the driver's, at the start of the run
        for _ in range(self.n_workers):
            self._slots.append(self._new_slot())

    def _new_slot(self) -> _Slot:
        ray, o = self.ray, self.options
        cls = ray.remote(
            num_cpus=o.cpus_per_worker,
            num_gpus=o.gpus_per_worker,
            max_restarts=0,
            max_task_retries=0,
        )(GroupWorker)
        actor = cls.remote(self._spec)
        slot = _Slot(self._next_index, actor, ready=actor.info.remote())
        self._next_index += 1
        return slot

    def _ready(self, slot: _Slot, fingerprint: str) -> None:
        """Take a started worker's info; its replica must be the driver's model."""
        try:
            slot.info = self.ray.get(slot.ready)
        except self.ray.exceptions.RayActorError as exc:
            raise ClusterError(
                f"worker {slot.index} could not load the model: {short_error(exc)}",
                where="--ray",
                fix="install negbench and the model on every node of the "
                "cluster (the same versions)",
            ) from None
        slot.ready = None
        if slot.info.get("code") != self._code:
            raise ClusterError(
                f"worker {slot.index} on {slot.info['host']} runs other negbench "
                f"code than the driver (engine/backend digest "
                f"{slot.info.get('code')} ≠ {self._code})",
                where="--ray",
                fix="install the same negbench on every node (and do not edit "
                "the source tree while a run starts workers)",
            )
        if slot.info["fingerprint"] != fingerprint:
            raise ClusterError(
                f"worker {slot.index} on {slot.info['host']} loaded a different "
                f"model (fingerprint {slot.info['fingerprint']} ≠ {fingerprint})",
                where="--ray",
                fix="give --dtype (and --device) explicitly, so that the driver "
                "and the workers load the same weights the same way",
            )

    # -- scoring --------------------------------------------------------------------------------
    def score(self, engine, groups: list[list], done, st) -> None:
        """Score ``groups`` on the workers, answers streaming to ``done`` as groups finish.
        Called by :meth:`Engine._score` in place of its own loop over the same groups."""
        from negbench.core.engine import EngineStats

        ray = self.ray
        fp = engine.backend.fingerprint
        config = {**asdict(engine.config), "progress": False}
        dead = (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError)
        base = self._group_ids
        self._group_ids += len(groups)
        queue = deque(range(len(groups)))
        attempts = [0] * len(groups)
        idle = deque(s for s in self._slots if s.ready is None)
        inflight: dict[Any, tuple[int, _Slot]] = {}
        starting: dict[Any, _Slot] = {s.ready: s for s in self._slots if s.ready is not None}
        while queue or inflight:  # a worker takes groups as soon as its model is up
            while queue and idle:
                slot, g = idle.popleft(), queue.popleft()
                attempts[g] += 1
                inflight[slot.actor.score.remote(groups[g], config)] = (g, slot)
            self._maybe_kill([s for _, s in inflight.values()])
            if not inflight and not starting:
                raise ClusterError(
                    "no live Ray worker is left to score the remaining groups",
                    where="--ray",
                    fix="rerun the same command: answered groups are cached and not recomputed",
                )
            ready, _ = ray.wait(list(inflight) + list(starting), num_returns=1)
            ref = ready[0]
            if ref in starting:  # a replacement worker has loaded its model
                slot = starting.pop(ref)
                try:
                    self._ready(slot, fp)
                except ClusterError:
                    if slot.index < self.n_workers:  # a first worker: the setup is wrong
                        raise
                    self._slots.remove(slot)  # a replacement that could not start
                    continue
                idle.append(slot)
                continue
            g, slot = inflight.pop(ref)
            try:
                pairs, wst = ray.get(ref)
            except dead as exc:
                self.retries.append(
                    RetryRecord(base + g, slot.index, short_error(exc), attempts[g])
                )
                st.retries += 1
                if attempts[g] >= MAX_ATTEMPTS:
                    raise ClusterError(
                        f"group {base + g} failed on {attempts[g]} workers in a "
                        f"row (last: {short_error(exc)})",
                        where="--ray",
                        fix="check the workers' memory; answered groups are "
                        "cached, so rerunning resumes",
                    ) from None
                queue.appendleft(g)  # first in line for the next live worker
                self._slots.remove(slot)
                if self._restarts_left > 0:
                    self._restarts_left -= 1
                    new = self._new_slot()
                    self._slots.append(new)
                    starting[new.ready] = new
                continue
            reqs = {s.key: s.req for s in groups[g]}
            done([(k, reqs[k], resp) for k, resp in pairs])
            st.add(EngineStats(**{**wst, "wall_s": 0.0}))
            slot.groups += 1
            self._done_by[slot.index] = slot.groups
            self._groups_done += 1
            idle.append(slot)
        for ref, slot in starting.items():  # replacements still loading: keep them
            slot.ready = ref

    def _maybe_kill(self, busy: list[_Slot]) -> None:
        """The test hook: SIGKILL one busy worker, once, after ``after`` groups came back."""
        k = self.kill
        if (
            k is None
            or self._killed is not None
            or self._groups_done < k.after
            or not busy
            or any(not s.info for s in busy)
        ):
            return
        victim = random.Random(k.seed).choice(sorted(busy, key=lambda s: s.index))
        if victim.info.get("host") == socket.gethostname():
            os.kill(victim.info["pid"], signal.SIGKILL)
            how = "SIGKILL"
        else:  # another node: Ray kills the process there
            self.ray.kill(victim.actor, no_restart=True)
            how = "ray.kill"
        self._killed = {
            "worker": victim.index,
            "pid": victim.info.get("pid"),
            "how": how,
            "after_groups": self._groups_done,
            "seed": k.seed,
        }

    # -- report and teardown --------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        o = self.options
        return {
            "address": o.address,
            "workers": self.n_workers,
            "cpus_per_worker": o.cpus_per_worker,
            "gpus_per_worker": o.gpus_per_worker,
            "workers_started": self._next_index,
            "groups": self._group_ids,
            "groups_per_worker": dict(sorted(self._done_by.items())),
            "retries": len(self.retries),
            "retried_groups": [asdict(r) for r in self.retries],
            "fault_injection": self._killed,
        }

    def close(self) -> None:
        """Stop the workers (and the local cluster this pool started)."""
        if self.ray is None:
            return
        for s in self._slots:
            try:
                self.ray.kill(s.actor)
            except Exception:  # already dead: nothing to stop
                pass
        self._slots = []
        if self._own_cluster:
            self.ray.shutdown()
            self._own_cluster = False


def retry_table(summary: dict[str, Any] | None) -> str:
    """The retried groups as a plain-text table (for the CLI and the benchmark)."""
    rows = (summary or {}).get("retried_groups") or []
    if not rows:
        return "no group was retried"
    lines = [f"{'group':>5}  {'worker':>6}  {'attempt':>7}  error"]
    lines += [
        f"{r['group']:>5}  {'-' if r['worker'] is None else r['worker']:>6}  "
        f"{r['attempt']:>7}  {r['error']}"
        for r in rows
    ]
    return "\n".join(lines)


def _check_reachable(address: str, timeout: float = 3.0) -> None:
    """A refused or silent HOST:PORT fails here in seconds (ray.init would retry for minutes)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    host = host.strip("[]")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise ClusterError(
            f"no Ray cluster answers at {address} ({exc.strerror or exc})",
            where=f"--ray {address}",
            fix="give the head node's HOST:PORT as `ray start --head` printed it "
            "(default port 6379), --ray auto on the head node, or --ray local "
            "for a local cluster",
        ) from None


def short_error(exc: BaseException) -> str:
    """The first line of a Ray error (they run to dozens of lines)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:200]


__all__ = [
    "ClusterOptions",
    "ClusterError",
    "GroupWorker",
    "KillPlan",
    "RayPool",
    "WorkerSpec",
    "parse_kill",
    "parse_options",
    "require_ray",
    "retry_table",
    "worker_spec",
]
