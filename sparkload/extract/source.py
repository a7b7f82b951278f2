"""A source: a named group of resources, usually returned by a ``@sl.source`` function."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from sparkload.common.hints import schema_contract_settings
from sparkload.exceptions import ResourceError
from sparkload.extract.resource import Resource


class Source:
    """dlt's DltSource: resources by name, a selection, and source-wide settings."""

    def __init__(
        self,
        name: str,
        resources: Iterable[Resource],
        *,
        root_key: bool = False,
        max_table_nesting: int | None = None,
        schema_contract: str | Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.root_key = root_key
        self.max_table_nesting = max_table_nesting
        self.schema_contract = schema_contract
        self._resources: dict[str, Resource] = {}
        for resource in resources:
            if resource.name in self._resources:
                raise ResourceError(f"source '{name}' has two resources named '{resource.name}'")
            self._resources[resource.name] = resource

    @property
    def schema_contract(self) -> Mapping[str, str] | None:
        """The contract of the resources that set none of their own, a mode per entity
        (dlt's ``source.schema_contract``; set it as a mode or a dict of modes)."""
        return self._schema_contract

    @schema_contract.setter
    def schema_contract(self, value: str | Mapping[str, str] | None) -> None:
        self._schema_contract = schema_contract_settings(value)

    @property
    def resources(self) -> dict[str, Resource]:
        """All resources by name (selected or not)."""
        return self._resources

    @property
    def selected_resources(self) -> dict[str, Resource]:
        return {name: res for name, res in self._resources.items() if res.selected}

    def with_resources(self, *names: str) -> Source:
        """A copy of the source with exactly ``names`` selected, as in dlt (this source's
        selection stays as it is)."""
        unknown = [name for name in names if name not in self._resources]
        if unknown:
            raise ResourceError(
                f"source '{self.name}' has no resource(s) {', '.join(unknown)}; "
                f"it has {', '.join(self._resources)}"
            )
        clone = copy.copy(self)
        # Cloned resources keep their origin, so a transformer still finds its parent.
        clone._resources = {name: resource.copy() for name, resource in self._resources.items()}
        for name, resource in clone._resources.items():
            resource.selected = name in names
        return clone

    def add_limit(
        self, max_items: int | None = None, max_time: float | None = None, count_rows: bool = False
    ) -> Source:
        """Limit every selected resource that is not a transformer (dlt's
        ``source.add_limit``; see ``Resource.add_limit``). Transformers take all their parents
        yield, so the data set stays consistent."""
        for resource in self.selected_resources.values():
            if not resource.is_transformer:
                resource.add_limit(max_items, max_time=max_time, count_rows=count_rows)
        return self

    @property
    def exhausted(self) -> bool:
        """Whether a selected resource wraps a generator already started (it yields nothing
        more), as dlt's ``source.exhausted``: extracting such a source loads nothing."""
        return any(resource.exhausted for resource in self.selected_resources.values())

    def __getattr__(self, name: str) -> Resource:
        resources = self.__dict__.get("_resources", {})
        if name in resources:
            return resources[name]
        raise AttributeError(f"source '{self.__dict__.get('name')}' has no resource '{name}'")

    def __iter__(self) -> Iterator[Any]:
        """The selected resources' items, each resource seeing the state a pipeline keeps
        for it under this source's name (its incrementals start from their stored cursors)."""
        for resource in self.selected_resources.values():
            yield from resource.iterate(self.name)

    def __repr__(self) -> str:
        return f"<source '{self.name}' resources={list(self._resources)}>"
