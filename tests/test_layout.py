"""The package's shape: no import circles among negbench's modules (every import counted, also
those inside functions), no module importing another module's private names, ``import negbench``
light, and one folder per benchmark found by the registry."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from locations import ROOT

SRC = ROOT / "src"
PKG = "negbench"


def _modules() -> dict[str, Path]:
    mods = {}
    for f in (SRC / PKG).rglob("*.py"):
        parts = list(f.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = f
    return mods


def _imports(mod: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """The negbench modules ``mod`` imports (``from a.b import c`` counts a.b.c when it is a module,
    and a.b itself); a module importing its own parent package is not an edge."""

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    is_pkg = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = mod.split(".") if is_pkg else mod.split(".")[:-1]
                here = here[: len(here) - (node.level - 1)]
                base = ".".join(here + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        for t in targets:
            if t.split(".")[0] != PKG:
                continue
            r = resolve(t)
            if r and r != mod and not mod.startswith(r + "."):
                out.add(r)
    return out


def import_circles() -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    mods = _modules()
    graph = {m: _imports(m, f, mods) for m, f in mods.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            strong(v)
    return comps


def test_no_import_circles():
    circles = import_circles()
    assert circles == [], "import circles: " + "; ".join(" <-> ".join(c) for c in circles)


def test_the_circle_check_finds_a_circle(tmp_path, monkeypatch):
    """The check itself works: two modules that import each other are a circle."""
    pkg = tmp_path / PKG
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from negbench.b import g\n")
    (pkg / "b.py").write_text("from negbench import a\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path)
    assert import_circles() == [["negbench.a", "negbench.b"]]


#: negbench's layers, bottom to top (docs/architecture.md): a layer imports only layers of a lower
#: rank; layers of one rank do not import each other.  ``negbench/__init__.py`` (the Python API's
#: face, names imported on first use) and ``__main__.py`` stand outside.
LAYERS: list[tuple[str, ...]] = [
    ("errors",),
    ("options", "hub", "records"),
    ("files",),
    ("core",),
    ("backends",),
    ("scoring",),
    ("tasks",),
    ("evaluation",),
    ("report", "builders", "analyze", "integrations"),
    ("train", "profile"),
    ("cli",),
]


def _layer(mod: str) -> str | None:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 and parts[1] != "__main__" else None


def upward_imports(mods: dict[str, Path] | None = None) -> list[str]:
    """Every import (module level, inside a function or under TYPE_CHECKING) that goes to a layer
    not below the importing one."""
    mods = mods or _modules()
    rank = {name: i for i, names in enumerate(LAYERS) for name in names}
    bad = []
    for mod, path in mods.items():
        la = _layer(mod)
        if la is None:
            continue
        for target in sorted(_imports(mod, path, mods)):
            lb = _layer(target)
            if lb is None or lb == la:
                continue
            if la not in rank or lb not in rank:
                bad.append(
                    f"{mod} -> {target}: layer {la if la not in rank else lb!r} is not in LAYERS"
                )
            elif rank[lb] >= rank[la]:
                bad.append(f"{mod} -> {target} ({la} imports {lb}, which is not below it)")
    return bad


def test_every_import_goes_down_a_layer():
    bad = upward_imports()
    assert bad == [], "imports that go up a layer:\n" + "\n".join(bad)


def test_the_layer_check_finds_an_upward_import(tmp_path, monkeypatch):
    """A function-level import of a higher layer is found, as is one under TYPE_CHECKING."""
    pkg = tmp_path / PKG
    for sub in ("core", "scoring", "cli"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "a.py").write_text("def f():\n    from negbench.scoring import b\n")
    (pkg / "scoring" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from negbench.cli import c\n"
    )
    (pkg / "cli" / "c.py").write_text("from negbench.core import a\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path)
    bad = upward_imports()
    assert {line.split(" (")[1] for line in bad} == {
        "core imports scoring, which is not below it)",
        "scoring imports cli, which is not below it)",
    }
    assert (
        "negbench.core.a -> negbench.scoring.b (core imports scoring, which is not below it)" in bad
    )


def test_every_layer_is_declared():
    """A new sub-package or top-level module gets its place in LAYERS (and docs/architecture.md)."""
    ranked = {n for names in LAYERS for n in names}
    found = {p.name for p in (SRC / PKG).iterdir() if (p / "__init__.py").is_file()}
    found |= {p.stem for p in (SRC / PKG).glob("*.py") if not p.stem.startswith("__")}
    assert found == ranked
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert [n for n in sorted(ranked) if f"`{n}" not in doc] == []


def test_no_private_names_imported_across_modules():
    bad = []
    for mod, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PKG):
                bad += [
                    f"{mod}: from {node.module} import {a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    assert bad == []


def test_import_negbench_is_light():
    """The public names are there without torch, transformers or numpy being imported."""
    code = (
        "import sys, negbench\n"
        "names = [negbench.evaluate, negbench.open_model, negbench.Session, negbench.Results,"
        " negbench.ModelSpec, negbench.__version__]\n"
        "print(sorted(m for m in ('torch', 'transformers', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_benchmark_home_registers_itself():
    from negbench.scoring.registry import REGISTRY, benchmark_packages

    homes = {m.__name__.rpartition(".")[2] for m in benchmark_packages() if hasattr(m, "register")}
    assert {
        "builtin",
        "nubench",
        "konubench",
        "condaqa",
        "notadataset",
        "jsts_neg",
        "jnli_neg",
        "scone",
    } <= homes
    for name in (
        "nubench",
        "konubench",
        "condaqa",
        "notadataset",
        "jsts-neg",
        "jnli-neg",
        "scone-nli",
        "scone-nlg",
        "negation-mini",
        "truefalse-mini",
    ):
        assert REGISTRY.get("paper_tables", name) is not None, name
    for folder in (
        "nubench",
        "konubench",
        "condaqa",
        "notadataset",
        "jsts_neg",
        "jnli_neg",
        "scone",
    ):
        assert (SRC / PKG / "tasks" / folder / "README.md").is_file(), folder


def test_tests_are_laid_out_like_src():
    """Every test folder under tests/ names a package of src/negbench (or a benchmark home)."""
    tests = ROOT / "tests"
    for d in tests.rglob("test_*.py"):
        rel = d.parent.relative_to(tests)
        if rel.parts:
            assert (SRC / PKG / rel).is_dir(), f"{d}: no src/negbench/{rel}"


def test_no_script_hides_a_standard_module():
    """A script's folder comes first on sys.path: benchmarks/profile.py once hid the standard
    ``profile`` module and broke every benchmark that loads a model (torch imports cProfile)."""
    scripts = [p for d in ("benchmarks", "tools", ".ci") for p in (ROOT / d).rglob("*.py")]
    assert scripts
    assert [str(p) for p in scripts if p.stem in sys.stdlib_module_names] == []


def test_mypy_checks_every_module():
    """No module of negbench is excluded from the type check (CI runs mypy over src/negbench)."""
    import tomllib

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert cfg["files"] == ["src/negbench"]
    excluded = [
        o["module"]
        for o in cfg.get("overrides", [])
        if o.get("ignore_errors") and any(str(m).startswith("negbench") for m in o["module"])
    ]
    assert excluded == [] and "exclude" not in cfg
