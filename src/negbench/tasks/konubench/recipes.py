"""Thunder-KoNUBench LoRA recipes (§5.1, App. G; the official README and sft/ code)."""

from __future__ import annotations

from negbench.scoring.recipes import Recipe


#: The official KoNUBench LoRA targets (sft/load.py build_peft_model).
QKVO = ("q_proj", "k_proj", "v_proj", "o_proj")


def recipe(fmt: str, variant: str) -> Recipe:
    # Thunder-KoNUBench §5.1 and App. G: LoRA rank 8, alpha 32, dropout 0.05, all linear layers,
    # batch 128 with gradient accumulation, cosine, bf16.  App. G gives no learning rate, epochs,
    # warm-up or seed: those come from the official README command and sft/ code (--global_batch
    # 128 --micro_batch 16 --learning_rate 3e-5 --seed 1200 --epochs 3 --dtype bf16
    # --checkpoint_interval 200; DeepSpeed AdamW betas 0.9/0.999, eps 1e-8, weight_decay 0.01,
    # gradient_clipping 1.0, WarmupCosineLR with warmup_ratio 0.1; model_seq_len 2048).  One
    # device: micro-batch 16 × accumulation 8 = 128.  Text format of sft/load.py: context =
    # instruction + "\n\n" + input (BOS as the tokenizer adds it), target = " " + output, no EOS,
    # loss on the target only, no chat template (negbench export konubench-* splits its records
    # so that this holds exactly).
    # variant "official" = sft/load.py as released: LoRA on q/k/v/o_proj only, symbol target
    # "{letter}. {standard negation}".  variant "paper" (the default, as the paper wins where
    # they differ — SPEC) = all linear layers, and the symbol format answers the letter (§5.2:
    # "a label selection problem").
    official = variant == "official"
    data = (
        "konubench-cloze"
        if fmt == "cloze"
        else ("konubench-symbol" if official else "konubench-symbol[target=letter]")
    )
    what = (
        "official sft/load.py (q/k/v/o targets, symbol target '{letter}. {negation}')"
        if official
        else "App. G (all linear layers)"
    )
    return Recipe(
        name=f"konubench-{fmt}" + ("-official" if official else ""),
        paper="Thunder-KoNUBench §5.1, App. G"
        + ("; official sft/load.py" if official else "; lr/epochs/seed: official README"),
        summary=f"Thunder-KoNUBench {fmt}-style SFT, {what}",
        language="ko",
        variant=variant,
        data=data,
        template="plain",
        prompt_join="\n\n",
        response_prefix=" ",
        append_eos=False,
        cutoff_len=2048,
        prompt_loss_weight=0.0,
        lora_rank=8,
        lora_alpha=32.0,
        lora_dropout=0.05,
        lora_target=QKVO if official else ("all",),
        num_train_epochs=3.0,
        per_device_train_batch_size=16,
        gradient_accumulation_steps=8,
        learning_rate=3e-5,
        lr_scheduler_type="cosine",
        warmup_ratio=0.1,
        weight_decay=0.01,
        max_grad_norm=1.0,
        optim="adamw_torch",
        bf16=True,
        seed=1200,
        logging_steps=1,
        save_steps=200,
        save_total_limit=2,
        eval_task="konubench",
        eval_modes=(fmt,),
        eval_chat="no",
    )


RECIPES = (
    recipe("cloze", "paper"),
    recipe("symbol", "paper"),
    recipe("cloze", "official"),
    recipe("symbol", "official"),
)


def register(r) -> None:
    """Called by the registry the first time recipes are asked for."""
    for rec in RECIPES:
        r.add("recipe", rec.name, rec)
