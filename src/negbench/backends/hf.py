"""Hugging Face transformers backend (CPU or GPU, fp32/bf16; local folder, GGUF, hub id; LoRA).

Scoring runs the decoder only (``model.get_decoder()``), gathers hidden states at the queried
positions and applies the output head there: logits are never computed for unscored positions.
Packed rows get their trie attention mask built on the device from two integer vectors per row
(positions and subtree ends; :mod:`negbench.backends.attention`), as boolean masks for SDPA or
block masks for FlexAttention; models with sliding-window layers (Gemma 3) get one mask per
layer type with the window applied; rows that do not branch run plain causal attention.
Which attention implementation: ``attn_implementation="auto"`` (the default) takes SDPA;
``NEGBENCH_ATTENTION=flex_attention`` (or ``attn_implementation=``) takes FlexAttention (see
:func:`attention_choice` and docs/engine.md for why).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from negbench.backends import heap
from negbench.backends.attention import IMPLEMENTATIONS, flex_masks, layer_windows, sdpa_masks
from negbench.backends.fit import check_fits, load_oom
from negbench.core.oom import free_device_memory, is_oom
from negbench.core.backend import PackedBatch, QueryResult, RowInput, packed_batch
from negbench.backends.tokenizing import HFTokenization, tokenizer_fingerprint
from negbench.backends.tokenizing import as_list as _as_list
from negbench.backends.tokenizing import quiet_transformers as _quiet_transformers
from negbench.errors import ModelError, NegbenchError
from negbench.backends.sources import (
    ModelSource,
    cache_root,
    converted_gguf_folder,
    resolve,
    source_fingerprint,
)

log = logging.getLogger("negbench")

NUMERICS_VERSION = "3"  # bump when a change alters scores, so cached answers are not reused


class HFBackend(HFTokenization):
    """A causal LM from transformers, scored through packed rows with a trie attention mask."""

    name = "hf"
    _auto_model = "AutoModelForCausalLM"

    def __init__(
        self,
        model: str,
        *,
        dtype: str = "auto",
        device: str = "auto",
        adapter: str | None = None,
        add_bos: str | bool = "auto",
        max_length: int | None = None,
        attn_implementation: str = "auto",
        revision: str | None = None,
        threads: int | None = None,
        quantize: str | None = None,
    ):
        self._init_runtime(device, dtype, threads)
        self.quantize = check_quantize(quantize, self.device)
        self.source = resolve(model)
        attn = attention_choice(attn_implementation, self.device)
        adapter_fp, adapter_train = self._load_model(adapter, attn, revision)
        self.attention = getattr(self.model.config, "_attn_implementation", attn)
        if self.attention == "flex_attention":
            _contiguous_flex(self.model)
        self._fwd_seconds = 0.0
        self._events: list = []
        cfg = self.model.config
        self.model_type = getattr(cfg, "model_type", "")
        # lm-eval 0.4.13 HFLM: the tokenizer's own default (BOS for Llama-3, Gemma, Mistral; none
        # for GPT-2-style tokenizers such as SmolLM2's), but never a second BOS when the text
        # already starts with one (chat templates write it).
        self.add_bos = self._tokenizer_adds_bos() if add_bos == "auto" else bool(add_bos)
        model_max = getattr(cfg, "max_position_embeddings", None) or 2048
        self.max_length = min(max_length or model_max, model_max)
        self.layer_types = list(getattr(cfg, "layer_types", None) or [])
        self.sliding_window = getattr(cfg, "sliding_window", None)
        self.windows = layer_windows(self.layer_types, self.sliding_window)
        self.softcap = getattr(cfg, "final_logit_softcapping", None)
        self.n_layers = cfg.get_text_config().num_hidden_layers
        self.decoder = self.model.get_decoder()
        self.head = self.model.get_output_embeddings()
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        fp = {
            "backend": "hf",
            "numerics": NUMERICS_VERSION,
            "weights": source_fingerprint(self.source, getattr(cfg, "_commit_hash", None)),
            "adapter": adapter_fp,
            "dtype": dtype,
            "add_bos": self.add_bos,
            "max_length": self.max_length,
            "tokenizer": tokenizer_fingerprint(self.tokenizer),
        }
        if self.quantize:  # 8-bit answers are not 16-bit answers (own cache keys)
            fp["quantize"] = self.quantize
        self.fingerprint_info = fp
        self.fingerprint = fingerprint_of(fp)
        if adapter_train:  # results.json names the adapter and its recipe
            self.fingerprint_info = {**fp, "adapter_train": adapter_train}
            trained_with = adapter_train.get("tokenizer")
            if trained_with and trained_with != fp["tokenizer"]:
                log.warning(
                    "warning: the adapter was trained with a tokenizer that tokenises "
                    "differently from this one (%s, here %s): another transformers "
                    "version or tokenizer files; its scores may not match the training",
                    trained_with,
                    fp["tokenizer"],
                )

    def _init_runtime(self, device: str, dtype: str, threads: int | None) -> None:
        """Threads, device and dtype, checked before any weights are read."""
        _quiet_transformers()
        import torch

        self.torch = torch
        if threads:
            torch.set_num_threads(threads)
        self.device = (
            ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        )
        check_device(self.device)
        if dtype == "auto":
            dtype = "bfloat16" if self.device.startswith("cuda") else "float32"
        if dtype not in ("float32", "bfloat16", "float16"):
            raise ModelError(
                f"unknown dtype '{dtype}'",
                where="--dtype",
                fix="use float32, bfloat16, float16 or auto",
            )
        self.dtype_name = dtype
        self.dtype = getattr(torch, dtype)

    # -- loading -------------------------------------------------------------------------------
    def _load(self, src: ModelSource, attn: str, revision: str | None):
        import transformers
        from transformers import AutoTokenizer

        auto = getattr(transformers, self._auto_model)  # Seq2SeqBackend: AutoModelForSeq2SeqLM
        kw: dict[str, Any] = {"dtype": self.dtype, "attn_implementation": attn}
        on_gpu = self.device.startswith("cuda")
        if on_gpu:  # read straight onto the GPU: no host copy of every weight first
            kw["device_map"] = {"": self.device}
        if getattr(self, "quantize", None) == "8bit":  # bitsandbytes LLM.int8()
            from transformers import BitsAndBytesConfig

            kw["quantization_config"] = BitsAndBytesConfig(load_in_8bit=True)
        try:
            if src.gguf_file:
                folder = self._converted_gguf(src)
                model = auto.from_pretrained(folder, **kw)
                tok = AutoTokenizer.from_pretrained(folder)
            else:
                where = src.folder or src.hub_id
                model = auto.from_pretrained(where, revision=revision, **kw)
                tok = AutoTokenizer.from_pretrained(where, revision=revision)
        except NegbenchError:
            raise
        except OSError as exc:
            hint = (
                "the Hugging Face hub is unreachable from this machine: download the model "
                "elsewhere and pass its folder"
                if src.hub_id
                else "check the model files"
            )
            raise ModelError(
                f"could not load model '{src.spec}': {exc}".splitlines()[0],
                where="--model",
                fix=hint,
            ) from exc
        except ModuleNotFoundError:
            raise  # a missing extra: the CLI names it
        except Exception as exc:  # truncated / corrupt weight files, bad config.json
            if is_oom(exc) and on_gpu:
                free_device_memory()
                raise load_oom(src.spec, self.device, exc) from exc
            if attn == "flex_attention":  # a model class without FlexAttention: SDPA then
                log.info("FlexAttention unavailable for this model (%s); using SDPA", exc)
                return self._load(src, "sdpa", revision)
            if src.hub_id:
                raise
            raise ModelError(
                f"could not load model '{src.spec}': the model files look damaged "
                f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})",
                where=f"--model {src.folder}",
                fix="download the model again (a copy may have been cut short)",
            ) from exc
        if not on_gpu:  # on a GPU it was loaded in place
            model.to(self.device)
        return model, tok

    def _converted_gguf(self, src: ModelSource) -> str:
        """Dequantise a GGUF once and keep a safetensors copy: later loads take a second, not 30."""
        target = converted_gguf_folder(src)
        if (target / "config.json").is_file() and (target / ".complete").is_file():
            return str(target)
        assert src.folder is not None and src.gguf_file is not None  # a GGUF source
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from negbench.errors import require

        require("accelerate")  # transformers reads GGUF only with it installed
        require("gguf")
        check_gguf(Path(src.folder) / src.gguf_file)
        log.info("converting %s to safetensors (once) in %s", src.gguf_file, target)
        loaded = AutoModelForCausalLM.from_pretrained(
            src.folder, gguf_file=src.gguf_file, dtype=self.torch.float32
        )
        # A GGUF-loaded model is flagged as quantised and refuses save_pretrained; its weights are
        # already dequantised, so copy them into a plain model of the same config.
        config = loaded.config
        for attr in ("quantization_config", "_pre_quantization_dtype"):
            if hasattr(config, attr):
                delattr(config, attr)
        model = AutoModelForCausalLM.from_config(config, dtype=self.torch.float32)
        model.load_state_dict(loaded.state_dict())
        del loaded
        tok = AutoTokenizer.from_pretrained(src.folder, gguf_file=src.gguf_file)
        tmp = target.with_name(target.name + f".tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            model.save_pretrained(tmp)
            tok.save_pretrained(tmp)
            (tmp / ".complete").write_text(src.gguf_file)
            shutil.rmtree(target, ignore_errors=True)
            os.replace(tmp, target)
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise ModelError(
                f"cannot write the converted copy of {src.gguf_file} under "
                f"{cache_root()} ({exc.strerror})",
                fix="set NEGBENCH_CACHE to a writable folder",
            ) from exc
        return str(target)

    def _load_model(self, adapter: str | None, attn_implementation: str, revision: str | None):
        """Weights, tokenizer and LoRA adapter (its recorded base checked before any weights
        are read), in eval mode.  Returns (adapter fingerprint, adapter provenance)."""
        adapter_train = check_adapter_base(adapter, self.source) if adapter else None
        # a model too large for the GPU stops here, before minutes of reading weights
        quantize = getattr(self, "quantize", None)
        self.weight_bytes = check_fits(
            self.source, self.device, self.dtype_name, quantize, revision
        )
        self.model, self.tokenizer = self._load(self.source, attn_implementation, revision)
        self.adapter = adapter
        adapter_fp = None
        if adapter:
            self.model, adapter_fp = _attach_adapter(self.model, adapter)
        self.model.eval()
        drop_build_vocab(self.tokenizer)  # ~220 MB of Python objects (Gemma 3)
        heap.trim()  # and the tokenizer's parse left ~290 MB freed
        return adapter_fp, adapter_train

    @property
    def weights_folder(self) -> str:
        """A transformers folder holding these weights (a GGUF's converted copy), e.g. for
        loading the same model in another tool."""
        if self.source.gguf_file:
            return self._converted_gguf(self.source)
        location = self.source.folder or self.source.hub_id
        assert location is not None  # resolve() sets one of them
        return location

    # -- tokenisation --------------------------------------------------------------------------
    def apply_chat_template(self, messages: list[dict], add_generation_prompt: bool = True) -> str:
        if not self.has_chat_template:
            raise ModelError(
                f"model '{self.source.spec}' has no chat template",
                where="--chat",
                fix="drop --chat for base models",
            )
        return super().apply_chat_template(messages, add_generation_prompt)

    @property
    def batch_tokens(self) -> int:
        """Tokens per forward call when the engine is not told: on a CPU a matrix product runs
        at full speed from ~2k rows, and each token of a batch holds its activations (Gemma 3
        270M: ~55 KB), so larger batches only add memory; a GPU needs large batches."""
        return 2048 if self.device == "cpu" else 32768

    @property
    def call_tokens(self) -> int:
        """What one forward call costs beyond its tokens, in tokens' worth of work, for the
        engine's row planner.  On a CPU every call streams all weights from memory once (1.07 GB
        for Gemma 3 270M in float32, most of it the 262k-row output head, whatever the number of
        scored positions): ~0.2 s, the work of ~60 tokens (measured: 512-token rows in 13 calls
        beat 256-token rows in 29 calls, 154 against 181 CPU s, though the latter attend to fewer
        keys).  On a GPU a token is well under a microsecond and a call's kernel launches are
        milliseconds."""
        return 64 if self.device == "cpu" else 8192

    # -- scoring -------------------------------------------------------------------------------
    def attention_keys(self, prefix_len: int, width: int, branched: bool) -> float:
        """Keys each token of a row costs in attention, for the engine's planner.  Unbranched
        rows run causal kernels (half the row on average).  Masked rows: on a CPU, and with SDPA
        on a GPU, every (query, key) pair is computed; on a GPU SDPA with a mask also leaves the
        flash kernel for the memory-efficient one (the probe in ``benchmarks/gpu/flex_probe.py``:
        a masked forward 1.5-1.6× a causal one for the 135M/270M shapes), counted as twice the
        pairs; FlexAttention skips blocks no query attends (counted as causal plus a block)."""
        if not branched:
            return prefix_len + (width + 1) / 2
        if self.device.startswith("cuda"):
            if self.attention == "flex_attention":
                return prefix_len + (width + 1) / 2 + 64
            return 2 * (prefix_len + width)
        return prefix_len + width

    def stage(self, batch: PackedBatch) -> "_Staged":
        """A batch's arrays on the device (on a GPU: through pinned memory, copies that do not
        block); the engine calls this on its prefetch thread while the previous call runs.  For
        FlexAttention an unbranched batch gets its subtree ends here too (each token's row end),
        made on the host: one kind of tensor for every call (a compiled kernel guards on it) and
        no copy from pageable memory in the forward call."""
        torch = self.torch
        cuda = self.device.startswith("cuda")

        def dev(x):
            t = torch.from_numpy(np.ascontiguousarray(x))
            return t.pin_memory().to(self.device, non_blocking=True) if cuda else t

        ids, pos, end = batch.ids, batch.pos, batch.end
        if self.attention == "flex_attention":
            ids, pos, end = flex_shape(ids, pos, end, batch.lengths)
        return _Staged(
            batch,
            dev(ids),
            dev(pos),
            None if end is None else dev(end),
            dev(batch.q_row),
            dev(batch.q_col),
            dev(batch.t_query),
            dev(batch.t_token),
        )

    def forward_batch(self, batch, prefix: Any = None, prefix_len: int = 0, keep_kv: bool = False):
        """Run one packed batch (a :class:`PackedBatch` or its :meth:`stage`\\ d form) and score
        its targets.  Masks are built on the device from positions and subtree ends
        (:mod:`negbench.backends.attention`); a batch whose rows do not branch runs plain causal
        attention with no mask.  Nothing waits for the device: the returned pending result is
        read back once, by the caller, when it needs it."""
        torch = self.torch
        from transformers import DynamicCache

        st = batch if isinstance(batch, _Staged) else self.stage(batch)
        B = st.ids.shape[0]
        self._clock_start()
        with torch.inference_mode():
            # FlexAttention takes its block mask from the same rule for causal rows too (one
            # kernel; transformers' own causal block mask fails to compile on a CPU): stage()
            # made their ends
            end = st.end
            if end is None:  # causal; positions prefix_len + index (default)
                mask, position_ids = None, None
            elif self.attention == "flex_attention":
                mask = flex_masks(torch, st.pos, end, prefix_len, self.windows)
                position_ids = st.pos
            else:
                mask = sdpa_masks(torch, st.pos, end, prefix_len, self.windows)
                position_ids = st.pos
            cache = None
            if prefix is not None:
                cache = DynamicCache(
                    ddp_cache_data=[
                        (k.expand(B, -1, -1, -1), v.expand(B, -1, -1, -1)) for k, v in prefix
                    ]
                )
            elif keep_kv:
                cache = DynamicCache()
            else:  # keeps nothing; see _through_cache
                cache = _through_cache(self.n_layers)
            out = self.decoder(
                input_ids=st.ids,
                attention_mask=mask,
                position_ids=position_ids,
                past_key_values=cache,
                use_cache=True,
            )
            hidden = out.last_hidden_state
            if len(st.batch.q_row):
                lp, am = head_scores(
                    torch,
                    hidden[st.q_row, st.q_col],
                    self.head,
                    st.batch.t_query,
                    st.t_query,
                    st.t_token,
                    self.softcap,
                    gpu=self.device.startswith("cuda"),
                )
            else:
                lp = hidden.new_zeros(0, dtype=torch.float32)
                am = hidden.new_zeros(0, dtype=torch.long)
            new_kv = None
            if keep_kv:
                assert cache is not None  # made above whenever keep_kv
                # FlexAttention's padding (flex_shape) left out
                n = prefix_len + st.batch.ids.shape[1]
                new_kv = [
                    (layer.keys[:1, :, :n].clone(), layer.values[:1, :, :n].clone())
                    for layer in cache.layers
                ]
            pending = _Pending(lp, am)
        self._clock_stop()
        return pending, new_kv

    def forward_rows(
        self, rows: list[RowInput], prefix: Any = None, prefix_len: int = 0, keep_kv: bool = False
    ):
        """:meth:`forward_batch` for a list of :class:`RowInput` (results as
        :class:`QueryResult` lists per row)."""
        batch, per_row = packed_batch(rows)
        if batch.end is None:  # unbranched rows must sit at the default positions
            col = np.arange(batch.ids.shape[1])
            real = col[None, :] < batch.lengths[:, None]
            if not (batch.pos == prefix_len + col[None, :])[real].all():
                batch.end = np.tile(col, (len(rows), 1))
                batch.end[real] = np.broadcast_to(batch.lengths[:, None] - 1, real.shape)[real]
        pending, kv = self.forward_batch(batch, prefix, prefix_len, keep_kv)
        lp, am = pending.result()
        lp = lp.tolist()
        firsts = np.searchsorted(batch.t_query, np.arange(len(am) + 1)).tolist()
        results = [
            QueryResult(lp[firsts[j] : firsts[j + 1]], int(a)) for j, a in enumerate(am.tolist())
        ]
        return [[results[j] for j in mine] for mine in per_row], kv

    def _clock_start(self) -> None:
        if self.device.startswith("cuda"):
            ev = self.torch.cuda.Event(enable_timing=True)
            ev.record(self.torch.cuda.current_stream(self.device))
            self._events.append([ev, None])
        else:
            self._t_start = time.perf_counter()

    def _clock_stop(self) -> None:
        if self.device.startswith("cuda"):
            ev = self.torch.cuda.Event(enable_timing=True)
            ev.record(self.torch.cuda.current_stream(self.device))
            self._events[-1][1] = ev
        else:
            self._fwd_seconds += time.perf_counter() - self._t_start

    def forward_seconds(self) -> float:
        """Time spent inside forward calls so far: CUDA events' device time on a GPU (waits for
        this backend's device, which need not be the current one), wall time on a CPU."""
        if self._events:
            self.torch.cuda.synchronize(self.device)
            self._fwd_seconds += (
                sum(a.elapsed_time(b) for a, b in self._events if b is not None) / 1e3
            )
            self._events.clear()
        return self._fwd_seconds

    # -- generation ----------------------------------------------------------------------------
    def prefix_kv(self, tokens: list[int]):
        """KV cache of a shared prompt prefix (batch 1), to continue several generations from."""
        row = RowInput(
            list(tokens), [i - 1 for i in range(len(tokens))], list(range(len(tokens))), []
        )
        _, kv = self.forward_rows([row], keep_kv=True)
        return kv

    def generate(
        self,
        contexts: list[list[int]],
        stop: Sequence[str],
        max_tokens: int,
        prefix: Any = None,
        prefix_len: int = 0,
    ):
        """Greedy decoding of a batch, optionally continuing a shared prefix's KV cache.

        ``contexts`` are the token ids after the prefix (at least one each).  Our own loop rather
        than ``model.generate``: the same trie-style masks as scoring (position-based sliding
        windows, padding that never shifts positions) and a prefix computed once for the batch.
        Returns (text cut at the first stop string, tokens generated, why it stopped).
        """
        torch = self.torch
        tok = self.tokenizer
        B, P = len(contexts), prefix_len
        L = max(len(c) for c in contexts)
        ids = np.full((B, L), tok.pad_token_id, dtype=np.int64)
        valid = np.zeros((B, P + L + max_tokens), dtype=bool)
        valid[:, :P] = True
        kpos = np.zeros((B, P + L + max_tokens), dtype=np.int64)
        kpos[:, :P] = np.arange(P)
        for b, c in enumerate(contexts):  # left padding: last prompt token at L - 1
            n = len(c)
            ids[b, L - n :] = c
            valid[b, P + L - n : P + L] = True
            kpos[b, P + L - n : P + L] = P + np.arange(n)
        pos = kpos[:, P : P + L].copy()
        allowed = valid[:, None, : P + L] & (kpos[:, None, : P + L] <= pos[:, :, None])
        allowed[:, np.arange(L), P + np.arange(L)] = True  # padding attends to itself
        cache = _buffer_cache(self.model.config, B, P + L + max_tokens, prefix)
        eos = set(_as_list(self.model.generation_config.eos_token_id) + _as_list(tok.eos_token_id))
        stops = [x for x in stop if x]
        new: list[list[int]] = [[] for _ in range(B)]
        why: list[str | None] = [None] * B
        x, qpos, span = ids, pos, P + L
        with torch.inference_mode():
            for t in range(max_tokens):
                out = self.decoder(
                    input_ids=torch.from_numpy(x).to(self.device),
                    attention_mask=self._masks(allowed, qpos, kpos[:, :span]),
                    position_ids=torch.from_numpy(qpos).to(self.device),
                    past_key_values=cache,
                    use_cache=True,
                )
                logits = self.head(out.last_hidden_state[:, -1]).float()
                nxt = logits.argmax(dim=-1).tolist()
                for b in range(B):
                    if why[b] is not None:
                        continue
                    if nxt[b] in eos:
                        why[b] = "eos"
                        continue
                    new[b].append(nxt[b])
                    if stops:
                        text = self.decode(new[b])
                        hit = [s for s in stops if s in text]
                        if hit:
                            why[b] = min(hit, key=text.index)
                if all(w is not None for w in why) or t == max_tokens - 1:
                    break
                # next step: one token per row at the next position
                valid[:, span] = True
                kpos[:, span] = kpos[:, span - 1] + 1 if t else pos[:, -1] + 1
                qpos = kpos[:, span : span + 1].copy()
                x = np.array([[nxt[b]] for b in range(B)], dtype=np.int64)
                span += 1
                allowed = valid[:, None, :span] & (kpos[:, None, :span] <= qpos[:, :, None])
        results = []
        for b in range(B):
            text = self.decode(new[b])
            stopped = why[b]
            for s in stops:  # lm-eval: s = s.split(term)[0] per stop
                if s in text:
                    text = text.split(s)[0]
                    stopped = stopped or s
            results.append((text, len(new[b]), stopped))
        return results

    def _masks(self, allowed: np.ndarray, qpos: np.ndarray, kpos: np.ndarray):
        """Additive 4-D mask(s) from a boolean [B, Q, K] pattern; one per layer type."""
        torch = self.torch
        kinds = set(self.layer_types) if self.layer_types else {"full_attention"}
        masks = {}
        for kind in kinds:
            a = allowed
            if kind == "sliding_attention" and self.sliding_window:
                a = allowed & ((qpos[:, :, None] - kpos[:, None, :]) < self.sliding_window)
            m = torch.zeros(a.shape[0], 1, a.shape[1], a.shape[2], dtype=self.dtype)
            m.masked_fill_(
                ~torch.from_numpy(np.ascontiguousarray(a))[:, None], torch.finfo(self.dtype).min
            )
            masks[kind] = m.to(self.device)
        return masks if len(kinds) > 1 or "full_attention" not in kinds else masks["full_attention"]


def drop_build_vocab(tok) -> None:
    """Free the Python copies of the vocabulary and merges a transformers 5 tokenizer was built
    from (``_vocab``, ``_merges``).

    Why: the Rust tokenizer holds its own copy and encoding and decoding never read these again,
    but they stay alive for the tokenizer's life: ~220 MB of Python objects for Gemma 3's 262k
    words and 515k merges.  Only a few model classes read them later (to save a slow vocabulary
    file); ``None`` makes such a use fail loudly rather than write an empty vocabulary."""
    if getattr(tok, "_tokenizer", None) is None:  # not a Rust-backed tokenizer
        return
    for attr in ("_vocab", "_merges"):
        if isinstance(getattr(tok, attr, None), (dict, list)):
            setattr(tok, attr, None)


def head_logprobs(
    torch,
    hidden,
    head,
    targets: list[list[int]],
    softcap: float | None,
    budget: int = 1 << 24,
    tile: int = 1 << 20,
) -> list[QueryResult]:
    """:func:`head_scores` with targets as one list per row of ``hidden`` (results as
    :class:`QueryResult`\\ s)."""
    t_query = np.asarray([i for i, t in enumerate(targets) for _ in t], dtype=np.int64)
    t_token = np.asarray([x for t in targets for x in t], dtype=np.int64)
    lp, am = head_scores(
        torch,
        hidden,
        head,
        t_query,
        torch.from_numpy(t_query).to(hidden.device),
        torch.from_numpy(t_token).to(hidden.device),
        softcap,
        budget=budget,
        tile=tile,
    )
    lp, am = lp.tolist(), am.tolist()
    out, k = [], 0
    for i, t in enumerate(targets):
        out.append(QueryResult(lp[k : k + len(t)], am[i]))
        k += len(t)
    return out


#: Logits per output-head tile on a GPU (1 GiB of float32): a 262k vocabulary in one matrix
#: product for every 1,024 scored positions.
GPU_HEAD_BUDGET = 1 << 28


def head_scores(
    torch,
    hidden,
    head,
    t_query_np: np.ndarray,
    t_query,
    t_token,
    softcap: float | None,
    gpu: bool = False,
    budget: int = 1 << 24,
    tile: int = 1 << 20,
):
    """Log-probabilities of the targets (``t_token[i]`` at row ``t_query[i]`` of ``hidden``,
    ``t_query`` ascending; ``t_query_np`` its host copy) and each row's argmax, with the output
    head applied in (rows × vocabulary) tiles and the log-softmax normaliser accumulated across
    vocabulary tiles (an online log-sum-exp, in float32).  Returns device tensors (float32
    [T], int64 [rows]); nothing here waits for the device.

    Why tiles: on a 262k vocabulary a plain ``log_softmax(head(h))`` needs two vocabulary-sized
    float tensors per scored position (1 MB each); tiles keep memory small whatever the number
    of positions.  On a CPU the tiles are all rows × a narrow slice of the vocabulary (≥ 1,024
    words), sized so the logits (4 MB) stay in the CPU's cache between the matrix product and the
    max/exp/sum that read them back: 27 GFLOP per CPU second against 21 for 1,024 × 16,384 tiles
    (1,500 positions, 2 cores).  It is also more exact: torch's CPU ``log_softmax`` over Gemma's
    262k logits is off by up to 1.2e-4 per token against float64 (each SIMD lane sums
    sequentially); these tiles by 1.5e-6.  On a GPU (``gpu``) a tile is up to
    :data:`GPU_HEAD_BUDGET` logits, the whole vocabulary for a block of rows: one bf16 matrix
    product per block, with float32 accumulation and output where torch offers it
    (``torch.mm(..., out_dtype=float32)``), the log-sum-exp in float32.  A head that is not a
    plain linear layer (e.g. wrapped by a LoRA adapter) is applied to row tiles instead.
    Targets are picked from each tile by index arithmetic (no ``nonzero``: no device sync)."""
    import torch.nn.functional as F

    n = hidden.shape[0]
    weight = getattr(head, "weight", None)
    plain = type(head) is torch.nn.Linear and weight is not None
    V = weight.shape[0] if weight is not None else head(hidden[:1]).shape[-1]
    if plain and not gpu:
        cols = min(V, max(1024, 1 << (max(1, tile // max(1, n)).bit_length() - 1)))
        rows = max(1, min(n, budget // cols))
    else:
        cols = V
        rows = max(1, min(n, (GPU_HEAD_BUDGET if gpu else budget) // max(1, V)))
    fp32_out = (
        gpu and plain and weight is not None and weight.dtype in (torch.bfloat16, torch.float16)
    )
    lp_out = torch.empty(len(t_query_np), dtype=torch.float32, device=hidden.device)
    best = torch.empty(n, dtype=torch.long, device=hidden.device)
    bounds = np.searchsorted(t_query_np, np.arange(0, n + rows, rows)).tolist()
    for i, r0 in enumerate(range(0, n, rows)):
        h = hidden[r0 : r0 + rows]
        ta, tb = bounds[i], bounds[i + 1]
        tq = t_query[ta:tb] - r0
        tt = t_token[ta:tb]
        picked = torch.zeros(tb - ta, dtype=torch.float32, device=hidden.device)
        m = torch.full((h.shape[0],), float("-inf"), device=hidden.device)
        s = torch.zeros(h.shape[0], device=hidden.device)
        am = torch.zeros(h.shape[0], dtype=torch.long, device=hidden.device)
        for c0 in range(0, V, cols):
            if plain and weight is not None:
                w = weight[c0 : c0 + cols]
                bias = head.bias[c0 : c0 + cols] if head.bias is not None else None
                lg = _mm_float(torch, h, w) if fp32_out else F.linear(h, w, bias)
                if fp32_out and bias is not None:
                    lg = lg + bias.float()
            else:
                lg = head(h)
            lg = lg.float()
            if softcap:
                lg.div_(softcap).tanh_().mul_(softcap)
            width = lg.shape[1]
            inside = (tt >= c0) & (tt < c0 + width)
            picked = torch.where(inside, lg[tq, (tt - c0).clamp(0, width - 1)], picked)
            cm, ca = lg.max(dim=-1)
            better = cm > m  # strict: the first maximum wins, as argmax
            am = torch.where(better, ca + c0, am)
            new_m = torch.maximum(m, cm)
            s = s * torch.exp(m - new_m) + lg.sub_(new_m[:, None]).exp_().sum(dim=-1)
            m = new_m
        lse = m + torch.log(s)
        lp_out[ta:tb] = picked - lse[tq]
        best[r0 : r0 + h.shape[0]] = am
    return lp_out, best


_MM_OUT_DTYPE: list[bool] = []


def _mm_float(torch, h, w):
    """``h @ w.T`` in the weights' 16-bit type with float32 accumulation and output where torch
    has ``mm(..., out_dtype=)`` (CUDA, torch ≥ 2.8), else the 16-bit product."""
    if not _MM_OUT_DTYPE or _MM_OUT_DTYPE[0]:
        try:
            out = torch.mm(h, w.t(), out_dtype=torch.float32)
            if not _MM_OUT_DTYPE:
                _MM_OUT_DTYPE.append(True)
            return out
        except (TypeError, RuntimeError, NotImplementedError):
            _MM_OUT_DTYPE[:] = [False]
    return torch.mm(h, w.t()).float()


#: FlexAttention's block (tokens): its kernels work in blocks of 128 queries × 128 keys.
FLEX_BLOCK = 128


def flex_shape(ids: np.ndarray, pos: np.ndarray, end: np.ndarray | None, lengths: np.ndarray):
    """A batch's arrays as FlexAttention takes them: subtree ends for unbranched rows too (each
    token's row end), and at least 2 rows of a multiple of :data:`FLEX_BLOCK` tokens, at least
    two blocks.  Why: torch.compile specialises every size that is 1 (one row, one block, one
    query), so a run mixing prefix calls (one row) and small calls with full batches compiled a
    kernel per combination, until torch's limit of 8 sent FlexAttention back to its unfused
    path (issue 32, item 2).  Padded rows and tokens attend themselves only; nothing is scored
    there.  The kernel itself rounds rows up to whole blocks, so the padding is nearly free in
    attention; the linear layers see at most a block more per row."""
    B, L = ids.shape
    if end is None:
        col = np.arange(L, dtype=np.int64)
        last = (lengths - 1)[:, None]
        end = np.where(col[None, :] <= last, last, col[None, :])
    B2 = max(B, 2)
    L2 = max(2 * FLEX_BLOCK, -(-L // FLEX_BLOCK) * FLEX_BLOCK)
    if (B2, L2) == (B, L):
        return ids, pos, end
    grow = ((0, B2 - B), (0, L2 - L))
    full = np.broadcast_to(np.arange(L2, dtype=np.int64), (B2, L2)).copy()
    full[:B, :L] = end
    return np.pad(ids, grow), np.pad(pos, grow), full


class _Staged:
    """A :class:`PackedBatch` with its arrays on the device (``HFBackend.stage``)."""

    def __init__(self, batch: PackedBatch, ids, pos, end, q_row, q_col, t_query, t_token):
        self.batch = batch
        self.ids, self.pos, self.end = ids, pos, end
        self.q_row, self.q_col, self.t_query, self.t_token = q_row, q_col, t_query, t_token


class _Pending:
    """A forward call's results on the device, read back on request.  On a GPU the copy to the
    host is queued with the call (into pinned memory, ``non_blocking``) and an event recorded
    after it: :meth:`result` waits for that event alone, so reading call c - 1 while call c runs
    returns when c - 1's copy is done, not when the device has finished everything queued (a
    plain ``.cpu()`` synchronises the whole stream).  Where pinned memory cannot be had, the
    copy is a plain one, made in :meth:`result`."""

    def __init__(self, lp, am):
        self.lp, self.am = lp, am
        self._host = None
        self._event = None
        if lp.device.type == "cuda":
            import torch

            both = torch.cat([lp.double(), am.double()])
            try:
                host = torch.empty(both.shape, dtype=both.dtype, pin_memory=True)
            except RuntimeError:  # no pinned memory here: read back in result()
                return
            host.copy_(both, non_blocking=True)
            self._event = torch.cuda.Event()
            self._event.record(torch.cuda.current_stream(lp.device))
            self._host = host

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        n = self.lp.shape[0]
        if self._event is not None:
            self._event.synchronize()
            both = self._host.numpy()
            return both[:n].copy(), both[n:].astype(np.int64)
        if self.lp.device.type == "cpu":
            return self.lp.numpy().astype(np.float64), self.am.numpy()
        import torch

        both = torch.cat([self.lp.double(), self.am.double()]).cpu().numpy()
        return both[:n], both[n:].astype(np.int64)


#: The FlexAttention of :func:`_contiguous_flex`, registered with transformers under this name.
FLEX_CONTIGUOUS = "negbench_flex_attention"


def _contiguous_flex(model) -> None:
    """Hand transformers' FlexAttention contiguous queries, keys and values.  Their layouts
    otherwise vary with the call (keys from a prefix cache are concatenated, hence contiguous;
    without one they are a transposed projection; Gemma's rotary embedding makes queries
    contiguous for some shapes), and FlexAttention's compiled kernel guards on strides: each
    layout was a new compilation, towards torch's limit of 8 (issue 32, item 2).  Registered
    through transformers' attention interface, the function otherwise transformers' own."""
    from transformers import AttentionInterface
    from transformers.integrations.flex_attention import flex_attention_forward
    from transformers.masking_utils import AttentionMaskInterface, flex_attention_mask

    def forward(module, query, key, value, attention_mask, **kwargs):
        return flex_attention_forward(
            module,
            query.contiguous(),
            key.contiguous(),
            value.contiguous(),
            attention_mask,
            **kwargs,
        )

    AttentionInterface.register(FLEX_CONTIGUOUS, forward)
    AttentionMaskInterface.register(FLEX_CONTIGUOUS, flex_attention_mask)
    model.set_attn_implementation(FLEX_CONTIGUOUS)


def _through_cache(n_layers: int):
    """A KV "cache" that keeps nothing, for forward calls without a prefix.  Why pass one at all:
    without a cache transformers (5.17, 5.24) looks for packed sequences in the position ids,
    ``(packed_sequence_mask[:, -1] == 0).all()`` in an ``if``, a device sync per mask kind per
    call."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    class ThroughLayer(DynamicLayer):
        def update(self, key_states, value_states, *args, **kwargs):
            return key_states, value_states

        def get_seq_length(self, *args, **kwargs) -> int:
            return 0

    cache = DynamicCache()
    cache.layers = [ThroughLayer() for _ in range(n_layers)]
    cache.layer_class_to_replicate = None
    return cache


def _buffer_cache(config, batch: int, capacity: int, prefix=None):
    """A KV cache whose layers write into tensors allocated once for the whole generation.

    ``DynamicCache`` concatenates at every step, copying the whole cache (a few-shot prefix of
    thousands of tokens × the batch) once per generated token; here each step writes one slot.
    """
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    class BufferLayer(DynamicLayer):
        def __init__(self, k0=None, v0=None):
            super().__init__()
            self.n = 0
            if k0 is not None:
                self._alloc(k0, v0)
                self.keys[:, :, : k0.shape[2]] = k0
                self.values[:, :, : v0.shape[2]] = v0
                self.n = k0.shape[2]

        def _alloc(self, k, v):
            self.dtype, self.device = k.dtype, k.device
            self.keys = k.new_empty((batch, k.shape[1], capacity, k.shape[3]))
            self.values = v.new_empty((batch, v.shape[1], capacity, v.shape[3]))
            self.is_initialized = True

        def update(self, key_states, value_states, *args, **kwargs):
            if not self.is_initialized:
                self._alloc(key_states, value_states)
            m = key_states.shape[2]
            self.keys[:, :, self.n : self.n + m] = key_states
            self.values[:, :, self.n : self.n + m] = value_states
            self.n += m
            return self.keys[:, :, : self.n], self.values[:, :, : self.n]

        def get_seq_length(self) -> int:
            return self.n

    cache = DynamicCache()
    n_layers = config.get_text_config().num_hidden_layers
    cache.layers = (
        [BufferLayer(k, v) for k, v in prefix]
        if prefix is not None
        else [BufferLayer() for _ in range(n_layers)]
    )
    cache.layer_class_to_replicate = None
    return cache


QUANTIZE = ("8bit",)


def attention_choice(requested: str, device: str) -> str:
    """The attention implementation to load.  ``auto`` is SDPA (boolean masks built on the
    device) on every device, unless ``NEGBENCH_ATTENTION`` names another.  Why not FlexAttention
    on a GPU, where its block masks skip what no query attends: its steady-state gain measured
    7-14 % (``benchmarks/gpu/flex_probe.py``), but it is compiled per process and again per new
    shape until torch switches to dynamic shapes (tens of seconds, against the tens of seconds a
    benchmark row scores for), and on a CPU Inductor fails to build its kernel for some shapes.
    ``benchmarks/gpu/attn_sbs.py`` measures both in the engine, warm-up included."""
    if requested != "auto":
        return requested
    env = os.environ.get("NEGBENCH_ATTENTION")
    if env:
        if env not in IMPLEMENTATIONS:
            raise ModelError(
                f"NEGBENCH_ATTENTION={env} is not an attention implementation here",
                where="NEGBENCH_ATTENTION",
                fix="use " + " or ".join(IMPLEMENTATIONS),
            )
        return env
    return "sdpa"


def check_quantize(quantize: str | None, device: str) -> str | None:
    """``--quantize 8bit`` (This is not a Dataset Table 9: LLM.int8() via bitsandbytes) needs
    bitsandbytes and a CUDA GPU; checked before any weights are read or anything is written."""
    if not quantize or quantize == "none":
        return None
    if quantize not in QUANTIZE:
        raise ModelError(
            f"unknown quantization '{quantize}'",
            where="--quantize",
            fix="use 8bit, or none for the weights' own precision",
        )
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if not device.startswith("cuda"):
        why = (
            "this torch sees no CUDA GPU"
            if not torch.cuda.is_available()
            else f"the device is '{device}'"
        )
        raise ModelError(
            f"--quantize {quantize} needs a CUDA GPU ({why})",
            where="--quantize",
            fix="run on a machine with a GPU (--device cuda), or drop --quantize",
        )
    import importlib.util

    if importlib.util.find_spec("bitsandbytes") is None:
        raise ModelError(
            f"--quantize {quantize} needs the bitsandbytes package, which is not installed",
            where="--quantize",
            fix="pip install bitsandbytes (on a machine with a CUDA GPU)",
        )
    return quantize


def fingerprint_of(fields: dict) -> str:
    """The backend fingerprint (the response cache's model key) of its identifying fields."""
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:32]


def check_device(device: str) -> None:
    """A device this torch can use, checked before any weights are read."""
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        raise ModelError(
            f"unknown device '{device}'", where="--device", fix="use cpu, cuda, cuda:N or auto"
        ) from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ModelError(
                f"--device {device} asked, but this torch ({torch.__version__}) sees no CUDA GPU",
                where="--device",
                fix="use --device cpu (or auto), or install a CUDA build of torch "
                "on a machine with a GPU",
            )
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ModelError(
                f"--device {device}: only {torch.cuda.device_count()} GPU(s) here",
                where="--device",
                fix="use cuda:0 … cuda:N-1",
            )
    elif dev.type not in ("cpu", "mps"):
        raise ModelError(
            f"unsupported device '{device}'", where="--device", fix="use cpu, cuda, cuda:N or auto"
        )


def check_gguf(path: Path) -> None:
    """A GGUF file that is whole: the header parses and every tensor lies inside the file (a
    download cut short otherwise fails deep inside the reader)."""
    try:
        from gguf import GGUFReader

        reader = GGUFReader(str(path))
        size = path.stat().st_size
        for t in reader.tensors:
            if int(t.data_offset) + int(t.n_bytes) > size:
                raise ValueError(f"tensor {t.name} ends past the end of the file")
    except ModuleNotFoundError:
        raise
    except Exception as exc:
        raise ModelError(
            f"the GGUF file {path} is damaged or incomplete "
            f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})",
            where="--model",
            fix="download the file again (it may have been cut "
            "short), or reinstall the package that ships it",
        ) from exc


def check_adapter_base(adapter: str, source: ModelSource) -> dict | None:
    """For an adapter ``negbench train`` made (its ``negbench_train.json``): the base model it
    was trained on must be ``source`` — a clear error otherwise, before any weights are read.
    Returns what ``results.json`` records about the adapter (None for other adapters)."""
    path = Path(adapter).expanduser()
    meta = path / "negbench_train.json"
    if not meta.is_file():
        return None
    try:
        info = json.loads(meta.read_text(encoding="utf-8"))
        base = info.get("base_model") or {}
        recipe = info.get("recipe") or {}
    except (OSError, ValueError, AttributeError):
        raise ModelError(
            f"{meta} is damaged",
            where="--adapter",
            fix="train the adapter again (negbench train), or delete the file to "
            "use the adapter without its provenance",
        ) from None
    want = base.get("fingerprint")
    have = source_fingerprint(source)
    if want and want != have and not _converted_copy_of(source, want):
        raise ModelError(
            f"the adapter {path} was trained on the base model '{base.get('spec')}' "
            f"({want[:24]}…), not on '{source.spec}' ({have[:24]}…)",
            where="--adapter",
            fix=f"evaluate it with --model {base.get('spec')} (the same weights), or "
            "train an adapter for this model",
        )
    data = info.get("data") or {}
    return {
        "path": str(path.resolve()),
        "recipe": recipe.get("name"),
        "paper": recipe.get("paper"),
        "base_model": base.get("spec"),
        "base_fingerprint": want,
        "data": data.get("spec"),
        "data_fingerprint": data.get("fingerprint"),
        "tokenizer": (data.get("tokenized") or {}).get("tokenizer"),
        "steps": info.get("steps"),
        "trained": info.get("finished"),
    }


def _converted_copy_of(source: ModelSource, gguf_fp: str) -> bool:
    """Whether ``source`` is negbench's own converted copy of the GGUF with fingerprint
    ``gguf_fp`` (the same weights, dequantised once by :meth:`HFBackend._converted_gguf`)."""
    if not (gguf_fp.startswith("gguf:") and source.folder and not source.gguf_file):
        return False
    folder = Path(source.folder)
    return (
        (folder / ".complete").is_file()
        and folder.name.endswith("-" + gguf_fp.split(":", 1)[1][:20])
        and folder.resolve().parent == (cache_root() / "models").resolve()
    )


def _attach_adapter(model, adapter: str):
    try:
        from peft import PeftModel
    except ImportError as exc:
        raise ModelError(
            "LoRA adapters need peft", where="--adapter", fix="pip install 'negbench[lora]'"
        ) from exc
    path = Path(adapter).expanduser()
    try:
        model = PeftModel.from_pretrained(model, str(path) if path.exists() else adapter)
    except (OSError, ValueError) as exc:
        raise ModelError(
            f"could not load LoRA adapter '{adapter}': {exc}".splitlines()[0],
            where="--adapter",
            fix="give a folder with adapter_config.json",
        ) from exc
    fp = (
        source_fingerprint(ModelSource(adapter, folder=str(path)))
        if path.is_dir()
        else f"hub:{adapter}"
    )
    return model.merge_and_unload(), fp
