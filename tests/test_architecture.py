"""The import picture (scripts/import-graph.py): no package imports one on a higher floor, no import
cycles between packages or between modules, and every package says its role in one sentence."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import-graph.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_top_level_package_has_a_floor() -> None:
    ig = _script()
    on_disk = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert on_disk == set(ig.PACKAGES)


def test_no_arrow_runs_up_a_floor() -> None:
    ig = _script()
    assert ig.upward_arrows(ig.package_graph()) == []


def test_no_import_cycles() -> None:
    ig = _script()
    assert ig.cycles(ig.package_graph()) == []
    assert ig.cycles(ig.module_graph()) == []


def test_the_checker_sees_function_local_imports_and_cycles(tmp_path: Path) -> None:
    """The checks above can fail: a function-local upward import and a two-module cycle are found."""
    ig = _script()
    for pkg in ig.PACKAGES:
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text('"""x."""\n')
    (tmp_path / "graph" / "a.py").write_text("def f():\n    from evomem import settings\n")
    (tmp_path / "memcore" / "x.py").write_text("from memcore import y\n")
    (tmp_path / "memcore" / "y.py").write_text("import memcore.x\n")
    assert ("graph", "evomem") in ig.upward_arrows(ig.package_graph(tmp_path))
    assert ["memcore.x", "memcore.y"] in ig.cycles(ig.module_graph(tmp_path))


def test_every_package_states_its_role_in_one_sentence() -> None:
    ig = _script()
    for pkg in ig.PACKAGES:
        doc = ast.get_docstring(ast.parse((ROOT / pkg / "__init__.py").read_text()))
        assert doc, f"{pkg}/__init__.py has no docstring"
        first = doc.split("\n\n")[0].strip()
        assert first.endswith((".", ")")) and first.count(". ") == 0, f"{pkg}: say its role in one sentence: {first!r}"


def _import_time_nodes(tree: ast.AST) -> list[ast.AST]:
    """Nodes that run when the module is imported: everything outside function bodies and lambdas."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                todo.extend(child.decorator_list if not isinstance(child, ast.Lambda) else [])
                continue
            todo.append(child)
    return out


def test_no_environment_reads_at_import_time() -> None:
    ig = _script()
    offenders = []
    for pkg in ig.PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            for node in _import_time_nodes(ast.parse(f.read_text())):
                name = (node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else "")
                if name in ("environ", "getenv"):
                    offenders.append(f"{f.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}")
    assert offenders == []


def test_the_env_check_sees_a_module_level_read() -> None:
    tree = ast.parse("import os\nX = os.environ.get('A')\ndef f():\n    return os.getenv('B')\n")
    names = [n.attr for n in _import_time_nodes(tree) if isinstance(n, ast.Attribute)]
    assert "environ" in names and "getenv" not in names
