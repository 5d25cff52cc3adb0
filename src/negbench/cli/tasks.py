"""``negbench tasks``: list the tasks (every benchmark home's, found by the registry) and their
scoring modes."""
from __future__ import annotations


def add_parser(sub) -> None:
    sub.add_parser("tasks", help="list tasks and their scoring modes").set_defaults(func=run)


def run(args=None) -> int:
    from negbench.tasks import all_tasks
    for t in all_tasks().values():
        print(f"{t.name}: {t.summary}")
        for name, spec in t.modes.items():
            star = "*" if name in t.default_modes else " "
            print(f"  {star} {name:<12} {spec.formulation.kind:<14} {spec.summary}")
    print("\n* default mode.  A .jsonl file of {question, choices, answer} is also a task, and so "
          "is a .yaml task file (docs/yaml_tasks.md).")
    return 0
