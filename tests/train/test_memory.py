"""Training that fits: micro-batches with accumulation give the full batch's gradients (one step
compared both ways on a tiny model), the chunked loss equals the full-logits loss, and the
micro-batch is chosen from the memory budget.  Tokenisation as read: tests/train/test_data.py."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("peft")

from negbench.scoring import recipes as R  # noqa: E402

#: Records of different lengths, so micro-batches pad differently from the full batch.
RECORDS = [
    {
        "instruction": "Negate the sentence.",
        "input": "Sentence: The cat is on the mat" + " and the dog" * (i % 5) + f" {i}.",
        "output": "The cat is not on the mat" + " yes" * (i % 3) + ".",
    }
    for i in range(8)
]


@pytest.fixture(scope="module")
def data_file(tmp_path_factory) -> str:
    p = tmp_path_factory.mktemp("data") / "records.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return str(p)


def _examples(model: str, data_file: str, prompt_loss_weight: float):
    from negbench.backends.sources import resolve
    from negbench.train.data import load_training_data, tokenize
    from negbench.train.trainer import load_tokenizer

    tok = load_tokenizer(resolve(model))
    r = R.apply(R.get_recipe("nubench-simple"), {"prompt_loss_weight": prompt_loss_weight})
    return tok, tokenize(load_training_data(data_file), r, tok).examples


def _lora_model(model: str):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32)
    base.config.use_cache = False
    torch.manual_seed(0)
    m = get_peft_model(
        base,
        LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules="all-linear"),
    )
    with torch.no_grad():  # B = 0 at init would leave A without gradient
        for n, p in m.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.2)
    return m


def _trainer_step(model, data_file, tmp_path, micro: int, w: float, checkpointing=False):
    """One optimiser step (SGD, so the update is the gradient itself) of 8 examples as
    ``micro``-sized micro-batches through negbench's Trainer."""
    from negbench.train.trainer import make_trainer
    from transformers import TrainingArguments

    tok, examples = _examples(model, data_file, w)
    m = _lora_model(model)
    if checkpointing:
        from negbench.train.memory import enable_checkpointing

        enable_checkpointing(m.get_base_model())
    args = TrainingArguments(
        output_dir=str(tmp_path / f"o{micro}"),
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=8 // micro,
        max_steps=1,
        learning_rate=0.5,
        optim="sgd",
        lr_scheduler_type="constant",
        warmup_steps=0,
        weight_decay=0.0,
        max_grad_norm=0.0,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        remove_unused_columns=False,
        use_cpu=True,
        include_num_input_tokens_seen="non_padding",
    )
    trainer = make_trainer(m, args, examples, tok)
    trainer.train()
    loss = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    params = {n: p.detach().clone() for n, p in m.named_parameters() if p.requires_grad}
    return params, loss


def _full_batch_step(model, data_file, w: float):
    """The reference: the whole batch in one forward pass, full-vocabulary logits and the loss
    as the single-batch code computes it (sum(w · CE) / sum(w)), one SGD step by hand."""
    import torch
    from negbench.train.trainer import Collator

    tok, examples = _examples(model, data_file, w)
    m = _lora_model(model)
    batch = Collator(tok)(list(examples))
    labels = batch.pop("labels")
    weights = batch.pop("loss_weight", None)
    logits = m(**batch).logits[..., :-1, :].float()
    tgt = labels[..., 1:]
    ww = weights[..., 1:] if weights is not None else tgt.ne(-100).float()
    ce = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.size(-1)), tgt.reshape(-1), reduction="none", ignore_index=-100
    )
    loss = (ce * ww.reshape(-1)).sum() / ww.sum()
    loss.backward()
    with torch.no_grad():
        out = {}
        for n, p in m.named_parameters():
            if p.requires_grad:
                out[n] = p - 0.5 * p.grad
    return out, float(loss.detach())


@pytest.mark.parametrize("w", [0.0, 0.05], ids=["response-only", "prompt-weighted"])
def test_micro_batches_equal_the_full_batch(tiny_llama, data_file, tmp_path, w):
    """8 examples as 1×8, 2×4, 4×2 and 8×1 micro-batches (and with checkpointing): after one
    step the LoRA parameters equal the full batch's, computed by hand with full logits."""
    ref, ref_loss = _full_batch_step(tiny_llama, data_file, w)
    for micro, ckpt in ((8, False), (4, False), (2, False), (1, False), (2, True)):
        got, loss = _trainer_step(tiny_llama, data_file, tmp_path, micro, w, ckpt)
        assert loss[0] == pytest.approx(ref_loss, rel=1e-5, abs=1e-6), (micro, loss, ref_loss)
        moved = max(float((got[n] - ref[n]).abs().max()) for n in ref)
        scale = max(float(ref[n].abs().max()) for n in ref)
        assert moved <= 1e-5 * scale, (micro, ckpt, moved)


def test_chunked_loss_equals_full_logits(monkeypatch):
    """The chunked loss and its gradients (hidden states and a trainable head, with and
    without a logit soft-cap) equal full-logits cross-entropy."""
    import torch
    from negbench.train import memory

    monkeypatch.setattr(memory, "LOSS_CHUNK_BYTES", 4 * 50 * 7)  # chunks of 16 rows: several
    torch.manual_seed(0)
    for cap in (None, 3.0):
        h = torch.randn(37, 12, dtype=torch.float64, requires_grad=True)
        head = torch.randn(50, 12, dtype=torch.float64, requires_grad=True)
        tgt = torch.randint(0, 50, (37,))
        w = torch.rand(37, dtype=torch.float64)
        got = memory.chunked_cross_entropy(h, head, tgt, w, cap)
        gh, gw = torch.autograd.grad(got * 0.7, (h, head))
        z = (h @ head.T).float()
        if cap:
            z = torch.tanh(z / cap) * cap
        ref = (torch.nn.functional.cross_entropy(z, tgt, reduction="none") * w).sum()
        rh, rw = torch.autograd.grad(ref * 0.7, (h, head))
        assert float(got) == pytest.approx(float(ref), rel=1e-5)
        assert torch.allclose(gh, rh, rtol=1e-4, atol=1e-6)
        assert torch.allclose(gw, rw, rtol=1e-4, atol=1e-6)


def test_recipe_step_losses_do_not_depend_on_the_split(tiny_llama, data_file, tmp_path):
    """negbench train: three steps of batch 8 as one micro-batch or as micro-batches of 2 log
    the same losses and end with the same adapter."""
    from safetensors.torch import load_file
    from negbench.train.trainer import train

    from transformers import TrainerCallback

    logged: list[dict] = []

    class Capture(TrainerCallback):  # what a --report-to tracker receives
        def on_log(self, args, state, control, logs=None, **kw):
            logged.append(dict(logs or {}))

    runs = {}
    for micro in (8, 2):
        adapter = train(
            "nubench-simple",
            tiny_llama,
            tmp_path / f"m{micro}",
            data=data_file,
            overrides={
                "per_device_train_batch_size": 8,
                "gradient_accumulation_steps": 1,
                "micro_batch_size": micro,
                "lora_dropout": 0.0,
                "logging_steps": 1,
                "learning_rate": 1e-2,
                "warmup_ratio": 0.0,
            },
            max_steps=3,
            progress=False,
            threads=1,
            device="cpu",
            log=lambda s: None,
            callbacks=[Capture()],
        )
        info = json.loads((adapter / "negbench_train.json").read_text())
        assert info["batches"]["micro_batch_size"] == micro
        assert info["batches"]["gradient_accumulation_steps"] == 8 // micro
        runs[micro] = (
            [h["loss"] for h in info["loss_history"]],
            load_file(adapter / "adapter_model.safetensors"),
        )
    steps = [x for x in logged if "loss" in x]
    assert len(steps) == 6 and all(x["tokens_per_second"] > 0 for x in steps)
    (l8, w8), (l2, w2) = runs[8], runs[2]
    assert len(l8) == 3 and l8 == pytest.approx(l2, rel=1e-5)
    assert all(float((w8[k] - w2[k]).abs().max()) < 1e-5 for k in w8)


def test_micro_batch_from_the_memory_budget():
    """The micro-batch is the largest divisor of the batch whose activations fit the budget;
    checkpointing only where it pays (a GPU needing accumulation, or not one example fitting)."""
    from types import SimpleNamespace

    from negbench.train.memory import activation_bytes, plan_batches

    cfg = SimpleNamespace(
        hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9
    )
    r = R.apply(R.get_recipe("notadataset"), {"memory_budget_gb": 1.0})
    per_ex = activation_bytes(cfg, 99, 4, False)
    p = plan_batches(r, cfg, 99, "cpu", 4)
    assert p.micro_batch_size * per_ex <= 2**30 < 2 * p.micro_batch_size * per_ex
    assert 32 % p.micro_batch_size == 0 and not p.gradient_checkpointing
    assert p.micro_batch_size * p.gradient_accumulation_steps == 32
    big = R.apply(r, {"memory_budget_gb": 100.0})
    assert plan_batches(big, cfg, 99, "cpu", 4).micro_batch_size == 32
    gpu = plan_batches(r, cfg, 2048, "cuda", 2, free_bytes=8 * 2**30)
    assert gpu.gradient_checkpointing and gpu.micro_batch_size >= 1
    tiny = R.apply(r, {"memory_budget_gb": 0.001})
    assert plan_batches(tiny, cfg, 99, "cpu", 4).gradient_checkpointing  # nothing fits
    fixed = R.apply(r, {"micro_batch_size": 5, "gradient_checkpointing": "off"})
    assert plan_batches(fixed, cfg, 99, "cpu", 4).micro_batch_size == 4  # a divisor of 32
    with pytest.raises(Exception, match="memory_budget_gb"):
        R.apply(r, {"memory_budget_gb": 0})


def test_resume_with_micro_batches(tiny_llama, data_file, tmp_path):
    """Killed after checkpoint-2 of a run in micro-batches of 2, the rerun resumes — even with
    another split (micro-batches of 4: not part of the training's identity) — and its losses
    equal an uninterrupted run's."""
    from transformers import TrainerCallback

    from negbench.train.trainer import train

    class Kill(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            if state.global_step == 2:
                raise KeyboardInterrupt("simulated kill")

    base = {
        "per_device_train_batch_size": 4,
        "gradient_accumulation_steps": 1,
        "lora_dropout": 0.0,
        "logging_steps": 1,
        "save_steps": 2,
        "learning_rate": 1e-2,
    }

    def run(out, micro, **kw):
        return train(
            "nubench-simple",
            tiny_llama,
            tmp_path / out,
            data=data_file,
            overrides={**base, "micro_batch_size": micro},
            max_steps=4,
            progress=False,
            threads=1,
            device="cpu",
            log=lambda s: None,
            **kw,
        )

    with pytest.raises(KeyboardInterrupt):
        run("a", 2, callbacks=[Kill()])
    a = json.loads((run("a", 4) / "negbench_train.json").read_text())
    b = json.loads((run("b", 2) / "negbench_train.json").read_text())
    assert a["resumed_from"] == "checkpoint-2" and b["resumed_from"] is None
    la, lb = ([h["loss"] for h in x["loss_history"]] for x in (a, b))
    assert len(la) == 4 and la == pytest.approx(lb, rel=1e-5)
