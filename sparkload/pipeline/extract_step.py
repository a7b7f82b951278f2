"""The extract step of a PipelineParts: the jobs a call extracts and their packages
(``schedule_jobs``); one batch of jobs extracted into a new package
(``extract_batch``): the resources run (``extract/package.py``), the staged files' schema
inferred meanwhile, the state the package will commit built, its manifest written."""

from __future__ import annotations

import copy
import datetime
import functools
import logging
from collections.abc import Iterable, Sequence

from sparkload.common.package import LoadPackage
from sparkload.common.state_record import PipelineState
from sparkload.exceptions import ResourceError
from sparkload.extract.intervals import Span
from sparkload.extract.jobs import ExtractedTable, ExtractJob
from sparkload.extract.manifest import ExtractManifest
from sparkload.extract.package import add_empty_replace_tables, add_time_ranges, extract_package
from sparkload.load import destructive
from sparkload.normalize.json_schema import SchemaInference
from sparkload.pipeline import resource_tables, restatement, schedule, working_folder
from sparkload.pipeline import schema as schema_view
from sparkload.pipeline import state as state_store
from sparkload.pipeline.calls import RunArguments, new_load_id
from sparkload.pipeline.drop import Refresh, RefreshMode, plan_refresh, refresh_mode
from sparkload.pipeline.extract_jobs import extract_jobs
from sparkload.pipeline.parts import PipelineParts
from sparkload.pipeline.step import pipeline_step

logger = logging.getLogger(__name__)


def extract_batch(
    pipeline: PipelineParts,
    jobs: list[ExtractJob],
    batch: schedule.Batch,
    clock: datetime.datetime,
    refresh: Refresh | None = None,
) -> str:
    """Extract ``batch`` (of the run's ``jobs``) into a new package of ``pipeline``, its
    state based on the pending or committed one, or on ``refresh``'s; returns the load id."""
    trace = pipeline._trace()
    load_id = new_load_id()
    package = LoadPackage(pipeline._extracted, load_id)
    with pipeline_step(
        "extract",
        load_id,
        trace=trace,
        progress=pipeline.progress,
        cleanup=functools.partial(working_folder.delete_extracted, pipeline, package),
    ) as step:
        # A refresh's package starts from the state without what it drops.
        base = refresh.state if refresh is not None else working_folder.extract_base(pipeline)
        working_state = copy.deepcopy(base)
        engine_files = working_folder.engine_files(pipeline, package)
        inference = SchemaInference(pipeline.spark, engine_files.engine_path)
        try:
            tables = extract_package(
                package,
                batch.jobs,
                pipeline=pipeline,
                state=working_state,
                windows=batch.windows,
                clock=clock,
                progress=pipeline.progress,
                on_file_closed=inference.file_closed,
                spark=lambda: pipeline.spark,
                engine_files=engine_files,
            )
        except BaseException:
            inference.cancel()
            raise
        step.tables = {name: {"rows": table.rows} for name, table in tables.items()}
        for name, schema in inference.results().items():
            tables[name].json_schema = schema
        pipeline._schema_files.apply_import(tables)
        schema_view.with_recorded_not_null(working_state, tables.values())
        schema_view.with_recorded_keys(working_state, tables.values())
        schedule.refuse_bad_table_hints(tables.values())
        add_empty_replace_tables(
            batch.jobs, tables, batch.windows, resource_tables.root_tables(working_state)
        )
        add_time_ranges(batch.jobs, tables, batch.windows)
        schedule.record_windows(working_state, batch, schedule.sources_by_resource(jobs))
        # The hints first: what keys a table keeps depends on whether it was loaded before.
        schema_view.record(working_state, tables.values())
        resource_tables.record(working_state, batch.jobs, tables.values())
        _record_keys(working_state, tables.values())
        ExtractManifest(
            load_id=load_id,
            pipeline_name=pipeline.pipeline_name,
            execution_time=clock.isoformat(),
            tables=list(tables.values()),
            state=state_store.dumps_state(state_store.next_version(base, working_state)).decode(),
            base_version=int(base["_state_version"]),
            refresh=refresh.manifest() if refresh is not None else None,
        ).write(package)
    return load_id


def _record_keys(state: PipelineState, tables: Iterable[ExtractedTable]) -> None:
    """Remember the keys each merged table is loaded with: changing them is destructive.
    A table rebuilt by another disposition (replace) starts over: what it was is forgotten."""
    for table in tables:
        if table.rows and table.hints.disposition == "merge":
            keys = destructive.keys_of(table.name, table.hints)
            state.setdefault(destructive.KEYS_STATE, {})[table.name] = keys
        elif table.hints.rebuilds:
            state.get(destructive.KEYS_STATE, {}).pop(table.name, None)


def schedule_jobs(
    pipeline: PipelineParts,
    data: object,
    args: RunArguments,
    restate: Sequence[str] | None = None,
    start: object = None,
    end: object = None,
    refresh: RefreshMode | None = None,
) -> schedule.Scheduled:
    """The resources of ``pipeline`` to extract and the packages to extract them into; with a refresh,
    the first package's resources and base state are those after its drop."""
    mode = refresh_mode(refresh) or pipeline.refresh
    clock = args.clock
    with pipeline_step("extract", None, trace=pipeline._trace(), timed=False):
        jobs = extract_jobs(data, pipeline.pipeline_name, args.table_name, args.hints)
        schedule.refuse_time_ranges_without_intervals(jobs)
        schedule.refuse_bad_hint_combinations(jobs)
    # The engine, started as the run began, is waited for here, outside the step: one
    # that could not start fails the run with its own error, as it always did.
    pipeline.spark  # noqa: B018
    with pipeline_step("extract", None, trace=pipeline._trace(), timed=False):
        counted_from = working_folder.extract_base(pipeline)
        restated = None
        # The run's own range: a restatement gives each restated resource its range instead.
        span = Span.of(start, end) if not restate and (start is not None or end is not None) else None
        if restate:
            restated = restatement.restate(
                jobs, restate, start, end, counted_from, clock, pipeline_name=pipeline.pipeline_name
            )
            jobs, counted_from = restated.jobs, restated.state
            for note in restated.notes:
                logger.warning(note)
        refreshing = None
        if mode is not None:
            if restate:
                raise ResourceError("refresh= and restate= do not go together: a refresh reloads all")
            refreshing = plan_refresh(mode, counted_from, pipeline.destination_dataset, jobs)
            counted_from = refreshing.state
        spans = restated.spans() if restated is not None else None
        batches = schedule.batches(jobs, counted_from, clock, span, spans)
        if refreshing is not None and batches:
            batches[0] = schedule.Batch(refreshing.jobs(batches[0].jobs), batches[0].windows)
        return schedule.Scheduled(jobs, batches, restated, refresh=refreshing)
