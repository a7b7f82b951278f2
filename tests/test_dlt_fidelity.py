"""Behaviours dlt's own tests check, run here on the same inputs.

The expected values were produced by running the same resources through dlt 1.31 (in the
benchmarks' dlt virtualenv); each test says which input it mirrors.
"""

# Incrementals are declared as call defaults: that is dlt's API.
# ruff: noqa: B008

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Optional

import pytest
from conftest import delta_rows

import sparkload as sl
from sparkload.config import module_section

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
        assert "r" not in pipeline.destination_dataset.user_tables()


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


def _two_row_pages() -> Iterator[list[dict[str, int]]]:
    for k in range(4):
        yield [{"i": 2 * k + 1}, {"i": 2 * k + 2}]


def _singles() -> Iterator[dict[str, int]]:
    yield from ({"i": i} for i in range(10))


def _empty_pages() -> Iterator[list[dict[str, int]]]:
    yield from ([], [], [{"i": 1}], [{"i": 2}])


def _limited_pipes() -> dict[str, tuple[Callable[[], sl.Resource], list[int]]]:
    """Pipes with a limit at their end, and the cursor values dlt 1.31 yields for each."""

    @sl.resource(name="inc")
    def inc(c: Any = sl.sources.incremental("i", initial_value=5)) -> Iterator[dict[str, int]]:
        yield from _singles()

    return {
        # pages [1, 2] and [3, 4] are filtered out whole: they do not count
        "filtered-pages": (
            lambda: sl.resource(_two_row_pages, name="a")().add_filter(lambda x: x["i"] > 4).add_limit(1),
            [5, 6],
        ),
        "filtered-rows": (
            lambda: (
                sl.resource(_singles, name="b")()
                .add_filter(lambda x: x["i"] % 2 == 0)
                .add_limit(3, count_rows=True)
            ),
            [0, 2, 4],
        ),
        # rows below the incremental's initial value do not count
        "after-incremental": (lambda: inc().add_limit(2), [5, 6]),
        # a map added after the limit still runs before it
        "map-after-limit": (
            lambda: sl.resource(_singles, name="d")().add_limit(3).add_map(lambda x: {"i": x["i"] * 10}),
            [0, 10, 20],
        ),
        # empty pages count as yields
        "empty-pages-2": (lambda: sl.resource(_empty_pages, name="e")().add_limit(2), []),
        "empty-pages-3": (lambda: sl.resource(_empty_pages, name="e")().add_limit(3), [1]),
        # the page that reaches a row limit is passed on whole
        "rows-whole-page": (
            lambda: sl.resource(_two_row_pages, name="f")().add_limit(3, count_rows=True),
            [1, 2, 3, 4],
        ),
    }


@pytest.mark.parametrize("case", list(_limited_pipes()))
def test_add_limit_counts_what_reaches_the_end_of_the_pipe(case: str) -> None:
    make, expected = _limited_pipes()[case]
    assert [row["i"] for row in make()] == expected


def test_add_limit_stops_the_generator_at_the_page_that_reaches_it() -> None:
    """Pages filtered out are fetched but not counted; nothing is fetched after the limit."""
    fetched: list[int] = []

    @sl.resource(name="g")
    def g() -> Iterator[dict[str, int]]:
        for i in range(10):
            fetched.append(i)
            yield {"i": i}

    assert [row["i"] for row in g().add_filter(lambda x: x["i"] >= 3).add_limit(2)] == [3, 4]
    assert fetched == [0, 1, 2, 3, 4]


def test_add_limit_on_a_transformer_limits_nothing(pipeline: sl.Pipeline) -> None:
    """dlt warns and ignores it: a transformer must process all its parent sends."""

    @sl.transformer(name="t")
    def t(item: dict[str, int]) -> Iterator[dict[str, int]]:
        yield {"i": item["i"]}
        yield {"i": item["i"] + 100}

    parent = sl.resource(_singles, name="h")().add_limit(2)
    assert sorted(row["i"] for row in parent | t.add_limit(1)) == [0, 1, 100, 101]
    pipeline.run(parent | t.add_limit(1))
    assert sorted(row["i"] for row in delta_rows(pipeline, "t")) == [0, 1, 100, 101]


def test_source_add_limit_limits_each_resource_but_not_its_transformers(pipeline: sl.Pipeline) -> None:
    """dlt's ``source.add_limit``: every selected resource stops after two pages; the
    transformer takes all its (limited) parent yields, two rows each."""

    @sl.transformer(name="t")
    def t(item: dict[str, int]) -> Iterator[dict[str, int]]:
        yield {"i": item["i"]}
        yield {"i": item["i"] + 100}

    @sl.source
    def numbers() -> Any:
        h = sl.resource(_singles, name="h")
        return h, sl.resource(_singles, name="g"), h | t

    source = numbers()
    assert source.add_limit(2) is source
    pipeline.run(source)

    assert sorted(row["i"] for row in delta_rows(pipeline, "h")) == [0, 1]
    assert sorted(row["i"] for row in delta_rows(pipeline, "g")) == [0, 1]
    assert sorted(row["i"] for row in delta_rows(pipeline, "t")) == [0, 1, 100, 101]


def test_parallelize_runs_a_resource_in_a_thread_of_its_own(pipeline: sl.Pipeline) -> None:
    """dlt's ``resource.parallelize()`` is ``parallelized=True`` after the fact; like dlt it
    refuses data that is not a generator (function) or a transformer."""
    threads: dict[str, int] = {}

    def make(name: str) -> sl.Resource:
        def rows() -> Iterator[dict[str, int]]:
            threads[name] = threading.get_ident()
            yield {"i": 1}

        return sl.resource(rows, name=name)

    a, b = make("a"), make("b")
    assert a.parallelize() is a and a.parallelized
    pipeline.run([a, b])

    assert threads["a"] != threads["b"] == threading.get_ident()
    with pytest.raises(sl.ResourceError, match="resource 'listed': parallelize\\(\\) takes a generator"):
        sl.resource([{"i": 1}], name="listed").parallelize()


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


def _counting_up(n: list[int]) -> Callable[..., Iterator[dict[str, int]]]:
    """A resource function over ``c = 0 … n[0]-1`` whose incremental is Optional, as dlt's
    tests declare it."""

    def r(
        created_at: Optional[sl.sources.incremental[int]] = sl.sources.incremental("c", initial_value=5),  # noqa: UP045
    ) -> Iterator[dict[str, int]]:
        yield from ({"c": i} for i in range(n[0]))

    return r


def test_a_plain_value_for_an_incremental_argument_is_its_initial_value(pipeline: sl.Pipeline) -> None:
    """dlt 1.31: ``r(created_at=7)`` starts at 7; ``None`` starts from no initial value and
    still tracks the cursor; a stored cursor wins over either on later runs."""
    n = [10]
    r = sl.resource(_counting_up(n), name="r")

    assert [row["c"] for row in r(created_at=7)] == [7, 8, 9]
    assert pipeline.run(r(created_at=None)).row_counts == {"r": 10}
    n[0] = 12
    assert pipeline.run(r(created_at=None)).row_counts == {"r": 2}
    assert pipeline.run(r(created_at=3)).row_counts == {}
    cursor = pipeline.state["sources"][pipeline.pipeline_name]["resources"]["r"]["incremental"]["c"]
    assert (cursor["initial_value"], cursor["last_value"]) == (None, 11)


def test_incremental_empty_is_no_argument_value() -> None:
    r = sl.resource(_counting_up([3]), name="r")
    with pytest.raises(sl.ResourceError, match="pass None"):
        list(r(created_at=sl.sources.incremental.EMPTY))


def _plain(n: int = 10) -> Iterator[dict[str, int]]:
    yield from ({"c": i} for i in range(n))


def test_an_incremental_set_by_hints_filters_a_resource_that_declares_none(pipeline: sl.Pipeline) -> None:
    """dlt 1.31: apply_hints(incremental=), add_step(incremental) and
    ``@resource(incremental=)`` each filter, keep state, and show as ``resource.incremental``."""
    by_hints = sl.resource(_plain, name="h")()
    assert by_hints.incremental is None
    by_hints.apply_hints(incremental=sl.sources.incremental("c", initial_value=8))
    assert [row["c"] for row in by_hints] == [8, 9]
    assert by_hints.incremental is not None and by_hints.incremental.initial_value == 8

    by_step = sl.resource(_plain, name="s")().add_step(sl.sources.incremental("c", initial_value=6))
    assert [row["c"] for row in by_step] == [6, 7, 8, 9]

    decorated = sl.resource(_plain, name="d", incremental=sl.sources.incremental("c", initial_value=7))
    pipeline.run(decorated(n=9))
    assert [row["c"] for row in delta_rows(pipeline, "d", order_by="c")] == [7, 8]
    pipeline.run(decorated(n=11))
    assert [row["c"] for row in delta_rows(pipeline, "d", order_by="c")] == [7, 8, 9, 10]


def test_an_incremental_set_by_hints_is_the_argument_even_over_one_passed() -> None:
    """dlt 1.31 uses the hinted incremental for a function that declares one, even when the
    call passes another; ``Incremental.EMPTY`` removes it again."""

    @sl.resource(name="q")
    def q(created_at: Any = sl.sources.incremental("c", initial_value=2)) -> Iterator[dict[str, int]]:
        yield from _plain()

    hinted = q(created_at=sl.sources.incremental("c", initial_value=4))
    hinted.apply_hints(incremental=sl.sources.incremental("c", initial_value=8))
    assert [row["c"] for row in hinted] == [8, 9]
    hinted.apply_hints(incremental=sl.sources.incremental.EMPTY)
    assert [row["c"] for row in hinted] == [4, 5, 6, 7, 8, 9]


def test_from_existing_state_reads_the_cursor_of_the_running_extraction(pipeline: sl.Pipeline) -> None:
    """dlt 1.31: inside a running resource, another resource's cursor is readable."""
    pipeline.run(sl.resource(_counting_up([12]), name="r")(created_at=None))
    seen: list[tuple[Any, Any]] = []

    @sl.resource(name="q")
    def q() -> Iterator[dict[str, int]]:
        existing = sl.sources.incremental.from_existing_state("r", "c")
        seen.append((existing.initial_value, existing.last_value))
        yield {"a": 1}

    pipeline.run(q())
    assert seen == [(None, 11)]
    with pytest.raises(sl.SparkloadError, match="inside a running resource"):
        sl.sources.incremental.from_existing_state("r", "c")


def test_arguments_are_configuration_under_the_module_section(monkeypatch: pytest.MonkeyPatch) -> None:
    """dlt 1.31 reads every argument the call leaves out from config, under
    ``sources.<module>.<resource>``, ``sources.<module>``, then ``sources.<resource>`` and
    ``sources``; an Optional incremental is built from its fields. Deliberately unlike dlt, a
    defaulted argument is never read from a bare key (``HOME`` for ``home``)."""

    def cfg(
        limit: int = 10,
        other: int = 1,
        third: int = 2,
        home: str = "x",
        created_at: Optional[sl.sources.incremental[int]] = None,  # noqa: UP045
    ) -> Iterator[dict[str, Any]]:
        yield {
            "c": 1,
            "limit": limit,
            "other": other,
            "third": third,
            "home": home,
            "incremental": created_at,
        }

    module = module_section(cfg)
    assert module == __name__.rsplit(".", 1)[-1]
    prefix = f"SOURCES__{module.upper()}"
    monkeypatch.setenv(f"{prefix}__CFG__LIMIT", "3")
    monkeypatch.setenv("SOURCES__CFG__LIMIT", "5")
    monkeypatch.setenv(f"{prefix}__OTHER", "6")
    monkeypatch.setenv("SOURCES__CFG__OTHER", "7")
    monkeypatch.setenv("SOURCES__THIRD", "8")
    monkeypatch.setenv("HOME", "/somewhere")
    monkeypatch.setenv(f"{prefix}__CFG__CREATED_AT__CURSOR_PATH", "c")

    (row,) = list(sl.resource(cfg, name="cfg")())
    assert (row["limit"], row["other"], row["third"], row["home"]) == (3, 6, 8, "x")
    assert row["incremental"].cursor_path == "c"
    # passed arguments win over config
    (row,) = list(sl.resource(cfg, name="cfg")(limit=1))
    assert row["limit"] == 1


def test_resource_write_disposition_is_what_the_user_wrote() -> None:
    """dlt 1.31 returns the hint as given, ``"append"`` when none was; it can be assigned."""
    scd2 = {"disposition": "merge", "strategy": "scd2"}
    assert sl.resource(_plain, name="a", write_disposition=scd2)().write_disposition == scd2
    plain = sl.resource(_plain, name="b")()
    assert plain.write_disposition == "append"
    plain.write_disposition = "replace"
    assert plain.write_disposition == "replace"
    assert plain.hints.write_disposition.disposition == "replace"


def test_with_resources_returns_a_copy_and_leaves_the_source_as_it_was(pipeline: sl.Pipeline) -> None:
    @sl.source(name="s")
    def s() -> Any:
        return sl.resource(_plain, name="a")(n=2), sl.resource(_plain, name="b")(n=3)

    source = s()
    only_a = source.with_resources("a")
    assert (list(source.selected_resources), list(only_a.selected_resources)) == (["a", "b"], ["a"])
    assert pipeline.run(only_a).row_counts == {"a": 2}


def test_a_source_of_a_started_generator_is_exhausted() -> None:
    def rows() -> Iterator[dict[str, int]]:
        yield {"x": 1}

    source = sl.source(lambda: [sl.resource(rows(), name="g")], name="s3")()
    assert source.exhausted is False
    list(source)
    assert source.exhausted is True
    assert sl.source(lambda: [sl.resource(_plain, name="f")], name="s4")().exhausted is False


def test_data_piped_into_a_transformer(pipeline: sl.Pipeline) -> None:
    """dlt 1.31: ``[1, 2, 3] | transformer`` feeds the values to the transformer."""

    @sl.transformer(name="t")
    def t(item: int) -> Iterator[dict[str, int]]:
        yield {"y": item * 2}

    assert [row["y"] for row in [1, 2, 3] | t] == [2, 4, 6]
    assert pipeline.run([1, 2, 3] | t).row_counts == {"t": 3}
    assert sorted(row["y"] for row in delta_rows(pipeline, "t")) == [2, 4, 6]


# -- validation dlt does: incremental ranges, merge keys, scd2 hints and history ----------------


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"initial_value": 10, "end_value": 5}, "must be higher than initial_value"),
        ({"initial_value": 5, "end_value": 10, "last_value_func": min}, "must be lower than initial_value"),
        ({"initial_value": 5, "end_value": "10"}, "cannot be compared"),
        ({"end_value": 5}, "without an initial_value"),
    ],
    ids=["max-end-before-start", "min-end-after-start", "int-and-str", "end-without-start"],
)
def test_an_incremental_range_that_makes_no_range_is_refused_when_the_resource_runs(
    pipeline: sl.Pipeline, arguments: dict[str, Any], problem: str
) -> None:
    """dlt 1.31 builds such an incremental and the resource without a word, and refuses it
    (ConfigurationValueError) when it is resolved: at the run's extract, or when the resource
    is iterated. An equal initial_value and end_value is an empty range, not an error."""

    @sl.resource(name="r")
    def r(u: Any = sl.sources.incremental("u", **arguments)) -> Iterator[dict[str, int]]:
        yield from ({"u": value} for value in range(1, 12))

    resource = r()  # declaring and calling it is fine, as in dlt
    with pytest.raises(sl.IncrementalRangeError, match=problem) as refused:
        list(resource)
    assert (refused.value.resource, refused.value.cursor_path) == ("r", "u")
    assert refused.value.end_value == arguments["end_value"]
    with pytest.raises(sl.PipelineStepFailed) as failed:
        pipeline.run(r())
    assert failed.value.step == "extract"
    assert isinstance(failed.value.__cause__, sl.IncrementalRangeError)
    assert "r" not in pipeline.destination_dataset.user_tables()

    @sl.resource(name="e")
    def e(u: Any = sl.sources.incremental("u", initial_value=5, end_value=5)) -> Iterator[dict[str, int]]:
        yield from ({"u": value} for value in range(1, 12))

    assert list(e()) == []


def _merge_resource(rows: list[dict[str, Any]], **hints: Any) -> Any:
    return sl.resource(rows, name="t", **hints)


@pytest.mark.parametrize(
    "disposition",
    ["merge", {"disposition": "merge", "strategy": "scd2"}],
    ids=["delete-insert", "scd2"],
)
def test_a_null_merge_key_is_refused_before_any_commit(pipeline: sl.Pipeline, disposition: Any) -> None:
    """dlt 1.31 refuses a NULL in a merge key column (and in a primary key column) in its
    normalize step: "Cannot coerce NULL in table `t` column `day` which is not nullable".
    sparkload replaced the stored NULL group with delete-insert, and never retired it with
    scd2; now it refuses before any commit."""
    from conftest import delta_version

    first = [{"id": 1, "day": 1, "v": "a"}, {"id": 2, "day": 2, "v": "b"}]
    pipeline.run(_merge_resource(first, write_disposition=disposition, merge_key="day"))
    version = delta_version(pipeline, "t")
    second = [{"id": 3, "day": 1, "v": "c"}, {"id": 4, "day": None, "v": "d"}]
    with pytest.raises(sl.PipelineStepFailed) as failed:
        pipeline.run(_merge_resource(second, write_disposition=disposition, merge_key="day"))
    error = failed.value.__cause__
    assert isinstance(error, sl.LoadError)
    assert (error.table, error.column) == ("t", "day")
    assert "NULL" in str(error)
    assert delta_version(pipeline, "t") == version
    assert sorted(row["id"] for row in delta_rows(pipeline, "t")) == [1, 2]


def test_a_null_primary_key_in_a_merge_is_refused(pipeline: sl.Pipeline) -> None:
    """dlt 1.31 refuses a NULL primary key value in normalize (the column is not nullable)."""
    rows = [{"id": 1, "v": "a"}, {"id": None, "v": "b"}]
    with pytest.raises(sl.PipelineStepFailed) as failed:
        pipeline.run(_merge_resource(rows, write_disposition="merge", primary_key="id"))
    assert isinstance(failed.value.__cause__, sl.NormalizeError)
    assert failed.value.__cause__.column == "id"
    assert "t" not in pipeline.destination_dataset.user_tables()


@pytest.mark.parametrize(
    "disposition",
    ["merge", {"disposition": "merge", "strategy": "scd2"}],
    ids=["delete-insert", "scd2"],
)
def test_a_merge_key_missing_from_the_data_is_refused_before_any_commit(
    pipeline: sl.Pipeline, disposition: Any
) -> None:
    """dlt 1.31, normalize: "The following columns in table `t` did not receive any data
    during this load: day (marked as non-nullable merge key and must have values)", on the
    first load too. sparkload loaded the first and failed inside the engine's commit on the
    second; now both are refused, naming the key and the table, before any commit."""
    from conftest import delta_version

    with pytest.raises(sl.PipelineStepFailed) as failed:
        pipeline.run(_merge_resource([{"id": 1, "v": "a"}], write_disposition=disposition, merge_key="day"))
    error = failed.value.__cause__
    assert isinstance(error, sl.LoadError)
    assert (error.table, error.column) == ("t", "day")
    assert "t" not in pipeline.destination_dataset.user_tables()
    assert pipeline.has_pending_data  # the refused package stays for the next run
    pipeline.drop_pending_packages()

    first = [{"id": 1, "day": 1, "v": "a"}]
    pipeline.run(_merge_resource(first, write_disposition=disposition, merge_key="day"))
    version = delta_version(pipeline, "t")
    with pytest.raises(sl.PipelineStepFailed) as failed:
        pipeline.run(_merge_resource([{"id": 2, "v": "b"}], write_disposition=disposition, merge_key="day"))
    assert isinstance(failed.value.__cause__, sl.LoadError)
    assert failed.value.__cause__.column == "day"
    assert delta_version(pipeline, "t") == version


@pytest.mark.parametrize("value", ["not a time", "2024-13-45"])
@pytest.mark.parametrize("option", ["boundary_timestamp", "active_record_timestamp"])
def test_an_scd2_timestamp_that_is_no_time_is_refused_when_the_hint_is_set(option: str, value: str) -> None:
    """dlt 1.31 raises "could not parse `boundary_timestamp` value `not a time`" from
    apply_hints and from the decorator, for both timestamp options; a date, ISO text and a
    Unix timestamp (an int) are accepted."""
    disposition = {"disposition": "merge", "strategy": "scd2", option: value}
    resource = sl.resource([{"id": 1}], name="t")
    with pytest.raises(sl.ResourceError, match=f"{option}.*{value}"):
        resource.apply_hints(write_disposition=disposition)
    with pytest.raises(sl.ResourceError, match=f"{option}.*{value}"):
        sl.resource([{"id": 1}], name="t", write_disposition=disposition)


def test_an_scd2_boundary_given_as_a_unix_timestamp_is_taken_in_seconds(pipeline: sl.Pipeline) -> None:
    """dlt 1.31 accepts an int boundary_timestamp (a Unix timestamp)."""
    disposition = {"disposition": "merge", "strategy": "scd2", "boundary_timestamp": 1704067200}
    pipeline.run(sl.resource([{"id": 1}], name="t", write_disposition=disposition))
    (row,) = delta_rows(pipeline, "t")
    assert row["_sparkload_valid_from"].isoformat() == "2024-01-01T00:00:00+00:00"


@pytest.mark.parametrize(
    ("disposition", "primary_key"),
    [("append", None), ("merge", "id"), ({"disposition": "merge", "strategy": "upsert"}, "id")],
    ids=["append", "delete-insert", "upsert"],
)
@pytest.mark.parametrize(
    ("validity", "evolved"),
    [(None, False), (None, True), (["since", "until"], True)],
    ids=["history", "history-with-a-new-column", "own-validity-names-and-a-new-column"],
)
def test_a_table_with_scd2_history_refuses_another_disposition_before_any_commit(
    pipeline: sl.Pipeline, disposition: Any, primary_key: str | None, validity: Any, evolved: bool
) -> None:
    """dlt 1.31 appends such rows with NULL valid_from and valid_to (they pass as current
    versions), and a later merge of that table still ran as scd2. sparkload failed inside
    the engine ("NOT NULL constraint violated for column: _sparkload_valid_from"); now it
    refuses before any commit, naming the table and the column, also once an scd2 load added
    a column (the engine drops the NOT NULL constraint then) and with validity columns of
    the user's naming. Replace rebuilds the table, after which it takes any disposition."""
    from conftest import delta_version

    scd2 = {"disposition": "merge", "strategy": "scd2", "validity_column_names": validity}
    valid_from = validity[0] if validity else "_sparkload_valid_from"
    pipeline.run(sl.resource([{"id": 1, "v": "a"}], name="t", write_disposition=scd2))
    if evolved:
        pipeline.run(sl.resource([{"id": 1, "v": "b", "w": 1}], name="t", write_disposition=scd2))
    version = delta_version(pipeline, "t")
    with pytest.raises(sl.PipelineStepFailed) as failed:
        pipeline.run(
            sl.resource(
                [{"id": 2, "v": "b"}], name="t", write_disposition=disposition, primary_key=primary_key
            )
        )
    error = failed.value.__cause__
    assert isinstance(error, sl.LoadError)
    assert (error.table, error.column) == ("t", valid_from)
    assert "scd2" in str(error)
    assert delta_version(pipeline, "t") == version
    pipeline.drop_pending_packages()
    pipeline.run(sl.resource([{"id": 3, "v": "c"}], name="t", write_disposition="replace"))
    assert [row["id"] for row in delta_rows(pipeline, "t")] == [3]
    pipeline.run(
        sl.resource([{"id": 4, "v": "d"}], name="t", write_disposition=disposition, primary_key=primary_key)
    )
    assert sorted(row["id"] for row in delta_rows(pipeline, "t")) == [3, 4]


def test_an_appended_table_switched_to_scd2_is_refused_with_the_way_out(pipeline: sl.Pipeline) -> None:
    """dlt 1.31 adds the validity columns and closes every stored row at the first scd2
    load (valid_from NULL, valid_to the boundary), inserting the load's rows as new versions:
    rows of unknown start, kept as history. sparkload refuses (its rows have no validity to
    keep) before any commit, and says how to start the history."""
    from conftest import delta_version

    pipeline.run(sl.resource([{"id": 1, "v": "a"}], name="t"))
    version = delta_version(pipeline, "t")
    scd2 = {"disposition": "merge", "strategy": "scd2"}
    with pytest.raises(sl.PipelineStepFailed) as failed:
        pipeline.run(sl.resource([{"id": 1, "v": "a"}], name="t", write_disposition=scd2))
    error = failed.value.__cause__
    assert isinstance(error, sl.LoadError)
    assert error.table == "t"
    assert "drop --resources" in str(error)
    assert delta_version(pipeline, "t") == version


def test_source_state_in_a_source_body_and_outside_a_run(pipeline: sl.Pipeline) -> None:
    """dlt 1.31: in a source function's body, ``source_state()`` is the source's state as
    the pipeline last committed it, and what the body writes there is not kept; iterating
    the source (or its resource) by hand outside a run sees the same, and its writes are not
    kept either. Inside a run, a resource's writes are committed."""
    seen: dict[str, Any] = {}

    @sl.source(name="src")
    def src() -> Any:
        state = sl.current.source_state()
        seen["body"] = state.get("count")
        state["from_body"] = True

        @sl.resource(name="r")
        def r() -> Iterator[dict[str, int]]:
            state = sl.current.source_state()
            seen["resource"] = state.get("count")
            state["count"] = state.get("count", 0) + 1
            yield {"id": 1}

        return r

    pipeline.run(src())
    assert seen == {"body": None, "resource": None}
    pipeline.run(src())
    assert seen == {"body": 1, "resource": 1}
    committed = pipeline.state["sources"]["src"]
    assert committed["count"] == 2
    assert "from_body" not in committed

    seen.clear()
    assert list(src()) == [{"id": 1}]
    assert seen == {"body": 2, "resource": 2}
    assert pipeline.state["sources"]["src"]["count"] == 2  # a hand iteration commits nothing
    with pytest.raises(sl.SparkloadError):
        sl.current.source_state()  # outside a source or a resource there is no source


@pytest.mark.parametrize("no_key", [[], ()], ids=["list", "tuple"])
def test_an_empty_incremental_primary_key_turns_boundary_deduplication_off(
    pipeline: sl.Pipeline, no_key: Any
) -> None:
    """dlt 1.31: ``primary_key=[]`` (or ``()``) on an incremental keeps no hashes, so the
    rows at the last value are loaded again by the next run (3 rows at u=2 after two runs);
    without it they are recognised and skipped."""

    @sl.resource(name="r")
    def r(u: Any = sl.sources.incremental("u", primary_key=no_key)) -> Iterator[dict[str, int]]:
        yield from [{"id": 1, "u": 1}, {"id": 2, "u": 2}]

    pipeline.run(r())
    pipeline.run(r())
    assert sorted(row["u"] for row in delta_rows(pipeline, "r")) == [1, 2, 2]


def test_a_transformers_configured_argument_holds_for_every_item_and_is_read_again_next_run(
    pipeline: sl.Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Config for a transformer's left-out argument is read once per run (not per item) and
    applies to every item; the next run reads it again."""

    @sl.transformer(name="scaled")
    def scaled(item: int, factor: int = 1) -> Iterator[dict[str, int]]:
        yield {"item": item, "v": item * factor}

    monkeypatch.setenv("SOURCES__SCALED__FACTOR", "10")
    pipeline.run([1, 2, 3] | scaled)
    monkeypatch.setenv("SOURCES__SCALED__FACTOR", "100")
    pipeline.run([4] | scaled)
    assert sorted((row["item"], row["v"]) for row in delta_rows(pipeline, "scaled")) == [
        (1, 10),
        (2, 20),
        (3, 30),
        (4, 400),
    ]


def test_add_limit_max_time_stops_a_resource_that_runs_longer() -> None:
    """dlt 1.31: ``max_time`` stops the resource once that many seconds have passed since
    its first item; the generator is asked for nothing after that."""
    asked: list[int] = []

    @sl.resource(name="slow")
    def slow() -> Iterator[dict[str, int]]:
        for i in range(100):
            asked.append(i)
            time.sleep(0.02)
            yield {"i": i}

    rows = [row["i"] for row in slow().add_limit(max_time=0.2)]
    assert 1 <= len(rows) < 100
    assert rows == list(range(len(rows)))
    assert len(asked) <= len(rows) + 1  # stopped, not drained


def test_an_optional_incremental_left_as_none_is_off(pipeline: sl.Pipeline) -> None:
    """dlt 1.31: ``Optional[incremental] = None`` with nothing in config, or called with
    None, filters nothing and keeps no cursor."""

    @sl.resource(name="r")
    def r(created_at: Optional[sl.sources.incremental[int]] = None) -> Iterator[dict[str, int]]:  # noqa: UP045
        yield from ({"c": i} for i in range(5))

    assert pipeline.run(r()).row_counts == {"r": 5}
    assert pipeline.run(r(created_at=None)).row_counts == {"r": 5}
    resources = pipeline.state.get("sources", {}).get(pipeline.pipeline_name, {}).get("resources", {})
    assert "incremental" not in resources.get("r", {})


def test_a_run_with_nothing_new_makes_one_empty_package(pipeline: sl.Pipeline) -> None:
    """A deliberate difference (docs/dlt.md): dlt makes no load package when nothing is
    new; sparkload makes one with no rows, which commits the run's state."""
    r = sl.resource(_counting_up([8]), name="r")
    first = pipeline.run(r())
    assert len(first.loads_ids) == 1 and first.row_counts == {"r": 3}
    second = pipeline.run(r())
    assert len(second.loads_ids) == 1
    assert second.loads_ids != first.loads_ids
    assert second.row_counts == {}


def test_a_standalone_resource_iterated_outside_a_run_writes_no_state(pipeline: sl.Pipeline) -> None:
    @sl.resource(name="counter")
    def counter() -> Iterator[dict[str, int]]:
        state = sl.current.source_state()
        state["count"] = state.get("count", 0) + 1
        yield {"count": state["count"]}

    pipeline.run(counter())
    before = pipeline.state["sources"][pipeline.pipeline_name]["count"]
    # by hand, outside a run: the state the pipeline last committed, and nothing kept
    assert list(counter()) == [{"count": 2}]
    assert pipeline.state["sources"][pipeline.pipeline_name]["count"] == before == 1
