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
