"""``@sl.resource``, ``@sl.source`` and ``@sl.transformer`` with dlt's signatures."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import overload

from typing_extensions import ParamSpec, Unpack

from sparkload.common import context
from sparkload.common.dlt_arguments import RESOURCE, SOURCE, TRANSFORMER, refuse_dlt_arguments
from sparkload.common.hints import TWriteDispositionDict, schema_contract_settings
from sparkload.config import bind_config, module_section
from sparkload.exceptions import ResourceError
from sparkload.extract.hints import ResourceHintArgs, TableHints, refuse_unknown_hints
from sparkload.extract.incremental import Incremental
from sparkload.extract.intervals import declared_intervals
from sparkload.extract.resource import Resource
from sparkload.extract.source import Source

P = ParamSpec("P")
# What ``@sl.resource(name=...)`` and ``@sl.transformer(data_from=...)`` return: the
# decorator that makes the resource.
ResourceDecorator = Callable[[Callable[..., object]], Resource]

TIME_RANGE: TWriteDispositionDict = {"disposition": "merge", "strategy": "time-range"}


@overload
def resource(
    data: None = None,
    /,
    name: str | None = None,
    *,
    selected: bool = True,
    parallelized: bool = False,
    tags: str | Iterable[str] = (),
    disable_restatement: bool | None = None,
    incremental: Incremental[object] | Mapping[str, object] | None = None,
    **hints: Unpack[ResourceHintArgs],
) -> ResourceDecorator: ...


@overload
def resource(
    data: object,
    /,
    name: str | None = None,
    *,
    selected: bool = True,
    parallelized: bool = False,
    tags: str | Iterable[str] = (),
    disable_restatement: bool | None = None,
    incremental: Incremental[object] | Mapping[str, object] | None = None,
    **hints: Unpack[ResourceHintArgs],
) -> Resource: ...


def resource(
    data: object = None,
    /,
    name: str | None = None,
    *,
    selected: bool = True,
    parallelized: bool = False,
    tags: str | Iterable[str] = (),
    disable_restatement: bool | None = None,
    incremental: Incremental[object] | Mapping[str, object] | None = None,
    **hints: Unpack[ResourceHintArgs],
) -> Resource | ResourceDecorator:
    """Make a resource of a generator function (as a decorator) or of data (called);
    ``incremental`` is the resource's incremental, as with ``apply_hints``.

    A keyword of dlt's that sparkload does not implement is refused by name, with the
    sparkload way (``sparkload.common.dlt_arguments``)."""
    refuse_unknown_hints(hints, ResourceHintArgs.__optional_keys__, RESOURCE)

    def wrap(target: object) -> Resource:
        resource_name = name or getattr(target, "__name__", None)
        if not resource_name or resource_name == "<lambda>":
            raise ResourceError("a resource made from data needs name=")
        disposition = hints.get("write_disposition")
        if disposition is None and declared_intervals(target if callable(target) else None) is not None:
            disposition = TIME_RANGE  # SQLMesh's INCREMENTAL_BY_TIME_RANGE
        table_hints = TableHints.build(
            hints.get("table_name"),
            disposition,
            hints.get("primary_key"),
            hints.get("merge_key"),
            hints.get("columns"),
            hints.get("max_table_nesting"),
            hints.get("on_destructive_change"),
            hints.get("nested_hints"),
            hints.get("expectations"),
            hints.get("on_violation"),
            schema_contract=hints.get("schema_contract"),
        )
        made = Resource(
            resource_name,
            target,
            table_hints,
            selected=selected,
            parallelized=parallelized,
            tags=(tags,) if isinstance(tags, str) else tuple(tags),
            disable_restatement=disable_restatement,
        )
        if callable(target):
            functools.update_wrapper(made, target)
        if incremental is not None:
            made.apply_hints(incremental=incremental)
        return made

    if data is None:
        return wrap
    return wrap(data)


@overload
def transformer(
    f: None = None,
    /,
    data_from: Resource | None = None,
    name: str | None = None,
    *,
    selected: bool = True,
    parallelized: bool = False,
    tags: str | Iterable[str] = (),
    disable_restatement: bool | None = None,
    incremental: Incremental[object] | Mapping[str, object] | None = None,
    **hints: Unpack[ResourceHintArgs],
) -> ResourceDecorator: ...


@overload
def transformer(
    f: Callable[..., object],
    /,
    data_from: Resource | None = None,
    name: str | None = None,
    *,
    selected: bool = True,
    parallelized: bool = False,
    tags: str | Iterable[str] = (),
    disable_restatement: bool | None = None,
    incremental: Incremental[object] | Mapping[str, object] | None = None,
    **hints: Unpack[ResourceHintArgs],
) -> Resource: ...


def transformer(
    f: Callable[..., object] | None = None,
    /,
    data_from: Resource | None = None,
    name: str | None = None,
    *,
    selected: bool = True,
    parallelized: bool = False,
    tags: str | Iterable[str] = (),
    disable_restatement: bool | None = None,
    incremental: Incremental[object] | Mapping[str, object] | None = None,
    **hints: Unpack[ResourceHintArgs],
) -> Resource | ResourceDecorator:
    """A resource fed by another resource's items: ``fn(item, *args)`` yields new items."""
    refuse_unknown_hints(hints, ResourceHintArgs.__optional_keys__, TRANSFORMER)

    def wrap(func: Callable[..., object]) -> Resource:
        made: Resource = resource(
            func,
            name=name,
            selected=selected,
            parallelized=parallelized,
            tags=tags,
            disable_restatement=disable_restatement,
            incremental=incremental,
            **hints,
        )
        made._data_from = data_from
        return made

    if f is None:
        return wrap
    return wrap(f)


@overload
def source(
    func: None = None,
    /,
    name: str | None = None,
    max_table_nesting: int | None = None,
    root_key: bool = False,
    parallelized: bool = False,
    schema_contract: str | Mapping[str, str] | None = None,
    **dlt_arguments: object,
) -> Callable[[Callable[P, object]], Callable[P, Source]]: ...


@overload
def source(
    func: Callable[P, object],
    /,
    name: str | None = None,
    max_table_nesting: int | None = None,
    root_key: bool = False,
    parallelized: bool = False,
    schema_contract: str | Mapping[str, str] | None = None,
    **dlt_arguments: object,
) -> Callable[P, Source]: ...


def source(
    func: Callable[..., object] | None = None,
    /,
    name: str | None = None,
    max_table_nesting: int | None = None,
    root_key: bool = False,
    parallelized: bool = False,
    schema_contract: str | Mapping[str, str] | None = None,
    **dlt_arguments: object,
) -> Callable[..., Source] | Callable[[Callable[..., object]], Callable[..., Source]]:
    """Make a source function: calling it returns a Source of the resources it returns;
    ``parallelized`` parallelizes each of them, as in dlt. A keyword of dlt's that sparkload
    does not implement is refused by name (``sparkload.common.dlt_arguments``).
    ``schema_contract`` is the contract of every resource that sets none of its own."""
    refuse_dlt_arguments(SOURCE, dlt_arguments)
    contract = schema_contract_settings(schema_contract)  # a bad mode fails at decoration

    def wrap(f: Callable[..., object]) -> Callable[..., Source]:
        source_name = name or f.__name__

        @functools.wraps(f)
        def make_source(*args: object, **kwargs: object) -> Source:
            # dlt's sources.<module>.<source> first, then sources.<source>
            module = module_section(f)
            chains: list[tuple[str, ...]] = [("sources", module, source_name)] if module else []
            chains.append(("sources", source_name))
            bound = bind_config(f, args, kwargs, sections=chains[0], other_sections=chains[1:])
            # The body sees its source's committed state (sl.current.source_state()), as in
            # dlt; what it writes there is dropped, as no load commits it.
            detached = context.detached_state(source_name)
            with context.defining_source(source_name), context.state_scope(detached, source_name, None):
                produced = f(*bound.args, **bound.kwargs)
                resources = list(_as_resources(source_name, produced))
            if parallelized:
                for made in resources:
                    made.parallelized = True
            return Source(
                source_name,
                resources,
                root_key=root_key,
                max_table_nesting=max_table_nesting,
                schema_contract=contract,
            )

        return make_source

    if func is None:
        return wrap
    return wrap(func)


def _as_resources(source_name: str, produced: object) -> list[Resource]:
    if isinstance(produced, Resource):
        return [produced]
    if inspect.isgenerator(produced) or isinstance(produced, (list, tuple)):
        items = list(produced)
        if all(isinstance(item, Resource) for item in items):
            return items
    # Plain data returned from a source becomes one resource named after the source.
    return [Resource(source_name, produced, TableHints.build(), section=source_name)]
