"""The sequences of a Pipeline's calls that run its steps: ``run()``'s (``run_pipeline``: its
arguments checked, the packages an earlier run left finished first, then its data extracted,
normalized and loaded batch by batch) and ``extract()``'s (``extract_data``); and the packages
a plan extracted for its ``apply()`` discarded (``discard_planned``) before any other run or
plan."""

from __future__ import annotations

import datetime
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from sparkload.common import dlt_arguments as dlt_args
from sparkload.common.package import list_packages
from sparkload.engine.session import start_engine_early
from sparkload.extract.hints import TableHintArgs, refuse_unknown_hints
from sparkload.pipeline.calls import RunArguments, TimeBound
from sparkload.pipeline.drop import RefreshMode
from sparkload.pipeline.extract_step import extract_batch, schedule_jobs
from sparkload.pipeline.load_info import LoadInfo
from sparkload.pipeline.parts import PipelineParts

if TYPE_CHECKING:  # pyspark comes with the engine extra the user installs
    from pyspark.sql import SparkSession

logger = logging.getLogger(__name__)


class RunningPipeline(PipelineParts, Protocol):
    """A pipeline as a run (or a plan) sees it: its steps besides their stages' work."""

    # The engine as the user gave it (a session, a URL, or None: the embedded one).
    _spark_arg: SparkSession | str | None

    @property
    def has_pending_data(self) -> bool: ...
    def normalize(self) -> list[str]: ...
    def load(self) -> LoadInfo: ...


def discard_planned(pipeline: PipelineParts) -> None:
    """Delete the packages a ``plan(extract=True)`` left for its ``apply()``: any other run
    extracts its own data (the plan's state was never committed), so a preview is never
    loaded in place of the data a run is given."""
    for package in list_packages(pipeline._staged):
        if package.is_planned():
            package.delete()


def run_pipeline(
    pipeline: RunningPipeline,
    data: object,
    hints: TableHintArgs,
    *,
    table_name: str | None,
    execution_time: datetime.datetime | str | None,
    restate: Sequence[str] | None,
    start: TimeBound | None,
    end: TimeBound | None,
    refresh: RefreshMode | None,
) -> LoadInfo:
    """``pipeline.run(data, ...)`` (see its docstring); the caller holds the run lock and
    the trace."""
    refuse_unknown_hints(hints, TableHintArgs.__optional_keys__, dlt_args.RUN)
    if data is not None:  # the embedded engine starts while the extract runs
        start_engine_early(pipeline._spark_arg)
    discard_planned(pipeline)
    info = LoadInfo(pipeline.pipeline_name, pipeline.dataset_uri, None)
    if pipeline.has_pending_data:
        pipeline.normalize()
        if any(package.is_normalized() for package in list_packages(pipeline._staged)):
            info = pipeline.load()
            # Nothing loaded: every package was overtaken by another run and discarded
            # (see ``load_step.claim``), so this run extracts its data from the state that run committed.
            if info.loads_ids:
                if data is not None:
                    logger.warning(
                        "pipeline '%s': finished the load packages an earlier run left; the "
                        "data given to this run is not extracted; run the pipeline again to "
                        "load it",
                        pipeline.pipeline_name,
                    )
                return info
    if data is None:
        return info
    args = RunArguments(table_name, hints, execution_time)
    scheduled = schedule_jobs(pipeline, data, args, restate, start, end, refresh=refresh)
    # Batch by batch, so a long backfill commits as it goes and resumes where it stopped.
    discarded = info.notes
    info = LoadInfo(pipeline.pipeline_name, pipeline.dataset_uri, None)
    for index, batch in enumerate(scheduled.batches):
        extract_batch(pipeline, scheduled.jobs, batch, args.clock, scheduled.refresh if index == 0 else None)
        pipeline.normalize()
        info = info.followed_by(pipeline.load())
    info.notes[:0] = [*discarded, *scheduled.notes]
    pipeline._trace().last_load_info = info
    return info


def extract_data(
    pipeline: RunningPipeline,
    data: object,
    hints: TableHintArgs,
    *,
    table_name: str | None,
    execution_time: datetime.datetime | str | None,
    refresh: RefreshMode | None,
) -> str | None:
    """``pipeline.extract(data, ...)`` (see its docstring): one package per batch, the first
    carrying the refresh; the caller holds the run lock and the trace."""
    refuse_unknown_hints(hints, TableHintArgs.__optional_keys__, dlt_args.EXTRACT)
    start_engine_early(pipeline._spark_arg)  # as run()'s
    args = RunArguments(table_name, hints, execution_time)
    scheduled = schedule_jobs(pipeline, data, args, refresh=refresh)
    load_id = None
    for index, batch in enumerate(scheduled.batches):
        load_id = extract_batch(
            pipeline, scheduled.jobs, batch, args.clock, scheduled.refresh if index == 0 else None
        )
    return load_id
