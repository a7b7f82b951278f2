"""The extract step of a Pipeline: one batch of jobs extracted into a new package
(``extract_batch``): the resources run (``extract/package.py``), the staged files' schema
inferred meanwhile, the state the package will commit built, its manifest written."""

from __future__ import annotations

import copy
import datetime
import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING

from sparkload.common.package import LoadPackage
from sparkload.common.state_record import PipelineState
from sparkload.extract.jobs import ExtractedTable, ExtractJob
from sparkload.extract.manifest import ExtractManifest
from sparkload.extract.package import add_empty_replace_tables, add_time_ranges, extract_package
from sparkload.load import destructive
from sparkload.normalize.json_schema import SchemaInference
from sparkload.pipeline import resource_tables, schedule
from sparkload.pipeline import schema as schema_view
from sparkload.pipeline import state as state_store
from sparkload.pipeline.calls import new_load_id
from sparkload.pipeline.drop import Refresh
from sparkload.pipeline.step import pipeline_step

if TYPE_CHECKING:
    from sparkload.pipeline.pipeline import Pipeline


def extract_batch(
    pipeline: Pipeline,
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
        cleanup=functools.partial(pipeline._delete_extracted, package),
    ) as step:
        # A refresh's package starts from the state without what it drops.
        base = refresh.state if refresh is not None else pipeline._extract_base()
        working_state = copy.deepcopy(base)
        engine_files = pipeline._engine_files(package)
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
        schedule.refuse_bad_table_hints(tables.values())
        add_empty_replace_tables(
            batch.jobs, tables, batch.windows, resource_tables.root_tables(working_state)
        )
        add_time_ranges(batch.jobs, tables, batch.windows)
        schedule.record_windows(working_state, batch, schedule.sources_by_resource(jobs))
        resource_tables.record(working_state, batch.jobs, tables.values())
        _record_keys(working_state, tables.values())
        schema_view.record(working_state, tables.values())
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
