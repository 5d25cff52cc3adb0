"""The scoring engine: every request of a run, executed with as little model work as possible.

* identical requests run once (content keys), and answered ones come from the cache;
* log-likelihood and next-token requests go into one token trie, planned by
  :func:`negbench.core.trie.plan_forward` so each shared prefix is forwarded once;
* logits are computed only at scored positions (the backend's job);
* rows are length-sorted and batched to a row count and a token budget;
* answers are written to the cache after every model call, so a killed run resumes.

Results do not depend on batch size or grouping: the trie mask makes every token see exactly its
own context, whichever row it is packed in.

Request-level backends (``backend.level == "request"``, e.g. an OpenAI-compatible server; see
:mod:`negbench.core.backend`) answer whole requests.  For them the engine keeps dedup, the cache
(each answer committed as it arrives, with its provenance in the cache's ``answer_meta`` table),
progress and statistics, tokenises exactly as the token-level path when the backend has a
tokenizer, and sends requests sorted by prompt so that shared prefixes are adjacent (a server
with prefix caching reuses them).
"""

from __future__ import annotations

import gc
import itertools
import json
import logging
import sqlite3
import time
from collections.abc import Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

import numpy as np

from negbench.core.backend import PackedBatch, RequestJob, row_inputs
from negbench.core.cache import ResponseCache
from negbench.core.oom import OomSafe
from negbench.core.threads import thread_governor
from negbench.core.requests import (
    GenerationRequest,
    GenerationResponse,
    LoglikelihoodRequest,
    LoglikelihoodResponse,
    NextTokenRequest,
    NextTokenResponse,
    Request,
    Response,
    RollingLoglikelihoodRequest,
    RollingLoglikelihoodResponse,
)
from negbench.core.trie import (
    ChainStep,
    FreeStep,
    RowsStep,
    TokenTrie,
    TrieArrays,
    neighbour_lcp,
    plan_forward,
    prune,
    ranges,
    sorted_trie,
)

#: Row lengths the planner tries for packed rows (see ``Engine._plan``).
ROW_LENGTHS = (256, 512, 1024, 2048)
#: Cost of one attended (query, key) pair relative to one token through the linear layers, by
#: FLOPs: 4 × heads × head width × layers / (2 × non-embedding parameters) — 3.7e-4 for Gemma 3
#: 270M, 3.3e-4 for SmolLM2-135M (larger models have a smaller ratio; any value near these ranks
#: the row lengths the same on the workloads measured).
ATTENTION_PAIR_COST = 3.7e-4


@dataclass
class EngineStats:
    requests: int = 0
    unique: int = 0
    cached: int = 0
    computed: int = 0
    model_calls: int = 0
    forwarded_tokens: int = 0
    padded_tokens: int = 0
    unique_tokens: int = 0
    naive_tokens: int = 0
    scored_positions: int = 0  # positions whose output head (logits) was computed
    retries: int = 0  # request-level backends: requests sent again
    padded_plans: int = 0  # chunks scored as plain padded rows (sharing could not pay)
    forward_s: float = 0.0  # time inside forward calls (device time on a GPU)
    wall_s: float = 0.0

    def add(self, other: "EngineStats") -> None:
        for k, v in asdict(other).items():
            setattr(self, k, getattr(self, k) + v)


@dataclass
class EngineConfig:
    batch_size: int = 32  # rows per forward call
    max_row_tokens: int | None = None  # tokens packed into one row; None: auto (see _plan)
    max_batch_tokens: int | None = None  # rows × row length per forward call; None: the
    # backend's (transformers: 2048 on CPU, 32768 on GPU)
    share_prefix: bool = True  # trie sharing + packing; False = one row per request
    chunk_tokens: int = 200_000  # requests planned together (bounded memory on huge runs)
    gen_batch_size: int = 16
    gen_prefix_min: int = 64  # shared prompt prefix (tokens) worth one KV pass in generation
    progress: bool = True
    group_tokens: int | None = None  # tokens per prefix-sharing group (None: chunk_tokens);
    # the unit of work of a Ray pool (negbench.evaluation.cluster)
    plan: str = "auto"  # "auto": the trie, or padded rows where the cost model
    # says sharing cannot pay; "trie"; "padded"
    prefetch: bool | None = None  # prepare the next forward call on a worker thread while
    # one runs; None: on a GPU only (on a CPU the thread
    # takes cores from the forward)
    threads: int | str | None = None  # CPU threads: "auto" = the cores free now, looked at
    # again during the run (negbench.core.threads); N = fixed; None = leave torch's setting


@dataclass
class _Scored:
    key: str
    req: Request
    inputs: list[int]  # tokens forwarded (context + continuation[:-1])
    asks: list[tuple[int, int]] = field(default_factory=list)  # (position in inputs, target)
    labels: list[tuple[str, int]] = field(default_factory=list)  # next-token labels
    window: tuple[str, int, int] | None = None  # rolling: (request key, window, windows)


class Answers(list):
    """What :meth:`Engine.run` returns: the responses in request order (a list), with the call's
    statistics (``stats``) and the requests' cache keys (``keys``, for their provenance)."""

    def __init__(self, responses: list[Response], stats: "EngineStats", keys: list[str]):
        super().__init__(responses)
        self.stats = stats
        self.keys = keys


class Engine:
    def __init__(
        self,
        backend,
        cache: ResponseCache | None = None,
        config: EngineConfig | None = None,
        pool=None,
    ):
        self.backend = backend
        self.cache = cache
        self.config = config or EngineConfig()
        self.pool = pool  # scores groups elsewhere (negbench.evaluation.cluster.RayPool), or None
        if getattr(backend, "level", None) == "request":  # in-process request-level backends
            for name in ("batch_size", "max_batch_tokens", "gen_batch_size"):  # (seq2seq) batch
                if hasattr(backend, name) and getattr(self.config, name) is not None:
                    setattr(backend, name, getattr(self.config, name))  # as the engine is told
        self.stats = EngineStats()  # every run of this engine, added up
        self.oom = OomSafe()  # forward calls split in halves when they run out of memory
        self.threads = thread_governor(backend, self.config.threads)  # CPU: the free cores
        self._meta: dict[str, dict] = {}  # provenance of answers that arrived in this process

    # -- public --------------------------------------------------------------------------------
    def run(self, requests: Sequence[Request], desc: str = "scoring", bar=None) -> "Answers":
        """Answers in request order, with this call's statistics and cache keys.  ``bar``: a
        progress bar (tqdm-like) advanced by one per request, cached and duplicate ones included
        (for a caller's whole-run ETA); without it the engine shows its own bar over the
        requests it computes."""
        with gc_paused() as self._gc:
            return self._run(requests, desc, bar)

    def _run(self, requests: Sequence[Request], desc: str, bar) -> "Answers":
        t0 = time.perf_counter()
        st = EngineStats(requests=len(requests))
        fp = self.backend.fingerprint
        keys = request_keys(requests, fp)
        unique: dict[str, Request] = {}
        for k, r in zip(keys, requests):
            unique.setdefault(k, r)
        st.unique = len(unique)
        answers: dict[str, Response] = self.cache.get_many(list(unique)) if self.cache else {}
        st.cached = len(answers)
        todo = [(k, r) for k, r in unique.items() if k not in answers]
        st.computed = len(todo)
        own_bar = bar is None
        if bar is not None:
            # cached and duplicate requests are done already; each computed one advances it
            # by its number of occurrences
            mult: dict[str, int] = {}
            for k in keys:
                mult[k] = mult.get(k, 0) + 1
            skip_done(bar, len(requests) - sum(mult[k] for k, _ in todo))
        if todo:
            if own_bar:
                bar = progress_bar(len(todo), desc, self.config.progress)

            def done(items: list[tuple[str, Request, Response]]) -> None:
                for k, r, resp in items:
                    answers[k] = resp
                if self.cache:
                    self.cache.put_many([(k, r.kind, fp, resp) for k, r, resp in items])
                bar.update(len(items) if own_bar else sum(mult[k] for k, _, _ in items))

            try:  # stats of a failed call (retries…) are kept too
                if is_request_level(self.backend):
                    with gc_frozen(self._gc):
                        self._answer(todo, done, st)
                else:
                    scored = [(k, r) for k, r in todo if not isinstance(r, GenerationRequest)]
                    gens = [(k, r) for k, r in todo if isinstance(r, GenerationRequest)]
                    if scored:
                        self._score(scored, done, st)
                    if gens:
                        with gc_frozen(self._gc):
                            self._generate(gens, done, st)
            finally:
                if own_bar:
                    bar.close()
                self._record(st, t0)
            return Answers([answers[k] for k in keys], st, keys)
        self._record(st, t0)
        return Answers([answers[k] for k in keys], st, keys)

    def score_group(self, group: list[_Scored]) -> tuple[list[tuple[str, Response]], EngineStats]:
        """Score one prepared group here and return its answers and statistics: the whole job of
        a cluster worker, which thus runs exactly the code a one-process run runs on that group."""
        st = EngineStats()
        out: list[tuple[str, Response]] = []
        self._score_chunk(group, lambda items: out.extend((k, resp) for k, _, resp in items), st)
        return out, st

    def cluster_summary(self) -> dict | None:
        """The pool's workers, groups and retried groups (group, worker, error, attempt); None
        when this engine runs in one process."""
        return self.pool.summary() if self.pool is not None else None

    def _record(self, st: "EngineStats", t0: float) -> None:
        st.wall_s = time.perf_counter() - t0
        self.stats.add(st)

    # -- request level -------------------------------------------------------------------------
    def _answer(self, todo: list[tuple[str, Request]], done, st: EngineStats) -> None:
        """Hand unique, uncached requests to a request-level backend, sorted by prompt."""
        be = self.backend
        if any(isinstance(r, RollingLoglikelihoodRequest) for _, r in todo):
            from negbench.errors import ModelError

            raise ModelError(
                f"the {getattr(be, 'name', 'request-level')} backend cannot score a "
                "whole text's rolling log-likelihood (lm-eval "
                "loglikelihood_rolling: perplexity tasks such as wikitext)",
                where="--model",
                fix="use a local decoder-only model (an embedded "
                "name, a transformers folder, a .gguf file) for those tasks",
            )
        be.check_kinds({r.kind for _, r in todo})
        jobs: list[RequestJob] = []
        if getattr(be, "tokenizes", False):
            scored = [(k, r) for k, r in todo if not isinstance(r, GenerationRequest)]
            for s in self._prepare(scored):
                if isinstance(s.req, NextTokenRequest):
                    jobs.append(RequestJob(s.key, s.req, list(s.inputs), 0, list(s.labels)))
                else:
                    jobs.append(RequestJob(s.key, s.req, s.inputs + [s.asks[-1][1]], len(s.asks)))
            gens = [(k, r) for k, r in todo if isinstance(r, GenerationRequest)]
            enc = be.encode_batch([r.context for _, r in gens])
            for (k, r), e in zip(gens, enc):
                limit = max(1, be.max_length - r.max_tokens)
                jobs.append(RequestJob(k, r, e[-limit:] if e else [be.prefix_token_id]))
            jobs.sort(key=lambda j: j.tokens or [])  # all set: the engine tokenised them
        else:
            jobs = [RequestJob(k, r) for k, r in todo]
            jobs.sort(key=lambda j: (j.request.context, getattr(j.request, "continuation", "")))
        st.naive_tokens += sum(len(j.tokens or ()) for j in jobs)
        cache = self.cache

        def arrived(items) -> None:
            rows = [(k, m) for k, _, _, m in items if m]
            self._meta.update(rows)
            _save_meta(cache, rows)
            done([(k, r, resp) for k, r, resp, _ in items])

        tr = be.answer(jobs, arrived) or {}
        st.model_calls += tr.get("calls", 0)
        st.retries += tr.get("retries", 0)
        st.forwarded_tokens += tr.get("prompt_tokens", 0)
        st.naive_tokens += tr.get("naive_tokens", 0)  # backends that tokenise for themselves

    def provenance(self, keys: list[str]) -> list[dict | None]:
        """Per-answer provenance (served model id, system fingerprint, usage) of request-level
        answers, whether they arrived now or were cached by an earlier run; None where none."""
        missing = [k for k in set(keys) if k not in self._meta]
        found = answer_meta(self.cache, missing) if (self.cache and missing) else {}
        return [self._meta.get(k) or found.get(k) for k in keys]

    # -- tokenisation (lm-eval 0.4 HFLM._encode_pair) --------------------------------------------
    def _prepare(self, items: Sequence[tuple[str, Request]]) -> list[_Scored]:
        be = self.backend
        max_len = be.max_length
        out: list[_Scored] = []
        ll = [(k, r) for k, r in items if isinstance(r, LoglikelihoodRequest)]
        nt = [(k, r) for k, r in items if isinstance(r, NextTokenRequest)]
        ctxs, wholes = [], []
        for _, r in ll:
            ctx, cont = r.context, r.continuation
            n_sp = len(ctx) - len(ctx.rstrip())
            if n_sp:
                ctx, cont = ctx[:-n_sp], ctx[-n_sp:] + cont
            ctxs.append(ctx)
            wholes.append((ctx, cont))
        # identical contexts are tokenised once (encode_batch works on distinct texts), and where
        # the tokenizer provably never merges across the context/continuation join, the whole is
        # the context's tokens followed by the continuation's (no second pass over the context)
        split = getattr(be, "can_split", None)
        joins = [bool(c) and split is not None and split(c, k) for c, k in wholes]
        ctx_enc = be.encode_batch([c for c in ctxs if c])
        cont_tok = iter(
            be.encode_batch([k for (c, k), j in zip(wholes, joins) if j], add_special_tokens=False)
        )
        whole_enc = iter(
            be.encode_batch([c + k for (c, k), j in zip(wholes, joins) if c and not j])
        )
        empty_cont = be.encode_batch([k for c, k in wholes if not c], add_special_tokens=False)
        i = j = 0
        for (k, r), (c, cont), joined in zip(ll, wholes, joins):
            if c:
                ce = ctx_enc[i]
                i += 1
                cont_enc = next(cont_tok) if joined else next(whole_enc)[len(ce) :]
            else:  # lm-eval: the prefix token stands in
                cont_enc = empty_cont[j]
                j += 1
                if cont_enc[:1] == [be.prefix_token_id] and len(cont_enc) > 1:
                    ce, cont_enc = cont_enc[:1], cont_enc[1:]
                else:
                    ce = [be.prefix_token_id]
            if not cont_enc:
                raise ValueError(f"empty continuation after tokenisation: {r.continuation!r}")
            seq = (ce + cont_enc)[-(max_len + 1) :]
            inputs = seq[:-1]
            first = len(seq) - len(cont_enc)  # index in seq of the first continuation token
            asks = [(p - 1, seq[p]) for p in range(max(first, 1), len(seq))]
            out.append(_Scored(k, r, inputs, asks))
        nt_enc = be.encode_batch([r.context for _, r in nt if r.context])
        i = 0
        label_sets: dict[tuple[str, tuple[str, ...]], list[tuple[str, int]]] = {}
        for k, q in nt:
            if q.context:
                ce = nt_enc[i][-max_len:]
                i += 1
            else:
                ce = [be.prefix_token_id]
            key = (q.label_prefix, tuple(q.labels))
            labels = label_sets.get(key)
            if labels is None:  # each label set's first tokens, encoded once
                labels = label_sets[key] = []
                for lab in q.labels:
                    ids = be.encode(q.label_prefix + lab, add_special_tokens=False)
                    if not ids:
                        raise ValueError(f"label {lab!r} encodes to no token")
                    labels.append((lab, ids[0]))
            last = len(ce) - 1
            out.append(_Scored(k, q, ce, [(last, t) for _, t in labels], labels))
        rl = [(k, r) for k, r in items if isinstance(r, RollingLoglikelihoodRequest)]
        for (k, rr), toks in zip(rl, be.encode_batch([r.text for _, r in rl])):
            wins = rolling_windows(toks, be.prefix_token_id, max_len)
            if not wins:  # no token: lm-eval's sum over no windows
                out.append(_Scored(k, rr, [], window=(k, 0, 0)))
            for w, (wctx, wcont) in enumerate(wins):  # one scored item per window, joined later
                seq = wctx + wcont
                out.append(
                    _Scored(
                        f"{k}#{w}",
                        rr,
                        seq[:-1],
                        [(p - 1, seq[p]) for p in range(len(wctx), len(seq))],
                        window=(k, w, len(wins)),
                    )
                )
        return out

    # -- scoring -------------------------------------------------------------------------------
    def _score(self, items, done, st: EngineStats) -> None:
        prepared = self._prepare(items)
        if any(s.window for s in prepared):
            prepared, done = _join_windows(prepared, done)
        prepared, flat, offsets = _sort_by_tokens(prepared)
        st.naive_tokens += int(offsets[-1])
        lcp = neighbour_lcp(flat, offsets)
        groups = cut_groups(prepared, self.config.group_tokens or self.config.chunk_tokens, lcp)
        if self.pool is not None:  # the same groups, each on a worker (same results)
            self.pool.score(self, groups, done, st)
            return
        with gc_frozen(getattr(self, "_gc", True)):
            start = 0
            for group in groups:
                stop = start + len(group)
                self._score_chunk(
                    group,
                    done,
                    st,
                    flat[offsets[start] : offsets[stop]],
                    offsets[start : stop + 1] - offsets[start],
                    lcp[start:stop],
                )
                start = stop

    def _score_chunk(
        self,
        chunk: list[_Scored],
        done,
        st: EngineStats,
        flat: np.ndarray | None = None,
        offsets: np.ndarray | None = None,
        lcp: np.ndarray | None = None,
    ) -> None:
        """Score token-sorted requests: one trie (array code), one plan, then the forward calls,
        each prepared on a worker thread while the one before runs, its results read back once
        and every request it completes answered at once."""
        with gc_paused():
            layout = self._lay_out(chunk, st, flat, offsets, lcp)
        self._run_calls(chunk, done, st, *layout)

    def _lay_out(self, chunk: list[_Scored], st: EngineStats, flat, offsets, lcp=None):
        """A chunk's asks, trie, plan and calls, as arrays."""
        cfg = self.config
        if flat is None:
            flat, offsets = _flatten(chunk)
        n = len(chunk)
        n_asks = np.fromiter((len(s.asks) for s in chunk), dtype=np.int64, count=n)
        ask_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(n_asks, out=ask_ptr[1:])
        chain = itertools.chain.from_iterable
        asks = np.fromiter(
            chain(chain(s.asks for s in chunk)), dtype=np.int64, count=2 * int(ask_ptr[-1])
        ).reshape(-1, 2)
        ask_pos, ask_tok = asks[:, 0], asks[:, 1]
        ask_req = np.repeat(np.arange(n, dtype=np.int64), n_asks)
        if lcp is not None and len(lcp):
            lcp = lcp.copy()
            lcp[0] = 0  # the group's first request starts its trie
        trie = sorted_trie(flat, offsets, share=cfg.share_prefix, lcp=lcp)
        plan, arrays, ask_node = self._plan_chunk(
            trie, flat, offsets, ask_req, ask_pos, ask_tok, st
        )
        lay = _Layout(arrays, ask_node, ask_tok)
        calls = self._calls(plan)
        comp = np.maximum.reduceat(lay.call_of_node(calls, len(arrays))[ask_node], ask_ptr[:-1])
        by_call = np.argsort(comp, kind="stable")
        bounds = np.searchsorted(comp[by_call], np.arange(len(calls) + 1))
        return lay, calls, by_call, bounds, ask_ptr

    def _run_calls(
        self,
        chunk,
        done,
        st: EngineStats,
        lay: "_Layout",
        calls: list["_Call"],
        by_call: np.ndarray,
        bounds: np.ndarray,
        ask_ptr: np.ndarray,
    ) -> None:
        """The forward calls, each prepared on a worker thread while the one before runs, its
        results read back once, and every request it completes answered at once."""
        cfg = self.config
        be = self.backend
        forward = getattr(be, "forward_batch", None) or _rows_forward(be)
        stage = getattr(be, "stage", None)
        forward = self.oom.wrap(forward, stage)
        prefixes: dict[int, object] = {}
        in_flight: list = []
        slot_lp = np.zeros(lay.n_slots, dtype=np.float64)
        node_am = np.full(len(lay.arrays), -1, dtype=np.int64)
        t0 = _forward_clock(be)

        def prepare(c: int):  # (arrays, target slots, query nodes, staged form)
            made = lay.batch(calls[c])
            return made + (made[0] if stage is None else stage(made[0]),)

        def absorb(c: int, made, pending) -> None:
            lp, am = pending.result()
            slot_lp[made[1]] = lp
            node_am[made[2]] = am
            st.scored_positions += len(am)
            reqs = by_call[bounds[c] : bounds[c + 1]]
            if len(reqs):
                with gc_paused():
                    done(self._responses(chunk, reqs, ask_ptr, lay, slot_lp, node_am))

        live = [c for c, call in enumerate(calls) if call.free is None]
        following = dict(zip(live, live[1:]))
        pool = _prefetcher(cfg, be)
        ahead: dict[int, Future] = {}
        try:
            for c, call in enumerate(calls):
                if call.free is not None:
                    prefixes.pop(call.free, None)
                    continue
                made = ahead.pop(c).result() if c in ahead else prepare(c)
                if pool is not None and c in following:  # the next call, made meanwhile
                    ahead[following[c]] = pool.submit(prepare, following[c])
                self.threads.tick()  # cheap; looks at the free cores every few seconds
                pending, kv = forward(
                    made[3],
                    prefixes.get(call.prefix) if call.prefix else None,
                    call.prefix_len,
                    keep_kv=call.new_prefix is not None,
                )
                if call.new_prefix is not None:
                    prefixes[call.new_prefix] = kv
                st.model_calls += 1
                st.padded_tokens += int(made[0].ids.size)
                in_flight.append((c, made, pending))
                if len(in_flight) > 1:  # read back the call before while this one runs
                    absorb(*in_flight.pop(0))
            while in_flight:
                absorb(*in_flight.pop(0))
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
            st.forward_s += _forward_clock(be) - t0
        assert (node_am[lay.slot_node] >= 0).all(), "engine bug: unanswered requests after the plan"

    def _plan_chunk(self, trie, flat, offsets, ask_req, ask_pos, ask_tok, st: EngineStats):
        """The chunk's plan: the trie's (every shared prefix forwarded once), or, where the
        cost model says sharing cannot pay, plain padded rows, one request each (see
        :meth:`_plan`).  Returns (plan, the planned trie's arrays, each ask's node)."""
        cfg = self.config
        ask_node = trie.node(ask_req, ask_pos)
        arrays, remap = prune(trie.arrays, _queried(len(trie.arrays), ask_node))
        if remap is not None:
            ask_node = remap[ask_node]
        plan = self._plan(arrays)
        st.unique_tokens += plan.unique_tokens
        if cfg.plan == "padded" or (
            cfg.plan == "auto"
            and cfg.share_prefix
            and not cfg.max_row_tokens
            and self._padded_cost(np.diff(offsets)) < plan.cost
        ):
            trie = sorted_trie(flat, offsets, share=False)
            ask_node = trie.node(ask_req, ask_pos)
            arrays, remap = prune(trie.arrays, _queried(len(trie.arrays), ask_node))
            if remap is not None:
                ask_node = remap[ask_node]
            plan = plan_forward(arrays, max(int(np.diff(offsets).max()), 1), pack=False)
            st.padded_plans += 1
        st.forwarded_tokens += plan.forwarded_tokens
        return plan, arrays, ask_node

    def _plan(self, trie):
        """The forward plan of a chunk's trie, at the row length the cost model prefers.

        Why not one length: attention in a packed row costs (row length) × (prefix + row length)
        per layer (a 2048-token row of a 270M model spends as much on attention as on its linear
        layers), while short rows pad more when the subtrees below the shared trunk do not fill
        them.  Each length in :data:`ROW_LENGTHS` is planned (cheap: index arithmetic on the
        trie's arrays and a best-fit packing of its subtrees) and costed as forwarded tokens
        (padding included) × (1 + :data:`ATTENTION_PAIR_COST` × attended keys per token, plus the
        backend's cost per forward call); the cheapest wins, the longer on a tie.  Measured on
        KoNUBench 0-shot cloze (Gemma 3 270M, 2 CPU threads, engine only, best of two): the
        request-length rule this replaces packed 2,048-token rows after the 220-token shared
        instruction (182 CPU s); the planner picks 512 (154 s; 256: 181 s, 1024: 153 s;
        benchmarks/engine_rows.py)."""
        arrays = trie.arrays() if isinstance(trie, TokenTrie) else trie
        cfg = self.config
        if cfg.max_row_tokens or not cfg.share_prefix:
            plan = plan_forward(arrays, cfg.max_row_tokens or 2048, pack=cfg.share_prefix)
            plan.cost = self._plan_cost(plan)
            return plan
        best = None
        for length in ROW_LENGTHS:
            plan = plan_forward(arrays, length, pack=True)
            plan.cost = self._plan_cost(plan)
            if best is None or plan.cost <= best.cost:
                best = plan
            if (
                len(plan.steps) == 1
                and isinstance(plan.steps[0], RowsStep)
                and len(plan.steps[0].lengths) == 1
            ):
                break  # the whole trie fits one row: longer rows change nothing
        return best

    def _plan_cost(self, plan) -> float:
        """Forwarded tokens, padding included, each weighted by the keys it attends to (the
        backend's ``attention_keys``: a masked row computes every (query, key) pair of prefix +
        row, an unbranched one the causal half), plus the backend's cost of one forward call in
        tokens (``call_tokens``: a few on a CPU, thousands on a GPU, where a small model's call
        is mostly kernel launches)."""
        call = getattr(self.backend, "call_tokens", 0)
        keys = getattr(self.backend, "attention_keys", None) or attention_keys
        cost = 0.0
        for step in plan.steps:
            if isinstance(step, ChainStep):
                n = step.last - step.first + 1
                cost += call + n * (1 + ATTENTION_PAIR_COST * keys(step.prefix_len, n, False))
            elif isinstance(step, RowsStep):
                for rows in self._step_batches(step):
                    width = int(step.lengths[rows[0]])
                    branched = bool(step.branched[rows].any())
                    cost += call + len(rows) * width * (
                        1 + ATTENTION_PAIR_COST * keys(step.prefix_len, width, branched)
                    )
        return cost

    def _padded_cost(self, lengths: np.ndarray) -> float:
        """The cost (as :meth:`_plan_cost`) of plain padded batches: every request's tokens in a
        row of its own, unbranched, rows longest first."""
        call = getattr(self.backend, "call_tokens", 0)
        keys = getattr(self.backend, "attention_keys", None) or attention_keys
        lens = np.sort(lengths)[::-1]
        cost = 0.0
        for rows in _cut(lens.tolist(), self.config.batch_size, self._batch_tokens(), 0):
            width = lens[rows[0]]
            cost += call + len(rows) * width * (1 + ATTENTION_PAIR_COST * keys(0, width, False))
        return cost

    def _step_batches(self, step: RowsStep) -> list[np.ndarray]:
        """A rows step's forward calls (as row indices): its rows longest first, cut by count
        and by (prefix + row) tokens; the planner costs exactly the calls the scoring loop
        makes."""
        order = np.argsort(-step.lengths, kind="stable")
        cuts = _cut(
            step.lengths[order].tolist(),
            self.config.batch_size,
            self._batch_tokens(),
            step.prefix_len,
        )
        return [order[c] for c in cuts]

    def _calls(self, plan) -> list["_Call"]:
        """The plan as forward calls in order (prefix frees included)."""
        calls: list[_Call] = []
        for step in plan.steps:
            if isinstance(step, FreeStep):
                calls.append(_Call(None, 0, free=step.prefix))
            elif isinstance(step, ChainStep):
                calls.append(
                    _Call(
                        step.prefix,
                        step.prefix_len,
                        chain=(step.first, step.last),
                        new_prefix=step.new_prefix,
                    )
                )
            else:
                for rows in self._step_batches(step):
                    counts = step.ptr[rows + 1] - step.ptr[rows]
                    roots = step.roots[ranges(step.ptr[rows], counts)]
                    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
                    np.cumsum(counts, out=ptr[1:])
                    calls.append(
                        _Call(
                            step.prefix,
                            step.prefix_len,
                            roots=roots,
                            ptr=ptr,
                            lengths=step.lengths[rows],
                            branched=bool(step.branched[rows].any()),
                        )
                    )
        return calls

    def _batch_tokens(self) -> int:
        default: int = getattr(self.backend, "batch_tokens", 32768)
        return self.config.max_batch_tokens or default

    @staticmethod
    def _responses(
        chunk: list[_Scored],
        reqs: np.ndarray,
        ask_ptr: np.ndarray,
        lay: "_Layout",
        slot_lp: np.ndarray,
        node_am: np.ndarray,
    ) -> list[tuple[str, Request, Response]]:
        """Answers of the requests ``reqs`` (all their asks now computed)."""
        starts, counts = ask_ptr[reqs], ask_ptr[reqs + 1] - ask_ptr[reqs]
        idx = ranges(starts, counts)
        lps = slot_lp[lay.ask_slot[idx]]
        greedy = node_am[lay.ask_node[idx]] == lay.ask_tok[idx]
        first = np.zeros(len(reqs), dtype=np.int64)
        np.cumsum(counts[:-1], out=first[1:])
        totals = np.add.reduceat(lps, first).tolist()
        all_greedy = np.logical_and.reduceat(greedy, first).tolist()
        lps = lps.tolist()
        out: list[tuple[str, Request, Response]] = []
        for i, a, m, total, greedy in zip(
            reqs.tolist(), first.tolist(), counts.tolist(), totals, all_greedy
        ):
            s = chunk[i]
            if s.labels:  # next-token: one ask per label, in label order
                resp: Response = NextTokenResponse(
                    dict(zip([lab for lab, _ in s.labels], lps[a : a + m])), dict(s.labels)
                )
            else:
                resp = LoglikelihoodResponse(total, m, greedy)
            out.append((s.key, s.req, resp))
        return out

    # -- generation ----------------------------------------------------------------------------
    def _generate(self, items, done, st: EngineStats) -> None:
        """Greedy generation.  Prompts are sorted so that those sharing a long token prefix (a
        task description, a fixed few-shot block) sit together; each such cluster has its prefix
        forwarded once and its KV cache continued by every batch of the cluster."""
        be = self.backend
        cfg = self.config
        groups: dict[tuple, list[tuple[str, GenerationRequest]]] = {}
        for k, r in items:
            groups.setdefault((r.stop, r.max_tokens), []).append((k, r))
        for (stop, max_tokens), reqs in groups.items():
            enc = be.encode_batch([r.context for _, r in reqs])
            limit = max(1, be.max_length - max_tokens)
            enc = [e[-limit:] if e else [be.prefix_token_id] for e in enc]
            st.naive_tokens += sum(len(e) for e in enc)
            for idx, shared in _prefix_clusters(enc, cfg.gen_prefix_min if cfg.share_prefix else 0):
                kv = None
                if shared:
                    kv = be.prefix_kv(enc[idx[0]][:shared])
                    st.model_calls += 1
                    st.forwarded_tokens += shared
                idx.sort(key=lambda i: -len(enc[i]))
                for s in range(0, len(idx), cfg.gen_batch_size):
                    batch = idx[s : s + cfg.gen_batch_size]
                    outs = be.generate(
                        [enc[i][shared:] for i in batch],
                        stop,
                        max_tokens,
                        prefix=kv,
                        prefix_len=shared,
                    )
                    st.model_calls += 1
                    st.forwarded_tokens += sum(len(enc[i]) - shared for i in batch)
                    done(
                        [
                            (reqs[i][0], reqs[i][1], GenerationResponse(text, n, why))
                            for i, (text, n, why) in zip(batch, outs)
                        ]
                    )


def rolling_windows(
    tokens: list[int], prefix: int, max_len: int
) -> list[tuple[list[int], list[int]]]:
    """(context, continuation) token windows that predict every token of ``tokens`` once, as
    lm-eval 0.4's ``get_rolling_token_windows(tokens, prefix, max_len, context_len=1)`` followed
    by ``make_disjoint_window``: the first window predicts up to ``max_len`` tokens after
    ``prefix``; each later one predicts the next up to ``max_len`` tokens after as many preceding
    tokens as fit in ``max_len + 1`` (context + continuation)."""
    if not tokens:
        return []
    first = min(max_len, len(tokens))
    out = [([prefix], tokens[:first])]
    done = first
    while done < len(tokens):
        n = min(len(tokens) - done, max_len)
        end = done + n
        ctx = tokens[end - max_len - 1 : end - 1]
        out.append((ctx[: len(ctx) - (n - 1)], tokens[end - n : end]))
        done = end
    return out


def _join_windows(prepared: list[_Scored], done):
    """Rolling requests are scored window by window (each window one trie path, so windows
    pack and share prefixes like any other request); the returned ``done`` sums a document's
    windows, in window order as lm-eval does, and passes on one answer per document once all
    of them are in.  Documents without a token are answered at once (log-likelihood 0)."""
    where = {s.key: s.window for s in prepared if s.window and s.window[2]}
    parts: dict[str, dict[int, LoglikelihoodResponse]] = {}

    def joined(items) -> None:
        out = []
        for k, r, resp in items:
            if k not in where:
                out.append((k, r, resp))
                continue
            key, w, n = where[k]
            got = parts.setdefault(key, {})
            got[w] = resp
            if len(got) == n:
                del parts[key]
                wins = [got[i] for i in range(n)]
                out.append(
                    (
                        key,
                        r,
                        RollingLoglikelihoodResponse(
                            sum(x.logprob for x in wins), sum(x.n_tokens for x in wins), n
                        ),
                    )
                )
        if out:
            done(out)

    empty = [
        (s.key, s.req, RollingLoglikelihoodResponse(0.0, 0, 0))
        for s in prepared
        if s.window and not s.window[2]
    ]
    if empty:
        done(empty)
    return [s for s in prepared if not (s.window and not s.window[2])], joined


def cut_groups(
    prepared: list[_Scored], target: int, lcp: np.ndarray | None = None
) -> list[list[_Scored]]:
    """Cut token-sorted requests into groups of about ``target`` tokens, deterministically (a
    function of the requests and ``target`` only, never of workers or timing, so a one-process
    run and a cluster run plan the very same groups).  Each group holds between ``target / 2``
    and ``target`` tokens (a single longer request is a group of its own); within that window
    the cut goes where the common prefix with the previous request is shortest (latest such
    place on ties), so a shared prefix — a few-shot block, a passage — stays in one group and
    its trie.  ``lcp``: each request's common prefix with the one before (computed if absent)."""
    if lcp is None:
        lcp = neighbour_lcp(*_flatten(prepared))
    groups: list[list[_Scored]] = []
    n = len(prepared)
    start = 0
    while start < n:
        size, end = 0, start  # end: first request that no longer fits
        while end < n and (end == start or size + len(prepared[end].inputs) <= target):
            size += len(prepared[end].inputs)
            end += 1
        if end == n:
            groups.append(prepared[start:])
            break
        best, best_lcp, acc = end, None, 0
        for j in range(start + 1, end + 1):  # cut before j: group = start..j-1
            acc += len(prepared[j - 1].inputs)
            if acc * 2 < target and j < end:
                continue
            shared = int(lcp[j])
            if best_lcp is None or shared <= best_lcp:
                best, best_lcp = j, shared
        groups.append(prepared[start:best])
        start = best
    return groups


def request_keys(requests: Sequence[Request], fingerprint: str) -> list[str]:
    """:func:`negbench.requests.request_key` of each request, the same strings, without
    ``dataclasses.asdict``'s deep copy per request (a request's fields are strings, numbers and
    tuples of strings: the same JSON)."""
    import hashlib
    from dataclasses import fields

    dumps, sha = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode, hashlib.sha256
    names: dict[type, tuple[str, ...]] = {}
    out = []
    for r in requests:
        t = type(r)
        ns = names.get(t)
        if ns is None:
            ns = names[t] = tuple(f.name for f in fields(t))
        payload = {n: getattr(r, n) for n in ns}
        blob = dumps([fingerprint, payload])
        out.append(sha(blob.encode("utf-8")).hexdigest())
    return out


def is_request_level(backend) -> bool:
    return getattr(backend, "level", "token") == "request"


_log = logging.getLogger("negbench")


def _save_meta(cache: ResponseCache | None, rows: list[tuple[str, dict]]) -> None:
    """Per-answer provenance of request-level backends (served model id, system fingerprint,
    usage), beside the answers in the cache (table ``answer_meta``).  Written before the answers
    themselves: an answer in the cache always has its provenance."""
    if cache is None or cache.readonly or not rows:
        return
    try:
        with cache.db:
            cache.db.execute(
                "CREATE TABLE IF NOT EXISTS answer_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            cache.db.executemany(
                "INSERT OR REPLACE INTO answer_meta VALUES (?, ?)",
                [(k, json.dumps(m, sort_keys=True)) for k, m in rows],
            )
    except sqlite3.Error as exc:
        _log.warning("could not save answer provenance in %s: %s", cache.path, exc)


def answer_meta(cache: ResponseCache, keys: list[str]) -> dict[str, dict]:
    """The saved provenance of answered requests (request-level backends)."""
    out: dict[str, dict] = {}
    try:
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            q = "SELECT key, value FROM answer_meta WHERE key IN (%s)" % ",".join("?" * len(chunk))
            out.update({k: json.loads(v) for k, v in cache.db.execute(q, chunk)})
    except sqlite3.Error:
        pass
    return out


def _prefix_clusters(enc: list[list[int]], min_prefix: int) -> list[tuple[list[int], int]]:
    """Partition prompts (by index) into clusters that each share one token prefix, choosing
    (greedily, bottom-up over the prompts' prefix tree) the partition that forwards the fewest
    tokens: one cluster per few-shot block, and the rest sharing a common description.  Returns
    (indices, shared length), shared = 0 for prompts that gain nothing (all of them when
    ``min_prefix`` is 0).  Every prompt keeps at least one token after its cluster's prefix."""
    if not enc:
        return []
    order = sorted(range(len(enc)), key=lambda i: enc[i])
    if not min_prefix:
        return [(order, 0)]
    # common prefixes of neighbours in sorted order (capped: a token stays after the prefix)
    adj = [
        min(_lcp(enc[a], enc[b]), len(enc[a]) - 1, len(enc[b]) - 1)
        for a, b in zip(order, order[1:])
    ]

    def best(lo: int, hi: int) -> tuple[int, list[tuple[list[int], int]], list[int]]:
        """For sorted prompts lo..hi: tokens saved, clusters (positions, shared), and the
        positions left loose (to share a shorter prefix one level up)."""
        if lo == hi:
            return 0, [], [lo]
        m = min(adj[lo:hi])
        saved, clusters, pool, start = 0, [], [], lo
        for k in range(lo, hi + 1):  # children: split where the LCP is minimal
            if k == hi or adj[k] == m:
                s_c, cl_c, loose_c = best(start, k)
                n_c = k - start + 1
                if s_c >= (n_c - len(loose_c)) * m:  # keep the child's own clusters
                    saved += s_c
                    clusters += cl_c
                    pool += loose_c
                else:  # dissolve it into this level's prefix
                    pool += list(range(start, k + 1))
                start = k + 1
        if m >= min_prefix and len(pool) >= 2:
            return saved + (len(pool) - 1) * m, clusters + [(pool, m)], []
        return saved, clusters, pool

    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * len(enc) + 100))
    try:
        _, parts, rest = best(0, len(order) - 1)
    finally:
        sys.setrecursionlimit(limit)
    out = [([order[k] for k in pos], shared) for pos, shared in parts]
    if rest:
        out.append(([order[k] for k in rest], 0))
    return out


def _lcp(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def skip_done(bar, n: int) -> None:
    """Take ``n`` requests that need no computing (cached, duplicates, saved shards) out of a
    bar's total instead of counting them as progress: the rate and the ETA then describe only
    the work still to do (a bar that counted them said "1 minute" for a 15-minute run)."""
    if n <= 0:
        return
    bar.total = max(bar.total - n, bar.n)
    bar.skipped = getattr(bar, "skipped", 0) + n
    if hasattr(bar, "set_postfix_str"):
        bar.set_postfix_str(f"{bar.skipped} cached", refresh=False)
    bar.refresh()


def progress_bar(total: int, desc: str, enabled: bool):
    """A tqdm bar with rate and ETA (disabled: a no-op bar)."""
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        desc=desc,
        unit="req",
        disable=not enabled,
        dynamic_ncols=True,
        leave=False,
        smoothing=0.05,
    )


@contextmanager
def gc_paused():
    """Python's cyclic garbage collector off while the engine builds many small objects that
    hold no cycles (token lists, requests, answers); yields whether it was on.  Why: its full
    collections rescan every container the process holds; tokenising This is not a Dataset's
    22k prompts took 22 µs each with it on, 6 µs with it off."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield was
    finally:
        if was:
            gc.enable()


@contextmanager
def gc_frozen(enable: bool = True):
    """The forward calls' loop with the collector on (their transient objects may hold cycles)
    but the objects alive now (the run's requests, tokens, answers so far) frozen out of its
    scans (``gc.freeze``), so a collection costs what the loop allocates, not the whole heap.
    Nothing changes when the collector was off before the run, or when some other code froze
    objects already (its freeze is not ours to undo)."""
    mine = enable and gc.get_freeze_count() == 0
    if mine:
        gc.freeze()
        gc.enable()
    try:
        yield
    finally:
        if mine:
            gc.disable()
            gc.unfreeze()


def attention_keys(prefix_len: int, width: int, branched: bool) -> float:
    """Keys each token of a row attends to, for the planner's cost: a masked row computes every
    (query, key) pair of prefix + row; an unbranched row is causal (half the row on average).
    A backend may refine this (``HFBackend.attention_keys``: kernels differ by device)."""
    return prefix_len + (width if branched else (width + 1) / 2)


@dataclass
class _Call:
    """One forward call of a plan: a chain (pre-order nodes ``chain[0]..chain[1]``, its KV kept
    as ``new_prefix``), a batch of rows (row r: the subtrees at ``roots[ptr[r]:ptr[r + 1]]``),
    or the release of a prefix (``free``)."""

    prefix: int | None
    prefix_len: int
    chain: tuple[int, int] | None = None
    new_prefix: int | None = None
    roots: np.ndarray | None = None
    ptr: np.ndarray | None = None
    lengths: np.ndarray | None = None
    branched: bool = True
    free: int | None = None


class _Layout:
    """A chunk's forward calls as arrays: which tokens, positions and subtree ends each row
    holds and which (position, target) pairs each call scores — index arithmetic on the
    planned trie's arrays, no Python step per token.  Every distinct (node, target) pair is one
    *slot*; each request's answer sums (or reads) its asks' slots."""

    def __init__(self, arrays: TrieArrays, ask_node: np.ndarray, ask_tok: np.ndarray):
        self.arrays = arrays
        self.ask_node, self.ask_tok = ask_node, ask_tok
        v = int(ask_tok.max()) + 1 if len(ask_tok) else 1
        uniq, inv = np.unique(ask_node * v + ask_tok, return_inverse=True)
        self.ask_slot = inv.reshape(-1)
        self.slot_node = uniq // v
        self.slot_tok = uniq - self.slot_node * v
        self.n_slots = len(uniq)
        self.qnodes, first = np.unique(self.slot_node, return_index=True)
        self.qptr = np.append(first, len(uniq)).astype(np.int64)
        self.node_q = np.full(len(arrays), -1, dtype=np.int64)
        self.node_q[self.qnodes] = np.arange(len(self.qnodes), dtype=np.int64)

    def call_of_node(self, calls: list[_Call], n: int) -> np.ndarray:
        out = np.full(n, -1, dtype=np.int64)
        for c, call in enumerate(calls):
            if call.chain is not None:
                out[call.chain[0] : call.chain[1] + 1] = c
            elif call.roots is not None:
                out[ranges(call.roots, self.arrays.end[call.roots] - call.roots + 1)] = c
        return out

    def batch(self, call: _Call) -> tuple[PackedBatch, np.ndarray, np.ndarray]:
        """The call's :class:`PackedBatch`, the slot of each of its targets and the node of
        each of its scored positions."""
        a = self.arrays
        if call.chain is not None:
            idx = np.arange(call.chain[0], call.chain[1] + 1, dtype=np.int64)
            n = len(idx)
            lengths = np.array([n], dtype=np.int64)
            row_of = np.zeros(n, dtype=np.int64)
            col = np.arange(n, dtype=np.int64)
            ids, pos, end = a.token[idx][None], a.depth[idx][None], None
        else:
            roots, lengths = call.roots, call.lengths
            assert roots is not None and lengths is not None and call.ptr is not None  # a rows call
            sizes = a.end[roots] - roots + 1
            idx = ranges(roots, sizes)
            B, L = len(lengths), int(lengths.max())
            row_of_root = np.repeat(np.arange(B, dtype=np.int64), np.diff(call.ptr))
            row_start = np.zeros(B, dtype=np.int64)
            np.cumsum(lengths[:-1], out=row_start[1:])
            root_start = np.zeros(len(roots), dtype=np.int64)
            np.cumsum(sizes[:-1], out=root_start[1:])
            row_of = np.repeat(row_of_root, sizes)
            col = np.arange(len(idx), dtype=np.int64) - row_start[row_of]
            ids = np.zeros((B, L), dtype=np.int64)
            ids[row_of, col] = a.token[idx]
            pos = np.zeros((B, L), dtype=np.int64)
            pos[row_of, col] = a.depth[idx]
            end = None
            if call.branched:  # padding ends at itself: attends only itself
                end = np.tile(np.arange(L, dtype=np.int64), (B, 1))
                shift = roots - (root_start - row_start[row_of_root])
                end[row_of, col] = a.end[idx] - np.repeat(shift, sizes)
        qi = self.node_q[idx]
        m = qi >= 0
        qn = qi[m]
        counts = self.qptr[qn + 1] - self.qptr[qn]
        t_slot = ranges(self.qptr[qn], counts)
        batch = PackedBatch(
            ids,
            pos,
            end,
            lengths,
            row_of[m],
            col[m],
            np.repeat(np.arange(len(qn), dtype=np.int64), counts),
            self.slot_tok[t_slot],
        )
        return batch, t_slot, self.qnodes[qn]


class _Done:
    """A result that is already there (``concurrent.futures.Future``-like)."""

    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


def _rows_forward(backend):
    """``forward_batch`` for a backend that has only ``forward_rows``."""

    def forward(batch: PackedBatch, prefix=None, prefix_len: int = 0, keep_kv: bool = False):
        res, kv = backend.forward_rows(row_inputs(batch), prefix, prefix_len, keep_kv=keep_kv)
        flat = [qr for row in res for qr in row]
        lp = np.fromiter((x for qr in flat for x in qr.logprobs), dtype=np.float64)
        am = np.fromiter((qr.argmax for qr in flat), dtype=np.int64, count=len(flat))
        return _Done((lp, am)), kv

    return forward


def _forward_clock(backend) -> float:
    """Seconds the backend has spent in forward calls so far (0 when it does not say)."""
    clock = getattr(backend, "forward_seconds", None)
    return float(clock()) if callable(clock) else 0.0


def _prefetcher(cfg: EngineConfig, backend):
    on = cfg.prefetch
    if on is None:
        on = str(getattr(backend, "device", "cpu")).startswith("cuda")
    if not on:
        return None
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="negbench-prefetch")


def _queried(n: int, nodes: np.ndarray) -> np.ndarray:
    q = np.zeros(n, dtype=bool)
    q[nodes] = True
    return q


def _sort_by_tokens(prepared: list["_Scored"]):
    """Requests sorted by their input tokens (as lists of ints sort: a prefix first; a stable
    sort), with the flat token array and offsets in that order.  The keys are slices of one
    big-endian byte buffer, compared in C."""
    flat, offsets = _flatten(prepared)
    buf = flat.astype(">u4").tobytes()
    bounds = (offsets * 4).tolist()
    keys = [buf[a:b] for a, b in zip(bounds, bounds[1:])]
    order = np.asarray(sorted(range(len(prepared)), key=keys.__getitem__), dtype=np.int64)
    lens = np.diff(offsets)[order]
    new_offsets = np.zeros(len(prepared) + 1, dtype=np.int64)
    np.cumsum(lens, out=new_offsets[1:])
    return (
        [prepared[i] for i in order.tolist()],
        flat[ranges(offsets[:-1][order], lens)],
        new_offsets,
    )


def _flatten(prepared: list["_Scored"]) -> tuple[np.ndarray, np.ndarray]:
    """All requests' input tokens in one array, and each request's offsets into it."""
    n = len(prepared)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(
        np.fromiter((len(s.inputs) for s in prepared), dtype=np.int64, count=n), out=offsets[1:]
    )
    flat = np.fromiter(
        itertools.chain.from_iterable(s.inputs for s in prepared),
        dtype=np.int64,
        count=int(offsets[-1]),
    )
    return flat, offsets


def _cut(
    lengths: list[int], batch_size: int, max_batch_tokens: int, prefix_len: int
) -> list[np.ndarray]:
    """Rows (longest first) cut into forward calls, bounded by count and by (prefix + widest
    row) tokens per row."""
    out, start = [], 0
    for i in range(1, len(lengths)):
        if (
            i - start >= batch_size
            or (i - start + 1) * (prefix_len + lengths[start]) > max_batch_tokens
        ):
            out.append(np.arange(start, i, dtype=np.int64))
            start = i
    if lengths:
        out.append(np.arange(start, len(lengths), dtype=np.int64))
    return out
