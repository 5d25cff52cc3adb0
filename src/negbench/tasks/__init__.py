"""Tasks: built-in ones by name (found in the benchmark homes under this package by
:mod:`negbench.scoring.registry`), a JSON-lines file of ``{question, choices, answer}``, or a YAML
task file (:mod:`negbench.tasks.yaml_task`)."""

from __future__ import annotations

from pathlib import Path

from negbench.errors import TaskError
from negbench.scoring.task import Doc, ModeSpec, Rendered, Task, parse_spec
from negbench.scoring.registry import REGISTRY

YAML_SUFFIXES = (".yaml", ".yml")


def register(task: Task) -> Task:
    """Add a task made in code (it then runs by name like a built-in one)."""
    REGISTRY.add("task", task.name, task)
    return task


def all_tasks() -> dict[str, Task]:
    return REGISTRY.entries("task")


def get_task(name: str) -> Task:
    """A task by name, ``name[key=value,…]`` for tasks that take options, or a ``.jsonl`` /
    ``.yaml`` file path."""
    tasks = REGISTRY.table("task")
    if name in tasks:
        return REGISTRY.get("task", name)
    base, opts = parse_spec(name)
    factories = REGISTRY.table("task_factory")
    if opts and base in factories:
        task = REGISTRY.get("task_factory", base)(opts)
        bench = REGISTRY.benchmark("task_factory", base)
        tasks.setdefault(task.name, task)
        if bench:
            REGISTRY.add("task", task.name, tasks[task.name], bench)
        return tasks[task.name]
    if opts and base in tasks:
        raise TaskError(
            f"task '{base}' takes no options",
            where="--tasks",
            fix="tasks with options: " + ", ".join(sorted(factories)),
        )
    if name.endswith(YAML_SUFFIXES):
        from negbench.tasks.yaml_task import load_yaml_task

        return load_yaml_task(name)
    if name.endswith(".jsonl") or Path(name).is_file():
        if not Path(name).is_file():
            raise TaskError(
                f"task file not found: {name}",
                where="--tasks",
                fix="check the path of your JSON-lines task file",
            )
        from negbench.tasks.builtin.tasks import jsonl_task

        return jsonl_task(name)
    from negbench.options import did_you_mean

    known = sorted(t for t in tasks if "[" not in t)
    raise TaskError(
        f"unknown task '{base}'" + did_you_mean(base, known),
        where="--tasks",
        fix="known tasks: "
        + ", ".join(known)
        + " (or a .jsonl file of {question, choices, answer}, or a .yaml task "
        "file); see 'negbench tasks'",
    )


REGISTRY.task_resolver = get_task

__all__ = [
    "Doc",
    "ModeSpec",
    "Rendered",
    "Task",
    "all_tasks",
    "get_task",
    "register",
]
