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
:mod:`negbench.backends.base`) answer whole requests.  For them the engine keeps dedup, the cache
(each answer committed as it arrives, with its provenance in the cache's ``answer_meta`` table),
progress and statistics, tokenises exactly as the token-level path when the backend has a
tokenizer, and sends requests sorted by prompt so that shared prefixes are adjacent (a server
with prefix caching reuses them).
"""
from __future__ import annotations

import json
import logging
import sqlite3
import time
from dataclasses import asdict, dataclass, field
from negbench.backends.base import Query, RequestJob, RowInput
from negbench.core.cache import ResponseCache
from negbench.core.requests import (GenerationRequest, GenerationResponse, LoglikelihoodRequest,
                               LoglikelihoodResponse, NextTokenRequest, NextTokenResponse,
                               Request, Response, RollingLoglikelihoodRequest,
                               RollingLoglikelihoodResponse, request_key)
from negbench.core.trie import ChainStep, FreeStep, RowsStep, TokenTrie, plan_forward

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
    scored_positions: int = 0            # positions whose output head (logits) was computed
    retries: int = 0                     # request-level backends: requests sent again
    wall_s: float = 0.0

    def add(self, other: "EngineStats") -> None:
        for k, v in asdict(other).items():
            setattr(self, k, getattr(self, k) + v)


@dataclass
class EngineConfig:
    batch_size: int = 32                 # rows per forward call
    max_row_tokens: int | None = None    # tokens packed into one row; None: auto (see _plan)
    max_batch_tokens: int | None = None  # rows × row length per forward call; None: the
                                         # backend's (transformers: 2048 on CPU, 32768 on GPU)
    share_prefix: bool = True            # trie sharing + packing; False = one row per request
    chunk_tokens: int = 200_000          # requests planned together (bounded memory on huge runs)
    gen_batch_size: int = 16
    gen_prefix_min: int = 64             # shared prompt prefix (tokens) worth one KV pass in generation
    progress: bool = True
    group_tokens: int | None = None      # tokens per prefix-sharing group (None: chunk_tokens);
                                         # the unit of work of a Ray pool (negbench.evaluation.cluster)


@dataclass
class _Scored:
    key: str
    req: Request
    inputs: list[int]                    # tokens forwarded (context + continuation[:-1])
    asks: list[tuple[int, int]] = field(default_factory=list)   # (position in inputs, target)
    labels: list[tuple[str, int]] = field(default_factory=list) # next-token labels
    window: tuple[str, int, int] | None = None   # rolling: (request key, window, windows)


class Engine:
    def __init__(self, backend, cache: ResponseCache | None = None,
                 config: EngineConfig | None = None, pool=None):
        self.backend = backend
        self.cache = cache
        self.config = config or EngineConfig()
        self.pool = pool            # scores groups elsewhere (negbench.evaluation.cluster.RayPool), or None
        if getattr(backend, "level", None) == "request":    # in-process request-level backends
            for name in ("batch_size", "max_batch_tokens", "gen_batch_size"):  # (seq2seq) batch
                if hasattr(backend, name) and getattr(self.config, name) is not None:
                    setattr(backend, name, getattr(self.config, name))  # as the engine is told
        self.stats = EngineStats()
        self.last_keys: list[str] = []           # cache keys of the last run's requests, in order
        self._meta: dict[str, dict] = {}         # provenance of answers that arrived in this process

    # -- public --------------------------------------------------------------------------------
    def run(self, requests: list[Request], desc: str = "scoring", bar=None) -> list[Response]:
        """Answers in request order.  ``bar``: a progress bar (tqdm-like) advanced by one per
        request, cached and duplicate ones included (for a caller's whole-run ETA); without it
        the engine shows its own bar over the requests it computes."""
        t0 = time.perf_counter()
        st = EngineStats(requests=len(requests))
        fp = self.backend.fingerprint
        keys = [request_key(r, fp) for r in requests]
        self.last_keys = keys
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

            try:                        # stats of a failed call (retries…) are kept too
                if is_request_level(self.backend):
                    self._answer(todo, done, st)
                else:
                    scored = [(k, r) for k, r in todo if not isinstance(r, GenerationRequest)]
                    gens = [(k, r) for k, r in todo if isinstance(r, GenerationRequest)]
                    if scored:
                        self._score(scored, done, st)
                    if gens:
                        self._generate(gens, done, st)
            finally:
                if own_bar:
                    bar.close()
                self._record(st, t0)
            return [answers[k] for k in keys]
        self._record(st, t0)
        return [answers[k] for k in keys]

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
        self.last_stats = st

    # -- request level -------------------------------------------------------------------------
    def _answer(self, todo: list[tuple[str, Request]], done, st: EngineStats) -> None:
        """Hand unique, uncached requests to a request-level backend, sorted by prompt."""
        be = self.backend
        if any(isinstance(r, RollingLoglikelihoodRequest) for _, r in todo):
            from negbench.errors import ModelError
            raise ModelError(f"the {getattr(be, 'name', 'request-level')} backend cannot score a "
                             "whole text's rolling log-likelihood (lm-eval "
                             "loglikelihood_rolling: perplexity tasks such as wikitext)",
                             where="--model", fix="use a local decoder-only model (an embedded "
                             "name, a transformers folder, a .gguf file) for those tasks")
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
            jobs.sort(key=lambda j: j.tokens)
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
        st.naive_tokens += tr.get("naive_tokens", 0)    # backends that tokenise for themselves

    def provenance(self, keys: list[str]) -> list[dict | None]:
        """Per-answer provenance (served model id, system fingerprint, usage) of request-level
        answers, whether they arrived now or were cached by an earlier run; None where none."""
        missing = [k for k in set(keys) if k not in self._meta]
        found = answer_meta(self.cache, missing) if (self.cache and missing) else {}
        return [self._meta.get(k) or found.get(k) for k in keys]

    # -- tokenisation (lm-eval 0.4 HFLM._encode_pair) --------------------------------------------
    def _prepare(self, items: list[tuple[str, Request]]) -> list[_Scored]:
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
        ctx_enc = be.encode_batch([c for c in ctxs if c])
        whole_enc = be.encode_batch([c + k for c, k in wholes if c])
        empty_cont = be.encode_batch([k for c, k in wholes if not c], add_special_tokens=False)
        i = j = 0
        for (k, r), (c, cont) in zip(ll, wholes):
            if c:
                ce, we = ctx_enc[i], whole_enc[i]
                i += 1
                cont_enc = we[len(ce):]
            else:                                   # lm-eval: the prefix token stands in
                cont_enc = empty_cont[j]
                j += 1
                if cont_enc[:1] == [be.prefix_token_id] and len(cont_enc) > 1:
                    ce, cont_enc = cont_enc[:1], cont_enc[1:]
                else:
                    ce = [be.prefix_token_id]
            if not cont_enc:
                raise ValueError(f"empty continuation after tokenisation: {r.continuation!r}")
            seq = (ce + cont_enc)[-(max_len + 1):]
            inputs = seq[:-1]
            first = len(seq) - len(cont_enc)        # index in seq of the first continuation token
            asks = [(p - 1, seq[p]) for p in range(max(first, 1), len(seq))]
            out.append(_Scored(k, r, inputs, asks))
        nt_enc = be.encode_batch([r.context for _, r in nt if r.context])
        i = 0
        label_ids: dict[tuple[str, str], int] = {}
        for k, r in nt:
            if r.context:
                ce = nt_enc[i][-max_len:]
                i += 1
            else:
                ce = [be.prefix_token_id]
            labels = []
            for lab in r.labels:
                if (r.label_prefix, lab) not in label_ids:
                    ids = be.encode(r.label_prefix + lab, add_special_tokens=False)
                    if not ids:
                        raise ValueError(f"label {lab!r} encodes to no token")
                    label_ids[(r.label_prefix, lab)] = ids[0]
                labels.append((lab, label_ids[(r.label_prefix, lab)]))
            s = _Scored(k, r, ce, [(len(ce) - 1, t) for _, t in labels], labels)
            out.append(s)
        rl = [(k, r) for k, r in items if isinstance(r, RollingLoglikelihoodRequest)]
        for (k, r), toks in zip(rl, be.encode_batch([r.text for _, r in rl])):
            wins = rolling_windows(toks, be.prefix_token_id, max_len)
            if not wins:                            # no token: lm-eval's sum over no windows
                out.append(_Scored(k, r, [], window=(k, 0, 0)))
            for w, (ce, cont) in enumerate(wins):   # one scored item per window, joined later
                seq = ce + cont
                out.append(_Scored(f"{k}#{w}", r, seq[:-1],
                                   [(p - 1, seq[p]) for p in range(len(ce), len(seq))],
                                   window=(k, w, len(wins))))
        return out

    # -- scoring -------------------------------------------------------------------------------
    def _score(self, items, done, st: EngineStats) -> None:
        prepared = self._prepare(items)
        if any(s.window for s in prepared):
            prepared, done = _join_windows(prepared, done)
        prepared.sort(key=lambda s: s.inputs)
        st.naive_tokens += sum(len(s.inputs) for s in prepared)
        groups = cut_groups(prepared, self.config.group_tokens or self.config.chunk_tokens)
        if self.pool is not None:           # the same groups, each on a worker (same results)
            self.pool.score(self, groups, done, st)
            return
        for group in groups:
            self._score_chunk(group, done, st)

    def _score_chunk(self, chunk: list[_Scored], done, st: EngineStats) -> None:
        cfg = self.config
        trie = TokenTrie()
        waiting: dict[int, list[int]] = {}          # node -> requests waiting on it
        pending: list[int] = []
        req_nodes: list[list[tuple[int, int]]] = []
        for i, s in enumerate(chunk):
            path = trie.insert(s.inputs, namespace=0 if cfg.share_prefix else i)
            nodes = []
            for pos, target in s.asks:
                node = path[pos]
                trie.ask(node, target)
                nodes.append((node, target))
            req_nodes.append(nodes)
            distinct = {n for n, _ in nodes}
            pending.append(len(distinct))
            for n in distinct:
                waiting.setdefault(n, []).append(i)
        plan = self._plan(trie)
        st.forwarded_tokens += plan.forwarded_tokens
        st.unique_tokens += plan.unique_tokens
        node_res: dict[int, tuple[dict[int, float], int]] = {}
        prefixes: dict[int, object] = {}

        def row_input(row) -> RowInput:
            qs = []
            for idx, node in enumerate(row.nodes):
                t = trie.targets[node]
                if t:
                    qs.append(Query(idx, sorted(t)))
            return RowInput(row.tokens, row.parents, row.positions, qs)

        def absorb(rows, inputs, results) -> None:
            finished = []
            for row, ri, res in zip(rows, inputs, results):
                st.scored_positions += len(ri.queries)
                for q, qr in zip(ri.queries, res):
                    node = row.nodes[q.index]
                    node_res[node] = (dict(zip(q.targets, qr.logprobs)), qr.argmax)
                    for i in waiting.pop(node, ()):
                        pending[i] -= 1
                        if pending[i] == 0:
                            finished.append(i)
            if finished:
                done([(chunk[i].key, chunk[i].req, self._response(chunk[i], req_nodes[i], node_res))
                      for i in finished])

        for step in plan.steps:
            if isinstance(step, FreeStep):
                prefixes.pop(step.prefix, None)
            elif isinstance(step, ChainStep):
                ri = row_input(step.row)
                res, kv = self.backend.forward_rows([ri], prefixes.get(step.prefix) if step.prefix else None,
                                                    step.prefix_len, keep_kv=True)
                st.model_calls += 1
                st.padded_tokens += len(ri.tokens)
                prefixes[step.new_prefix] = kv
                absorb([step.row], [ri], res)
            elif isinstance(step, RowsStep):
                kv = prefixes.get(step.prefix) if step.prefix else None
                for batch in self._step_batches(step):
                    inputs = [row_input(r) for r in batch]
                    res, _ = self.backend.forward_rows(inputs, kv, step.prefix_len)
                    st.model_calls += 1
                    st.padded_tokens += len(batch) * len(batch[0].nodes)
                    absorb(batch, inputs, res)
        assert all(p == 0 for p in pending), "engine bug: unanswered requests after the plan"

    def _plan(self, trie: TokenTrie):
        """The forward plan of a chunk's trie, at the row length the cost model prefers.

        Why not one length: attention in a packed row costs (row length) × (prefix + row length)
        per layer (a 2048-token row of a 270M model spends as much on attention as on its linear
        layers), while short rows pad more when the subtrees below the shared trunk do not fill
        them.  Each length in :data:`ROW_LENGTHS` is planned (cheap: a walk of the trie) and
        costed as forwarded tokens (padding included) × (1 + :data:`ATTENTION_PAIR_COST` ×
        attended keys per token, plus the backend's cost per forward call); the cheapest wins, the
        longer on a tie.  Measured on KoNUBench 0-shot cloze (Gemma 3 270M, 2 CPU threads, engine
        only, best of two): the request-length rule this replaces packed 2,048-token rows after
        the 220-token shared instruction (182 CPU s); the planner picks 512 (154 s; 256: 181 s,
        1024: 153 s; benchmarks/engine_rows.py)."""
        cfg = self.config
        if cfg.max_row_tokens or not cfg.share_prefix:
            return plan_forward(trie, cfg.max_row_tokens or 2048, pack=cfg.share_prefix)
        best = None
        for length in ROW_LENGTHS:
            plan = plan_forward(trie, length, pack=True)
            cost = self._plan_cost(plan)
            if best is None or cost <= best[0]:
                best = (cost, plan)
            if len(plan.steps) == 1 and isinstance(plan.steps[0], RowsStep) and len(plan.steps[0].rows) == 1:
                break                      # the whole trie fits one row: longer rows change nothing
        return best[1]

    def _plan_cost(self, plan) -> float:
        """Forwarded tokens, padding included, each weighted by the keys it attends to (a row is
        masked, not causal: every token's scores span prefix + row), plus the backend's cost of
        one forward call in tokens (``call_tokens``: a few on a CPU, thousands on a GPU, where
        a small model's call is mostly kernel launches)."""
        call = getattr(self.backend, "call_tokens", 0)
        cost = 0.0
        for step in plan.steps:
            if isinstance(step, ChainStep):
                n = len(step.row.nodes)
                cost += call + n * (1 + ATTENTION_PAIR_COST * (step.prefix_len + n))
            elif isinstance(step, RowsStep):
                for batch in self._step_batches(step):
                    width = len(batch[0].nodes)
                    cost += call + len(batch) * width * (1 + ATTENTION_PAIR_COST * (step.prefix_len + width))
        return cost

    def _step_batches(self, step: RowsStep):
        """A rows step's forward calls: its rows longest first, cut by :func:`_batches` (the
        planner costs exactly the calls the scoring loop makes)."""
        rows = sorted(step.rows, key=lambda r: -len(r.nodes))
        return _batches(rows, self.config.batch_size, self._batch_tokens(), step.prefix_len)

    def _batch_tokens(self) -> int:
        return self.config.max_batch_tokens or getattr(self.backend, "batch_tokens", 32768)

    @staticmethod
    def _response(s: _Scored, nodes: list[tuple[int, int]], node_res) -> Response:
        if isinstance(s.req, NextTokenRequest):
            lps, _ = node_res[nodes[0][0]]
            return NextTokenResponse({lab: lps[t] for lab, t in s.labels},
                                     {lab: t for lab, t in s.labels})
        total, greedy = 0.0, True
        for node, target in nodes:
            lps, am = node_res[node]
            total += lps[target]
            greedy = greedy and am == target
        return LoglikelihoodResponse(total, len(nodes), greedy)

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
                    batch = idx[s:s + cfg.gen_batch_size]
                    outs = be.generate([enc[i][shared:] for i in batch], stop, max_tokens,
                                       prefix=kv, prefix_len=shared)
                    st.model_calls += 1
                    st.forwarded_tokens += sum(len(enc[i]) - shared for i in batch)
                    done([(reqs[i][0], reqs[i][1], GenerationResponse(text, n, why))
                          for i, (text, n, why) in zip(batch, outs)])


def rolling_windows(tokens: list[int], prefix: int, max_len: int
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
        ctx = tokens[end - max_len - 1:end - 1]
        out.append((ctx[:len(ctx) - (n - 1)], tokens[end - n:end]))
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
                out.append((key, r, RollingLoglikelihoodResponse(
                    sum(x.logprob for x in wins), sum(x.n_tokens for x in wins), n)))
        if out:
            done(out)

    empty = [(s.key, s.req, RollingLoglikelihoodResponse(0.0, 0, 0))
             for s in prepared if s.window and not s.window[2]]
    if empty:
        done(empty)
    return [s for s in prepared if not (s.window and not s.window[2])], joined


def cut_groups(prepared: list[_Scored], target: int) -> list[list[_Scored]]:
    """Cut token-sorted requests into groups of about ``target`` tokens, deterministically (a
    function of the requests and ``target`` only, never of workers or timing, so a one-process
    run and a cluster run plan the very same groups).  Each group holds between ``target / 2``
    and ``target`` tokens (a single longer request is a group of its own); within that window
    the cut goes where the common prefix with the previous request is shortest (latest such
    place on ties), so a shared prefix — a few-shot block, a passage — stays in one group and
    its trie."""
    groups: list[list[_Scored]] = []
    n = len(prepared)
    start = 0
    while start < n:
        size, end = 0, start                  # end: first request that no longer fits
        while end < n and (end == start or size + len(prepared[end].inputs) <= target):
            size += len(prepared[end].inputs)
            end += 1
        if end == n:
            groups.append(prepared[start:])
            break
        best, best_lcp, acc = end, None, 0
        for j in range(start + 1, end + 1):   # cut before j: group = start..j-1
            acc += len(prepared[j - 1].inputs)
            if acc * 2 < target and j < end:
                continue
            lcp = _lcp(prepared[j - 1].inputs, prepared[j].inputs)
            if best_lcp is None or lcp <= best_lcp:
                best, best_lcp = j, lcp
        groups.append(prepared[start:best])
        start = best
    return groups


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
            cache.db.execute("CREATE TABLE IF NOT EXISTS answer_meta "
                             "(key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            cache.db.executemany("INSERT OR REPLACE INTO answer_meta VALUES (?, ?)",
                                 [(k, json.dumps(m, sort_keys=True)) for k, m in rows])
    except sqlite3.Error as exc:
        _log.warning("could not save answer provenance in %s: %s", cache.path, exc)


def answer_meta(cache: ResponseCache, keys: list[str]) -> dict[str, dict]:
    """The saved provenance of answered requests (request-level backends)."""
    out: dict[str, dict] = {}
    try:
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
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
    adj = [min(_lcp(enc[a], enc[b]), len(enc[a]) - 1, len(enc[b]) - 1)
           for a, b in zip(order, order[1:])]

    def best(lo: int, hi: int) -> tuple[int, list[tuple[list[int], int]], list[int]]:
        """For sorted prompts lo..hi: tokens saved, clusters (positions, shared), and the
        positions left loose (to share a shorter prefix one level up)."""
        if lo == hi:
            return 0, [], [lo]
        m = min(adj[lo:hi])
        saved, clusters, pool, start = 0, [], [], lo
        for k in range(lo, hi + 1):                  # children: split where the LCP is minimal
            if k == hi or adj[k] == m:
                s_c, cl_c, loose_c = best(start, k)
                n_c = k - start + 1
                if s_c >= (n_c - len(loose_c)) * m:  # keep the child's own clusters
                    saved += s_c
                    clusters += cl_c
                    pool += loose_c
                else:                                # dissolve it into this level's prefix
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


def _batches(rows, batch_size: int, max_batch_tokens: int, prefix_len: int):
    """Length-sorted rows cut into batches bounded by count and by (prefix + row) tokens."""
    batch: list = []
    for r in rows:
        width = len(batch[0].nodes) if batch else len(r.nodes)
        if batch and (len(batch) >= batch_size or (len(batch) + 1) * (prefix_len + width) > max_batch_tokens):
            yield batch
            batch = []
        batch.append(r)
    if batch:
        yield batch


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
    return tqdm(total=total, desc=desc, unit="req", disable=not enabled, dynamic_ncols=True,
                leave=False, smoothing=0.05)

