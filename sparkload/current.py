"""``sl.current``: the pipeline, state and clock of the running extraction, read-only.

As ``dlt.current``: inside a resource, ``sl.current.resource_state()`` is the resource's
own state (committed with the data it yields), ``source_state()`` the state its source
shares, and ``pipeline()`` the pipeline running it (outside a run, the one made last).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, cast

from sparkload.common import context
from sparkload.common.state_record import PipelineState

if TYPE_CHECKING:
    from sparkload.pipeline.pipeline import Pipeline

__all__ = ["execution_time", "pipeline", "resource_state", "source_state", "state"]


def pipeline() -> Pipeline:
    """The pipeline that is running (or was made last in this process)."""
    return cast("Pipeline", context.active_pipeline())


def state() -> PipelineState:
    """The whole pipeline state as it will be committed with this load."""
    return context.state()


def source_state() -> dict[str, Any]:
    """State shared by the resources of the source being extracted."""
    return context.source_state()


def resource_state(resource_name: str | None = None) -> dict[str, Any]:
    """State private to the resource being extracted (or to ``resource_name``)."""
    return context.resource_state(resource_name)


def execution_time() -> datetime.datetime:
    """The running extraction's ``execution_time`` (now, outside a run)."""
    return context.execution_time()
