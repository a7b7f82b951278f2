"""The extract stage's entry point: the resources of one package run into its folder
(``extract_package``), and the tables the package holds beside those they filled: the
empty ones a replace resource or an interval window still rebuilds
(``add_empty_replace_tables``) and the window each interval table replaces
(``add_time_ranges``). The pipeline adds the schema inference and writes the manifest."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from sparkload.common import context
from sparkload.common.hints import TimeRangeSpec
from sparkload.common.naming import normalize_table_name
from sparkload.common.package import LoadPackage
from sparkload.common.state_record import PipelineState
from sparkload.common.time import Window
from sparkload.extract.extractor import Extractor, ExtractProgress
from sparkload.extract.jobs import ExtractedTable, ExtractJob, every_entry
from sparkload.extract.load_hints import load_hints, normalize_column_path
from sparkload.extract.storage import EngineFiles

if TYPE_CHECKING:  # pyspark comes with the engine extra the user installs
    from pyspark.sql import SparkSession


def extract_package(
    package: LoadPackage,
    jobs: list[ExtractJob],
    *,
    pipeline: context.PipelineView,
    state: PipelineState,
    windows: Mapping[str, Window],
    clock: datetime.datetime,
    progress: ExtractProgress,
    on_file_closed: Callable[[str, Path], None],
    spark: Callable[[], SparkSession],
    engine_files: EngineFiles,
) -> dict[str, ExtractedTable]:
    """Run ``jobs`` into ``package``'s extracted folder, in the run context of ``pipeline``
    with ``state`` (which the resources change), ``windows`` and ``clock``; returns the
    tables filled, by name. ``on_file_closed`` is told each staged file once written;
    ``spark`` starts the engine for resources that need it, ``engine_files`` says where it
    reads the staged files."""
    with context.extraction(pipeline, state, windows, clock):
        extractor = Extractor(
            package.extracted_dir,
            progress,
            on_file_closed,
            spark=spark,
            engine_files=engine_files,
        )
        return extractor.run(jobs)


def add_empty_replace_tables(
    jobs: list[ExtractJob],
    tables: dict[str, ExtractedTable],
    windows: Mapping[str, Window],
    recorded: Mapping[tuple[str, str], list[str]],
) -> None:
    """A replace resource empties every table it filled before that it yields nothing for
    now, as in dlt: its own table, the tables its rows were routed to (a table-name
    function, ``sl.mark.with_table_name``), which the state records (``recorded``: the
    root tables of each resource, by source and resource name). An interval resource that
    yielded nothing for its window still empties the window."""
    for entry in every_entry(jobs):
        resource = entry.resource
        names = []
        if resource.hints.starts_over:
            names = recorded.get((entry.source_name, resource.name), [])
        if (resource.hints.starts_over or resource.name in windows) and not callable(resource.table_name):
            names = [*names, normalize_table_name(str(resource.table_name))]
        for name in names:
            if name not in tables:
                hints = load_hints(resource.hints, entry.root_key, entry.max_table_nesting)
                tables[name] = ExtractedTable(name, resource.name, hints, 0)


def add_time_ranges(
    jobs: list[ExtractJob], tables: dict[str, ExtractedTable], windows: Mapping[str, Window]
) -> None:
    """Tell the loader which window each interval resource's tables replace."""
    specs = {entry.resource.name: entry.resource.intervals for entry in every_entry(jobs)}
    for table in tables.values():
        window = windows.get(table.resource)
        spec = specs.get(table.resource)
        if window is None or spec is None:
            continue
        time_range = TimeRangeSpec(
            normalize_column_path(spec.time_column), window.start, window.end, spec.time_column_format
        )
        table.hints = dataclasses.replace(table.hints, time_range=time_range)
