"""``negbench export NAME``: a benchmark's training data as Alpaca JSON lines (the exporters the
benchmark homes register), or a LLaMA-Factory dataset (``--llama-factory``)."""

from __future__ import annotations


def add_parser(sub) -> None:
    x = sub.add_parser(
        "export",
        help="write benchmark training data as Alpaca JSON lines",
        description="Alpaca records (instruction, input, output) for LoRA "
        "fine-tuning, built from a benchmark's data as its paper did.",
    )
    x.add_argument("name", nargs="?", help="exporter (omit to list them)")
    x.add_argument("--split", default=None, help="data split (default: the exporter's)")
    x.add_argument("--out", default=None, help="output .jsonl (default: <name>.<split>.jsonl)")
    from negbench.train.export import add_llama_factory_args

    add_llama_factory_args(x)
    x.set_defaults(func=run)


def run(args) -> int:
    from negbench.tasks.alpaca import exporters, get_exporter, write_alpaca
    from negbench.train.export import run_export, wants_llama_factory

    if wants_llama_factory(args):
        return run_export(args)
    if not args.name:
        ex = exporters()
        w = max((len(n) for n in ex), default=0)
        for e in ex.values():
            print(f"{e.name:<{w}}  {e.summary} (default split: {e.default_split})")
        return 0
    e = get_exporter(args.name)
    split = args.split or e.default_split
    from negbench.files import check_file_target

    out = check_file_target(args.out or f"{args.name}.{split}.jsonl")  # before reading the data
    records = e.records(split)
    out = write_alpaca(records, out)
    print(f"{len(records)} records -> {out}")
    return 0
