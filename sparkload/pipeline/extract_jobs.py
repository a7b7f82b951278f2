"""Turn what ``run()``/``extract()`` were given into the list of resources to extract."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from typing import Any

from sparkload.exceptions import ResourceError
from sparkload.extract.hints import TableHints
from sparkload.extract.jobs import ExtractJob
from sparkload.extract.resource import Resource
from sparkload.extract.source import Source


def _as_units(data: object) -> list[object]:
    if isinstance(data, (Source, Resource)):
        return [data]
    if isinstance(data, list) and data and all(isinstance(d, (Source, Resource)) for d in data):
        return list(data)
    if inspect.isfunction(data) and getattr(data, "__wrapped__", None) is not None:
        produced = data()  # an uncalled @sl.source function
        if isinstance(produced, Source):
            return [produced]
    return [data]


def extract_jobs(
    data: object, pipeline_name: str, table_name: str | None, hint_changes: Mapping[str, Any]
) -> list[ExtractJob]:
    """The extract jobs for ``data``, with the run's hints applied to every resource."""
    entries: list[ExtractJob] = []
    loose: list[ExtractJob] = []  # resources given as such (a list is one source, as in dlt)
    for unit in _as_units(data):
        if isinstance(unit, Source):
            selected = list(unit.selected_resources.values())
            entries += _link_transformers(
                [
                    ExtractJob(
                        _hinted(r, table_name, hint_changes),
                        unit.name,
                        unit.root_key,
                        unit.max_table_nesting,
                        schema_contract=unit.schema_contract,
                    )
                    for r in selected
                ]
            )
        elif isinstance(unit, Resource):
            resource = _hinted(unit, table_name, hint_changes)
            loose.append(ExtractJob(resource, unit.section or pipeline_name))
        else:
            if not table_name:
                name = getattr(unit, "__name__", None)
                if not name or name == "<lambda>":
                    raise ResourceError("plain data needs table_name= to say which table it goes to")
            else:
                name = table_name
            resource = Resource(name, unit, TableHints.build(), section=pipeline_name)
            entries.append(ExtractJob(_hinted(resource, table_name, hint_changes), pipeline_name))
    return _link_transformers(loose) + entries


def _hinted(resource: Resource, table_name: str | None, hint_changes: Mapping[str, Any]) -> Resource:
    changes = {k: v for k, v in hint_changes.items() if v is not None}
    if table_name is not None:
        changes["table_name"] = table_name
    if not changes:
        return resource
    clone = resource._clone()
    clone.apply_hints(**changes)
    return clone


def _link_transformers(entries: list[ExtractJob]) -> list[ExtractJob]:
    """A transformer whose parent is extracted too is fed from that same pass over the
    parent, so the parent's generator runs once."""
    by_resource = {id(e.resource._data_from_origin()): e for e in entries}
    roots: list[ExtractJob] = []
    for entry in entries:
        parent = entry.resource._data_from
        if parent is not None and id(parent._data_from_origin()) in by_resource:
            by_resource[id(parent._data_from_origin())].children.append(entry)
        else:
            roots.append(entry)
    return _share_unextracted_parents(roots)


def _share_unextracted_parents(roots: list[ExtractJob]) -> list[ExtractJob]:
    """Transformers fed by one parent that is not extracted itself (not selected, or not
    given) are fed from one pass over it too, as dlt forks one pipe: a pass each would run
    the parent's generator again, and its incremental, having moved on in the first pass,
    would let nothing through to the others. A parent with intervals is left to each
    transformer (its windows are scheduled per extracted resource)."""
    shared: dict[tuple[int, str], list[ExtractJob]] = {}
    for entry in roots:
        parent = entry.resource._data_from
        if parent is not None and parent.intervals is None:
            shared.setdefault((id(parent._data_from_origin()), entry.source_name), []).append(entry)
    result: list[ExtractJob] = []
    for entry in roots:
        parent = entry.resource._data_from
        if parent is None:
            result.append(entry)
            continue
        group = shared.get((id(parent._data_from_origin()), entry.source_name), [])
        if len(group) < 2:
            result.append(entry)
        elif entry is group[0]:
            result.append(dataclasses.replace(entry, resource=parent, children=group, feeds_only=True))
    return result
