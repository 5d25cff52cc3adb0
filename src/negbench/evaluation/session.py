"""The Python API of an evaluation: a :class:`Session` owns one model (backend), the response
cache, the engine and, per evaluation, a run folder — so several evaluations share one loaded
model; :func:`evaluate` is one session for one evaluation; :func:`open_model` a session whose
engine callers use directly (the lm-eval adapter, the builders' LLM stages, the judge).

``negbench run`` is this module with a command line in front: the same checks in the same
order (every option, the model's files, the tasks and their data, the output folder — all before
the model loads or anything is written), the same run folders, the same cache keys.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from negbench.backends.spec import ModelSpec
from negbench.options import SessionOptions

DEFAULT_MODEL = "smollm2-135m-instruct"
#: How a cache is chosen: ``True`` (negbench's: $NEGBENCH_CACHE/responses.sqlite), a file, or
#: ``None`` / ``False`` (no cache).
CacheSetting = "bool | str | Path | None"


def _stderr(s: str) -> None:
    print(s, file=sys.stderr)


def check_adapter(adapter: str | None) -> None:
    """A local adapter folder holds ``adapter_config.json``; otherwise a hub id ``org/name``."""
    if not adapter:
        return
    from negbench.errors import ModelError

    path = Path(adapter).expanduser()
    if path.exists() or adapter.startswith((".", "/", "~")):
        if not (path / "adapter_config.json").is_file():
            raise ModelError(
                f"no adapter_config.json in {path}",
                where="--adapter",
                fix="give the folder a PEFT LoRA training run saved (save_pretrained), or a hub id",
            )
    elif adapter.count("/") != 1:
        raise ModelError(
            f"adapter not found: {adapter}",
            where="--adapter",
            fix="give a local adapter folder or a hub id org/name",
        )


def check_batch_size(batch_size: "int | str") -> None:
    """``auto`` or a whole number of rows ≥ 1."""
    if batch_size == "auto" or (
        isinstance(batch_size, int) and not isinstance(batch_size, bool) and batch_size >= 1
    ):
        return
    from negbench.errors import OptionError

    raise OptionError(
        f"batch size must be auto or a whole number ≥ 1, got {batch_size!r}",
        where="--batch-size",
        fix="give --batch-size auto (the default) or a number of rows",
    )


def check_local_runtime(device: str, dtype: str) -> None:
    """The device (CUDA present, the index in range) and dtype of a local model, checked before
    the model loads: ``--device cuda`` on a machine without one is refused before "loading …"."""
    from negbench.errors import ModelError

    if dtype not in ("auto", "float32", "bfloat16", "float16"):
        raise ModelError(
            f"unknown dtype '{dtype}'",
            where="--dtype",
            fix="use float32, bfloat16, float16 or auto",
        )
    if device not in (None, "auto"):
        from negbench.backends.hf import check_device

        check_device(device)
        if str(device).startswith("mps"):
            import torch

            if not torch.backends.mps.is_available():
                raise ModelError(
                    f"--device {device} asked, but this torch sees no Apple GPU (MPS)",
                    where="--device",
                    fix="use --device cpu (or auto)",
                )


def check_chat_options(chat: bool, system_prompt: str | None, chat_layout: str) -> None:
    if not chat and (system_prompt is not None or chat_layout != "lm-eval"):
        from negbench.errors import OptionError

        raise OptionError(
            "--system-prompt and --chat-layout shape the chat prompt, but --chat is not given",
            where="--system-prompt / --chat-layout",
            fix="add --chat, or drop those options",
        )


def cluster_options(
    ray: Any,
    spec: ModelSpec,
    workers: int | None = None,
    cpus: float | None = None,
    gpus: float | None = None,
):
    """The checked Ray options (None without ``ray``), before anything is loaded: ray must be
    installed and the model a local decoder-only one.  ``ray``: ``auto``, ``HOST:PORT``,
    ``local[:N]`` or a :class:`negbench.evaluation.cluster.ClusterOptions`."""
    from negbench.evaluation.cluster import ClusterOptions, parse_options, require_ray
    from negbench.errors import OptionError

    opts = ray if isinstance(ray, ClusterOptions) else parse_options(ray, workers, cpus, gpus)
    if opts is None:
        return None
    require_ray()
    if spec.is_api:
        raise OptionError(
            "--ray spreads local models over workers; a served model is already remote",
            where="--ray",
            fix="drop --ray (use --concurrency instead)",
        )
    from negbench.backends.registry import is_encoder_decoder

    if is_encoder_decoder(spec):
        raise OptionError(
            "--ray spreads decoder-only models; encoder-decoder models (T5) are "
            "scored request by request in one process",
            where="--ray",
            fix="drop --ray for this model",
        )
    return opts


#: Longest default run folder name; a longer one keeps its model and tasks and ends in a hash.
MAX_FOLDER_NAME = 120


def run_folder_name(
    model: str,
    tasks: list[str],
    *,
    modes: list[str] | None = None,
    shots: list[int] | None = None,
    seeds: list[int] | None = None,
    protocol: bool = False,
    limit: int | float | None = None,
    sample: int | None = None,
    sample_seed: int = 0,
    adapter: str | None = None,
    chat: bool = False,
    other: dict[str, Any] | None = None,
) -> str:
    """The default run folder name: ``<model>__<tasks>`` and, joined by ``__``, what differs from
    the defaults — ``modes-…``, ``shots-…``, ``seeds-…``, ``protocol``, ``limit-N``,
    ``sample-N-seed-S``, ``adapter-…``, ``chat`` and a short hash of any other setting that can
    change a result (``other``: dtype, system prompt …, default values left out) — so variants
    of one evaluation never share a folder, while the default run of a task keeps the short
    name (``smollm2-135m-instruct__negation-mini``).  A name longer than
    :data:`MAX_FOLDER_NAME` keeps model and tasks (cut) and ends in a hash of the rest."""
    import hashlib

    from negbench.backends.spec import safe_name, slug
    from negbench.files import to_json

    def join(xs) -> str:
        return "+".join(safe_name(str(x)) for x in xs)

    base = f"{model}__" + "+".join(slug(t) for t in tasks)
    parts = []
    if modes:
        parts.append("modes-" + join(modes))
    if shots is not None:
        parts.append("shots-" + join(shots))
    if seeds is not None:
        parts.append("seeds-" + join(seeds))
    if protocol:
        parts.append("protocol")
    if limit is not None:
        parts.append(f"limit-{limit}")
    if sample is not None:
        parts.append(f"sample-{sample}-seed-{sample_seed}")
    if adapter:
        parts.append("adapter-" + slug(adapter.rstrip("/")))
    if chat:
        parts.append("chat")
    rest = {k: v for k, v in (other or {}).items() if v is not None}
    if rest:
        parts.append("x" + hashlib.sha256(to_json(rest, sort_keys=True).encode()).hexdigest()[:8])
    name = "__".join([base] + parts)
    if len(name) > MAX_FOLDER_NAME:
        digest = hashlib.sha256(name.encode()).hexdigest()[:10]
        name = base[: MAX_FOLDER_NAME - 12].rstrip("_+-.") + "__" + digest
    return name


class Session:
    """One model, its response cache and engine, shared by every :meth:`evaluate` call.

    Everything is checked when the session is made (options, the model's files, the adapter,
    Ray); the model itself loads on first use.  Use it as a context manager, or call
    :meth:`close` (an API server or a vLLM process it started is stopped, the Ray pool left)."""

    def __init__(
        self,
        model: "str | ModelSpec" = DEFAULT_MODEL,
        options: SessionOptions | None = None,
        *,
        progress: bool = True,
        log: Callable[[str], None] = _stderr,
        **option_fields: Any,
    ):
        """``options``: the typed bundles (:class:`negbench.options.SessionOptions`, what a
        command builds from its flags), or their fields as keywords (``dtype=…``,
        ``batch_size=…``, ``cache=…``, ``ray=…``: :meth:`SessionOptions.of`)."""
        if options is not None and option_fields:
            raise TypeError("give the options as a SessionOptions or as keywords, not both")
        self.options = options or SessionOptions.of(**option_fields)
        m, e, c = self.options.model, self.options.engine, self.options.cluster
        self.spec = ModelSpec.parse(model)
        self.log = log
        add_bos = m.add_bos
        if isinstance(add_bos, str):  # the command line's auto / yes / no
            add_bos = {"yes": True, "no": False}.get(add_bos, add_bos)
        quantize = None if m.quantize in (None, "none") else m.quantize
        #: what a backend (here, or on a Ray worker) is opened with
        self.backend_options: dict[str, Any] = {
            "dtype": m.dtype,
            "device": m.device,
            "adapter": m.adapter,
            "max_length": m.max_length,
            "threads": m.threads,
            "add_bos": add_bos,
        }
        if quantize:  # checked before anything loads or is written
            from negbench.backends.hf import check_quantize
            from negbench.backends.registry import check_quantize_spec

            check_quantize_spec(self.spec, quantize)
            self.backend_options["quantize"] = check_quantize(quantize, m.device)
        self.engine_options: dict[str, Any] = {
            "batch_size": e.batch_size,
            "max_row_tokens": e.max_row_tokens,
            "max_batch_tokens": e.max_batch_tokens,
            "share_prefix": e.share_prefix,
        }
        if e.group_tokens is not None:
            self.engine_options["group_tokens"] = e.group_tokens
        check_batch_size(e.batch_size)
        self.ray = cluster_options(
            c.ray, self.spec, c.ray_workers, c.ray_cpus_per_worker, c.ray_gpus_per_worker
        )
        # CPU threads: --threads, else the free cores, looked at again during the run (on a Ray
        # pool each worker keeps its own fixed count)
        self.engine_options["threads"] = m.threads or (None if self.ray is not None else "auto")
        self.cache_setting = e.cache
        self.progress = progress
        if not self.spec.is_api:
            self.spec.source()  # the model exists (no weights read yet)
            check_local_runtime(m.device, m.dtype)  # before "loading …", not after
        check_adapter(m.adapter)
        self._backend: Any = None
        self._engine: Any = None
        self._cache: Any = None
        self._pool: Any = None
        self._cache_opened = False

    # -- the model, the cache, the engine (opened on first use) ---------------------------------
    @property
    def cache(self):
        """The response cache (None without one), opened on first use."""
        if not self._cache_opened:
            from negbench.core.cache import ResponseCache

            c = self.cache_setting
            if c is None or c is False:
                self._cache = None
            else:
                from negbench.backends.sources import cache_root

                path = cache_root() / "responses.sqlite" if c is True or c == "default" else c
                self._cache = ResponseCache(path)
            self._cache_opened = True
        return self._cache

    @property
    def backend(self):
        """The model, loaded on first use (with the Ray pool first, when there is one)."""
        if self._backend is None:
            self._open()
        return self._backend

    @property
    def engine(self):
        if self._engine is None:
            from negbench.core.engine import Engine, EngineConfig

            backend = self.backend
            options = dict(self.engine_options)
            if options["batch_size"] == "auto":  # a number once the device is known
                from negbench.evaluation.autobatch import resolve_batch

                auto = resolve_batch(backend, self.spec, log=self.log)
                if options.get("max_batch_tokens"):  # the user's bound stays
                    auto.pop("max_batch_tokens", None)
                options.update(auto)
                self.engine_options.update(options)
            self._engine = Engine(
                backend,
                self.cache,
                EngineConfig(progress=self.progress, **options),
                pool=self._pool,
            )
        return self._engine

    @property
    def loaded(self) -> bool:
        return self._backend is not None

    def _open(self) -> None:
        self.cache  # noqa: B018  (opened before the model)
        if self.ray is not None:  # join the cluster before any model loads
            from negbench.evaluation.cluster import RayPool, worker_spec

            pool = RayPool(self.ray)
            try:
                pool.connect()
                self.log(
                    f"ray: {pool.n_workers} worker(s) on {self.ray.address}, loading {self.spec}"
                )
                wkw = dict(
                    self.backend_options,
                    threads=self.backend_options["threads"]
                    or max(1, int(self.ray.cpus_per_worker)),
                )
                pool.start(worker_spec(self.spec.raw, wkw))
            except BaseException:
                pool.close()
                raise
            self._pool = pool
        self.log(f"loading {self.spec} …")
        try:
            self._backend = self._make_backend()
        except BaseException:
            if self._pool is not None:
                self._pool.close()
                self._pool = None
            raise

    def _make_backend(self):
        from negbench.backends.registry import open_backend

        transport = None
        if self.spec.is_api:
            from negbench.backends.api_common import TransportConfig

            a = self.options.api
            transport = TransportConfig(
                concurrency=a.concurrency,
                rate_limit=a.rate_limit,
                max_retries=a.max_retries,
                timeout=a.timeout,
                seed=a.api_seed,
            )
        return open_backend(
            self.spec,
            **self.backend_options,
            tokenizer=self.options.api.tokenizer,
            api_key_env=self.options.api.api_key_env,
            transport=transport,
            vllm_args=self.options.api.vllm_args or (),
        )

    def run(self, requests: list, desc: str = "requests") -> list:
        """Answers to engine requests (:mod:`negbench.core.requests`), deduplicated and cached."""
        return self.engine.run(requests, desc=desc)

    # -- evaluations -------------------------------------------------------------------------------
    def evaluate(
        self,
        tasks: "str | Sequence[str]" = ("negation-mini",),
        *,
        modes: Sequence[str] | None = None,
        shots: Sequence[int] | None = None,
        seeds: Sequence[int] | None = None,
        limit: int | float | None = None,
        sample: int | None = None,
        sample_seed: int = 0,
        protocol: bool = False,
        chat: bool = False,
        system_prompt: str | None = None,
        chat_layout: str = "lm-eval",
        output: "str | Path | None" = None,
        overwrite: bool = False,
        shard_size: int = 20_000,
        report_to: Sequence[str] = (),
    ):
        """Evaluate the session's model on ``tasks`` (names, ``.jsonl`` or ``.yaml`` task
        files) and return :class:`~negbench.evaluation.results.Results`.  With ``output`` the run
        folder is written as ``negbench run --output`` writes it (a killed run resumes; a
        finished one of another configuration is refused unless ``overwrite``); without it the
        per-sample records stay in memory.  ``limit`` (data order) or ``sample`` (a random
        draw, ``sample_seed``) evaluate about N records by the benchmark's whole units and
        across its strata (:mod:`negbench.scoring.subsets`)."""
        from negbench.evaluation.results import Results
        from negbench.evaluation.runner import RunConfig, evaluate, prepare, run_identity
        from negbench.evaluation.store import RunTarget

        check_chat_options(chat, system_prompt, chat_layout)
        if report_to:  # installed, logged in: before the model
            from negbench.evaluation.tracking import check_trackers

            if output is None:
                from negbench.errors import OptionError

                raise OptionError(
                    "experiment trackers log a run folder, but no output is given",
                    where="report_to",
                    fix="give output=… (a run folder)",
                )
            check_trackers(list(report_to))
        cfg = RunConfig(
            model=self.spec.raw,
            tasks=_names(tasks),
            modes=_opt(modes),
            shots=_opt(shots),
            seeds=_opt(seeds),
            limit=limit,
            sample=sample,
            sample_seed=sample_seed,
            protocol=protocol,
            chat=chat,
            system_prompt=system_prompt,
            chat_layout=chat_layout,
            backend=dict(self.backend_options),
            engine=dict(self.engine_options),
            shard_size=shard_size,
        )
        plan = prepare(cfg)  # tasks, modes, data files, few-shot pools
        target = RunTarget(output, run_identity(cfg), overwrite=overwrite) if output else None
        self.cache  # noqa: B018  (opened before the model)
        backend = self.backend
        if self.spec.is_api:  # e.g. no prompt log-probabilities: say so now
            backend.check_kinds(
                {u.unit.task.mode(u.unit.mode).formulation.kind for u in plan.units}
            )
        engine = self.engine
        samples: dict[str, list[dict]] | None = None
        if target is not None:
            if target.resumes:
                self.log(f"resuming the unfinished run in {target.staging}")
            store = target.open()
            try:
                data = evaluate(cfg, backend, engine, store, log=self.log, plan=plan)
            except BaseException:
                target.abandon()
                raise
            target.commit()
            if report_to:
                from negbench.evaluation.tracking import log_run

                for line in log_run(data, target.final, list(report_to)):
                    self.log(line)
        else:
            samples = {}
            data = evaluate(cfg, backend, engine, None, log=self.log, plan=plan, keep=samples)
        return Results(data, target.final if target is not None else None, samples)

    def close(self) -> None:
        try:
            if self._backend is not None and hasattr(self._backend, "close"):
                self._backend.close()
        finally:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _names(tasks: "str | Sequence[str]") -> list[str]:
    if isinstance(tasks, str):
        from negbench.options import names

        return names(tasks)
    return [str(t) for t in tasks]


def _opt(values: Sequence | None) -> list | None:
    return None if values is None else list(values)


def evaluate(
    model: "str | ModelSpec" = DEFAULT_MODEL,
    tasks: "str | Sequence[str]" = ("negation-mini",),
    *,
    modes: Sequence[str] | None = None,
    shots: Sequence[int] | None = None,
    seeds: Sequence[int] | None = None,
    limit: int | float | None = None,
    sample: int | None = None,
    sample_seed: int = 0,
    protocol: bool = False,
    chat: bool = False,
    system_prompt: str | None = None,
    chat_layout: str = "lm-eval",
    output: "str | Path | None" = None,
    overwrite: bool = False,
    shard_size: int = 20_000,
    report_to: Sequence[str] = (),
    **options: Any,
):
    """Evaluate ``model`` on ``tasks`` in a session of its own, and return
    :class:`~negbench.evaluation.results.Results` (see :meth:`Session.evaluate`).

    ``options`` make the session: a :class:`negbench.options.SessionOptions` as ``options=``, or
    the fields of its bundles as keywords, named as ``negbench run``'s options — model loading
    (``dtype``, ``device``, ``adapter``, ``quantize``, ``max_length``, ``threads``, ``add_bos``),
    API models (``tokenizer``, ``api_key_env``, ``concurrency``, ``rate_limit``, ``max_retries``,
    ``timeout``, ``api_seed``, ``vllm_args``), the engine (``cache``, ``batch_size``,
    ``max_row_tokens``, ``max_batch_tokens``, ``share_prefix``, ``group_tokens``), ``ray``
    (``ray_workers`` …), and ``progress`` / ``log``."""
    with Session(model, **options) as session:
        return session.evaluate(
            tasks,
            modes=modes,
            shots=shots,
            seeds=seeds,
            limit=limit,
            sample=sample,
            sample_seed=sample_seed,
            protocol=protocol,
            chat=chat,
            system_prompt=system_prompt,
            chat_layout=chat_layout,
            output=output,
            overwrite=overwrite,
            shard_size=shard_size,
            report_to=report_to,
        )


def open_model(model: "str | ModelSpec" = DEFAULT_MODEL, **options: Any) -> Session:
    """A :class:`Session` for ``model`` (checked now, loaded on first use): ``session.engine``
    answers :mod:`negbench.core.requests`, ``session.evaluate`` runs tasks."""
    return Session(model, **options)
