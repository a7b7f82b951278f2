"""A source cut into the groups of resources that extract together (dlt's
``source.decompose("scc")``): a resource with the transformers fed by it, directly or
through other transformers. Each group extracts every resource it needs exactly once and
shares nothing with another group, so the groups can run as separate tasks."""

from __future__ import annotations

from sparkload.extract.resource import Resource
from sparkload.extract.source import Source


def head_of(resource: Resource) -> Resource:
    """The resource at the head of ``resource``'s pipe (itself, unless it is a transformer),
    as first made: copies of one resource (hints applied to a copy) are one head, as the
    extract sees them."""
    while resource._data_from is not None:
        resource = resource._data_from
    return resource._data_from_origin()


def components(source: Source) -> list[Source]:
    """The selected resources of ``source`` in groups that share a head, each group a copy
    of ``source`` with just that group selected; in the order the source declares its
    resources (a group at the place of its first resource), as dlt orders them."""
    groups: dict[int, list[str]] = {}
    for name, resource in source.selected_resources.items():
        groups.setdefault(id(head_of(resource)), []).append(name)
    return [source.with_resources(*names) for names in groups.values()]
