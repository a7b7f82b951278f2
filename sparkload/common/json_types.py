"""The types of JSON-shaped values: what state, manifests, schemas and REST payloads hold
once parsed, so that code passing them on says so instead of taking ``Any``."""

from __future__ import annotations

from typing import TypeAlias

# A value `json.loads` (or orjson) can return. Recursive: mypy checks what is inside.
JSONScalar: TypeAlias = str | int | float | bool | None
JSONValue: TypeAlias = JSONScalar | list["JSONValue"] | dict[str, "JSONValue"]
# A parsed JSON object, the usual top level of a record.
JSONObject: TypeAlias = dict[str, JSONValue]
