"""Incremental cursors held to dlt 1.31's behaviour (its tests/extract/test_incremental.py).

Each test names the dlt test or rule it mirrors; the expected values are what dlt keeps for
the same input. Tables are read back with delta-rs, an engine independent of the writer.
"""

# Incrementals are declared as call defaults: that is dlt's API.
# ruff: noqa: B008

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from conftest import delta_rows

import sparkload as sl

ITEM_TYPES = ["object", "arrow"]


def as_item(item_type: str, rows: list[dict[str, Any]]) -> Any:
    """A page of rows as dicts or as one Arrow table (dlt's ``data_to_item_format``)."""
    return rows if item_type == "object" else pa.Table.from_pylist(rows)


def cursor_values(items: list[Any], cursor: str = "updated_at") -> list[Any]:
    """The cursor values of the items a resource gave, dict rows and Arrow tables alike."""
    values: list[Any] = []
    for item in items:
        if isinstance(item, pa.Table):
            values += item.column(cursor).to_pylist()
        else:
            values.append(item[cursor])
    return values


def chunks(values: Iterator[int], size: int) -> Iterator[list[int]]:
    while chunk := list(itertools.islice(values, size)):
        yield chunk


# -- row_order and end_value: the page at hand is filtered whole ----------------------------------


@pytest.mark.parametrize("item_type", ITEM_TYPES)
def test_asc_row_order_keeps_the_rows_in_range_after_the_first_row_past_end_value(
    pipeline: sl.Pipeline, item_type: str
) -> None:
    """dlt closes the generator at the first row past end_value but filters the rest of the
    page row by row: 3, after 11 in the same page, is loaded; the next page is not requested."""
    pages_requested: list[int] = []

    @sl.resource(name="events")
    def events(
        updated_at: Any = sl.sources.incremental(
            "updated_at", initial_value=1, end_value=10, row_order="asc"
        ),
    ) -> Iterator[Any]:
        pages_requested.append(1)
        yield as_item(
            item_type, [{"updated_at": 1}, {"updated_at": 2}, {"updated_at": 11}, {"updated_at": 3}]
        )
        pages_requested.append(2)
        yield as_item(item_type, [{"updated_at": 4}])

    pipeline.run(events())

    assert sorted(row["updated_at"] for row in delta_rows(pipeline, "events")) == [1, 2, 3]
    assert pages_requested == [1]


@pytest.mark.parametrize("item_type", ITEM_TYPES)
def test_desc_row_order_keeps_the_rows_in_range_after_the_first_row_before_the_start(
    pipeline: sl.Pipeline, item_type: str
) -> None:
    """row_order "desc" closes at the first row before the start: 11 and 12 of that page are
    kept, 9 is not, and the next page (13) is never requested."""

    @sl.resource(name="events")
    def events(
        updated_at: Any = sl.sources.incremental("updated_at", initial_value=10, row_order="desc"),
    ) -> Iterator[Any]:
        yield as_item(item_type, [{"updated_at": 12}, {"updated_at": 9}, {"updated_at": 11}])
        yield as_item(item_type, [{"updated_at": 13}])

    pipeline.run(events())

    assert sorted(row["updated_at"] for row in delta_rows(pipeline, "events")) == [11, 12]


@pytest.mark.parametrize("item_type", ITEM_TYPES)
def test_row_order_out_of_range(item_type: str) -> None:
    """dlt's test_row_order_out_of_range: descending pages stop at the start, ascending pages
    of an endless sequence stop at end_value (both bounds as dlt keeps them), and a row_order
    the data does not follow never stops the generator but still filters every row."""

    @sl.resource
    def descending(
        updated_at: Any = sl.sources.incremental("updated_at", initial_value=10, row_order="desc"),
    ) -> Iterator[Any]:
        for chunk in chunks(itertools.count(start=48, step=-1), 10):
            yield as_item(item_type, [{"updated_at": i} for i in chunk])

    assert sorted(cursor_values(list(descending))) == list(range(10, 49))

    @sl.resource
    def ascending(
        updated_at: Any = sl.sources.incremental(
            "updated_at", initial_value=22, end_value=45, row_order="asc"
        ),
    ) -> Iterator[Any]:
        # an endless sequence: the test would not end if the generator were not stopped
        for chunk in chunks(itertools.count(start=22), 10):
            yield as_item(item_type, [{"updated_at": i} for i in chunk])

    assert sorted(cursor_values(list(ascending))) == list(range(22, 45))

    pages: list[int] = []

    @sl.resource
    def ascending_desc(
        updated_at: Any = sl.sources.incremental(
            "updated_at", initial_value=22, end_value=45, row_order="desc"
        ),
    ) -> Iterator[Any]:
        for chunk in chunks(iter(range(22, 100)), 10):
            pages.append(chunk[0])
            yield as_item(item_type, [{"updated_at": i} for i in chunk])

    assert sorted(cursor_values(list(ascending_desc))) == list(range(22, 45))
    assert pages == list(range(22, 100, 10))  # never stopped


@pytest.mark.parametrize("item_type", ITEM_TYPES)
def test_start_out_of_range_open_equals_start_value(item_type: str) -> None:
    """dlt's test of the same name: with range_start "open" a row on the start value is out of
    range, and row_order "desc" stops there."""
    flags: list[tuple[int, bool]] = []

    @sl.resource
    def descending(
        updated_at: Any = sl.sources.incremental(
            "updated_at", initial_value=10, row_order="desc", range_start="open"
        ),
    ) -> Iterator[Any]:
        for i in [12, 11, 10, 9, 8]:
            yield as_item(item_type, [{"updated_at": i}])
            flags.append((i, updated_at.start_out_of_range))

    assert sorted(cursor_values(list(descending))) == [11, 12]
    assert flags == [(12, False), (11, False)]  # not resumed after 10


def test_end_value_with_batches(pipeline: sl.Pipeline) -> None:
    """dlt's test_end_value_with_batches: pages of 12 and 8 rows, backfilled in two chunks."""

    @sl.resource
    def batched_sequence(
        updated_at: Any = sl.sources.incremental("updated_at", initial_value=1),
    ) -> Iterator[Any]:
        start = updated_at.last_value
        yield [{"updated_at": i} for i in range(start, start + 12)]
        yield [{"updated_at": i} for i in range(start + 12, start + 20)]

    pipeline.run(batched_sequence(updated_at=sl.sources.incremental(initial_value=1, end_value=10)))
    assert sorted(r["updated_at"] for r in delta_rows(pipeline, "batched_sequence")) == list(range(1, 10))

    pipeline.run(batched_sequence(updated_at=sl.sources.incremental(initial_value=10, end_value=14)))
    assert sorted(r["updated_at"] for r in delta_rows(pipeline, "batched_sequence")) == list(range(1, 14))


def test_a_transformers_row_order_never_stops_its_parent(pipeline: sl.Pipeline) -> None:
    """dlt closes only a pipe's head: a transformer's incremental filters every item it gets
    (the rows after 11 too), and its parent keeps yielding."""
    parent_yields: list[int] = []

    @sl.resource(name="packages", selected=False)
    def packages() -> Iterator[int]:
        for package in (1, 2):
            parent_yields.append(package)
            yield package

    @sl.transformer(data_from=packages, name="events")
    def events(
        package: int,
        updated_at: Any = sl.sources.incremental(
            "updated_at", initial_value=1, end_value=10, row_order="asc"
        ),
    ) -> Iterator[Any]:
        for value in (package, 11, package + 2):
            yield {"updated_at": value, "package": package}

    pipeline.run(events)

    rows = sorted((r["package"], r["updated_at"]) for r in delta_rows(pipeline, "events"))
    assert rows == [(1, 1), (1, 3), (2, 2), (2, 4)]
    assert parent_yields == [1, 2]


# -- primary_key=() switches boundary deduplication off ------------------------------------------


def test_empty_primary_key_switches_deduplication_off_and_forgets_the_boundary_hashes(
    pipeline: sl.Pipeline,
) -> None:
    """dlt's test_custom_metrics_in_incremental, steps 4 to 8: an incremental with
    ``primary_key=()`` loads the rows on the start again and stores no hashes, so when
    deduplication is switched back on the rows the earlier hashes stood for are not dropped."""

    @sl.resource(name="items")
    def items(rows: list[dict[str, Any]], as_batch: bool = True) -> Iterator[Any]:
        if as_batch:
            yield rows
        else:
            yield from rows

    def run(rows: list[dict[str, Any]], as_batch: bool = True) -> list[str]:
        before = {r["_sparkload_load_id"] for r in delta_rows(pipeline, "items")} if loads else set()
        loads.append(pipeline.run(resource(rows, as_batch)))
        return sorted(
            r["value"] for r in delta_rows(pipeline, "items") if r["_sparkload_load_id"] not in before
        )

    loads: list[Any] = []
    resource = items
    resource.apply_hints(incremental=sl.sources.incremental("id", initial_value=-1))
    assert run([{"id": 5, "value": "5.1"}, {"id": 5, "value": "5.2"}, {"id": 5, "value": "5.3"}]) == [
        "5.1",
        "5.2",
        "5.3",
    ]
    hashes = pipeline.state["sources"][pipeline.pipeline_name]["resources"]["items"]["incremental"]["id"]
    assert len(hashes["unique_hashes"]) == 3

    # no deduplication: the rows on the start load again, and no hashes are kept
    resource.apply_hints(incremental=sl.sources.incremental("id", initial_value=-1, primary_key=()))
    assert run([{"id": 5, "value": "5.1"}, {"id": 5, "value": "5.2"}, {"id": 5, "value": "5.3"}]) == [
        "5.1",
        "5.2",
        "5.3",
    ]
    hashes = pipeline.state["sources"][pipeline.pipeline_name]["resources"]["items"]["incremental"]["id"]
    assert hashes["unique_hashes"] == []
    assert run([{"id": 5, "value": "5.1"}, {"id": 6, "value": "6.1"}]) == ["5.1", "6.1"]

    # deduplication on again (by id): 6.1 was stored with no hash, so it loads again
    resource.apply_hints(incremental=sl.sources.incremental("id", initial_value=-1, primary_key="id"))
    assert run([{"id": 6, "value": "6.1"}, {"id": 7, "value": "7"}]) == ["6.1", "7"]
    assert run([{"id": 7, "value": "7"}, {"id": 8, "value": "8"}], as_batch=False) == ["8"]


def test_empty_primary_key_on_the_start_value_loads_rows_hashed_by_an_earlier_run(
    pipeline: sl.Pipeline,
) -> None:
    """A run with ``primary_key=[]`` that brings nothing past the stored cursor must not keep
    the hashes an earlier run stored: dlt writes none, and the next run with deduplication
    loads the rows on the cursor that the run without it loaded again."""

    @sl.resource(name="items")
    def items(rows: list[dict[str, Any]]) -> Iterator[Any]:
        yield rows

    page = [{"id": 1, "value": "a"}, {"id": 1, "value": "b"}]
    pipeline.run(items(page).apply_hints(incremental=sl.sources.incremental("id", initial_value=0)))
    pipeline.run(
        items(page).apply_hints(incremental=sl.sources.incremental("id", initial_value=0, primary_key=[]))
    )
    state = pipeline.state["sources"][pipeline.pipeline_name]["resources"]["items"]["incremental"]["id"]
    assert state["unique_hashes"] == []
    pipeline.run(items(page).apply_hints(incremental=sl.sources.incremental("id", initial_value=0)))

    assert sorted(r["value"] for r in delta_rows(pipeline, "items")) == ["a", "a", "a", "b", "b", "b"]


# -- one parent, two transformers: one pass, one cursor --------------------------------------------


def test_a_resource_piped_into_two_named_transformers_feeds_both_from_one_pass(pipeline: sl.Pipeline) -> None:
    """As dlt forks one pipe: the parent's generator runs once, both tables get its rows, and
    its cursor is stored once, under the parent's name."""
    calls: list[int] = []

    @sl.resource(name="base")
    def base(u: Any = sl.sources.incremental("u", initial_value=1)) -> Iterator[Any]:
        calls.append(1)
        yield [{"u": 1}, {"u": 2}] if len(calls) == 1 else [{"u": 2}, {"u": 3}]

    @sl.transformer(name="t")
    def t(items: Any) -> Iterator[Any]:
        yield items

    b = base()
    pipeline.run([b | t.with_name("copy_a"), b | t.with_name("copy_b")])

    assert calls == [1]
    for name in ("copy_a", "copy_b"):
        assert sorted(row["u"] for row in delta_rows(pipeline, name)) == [1, 2]
    resources = pipeline.state["sources"][pipeline.pipeline_name]["resources"]
    assert resources["base"]["incremental"]["u"]["last_value"] == 2
    assert "base" not in pipeline.destination_dataset.user_tables()

    # the next run: only what is new reaches either table
    pipeline.run([b | t.with_name("copy_a"), b | t.with_name("copy_b")])
    assert calls == [1, 1]
    for name in ("copy_a", "copy_b"):
        assert sorted(row["u"] for row in delta_rows(pipeline, name)) == [1, 2, 3]


def test_a_resource_given_beside_its_transformer_is_passed_over_once(pipeline: sl.Pipeline) -> None:
    """A list holding a resource and a transformer of it is one source, as in dlt: the
    transformer is fed from the resource's own pass, not from a second one its cursor
    would leave empty."""

    @sl.resource(name="base")
    def base(u: Any = sl.sources.incremental("u", initial_value=1)) -> Iterator[Any]:
        yield [{"u": 1}, {"u": 2}]

    @sl.transformer(name="doubled")
    def doubled(items: Any) -> Iterator[Any]:
        yield [{"u": item["u"] * 2} for item in items]

    b = base()
    pipeline.run([b, b | doubled])

    assert sorted(row["u"] for row in delta_rows(pipeline, "base")) == [1, 2]
    assert sorted(row["u"] for row in delta_rows(pipeline, "doubled")) == [2, 4]


def test_two_transformers_of_an_unselected_parent_in_a_source_share_its_pass(pipeline: sl.Pipeline) -> None:
    """The same inside a source whose parent resource is not selected."""

    @sl.source
    def events_source() -> Any:
        @sl.resource(name="pages", selected=False)
        def pages(u: Any = sl.sources.incremental("u", initial_value=1)) -> Iterator[Any]:
            yield [{"u": 1}, {"u": 2}]

        @sl.transformer(data_from=pages, name="left")
        def left(items: Any) -> Iterator[Any]:
            yield items

        @sl.transformer(data_from=pages, name="right")
        def right(items: Any) -> Iterator[Any]:
            yield items

        return pages, left, right

    pipeline.run(events_source())

    for name in ("left", "right"):
        assert sorted(row["u"] for row in delta_rows(pipeline, name)) == [1, 2]


# -- merge into a list-of-structs column kept whole (max_table_nesting=0) --------------------------


def test_a_second_merge_with_max_table_nesting_0_updates_a_list_of_structs_column(
    pipeline: sl.Pipeline,
) -> None:
    """With max_table_nesting=0 a list of dicts stays in its row (a JSON column in dlt); a
    second merge must update it and insert new rows, not fail in the load step."""

    @sl.resource(name="orders", write_disposition="merge", primary_key="id", max_table_nesting=0)
    def orders(rows: list[dict[str, Any]]) -> Iterator[Any]:
        yield rows

    pipeline.run(
        orders([{"id": 1, "items": [{"a": 1, "b": "x", "tags": ["p"]}], "s": {"l": [1], "ll": [[{"q": 1}]]}}])
    )
    pipeline.run(
        orders(
            [
                {"id": 1, "items": [{"a": 2, "b": "y", "tags": ["q"]}], "s": {"l": [3], "ll": [[{"q": 2}]]}},
                {"id": 2, "items": [{"a": 3, "b": "z", "tags": []}], "s": {"l": [], "ll": []}},
            ]
        )
    )
    pipeline.run(
        orders([{"id": 5, "items": [{"a": 5, "b": "v", "tags": ["r"]}], "s": {"l": [5], "ll": [[{"q": 5}]]}}])
    )

    rows = sorted(delta_rows(pipeline, "orders"), key=lambda r: r["id"])
    assert [(r["id"], r["items"], r["s"]) for r in rows] == [
        (1, [{"a": 2, "b": "y", "tags": ["q"]}], {"l": [3], "ll": [[{"q": 2}]]}),
        (2, [{"a": 3, "b": "z", "tags": []}], {"l": [], "ll": []}),
        (5, [{"a": 5, "b": "v", "tags": ["r"]}], {"l": [5], "ll": [[{"q": 5}]]}),
    ]
    assert "orders__items" not in pipeline.destination_dataset.user_tables()


# -- the state API: start_value, source_state() outside a resource, can_close() in a transformer ---


def test_start_value_is_the_cursor_when_the_run_began_and_is_kept_in_the_state(pipeline: sl.Pipeline) -> None:
    """dlt's test_cursor_datetime_type and test_incremental_as_transform: ``start_value`` is
    the last value when the run began, for the whole run, and the state keeps it (the
    initial value on a fresh state) beside last_value."""
    seen: list[tuple[Any, Any]] = []
    batches = [[{"ts": 3}, {"ts": 5}], [{"ts": 7}], []]

    @sl.resource(name="events")
    def events(ts: Any = sl.sources.incremental("ts", initial_value=1)) -> Iterator[Any]:
        seen.append((ts.start_value, ts.last_value))
        yield batches.pop(0)
        seen.append((ts.start_value, ts.last_value))

    def cursor() -> dict[str, Any]:
        resources = pipeline.state["sources"][pipeline.pipeline_name]["resources"]
        return dict(resources["events"]["incremental"]["ts"])

    pipeline.run(events())
    assert seen == [(1, 1), (1, 5)]
    assert cursor()["start_value"] == 1 and cursor()["last_value"] == 5

    pipeline.run(events())
    assert seen[2:] == [(5, 5), (5, 7)]
    assert cursor()["start_value"] == 5 and cursor()["last_value"] == 7

    pipeline.run(events())  # nothing passes: the state stays as it was
    assert cursor()["start_value"] == 5 and cursor()["last_value"] == 7


def test_source_state_outside_a_resource_raises() -> None:
    """dlt raises SourceSectionNotAvailable when no source is being extracted."""
    with pytest.raises(sl.exceptions.SparkloadError, match="source_state"):
        sl.current.source_state()


def test_transformer_row_order_out_of_range(pipeline: sl.Pipeline) -> None:
    """dlt's test of the same name: a transformer reads can_close() on its own incremental to
    stop by itself. The first parent item loads 48 down to 10 and stops at 9; the next ones
    start at 48, which the first one loaded (deduplicated by primary key), and stop at once."""
    out_of_range: list[int] = []

    @sl.transformer(data_from=sl.resource([3, 2, 1], name="packages", selected=False), name="descending")
    def descending(
        package: int,
        updated_at: Any = sl.sources.incremental(
            "updated_at", initial_value=10, row_order="desc", primary_key="updated_at"
        ),
    ) -> Iterator[Any]:
        for chunk in chunks(itertools.count(start=48, step=-1), 10):
            yield [{"updated_at": i, "package": package} for i in chunk]
            if updated_at.can_close():
                out_of_range.append(package)
                return

    pipeline.run(descending)

    rows = delta_rows(pipeline, "descending")
    assert sorted(r["updated_at"] for r in rows) == list(range(10, 49))
    assert {r["package"] for r in rows} == {3}
    assert out_of_range == [3, 2, 1]
