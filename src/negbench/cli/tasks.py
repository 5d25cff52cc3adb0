"""``negbench tasks``: list the tasks (every benchmark home's, found by the registry), their
scoring modes, and for each benchmark whether its data is here and where it is looked for."""

from __future__ import annotations


def add_parser(sub) -> None:
    p = sub.add_parser(
        "tasks",
        help="list tasks, their scoring modes and where their data is",
        description="List the tasks and their scoring modes; for each benchmark, "
        "whether its data is found here and where it is looked for (its variable, "
        "$NEGBENCH_DATA/<folder>, the local data folder, its hub id).",
    )
    p.set_defaults(func=run)


def data_line(source) -> str:
    """``data: found at …`` or ``data: NOT FOUND — looked in …`` for a task's DataSource."""
    if source is None:
        return "data: built in"
    found, where = source.status()
    return f"data: found — {where}" if found else f"data: NOT FOUND — {where}"


def run(args=None) -> int:
    from negbench.tasks import all_tasks

    seen: dict[int, str] = {}
    missing = 0
    for t in all_tasks().values():
        src = t.data
        if src is None or id(src) not in seen:
            line = data_line(src)
            if src is not None:
                seen[id(src)] = line
                missing += line.startswith("data: NOT")
        else:
            line = seen[id(src)]
        print(f"{t.name}: {t.summary}")
        print(f"    {line}")
        for name, spec in t.modes.items():
            star = "*" if name in t.default_modes else " "
            print(f"  {star} {name:<12} {spec.formulation.kind:<14} {spec.summary}")
    print(
        "\n* default mode.  A .jsonl file of {question, choices, answer} is also a task, and so "
        "is a .yaml task file (docs/yaml_tasks.md)."
    )
    if missing:
        print(
            f"{missing} data source(s) not found here: download each release from its official "
            "source (README, 'Benchmarks') and set its variable or $NEGBENCH_DATA."
        )
    return 0
