"""``negbench train``: LoRA on peft + transformers ``Trainer``, resumable, with provenance, then
the base model and the adapter evaluated on the recipe's test protocol and compared.

Layout of ``--out DIR``::

    DIR/adapter/              the PEFT adapter (adapter_config.json, adapter_model.safetensors)
                              + negbench_train.json (effective recipe, data and base-model
                              fingerprints, seeds, package versions, git commit, loss history)
    DIR/.adapter.partial/     while training: checkpoints/checkpoint-N (optimizer, scheduler and
                              RNG state); a killed training resumes from the last one
    DIR/eval/base/            negbench run of the base model (zero-shot, the recipe's protocol)
    DIR/eval/adapter/         the same with --adapter DIR/adapter
    DIR/compare.md|.json      negbench compare of the two (flips, McNemar, paired bootstrap)

Everything the user gave is checked before a model is loaded or anything is written; the adapter
folder appears only when training has finished, and a finished one is never touched without
``overwrite`` (the same configuration again reuses it and only evaluates).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from negbench import __version__
from negbench.errors import ModelError, OptionError, OutputError, require
from negbench.files import atomic_write_text, git_commit, package_versions, write_json
from negbench.evaluation.store import staging_path
from negbench.backends.tokenizing import tokenizer_fingerprint
from negbench.train.data import TrainingData, load_training_data, tokenize
from negbench.scoring.recipes import Recipe, resolve_recipe
from negbench.train.memory import enable_checkpointing, plan_batches

SCHEMA = "negbench.train/1"
TRAIN_JSON = "negbench_train.json"
PARTIAL_JSON = "negbench_train.partial.json"
EXTRA_PACKAGES = ("accelerate", "bitsandbytes", "safetensors")


@dataclass
class Layout:
    """Where one training's files go."""

    out: Path
    created: bool = False  # this call created ``out``

    @property
    def adapter(self) -> Path:
        return self.out / "adapter"

    @property
    def staging(self) -> Path:
        return staging_path(self.adapter)

    @property
    def checkpoints(self) -> Path:
        return self.staging / "checkpoints"

    def eval_run(self, which: str) -> Path:
        return self.out / "eval" / which


def _log_default(s: str) -> None:
    print(s, file=sys.stderr)


# -- checks before anything is loaded -----------------------------------------------------------------
def read_train_json(adapter: str | Path) -> dict | None:
    """``negbench_train.json`` of an adapter folder (None when absent)."""
    p = Path(adapter) / TRAIN_JSON
    if not p.is_file():
        return None
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"damaged": True}


def _check_out(layout: Layout, overwrite: bool) -> str:
    """``new``, ``finished`` (a negbench adapter is there) or ``replace`` (overwrite)."""
    from negbench.files import check_writable_folder

    final = layout.adapter
    check_writable_folder(layout.out, "--out")
    if final.exists() and not final.is_dir():
        raise OutputError(
            f"{final} is a file, not an adapter folder", where="--out", fix="choose another --out"
        )
    if final.is_dir() and any(final.iterdir()):
        info = read_train_json(final)
        if info is None or info.get("damaged"):
            if not overwrite:
                raise OutputError(
                    f"{final} is not empty and holds no finished negbench adapter",
                    where="--out",
                    fix="choose another --out, or pass --overwrite to replace it",
                )
            return "replace"
        return "finished"
    return "new"


def _identity_diff(a: Mapping, b: Mapping, prefix: str = "") -> list[str]:
    out = []
    for k in sorted(set(a) | set(b)):
        x, y = a.get(k), b.get(k)
        if isinstance(x, Mapping) and isinstance(y, Mapping):
            out += _identity_diff(x, y, f"{prefix}{k}.")
        elif x != y:
            out.append(prefix + k)
    return out


def eval_task_spec(recipe: Recipe, data: TrainingData | None = None) -> str:
    """The recipe's evaluation task; a notadataset task inherits the training data's release and
    block split, and ``eval_limit`` becomes ``sample=`` (whole blocks, so coherence holds)."""
    from negbench.scoring.task import parse_spec

    base, opts = parse_spec(recipe.eval_task)
    if base == "notadataset":
        for k, v in (data.eval_options if data else {}).items():
            opts.setdefault(k, v)
        if recipe.eval_limit and "sample" not in opts:
            opts["sample"] = str(recipe.eval_limit)
    return base + ("[" + ",".join(f"{k}={v}" for k, v in opts.items()) + "]" if opts else "")


def eval_run(
    recipe: Recipe,
    model: str,
    task: str,
    output: Path,
    *,
    chat: bool,
    adapter: Path | None = None,
    device: str = "auto",
    cache: str | None = None,
    overwrite: bool = False,
    quiet: bool = False,
    threads: int | None = None,
    report_to: Sequence[str] = (),
):
    """One side of the evaluation — the recipe's protocol (zero-shot, its modes, its limit) —
    through :func:`negbench.evaluation.session.evaluate` into the run folder ``output``, printed as
    ``negbench run`` prints it.  A task that picks its prompt by itself (notadataset follows the
    tokenizer's chat template) is told the recipe's choice, so training and evaluation prompts
    stay the same.  ``cache``: a file, ``"none"`` (no cache) or None (negbench's)."""
    from negbench.evaluation.results import run_report
    from negbench.evaluation.session import evaluate

    task = task_with_chat(task, chat)
    limit = recipe.eval_limit if recipe.eval_limit and not task.startswith("notadataset") else None
    res = evaluate(
        model,
        [task],
        shots=[0],
        output=str(output),
        device=device,
        modes=list(recipe.eval_modes) or None,
        limit=limit,
        chat=chat,
        adapter=str(adapter) if adapter is not None else None,
        cache=None if cache == "none" else (cache or True),
        overwrite=overwrite,
        progress=not quiet,
        threads=threads or None,
        report_to=report_to,
    )
    print(run_report(res))
    return res


def task_with_chat(task: str, chat: bool) -> str:
    """``task`` with ``chat=on|off`` added when the task chooses its prompt itself (an explicit
    choice in the spec is kept)."""
    from negbench.tasks import get_task
    from negbench.scoring.task import parse_spec

    name, opts = parse_spec(task)
    if "chat" in opts or getattr(get_task(task), "chat", None) is None:
        return task
    opts["chat"] = "on" if chat else "off"
    return name + "[" + ",".join(f"{k}={v}" for k, v in opts.items()) + "]"


def _check_eval(recipe: Recipe, model: str, task: str, chat: bool, device: str) -> None:
    """The evaluation's task, modes and data exist (before training, so a typo does not surface
    after an hour of it)."""
    from negbench.errors import TaskError
    from negbench.evaluation.runner import RunConfig, prepare

    try:
        prepare(
            RunConfig(
                model=model,
                tasks=[task],
                modes=list(recipe.eval_modes) or None,
                shots=[0],
                limit=None if task.startswith("notadataset") else recipe.eval_limit,
                chat=chat,
                backend={"device": device},
            )
        )
    except TaskError as exc:
        where = {"--tasks": "eval_task", "--modes": "eval_modes"}.get(exc.where or "", exc.where)
        raise TaskError(
            exc.what,
            where=f"{where} = {task if where == 'eval_task' else ','.join(recipe.eval_modes)} "
            "(the evaluation after training; --no-eval skips it)",
            fix=exc.fix,
        ) from None


# -- model loading -----------------------------------------------------------------------------------
def weights_folder(src) -> str | None:
    """The transformers folder of a source, when it exists without converting anything."""
    if src.gguf_file:
        from negbench.backends.sources import converted_gguf_folder

        target = converted_gguf_folder(src)
        return str(target) if (target / ".complete").is_file() else None
    return src.folder or src.hub_id


def load_tokenizer(src):
    """The model's tokenizer, read without loading weights (a GGUF's from the file itself)."""
    from negbench.backends.tokenizing import quiet_transformers

    quiet_transformers()
    from transformers import AutoTokenizer

    try:
        where = weights_folder(src)
        if where is None:
            # The model loader converts a GGUF once and reads the tokenizer back from that copy;
            # read it the same way here (GGUF -> save -> reload), so training tokenises exactly as
            # the evaluation will: some transformers versions tokenise the two differently.
            import tempfile

            tok = AutoTokenizer.from_pretrained(src.folder, gguf_file=src.gguf_file)
            with tempfile.TemporaryDirectory(prefix="negbench-tok-") as tmp:
                tok.save_pretrained(tmp)
                tok = AutoTokenizer.from_pretrained(tmp)
        else:
            tok = AutoTokenizer.from_pretrained(where)
    except OSError as exc:
        hint = (
            "the Hugging Face hub is unreachable from this machine: download the model "
            "elsewhere and pass its folder"
            if src.hub_id
            else "check the model files"
        )
        raise ModelError(
            f"could not load the tokenizer of '{src.spec}': {exc}".splitlines()[0],
            where="--model",
            fix=hint,
        ) from exc
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "right"
    return tok


def precision(recipe: Recipe, device: str) -> tuple[bool, list[str]]:
    """Whether to train in bf16 (recipe asks and the device supports it), with notes."""
    import torch

    notes: list[str] = []
    if not recipe.bf16:
        return False, notes
    if device.startswith("cuda") and torch.cuda.is_available() and torch.cuda.is_bf16_supported():
        return True, notes
    notes.append(
        f"bf16 asked by the recipe, but {device} does not support it for training: "
        "training in fp32 (numbers may differ slightly from a bf16 run)"
    )
    return False, notes


def load_model(
    model: str,
    src,
    device: str,
    bf16: bool,
    quantization: int | None,
    threads: int | None = None,
    log: Callable[[str], None] = _log_default,
):
    """The base model for training (negbench's loader: embedded GGUF, folder, hub id), and notes.
    ``quantization`` 8 / 4 loads a bitsandbytes base where bitsandbytes and a GPU are present."""
    import importlib.util

    notes = []
    if quantization:
        if device.startswith("cuda") and importlib.util.find_spec("bitsandbytes") is not None:
            import torch
            from transformers import AutoModelForCausalLM, BitsAndBytesConfig
            from peft import prepare_model_for_kbit_training
            from negbench.backends.hf import HFBackend

            folder = weights_folder(src)
            if folder is None:  # a GGUF not yet converted: convert it once
                b = object.__new__(HFBackend)
                b._init_runtime("cpu", "float32", threads)
                folder = b._converted_gguf(src)
            qc = (
                BitsAndBytesConfig(load_in_8bit=True)
                if quantization == 8
                else BitsAndBytesConfig(
                    load_in_4bit=True,
                    bnb_4bit_compute_dtype=torch.bfloat16 if bf16 else torch.float32,
                )
            )
            idx = torch.device(device).index or 0
            m = AutoModelForCausalLM.from_pretrained(
                folder,
                quantization_config=qc,
                device_map={"": idx},
                dtype=torch.bfloat16 if bf16 else torch.float32,
            )
            m = prepare_model_for_kbit_training(m, use_gradient_checkpointing=False)
            notes.append(f"{quantization}-bit base (bitsandbytes), LoRA weights in full precision")
            return m, notes
        why = "no GPU" if not device.startswith("cuda") else "bitsandbytes is not installed"
        notes.append(
            f"the recipe's {quantization}-bit base needs bitsandbytes and a GPU ({why}): "
            "the base is trained in full precision instead (same LoRA, more memory)"
        )
    from negbench.backends.hf import HFBackend

    backend = HFBackend(
        model, dtype="bfloat16" if bf16 else "float32", device=device, threads=threads
    )
    m = backend.model
    m.config.use_cache = False
    return m, notes


def _lora(model, recipe: Recipe):
    from peft import LoraConfig, get_peft_model

    targets: Any = "all-linear" if recipe.lora_target == ("all",) else list(recipe.lora_target)
    cfg = LoraConfig(
        r=recipe.lora_rank,
        lora_alpha=recipe.lora_alpha,
        lora_dropout=recipe.lora_dropout,
        target_modules=targets,
        bias="none",
        task_type="CAUSAL_LM",
    )
    try:
        return get_peft_model(model, cfg)
    except ValueError as exc:
        import torch

        names = sorted(
            {
                n.rsplit(".", 1)[-1]
                for n, m in model.named_modules()
                if isinstance(m, torch.nn.Linear)
            }
        )
        raise OptionError(
            f"lora_target: {str(exc).splitlines()[0]}",
            where="lora_target",
            fix="all, or some of this model's linear layers: " + ", ".join(names),
        ) from None


# -- the Trainer ---------------------------------------------------------------------------------------
class Collator:
    """transformers' ``DataCollatorForSeq2Seq`` (right padding, labels padded with -100), plus
    the per-token loss weights of ``prompt_loss_weight`` padded with 0."""

    def __init__(self, tokenizer):
        from transformers import DataCollatorForSeq2Seq

        self.base = DataCollatorForSeq2Seq(
            tokenizer, padding=True, label_pad_token_id=-100, return_tensors="pt"
        )

    def __call__(self, features):
        if "loss_weight" not in features[0]:
            return self.base(features)
        import torch

        weights = [f["loss_weight"] for f in features]
        batch = self.base([{k: v for k, v in f.items() if k != "loss_weight"} for f in features])
        n = batch["input_ids"].shape[1]
        batch["loss_weight"] = torch.tensor([w + [0.0] * (n - len(w)) for w in weights])
        return batch


def make_trainer(
    model,
    args,
    examples,
    tokenizer,
    weighted: bool = False,
    callbacks: Sequence = (),
    lengths: Sequence[int] | None = None,
):
    """A ``transformers.Trainer`` whose loss is the whole optimiser step's: each micro-batch adds
    ``sum(w · CE) / sum(w over the step)`` (:mod:`negbench.train.memory`), so micro-batches with
    accumulation give the gradients of the recipe's full batch; the loss is computed in chunks
    over the loss tokens only.  ``w``: 1 on the response, the prompt's share with
    ``prompt_loss_weight`` (the official This-is-not-a-Dataset loss; ``weighted`` is kept for
    callers, the collator carries the weights whenever the examples have them).  With
    ``lengths`` (one per example, or a bound of it), each step's examples are read longest
    first (:mod:`negbench.train.sampler`): less padding, the same gradients."""
    import time as _time

    from transformers import Trainer, TrainerCallback
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    from negbench.train.memory import step_loss, step_weight

    class StepLossTrainer(Trainer):
        _tp_last: tuple[float, int] | None = None

        def _get_train_sampler(self, train_dataset=None):
            if lengths is None or self.args.world_size > 1:
                return super()._get_train_sampler(train_dataset)
            from negbench.train.sampler import StepSortedSampler

            step = self.args.train_batch_size * self.args.gradient_accumulation_steps
            seed = self.args.data_seed if self.args.data_seed is not None else self.args.seed
            return StepSortedSampler(lengths, step, seed)

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            loss = step_loss(model, dict(inputs), num_items_in_batch)
            return (loss, None) if return_outputs else loss

        def _get_num_items_in_batch(self, batch_samples, device):
            w = step_weight(batch_samples) if batch_samples else None
            return w.to(device) if w is not None else None

        def log(self, logs, *a, **kw):  # throughput next to the loss, for every tracker
            if "loss" in logs:
                now, seen = _time.perf_counter(), int(self.state.num_input_tokens_seen or 0)
                if self._tp_last is not None and now > self._tp_last[0]:
                    logs["tokens_per_second"] = round(
                        (seen - self._tp_last[1]) / (now - self._tp_last[0]), 2
                    )
                self._tp_last = (now, seen)
            return super().log(logs, *a, **kw)

        def _inner_training_loop(self, *a, **kw):
            self._tp_last = (_time.perf_counter(), int(self.state.num_input_tokens_seen or 0))
            return super()._inner_training_loop(*a, **kw)

    class LogLastStep(TrainerCallback):
        """Log the last step too, so the loss history always ends at the final step (with
        ``logging_steps`` larger than the run, it would otherwise be empty)."""

        def on_step_end(self, args, state, control, **kw):
            if state.global_step >= state.max_steps:
                control.should_log = True
            return control

    trainer = StepLossTrainer(
        model=model,
        args=args,
        train_dataset=examples,
        data_collator=Collator(tokenizer),
        callbacks=[LogLastStep(), *callbacks],
    )
    # our loss is already the step's share (normalised by the step's weight): the Trainer must
    # neither divide it by the accumulation steps nor pass the count to the model
    trainer.model_accepts_loss_kwargs = True
    if hasattr(trainer, "loss_is_scaled_for_ga"):
        trainer.loss_is_scaled_for_ga = True
    for cb in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(cb)
    return trainer


def progress_callback(enabled: bool = True):
    """A tqdm bar: step / total, loss, learning rate, ETA."""
    from transformers import TrainerCallback

    class Progress(TrainerCallback):
        bar = None

        def on_train_begin(self, args, state, control, **kw):
            from tqdm.auto import tqdm

            self.bar = tqdm(
                total=state.max_steps,
                initial=state.global_step,
                desc="training",
                unit="step",
                disable=not enabled,
                dynamic_ncols=True,
                smoothing=0.1,
            )

        def on_step_end(self, args, state, control, **kw):
            if self.bar is not None:
                self.bar.update(state.global_step - self.bar.n)

        def on_log(self, args, state, control, logs=None, **kw):
            if self.bar is not None and logs and "loss" in logs:
                self.bar.set_postfix(
                    loss=f"{logs['loss']:.4f}", lr=f"{logs.get('learning_rate', float('nan')):.2e}"
                )

        def on_train_end(self, args, state, control, **kw):
            if self.bar is not None:
                self.bar.close()

    return Progress()


def training_arguments(
    recipe: Recipe, output_dir: Path, device: str, bf16: bool, plan=None, **extra
):
    """``TrainingArguments`` of a recipe (LLaMA-Factory's keys map one to one); with a
    :class:`~negbench.train.memory.BatchPlan`, its micro-batches and accumulation (the same
    effective batch)."""
    from transformers import TrainingArguments

    kw = dict(
        output_dir=str(output_dir),
        per_device_train_batch_size=plan.micro_batch_size
        if plan
        else recipe.per_device_train_batch_size,
        gradient_accumulation_steps=plan.gradient_accumulation_steps
        if plan
        else recipe.gradient_accumulation_steps,
        learning_rate=recipe.learning_rate,
        num_train_epochs=recipe.num_train_epochs,
        max_steps=recipe.max_steps or -1,
        lr_scheduler_type=recipe.lr_scheduler_type,
        warmup_steps=recipe.warmup_ratio,  # < 1: a ratio of the steps (warmup_ratio)
        weight_decay=recipe.weight_decay,
        max_grad_norm=recipe.max_grad_norm,
        optim=recipe.optim,
        bf16=bf16,
        seed=recipe.seed,
        logging_steps=recipe.logging_steps,
        save_strategy="steps",
        save_steps=recipe.save_steps,
        save_total_limit=recipe.save_total_limit,
        save_only_model=False,
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
        remove_unused_columns=False,
        include_num_input_tokens_seen="non_padding",
        use_cpu=device == "cpu",
    )
    kw.update(extra)
    return TrainingArguments(**kw)


def _device(device: str) -> str:
    import torch
    from negbench.backends.hf import check_device

    d = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
    check_device(d)
    return d


# -- the public entry point ------------------------------------------------------------------------------
def train(
    recipe: str | Recipe,
    model: str,
    out: str | Path,
    *,
    data: str | None = None,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
    config: str | Path | None = None,
    eval: bool = False,
    eval_limit: int | None = None,
    max_steps: int | None = None,
    overwrite: bool = False,
    restart: bool = False,
    device: str = "auto",
    threads: int | None = None,
    cache: str | None = None,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
    callbacks: Sequence = (),
    report_to: Sequence[str] = (),
) -> Path:
    """Train a LoRA adapter of ``model`` with ``recipe`` into ``out``/adapter and return that
    folder; with ``eval``, evaluate the base model and the adapter and compare them.

    ``recipe``: a recipe name or :class:`Recipe`; ``config`` a YAML file of settings;
    ``overrides`` a mapping or ``key=value`` strings; ``data`` replaces the recipe's training
    data.  ``restart`` discards an unfinished training instead of resuming it.  ``cache``: the
    evaluation's response cache file (``"none"``: no cache).  ``callbacks``: extra
    ``TrainerCallback``\\ s.  ``report_to``: experiment trackers (:mod:`negbench.evaluation.tracking`) that
    get the training's logs and the evaluation runs.
    """
    import warnings
    import torch

    threads0 = torch.get_num_threads()
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*")
            return _train(
                recipe,
                model,
                out,
                data=data,
                overrides=overrides,
                config=config,
                eval=eval,
                eval_limit=eval_limit,
                max_steps=max_steps,
                overwrite=overwrite,
                restart=restart,
                device=device,
                threads=threads,
                cache=cache,
                progress=progress,
                log=log or _log_default,
                callbacks=callbacks,
                report_to=list(report_to),
            )
    finally:
        torch.set_num_threads(threads0)  # --threads applies to this training only


def _train(
    recipe,
    model,
    out,
    *,
    data,
    overrides,
    config,
    eval,
    eval_limit,
    max_steps,
    overwrite,
    restart,
    device,
    threads,
    cache,
    progress,
    log,
    callbacks,
    report_to,
) -> Path:
    r = resolve_recipe(
        recipe,
        config=config,
        overrides=overrides,
        data=data,
        max_steps=max_steps,
        eval_limit=eval_limit,
    )
    require("peft")
    from negbench.evaluation.tracking import check_trackers, trainer_settings

    check_trackers(report_to)  # installed, logged in: before anything loads
    layout = Layout(Path(out).expanduser())
    from negbench.backends.sources import resolve, source_fingerprint

    src = resolve(model)
    from negbench.backends.registry import is_encoder_decoder

    if is_encoder_decoder(model):
        raise ModelError(
            f"'{model}' is an encoder-decoder model; negbench train fine-tunes "
            "decoder-only (causal) language models",
            where="--model",
            fix="train it with LLaMA-Factory or transformers' Seq2SeqTrainer, then "
            "evaluate with negbench run --adapter",
        )
    dev = _device(device)
    state = _check_out(layout, overwrite)
    td = load_training_data(r.data, r.data_split, r.max_samples)
    tok = load_tokenizer(src)
    t_tok = time.perf_counter()
    tdata = tokenize(td, r, tok)
    log(
        f"training data: {len(tdata.examples):,} examples; every prompt fits "
        f"cutoff_len={r.cutoff_len} ({tdata.n_checked:,} tokenised to check, the longest "
        f"{tdata.max_len} tokens, {time.perf_counter() - t_tok:.1f} s); the rest is tokenised "
        "as the training reads it"
    )
    td_summary = td.summary()
    td.records, td.where = [], []  # the examples keep their texts compactly: free the records
    chat_eval = r.eval_chat == "yes" or (r.eval_chat == "auto" and tdata.template == "chat")
    task = eval_task_spec(r, td)
    if eval:
        _check_eval(r, model, task, chat_eval, dev)
    # base model and adapter on the recipe's protocol: after a reused, a resumed or a new adapter
    evaluate = partial(
        evaluate_adapter,
        r,
        model,
        layout,
        task,
        chat_eval,
        device=dev,
        cache=cache,
        quiet=not progress,
        threads=threads,
        log=log,
        report_to=report_to,
    )
    base_fp = source_fingerprint(src)
    identity = {
        "recipe": r.identity(),
        "base_model": base_fp,
        "data": td.fingerprint,
        "tokenized": tdata.fingerprint,
    }
    if state == "finished":
        old = read_train_json(layout.adapter) or {}
        if old.get("identity") == identity:
            log(
                f"{layout.adapter} already holds this training (same recipe, base model and "
                "data): reusing it"
            )
            if eval:
                evaluate(overwrite=overwrite)
            return layout.adapter
        if not overwrite:
            diff = _identity_diff(old.get("identity") or {}, identity)
            raise OutputError(
                f"{layout.adapter} holds a finished adapter of a different training"
                + (f" (differs in: {', '.join(diff[:8])})" if diff else ""),
                where="--out",
                fix="choose another --out, or pass --overwrite to replace it",
            )
    # -- from here on, files are written ---------------------------------------------------------
    done = read_train_json(layout.staging)
    if (
        done
        and done.get("identity") == identity
        and (layout.staging / "adapter_model.safetensors").is_file()
    ):
        log(f"finishing the interrupted save of a finished training in {layout.staging}")
        _finish(layout)  # killed between saving and moving into place
        if eval:
            evaluate(overwrite=True)
        return layout.adapter
    layout.created = not layout.out.exists()
    resume = _prepare_staging(layout, identity, restart, log)
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    bf16, notes = precision(r, dev)
    import torch
    from transformers import set_seed

    log(f"loading {model} …")
    try:
        base, more = load_model(model, src, dev, bf16, r.quantization, threads, log)
        notes += more
        plan = plan_batches(r, base.config, tdata.max_len, dev, 2 if bf16 else 4)
        notes.append(plan.note(r.per_device_train_batch_size, r.gradient_accumulation_steps))
        if plan.gradient_checkpointing:
            enable_checkpointing(base)
        for n in notes:
            log("note: " + n)
        set_seed(r.seed)
        peft_model = _lora(base, r)
        tracked, tracker_callbacks = trainer_settings(
            report_to, layout.out, f"negbench-train-{r.name}-{layout.out.name}"
        )
        args = training_arguments(r, layout.checkpoints, dev, bf16, plan, **tracked)
        trainer = make_trainer(
            peft_model,
            args,
            tdata.examples,
            tok,
            r.prompt_loss_weight > 0,
            [progress_callback(progress), *tracker_callbacks, *callbacks],
            lengths=tdata.length_hint,
        )
        n_train = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
        n_all = sum(p.numel() for p in peft_model.parameters())
        log(
            f"training {r.name}: {len(tdata.examples)} examples ({tdata.template} template), "
            f"{n_train:,} trainable of {n_all:,} parameters, effective batch {r.effective_batch}, "
            f"{'max_steps ' + str(r.max_steps) if r.max_steps else f'{r.num_train_epochs:g} epochs'}"
            + (f"; resuming from {resume.name}" if resume else "")
        )
        seen0 = 0
        if resume is not None:
            seen0 = _tokens_seen(resume)
        t0 = time.perf_counter()
        result = trainer.train(resume_from_checkpoint=str(resume) if resume else None)
        wall = time.perf_counter() - t0
    except BaseException as exc:
        _abandon(layout, exc, log)
        raise
    st = trainer.state
    history = [
        {k: e[k] for k in ("step", "epoch", "loss", "learning_rate", "grad_norm") if k in e}
        for e in st.log_history
        if "loss" in e
    ]
    runtime = float(result.metrics.get("train_runtime", wall))
    seen = int(getattr(st, "num_input_tokens_seen", 0) or 0)
    source = src.folder or src.hub_id
    if src.gguf_file:
        assert src.folder is not None  # resolve() sets the GGUF's folder
        source = str(Path(src.folder) / src.gguf_file)
    info = {
        "schema": SCHEMA,
        "negbench": __version__,
        "started": started,
        "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "recipe": {"name": r.name, "paper": r.paper, "variant": r.variant, **r.to_dict()},
        "identity": identity,
        "base_model": {
            "spec": model,
            "fingerprint": base_fp,
            "source": source,
        },
        "data": {
            **td_summary,
            "tokenized": {**tdata.summary(), "tokenizer": tokenizer_fingerprint(tok)},
        },
        "seeds": {"seed": r.seed, "data_seed": r.seed},
        "device": dev,
        "precision": "bf16" if bf16 else "fp32",
        "notes": notes,
        "batches": {
            "micro_batch_size": plan.micro_batch_size,
            "gradient_accumulation_steps": plan.gradient_accumulation_steps,
            "gradient_checkpointing": plan.gradient_checkpointing,
            "memory_budget_bytes": plan.budget_bytes,
        },
        "trainable_parameters": n_train,
        "parameters": n_all,
        "steps": st.global_step,
        "max_steps": st.max_steps,
        "epochs": st.epoch,
        "train_loss": result.training_loss,
        "resumed_from": resume.name if resume else None,
        "throughput": {
            "tokens_seen": seen,
            "tokens_this_session": seen - seen0,
            "train_runtime_s": runtime,
            "tokens_per_s": (seen - seen0) / runtime if runtime else None,
        },
        "loss_history": history,
        "packages": {**package_versions(), **_extra_versions()},
        "git": git_commit(),
        "torch_threads": torch.get_num_threads(),
    }
    peft_model.save_pretrained(str(layout.staging))
    write_json(layout.staging / TRAIN_JSON, info)  # written last: the training is saved
    _finish(layout)
    last = history[-1]["loss"] if history else float("nan")
    log(
        f"adapter: {layout.adapter}  ({st.global_step} steps, final logged loss {last:.4f}, "
        f"{info['throughput']['tokens_per_s'] or 0:.0f} tokens/s)"
    )
    del trainer, peft_model, base
    if eval:  # runs of an earlier adapter in DIR/eval are stale: replace them
        evaluate(overwrite=True)
    return layout.adapter


def _extra_versions() -> dict[str, str | None]:
    from importlib import metadata

    out: dict[str, str | None] = {}
    for p in EXTRA_PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = None
    return out


def _tokens_seen(checkpoint: Path) -> int:
    try:
        return int(
            json.loads((checkpoint / "trainer_state.json").read_text()).get("num_input_tokens_seen")
            or 0
        )
    except (OSError, ValueError):
        return 0


def _prepare_staging(layout: Layout, identity: dict, restart: bool, log) -> Path | None:
    """Resume an unfinished training of the same identity (its last checkpoint), else start a
    fresh staging folder."""
    st = layout.staging
    marker = st / PARTIAL_JSON
    if st.is_dir() and not restart:
        try:
            old = json.loads(marker.read_text(encoding="utf-8")).get("identity")
        except (OSError, ValueError):
            old = None
        last = last_checkpoint(layout.checkpoints, log)
        if old == identity and last:
            return last
        if old is not None and old != identity:
            log(
                f"note: discarding the unfinished training in {st} (a different configuration: "
                + ", ".join(_identity_diff(old, identity)[:6])
                + ")"
            )
    if st.exists():
        shutil.rmtree(st)
    st.mkdir(parents=True)
    write_json(marker, {"schema": SCHEMA, "identity": identity})
    return None


#: What a checkpoint holds once ``Trainer`` has finished writing it (trainer_state.json last).
CHECKPOINT_FILES = (
    "adapter_model.safetensors",
    "optimizer.pt",
    "scheduler.pt",
    "trainer_state.json",
)


def last_checkpoint(folder: Path, log=_log_default) -> Path | None:
    """The newest complete ``checkpoint-N`` (one cut short by a kill is skipped)."""
    if not folder.is_dir():
        return None
    found = sorted(
        (int(p.name.split("-")[1]), p)
        for p in folder.glob("checkpoint-*")
        if p.name.split("-")[1].isdigit()
    )
    for _, p in reversed(found):
        if all((p / f).is_file() for f in CHECKPOINT_FILES):
            return p
        log(f"note: {p.name} is incomplete (the training was killed while saving it): skipped")
    return None


def _abandon(layout: Layout, exc: BaseException, log) -> None:
    """After a failure or an interrupt: keep the staging folder when it holds a checkpoint (the
    same command resumes from it), else remove it."""
    if last_checkpoint(layout.checkpoints, lambda s: None):
        log(
            f"training stopped ({type(exc).__name__}); checkpoints are kept in "
            f"{layout.checkpoints}: rerun the same command to resume"
        )
    else:
        shutil.rmtree(layout.staging, ignore_errors=True)
        if layout.created:  # leave no empty --out folder behind
            try:
                layout.out.rmdir()
            except OSError:
                pass


def _finish(layout: Layout) -> None:
    """Drop the checkpoints and move the finished adapter into place."""
    shutil.rmtree(layout.checkpoints, ignore_errors=True)
    (layout.staging / PARTIAL_JSON).unlink(missing_ok=True)
    _commit(layout)


def _commit(layout: Layout) -> None:
    final, st = layout.adapter, layout.staging
    old = None
    if final.exists():
        old = final.parent / f".{final.name}.old-{os.getpid()}"
        os.replace(final, old)
    os.replace(st, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


# -- evaluation --------------------------------------------------------------------------------------------
def evaluate_adapter(
    recipe: Recipe,
    model: str,
    layout: Layout,
    task: str,
    chat: bool,
    *,
    device: str = "auto",
    cache: str | None = None,
    overwrite: bool = False,
    quiet: bool = False,
    threads: int | None = None,
    log: Callable[[str], None] = _log_default,
    report_to: Sequence[str] = (),
) -> dict:
    """Base model and adapter on the recipe's protocol (``negbench run`` twice), then
    ``negbench compare`` of the two into ``out``/compare.md and compare.json."""
    from negbench.report.compare import compare_runs, to_markdown
    from negbench.scoring.runs import load_runs

    runs = {}
    for which, adapter in (("base", None), ("adapter", layout.adapter)):
        out = layout.eval_run(which)
        log(
            f"evaluating the {which} model on {task} ({', '.join(recipe.eval_modes) or 'default modes'}, "
            f"zero-shot{', chat template' if chat else ''}) -> {out}"
        )
        eval_run(
            recipe,
            model,
            task,
            out,
            chat=chat,
            adapter=adapter,
            device=device,
            cache=cache,
            overwrite=overwrite,
            quiet=quiet,
            threads=threads,
            report_to=report_to,
        )
        runs[which] = out
    a, b = load_runs([runs["base"], runs["adapter"]], ["base", f"base+{recipe.name}"])
    cmp = compare_runs(a, b)
    head = (
        f"# {recipe.name}: base vs adapter\n\nBase model `{model}`, adapter `{layout.adapter}` "
        f"({recipe.paper}); evaluation `{task}`, zero-shot. Runs: `{runs['base']}`, "
        f"`{runs['adapter']}`.\n\n"
    )
    atomic_write_text(layout.out / "compare.md", head + to_markdown(cmp, max_flips=50) + "\n")
    write_json(layout.out / "compare.json", cmp)
    print("\n" + to_markdown(cmp, max_flips=10))
    print(
        f"\ncompare: {layout.out / 'compare.md'}\nreport:  negbench report {runs['base']} "
        f"{runs['adapter']}   (the 'After SFT' rows)"
    )
    return cmp


__all__ = [
    "train",
    "evaluate_adapter",
    "eval_task_spec",
    "eval_run",
    "task_with_chat",
    "load_tokenizer",
    "load_model",
    "training_arguments",
    "make_trainer",
    "Collator",
    "progress_callback",
    "precision",
    "read_train_json",
    "Layout",
    "TRAIN_JSON",
    "SCHEMA",
]
