"""The state document names every key sparkload writes (``common/state_record.py``): a key
a stage starts writing without naming it there fails here, so the record stays the one
place a reader learns the state's shape."""

from __future__ import annotations

import datetime
from typing import Any, get_type_hints

import sparkload as sl
from sparkload.common.state_record import CursorState, PipelineState, ResourceState, SourceState


def _named(record: type) -> set[str]:
    return set(get_type_hints(record))


def test_every_key_a_run_writes_is_named_in_the_state_record(make_pipeline: Any) -> None:
    @sl.resource(primary_key="id", write_disposition="merge")
    def users(updated: Any = sl.sources.incremental("updated", initial_value=0)) -> Any:  # noqa: B008 (dlt's form)
        yield from ({"id": i, "updated": i, "roles": ["a", "b"]} for i in range(3))

    @sl.resource
    def events(window: Any = sl.sources.intervals("at", start="2024-01-01", cron="@daily")) -> Any:  # noqa: B008
        yield {"at": window.start, "n": 1}

    @sl.resource(write_disposition="replace")
    def remembered() -> Any:
        sl.current.resource_state()["own"] = 1  # the user's keys: not named, by design
        sl.current.source_state()["token"] = "t"
        yield {"x": 1}

    @sl.source
    def crm() -> Any:
        return users, events, remembered

    pipeline = make_pipeline()
    pipeline.run(crm(), execution_time=datetime.datetime(2024, 1, 3, tzinfo=datetime.UTC))
    state: PipelineState = pipeline.committed_state

    assert set(state) <= _named(PipelineState), set(state) - _named(PipelineState)
    assert {"_state_version", "sources", "schema", "tables", "keys"} <= set(state)
    source = state["sources"]["crm"]
    assert set(source) - _named(SourceState) == {"token"}
    resources = source["resources"]
    assert set(resources["users"]) <= _named(ResourceState)
    assert set(resources["events"]) <= _named(ResourceState)
    assert set(resources["remembered"]) - _named(ResourceState) == {"own"}
    cursor = resources["users"]["incremental"]["updated"]
    assert set(cursor) <= _named(CursorState), set(cursor) - _named(CursorState)
    assert cursor["last_value"] == 2
    assert resources["events"]["intervals"] == [["2024-01-01T00:00:00+00:00", "2024-01-03T00:00:00+00:00"]]
    assert state["keys"]["users"]["primary_key"] == ["id"]
