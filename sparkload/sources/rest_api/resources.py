"""Resources from a checked ``rest_api`` config: each endpoint becomes a resource whose
generator pages through it with a ``RESTClient``; an endpoint that takes a parent's field
becomes a transformer of the parent's pages."""

from __future__ import annotations

import copy
import graphlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from sparkload.common.origin import endpoint_origin, mark_origin
from sparkload.exceptions import ConfigValueError
from sparkload.extract.decorators import resource as make_resource
from sparkload.extract.decorators import transformer as make_transformer
from sparkload.extract.incremental import Incremental
from sparkload.extract.resource import Resource
from sparkload.sources.helpers.rest_client.client import Hooks, PageData, RESTClient, _secret_params
from sparkload.sources.helpers.rest_client.jsonpath import TJsonPath, find_values
from sparkload.sources.helpers.rest_client.paginators import BasePaginator
from sparkload.sources.rest_api.config_check import INCREMENTAL_ARGS
from sparkload.sources.rest_api.factories import create_auth, create_paginator, response_hooks
from sparkload.sources.rest_api.placeholders import (
    INCREMENTAL,
    INCREMENTAL_VALUES,
    RESOURCES,
    expand,
    fields_in,
)

HINT_KEYS = ("write_disposition", "primary_key", "merge_key", "table_name", "max_table_nesting", "columns")


@dataclass(frozen=True)
class ParentField:
    """A value taken from each parent record: placeholder ``name`` gets ``parent``'s
    ``field`` (a JSONPath)."""

    name: str
    parent: str
    field: str


@dataclass
class IncrementalParams:
    """Where the incremental's start and end go in the request, and how they are written."""

    start: str | None
    end: str | None
    convert: Callable[[object], object] | None


@dataclass
class Endpoint:
    """One resource's endpoint, with defaults merged and its parent fields found."""

    name: str
    where: str
    config: dict[str, Any]
    endpoint: dict[str, Any]
    parent_fields: list[ParentField] = field(default_factory=list)

    @property
    def parent(self) -> str | None:
        return self.parent_fields[0].parent if self.parent_fields else None


def build_resources(config: Mapping[str, Any]) -> list[Resource]:
    client_config = config["client"]
    defaults = _copy_structure(dict(config.get("resource_defaults") or {}))
    entries: dict[str, Endpoint | Resource] = {}
    for index, given in enumerate(config["resources"]):
        if isinstance(given, Resource):
            entries[given.name] = given
            continue
        found = _endpoint(given, defaults, f"resources[{index}]")
        if found.name in entries:
            raise ConfigValueError(f"rest_api config: two resources named '{found.name}'", key=found.where)
        entries[found.name] = found
    graph: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter()
    for name, entry in entries.items():
        parent = entry.parent if isinstance(entry, Endpoint) else None
        if isinstance(entry, Endpoint) and parent is not None and parent not in entries:
            raise ConfigValueError(
                f"rest_api config: resource '{name}' takes fields of '{parent}', which is not a resource",
                key=f"{entry.where}.endpoint",
            )
        graph.add(name, *([parent] if parent else []))
    try:
        order = list(graph.static_order())
    except graphlib.CycleError as exc:
        cycle = exc.args[1]
        raise ConfigValueError(
            f"rest_api config: resources take each other's fields: {cycle}", key="resources"
        ) from None
    built: dict[str, Resource] = {}
    for name in order:
        entry = entries[name]
        built[name] = entry if isinstance(entry, Resource) else _resource(entry, client_config, built)
    return [built[name] for name in entries]


def _endpoint(entry: str | Mapping[str, object], defaults: dict[str, Any], where: str) -> Endpoint:
    resource: dict[str, Any] = (
        {"name": entry, "endpoint": {"path": entry}}
        if isinstance(entry, str)
        else _copy_structure(dict(entry))
    )
    if not resource.get("name"):
        raise ConfigValueError(f"rest_api config: '{where}' needs a 'name'", key=f"{where}.name")
    given: Any = resource.get("endpoint") or {}
    endpoint: dict[str, Any] = {"path": given} if isinstance(given, str) else dict(given)
    endpoint.setdefault("path", resource["name"])
    default_endpoint: dict[str, Any] = _copy_structure(defaults.get("endpoint") or {})
    merged_endpoint = {**default_endpoint, **endpoint}
    for key in ("params", "json"):  # merged key by key, as dlt does
        if key in endpoint and isinstance(default_endpoint.get(key), dict):
            merged_endpoint[key] = {**default_endpoint[key], **endpoint[key]}
    resource_defaults = {k: v for k, v in defaults.items() if k != "endpoint"}
    merged = {**resource_defaults, **resource, "endpoint": merged_endpoint}
    found = Endpoint(merged["name"], where, merged, merged_endpoint)
    _bind_path_params(found)
    found.parent_fields = _parent_fields(found)
    if len({p.parent for p in found.parent_fields}) > 1:
        raise ConfigValueError(
            f"rest_api config: resource '{found.name}' takes fields of several resources; one parent only",
            key=f"{where}.endpoint",
        )
    if found.config.get("include_from_parent") and not found.parent_fields:
        raise ConfigValueError(
            f"rest_api config: resource '{found.name}' has include_from_parent but no parent resource",
            key=f"{where}.include_from_parent",
        )
    return found


def _copy_structure(value: Any) -> Any:
    """``value``'s dicts and lists copied, every other object kept as given (as dlt copies a
    config): a response action, paginator or auth is the caller's own object, whose state
    the caller may read after the run, not a deep copy of it."""
    if isinstance(value, Mapping):
        return {key: _copy_structure(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy_structure(item) for item in value]
    return value


def _bind_path_params(endpoint: Endpoint) -> None:
    """Plain params named in the path (``/repos/{owner}/issues`` with ``owner`` in params)
    go into the path and leave the query. A ``resolve`` param the path does not name is an
    error, as in dlt: its parent's value would reach no request, which would be the same
    for every parent record."""
    params = endpoint.endpoint.setdefault("params", {})
    in_path = fields_in(endpoint.endpoint["path"])
    for name, value in params.items():
        if isinstance(value, Mapping) and value.get("type") == "resolve" and name not in in_path:
            raise ConfigValueError(
                f"rest_api config: resource '{endpoint.name}' has the resolve param '{name}', which "
                f"its path '{endpoint.endpoint['path']}' does not name as '{{{name}}}'; to send a "
                "parent's field in the query, use '{resources.<parent>.<field>}' in a param",
                key=f"{endpoint.where}.endpoint.params.{name}",
            )
    for name in in_path:
        if name in params and not isinstance(params[name], Mapping):
            value = params.pop(name)
            endpoint.endpoint["path"] = endpoint.endpoint["path"].replace("{" + name + "}", str(value))
        elif name.split(".")[0] not in (RESOURCES, INCREMENTAL) and name not in params:
            raise ConfigValueError(
                f"rest_api config: the path of '{endpoint.name}' has '{{{name}}}', which no param, "
                "'resources.<parent>.<field>' or 'incremental.<value>' fills",
                key=f"{endpoint.where}.endpoint.path",
            )


def _parent_fields(endpoint: Endpoint) -> list[ParentField]:
    found = [
        ParentField(name, value["resource"], value["field"])
        for name, value in endpoint.endpoint.get("params", {}).items()
        if isinstance(value, Mapping) and value.get("type") == "resolve"
    ]
    places = {k: endpoint.endpoint.get(k) for k in ("path", "params", "json", "headers", "data")}
    for name in sorted(fields_in(places)):
        parts = name.split(".", 2)
        if parts[0] == RESOURCES:
            if len(parts) != 3:
                raise ConfigValueError(
                    f"rest_api config: '{{{name}}}' must read 'resources.<parent>.<field>'",
                    key=f"{endpoint.where}.endpoint",
                )
            found.append(ParentField(name, parts[1], parts[2]))
        elif parts[0] == INCREMENTAL and name.partition(".")[2] not in INCREMENTAL_VALUES:
            raise ConfigValueError(
                f"rest_api config: resource '{endpoint.name}' has the placeholder '{{{name}}}', but "
                f"the incremental's values are {', '.join(INCREMENTAL_VALUES)}",
                key=f"{endpoint.where}.endpoint",
            )
    return found


def _resource(
    endpoint: Endpoint, client_config: Mapping[str, Any], built: Mapping[str, Resource]
) -> Resource:
    where, config, ep = endpoint.where, endpoint.config, endpoint.endpoint
    auth = create_auth(ep.get("auth", client_config.get("auth")), f"{where}.endpoint.auth")
    client = RESTClient(
        base_url=client_config["base_url"],
        headers=client_config.get("headers"),
        auth=auth,
        paginator=create_paginator(client_config.get("paginator"), "client.paginator"),
        session=client_config.get("session"),
        trusted_origins=client_config.get("trusted_origins") or (),
    )
    resolved_names = {p.name for p in endpoint.parent_fields}
    params = {k: v for k, v in (ep.get("params") or {}).items() if k not in resolved_names}
    incremental, incremental_params = _incremental(params, ep.get("incremental"), where)
    request = _Request(
        name=endpoint.name,
        client=client,
        method=ep.get("method", "GET"),
        path=ep["path"],
        params=params,
        json=ep.get("json"),
        data=ep.get("data"),
        headers=ep.get("headers"),
        paginator=create_paginator(ep.get("paginator"), f"{where}.endpoint.paginator"),
        data_selector=ep.get("data_selector"),
        hooks=response_hooks(ep.get("response_actions"), _secret_params(auth)),
        incremental_params=incremental_params,
    )
    hints = {k: config[k] for k in HINT_KEYS if k in config}
    options = {
        "name": endpoint.name,
        "selected": config.get("selected", True),
        "parallelized": config.get("parallelized", False),
        **hints,
    }
    if endpoint.parent is None:
        made = make_resource(_paginate, **options)(request=request, incremental_object=incremental)
    else:
        made = make_transformer(data_from=built[endpoint.parent], **options)(_paginate_for_parent)(
            request=request,
            parent_fields=endpoint.parent_fields,
            include_from_parent=list(config.get("include_from_parent") or []),
            incremental_object=incremental,
        )
    mark_origin(made, endpoint_origin(client_config["base_url"], ep["path"]))
    for step in config.get("processing_steps") or []:
        for kind in ("filter", "map", "yield_map"):
            if kind in step:
                getattr(made, f"add_{kind}")(step[kind])
    return made


def _incremental(
    params: dict[str, Any], config: Mapping[str, Any] | None, where: str
) -> tuple[Incremental[Any] | None, IncrementalParams | None]:
    """The endpoint's incremental (from an ``incremental`` param or ``endpoint.incremental``),
    taken out of the params, and where its values go in the request."""
    declared = [(name, value) for name, value in params.items() if _is_incremental(value)]
    if len(declared) > 1:
        raise ConfigValueError(
            f"rest_api config: '{where}.endpoint.params' has several incremental params "
            f"({', '.join(name for name, _ in declared)}); one only",
            key=f"{where}.endpoint.params",
        )
    if declared and config is not None:
        raise ConfigValueError(
            f"rest_api config: '{where}.endpoint' has an incremental param and endpoint.incremental; "
            "give one only",
            key=f"{where}.endpoint.incremental",
        )
    if declared:
        name, value = declared[0]
        del params[name]
        if isinstance(value, Incremental):
            return value, IncrementalParams(name, None, None)
        return _make_incremental(value, f"{where}.endpoint.params.{name}"), IncrementalParams(
            name, None, value.get("convert") or value.get("transform")
        )
    if config is None:
        return None, None
    incremental = _make_incremental(config, f"{where}.endpoint.incremental")
    convert = config.get("convert") or config.get("transform")
    return incremental, IncrementalParams(config.get("start_param"), config.get("end_param"), convert)


def _is_incremental(value: object) -> bool:
    return isinstance(value, Incremental) or (
        isinstance(value, Mapping) and value.get("type") == "incremental"
    )


def _make_incremental(config: Mapping[str, Any], where: str) -> Incremental[Any]:
    arguments = {k: v for k, v in config.items() if k in INCREMENTAL_ARGS}
    if not arguments.get("cursor_path"):
        raise ConfigValueError(f"rest_api config: '{where}' needs 'cursor_path'", key=f"{where}.cursor_path")
    try:
        return Incremental(**arguments)
    except Exception as exc:
        raise ConfigValueError(f"rest_api config: '{where}': {exc}", key=where) from None


@dataclass
class _Request:
    """What one endpoint sends, before placeholders are filled."""

    name: str  # the resource's
    client: RESTClient
    method: str
    path: str
    params: dict[str, object]
    json: object
    data: object
    headers: Mapping[str, object] | None
    paginator: BasePaginator | None
    data_selector: TJsonPath | None
    hooks: Hooks | None
    incremental_params: IncrementalParams | None

    def pages(
        self, values: Mapping[str, object], incremental: Incremental[Any] | None
    ) -> Iterator[PageData[Any]]:
        """The pages of the request with ``values`` (parent fields) and the incremental's
        values filled in."""
        values = dict(values)
        params = dict(self.params)
        if incremental is not None:
            convert = (self.incremental_params.convert if self.incremental_params else None) or _same
            incremental_values = {
                "initial_value": incremental.initial_value,
                "start_value": incremental.start_value,
                "last_value": incremental.start_value,
                "end_value": incremental.end_value,
            }
            for key, value in incremental_values.items():
                values[f"{INCREMENTAL}.{key}"] = None if value is None else convert(value)
            # The lag is a span, not a cursor value: as given, never converted (dlt formats
            # the incremental's own attribute).
            values[f"{INCREMENTAL}.lag"] = incremental.lag
            where = self.incremental_params
            if where is not None and where.start:
                params[where.start] = values[f"{INCREMENTAL}.start_value"]
            if where is not None and where.end and incremental.end_value is not None:
                params[where.end] = values[f"{INCREMENTAL}.end_value"]
        yield from self.client.paginate(
            path=expand(self.path, values),
            method=self.method,
            params=expand(params, values),
            json=expand(self.json, values, keep_type=True),
            data=expand(self.data, values),
            headers=expand(self.headers, values),
            # Each call pages afresh: a paginator keeps the position of the pages it read.
            paginator=copy.deepcopy(self.paginator),
            data_selector=self.data_selector,
            hooks=self.hooks,
        )


def _same(value: object) -> object:
    return value


def _paginate(
    request: _Request, incremental_object: Incremental[Any] | None = None
) -> Iterator[list[object]]:
    """A root endpoint: its pages, one at a time."""
    yield from request.pages({}, incremental_object)


def _paginate_for_parent(
    parent_page: list[Mapping[str, object]] | Mapping[str, object],
    request: _Request,
    parent_fields: list[ParentField],
    include_from_parent: list[str],
    incremental_object: Incremental[Any] | None = None,
) -> Iterator[list[object]]:
    """A child endpoint: for each record of the parent's page, the pages of the request
    with that record's fields filled in; ``include_from_parent`` fields are copied into
    every child record as ``_<parent>_<field>``."""
    records = parent_page if isinstance(parent_page, list) else [parent_page]
    for record in records:
        values: dict[str, object] = {}
        for parent_field in parent_fields:
            found = find_values(parent_field.field, record)
            if not found:
                raise ValueError(
                    f"resource '{request.name}': a record of '{parent_field.parent}' has no "
                    f"'{parent_field.field}' for the param '{parent_field.name}'; it has {sorted(record)}"
                )
            values[parent_field.name] = found[0]
        extra = _from_parent(record, parent_fields[0].parent, include_from_parent)
        for page in request.pages(values, incremental_object):
            if extra:
                for child in page:
                    child.update(extra)
            yield page


def _from_parent(record: Mapping[str, object], parent: str, names: list[str]) -> dict[str, object]:
    extra: dict[str, object] = {}
    for name in names:
        if name not in record:
            raise ValueError(
                f"a record of '{parent}' has no '{name}' to include (include_from_parent); "
                f"it has {sorted(record)}"
            )
        extra[f"_{parent}_{name}"] = record[name]
    return extra
