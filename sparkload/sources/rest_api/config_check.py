"""Refuse a ``rest_api`` config with a key dlt's config does not have (a typo would
otherwise be ignored and its value lost), naming the key by its path in the config."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sparkload.exceptions import ConfigValueError
from sparkload.extract.resource import Resource
from sparkload.sources.helpers.requests.origins import trusted_origins_of

TOP_KEYS = frozenset({"client", "resources", "resource_defaults"})
# trusted_origins is sparkload's: the other origins the client's credentials may go to.
CLIENT_KEYS = frozenset({"base_url", "headers", "auth", "paginator", "session", "trusted_origins"})
# dlt hints sparkload has no use for are accepted and ignored, as by @sl.resource.
IGNORED_RESOURCE_KEYS = frozenset(
    {"schema_contract", "table_format", "file_format", "nested_hints", "references"}
)
RESOURCE_KEYS = (
    frozenset(
        {
            "name",
            "endpoint",
            "write_disposition",
            "primary_key",
            "merge_key",
            "table_name",
            "max_table_nesting",
            "columns",
            "selected",
            "parallelized",
            "include_from_parent",
            "processing_steps",
            "on_destructive_change",
        }
    )
    | IGNORED_RESOURCE_KEYS
)
ENDPOINT_KEYS = frozenset(
    {
        "path",
        "method",
        "params",
        "json",
        "data",
        "headers",
        "paginator",
        "data_selector",
        "response_actions",
        "incremental",
        "auth",
    }
)
INCREMENTAL_ARGS = frozenset(
    {
        "cursor_path",
        "initial_value",
        "end_value",
        "last_value_func",
        "primary_key",
        "row_order",
        "allow_external_schedulers",
        "on_cursor_value_missing",
        "lag",
        "range_start",
        "range_end",
    }
)
ENDPOINT_INCREMENTAL_KEYS = INCREMENTAL_ARGS | {"start_param", "end_param", "convert", "transform"}
PARAM_INCREMENTAL_KEYS = (INCREMENTAL_ARGS - {"end_value"}) | {"type", "convert", "transform"}
RESOLVE_KEYS = frozenset({"type", "resource", "field"})
PROCESSING_STEP_KEYS = frozenset({"filter", "map", "yield_map"})
RESPONSE_ACTION_KEYS = frozenset({"status_code", "content", "action"})


def refuse_unknown(given: Mapping[str, object], known: frozenset[str], where: str) -> None:
    for key in given:
        if key not in known:
            raise ConfigValueError(
                f"rest_api config: unknown key '{_join(where, key)}'; {where or 'the config'} "
                f"takes {', '.join(sorted(known))}",
                key=_join(where, key),
            )


def check_config(config: Mapping[str, object]) -> None:
    """The whole config, before anything is built from it."""
    if not isinstance(config, Mapping):
        raise ConfigValueError("rest_api config must be a dict", key="")
    refuse_unknown(config, TOP_KEYS, "")
    for key in ("client", "resources"):
        if key not in config:
            raise ConfigValueError(f"rest_api config needs '{key}'", key=key)
    client = _mapping(config["client"], "client")
    refuse_unknown(client, CLIENT_KEYS, "client")
    if not client.get("base_url"):
        raise ConfigValueError("rest_api config needs 'client.base_url'", key="client.base_url")
    try:
        trusted_origins_of(client.get("trusted_origins"))
    except (TypeError, ValueError) as exc:
        raise ConfigValueError(
            f"rest_api config: 'client.trusted_origins': {exc}", key="client.trusted_origins"
        ) from None
    defaults = config.get("resource_defaults") or {}
    check_resource(_mapping(defaults, "resource_defaults"), "resource_defaults")
    resources = config["resources"]
    # An empty list is a source with nothing to load, as in dlt (its template starts so).
    if not isinstance(resources, (list, tuple)):
        raise ConfigValueError("rest_api config: 'resources' must be a list", key="resources")
    for index, resource in enumerate(resources):
        if isinstance(resource, Mapping):
            check_resource(resource, f"resources[{index}]")
        elif not isinstance(resource, str) and not _is_resource(resource):
            raise ConfigValueError(
                f"rest_api config: resources[{index}] must be a name, a dict or a resource, "
                f"not a {type(resource).__name__}",
                key=f"resources[{index}]",
            )


def check_resource(resource: Mapping[str, Any], where: str) -> None:
    refuse_unknown(resource, RESOURCE_KEYS, where)
    endpoint = resource.get("endpoint")
    if isinstance(endpoint, Mapping):
        check_endpoint(endpoint, f"{where}.endpoint")
    elif endpoint is not None and not isinstance(endpoint, str):
        raise ConfigValueError(
            f"rest_api config: '{where}.endpoint' must be a path or a dict", key=f"{where}.endpoint"
        )
    for index, step in enumerate(resource.get("processing_steps") or []):
        step_where = f"{where}.processing_steps[{index}]"
        refuse_unknown(_mapping(step, step_where), PROCESSING_STEP_KEYS, step_where)
        for kind, func in step.items():
            _callable(func, f"{step_where}.{kind}")


def check_endpoint(endpoint: Mapping[str, Any], where: str) -> None:
    refuse_unknown(endpoint, ENDPOINT_KEYS, where)
    for name, value in (endpoint.get("params") or {}).items():
        if not isinstance(value, Mapping):
            continue
        param_where = f"{where}.params.{name}"
        kind = value.get("type")
        if kind == "incremental":
            refuse_unknown(value, PARAM_INCREMENTAL_KEYS, param_where)
        elif kind == "resolve":
            refuse_unknown(value, RESOLVE_KEYS, param_where)
            for key in ("resource", "field"):
                if not value.get(key):
                    raise ConfigValueError(f"rest_api config: '{param_where}' needs '{key}'", key=param_where)
        else:
            raise ConfigValueError(
                f"rest_api config: '{param_where}.type' must be 'incremental' or 'resolve', not {kind!r}",
                key=f"{param_where}.type",
            )
    incremental = endpoint.get("incremental")
    if incremental is not None:
        refuse_unknown(
            _mapping(incremental, f"{where}.incremental"), ENDPOINT_INCREMENTAL_KEYS, f"{where}.incremental"
        )
    actions = endpoint.get("response_actions") or []
    if callable(actions):
        raise ConfigValueError(
            f"rest_api config: '{where}.response_actions' must be a list (of dicts and functions), "
            "not a function: put it in a list",
            key=f"{where}.response_actions",
        )
    for index, action in enumerate(actions):
        if not callable(action):
            action_where = f"{where}.response_actions[{index}]"
            refuse_unknown(_mapping(action, action_where), RESPONSE_ACTION_KEYS, action_where)
            _check_action(action.get("action"), f"{action_where}.action")


def _check_action(then: object, where: str) -> None:
    """A response action's ``action``: "ignore", a function, or a list of functions (dlt's
    choices); any other would be called on a response, or do nothing, only when one matches."""
    if then == "ignore" or callable(then):
        return
    if isinstance(then, list) and all(callable(func) for func in then):
        return
    raise ConfigValueError(
        f"rest_api config: '{where}' must be 'ignore', a function or a list of functions, not {then!r}",
        key=where,
    )


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigValueError(
            f"rest_api config: '{where}' must be a dict, not a {type(value).__name__}", key=where
        )
    return value


def _callable(value: object, where: str) -> Callable[..., object]:
    if not callable(value):
        raise ConfigValueError(f"rest_api config: '{where}' must be a function", key=where)
    return value


def _is_resource(value: object) -> bool:
    return isinstance(value, Resource)


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key
