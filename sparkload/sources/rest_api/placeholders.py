"""``{placeholders}`` in an endpoint's path, params, JSON body and headers: a parent's
field (``{resources.issues.number}``, or a ``resolve`` param's name) and the incremental's
values (``{incremental.start_value}``)."""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from typing import Any

RESOURCES = "resources"
INCREMENTAL = "incremental"
# The incremental's values a placeholder may name (``{incremental.start_value}``).
INCREMENTAL_VALUES = ("initial_value", "start_value", "last_value", "end_value", "lag")


class _WholeKeyFormatter(string.Formatter):
    """Looks a field up by its whole dotted name first (``resources.issues.number``)."""

    def get_field(self, field_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[Any, str]:
        if field_name in kwargs:
            return kwargs[field_name], field_name
        return super().get_field(field_name, args, kwargs)


def fields_in(value: object) -> set[str]:
    """Every ``{field}`` named in a string, or in the strings of a dict or list."""
    found: set[str] = set()
    if isinstance(value, str):
        found.update(name for _, name, _, _ in string.Formatter().parse(value) if name)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            found |= fields_in(key) | fields_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            found |= fields_in(item)
    return found


def expand(value: object, values: Mapping[str, object], keep_type: bool = False) -> Any:
    """``value`` with its placeholders filled; with ``keep_type`` a string that is one
    placeholder only becomes the value itself (an int stays an int in a JSON body)."""
    if isinstance(value, str):
        parsed = list(string.Formatter().parse(value))
        if keep_type and len(parsed) == 1 and not parsed[0][0] and parsed[0][1] and not parsed[0][2]:
            return _WholeKeyFormatter().get_field(parsed[0][1], (), values)[0]
        return _WholeKeyFormatter().format(value, **values) if "{" in value else value
    if isinstance(value, Mapping):
        return {expand(k, values): expand(v, values, keep_type) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [expand(item, values, keep_type) for item in value]
    return value
