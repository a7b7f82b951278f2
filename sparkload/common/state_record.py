"""The pipeline state document: every key it holds, what the key holds and which stage
writes it.

The state is one JSON document per pipeline, committed to the destination with each load
(``pipeline/state.py`` reads and writes it) and cached in the working folder. Stages fill
their parts of it while a package is extracted; the pipeline bumps the version when the
content changed. ``pipeline.state`` gives it to users as dlt's ``pipeline.state`` does.

Source and resource states also hold the keys users write through ``sl.current.
source_state()`` and ``sl.current.resource_state()``: those accessors hand them out as
plain dicts, so only sparkload's own keys are named here.
"""

from __future__ import annotations

import datetime
from typing import Final, TypedDict

# The keys of the document, for the code that reaches them through a constant.
VERSION_KEY: Final = "_state_version"
SOURCES_KEY: Final = "sources"
SCHEMA_KEY: Final = "schema"
TABLES_KEY: Final = "tables"
KEYS_KEY: Final = "keys"
RESOURCES_KEY: Final = "resources"
INCREMENTAL_KEY: Final = "incremental"
LEDGER_KEY: Final = "intervals"

CursorValue = int | float | str | datetime.date | datetime.datetime | None


class CursorState(TypedDict, total=False):
    """One incremental cursor of a resource, by cursor path (extract, ``incremental/``)."""

    initial_value: CursorValue
    last_value: CursorValue
    # The newest value loaded before this run's: the start of what the run may load.
    start_value: CursorValue
    # Hashes of the rows at ``last_value``, so a row seen at the boundary is not loaded twice.
    unique_hashes: list[str]


class ResourceState(TypedDict, total=False):
    """What sparkload keeps of one resource, beside the keys the resource writes itself."""

    # Written by extract (``extract/incremental``): its cursors, by cursor path.
    incremental: dict[str, CursorState]
    # Written by the pipeline (``pipeline/schedule.py``, ``pipeline/restatement.py``): the
    # time ranges an interval resource has loaded, as sorted, merged ``[start, end)`` pairs
    # of ISO text.
    intervals: list[list[str]]


class SourceState(TypedDict, total=False):
    """A source's state, beside the keys the source writes itself."""

    resources: dict[str, ResourceState]


class TableHintsRecord(TypedDict, total=False):
    """A root table's hints as recorded at extract (``pipeline/schema.py``)."""

    resource: str
    write_disposition: str | dict[str, object]
    primary_key: list[str]
    merge_key: list[str]
    columns: dict[str, dict[str, object]]


class SchemaRecord(TypedDict, total=False):
    """Written by the pipeline (``pipeline/schema.py``) at each extract: dlt's schema hints."""

    tables: dict[str, TableHintsRecord]


class MergeKeys(TypedDict, total=False):
    """The keys a merged table was loaded with (``load/destructive.py``); changing them is
    destructive."""

    primary_key: list[str]
    merge_key: list[str]
    # An scd2 table's validity columns: they mark it as keeping history.
    validity_columns: list[str]


class PipelineState(TypedDict, total=False):
    """The whole document."""

    # Written by the pipeline (``pipeline/state.py`` ``next_version``): counts the committed
    # versions whose content changed; 0 before the first.
    _state_version: int
    # Written by extract (``common/context.py``: resources' and sources' own keys and
    # cursors) and by the pipeline (interval ledgers); by source section name.
    sources: dict[str, SourceState]
    # Written by the pipeline (``pipeline/schema.py``).
    schema: SchemaRecord
    # Written by the pipeline (``pipeline/resource_tables.py``): the root tables each
    # resource filled, by source section and resource name.
    tables: dict[str, dict[str, list[str]]]
    # Written by the pipeline from the load stage's rule (``load/destructive.py``): the keys
    # each merged table was loaded with, by table name.
    keys: dict[str, MergeKeys]


def empty_state() -> PipelineState:
    """The state of a pipeline that has committed nothing."""
    return {VERSION_KEY: 0, SOURCES_KEY: {}}
