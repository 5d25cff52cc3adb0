"""This is not a Dataset §6 LoRA recipe (App. B; the official configs/train/*.yaml, config.py)."""

from __future__ import annotations

from negbench.scoring.recipes import Recipe


def recipe() -> Recipe:
    # This is not a Dataset §6 and App. B: LoRA on an 8-bit base ("the frozen model weights are
    # quantized into 8 bits, while the LoRA trainable weights remain in 16 bits"); splits by
    # block (triple), never by sentence.  App. B gives no hyper-parameter: they come from the
    # official repository (hitz-zentroa/This-is-not-a-Dataset): configs/train/Vicuna13B.yaml
    # (per_device_train_batch_size 32, gradient_accumulation_steps 1, learning_rate 3e-4,
    # weight_decay 0, num_train_epochs 3, cosine, warmup_ratio 0.03, max_seq_length 512;
    # optim paged_adamw_32bit = AdamW with paged state, same update) and config.py /
    # load_model.py (lora_r 8, lora_alpha 16, lora_dropout 0.05, target: every linear layer,
    # prompt_loss_weight 0.05).  Its yaml sets quantization: 4; the paper says 8 bits and wins.
    # Prompt (dataset.py prepare_data): with a chat template the §4.2 chat prompt as the user
    # turn and True/False as the assistant turn; else "{prompt} True" / "{prompt} False" + EOS.
    # negbench tokenises prompt and response apart, so the response is "True" / "False" with no
    # prefix: its first token is then exactly the token the §4.2 scorer compares (True / False
    # encoded alone), as the official joint " True" is for its Llama tokenizers.
    # Seed: transformers' default 42.
    return Recipe(
        name="notadataset",
        paper="This is not a Dataset §6, App. B; official configs/train/*.yaml, config.py",
        summary="This is not a Dataset true/false sentences, block split (train blocks)",
        data="notadataset",
        data_split="train",
        template="auto",
        prompt_join=" ",
        response_prefix="",
        append_eos=True,
        instruction_chat="Is the following statement True or False? Answer only True or False.",
        cutoff_len=512,
        prompt_loss_weight=0.05,
        lora_rank=8,
        lora_alpha=16.0,
        lora_dropout=0.05,
        lora_target=("all",),
        quantization=8,
        num_train_epochs=3.0,
        per_device_train_batch_size=32,
        gradient_accumulation_steps=1,
        learning_rate=3e-4,
        lr_scheduler_type="cosine",
        warmup_ratio=0.03,
        weight_decay=0.0,
        max_grad_norm=1.0,
        optim="adamw_torch",
        bf16=True,
        seed=42,
        logging_steps=10,
        save_steps=500,
        save_total_limit=2,
        eval_task="notadataset[split=test]",
        eval_modes=("next_token",),
        eval_chat="auto",
    )


RECIPES = (recipe(),)


def register(r) -> None:
    """Called by the registry the first time recipes are asked for."""
    for rec in RECIPES:
        r.add("recipe", rec.name, rec)
