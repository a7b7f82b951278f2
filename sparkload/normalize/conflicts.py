"""Split values whose JSON type conflicts within one load into variant keys.

Spark's JSON reader needs one type per field; when a field holds, say, numbers in some
rows and strings in others, it refuses the file. Only then does this module read the
staged lines in Python again and move each value whose type differs from the first type
seen for its field to ``<key>\\x00v_<type>``, which normalization names
``<col>__v_<type>`` (dlt's rule: the first type seen wins). The happy path never comes here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from sparkload.extract.serialize import TAG, TAGS
from sparkload.normalize.columns import VARIANT_KEY_MARK


def _json_type(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "double" if isinstance(value, float) else "bigint"
    if isinstance(value, str):
        if value.startswith(TAG) and value[:2] in TAGS:
            return TAGS[value[:2]]
        return "text"
    if isinstance(value, dict):
        return "object"
    return "array"


def _compatible(first: str, current: str) -> bool:
    # Ints and floats share a column (widened to double); the rest must match.
    return first == current or {first, current} == {"bigint", "double"}


class ConflictSplitter:
    def __init__(self) -> None:
        self._types: dict[tuple[str, ...], str] = {}

    def split(self, item: Any, path: tuple[str, ...] = ()) -> Any:
        if isinstance(item, list):
            return [self.split(value, path + ("[]",)) for value in item]
        if not isinstance(item, dict):
            return item
        out: dict[str, Any] = {}
        for key, value in item.items():
            key_path = path + (key,)
            value_type = _json_type(value)
            if value_type is None:
                out[key] = value
                continue
            first = self._types.setdefault(key_path, value_type)
            if _compatible(first, value_type):
                out[key] = self.split(value, key_path)
            elif value_type in ("object", "array"):
                # A nested value where a scalar was seen: keep it under a variant key as JSON text.
                out[key + VARIANT_KEY_MARK + "json"] = orjson.dumps(value).decode()
            else:
                out[key + VARIANT_KEY_MARK + value_type] = value
        return out


def split_conflicts(source_dir: Path, target_dir: Path) -> None:
    """Rewrite every staged NDJSON file of ``source_dir`` into ``target_dir`` without conflicts."""
    splitter = ConflictSplitter()
    target_dir.mkdir(parents=True, exist_ok=True)
    for source in sorted(source_dir.glob("*.jsonl")):
        with open(source, "rb") as lines, open(target_dir / source.name, "wb") as out:
            for line in lines:
                out.write(orjson.dumps(splitter.split(orjson.loads(line)), option=orjson.OPT_APPEND_NEWLINE))
