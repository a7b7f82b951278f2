"""The Pipeline is a facade: its methods call the steps (``run_step``, ``plan``,
``extract_step``, ``normalize_step``, ``load_step``), so ``pipeline.py`` stays short, typed
and documented where users read it (``help(sl.Pipeline)``)."""

from __future__ import annotations

import ast
import inspect
import types

import sparkload as sl
from sparkload.cli import pipeline_commands
from sparkload.pipeline import factory
from sparkload.pipeline import pipeline as facade

FACADE_MAX_LINES = 500


def test_the_facade_stays_short() -> None:
    lines = inspect.getsource(facade).count("\n")
    assert lines <= FACADE_MAX_LINES, f"pipeline.py has {lines} lines; move work into a step"


def _any_annotations(module: types.ModuleType) -> list[str]:
    """Where ``module`` annotates a parameter, a return or an attribute with ``Any``."""
    tree = ast.parse(inspect.getsource(module))
    found = []
    for node in ast.walk(tree):
        annotations: list[ast.expr | None] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
            every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
            annotations = [a.annotation for a in every] + [node.returns]
        elif isinstance(node, ast.AnnAssign):
            annotations = [node.annotation]
        for annotation in annotations:
            if annotation is not None and "Any" in ast.unparse(annotation).replace(".", " ").split():
                found.append(f"line {annotation.lineno}: {ast.unparse(annotation)}")
    return found


def test_the_facade_and_the_factory_are_typed_without_any() -> None:
    assert _any_annotations(facade) == []
    assert _any_annotations(factory) == []


def test_every_public_name_of_a_pipeline_is_documented() -> None:
    public = {name: value for name, value in vars(sl.Pipeline).items() if not name.startswith("_")}
    assert {"run", "plan", "extract", "normalize", "load", "drop", "state", "dataset"} <= set(public)
    undocumented = [name for name, value in public.items() if not inspect.getdoc(value)]
    assert undocumented == []
    assert inspect.getdoc(sl.pipeline) and "progress" in (inspect.getdoc(sl.pipeline) or "")


def test_sl_pipeline_and_the_command_line_use_the_factory() -> None:
    assert sl.pipeline is factory.pipeline
    assert pipeline_commands.pipelines_dir_path is factory.pipelines_dir_path
