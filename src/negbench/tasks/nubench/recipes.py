"""Thunder-NUBench LoRA recipes (App. N, Listings 10-11; App. O / Q instructions)."""

from __future__ import annotations

from negbench.scoring.recipes import Recipe


def recipe(style: str, exporter: str, task: str, what: str) -> Recipe:
    # Thunder-NUBench §5.1 and App. N, Listing 10 (Llama-3.1-8B_lora_sft.yaml: lora_rank 8,
    # lora_target all, cutoff_len 512, max_samples 5000, per_device_train_batch_size 1,
    # gradient_accumulation_steps 8, learning_rate 1.0e-4, num_train_epochs 3.0, cosine,
    # warmup_ratio 0.1, bf16, logging_steps 10, save_steps 500) and Listing 11 (Alpaca records);
    # App. O / Q for the definition and detail instructions.  Listing 10 sets no lora_alpha,
    # lora_dropout, weight decay, clipping, optimiser or seed: LLaMA-Factory's defaults apply
    # (alpha = 2 × rank = 16, dropout 0; transformers 4.x: weight_decay 0, max_grad_norm 1.0,
    # adamw_torch, seed 42) and loss on the response only (train_on_prompt: false).
    # template "auto": the model's chat template (Listing 10 uses llama3, the model's own);
    # a model without one gets prompt + "\n" + response + EOS.
    # Evaluation: zero-shot completion and option modes (App. P, Table 11 "After SFT").
    return Recipe(
        name=f"nubench-{style}",
        paper=f"Thunder-NUBench App. N, Listings 10-11{what}",
        summary=f"Thunder-NUBench sentence-negation pairs, {style} instruction",
        data=exporter,
        max_samples=5000,
        template="auto",
        prompt_join="\n",
        response_prefix="\n",
        append_eos=True,
        cutoff_len=512,
        prompt_loss_weight=0.0,
        lora_rank=8,
        lora_alpha=16.0,
        lora_dropout=0.0,
        lora_target=("all",),
        num_train_epochs=3.0,
        per_device_train_batch_size=1,
        gradient_accumulation_steps=8,
        learning_rate=1e-4,
        lr_scheduler_type="cosine",
        warmup_ratio=0.1,
        weight_decay=0.0,
        max_grad_norm=1.0,
        optim="adamw_torch",
        bf16=True,
        seed=42,
        logging_steps=10,
        save_steps=500,
        save_total_limit=2,
        eval_task=task,
        eval_modes=("completion", "option"),
        eval_chat="auto",
    )


RECIPES = (
    recipe("simple", "nubench-negation", "nubench", ""),
    recipe(
        "definition",
        "nubench-negation-definition",
        "nubench-definition",
        "; App. O definition prompt, App. Q",
    ),
    recipe(
        "detail",
        "nubench-negation-detail",
        "nubench-detail",
        "; App. O detail prompt (Listing 12), App. Q",
    ),
)
#: Short names.
ALIASES = {"nubench": "nubench-simple"}


def register(r) -> None:
    """Called by the registry the first time recipes are asked for."""
    for rec in RECIPES:
        r.add("recipe", rec.name, rec)
    for short, name in ALIASES.items():
        r.add("recipe_alias", short, name)
