"""``negbench export --llama-factory DIR --recipe NAME [--model M] [--data SPEC]``: a recipe and its
training data for people who train with LLaMA-Factory.

``DIR`` receives, in LLaMA-Factory's documented formats (``data/README.md``: Alpaca format and the
``dataset_info.json`` description; ``examples/train_lora/llama3_lora_sft.yaml``: the training keys):

* ``NAME.json`` — the training records as a JSON array of ``{"instruction", "input", "output"}``;
* ``dataset_info.json`` — ``{NAME: {"file_name": "NAME.json", "formatting": "alpaca",
  "columns": {"prompt": "instruction", "query": "input", "response": "output"}}}``;
* ``RECIPE_lora_sft.yaml`` — :meth:`Recipe.llamafactory` plus ``dataset_dir: .`` (run
  ``llamafactory-cli train RECIPE_lora_sft.yaml`` inside ``DIR``);
* ``README.txt`` — how to run it, what was adapted so that LLaMA-Factory trains on exactly the
  text negbench trains on, and the settings LLaMA-Factory cannot express.

LLaMA-Factory joins ``instruction`` and ``input`` with one newline and, with the ``empty``
template, adds neither BOS nor EOS.  Where a recipe renders differently (``prompt_join``,
``response_prefix``, ``instruction_chat``, ``append_eos``, a tokenizer that starts with BOS), the
exported records carry the rendered prompt in ``instruction`` (``input`` empty) and the rendered
response in ``output``, so the text trained on is the same; README.txt says which.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable, Mapping

from negbench.errors import ModelError, OptionError, OutputError

#: Hub ids of the embedded models (LLaMA-Factory loads transformers weights, not negbench's GGUF).
HUB_IDS = {
    "smollm2-135m-instruct": "HuggingFaceTB/SmolLM2-135M-Instruct",
    "gemma3-270m": "google/gemma-3-270m",
}
#: LLaMA-Factory's column mapping of the Alpaca format (data/README.md).
ALPACA_COLUMNS = {"prompt": "instruction", "query": "input", "response": "output"}
README = "README.txt"
#: Recipe.llamafactory notes that the exported records take care of.
HANDLED = ("prompt_join=", "response_prefix=", "append_eos=", "instruction_chat:")


def add_llama_factory_args(parser) -> None:
    """The ``--llama-factory`` options of ``negbench export``."""
    g = parser.add_argument_group(
        "LLaMA-Factory export (--llama-factory DIR): training data, dataset_info.json and a "
        "recipe-equivalent training YAML"
    )
    g.add_argument(
        "--llama-factory",
        dest="llama_factory",
        default=None,
        metavar="DIR",
        help="write a LLaMA-Factory dataset and training config for --recipe into DIR",
    )
    g.add_argument("--recipe", default=None, help="recipe to export (negbench recipes lists them)")
    g.add_argument(
        "--model",
        default=None,
        help="base model the YAML names (default: the recipe's default model; "
        "embedded models are written as their hub ids)",
    )
    g.add_argument(
        "--data",
        default=None,
        help="training data spec or .json/.jsonl file (default: the recipe's; the "
        "NAME argument is accepted too)",
    )
    g.add_argument(
        "--template",
        default=None,
        help="LLaMA-Factory template name (default: 'empty' for plain-text recipes; "
        "none for chat recipes, so LLaMA-Factory uses the model's own chat "
        "template)",
    )
    g.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="change a recipe setting before exporting (repeatable)",
    )


def wants_llama_factory(args) -> bool:
    return any(
        getattr(args, k, None)
        for k in ("llama_factory", "recipe", "model", "data", "template", "overrides")
    )


def run_export(args) -> int:
    if not args.llama_factory:
        raise OptionError(
            "--recipe, --model, --data, --template and --set belong to the LLaMA-Factory export",
            where="negbench export",
            fix="add --llama-factory DIR (or drop them to write JSON lines)",
        )
    if args.out:
        raise OptionError(
            "--out names the JSON-lines file of a plain export; the LLaMA-Factory "
            "export writes into --llama-factory DIR",
            where="--out",
            fix="drop --out",
        )
    if not args.recipe:
        raise OptionError(
            "--llama-factory needs a recipe",
            where="--recipe",
            fix="--recipe NAME (negbench recipes lists them)",
        )
    if args.name and args.data and args.name != args.data:
        raise OptionError(
            f"two training data given: '{args.name}' and --data '{args.data}'",
            where="NAME / --data",
            fix="give one of them",
        )
    res = export_llama_factory(
        args.llama_factory,
        args.recipe,
        model=args.model,
        data=args.data or args.name,
        split=args.split,
        template=args.template,
        overrides=args.overrides,
    )
    print(f"{res['n_records']} records -> {res['files']['data']}")
    for k in ("dataset_info", "yaml", "readme"):
        print(f"{k}: {res['files'][k]}")
    for n in res["notes"]:
        print(f"note: {n}")
    print(f"train: cd {res['dir']} && llamafactory-cli train {Path(res['files']['yaml']).name}")
    return 0


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", s).strip("_").lower() or "data"


def model_path(model: str, src) -> tuple[str, list[str]]:
    """What LLaMA-Factory's ``model_name_or_path`` should say for a negbench model spec."""
    from negbench.backends.sources import ALIASES

    name = ALIASES.get(model, model)
    if name in HUB_IDS:
        return HUB_IDS[name], [
            f"model: negbench's '{name}' is a quantised GGUF; the YAML names "
            f"its original weights {HUB_IDS[name]} (LLaMA-Factory trains "
            "transformers weights)"
        ]
    if src.hub_id:
        return src.hub_id, []
    if src.gguf_file:
        from negbench.train.trainer import weights_folder

        folder = weights_folder(src)
        if folder:
            return folder, [
                f"model: {src.gguf_file} is a GGUF; the YAML names the transformers "
                f"folder negbench converted it to ({folder})"
            ]
        return str(Path(src.folder) / src.gguf_file), [
            "model: LLaMA-Factory cannot train a GGUF file; replace model_name_or_path with the "
            "model's transformers folder or hub id"
        ]
    return str(Path(src.folder).resolve()), []


def _check_dir(out: Path, names: set[str]) -> None:
    if out.exists() and not out.is_dir():
        raise OutputError(
            f"--llama-factory {out} is a file, not a folder",
            where="--llama-factory",
            fix="choose a folder",
        )
    if out.is_dir():
        other = sorted(p.name for p in out.iterdir() if p.name not in names)
        if other:
            raise OutputError(
                f"{out} holds other files ({', '.join(other[:5])}"
                + (", …" if len(other) > 5 else "")
                + ")",
                where="--llama-factory",
                fix="choose an empty or new folder (an earlier export of the same "
                "recipe and data is replaced)",
            )
    from negbench.files import check_writable_folder

    check_writable_folder(out, "--llama-factory")


def export_llama_factory(
    out: str | Path,
    recipe: str,
    *,
    model: str | None = None,
    data: str | None = None,
    split: str | None = None,
    template: str | None = None,
    overrides: Iterable[str] | Mapping[str, Any] | None = None,
) -> dict:
    """Write the LLaMA-Factory dataset, ``dataset_info.json``, training YAML and README into
    ``out``; everything is checked before the first file is written."""
    from negbench.backends.sources import DEFAULT_MODEL, MULTILINGUAL_DEFAULT, resolve
    from negbench.train.data import (
        adds_bos,
        is_file_spec,
        load_training_data,
        prompt_text,
        resolve_template,
    )
    from negbench.scoring.recipes import apply, resolve_recipe

    r = resolve_recipe(recipe, overrides=overrides or None, data=data)
    if split:
        r = apply(r, [("data_split", split, "--split")])
    model = model or (MULTILINGUAL_DEFAULT if r.language != "en" else DEFAULT_MODEL)
    src = resolve(model, check_hub=False)  # the config names it; nothing is loaded
    if template is not None and not re.fullmatch(r"[A-Za-z0-9_.\-]+", template):
        raise OptionError(
            f"--template {template!r} is not a LLaMA-Factory template name",
            where="--template",
            fix="e.g. llama3, qwen, gemma3, empty",
        )
    name = "negbench_" + _slug(Path(r.data).stem if is_file_spec(r.data) else r.data)
    yaml_name = f"{r.name}_lora_sft.yaml"
    out = Path(out).expanduser()
    _check_dir(out, {f"{name}.json", "dataset_info.json", yaml_name, README})
    # -- how negbench renders this recipe for this model ----------------------------------------
    tok = None
    notes: list[str] = []
    try:  # the tokenizer only (no weights): template, BOS, EOS
        from negbench.train.trainer import load_tokenizer

        tok = load_tokenizer(src)
    except ModelError as exc:
        if r.template == "auto" and template is None:
            raise ModelError(
                exc.what,
                where=exc.where,
                fix="give a local --model, or --template NAME (the recipe's "
                "template is 'auto': chat when the model has one)",
            ) from None
        notes.append(
            f"tokenizer of {model} not readable here ({exc.what}): BOS / EOS tokens "
            "are not written into the records"
        )
    if r.template == "auto" and tok is None:
        kind = "plain" if template == "empty" else "chat"
    else:
        kind = resolve_template(r, tok) if tok is not None else r.template
    lf_template = template or ("empty" if kind == "plain" else None)
    td = load_training_data(r.data, r.data_split, None)
    bos = tok.bos_token if (kind == "plain" and tok is not None and adds_bos(tok)) else ""
    eos = (tok.eos_token or "") if (kind == "plain" and r.append_eos and tok is not None) else ""
    if kind == "plain" and lf_template != "empty":
        notes.append(
            f"template: negbench renders this recipe as plain text; the YAML names the "
            f"LLaMA-Factory template '{lf_template}' as asked, which adds its own markers"
        )
    joined = (
        r.prompt_join != "\n"
        or (kind == "chat" and r.instruction_chat is not None)
        or (kind == "plain" and bool(bos))
    )
    records = []
    for rec in td.records:
        if joined:
            ins, inp = bos + prompt_text(rec, r, kind), ""
        else:
            ins, inp = rec["instruction"], rec.get("input") or ""
        resp = (r.response_prefix if kind == "plain" else "") + rec["output"] + eos
        records.append({"instruction": ins, "input": inp, "output": resp})
    if joined:
        why = []
        if r.prompt_join != "\n":
            why.append(f"prompt_join={r.prompt_join!r} (LLaMA-Factory joins with one newline)")
        if kind == "chat" and r.instruction_chat is not None:
            why.append(f"instruction_chat={r.instruction_chat!r} under the chat template")
        if bos:
            why.append(
                f"the tokenizer starts with BOS ({bos!r}), which the 'empty' template does not add"
            )
        notes.append(
            "data: 'instruction' holds the whole prompt as negbench renders it and "
            "'input' is empty, because of " + "; ".join(why)
        )
    if kind == "plain" and r.response_prefix:
        notes.append(f"data: every 'output' starts with response_prefix={r.response_prefix!r}")
    if eos:
        notes.append(
            f"data: every 'output' ends with the EOS token {eos!r} (append_eos; the "
            "'empty' template adds none)"
        )
    elif kind == "plain" and r.append_eos:
        notes.append(
            "append_eos=true: add the model's EOS token to every 'output' (the 'empty' "
            "template adds none)"
        )
    mpath, more = model_path(model, src)
    notes += more
    y, caveats = r.llamafactory(mpath, name, lf_template or "", f"saves/{r.name}/lora/sft")
    if lf_template is None:
        y.pop("template", None)
        notes.append(
            "template: none is set, so LLaMA-Factory reads the model's own chat template "
            "from its tokenizer, as negbench does (older LLaMA-Factory versions need "
            "'template: NAME', e.g. llama3, qwen, gemma3)"
        )
    ordered: dict[str, Any] = {}
    for k, v in y.items():
        ordered[k] = v
        if k == "dataset":
            ordered["dataset_dir"] = "."
    remaining = [c for c in caveats if not c.startswith(HANDLED)]
    # -- write -------------------------------------------------------------------------------------------
    import yaml
    from negbench import __version__
    from negbench.files import atomic_write_text, write_json

    out.mkdir(parents=True, exist_ok=True)
    data_file = out / f"{name}.json"
    write_json(data_file, records, indent=1)
    write_json(
        out / "dataset_info.json",
        {
            name: {
                "file_name": data_file.name,
                "formatting": "alpaca",
                "columns": dict(ALPACA_COLUMNS),
            }
        },
    )
    head = (
        f"# LLaMA-Factory LoRA SFT config equivalent to negbench recipe '{r.name}'\n"
        f"# ({r.paper}); written by negbench {__version__} export --llama-factory.\n"
        f"# Run inside this folder: llamafactory-cli train {yaml_name}\n"
        + "".join(f"# not expressible: {c}\n" for c in remaining)
    )
    atomic_write_text(
        out / yaml_name,
        head + yaml.safe_dump(ordered, sort_keys=False, allow_unicode=True, width=1000),
    )
    summary = td.summary()
    lines = [
        f"negbench recipe '{r.name}' for LLaMA-Factory",
        "=" * 60,
        "",
        f"Recipe:   {r.name} — {r.paper}",
        f"Model:    {mpath}  (negbench --model {model})",
        f"Data:     {td.source}; {len(records)} records"
        + (
            f" (LLaMA-Factory keeps the first {r.max_samples}: max_samples)"
            if r.max_samples and r.max_samples < len(records)
            else ""
        ),
        f"          sha256 of the records as negbench reads them: {summary['fingerprint']}",
        "",
        "Files:",
        f"  {data_file.name}      Alpaca records (instruction, input, output), a JSON array",
        f"  dataset_info.json   describes '{name}' (alpaca formatting, columns prompt=instruction,"
        " query=input, response=output)",
        f"  {yaml_name}   the training config (dataset_dir: . — run it from this folder)",
        "",
        "Train:",
        f"  cd {out.absolute()}",
        f"  llamafactory-cli train {yaml_name}",
        "",
        "Evaluate the adapter with negbench (the recipe's protocol; --model: the weights it was "
        "trained on):",
        f"  negbench run --model {mpath} --adapter saves/{r.name}/lora/sft --tasks "
        f"'{r.eval_task}' --shots 0"
        + (f" --modes {','.join(r.eval_modes)}" if r.eval_modes else "")
        + (" --chat" if r.eval_chat == "yes" or (r.eval_chat == "auto" and kind == "chat") else ""),
        "",
        "Adapted so that LLaMA-Factory trains on the same text as negbench:",
        *([f"  - {n}" for n in notes] or ["  - nothing: the records are as negbench exports them"]),
        "",
        "Settings LLaMA-Factory cannot express (negbench train applies them; LLaMA-Factory "
        "will not):",
        *([f"  - {c}" for c in remaining] or ["  - none"]),
        "",
    ]
    atomic_write_text(out / README, "\n".join(lines))
    return {
        "dir": str(out),
        "n_records": len(records),
        "dataset": name,
        "template": kind,
        "llamafactory_template": lf_template,
        "notes": notes,
        "not_expressible": remaining,
        "files": {
            "data": str(data_file),
            "dataset_info": str(out / "dataset_info.json"),
            "yaml": str(out / yaml_name),
            "readme": str(out / README),
        },
    }


__all__ = [
    "add_llama_factory_args",
    "run_export",
    "wants_llama_factory",
    "export_llama_factory",
    "ALPACA_COLUMNS",
    "HUB_IDS",
]
