"""Serialize Python items to newline-delimited JSON — the one time a row is touched in Python.

JSON has no date, time, decimal or binary type, so such values are written as strings
carrying a two-character tag (NUL + a letter). Normalization reads the tag in Spark and
gives the column its real type; untagged strings stay text. NUL never starts real text in
practice, and a real string that does is escaped with the ``S`` tag so it cannot be misread.
JSON has no NaN or infinity either (orjson writes them as ``null``), so such floats are
tagged too.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import decimal
import math
import operator
import threading
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from sparkload.common.tags import (
    TAG,
    TAG_BIGINT,
    TAG_BINARY,
    TAG_DATE,
    TAG_DECIMAL,
    TAG_DOUBLE,
    TAG_STRING,
    TAG_TIME,
    TAG_TIMESTAMP,
)
from sparkload.exceptions import UnserializableValueError

_SAFE_INT = 2**53 - 1
_INT64 = range(-(2**63), 2**63)  # what a bigint column holds

_OPTIONS = (
    orjson.OPT_APPEND_NEWLINE
    | orjson.OPT_SERIALIZE_NUMPY
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_STRICT_INTEGER  # ints beyond 53 bits raise, and take the tagged path
)
_WIDE_OPTIONS = _OPTIONS & ~orjson.OPT_STRICT_INTEGER


class _Unserializable(TypeError):
    pass


class _PerThread(threading.local):
    """How many tagged strings _default produced so far in this thread; lets dumps_row tell
    its own tags from real strings that start with NUL without scanning values in Python.
    Per thread: parallelized resources serialize side by side, and a count shared with
    them would take another thread's tags for this row's own and leave a real NUL-led
    string unescaped. A one-element list, so a loop binds it to a local once."""

    def __init__(self) -> None:
        self.tags = [0]


_per_thread = _PerThread()
_NUL_STRING = b'"\\u0000'
# A line holding _NUL_STRING holds a backslash; memchr finds (or misses) one byte far faster
# than a substring search, and most lines have no escape at all.
_BACKSLASH = b"\\"
# orjson writes NaN and infinities as null: only a line holding null can have lost one.
_NULL = b"null"
# A string value that begins with [ or {. Where a field holds strings and also lists or
# dicts, the engine reads it as text, the lists and dicts as their JSON text: such a
# string is escaped (as a NUL-led one is), so that text can only be JSON.
_OPENS_LIST, _OPENS_DICT = b'"[', b'"{'
_CONTAINER_OPENERS = ("[", "{")
_NONE_TYPE = type(None)
# Values has_special_float skips at once: no float can be inside them.
_PLAIN = frozenset({str, int, bool, _NONE_TYPE})


def _default(value: object) -> str:
    # Called by orjson only for values it cannot write natively, so the common path stays in C.
    _per_thread.tags[0] += 1
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            # Naive datetimes are taken as UTC, as dlt does.
            value = value.replace(tzinfo=datetime.timezone.utc)
        return TAG_TIMESTAMP + value.astimezone(datetime.timezone.utc).isoformat()
    if isinstance(value, datetime.date):
        return TAG_DATE + value.isoformat()
    if isinstance(value, datetime.time):
        return TAG_TIME + value.isoformat()
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise _Unserializable(f"the decimal {value} is not a finite number")
        return TAG_DECIMAL + format(value, "f")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return TAG_BINARY + base64.b64encode(bytes(value)).decode("ascii")
    raise _Unserializable(f"a value of type {type(value).__name__} cannot be stored")


def dumps_row(item: dict[str, object]) -> bytes:
    """One NDJSON line for ``item``; raises orjson's error on a value it cannot write."""
    before = _per_thread.tags[0]
    try:
        line = orjson.dumps(item, default=_default, option=_OPTIONS)
    except orjson.JSONEncodeError as exc:
        if "53-bit" not in str(exc):
            raise
        return dumps_escaped(item)
    nulls = line.count(_NULL)
    if (nulls and holds_special_float(item, nulls)) or opens_like_json(line):
        return dumps_escaped(item)
    if line.find(_BACKSLASH) != -1 and line.find(_NUL_STRING) != -1:
        line = check_tags(item, line, before)
    return line


# A list dumped whole: its rows are joined by this, which ends one row and starts the next.
_ROW_JOIN = b"},{"
_LIST_OPTIONS = _OPTIONS & ~orjson.OPT_APPEND_NEWLINE


def dumps_rows(rows: list[dict[str, object]]) -> bytes | None:
    """The NDJSON lines of ``rows`` (plain dicts) from one orjson call, or None when a row
    needs ``dumps_row``'s closer look; the lines are byte for byte dumps_row's.

    One call for many rows spares the per-row call and checks, most of what serializing a
    small row costs. The list's JSON is cut into lines where one row ends and the next
    begins (``},{``): that is safe only when the text holds no other ``},{`` (inside a
    string, or between dicts nested in a list), so the cut is made only when it occurs
    exactly once per boundary. None also when a value needs the per-row path: an int beyond
    53 bits or a value orjson refuses (an error there names the row), a NaN or an infinity
    (more nulls than the rows' top-level Nones), a real string that begins with NUL (more
    escaped NULs than tags written), a string that may begin with [ or {.
    """
    if not rows:
        return b""
    before = _per_thread.tags[0]
    try:
        text = orjson.dumps(rows, default=_default, option=_LIST_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return None
    if text.count(_ROW_JOIN) != len(rows) - 1:
        return None
    nulls = text.count(_NULL)
    if nulls and nulls != sum(operator.countOf(map(type, row.values()), _NONE_TYPE) for row in rows):
        return None
    if text.find(_BACKSLASH) != -1 and text.count(_NUL_STRING) > _per_thread.tags[0] - before:
        return None
    if opens_like_json(text):
        return None
    return text[1:-1].replace(_ROW_JOIN, b"}\n{") + b"\n"


def opens_like_json(line: bytes) -> bool:
    """Whether a string in ``line`` may begin with [ or { (a key or a quote inside a string
    may match too: the slow path then changes nothing)."""
    return line.find(_OPENS_LIST) != -1 or line.find(_OPENS_DICT) != -1


def dumps_escaped(item: dict[str, object]) -> bytes:
    """The slow path for a row holding an integer beyond ±2**53, a NaN or an infinity, or
    a string that begins with NUL, [ or {: each such value is tagged (see
    escape_tagged_strings)."""
    return orjson.dumps(escape_tagged_strings(item), default=_default, option=_WIDE_OPTIONS)


def check_tags(item: dict[str, object], line: bytes, tags_before: int) -> bytes:
    """``line`` again with real NUL-led strings escaped, if it has more than its own tags."""
    if line.count(_NUL_STRING) > _per_thread.tags[0] - tags_before:
        return orjson.dumps(escape_tagged_strings(item), default=_default, option=_OPTIONS)
    return line


@dataclasses.dataclass(frozen=True)
class BatchSerializer:
    """The pieces of dumps_row for a loop that inlines it (see extract/extractor.py), which
    binds each to a local once; a JSONEncodeError there goes to dumps_row. Made in the
    thread that serializes: ``tag_count`` is that thread's."""

    dumps: Callable[..., bytes]
    default: Callable[[object], str]
    options: int
    nul_string: bytes
    tag_count: list[int]
    # bytes.find, not ``in``: ``in`` on bytes first tries the needle as an int
    find: Callable[[bytes, bytes], int]
    count: Callable[[bytes, bytes], int]
    backslash: bytes
    null: bytes
    holds_special_float: Callable[[dict[str, object], int], bool]
    opens_like_json: Callable[[bytes], bool]
    dumps_escaped: Callable[[dict[str, object]], bytes]


def batch_serializer() -> BatchSerializer:
    """The pieces dumps_row is made of, for the extractor's loop over plain dicts."""
    return BatchSerializer(
        dumps=orjson.dumps,
        default=_default,
        options=_OPTIONS,
        nul_string=_NUL_STRING,
        tag_count=_per_thread.tags,
        find=bytes.find,
        count=bytes.count,
        backslash=_BACKSLASH,
        null=_NULL,
        holds_special_float=holds_special_float,
        opens_like_json=opens_like_json,
        dumps_escaped=dumps_escaped,
    )


def holds_special_float(item: dict[str, object], nulls: int) -> bool:
    """Whether ``item``, whose line holds ``nulls`` nulls, has a NaN or an infinity.

    Every None and every NaN or infinity is one null in the line (a string may add more).
    When the top level's Nones account for all of them, there is no NaN: the common row
    with NULLs in flat columns is spared the walk over its values."""
    nones = operator.countOf(map(type, item.values()), _NONE_TYPE)
    return nulls != nones and has_special_float(item)


def has_special_float(value: Any) -> bool:
    """True when a dict or list holds, at any depth, a NaN or an infinity.

    A walk in Python: only for a line with more nulls than its row has top-level Nones."""
    for child in value.values() if type(value) is dict else value:
        kind = type(child)
        if kind is float:
            # x - x is 0.0 (falsy) for every finite float and NaN (truthy) for NaN and both
            # infinities: one subtraction instead of a call to math.isfinite.
            if child - child:
                return True
        elif kind is dict or kind is list:
            if has_special_float(child):
                return True
        elif kind not in _PLAIN and _other_special(child):
            return True
    return False


def _other_special(value: Any) -> bool:
    """has_special_float for the rarer values: tuples, float and container subclasses, numpy."""
    if isinstance(value, float):  # also numpy.float64
        return not math.isfinite(value)
    if isinstance(value, (dict, list, tuple)):
        return has_special_float(list(value.values()) if isinstance(value, dict) else value)
    dtype = getattr(value, "dtype", None)
    if getattr(dtype, "kind", None) != "f":
        return False
    if getattr(value, "ndim", 0) == 0:  # numpy.float32, numpy.float16
        return not math.isfinite(value)
    import numpy  # an array of floats: numpy is loaded already

    return not bool(numpy.isfinite(value).all())


def _double_tag(value: float) -> str:
    if value != value:
        return TAG_DOUBLE + "NaN"
    return TAG_DOUBLE + ("Infinity" if value > 0 else "-Infinity")


def explain_failure(resource: str, position: int, item: object, error: Exception) -> UnserializableValueError:
    """Find which column of ``item`` could not be serialized and say so.

    Only runs after a failure, so walking the item in Python here costs nothing on the
    happy path.
    """
    deep = _too_deep(item)
    if deep is not None:
        column = "__".join(deep[:_SHOWN_KEYS]) + ("__…" if len(deep) > _SHOWN_KEYS else "")
        return UnserializableValueError(
            resource,
            f"item {position}, column '{column}': dicts and lists nest more than "
            f"{MAX_ITEM_DEPTH} levels deep, deeper than JSON serialization writes; keep the deep "
            "part as a string (json.dumps) or flatten it first",
            position=position,
            column=column or None,
        )
    for path, value in _walk(item, ()):
        try:
            # As the slow path writes it: an int beyond 53 bits is a valid bigint there, so
            # only a value that truly cannot be stored is blamed.
            orjson.dumps(escape_tagged_strings(value), default=_default, option=_WIDE_OPTIONS)
        except (TypeError, orjson.JSONEncodeError) as exc:
            column = "__".join(path) or "<item>"
            reason = str(exc.__cause__ or exc)
            return UnserializableValueError(
                resource,
                f"item {position}, column '{column}': {reason} "
                f"(value of type {type(value).__name__}); convert it to a supported type "
                "(str, int, float, bool, dict, list, datetime, date, Decimal, bytes) first",
                position=position,
                column=column if path else None,
            )
    return UnserializableValueError(
        resource, f"item {position} cannot be serialized: {error}", position=position
    )


# orjson writes dicts and lists up to 254 levels deep; explaining a deeper item by walking
# it recursively would exceed Python's own recursion limit.
MAX_ITEM_DEPTH = 254
# How many keys of a too deep item's path an error shows.
_SHOWN_KEYS = 8


def _too_deep(item: object) -> tuple[str, ...] | None:
    """The key path at which ``item`` nests more than MAX_ITEM_DEPTH dicts and lists (list
    levels add no key), or None; walked without recursion."""
    stack: list[tuple[object, tuple[str, ...], int]] = [(item, (), 0)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, (dict, list, tuple)):
            if depth >= MAX_ITEM_DEPTH:
                return path
            if isinstance(value, dict):
                stack.extend((child, (*path, str(key)), depth + 1) for key, child in value.items())
            else:
                stack.extend((child, path, depth + 1) for child in value)
    return None


def _walk(value: object, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], object]]:
    if isinstance(value, dict):
        for key, child in value.items():
            if not isinstance(key, str):
                yield path + (repr(key),), {key: None}
                continue
            yield from _walk(child, path + (key,))
    elif isinstance(value, (list, tuple)):
        for child in value:
            yield from _walk(child, path)
    else:
        yield path, value


def escape_tagged_strings(item: Any) -> Any:
    """Escape real strings that begin with NUL, [ or {, tag integers beyond ±2**53 and tag NaN and
    infinities (slow path, only for a row that has one)."""
    if isinstance(item, dict):
        return {key: escape_tagged_strings(value) for key, value in item.items()}
    if isinstance(item, (list, tuple)):
        return [escape_tagged_strings(value) for value in item]
    if isinstance(item, str) and (item.startswith(TAG) or item.startswith(_CONTAINER_OPENERS)):
        return TAG_STRING + item
    if isinstance(item, int) and not isinstance(item, bool) and abs(item) > _SAFE_INT:
        if item not in _INT64:
            raise _Unserializable(
                f"the integer {item} does not fit a 64-bit bigint (-2**63 to 2**63-1): "
                "yield it as a decimal.Decimal or a str"
            )
        return TAG_BIGINT + str(item)
    if isinstance(item, float) or getattr(getattr(item, "dtype", None), "kind", None) == "f":
        if getattr(item, "ndim", 0) > 0:
            # A numpy array with a NaN or an infinity: element by element, each finite
            # element keeping its numpy type so it is written as orjson writes it.
            return [escape_tagged_strings(value) for value in item] if _other_special(item) else item
        if not math.isfinite(item):
            return _double_tag(float(item))
    return item
