"""Behaviours dlt's own tests check, run here on the same inputs.

The expected values were produced by running the same resources through dlt 1.31 (in the
benchmarks' dlt virtualenv); each test says which input it mirrors.
"""

# Incrementals are declared as call defaults: that is dlt's API.
# ruff: noqa: B008

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from conftest import delta_rows

import sparkload as sl

DOWN = list(range(11, 0, -1))  # cursor values 11, 10, …, 1
UP = list(range(1, 12))  # 1, 2, …, 11

# (last_value_func, row_order, rows) -> the cursor values dlt 1.31 yields with initial_value=5.
# row_order is relative to last_value_func: "asc" stops at the end of the range, "desc" at its
# start, where for min the start lies above the initial value.
ROW_ORDER_CASES: list[tuple[Callable[..., Any], str | None, list[int], list[int]]] = [
    (max, "asc", DOWN, [11, 10, 9, 8, 7, 6, 5]),
    (max, "asc", UP, [5, 6, 7, 8, 9, 10, 11]),
    (max, "desc", DOWN, [11, 10, 9, 8, 7, 6, 5]),
    (max, "desc", UP, []),
    (max, None, DOWN, [11, 10, 9, 8, 7, 6, 5]),
    (max, None, UP, [5, 6, 7, 8, 9, 10, 11]),
    (min, "asc", DOWN, [5, 4, 3, 2, 1]),
    (min, "asc", UP, [1, 2, 3, 4, 5]),
    (min, "desc", DOWN, []),
    (min, "desc", UP, [1, 2, 3, 4, 5]),
    (min, None, DOWN, [5, 4, 3, 2, 1]),
    (min, None, UP, [1, 2, 3, 4, 5]),
]


@pytest.mark.parametrize(
    ("func", "row_order", "values", "expected"),
    ROW_ORDER_CASES,
    ids=[
        f"{func.__name__}-{order}-{'down' if values == DOWN else 'up'}"
        for func, order, values, _ in ROW_ORDER_CASES
    ],
)
def test_row_order_is_relative_to_last_value_func(
    pipeline: sl.Pipeline,
    func: Callable[..., Any],
    row_order: str | None,
    values: list[int],
    expected: list[int],
) -> None:
    @sl.resource(name="r")
    def r(
        u: Any = sl.sources.incremental("u", initial_value=5, last_value_func=func, row_order=row_order),
    ) -> Iterator[dict[str, int]]:
        for value in values:
            yield {"u": value}

    pipeline.run(r())

    loaded = sorted(row["u"] for row in delta_rows(pipeline, "r")) if expected else []
    assert loaded == sorted(expected)
    if not expected:
        assert "r" not in pipeline.dataset.user_tables()


def test_a_merge_without_keys_appends_and_leaves_out_rows_flagged_as_deleted(pipeline: sl.Pipeline) -> None:
    """A hard_delete column on a merge without a primary or merge key: dlt appends, and
    rows flagged as deleted (with their nested rows) are not written."""

    @sl.resource(
        name="t",
        write_disposition="merge",
        columns={"deleted": {"hard_delete": True, "data_type": "bool"}},
    )
    def t(rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        yield from rows

    pipeline.run(t([{"id": 1, "deleted": False, "tags": ["a"]}]))
    pipeline.run(t([{"id": 1, "deleted": True, "tags": ["b"]}]))
    pipeline.run(
        t(
            [
                {"id": 2, "deleted": None, "tags": ["c"]},
                {"id": 3, "deleted": True, "tags": ["d"]},
                {"id": 4, "deleted": False, "tags": ["e"]},
            ]
        )
    )

    rows = sorted((row["id"], row["deleted"]) for row in delta_rows(pipeline, "t"))
    assert rows == [(1, False), (2, None), (4, False)]
    assert sorted(row["value"] for row in delta_rows(pipeline, "t__tags")) == ["a", "c", "e"]


SCD2 = {"disposition": "merge", "strategy": "scd2"}


def test_an_scd2_change_in_nested_data_alone_makes_a_new_version(pipeline: sl.Pipeline) -> None:
    """dlt's row hash covers the nested data: a list that changes (or only reorders) makes a
    new version, whose nested rows are inserted beside the old version's."""

    @sl.resource(name="t", write_disposition=SCD2)
    def t(rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        yield from rows

    # (the load, then dlt 1.31's (nk, current) versions and nested values after it)
    steps: list[tuple[list[dict[str, Any]], list[tuple[int, bool]], list[int]]] = [
        (
            [{"nk": 1, "c": [1]}, {"nk": 2, "c": [5]}, {"nk": 3, "c": [7]}],
            [(1, True), (2, True), (3, True)],
            [1, 5, 7],
        ),
        (
            [{"nk": 1, "c": [1, 2]}, {"nk": 2, "c": [5]}, {"nk": 3, "c": [7]}],
            [(1, False), (1, True), (2, True), (3, True)],
            [1, 1, 2, 5, 7],
        ),
        (
            [{"nk": 1, "c": [1, 2]}, {"nk": 2, "c": [5]}, {"nk": 3, "c": [8]}],
            [(1, False), (1, True), (2, True), (3, False), (3, True)],
            [1, 1, 2, 5, 7, 8],
        ),
        (
            [{"nk": 1, "c": [2, 1]}, {"nk": 2, "c": [5]}, {"nk": 3, "c": [8]}],
            [(1, False), (1, False), (1, True), (2, True), (3, False), (3, True)],
            [1, 1, 1, 2, 2, 5, 7, 8],
        ),
    ]
    for load, versions, nested in steps:
        pipeline.run(t(load))
        rows = delta_rows(pipeline, "t")
        assert sorted((r["nk"], r["_sparkload_valid_to"] is None) for r in rows) == versions
        assert sorted(r["value"] for r in delta_rows(pipeline, "t__c")) == nested


def test_scd2_rows_of_one_key_that_differ_in_nested_data_are_two_versions(pipeline: sl.Pipeline) -> None:
    """Two rows of one natural key, equal but for their nested lists: dlt stores two
    current versions, each with its nested rows. (Rows equal in everything are one version
    here, where dlt stores the same version twice under one id.)"""

    @sl.resource(name="dim", write_disposition=SCD2)
    def dim(rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        yield from rows

    twins = [{"key": 1, "value": "a", "tags": ["x1", "x2"]}, {"key": 1, "value": "a", "tags": ["y1"]}]
    pipeline.run(dim([*twins, {"key": 2, "value": "b", "tags": ["b1"]}]))
    pipeline.run(dim([*twins, {"key": 3, "value": "c", "tags": ["c1"]}]))

    rows = delta_rows(pipeline, "dim")
    assert sorted((r["key"], r["_sparkload_valid_to"] is None) for r in rows) == [
        (1, True),
        (1, True),
        (2, False),
        (3, True),
    ]
    assert sorted(r["value"] for r in delta_rows(pipeline, "dim__tags")) == ["b1", "c1", "x1", "x2", "y1"]


def test_scd2_row_counts_are_the_rows_written_root_and_nested_alike(pipeline: sl.Pipeline) -> None:
    """LoadInfo.row_counts counts the rows a load writes: the new versions and their nested
    rows, not the nested rows of versions that did not change. (dlt's normalize counts
    every extracted row, 2 and 4 on the second load here, for root and nested alike.)"""

    @sl.resource(name="t", write_disposition=SCD2)
    def t(rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        yield from rows

    first = pipeline.run(t([{"nk": 1, "c": [1, 2]}, {"nk": 2, "c": [5]}]))
    second = pipeline.run(t([{"nk": 1, "c": [1, 2]}, {"nk": 2, "c": [5, 6]}]))

    assert first.row_counts == {"t": 2, "t__c": 3}
    assert second.row_counts == {"t": 1, "t__c": 2}
    assert len(delta_rows(pipeline, "t__c")) == 5


def test_an_incremental_defaulted_to_secrets_value_is_resolved_from_config(
    pipeline: sl.Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dlt's tests declare cursors as ``incremental[...] = secrets.value`` and give the
    cursor path and initial value in the environment: the incremental is made from them,
    with plain values (a secret marker on the cursor path or the initial value broke the
    state and the comparisons)."""
    monkeypatch.setenv("SOURCES__SOME_DATA__CREATED_AT__CURSOR_PATH", "created_at")
    monkeypatch.setenv("SOURCES__SOME_DATA__CREATED_AT__INITIAL_VALUE", "2022-02-03T00:00:00Z")
    seen: list[tuple[Any, Any]] = []

    @sl.resource
    def some_data(
        created_at: sl.sources.incremental[str] = sl.secrets.value,
    ) -> Iterator[dict[str, str]]:
        seen.append((created_at.cursor_path, created_at.initial_value))
        yield from [{"created_at": f"2022-02-0{i}T00:00:00Z"} for i in range(1, 6)]

    first = pipeline.run(some_data())
    second = pipeline.run(some_data())

    # as dlt 1.31: 3 rows, then none
    assert first.row_counts == {"some_data": 3}
    assert second.row_counts == {}
    assert seen == [("created_at", "2022-02-03T00:00:00Z")] * 2
    assert all(type(value) is str for pair in seen for value in pair)


def _user_rows(pipeline: sl.Pipeline, table: str) -> list[dict[str, Any]]:
    rows = delta_rows(pipeline, table)
    return [{k: v for k, v in row.items() if not k.startswith("_sparkload")} for row in rows]


def test_values_that_are_not_dicts_load_as_a_value_column(pipeline: sl.Pipeline) -> None:
    """dlt loads ``yield 1`` as a row {"value": 1}; a list yields its items, and a list
    among them makes a nested table; a string beside numbers goes to the variant column."""

    @sl.resource(name="a")
    def a() -> Iterator[Any]:
        yield 1
        yield [2, 3]
        yield "x"

    @sl.resource(name="b")
    def b() -> Iterator[Any]:
        yield [[1, 2], [3]]

    @sl.resource(name="c")
    def c() -> Iterator[Any]:
        yield {"id": 1}
        yield 5

    for resource in (a, b, c):
        pipeline.run(resource())

    def by_value(row: dict[str, Any]) -> str:
        return repr(sorted(row.items()))

    # as dlt 1.31 (on duckdb) stores them
    assert sorted(_user_rows(pipeline, "a"), key=by_value) == sorted(
        [
            {"value": 1, "value__v_text": None},
            {"value": 2, "value__v_text": None},
            {"value": 3, "value__v_text": None},
            {"value": None, "value__v_text": "x"},
        ],
        key=by_value,
    )
    assert _user_rows(pipeline, "b") == [{}, {}]
    assert sorted(row["value"] for row in _user_rows(pipeline, "b__value")) == [1, 2, 3]
    assert sorted(_user_rows(pipeline, "c"), key=by_value) == sorted(
        [{"id": 1, "value": None}, {"id": None, "value": 5}], key=by_value
    )


def test_numpy_and_uuid_values_load_as_a_value_column(pipeline: sl.Pipeline) -> None:
    import uuid

    import numpy as np

    key = uuid.UUID("12345678-1234-5678-1234-567812345678")

    @sl.resource(name="v")
    def v() -> Iterator[Any]:
        yield np.int64(7)
        yield key

    pipeline.run(v())

    rows = _user_rows(pipeline, "v")
    values = {(row.get("value"), row.get("value__v_text")) for row in rows}
    assert values == {(7, None), (None, str(key))}


def test_first_run_has_data_and_has_pending_data_are_properties(pipeline: sl.Pipeline) -> None:
    def flags() -> tuple[bool, bool, bool]:
        return (pipeline.first_run, pipeline.has_data, pipeline.has_pending_data)

    # (first_run, has_data, has_pending_data) as dlt 1.31 reports them at each step
    assert flags() == (True, False, False)
    pipeline.extract([{"id": 1}], table_name="t")
    assert flags() == (True, True, True)
    pipeline.normalize()
    assert flags() == (True, True, True)
    pipeline.load()
    assert flags() == (False, True, False)
    assert all(type(flag) is bool for flag in flags())


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        ({"max_items": -1}, list(range(20))),
        ({"max_items": None}, list(range(20))),
        ({"max_items": 0}, []),
        ({"max_items": 2}, [0, 1, 2, 3]),
        ({"max_items": 3, "count_rows": True}, [0, 1, 2, 3]),
        ({"max_items": 5, "count_rows": True}, [0, 1, 2, 3, 4, 5]),
        ({"max_time": 0}, list(range(20))),
        ({"max_time": 100}, list(range(20))),
    ],
    ids=["negative", "none", "zero", "two-pages", "rows-3", "rows-5", "time-0", "time-100"],
)
def test_add_limit_takes_dlts_arguments(limit: dict[str, Any], expected: list[int]) -> None:
    """Ten pages of two rows; the rows each limit lets through, as in dlt 1.31."""

    @sl.resource(name="r")
    def r() -> Iterator[list[dict[str, int]]]:
        for i in range(10):
            yield [{"i": 2 * i}, {"i": 2 * i + 1}]

    assert [row["i"] for row in r().add_limit(**limit)] == expected


def test_an_empty_string_clears_a_key_in_apply_hints(pipeline: sl.Pipeline) -> None:
    """dlt clears a key hint with ``apply_hints(merge_key="")``; the primary key stays."""

    @sl.resource(name="t", write_disposition="merge", primary_key="id", merge_key="id")
    def t(v: str) -> Iterator[dict[str, Any]]:
        yield {"id": 1, "v": v}

    for v in ("a", "b"):
        resource = t(v)
        resource.apply_hints(merge_key="")
        pipeline.run(resource)

    assert [(row["id"], row["v"]) for row in delta_rows(pipeline, "t")] == [(1, "b")]


def test_insert_only_leaves_out_rows_flagged_as_deleted(pipeline: sl.Pipeline) -> None:
    """An insert-only merge with a hard_delete column: a flagged row deletes nothing and is
    not inserted, as in dlt 1.31 (which keeps the flagged row's nested rows, of no root
    row; here they go with it)."""

    @sl.resource(
        name="t",
        primary_key="id",
        write_disposition={"disposition": "merge", "strategy": "insert-only"},
        columns={"deleted": {"hard_delete": True, "data_type": "bool"}},
    )
    def t(rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        yield from rows

    pipeline.run(t([{"id": 1, "deleted": False, "tags": ["a"]}, {"id": 2, "deleted": True, "tags": ["b"]}]))
    pipeline.run(t([{"id": 1, "deleted": True, "tags": ["c"]}, {"id": 3, "deleted": None, "tags": ["d"]}]))

    rows = sorted((row["id"], row["deleted"]) for row in delta_rows(pipeline, "t"))
    assert rows == [(1, False), (3, None)]
    assert sorted(row["value"] for row in delta_rows(pipeline, "t__tags")) == ["a", "d"]
