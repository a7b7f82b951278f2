"""Which tables each resource fills, recorded in the pipeline state.

Recorded at extract time and committed with the load, so a drop finds a resource's tables
on any machine that has the state (dlt keeps the same in its schema). The layout is

    state["tables"][<source section>][<resource>] = [<root table>, ...]

with root tables only: a root's nested tables are the dataset's folders named
``<root>__<child>``. Normalized table names never hold ``__`` (it is collapsed to one
``_``), so the part of a folder's name before its first ``__`` is its root table.
"""

from __future__ import annotations

from collections.abc import Iterable

from sparkload.common.naming import normalize_table_name
from sparkload.common.state_record import TABLES_KEY, PipelineState
from sparkload.extract.jobs import ExtractedTable, ExtractJob, every_entry

NESTING_SEPARATOR = "__"

# (source section, resource name)
ResourceKey = tuple[str, str]


def record(state: PipelineState, jobs: list[ExtractJob], tables: Iterable[ExtractedTable]) -> None:
    """Add the root tables this extract filled to ``state``'s record, under their resources."""
    # A table with no rows is not written, unless a replace empties it.
    filled = {
        table.name: table.resource for table in tables if table.rows or table.hints.disposition == "replace"
    }
    for entry in every_entry(jobs):
        resource = entry.resource
        # An extracted table names the first resource that wrote to it; a table that several
        # resources fill is theirs too when they name it statically. (One of them that wrote
        # no rows this run still claims it: the table then stays until both are dropped.)
        names = {name for name, filler in filled.items() if filler == resource.name}
        if not callable(resource.table_name):
            static = normalize_table_name(str(resource.table_name))
            if static in filled:
                names.add(static)
        if names:  # nothing is added when nothing was filled: the state stays as it was
            recorded = state.setdefault(TABLES_KEY, {})
            known = recorded.setdefault(entry.source_name, {}).setdefault(resource.name, [])
            known[:] = sorted(set(known) | names)


def root_tables(state: PipelineState) -> dict[ResourceKey, list[str]]:
    """The recorded root tables of every resource."""
    return {
        (section, resource): list(tables)
        for section, resources in state.get(TABLES_KEY, {}).items()
        for resource, tables in resources.items()
    }


def known_resources(state: PipelineState) -> list[ResourceKey]:
    """Every resource the state knows: those with state of their own and those with tables."""
    keys = set(root_tables(state))
    for section, source in state.get("sources", {}).items():
        keys.update((section, resource) for resource in source.get("resources", {}))
    return sorted(keys)


def root_of(table: str) -> str:
    """The root table that ``table`` is, or is a nested table of."""
    return table.split(NESTING_SEPARATOR, 1)[0]


def tables_by_resource(state: PipelineState, folders: list[str]) -> dict[ResourceKey, list[str]]:
    """Each resource's tables present in the dataset (``folders``): roots and nested."""
    roots = root_tables(state)
    by_root: dict[str, list[str]] = {}
    for folder in folders:
        by_root.setdefault(root_of(folder), []).append(folder)
    return {
        key: sorted(table for root in names for table in by_root.get(root, []))
        for key, names in roots.items()
    }
