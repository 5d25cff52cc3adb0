"""Training that fits: the recipe's effective batch as micro-batches chosen for a memory budget,
gradient checkpointing where it pays, and a loss that never holds full-vocabulary logits for
every position.

Why the gradients stay the full batch's: the loss of one optimiser step is
``sum(w · CE) / sum(w)`` over every loss token of the effective batch (``w`` = 1 on the response,
``prompt_loss_weight``'s share on the prompt, 0 on padding).  ``sum(w)`` is counted over all the
step's micro-batches before the first forward pass (``Trainer.get_batch_samples`` prefetches
them), each micro-batch contributes ``sum(w · CE) / sum(w)`` of the whole step, and the
contributions add up to the full batch's loss and gradient — whatever the split.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

GiB = 1024**3
#: Bytes of logits (float32) one chunk of the loss may hold.
LOSS_CHUNK_BYTES = 128 * 2**20
#: Default activation budget on a CPU, bytes (capped at a quarter of the free memory).
CPU_BUDGET = 1 * GiB
#: Share of the free GPU memory (after loading the model) the activations may take by default.
GPU_SHARE = 0.5


@dataclass(frozen=True)
class BatchPlan:
    """How one optimiser step's examples are split (``micro × accumulation`` = the recipe's)."""

    micro_batch_size: int
    gradient_accumulation_steps: int
    gradient_checkpointing: bool
    budget_bytes: int
    bytes_per_example: int  # estimated activations of one example of the longest length
    why: str

    def note(self, per_device: int, accumulation: int) -> str:
        eff = per_device * accumulation
        return (
            f"effective batch {eff} (per device {per_device} × accumulation {accumulation}) as "
            f"micro-batches of {self.micro_batch_size} × {self.gradient_accumulation_steps} "
            f"accumulation steps, loss normalised over the whole batch ({self.why}"
            + (", gradient checkpointing" if self.gradient_checkpointing else "")
            + ")"
        )


def free_memory_bytes(device: str) -> int | None:
    """Free memory where the activations will live (None when unknown)."""
    if device.startswith("cuda"):
        import torch

        free, _ = torch.cuda.mem_get_info(torch.device(device))
        return int(free)
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def activation_bytes(config: Any, seq_len: int, dtype_bytes: int, checkpointing: bool) -> int:
    """Rough activations one sequence of ``seq_len`` tokens keeps for the backward pass of a
    decoder with LoRA on its linear layers (per layer: ~14 hidden-size and ~6 MLP-size vectors
    a token, plus the attention scores); with checkpointing, one layer's input per layer and one
    layer's activations.  Conservative: measured peaks of SmolLM2 stay below it."""
    h = int(getattr(config, "hidden_size", 0) or 0) or 4096
    inter = int(getattr(config, "intermediate_size", 0) or 0) or 4 * h
    layers = int(getattr(config, "num_hidden_layers", 0) or 0) or 32
    heads = int(getattr(config, "num_attention_heads", 0) or 0) or 32
    per_layer = seq_len * (14 * h + 6 * inter + 2 * heads * seq_len) * dtype_bytes
    if checkpointing:
        return seq_len * h * dtype_bytes * layers + per_layer
    return per_layer * layers


def plan_batches(
    recipe,
    config: Any,
    max_len: int,
    device: str,
    dtype_bytes: int,
    free_bytes: int | None = None,
) -> BatchPlan:
    """The micro-batch size (a divisor of ``per_device_train_batch_size``), the accumulation that
    keeps the effective batch, and whether to checkpoint (``gradient_checkpointing`` auto: only
    when the micro-batch that fits is smaller than the recipe's batch on a GPU, or when not even
    one example fits — on a CPU recomputation costs more time than accumulation does)."""
    per_device = recipe.per_device_train_batch_size
    gpu = device.startswith("cuda")
    if recipe.memory_budget_gb is not None:
        budget = int(recipe.memory_budget_gb * GiB)
        why = f"memory budget {recipe.memory_budget_gb:g} GB"
    else:
        free = free_bytes if free_bytes is not None else free_memory_bytes(device)
        if gpu:
            budget = int(GPU_SHARE * free) if free else 8 * GiB
            why = f"memory budget {budget / GiB:.1f} GB: half the free GPU memory"
        else:
            budget = min(CPU_BUDGET, free // 4) if free else CPU_BUDGET
            why = f"memory budget {budget / GiB:.1f} GB (memory_budget_gb)"
    divisors = [d for d in range(per_device, 0, -1) if per_device % d == 0]

    def fits(ckpt: bool) -> tuple[int, int]:
        per_ex = activation_bytes(config, max(1, max_len), dtype_bytes, ckpt)
        return next((d for d in divisors if d * per_ex <= budget), 1), per_ex

    want = recipe.gradient_checkpointing
    if recipe.micro_batch_size is not None:
        micro = max(d for d in divisors if d <= recipe.micro_batch_size)
        why = f"micro_batch_size {recipe.micro_batch_size}"
        ckpt = want == "on"
        per_ex = activation_bytes(config, max(1, max_len), dtype_bytes, ckpt)
    else:
        micro, per_ex = fits(False)
        ckpt = want == "on"
        if want == "auto":
            too_big = micro * per_ex > budget  # not even one example fits
            ckpt = too_big or (gpu and micro < per_device)
        if ckpt:
            micro, per_ex = fits(True)
    return BatchPlan(
        micro,
        recipe.gradient_accumulation_steps * (per_device // micro),
        ckpt,
        budget,
        per_ex,
        why,
    )


def enable_checkpointing(model) -> None:
    """Activation (gradient) checkpointing of a transformers model, non-reentrant (no input
    gradients needed under a frozen base; dropout masks replayed)."""
    kw = {"use_reentrant": False}
    fn = getattr(model, "activation_checkpointing_enable", None)
    if fn is not None:  # transformers ≥ 5.x: the new name
        fn(activation_checkpointing_kwargs=kw)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kw)


# -- the loss ------------------------------------------------------------------------------------
def _chunked_ce_function():
    import torch

    class ChunkedCE(torch.autograd.Function):
        """``sum(w · CE(hidden @ head.T, target))`` a chunk of rows at a time, the gradients
        computed in the forward pass (one chunk's logits alive at once, never all of them)."""

        @staticmethod
        def forward(ctx, hidden, head, target, weight, chunk: int, cap: float | None):
            n = hidden.shape[0]
            grad_h = torch.empty_like(hidden)
            grad_w = torch.zeros_like(head, dtype=torch.float32) if head.requires_grad else None
            total = torch.zeros((), dtype=torch.float32, device=hidden.device)
            for s in range(0, n, chunk):
                hc = hidden[s : s + chunk].to(head.dtype)  # (an 8-bit base: fp32 head)
                z = torch.nn.functional.linear(hc, head).float()  # as the model, then fp32
                t = None
                if cap:
                    t = torch.tanh(z / cap)
                    z = t * cap
                lse = torch.logsumexp(z, dim=-1)
                tgt = target[s : s + chunk]
                wc = weight[s : s + chunk]
                total += ((lse - z.gather(1, tgt[:, None])[:, 0]) * wc).sum()
                g = torch.exp(z.sub_(lse[:, None]))  # softmax, in place of the logits
                g.scatter_add_(1, tgt[:, None], -torch.ones_like(wc)[:, None])
                g.mul_(wc[:, None])
                if t is not None:
                    g.mul_(1 - t * t)
                g = g.to(head.dtype)
                grad_h[s : s + chunk] = (g @ head).to(grad_h.dtype)
                if grad_w is not None:
                    grad_w.addmm_(g.t().float(), hc.float())
            ctx.save_for_backward(grad_h, *(() if grad_w is None else (grad_w,)))
            ctx.has_w = grad_w is not None
            ctx.head_dtype = head.dtype
            return total

        @staticmethod
        def backward(ctx, grad_out):
            saved = ctx.saved_tensors
            gh = saved[0] * grad_out.to(saved[0].dtype)
            gw = (saved[1] * grad_out).to(ctx.head_dtype) if ctx.has_w else None
            return gh, gw, None, None, None, None

    return ChunkedCE


_CE = None


def chunked_cross_entropy(hidden, head, target, weight, cap: float | None = None):
    """``sum(weight · CE)`` over rows of ``hidden`` (N, H) against ``head`` (V, H); the logits of
    at most :data:`LOSS_CHUNK_BYTES` at a time."""
    global _CE
    if _CE is None:
        _CE = _chunked_ce_function()
    chunk = max(16, LOSS_CHUNK_BYTES // (4 * head.shape[0]))
    return _CE.apply(hidden, head, target, weight.float(), chunk, cap)


def loss_parts(model) -> tuple[Any, Any, float | None] | None:
    """(decoder, output head, logit soft-cap) of a causal LM (under peft), or None when the
    model computes its logits in a way the chunked loss does not reproduce."""
    lm = model.get_base_model() if hasattr(model, "get_base_model") else model
    cfg = getattr(lm, "config", None)
    try:
        dec, head = lm.get_decoder(), lm.get_output_embeddings()
    except (AttributeError, NotImplementedError):
        return None
    if dec is None or head is None or getattr(head, "bias", None) is not None:
        return None
    for k in ("logit_scale", "logits_scaling", "output_multiplier_scale", "logit_softcapping"):
        if getattr(cfg, k, None) not in (None, 1, 1.0):
            return None
    if not hasattr(head, "weight") or type(head).__name__ != "Linear":
        return None
    return dec, head, getattr(cfg, "final_logit_softcapping", None)


def step_loss(model, inputs: dict, normaliser) -> Any:
    """This micro-batch's share of the step's loss: ``sum(w · CE) / normaliser`` (``normaliser``
    = the step's total weight; this batch's own when None)."""
    import torch

    weights = inputs.pop("loss_weight", None)
    labels = inputs.pop("labels")
    tgt = labels[..., 1:]
    w = (
        weights[..., 1:].to(torch.float32)
        if weights is not None
        else tgt.ne(-100).to(torch.float32)
    )
    keep = w.gt(0) & tgt.ne(-100)
    parts = loss_parts(model)
    if parts is None:  # full logits, as the model gives them
        logits = model(**inputs).logits[..., :-1, :].float()
        ce = torch.nn.functional.cross_entropy(
            logits[keep], tgt[keep], reduction="none", ignore_index=-100
        )
        total = (ce * w[keep]).sum()
    else:
        dec, head, cap = parts
        hidden = dec(**inputs).last_hidden_state[:, :-1, :]
        total = chunked_cross_entropy(hidden[keep], head.weight, tgt[keep], w[keep], cap)
    denom = normaliser if normaliser is not None else w.sum()
    if torch.is_tensor(denom):
        denom = denom.to(total.device, torch.float32)
    return total / (denom.clamp_min(1e-12) if torch.is_tensor(denom) else max(denom, 1e-12))


def step_weight(batches: list[dict]):
    """The total loss weight of one optimiser step's micro-batches (the normaliser)."""
    import torch

    total = None
    for b in batches:
        tgt = b["labels"][..., 1:]
        if "loss_weight" in b:
            w = (b["loss_weight"][..., 1:].to(torch.float32) * tgt.ne(-100)).sum()
        else:
            w = tgt.ne(-100).sum().to(torch.float32)
        total = w if total is None else total + w
    return total


__all__ = [
    "BatchPlan",
    "plan_batches",
    "enable_checkpointing",
    "activation_bytes",
    "chunked_cross_entropy",
    "loss_parts",
    "step_loss",
    "step_weight",
]
