"""Split values whose JSON type conflicts within one load into variant keys.

Spark's JSON reader needs one type per field; when a field holds, say, numbers in some
rows and strings in others, it refuses the file. Only then does this module read the
staged lines in Python again (two passes: the types of each field, then the rewrite).
dlt's rule decides: the column's type in the destination table, else its ``data_type``
hint, else the first type seen for a field, keeps the field, and a value of an incompatible type moves to
``<key>\\x00v_<type>``, which normalization names ``<col>__v_<type>``. Ints and floats
share a field, except where the column is bigint; a field that also holds integers beyond
±2**53 (tagged text) has all its ints tagged so none is read as a double; a field (or a list
of scalars) that also holds NaN or infinities (tagged text) has all its numbers tagged as
doubles, so they share one type with them; ints in a decimal field become decimals.
The happy path never comes here. It also handles what the JSON reader does not see as a
conflict: ints and floats read as double for a bigint column.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import orjson
from pyspark.sql import types as T

from sparkload.common.json_types import JSONValue
from sparkload.common.naming import normalize_path
from sparkload.common.tags import TAG, TAG_BIGINT, TAG_DECIMAL, TAG_DOUBLE, TAG_JSON, TAG_STRING, TAGS
from sparkload.exceptions import NormalizeError
from sparkload.normalize.columns import NAME_KEY_MARK, PATH_KEY_MARK, VARIANT_KEY_MARK, field_names

# How deep (dicts and lists) a staged row may nest before its deeper dicts are joined into
# the keys of the dict at this depth. The engine describes a schema to its client in a
# protobuf message whose nesting is limited (Sail 0.7.2 with pyspark-client 4.2 fails from
# 32 nested dicts on); well below that, so lists of dicts under the joined keys fit too.
MAX_STAGED_DEPTH = 16
# The deepest a value kept whole as JSON (beyond max_table_nesting) can be.
MAX_JSON_DEPTH = 28
# How deep lists in lists (nested tables, which no rewrite joins) may nest in a staged row:
# the engine describes lists 45 deep to its client but not 60.
MAX_STAGED_LIST_DEPTH = 40
# The column of a nested table that holds a list's scalar elements (dlt's name).
ELEMENT_VALUE = "value"

Path_ = tuple[str, ...]


def _json_type(value: JSONValue) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "bigint"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        if value.startswith(TAG) and value[:2] in TAGS:
            if value[:2] == TAG_BIGINT:
                return "wide_bigint"
            return "special_double" if value[:2] == TAG_DOUBLE else TAGS[value[:2]]
        return "text"
    return "object" if isinstance(value, dict) else "array"


# What stands in for a None element of a list of dicts or of a list of lists.
_EMPTY_ELEMENT: dict[frozenset[str], Callable[[], JSONValue]] = {
    frozenset({"object"}): dict,
    frozenset({"array"}): list,
}

# Tagged values that belong to a JSON number type.
_FAMILY = {"wide_bigint": "bigint", "special_double": "double"}


def _family(value_type: str) -> str:
    return _FAMILY.get(value_type, value_type)


def _double_tag(value: JSONValue) -> JSONValue:
    """A number as tagged double text, read back as the same double (ints up to ±2**53 are
    exact doubles; wider ones never share a field with doubles)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return TAG_DOUBLE + repr(float(value))
    return value


def _bigint_tag(value: JSONValue) -> JSONValue:
    """An int as tagged bigint text (a tagged one is left as it is)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return TAG_BIGINT + str(value)
    return value


def _untagged(value: JSONValue) -> JSONValue:
    """A staged value as JSON text holds it in a ``__v_json`` column: tags are
    serialization's, never the user's, so each tagged value is written as dlt's JSON
    encoder writes it (ISO dates and times, decimal digits, base64 bytes, ``"NaN"``)."""
    if isinstance(value, dict):
        return {key: _untagged(child) for key, child in value.items()}
    if isinstance(value, list):
        return [_untagged(child) for child in value]
    if isinstance(value, str) and value[:2] in TAGS:
        return int(value[2:]) if value[:2] == TAG_BIGINT else value[2:]
    if isinstance(value, str) and value.startswith(TAG_STRING):
        return value[len(TAG_STRING) :]
    return value


# Destination column types that decide a field's JSON type. Others (timestamps held as
# ISO text …) are typed after reading, so they give no preference here.
_JSON_TYPE_OF_COLUMN: dict[type[T.DataType], str] = {
    T.LongType: "bigint",
    # Narrower columns (another writer's) take the same JSON type as bigint and double; the
    # values they cannot hold go to a variant column later (types.fit_test).
    T.IntegerType: "bigint",
    T.ShortType: "bigint",
    T.ByteType: "bigint",
    T.DoubleType: "double",
    T.FloatType: "double",
    T.BooleanType: "bool",
    T.StringType: "text",
    T.DecimalType: "decimal",
}
# The same for a column that does not exist yet but has a ``data_type`` hint.
_JSON_TYPE_OF_HINT = {
    "bigint": "bigint",
    "double": "double",
    "bool": "bool",
    "text": "text",
    "decimal": "decimal",
    "json": "json",
}


def preferred_types(
    schema: T.StructType | None,
    hints: Mapping[str, Mapping[str, object]] | None = None,
    nested_hints: Mapping[str, Mapping[str, Mapping[str, object]]] | None = None,
) -> Callable[[Path_], str | None]:
    """The JSON type a field must have to land in its column: the existing destination
    column's, else the ``data_type`` hint's (for a field of a list's items, the hint of its
    nested table's column, ``nested_hints`` by the table's path under the root)."""
    columns = {f.name: type(f.dataType) for f in schema.fields} if schema is not None else {}
    hinted = _hinted_types(hints)
    nested = {table: _hinted_types(columns) for table, columns in (nested_hints or {}).items()}

    def preferred(path: Path_) -> str | None:
        if "[]" in path:
            table, column = nested_column_of(path)
            return _JSON_TYPE_OF_HINT.get(nested.get(table, {}).get(column, ""))
        name = normalize_path(list(path))
        if name in columns:
            return _JSON_TYPE_OF_COLUMN.get(columns[name])
        return _JSON_TYPE_OF_HINT.get(hinted.get(name, ""))

    return preferred


def _hinted_types(hints: Mapping[str, Mapping[str, object]] | None) -> dict[str, str]:
    return {name: str(h.get("data_type")) for name, h in (hints or {}).items() if h.get("data_type")}


def nested_column_of(path: Path_) -> tuple[str, str]:
    """The nested table (its path under the root) and the column a field of list items lands
    in, as ``columns.flatten`` names them: ``("orders", "[]", "lines", "[]", "sku")`` →
    ``("orders__lines", "sku")``; a list directly in a list is the table ``<list>__list``."""
    table: list[str] = []
    column: list[str] = []
    for part in path:
        if part != "[]":
            column.append(part)
        elif column:
            table += column  # the keys down to this list name its table
            column = []
        else:
            table.append("list")  # a list in a list: dlt's <table>__list
    return normalize_path(table), normalize_path(column) if column else "value"


def doubles_for_bigint_columns(schema: T.StructType, preferred: Callable[[Path_], str | None]) -> bool:
    """Whether the JSON reader made a field double (ints and floats together) whose column
    is bigint: the ints must then stay ints, so the floats are split off."""

    def walk(struct: T.StructType, path: Path_) -> bool:
        for field in struct.fields:
            here = path + (field.name,)
            dtype = field.dataType
            # the items of lists of dicts: their fields are a nested table's columns
            while isinstance(dtype, T.ArrayType):
                dtype, here = dtype.elementType, here + ("[]",)
            if isinstance(dtype, T.StructType) and walk(dtype, here):
                return True
            if isinstance(field.dataType, T.DoubleType) and preferred(here) == "bigint":
                return True
        return False

    return walk(schema, ())


class _FieldTypes:
    """First pass: the first type and the set of types of every field path."""

    def __init__(self, preferred: Callable[[Path_], str | None]) -> None:
        self.first: dict[Path_, str] = {}
        self.seen: dict[Path_, set[str]] = {}
        self.preferred = preferred
        self.pinned: set[Path_] = set()  # fields whose type the column decides
        self.keys: dict[Path_, set[str]] = {}  # the keys of the dicts at each path

    def visit(self, item: JSONValue, path: Path_ = ()) -> None:
        if isinstance(item, list):
            element = path + ("[]",)
            for value in item:
                value_type = _json_type(value)
                if value_type is not None:
                    # The types of a list's elements: whether its numbers are tagged, and
                    # what stands in for its None elements.
                    self.seen.setdefault(element, set()).add(value_type)
                    if value_type not in ("object", "array"):
                        # A scalar element is the ``value`` column of the nested table's
                        # row, where values of different types split as a field's do.
                        self._record(element + (ELEMENT_VALUE,), value_type)
                self.visit(value, element)
            return
        if not isinstance(item, dict):
            return
        siblings = self.keys.setdefault(path, set())
        for key, value in item.items():
            key_path = path + (key,)
            siblings.add(key)
            value_type = _json_type(value)
            if value_type is None:
                continue
            self._record(key_path, value_type)
            self.visit(value, key_path)

    def _record(self, key_path: Path_, value_type: str) -> None:
        if key_path not in self.first:
            pinned = self.preferred(key_path)
            self.first[key_path] = pinned or value_type
            if pinned:
                self.pinned.add(key_path)
        self.seen.setdefault(key_path, set()).add(value_type)

    def mixed_elements(self, element: Path_) -> bool:
        """Whether the elements of the lists at ``element`` cannot share one type: dicts,
        lists and scalars together, or scalars of incompatible types."""
        seen = self.seen.get(element, set())
        if len({_element_kind(value_type) for value_type in seen}) > 1:
            return True
        value = element + (ELEMENT_VALUE,)
        return any(not self.compatible(value, value_type) for value_type in self.seen.get(value, ()))

    def compatible(self, path: Path_, value_type: str) -> bool:
        first = _family(self.first[path])
        current = _family(value_type)
        if first == current:
            return True
        if first == "decimal" and current == "bigint":
            return True  # an int is an exact decimal (rewritten as one)
        if {first, current} != {"bigint", "double"}:
            return False
        # Ints and floats share a field (read as double), unless the column is bigint (its
        # ints must stay ints) or wide ints would be rounded.
        if first == "bigint" and path in self.pinned:
            return False
        return "wide_bigint" not in self.seen[path]

    def case_renames(self) -> dict[Path_, dict[str, str]]:
        """Per dict path, the keys that differ from a sibling only in case, each as it is
        renamed (``<key>\\x00n_<column>``); the columns are those ``columns.field_names``
        gives all the siblings, so they do not depend on the order of keys in the data."""
        renames: dict[Path_, dict[str, str]] = {}
        for path, keys in self.keys.items():
            lowered: dict[str, list[str]] = {}
            for key in keys:
                lowered.setdefault(key.lower(), []).append(key)
            if all(len(group) == 1 for group in lowered.values()):
                continue
            ordered = sorted(keys)
            names, _ = field_names(ordered)
            colliding = {key for group in lowered.values() if len(group) > 1 for key in group}
            renames[path] = {
                key: key + NAME_KEY_MARK + name
                for key, name in zip(ordered, names, strict=True)
                if key in colliding
            }
        return renames

    def doubles_tagged(self, path: Path_) -> bool:
        """Whether the numbers of ``path`` travel as tagged doubles: it holds NaN or
        infinities, which only text can carry, and JSON allows one type per field."""
        return "special_double" in self.seen.get(path, ())


def _nesting_allowed(level: int, max_nesting: int | None) -> bool:
    # As columns.flatten decides it (dlt's rule).
    return max_nesting is None or level + 1 <= max_nesting


def _element_kind(value_type: str) -> str:
    return value_type if value_type in ("object", "array") else "scalar"


def _depth(value: JSONValue) -> int:
    """How many dicts and lists nest in ``value`` (0 for a scalar)."""
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


class _Rewriter:
    def __init__(self, types: _FieldTypes, table: str, max_nesting: int | None) -> None:
        self.types = types
        self.table = table
        self.max_nesting = max_nesting
        self.renames = types.case_renames()

    def rewrite(self, item: JSONValue, path: Path_ = (), level: int = 0, depth: int = 0) -> JSONValue:
        """``item`` without conflicts; ``level`` is the nesting level of its fields (as
        columns.flatten counts it), ``depth`` how deep in the staged row it is."""
        if isinstance(item, list):
            return self._rewrite_list(item, path, level, depth)
        if not isinstance(item, dict):
            return item
        renames = self.renames.get(path, {})
        out: dict[str, JSONValue] = {}
        for key, value in item.items():
            key_path = path + (key,)
            name = renames[key] if key in renames else str(key)
            value_type = _json_type(value)
            nested = value_type in ("object", "array") and _nesting_allowed(level, self.max_nesting)
            if value_type is None:
                out[name] = value
            elif value_type in ("object", "array") and self.types.first[key_path] == "json":
                # A column hinted json keeps a dict or list whole, as tagged JSON text.
                out[name] = TAG_JSON + orjson.dumps(_untagged(value)).decode()
            elif self.types.compatible(key_path, value_type):
                if _family(value_type) == "bigint" and self.types.first[key_path] == "decimal":
                    digits = value[len(TAG_BIGINT) :] if isinstance(value, str) else str(value)
                    value = TAG_DECIMAL + digits
                elif value_type == "bigint" and "wide_bigint" in self.types.seen[key_path]:
                    value = TAG_BIGINT + str(value)
                elif self.types.doubles_tagged(key_path) and not (
                    value_type == "bigint"
                    and self.types.first[key_path] == "bigint"
                    and key_path in self.types.pinned
                ):
                    # The field is read as double: every number in it as a tagged double,
                    # except the ints of a bigint column, which stay ints.
                    value = _double_tag(value)
                if not nested:
                    self._refuse_too_deep(value, key_path, depth)
                out[name] = self.rewrite(value, key_path, level + 1, depth + 1)
            elif value_type in ("object", "array"):
                # A nested value where a scalar was seen first: kept whole, as JSON text,
                # tagged as such (untagged text that begins with [ or { is read as the
                # engine's text of a list or dict, whose strings still carry their tags).
                out[name + VARIANT_KEY_MARK + "json"] = TAG_JSON + orjson.dumps(_untagged(value)).decode()
            else:
                if value_type == "double" and self.types.doubles_tagged(key_path):
                    value = _double_tag(value)  # beside the tagged ones in the variant key
                out[name + VARIANT_KEY_MARK + _family(value_type)] = value
        return self._joined(out, level) if depth >= MAX_STAGED_DEPTH else out

    def _rewrite_list(self, item: list[JSONValue], path: Path_, level: int, depth: int) -> list[JSONValue]:
        element = path + ("[]",)
        if depth >= MAX_STAGED_LIST_DEPTH and any(isinstance(value, list) for value in item):
            column = normalize_path([part for part in path if part != "[]"] or ["value"])
            raise NormalizeError(
                f"table '{self.table}', column '{column}': lists nest more than "
                f"{MAX_STAGED_LIST_DEPTH} levels deep, each a nested table one level further, "
                "which the engine cannot describe. Set max_table_nesting (dlt's hint) so deeper "
                "levels are kept whole as JSON, or flatten the data first. Nothing was loaded; "
                "the extracted package stays and the next run retries it "
                "(pipeline.drop_pending_packages() discards it)",
                table=self.table,
                column=column,
            )
        seen = self.types.seen.get(element, set())
        if self.types.doubles_tagged(element):
            item = [_double_tag(value) for value in item]
        elif "wide_bigint" in seen:
            # Ints beyond ±2**53 travel as tagged text: the list's other ints too, so
            # its elements share one JSON type (as the ints of a field do).
            item = [_bigint_tag(value) for value in item]
        empty = _EMPTY_ELEMENT.get(frozenset(seen))
        if empty is not None:
            # The JSON reader cannot read a None among dicts or lists (Sail 0.7.2): it
            # becomes an empty one, which loads as a nested row without values.
            item = [empty() if value is None else value for value in item]
        if self.types.mixed_elements(element):
            # Scalars, dicts and lists in one list (``[1, [2]]``), or scalars of types that
            # share no column (``[1, "a"]``): each element becomes a row of the nested
            # table, as dlt makes it, and its scalars split into variant columns.
            return [self._element_row(value, element, level, depth + 1) for value in item]
        # A list in a list is a nested table one level further (``<table>__list``).
        return [
            self.rewrite(value, element, level + 1 if isinstance(value, list) else level, depth + 1)
            for value in item
        ]

    def _element_row(self, value: JSONValue, element: Path_, level: int, depth: int) -> JSONValue:
        """An element of a list of mixed elements as the row of its nested table dlt makes
        of it: a dict's keys, a scalar in ``value``, a list as the nested table
        ``<table>__list``; None a row without values (the reader cannot read None there)."""
        if isinstance(value, dict):
            return self.rewrite(value, element, level, depth)
        if isinstance(value, list):
            return {"list": self.rewrite(value, element, level + 1, depth + 1)}
        return {} if value is None else self.rewrite({ELEMENT_VALUE: value}, element, level, depth)

    def _refuse_too_deep(self, value: JSONValue, key_path: Path_, depth: int) -> None:
        """Refuse a dict or list kept whole as JSON (beyond max_table_nesting) that nests
        deeper than the engine can describe."""
        if isinstance(value, (dict, list)) and depth + _depth(value) > MAX_JSON_DEPTH:
            column = normalize_path([part for part in key_path if part != "[]"])
            raise NormalizeError(
                f"table '{self.table}', column '{column}': a value nests {_depth(value)} dicts "
                f"or lists deep beyond max_table_nesting={self.max_nesting}, where it is kept "
                f"whole as JSON; the engine cannot store JSON more than {MAX_JSON_DEPTH} levels "
                "deep. Raise max_table_nesting (or leave it unset) so the dicts flatten into "
                "columns, or store the value as a JSON string",
                table=self.table,
                column=column,
            )

    def _joined(self, out: dict[str, JSONValue], level: int) -> dict[str, JSONValue]:
        """``out`` with the dicts in it (already joined themselves) joined into its keys:
        ``{"a": {"b": 1}}`` → ``{"a\\x00p_b": 1}``, which normalize names ``a__b``."""
        joined: dict[str, JSONValue] = {}
        for key, value in out.items():
            # A dict beyond max_table_nesting stays whole (a JSON column).
            levels = level + key.count(PATH_KEY_MARK)
            if (
                isinstance(value, dict)
                and VARIANT_KEY_MARK not in key
                and _nesting_allowed(levels, self.max_nesting)
            ):
                for child, child_value in value.items():
                    joined[key + PATH_KEY_MARK + child] = child_value
            else:
                joined[key] = value
        return joined


def _lines(files: list[Path]) -> Iterator[JSONValue]:
    for source in files:
        with open(source, "rb") as lines:
            for line in lines:
                yield orjson.loads(line)


def split_conflicts(
    source_dir: Path,
    target_dir: Path,
    preferred: Callable[[Path_], str | None],
    table: str = "",
    max_nesting: int | None = None,
) -> None:
    """Rewrite every staged NDJSON file of ``source_dir`` into ``target_dir`` so the engine
    can read it: values of conflicting types split into variant keys, lists of mixed
    elements made rows, keys differing only in case renamed, dicts nested too deep joined
    into keys. ``preferred`` gives the type a field's column decides (see
    ``preferred_types``); ``max_nesting`` is the table's max_table_nesting."""
    files = sorted(source_dir.glob("*.jsonl"))
    types = _FieldTypes(preferred)
    for item in _lines(files):
        types.visit(item)
    rewriter = _Rewriter(types, table, max_nesting)
    target_dir.mkdir(parents=True, exist_ok=True)
    for source in files:
        with open(source, "rb") as lines, open(target_dir / source.name, "wb") as out:
            for line in lines:
                out.write(
                    orjson.dumps(rewriter.rewrite(orjson.loads(line)), option=orjson.OPT_APPEND_NEWLINE)
                )
