"""dlt's arguments that sparkload does not implement, and what it does with each.

sparkload speaks dlt's API, so a dlt script passes keywords written for dlt. A keyword
sparkload silently dropped would load the data otherwise than the script asks (a
``destination="duckdb"`` that wrote Delta tables into a folder ``./duckdb``), so every
argument of dlt 1.31's ``dlt.pipeline``, ``dlt.resource``, ``dlt.source``,
``dlt.transformer``, ``DltResource.apply_hints``, ``Pipeline.run`` and ``Pipeline.extract``
is either implemented (it is in sparkload's signature), accepted because it changes nothing
in sparkload's world (``ACCEPTED``, each with the reason), or refused with a TypeError that
names it and the sparkload way (``REFUSED``). This module is the one place these decisions
live; docs/contracts.md and docs/dlt.md list them for users.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

# The callers, as they appear in messages.
PIPELINE = "pipeline"
RESOURCE = "resource"
SOURCE = "source"
TRANSFORMER = "transformer"
APPLY_HINTS = "Resource.apply_hints"
RUN = "Pipeline.run"
EXTRACT = "Pipeline.extract"
PLAN = "Pipeline.plan"

# The table format sparkload writes, the one value of table_format it accepts.
NATIVE_TABLE_FORMAT = "delta"

# dlt's destination names (dlt.destinations.__all__ in dlt 1.31): given as a pipeline's
# destination, each means a database or store sparkload does not write, never a folder.
DLT_DESTINATION_NAMES = frozenset(
    {
        "athena",
        "bigquery",
        "clickhouse",
        "databricks",
        "destination",
        "dremio",
        "duckdb",
        "ducklake",
        "dummy",
        "fabric",
        "filesystem",
        "lance",
        "lancedb",
        "motherduck",
        "mssql",
        "postgres",
        "qdrant",
        "redshift",
        "snowflake",
        "sqlalchemy",
        "synapse",
        "weaviate",
    }
)

_DELTA_WAY = "sparkload loads Delta Lake: use destination=sl.destinations.delta(path)"
_FILE_FORMAT = (
    "sparkload stages items as NDJSON (Arrow tables and pandas frames as Parquet), normalizes "
    "them to Parquet and writes Delta tables; there is no file format to choose"
)
_SPEC = "sparkload reads a function's configuration from its signature; spec classes are not used"
_SECTION = (
    "sparkload looks configuration up under the function's module and source "
    "(sources.<module>.<name>, sources.<name>); a section of one's own is not taken"
)
_SCHEMA = (
    "a sparkload pipeline has one schema, read from its Delta tables; declare columns with "
    "columns= hints, or keep a schema file with sl.pipeline(import_schema_path=...)"
)
_REFERENCES = "sparkload's schema records no references between tables; leave it out"
_IMPL_CLS = "sparkload has no pluggable implementation classes"
_AT_PIPELINE = "is the pipeline's: give it to sl.pipeline(...)"
_PARENT_TABLE = (
    "nested tables follow the data's lists in sparkload; give their hints with nested_hints= "
    "(sl.mark.make_nested_hints)"
)

# Refused: keyword -> the sparkload way, by caller (dlt's names, dlt's meaning).
REFUSED: dict[str, dict[str, str]] = {
    PIPELINE: {
        "full_refresh": "full_refresh is dlt's old name for dev_mode: use dev_mode=True",
        "staging": (
            "sparkload stages load packages beside the dataset itself (or in "
            "sl.destinations.delta(..., staging_url=...)); there is no staging destination"
        ),
        "_impl_cls": _IMPL_CLS,
    },
    RESOURCE: {
        "file_format": _FILE_FORMAT,
        "references": _REFERENCES,
        "spec": _SPEC,
        "section": _SECTION,
        "data_from": "a resource fed by another is a transformer: use @sl.transformer(data_from=...)",
        "_impl_cls": _IMPL_CLS,
        "_base_spec": _SPEC,
    },
    TRANSFORMER: {
        "file_format": _FILE_FORMAT,
        "references": _REFERENCES,
        "spec": _SPEC,
        "section": _SECTION,
        "_impl_cls": _IMPL_CLS,
    },
    SOURCE: {
        "schema": _SCHEMA,
        "spec": _SPEC,
        "section": _SECTION,
        "_impl_cls": _IMPL_CLS,
    },
    APPLY_HINTS: {
        "parent_table_name": _PARENT_TABLE,
        "file_format": _FILE_FORMAT,
        "references": _REFERENCES,
        "additional_table_hints": "sparkload takes the hints it names, no free-form table hints",
        "create_table_variant": (
            "sparkload changes a resource's hints in place; for a second table use "
            "resource.with_name(...) or table_name="
        ),
    },
    RUN: {
        "destination": f"the destination {_AT_PIPELINE}",
        "staging": "sparkload stages load packages itself; there is no staging destination",
        "dataset_name": f"the dataset {_AT_PIPELINE}",
        "credentials": (
            "sparkload reaches storage with the Spark session's credentials (its spark.hadoop.* "
            "settings); give the path or URL to sl.destinations.delta(...)"
        ),
        "schema": _SCHEMA,
        "loader_file_format": _FILE_FORMAT,
    },
    EXTRACT: {
        "parent_table_name": _PARENT_TABLE,
        "schema": _SCHEMA,
        "loader_file_format": _FILE_FORMAT,
    },
}
REFUSED[PLAN] = REFUSED[RUN]


def _native_table_format(caller: str, value: object) -> None:
    if value not in (None, NATIVE_TABLE_FORMAT):
        raise TypeError(
            f"{caller}(): table_format={value!r} is not taken: sparkload writes Delta tables "
            f"only (table_format={NATIVE_TABLE_FORMAT!r} or leave it out)"
        )


def _nothing_to_check(caller: str, value: object) -> None:
    return None


# Accepted and dropped: keyword -> the check its value must pass, by caller. Each changes
# nothing in what sparkload loads, for the reason given beside it.
ACCEPTED: dict[str, dict[str, Callable[[str, object], None]]] = {
    PIPELINE: {
        # dlt salts the hashes of its data anonymization with it; sparkload hashes no data.
        "pipeline_salt": _nothing_to_check,
    },
    RESOURCE: {
        # Delta is what sparkload always writes.
        "table_format": _native_table_format,
        # Every sparkload resource function is standalone: calling it binds its arguments
        # and returns the resource.
        "standalone": _nothing_to_check,
    },
    TRANSFORMER: {
        "table_format": _native_table_format,
        "standalone": _nothing_to_check,
    },
    SOURCE: {},
    APPLY_HINTS: {"table_format": _native_table_format},
    RUN: {"table_format": _native_table_format},
    EXTRACT: {
        "table_format": _native_table_format,
        # dlt's extract thread pool sizes: how fast dlt extracts, not what; sparkload's
        # extract has no such pool (a resource's parallelized= is its own).
        "max_parallel_items": _nothing_to_check,
        "workers": _nothing_to_check,
    },
}
ACCEPTED[PLAN] = ACCEPTED[RUN]


def refuse_dlt_arguments(
    caller: str, given: Mapping[str, object], takes: frozenset[str] = frozenset()
) -> dict[str, object]:
    """``given`` without the keywords sparkload accepts as no-ops; raises the TypeError of a
    keyword ``caller`` does not take: with the sparkload way for one of dlt's, and Python's
    own message for any other. ``takes``: the keywords ``caller`` implements among ``given``."""
    kept: dict[str, object] = {}
    for keyword, value in given.items():
        check = ACCEPTED.get(caller, {}).get(keyword)
        if check is not None:
            check(caller, value)
            continue
        if keyword in takes:
            kept[keyword] = value
            continue
        way = REFUSED.get(caller, {}).get(keyword)
        if way is not None:
            raise TypeError(f"{caller}(): sparkload does not take dlt's {keyword}=: {way}")
        raise TypeError(f"{caller}() got an unexpected keyword argument {keyword!r}")
    return kept


def refuse_dlt_destination(destination: object) -> None:
    """A dlt destination name (``"duckdb"``) or a dlt destination object given as a pipeline's
    destination: sparkload would have written Delta tables into a folder of that name."""
    if isinstance(destination, str):
        name = destination.strip()
        dlt_module = name.startswith("dlt.destinations.")
        if name in DLT_DESTINATION_NAMES or dlt_module:
            raise TypeError(f"pipeline(): destination={destination!r} is a dlt destination; {_DELTA_WAY}")
        return
    if type(destination).__module__.split(".", 1)[0] == "dlt":
        raise TypeError(
            f"pipeline(): destination={type(destination).__name__} is a dlt destination; {_DELTA_WAY}"
        )


def described() -> list[tuple[str, str, str]]:
    """Every refused keyword as (caller, keyword, the sparkload way), for docs and tests."""
    return [
        (caller, keyword, way)
        for caller, ways in REFUSED.items()
        if caller != PLAN
        for keyword, way in ways.items()
    ]
