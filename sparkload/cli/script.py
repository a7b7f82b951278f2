"""A user's pipeline script, imported for ``sparkload plan|apply``.

A pipeline's resources live in the script that runs it, so the command imports the script
as a module, which does not run its ``if __name__ == "__main__":`` block, and takes the
``sl.pipeline(...)`` and the data (a source or a resource) it defines at module level; a
script with one source and the resources it bundles means the source.

The module is named after the file, as running the script names its config section
(``sources.<script name>.…``), and the script's folder comes first on ``sys.path``, as
``python script.py`` puts it, so the script's own imports resolve the same way.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeGuard

from sparkload.exceptions import SparkloadError
from sparkload.extract.resource import Resource
from sparkload.extract.source import Source
from sparkload.pipeline.pipeline import Pipeline


@dataclasses.dataclass(frozen=True)
class ScriptObjects:
    pipeline: Pipeline
    data: Source | Resource
    # The module-level names they were found under, for messages.
    pipeline_name: str
    data_name: str


def load_script(path: Path, pipeline_var: str | None, data_var: str | None) -> ScriptObjects:
    """Import ``path`` and pick its pipeline and data: the ones named, else the only one."""
    module = _import(path)
    names = {name: value for name, value in vars(module).items() if not name.startswith("_")}
    pipeline_name, pipeline = _pick(
        path, names, pipeline_var, "--pipeline", ("pipeline", "pipelines"), _is_pipeline
    )
    # A source bundles the resources defined beside it: a script with one source means it.
    sources = {name: value for name, value in names.items() if isinstance(value, Source)}
    data_name, data = _pick(
        path,
        sources if data_var is None and len(sources) == 1 else names,
        data_var,
        "--data",
        ("source or resource", "sources and resources"),
        _is_data,
    )
    if not _is_data(data):
        if not callable(data):
            raise SparkloadError(f"{path}: {data_name} is not a source or resource")
        # A source function named with --data: called as the script would call it, its
        # arguments from config (dlt's way).
        data = data()
        if not _is_data(data):
            raise SparkloadError(f"{path}: {data_name}() returned no source or resource")
    if not isinstance(pipeline, Pipeline):
        raise SparkloadError(f"{path}: {pipeline_name} is not a pipeline, but {type(pipeline).__name__}")
    return ScriptObjects(pipeline, data, pipeline_name, data_name)


def _import(path: Path) -> types.ModuleType:
    if not path.is_file():
        raise SparkloadError(f"no script at {path}")
    name = path.stem
    if name in sys.modules:
        raise SparkloadError(
            f"{path}: a module named '{name}' is already imported; rename the script to import it"
        )
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SparkloadError(f"{path} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # what dataclasses and pickling in the script look up
    sys.path.insert(0, str(path.resolve().parent))
    try:
        spec.loader.exec_module(module)
    except SparkloadError:
        raise
    except Exception as exc:
        raise SparkloadError(f"{path}: importing it failed: {type(exc).__name__}: {exc}") from exc
    return module


def _pick(
    path: Path,
    names: Mapping[str, object],
    chosen: str | None,
    flag: str,
    what: tuple[str, str],
    fits: Callable[[object], bool],
) -> tuple[str, object]:
    if chosen is not None:
        if chosen not in names:
            raise SparkloadError(f"{path} has no module-level name '{chosen}' ({flag})")
        return chosen, names[chosen]
    candidates = sorted(name for name, value in names.items() if fits(value))
    if len(candidates) == 1:
        return candidates[0], names[candidates[0]]
    if not candidates:
        raise SparkloadError(
            f"{path} defines no {what[0]} at module level; define it outside the "
            f'`if __name__ == "__main__":` block, or name it with {flag}'
        )
    raise SparkloadError(
        f"{path} defines several {what[1]}: {', '.join(candidates)}; choose one with {flag} NAME"
    )


def _is_pipeline(value: object) -> bool:
    return isinstance(value, Pipeline)


def _is_data(value: object) -> TypeGuard[Source | Resource]:
    return isinstance(value, (Source, Resource))
