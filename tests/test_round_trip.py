"""Property: whatever JSON-like items a resource yields, the tables give every value back.

Hypothesis generates lists of items (nested dicts and lists, one key holding values of
different types across items, unicode keys, NULLs, ints near ±2**53 and ±2**63, NaN and
infinities, naive and aware datetimes, dates, decimals, bytes, bools, strings that start
with NUL), loads each list into a fresh table with append, replace and merge (primary key
``id``), reads the root table and its nested tables back with delta-rs and rebuilds the
items (``read_back``): flattened ``a__b`` columns become nested dicts again, nested tables
``<table>__<path>`` become lists again through ``_sparkload_parent_id`` and
``_sparkload_list_idx``, and a variant column ``<col>__v_<type>`` gives its value back to
``<col>``.

The rebuilt items equal the yielded ones under the documented rules (docs/concepts.md),
which ``canonical`` and ``same_value`` apply:

- keys come back in dlt's ``snake_case`` (sparkload/common/naming.py);
- a key whose value is None, an empty dict or an empty list is absent (no column holds it,
  no nested row); a None element of a list of dicts comes back as ``{}``, of a list of lists
  as ``[]`` (a nested row without values);
- a naive datetime is UTC, an aware one comes back as the same instant in UTC;
  a date stays a date;
- an int sharing a column with floats comes back as the equal double (exact up to 2**53;
  wider ints are kept in a ``__v_bigint`` column), an int in a decimal column as the equal
  Decimal; a Decimal compares by value (``1.50`` is ``1.500000000``);
- a bool stays a bool (never 0/1), bytes stay bytes, NaN stays NaN;
- a dict or list where the key first held a scalar goes to ``<col>__v_json`` as JSON text
  with its keys as yielded and its values as dlt's JSON encoder writes them (``json_form``),
  an empty one too (``{}``, ``[]``).

The test suite runs a fixed, derandomized set of examples; ``nox -s property`` runs
thousands (``SPARKLOAD_PROPERTY_EXAMPLES``) from a random seed.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import itertools
import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import deltalake
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from property_settings import property_settings

import sparkload as sl
from sparkload.common.naming import normalize_identifier
from sparkload.common.system_columns import ID, LIST_IDX, PARENT_ID, SYSTEM_COLUMNS
from sparkload.normalize.types import ISO_TIMESTAMP

UTC = datetime.timezone.utc
EXACT_DOUBLE_INT = 2**53
_tables = itertools.count()

# -- settings -------------------------------------------------------------------------------
# 100 examples per disposition in the suite (see property_settings.py).
PROPERTY_SETTINGS = property_settings(100)

# -- generated items ------------------------------------------------------------------------
ROW_KEY = "id"
_ISO = re.compile(ISO_TIMESTAMP)


def _usable_key(key: str) -> bool:
    name = normalize_identifier(key) if key.strip() else ""
    return bool(name) and not (
        name == ROW_KEY
        # ``value`` is the column of a list of scalars: {"value": x} in a list would read
        # back as x (dlt's layout, not a loss).
        or name == "value"
        # A key that normalizes to ``v_<type>`` below a dict key ``a`` makes ``a__v_<type>``,
        # the name of a's variant column: the engine refuses the duplicate column
        # (reported: a nested key named like a variant column fails the load).
        or name.startswith("v_")
        # Reserved for sparkload's own columns (the names checks' business).
        or name.startswith("_sparkload")
    )


# Empty and blank keys are left out: normalization raises a bare ValueError for them
# (reported: an empty key fails the load with "cannot normalize an empty identifier").
keys = st.text(
    alphabet=st.sampled_from("abcxyzAZ019_ -+*@|.éßЖ日"),
    min_size=1,
    max_size=6,
).filter(_usable_key)

# A few keys per example, shared by all its dicts, so one key meets values of many types.
# Keys that collide once normalized are left out (one name each); so are keys that differ
# only in case, which Spark matches case-insensitively (reported: ``ab`` beside ``aB``
# fails normalize with "Ambiguous case-insensitive column match").
key_pools = st.lists(keys, min_size=1, max_size=5, unique_by=(normalize_identifier, str.lower))

BIG_INTS = st.sampled_from(
    [2**53 - 1, 2**53, 2**53 + 1, 2**62 + 1, 2**63 - 1, -(2**53) - 1, -(2**63), -(2**63) + 1]
)
ints = st.integers(-(2**63), 2**63 - 1) | st.integers(-1000, 1000) | BIG_INTS
# Text that looks like an ISO timestamp becomes a timestamp (documented; tests/test_types.py).
texts = (st.text(max_size=8) | st.text(max_size=6).map(lambda s: "\x00" + s)).filter(
    lambda s: not _ISO.match(s)
)
offsets = st.integers(-14 * 60, 14 * 60).map(lambda m: datetime.timezone(datetime.timedelta(minutes=m)))
# Years 2..9998: an aware datetime at the very ends has no UTC value (a clear extract error).
datetimes = st.datetimes(datetime.datetime(2, 1, 1), datetime.datetime(9998, 12, 31)) | st.datetimes(
    datetime.datetime(2, 1, 1), datetime.datetime(9998, 12, 31), timezones=offsets
)
# Integer digits plus max(9, scale) must fit decimal(38) for the whole column (documented).
decimals = st.decimals(
    min_value=-(10**20) + 1, max_value=10**20 - 1, places=None, allow_nan=False, allow_infinity=False
).filter(lambda d: -d.as_tuple().exponent <= 18)  # type: ignore[operator]


def scalars(allow_nan: bool) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.booleans(),
        ints,
        st.floats(allow_nan=allow_nan, allow_infinity=True),
        texts,
        datetimes,
        st.dates(),
        decimals,
        st.binary(max_size=6),
    )


@st.composite
def item_lists(draw: st.DrawFn, allow_nan: bool) -> list[dict[str, Any]]:
    """Items with a unique ``id``, their keys from one small pool."""
    pool = st.sampled_from(draw(key_pools))
    values = st.recursive(
        scalars(allow_nan),
        lambda children: st.lists(children, max_size=3) | st.dictionaries(pool, children, max_size=3),
        max_leaves=10,
    )
    bodies = draw(st.lists(st.dictionaries(pool, values, max_size=4), min_size=1, max_size=5))
    items = [{ROW_KEY: index, **body} for index, body in enumerate(bodies)]
    return one_json_type_per_list(items)


# -- what the generator leaves out ----------------------------------------------------------
def staged_json_type(value: Any) -> str | None:
    """The JSON type a value is staged as (extract/serialize.py): tagged values are text."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "number" if abs(value) <= EXACT_DOUBLE_INT - 1 else "wide_int"
    if isinstance(value, float):
        return "number" if math.isfinite(value) else "special_float"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "text"


# Which staged types the elements of one list path may mix: normalization reconciles
# numbers with NaN (all tagged as doubles) and wide ints with other ints (all tagged).
_LIST_FAMILIES = {
    "number": "numeric",
    "special_float": "numeric",
    "wide_int": "numeric",
}


def one_json_type_per_list(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop list elements whose JSON type differs from the first one at the same list path
    in the whole load, and lists left with nothing to load.

    Reported, not fixed: the elements of a list (across all items) that mix JSON types
    (``[1, "x"]``, ``[1, {"b": 2}]``, ``[2**60, 1.5]``) fail normalize with the engine's
    "Json error": the conflict splitter gives dict keys variant columns but not elements.
    """
    first: dict[tuple[str, ...], str] = {}
    # A list path may hold ints beyond 2**53 or floats, not both: tagged doubles would round
    # the ints, and a list has no variant column to keep either apart.
    with_wide_ints: set[tuple[str, ...]] = set()
    with_floats: set[tuple[str, ...]] = set()

    def element_type(path: tuple[str, ...], value: Any) -> str | None:
        kind = staged_json_type(value)
        if kind is None:
            return None
        family = _LIST_FAMILIES.get(kind, kind)
        if kind == "wide_int":
            if path in with_floats:
                return "conflict"
            with_wide_ints.add(path)
        if isinstance(value, float):
            if path in with_wide_ints:
                return "conflict"
            with_floats.add(path)
        return family

    def repair(value: Any, path: tuple[str, ...]) -> Any:
        if isinstance(value, dict):
            repaired = {key: repair(child, path + (key,)) for key, child in value.items()}
            if "[]" in path:
                # Reported, not fixed: an empty dict inside a list's dict ([{"a": 1, "b": {}}])
                # fails normalize with "Parquet does not support writing empty structs".
                repaired = {key: child for key, child in repaired.items() if child != {}}
            return repaired
        if not isinstance(value, list):
            return value
        element = path + ("[]",)
        kept = []
        for child in value:
            kind = element_type(element, child)
            if kind == "conflict" or (kind is not None and first.setdefault(element, kind) != kind):
                continue
            kept.append(repair(child, element))
        # A list without a value anywhere ([None], [{}], [[]]) leaves rows without columns,
        # which read back as empty dicts or lists whatever the elements were, so such lists
        # are not generated. (Reported: [None, {}] alone fails the engine's JSON schema
        # inference.)
        return kept if has_value(kept) else None

    return [repair(item, ()) for item in items]


def has_value(value: Any) -> bool:
    """Whether a value leaves anything in a table (a non-NULL leaf somewhere)."""
    if isinstance(value, dict):
        return any(has_value(child) for child in value.values())
    if isinstance(value, list):
        return any(has_value(child) for child in value)
    return value is not None


# -- reading the tables back ----------------------------------------------------------------
class JsonText:
    """A value read from a ``__v_json`` column (compared with ``json_form``)."""

    def __init__(self, text: str) -> None:
        self.value = orjson.loads(text)

    def __repr__(self) -> str:
        return f"JsonText({self.value!r})"


def read_tables(dataset_uri: str, table: str) -> dict[str, list[dict[str, Any]]]:
    """The root table and every nested table under it, read by delta-rs."""
    names = [
        path.name
        for path in Path(dataset_uri).iterdir()
        if path.name == table or path.name.startswith(table + "__")
    ]
    return {
        name: deltalake.DeltaTable(f"{dataset_uri}/{name}").to_pyarrow_table().to_pylist() for name in names
    }


def unflatten(row: dict[str, Any]) -> dict[str, Any]:
    """A row's non-NULL user columns as nested dicts: ``a__b`` → ``{"a": {"b": ...}}``, and
    ``a__v_<type>`` as the value of ``a``."""
    out: dict[str, Any] = {}
    for column, value in row.items():
        if column in SYSTEM_COLUMNS or value is None:
            continue
        parts = column.split("__")
        if parts[-1].startswith("v_"):
            variant_type = parts.pop()[2:]
            value = JsonText(value) if variant_type == "json" else value
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


def read_back(dataset_uri: str, table: str) -> list[dict[str, Any]]:
    """The root rows rebuilt as items: nested tables back into lists, ordered by list index."""
    tables = read_tables(dataset_uri, table)
    children: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for name, rows in tables.items():
        for row in rows:
            if row.get(PARENT_ID) is not None:
                children[row[PARENT_ID]][name].append(row)

    def rebuild(name: str, row: dict[str, Any]) -> dict[str, Any]:
        obj = unflatten(row)
        for child_table, child_rows in children[row[ID]].items():
            path = child_table[len(name) + 2 :].split("__")
            node = obj
            for part in path[:-1]:
                node = node.setdefault(part, {})
            ordered = sorted(child_rows, key=lambda child: child[LIST_IDX])
            node[path[-1]] = [element(child_table, child) for child in ordered]
        return obj

    def element(name: str, row: dict[str, Any]) -> Any:
        # A list of scalars has a ``value`` column (and its variants), a list of lists a
        # nested table ``<name>__list`` (dlt's name); anything else is a list of dicts.
        obj = rebuild(name, row)
        if any(column == "value" or column.startswith("value__v_") for column in row):
            return obj.get("value")
        if f"{name}__list" in tables:
            return obj.get("list", [])
        return obj

    return [rebuild(table, row) for row in tables[table]]


# -- the documented rules -------------------------------------------------------------------
def canonical(value: Any) -> Any:
    """An item as the tables hold it: keys normalized, absent values left out, datetimes UTC."""
    if isinstance(value, dict):
        kept = {normalize_identifier(key): canonical(child) for key, child in value.items()}
        return {key: child for key, child in kept.items() if child not in (None, {}, [])}
    if isinstance(value, list):
        elements = [canonical(child) for child in value]
        for kind in (dict, list):
            if any(isinstance(child, kind) for child in elements):
                return [kind() if child is None else child for child in elements]
        return elements
    if isinstance(value, datetime.datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return value


def json_form(value: Any) -> Any:
    """A value as JSON text in a ``__v_json`` column holds it: keys as yielded, values as
    dlt's JSON encoder writes them."""
    if isinstance(value, dict):
        return {key: json_form(child) for key, child in value.items()}
    if isinstance(value, list):
        return [json_form(child) for child in value]
    if isinstance(value, datetime.datetime):
        return canonical(value).isoformat()
    if isinstance(value, (datetime.date, decimal.Decimal)):
        return value.isoformat() if isinstance(value, datetime.date) else format(value, "f")
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def same_value(expected: Any, actual: Any, raw: Any) -> bool:
    """``actual`` (read back) is ``expected`` (canonical) under the type rules; ``raw`` is
    the value as yielded, for JSON text."""
    if isinstance(actual, JsonText):
        return json_form(raw) == actual.value
    if expected is None and isinstance(actual, dict):
        # An empty dict or list that went to a JSON column is kept there, as "{}" or "[]".
        return all(same_value(None, actual[k], raw_child(raw, k)) for k in actual)
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or not expected.keys() <= actual.keys():
            return False
        return all(same_value(expected.get(k), actual[k], raw_child(raw, k)) for k in actual)
    if isinstance(expected, list):
        raw_elements = raw if isinstance(raw, list) else [None] * len(expected)  # None came back as []
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(same_value(e, a, r) for e, a, r in zip(expected, actual, raw_elements, strict=True))
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(actual, float) and math.isnan(actual)
    if isinstance(expected, int) and isinstance(actual, float):
        return abs(expected) <= EXACT_DOUBLE_INT and float(expected) == actual
    if isinstance(expected, (int, float, decimal.Decimal)):
        return isinstance(actual, (int, float, decimal.Decimal)) and _same_number(expected, actual)
    if isinstance(expected, datetime.date) and not isinstance(expected, datetime.datetime):
        return type(actual) is datetime.date and expected == actual
    return type(expected) is type(actual) and expected == actual


def _same_number(expected: int | float | decimal.Decimal, actual: int | float | decimal.Decimal) -> bool:
    # Only an int may come back as another kind of number (a Decimal here; a double is
    # checked before, with its 2**53 bound).
    if isinstance(expected, int):
        return not isinstance(actual, float) and expected == actual
    return type(actual) is type(expected) and expected == actual


def raw_child(raw: Any, normalized_key: str) -> Any:
    """The yielded value under the key that normalizes to ``normalized_key``."""
    for key, child in (raw or {}).items():
        if normalize_identifier(key) == normalized_key:
            return child
    raise KeyError(normalized_key)


def assert_round_trip(items: list[dict[str, Any]], rebuilt: list[dict[str, Any]]) -> None:
    assert len(rebuilt) == len(items), f"{len(items)} items loaded, {len(rebuilt)} root rows"
    by_id = {row[ROW_KEY]: row for row in rebuilt}
    for item in items:
        expected, actual = canonical(item), by_id[item[ROW_KEY]]
        assert same_value(expected, actual, item), (
            f"\nyielded:  {item!r}\nexpected: {expected!r}\nread:     {actual!r}"
        )


# -- the property ---------------------------------------------------------------------------
DISPOSITIONS = {
    "append": {"write_disposition": "append"},
    "replace": {"write_disposition": "replace"},
    "merge": {"write_disposition": "merge", "primary_key": ROW_KEY},
}


@pytest.mark.parametrize("disposition", list(DISPOSITIONS))
def test_loaded_items_read_back_equal_to_what_was_yielded(make_pipeline: Any, disposition: str) -> None:
    pipeline = make_pipeline()

    # Known engine issue (docs/concepts.md, Sail 0.7.2): a MERGE rewrites NaN beside one
    # repeated double as that double; merge examples leave NaN out until the engine fixes it.
    @PROPERTY_SETTINGS
    @given(items=item_lists(allow_nan=disposition != "merge"))
    def loads_and_reads_back(items: list[dict[str, Any]]) -> None:
        table = f"rt_{next(_tables)}"
        try:
            pipeline.run(items, table_name=table, **DISPOSITIONS[disposition])
        except sl.exceptions.SparkloadError:
            pipeline.drop_pending_packages()  # the next example starts clean
            raise
        assert_round_trip(items, read_back(pipeline.dataset_uri, table))

    loads_and_reads_back()


# -- inputs the property found mishandled, one run each ---------------------------------------
def load_and_read_back(pipeline: sl.Pipeline, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    table = f"rt_{next(_tables)}"
    pipeline.run(items, table_name=table)
    return sorted(read_back(pipeline.dataset_uri, table), key=lambda row: row[ROW_KEY])


def test_a_dict_where_a_scalar_came_first_goes_to_the_json_variant(pipeline: sl.Pipeline) -> None:
    # The schema inference during extract refused the conflict instead of leaving it to the
    # variant columns; the dict's tagged values leaked into the JSON text as "\x00D...".
    items = [
        {ROW_KEY: 0, "a": 1},
        {ROW_KEY: 1, "a": {"d": datetime.date(2024, 2, 29), "n": 2**60, "s": "\x00x", "b": b"\x01"}},
        {ROW_KEY: 2, "a": [1.5, float("nan")]},
    ]
    rebuilt = load_and_read_back(pipeline, items)
    assert rebuilt[0] == {ROW_KEY: 0, "a": 1}
    assert rebuilt[1]["a"].value == {"d": "2024-02-29", "n": 2**60, "s": "\x00x", "b": "AQ=="}
    assert rebuilt[2]["a"].value == [1.5, "NaN"]


def test_a_list_or_dict_where_a_string_came_first_goes_to_the_json_variant(pipeline: sl.Pipeline) -> None:
    # The engine reads a field of strings and lists as text, each list as its JSON text:
    # the lists were stored in the text column as if they were strings, their type lost.
    # Real strings that look like JSON stay text.
    items = [
        {ROW_KEY: 0, "a": ""},
        {ROW_KEY: 1, "a": [False]},
        {ROW_KEY: 2, "a": {"d": datetime.date(2024, 2, 29), "s": "[x"}},
        {ROW_KEY: 3, "a": "[not, json"},
        {ROW_KEY: 4, "a": '{"looks": "like json"}'},
        {ROW_KEY: 5, "a": ["\x00x", "{y"]},
    ]
    rebuilt = load_and_read_back(pipeline, items)
    assert rebuilt[0] == {ROW_KEY: 0, "a": ""}
    assert rebuilt[1]["a"].value == [False]
    assert rebuilt[2]["a"].value == {"d": "2024-02-29", "s": "[x"}
    assert rebuilt[3] == {ROW_KEY: 3, "a": "[not, json"}
    assert rebuilt[4] == {ROW_KEY: 4, "a": '{"looks": "like json"}'}
    assert rebuilt[5]["a"].value == ["\x00x", "{y"]


def test_a_renamed_key_keeps_its_variant_values_apart(pipeline: sl.Pipeline) -> None:
    # userId collides with user_id and becomes user_id_1; its text variant was named
    # user_id__v_text, the variant column of the other key.
    items = [{ROW_KEY: 0, "user_id": 1, "userId": 2}, {ROW_KEY: 1, "user_id": 3, "userId": "x"}]
    rebuilt = load_and_read_back(pipeline, items)
    assert rebuilt[1] == {ROW_KEY: 1, "user_id": 3, "user_id_1": "x"}


def test_ints_beyond_2_53_beside_small_ints_in_a_list_keep_their_values(pipeline: sl.Pipeline) -> None:
    items = [{ROW_KEY: 0, "a": [2**60 + 1, 1]}, {ROW_KEY: 1, "a": [-(2**63), None]}]
    rebuilt = load_and_read_back(pipeline, items)
    assert [row["a"] for row in rebuilt] == [[2**60 + 1, 1], [-(2**63), None]]


def test_lists_of_empty_dicts_load_a_nested_row_per_element(pipeline: sl.Pipeline) -> None:
    # Parquet cannot write a struct without fields: the normalize step failed, and then the
    # lists were left out; dlt makes a row of each element (ids and position, no column).
    items = [{ROW_KEY: 0, "a": [{}, {"k": None}], "b": [[{}], []], "c": 1}]
    assert load_and_read_back(pipeline, items) == [{ROW_KEY: 0, "a": [{}, {}], "b": [[{}], []], "c": 1}]


def test_none_among_the_dicts_or_lists_of_a_list_loads_an_empty_element(pipeline: sl.Pipeline) -> None:
    # The engine's JSON reader failed on a None among dicts ("Expected struct value for
    # struct array, got: Null") or among lists.
    items = [{ROW_KEY: 0, "a": [{"b": 1}, None], "c": [None, [1]]}, {ROW_KEY: 1, "a": [None, {"b": 2}]}]
    rebuilt = load_and_read_back(pipeline, items)
    assert [row["a"] for row in rebuilt] == [[{"b": 1}, {}], [{}, {"b": 2}]]
    assert rebuilt[0]["c"] == [[], [1]]
