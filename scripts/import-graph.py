#!/usr/bin/env python3
"""Print the package import picture: arrows between top-level packages (from the AST, function-local
imports included), floors, and any arrow that runs up a floor or closes a cycle.

    .venv/bin/python scripts/import-graph.py
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Lowest floor first. A package may import packages on its own floor or below, never above; within a
# floor arrows are allowed but must not form a cycle.
FLOORS: list[tuple[str, ...]] = [
    ("graph", "llmclients"),  # the data model and storage; model clients
    ("retrieval",),  # finding a request's evidence: seed routes, traversal, the bundle and its rendering
    ("memcore", "scoring"),  # the Memory facade; scoring answers (F1, the LLM judge)
    ("induction", "training_data"),  # writing memories; building training sets
    ("policy",),  # the Reasoning-State policy (trains on training_data)
    ("serving",),  # answering and the HTTP API
    ("evaluation",),  # benchmarks over all of the above
    ("evomem",),  # the CLI and its settings
]
PACKAGES = [p for floor in FLOORS for p in floor]
FLOOR_OF = {p: i for i, floor in enumerate(FLOORS) for p in floor}


def _imported(path: Path, module: str, modules: set[str]) -> set[str]:
    """Project modules imported anywhere in the file (top level and inside functions). ``from pkg import
    mod`` counts as importing ``pkg.mod`` only: a submodule reaching its own package is not an arrow."""
    out: set[str] = set()
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".")[: -node.level]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            subs = {f"{name}.{a.name}" for a in node.names} & modules  # `from pkg import submodule`
            out.update(subs or {name})
    return out


def module_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> project modules it imports (only modules that exist as files in PACKAGES)."""
    files = {}
    for pkg in PACKAGES:
        for f in (root / pkg).rglob("*.py"):
            parts = list(f.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            files[".".join(parts)] = f
    graph: dict[str, set[str]] = {}
    for mod, f in files.items():
        is_pkg = f.name == "__init__.py"
        names = _imported(f, mod + (".__init__" if is_pkg else ""), set(files))
        graph[mod] = {n for n in names if n in files and n != mod}
    return graph


def package_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """top-level package -> top-level packages it imports."""
    out: dict[str, set[str]] = defaultdict(set)
    for mod, deps in module_graph(root).items():
        for d in deps:
            a, b = mod.split(".")[0], d.split(".")[0]
            if a != b:
                out[a].add(b)
    return dict(out)


def upward_arrows(pkgs: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a, deps in pkgs.items() for b in deps if FLOOR_OF[b] > FLOOR_OF[a])


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
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
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main() -> int:
    pkgs = package_graph()
    mods = module_graph()
    for i, floor in reversed(list(enumerate(FLOORS))):
        for p in floor:
            print(f"floor {i}  {p:14s} -> {', '.join(sorted(pkgs.get(p, ()))) or '-'}")
    print(f"{sum(len(v) for v in pkgs.values())} arrows between packages")
    up, pc, mc = upward_arrows(pkgs), cycles(pkgs), cycles(mods)
    for a, b in up:
        print(f"UPWARD: {a} -> {b}")
    for c in pc + mc:
        print(f"CYCLE: {' <-> '.join(c)}")
    return 1 if up or pc or mc else 0


if __name__ == "__main__":
    raise SystemExit(main())
