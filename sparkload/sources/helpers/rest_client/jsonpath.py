"""JSONPath as the REST helpers use it (jsonpath-ng): paths compiled once, values found,
and a value set at a dotted path of a request body."""

from __future__ import annotations

import functools
from typing import Any

from jsonpath_ng import JSONPath
from jsonpath_ng import parse as _parse

TJsonPath = str | JSONPath


@functools.lru_cache(maxsize=256)
def _compiled(path: str) -> JSONPath:
    return _parse(path)


def compile_path(path: TJsonPath) -> JSONPath:
    return _compiled(path) if isinstance(path, str) else path


def find_values(path: TJsonPath, data: object) -> list[Any]:
    """Every value ``path`` selects in ``data`` (an empty list when none)."""
    return [match.value for match in compile_path(path).find(data)]


def set_value_at_path(body: dict[str, Any], dotted_path: str, value: object) -> None:
    """``body[a][b] = value`` for ``a.b``, making the dicts on the way."""
    *parents, last = dotted_path.split(".")
    node = body
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
