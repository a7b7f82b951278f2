"""``sl.current``: the pipeline, source state and resource state of the running extraction."""

from __future__ import annotations

import contextlib
import contextvars
import datetime
from collections.abc import Iterator, Mapping
from typing import Any

from sparkload.exceptions import SparkloadError

_pipeline: contextvars.ContextVar[Any] = contextvars.ContextVar("sparkload_pipeline", default=None)
_state: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "sparkload_state", default=None
)
_source: contextvars.ContextVar[str | None] = contextvars.ContextVar("sparkload_source", default=None)
_resource: contextvars.ContextVar[str | None] = contextvars.ContextVar("sparkload_resource", default=None)
# The time window each interval resource loads in this package, by resource name.
_windows: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar(
    "sparkload_windows", default=None
)

# The run's clock (its ``execution_time``).
_clock: contextvars.ContextVar[datetime.datetime | None] = contextvars.ContextVar(
    "sparkload_clock", default=None
)


@contextlib.contextmanager
def extraction(
    pipeline: Any,
    state: dict[str, Any],
    windows: Mapping[str, Any] | None = None,
    clock: datetime.datetime | None = None,
) -> Iterator[None]:
    """Make ``pipeline``, the state being extracted, the interval resources' windows and the
    run's clock visible to resources."""
    tokens = (_pipeline.set(pipeline), _state.set(state), _windows.set(windows), _clock.set(clock))
    try:
        yield
    finally:
        _pipeline.reset(tokens[0])
        _state.reset(tokens[1])
        _windows.reset(tokens[2])
        _clock.reset(tokens[3])


def execution_time() -> datetime.datetime:
    """The running extraction's ``execution_time`` (now, outside a run)."""
    return _clock.get() or datetime.datetime.now(datetime.timezone.utc)


def interval_window(resource_name: str) -> Any:
    """The window an interval resource loads in the package being extracted (or None)."""
    return (_windows.get() or {}).get(resource_name)


@contextlib.contextmanager
def resource_scope(source_name: str, resource_name: str) -> Iterator[None]:
    tokens = (_source.set(source_name), _resource.set(resource_name))
    try:
        yield
    finally:
        _source.reset(tokens[0])
        _resource.reset(tokens[1])


def extracting_pipeline() -> Any:
    """The pipeline whose extraction is running, or None."""
    return _pipeline.get()


def pipeline() -> Any:
    """The pipeline that is running (or was made last in this process)."""
    active = _pipeline.get()
    if active is None:
        from sparkload.pipeline.pipeline import last_pipeline

        active = last_pipeline()
    if active is None:
        raise SparkloadError("no pipeline is active: create one with sl.pipeline(...)")
    return active


def state() -> dict[str, Any]:
    """The whole pipeline state as it will be committed with this load."""
    current = _state.get()
    if current is None:
        raise SparkloadError("pipeline state is available only while a pipeline extracts")
    return current


def source_state() -> dict[str, Any]:
    """State shared by the resources of the source being extracted."""
    source = _source.get()
    if source is None:
        raise SparkloadError("source_state() is available only inside a running resource")
    return state().setdefault("sources", {}).setdefault(source, {})


def resource_state(resource_name: str | None = None) -> dict[str, Any]:
    """State private to the resource being extracted (or to ``resource_name``)."""
    name = resource_name or _resource.get()
    if name is None:
        raise SparkloadError("resource_state() is available only inside a running resource")
    return source_state().setdefault("resources", {}).setdefault(name, {})
