"""``pipeline.extract()`` and the state as dlt has them: after an extract, before its package
loads, ``pipeline.state`` holds the cursors it took and ``pipeline.default_schema`` the
tables it found; a source iterated by hand with a pipeline about sees its stored cursors.
Real pipelines on the embedded engine; the loaded table is read back with delta-rs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from conftest import delta_rows, user_columns

import sparkload as sl

ROWS: list[dict[str, Any]] = [{"id": 1, "updated": 10, "name": "a"}, {"id": 2, "updated": 20, "name": "b"}]


def _source(rows: list[dict[str, Any]]) -> Any:
    @sl.resource(primary_key="id")
    def items(
        updated: Any = sl.sources.incremental("updated", initial_value=0),  # noqa: B008 (dlt's form)
    ) -> Iterator[dict[str, Any]]:
        yield from rows

    @sl.source
    def shop() -> Any:
        return items

    return shop()


def _cursor(pipeline: sl.Pipeline) -> Any:
    return pipeline.state["sources"]["shop"]["resources"]["items"]["incremental"]["updated"]["last_value"]


def test_extract_updates_the_state_and_the_default_schema(pipeline: sl.Pipeline) -> None:
    assert pipeline.default_schema_name is None
    pipeline.extract(_source(ROWS))

    assert _cursor(pipeline) == 20  # as dlt's: the extract's cursor, before any load
    assert pipeline.committed_state.get("sources", {}) == {}
    assert pipeline.default_schema_name == pipeline.pipeline_name
    columns = pipeline.default_schema.tables["items"]["columns"]
    assert {name: column.get("data_type") for name, column in columns.items()} == {
        "id": "bigint",
        "updated": "bigint",
        "name": "text",
    }
    assert columns["id"]["primary_key"] is True

    pipeline.normalize()  # still waiting to load: the normalized shape
    assert _cursor(pipeline) == 20
    assert "items" in pipeline.default_schema.tables

    pipeline.load()
    assert (
        pipeline.committed_state["sources"]["shop"]["resources"]["items"]["incremental"]["updated"][
            "last_value"
        ]
        == 20
    )
    assert user_columns(delta_rows(pipeline, "items", order_by="id")) == ROWS


def test_a_source_iterated_by_hand_reads_its_stored_cursor(pipeline: sl.Pipeline) -> None:
    pipeline.extract(_source(ROWS))
    later = [*ROWS, {"id": 3, "updated": 30, "name": "c"}]
    assert list(_source(later)) == [later[2]]  # the extract's cursor, as in dlt, before the load

    pipeline.normalize()
    pipeline.load()
    assert list(_source(later)) == [later[2]]  # and after it
    assert list(_source(ROWS)) == []
    # Iterating by hand commits nothing.
    assert _cursor(pipeline) == 20


def test_a_resource_iterated_by_hand_reads_its_stored_cursor(pipeline: sl.Pipeline) -> None:
    @sl.resource(primary_key="id")
    def events(
        updated: Any = sl.sources.incremental("updated", initial_value=0),  # noqa: B008 (dlt's form)
    ) -> Iterator[dict[str, Any]]:
        yield from [{"id": 1, "updated": 10}, {"id": 2, "updated": 20}]

    pipeline.run(events)
    assert list(events) == []
    assert [item for item in events()] == []


@pytest.mark.parametrize("step", ["extract", "normalize"])
def test_dropping_the_waiting_packages_takes_their_cursors_back(pipeline: sl.Pipeline, step: str) -> None:
    pipeline.run(_source(ROWS))
    pipeline.extract(_source([*ROWS, {"id": 3, "updated": 30, "name": "c"}]))
    if step == "normalize":
        pipeline.normalize()
    assert _cursor(pipeline) == 30
    pipeline.drop_pending_packages()
    assert _cursor(pipeline) == 20  # the waiting package's cursor went with it
