"""The code's shape that the layering relies on (the layers themselves are checked by
``lint-imports`` against the contract in pyproject.toml, in ``nox -s lint``)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import sparkload as sl

PACKAGE = Path(sl.__file__).parent


def _imports_inside_functions(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.ImportFrom) and (
                node.level or (node.module or "").startswith("sparkload")
            ):
                found.append((node.lineno, node.module or "."))
            elif isinstance(node, ast.Import):
                found += [
                    (node.lineno, alias.name) for alias in node.names if alias.name.startswith("sparkload")
                ]
    return found


def test_no_module_imports_sparkload_inside_a_function() -> None:
    """An import inside a function is how a cycle between modules hides; sparkload's
    modules import each other at the top only (optional third-party packages may load late)."""
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, module in _imports_inside_functions(ast.parse(path.read_text()))
    ]
    assert offenders == []


def test_sl_current_only_reads() -> None:
    """``sl.current`` is read-only: the run context is set by the pipeline alone."""
    readers = {"execution_time", "pipeline", "resource_state", "source_state", "state"}
    functions = {
        name
        for name, value in vars(sl.current).items()
        if inspect.isfunction(value) and value.__module__ == sl.current.__name__
    }
    assert functions == readers
    assert set(sl.current.__all__) == readers


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_modules(tree: ast.AST, modules: set[str]) -> set[str]:
    """The sparkload modules a module imports anywhere, type-only imports included: ``from
    package import module`` counts as the module, not the package (Python imports a package's
    ``__init__`` for any of its modules, which is no dependency on the package's contents)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sparkload"):
            named = {f"{node.module}.{alias.name}" for alias in node.names} & modules
            found |= named or {node.module or ""}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in modules}
    return found & modules


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in graph[module]:
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in graph:
        if module not in index:
            visit(module)
    return cycles


def test_no_import_circle() -> None:
    """Modules import each other one way only, type-only imports included: a
    circle closed by ``if TYPE_CHECKING`` still ties the modules together (a renderer next to
    the class it renders, a Protocol for what a module needs of the pipeline)."""
    paths = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
    modules = set(paths)
    graph = {
        name: _imported_modules(ast.parse(path.read_text()), modules) - {name} for name, path in paths.items()
    }
    assert _cycles(graph) == []
