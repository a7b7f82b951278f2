"""Where an incremental cursor starts: ``pipeline.plan()`` shows the start the run then uses,
and a restatement compares its start with the same one.

The run binds a resource's incrementals from everything that can set them: an incremental
passed as an argument (``users(updated=sl.incremental(...))``), one supplied by config, the
stored cursor moved back by ``lag``, the stateless range of ``end_value``. Each test
records, inside the resource, the ``start_value`` the run bound, and checks that the plan
made just before said the same; and again after a first run stored a cursor.

No ``from __future__ import annotations``: config recognises a config-supplied incremental
by its annotation, which must be the class itself (as in dlt).
"""

# Incrementals are declared as call defaults, as in dlt.
# ruff: noqa: B008

import copy
import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conftest import delta_rows

import sparkload as sl

UTC = datetime.timezone.utc
START = datetime.datetime(2024, 9, 20, tzinfo=UTC)


def day(n: int) -> datetime.datetime:
    return START + datetime.timedelta(days=n)


def write_settings(tmp_path: Path, name: str, text: str) -> None:
    """A TOML file in the project settings dir (conftest points SPARKLOAD_PROJECT_DIR there)."""
    directory = tmp_path / "_project" / ".sparkload"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(text, encoding="utf-8")


def plan_then_apply(pipeline: sl.Pipeline, resource: sl.Resource, seen: list[Any]) -> tuple[Any, Any]:
    """The start the plan shows for ``users.updated`` and the start its apply() ran with."""
    plan = pipeline.plan(resource)
    before = len(seen)
    plan.apply()
    assert len(seen) == before + 1, "the resource did not run exactly once"
    return plan.incrementals.get("users.updated", "(not in the plan)"), seen[-1]


def ids(pipeline: sl.Pipeline) -> list[int]:
    return sorted(row["id"] for row in delta_rows(pipeline, "users"))


def test_an_incremental_passed_as_an_argument_starts_where_the_plan_says(pipeline: sl.Pipeline) -> None:
    seen: list[Any] = []
    rows = [{"id": n, "updated": n} for n in range(1, 6)]

    @sl.resource(primary_key="id", write_disposition="merge")
    def users(updated: Any = sl.incremental("updated", initial_value=0)) -> Iterator[Any]:
        seen.append(updated.start_value)
        yield from rows

    bound = users(updated=sl.incremental("updated", initial_value=3))

    assert plan_then_apply(pipeline, bound, seen) == (3, 3)  # not the declared 0
    assert ids(pipeline) == [3, 4, 5]
    rows.append({"id": 6, "updated": 6})
    assert plan_then_apply(pipeline, bound, seen) == (5, 5)  # the stored cursor
    assert ids(pipeline) == [3, 4, 5, 6]


def test_an_incremental_given_to_a_function_that_declares_none_is_in_the_plan(pipeline: sl.Pipeline) -> None:
    seen: list[Any] = []

    @sl.resource(primary_key="id")
    def users(updated: Any = None) -> Iterator[Any]:
        seen.append(updated.start_value)
        yield from ({"id": n, "updated": day(n)} for n in range(4))

    bound = users(updated=sl.incremental("updated", initial_value=day(2)))

    assert plan_then_apply(pipeline, bound, seen) == (day(2), day(2))
    assert ids(pipeline) == [2, 3]


def test_a_backfill_with_end_value_starts_at_its_initial_value_not_at_the_stored_cursor(
    pipeline: sl.Pipeline,
) -> None:
    seen: list[Any] = []

    @sl.resource(primary_key="id", write_disposition="merge")
    def users(updated: Any = sl.incremental("updated", initial_value=0)) -> Iterator[Any]:
        seen.append(updated.start_value)
        yield from ({"id": n, "updated": n} for n in range(1, 8))

    assert plan_then_apply(pipeline, users, seen) == (0, 0)  # stores last_value 7
    backfill = users(updated=sl.incremental("updated", initial_value=2, end_value=4))

    assert plan_then_apply(pipeline, backfill, seen) == (2, 2)  # stateless: the stored 7 is not used


def test_an_incremental_from_config_starts_where_the_plan_says(make_pipeline: Any, tmp_path: Path) -> None:
    # Scoped to the pipeline: the plan must resolve config for the pipeline the run runs in.
    write_settings(
        tmp_path,
        "config.toml",
        '[cursor_config.sources.updated]\ncursor_path = "updated"\ninitial_value = 3\n',
    )
    pipeline = make_pipeline("cursor_config")
    seen: list[Any] = []
    rows = [{"id": n, "updated": n} for n in range(1, 6)]

    @sl.resource(primary_key="id", write_disposition="merge")
    def users(updated: sl.incremental = sl.config.value) -> Iterator[Any]:
        seen.append(updated.start_value)
        yield from rows

    assert plan_then_apply(pipeline, users, seen) == (3, 3)
    assert ids(pipeline) == [3, 4, 5]
    rows.append({"id": 6, "updated": 6})
    assert plan_then_apply(pipeline, users, seen) == (5, 5)


def test_an_incremental_from_environment_variables_starts_where_the_plan_says(
    pipeline: sl.Pipeline, monkeypatch: Any
) -> None:
    monkeypatch.setenv("SOURCES__USERS__UPDATED__CURSOR_PATH", "updated")
    seen: list[Any] = []

    @sl.resource(primary_key="id", write_disposition="merge")
    def users(updated: sl.incremental = sl.config.value) -> Iterator[Any]:
        seen.append(updated.start_value)
        yield from ({"id": n, "updated": n} for n in range(1, 4))

    assert plan_then_apply(pipeline, users, seen) == (None, None)
    assert plan_then_apply(pipeline, users, seen) == (3, 3)


def test_a_lagged_incremental_starts_where_the_plan_says(pipeline: sl.Pipeline) -> None:
    seen: list[Any] = []
    rows = [{"id": n, "updated": day(n)} for n in range(1, 6)]

    @sl.resource(primary_key="id", write_disposition="merge")
    def users(
        updated: Any = sl.incremental("updated", initial_value=day(0), lag=2 * 86400),
    ) -> Iterator[Any]:
        seen.append(updated.start_value)
        yield from rows

    assert plan_then_apply(pipeline, users, seen) == (day(0), day(0))
    rows.append({"id": 6, "updated": day(6)})
    # The stored cursor is day 5; the run starts two days behind it.
    assert plan_then_apply(pipeline, users, seen) == (day(3), day(3))
    assert ids(pipeline) == [1, 2, 3, 4, 5, 6]


def test_a_lag_passed_as_an_argument_starts_where_the_plan_says(pipeline: sl.Pipeline) -> None:
    seen: list[Any] = []

    @sl.resource(primary_key="id", write_disposition="merge")
    def users(updated: Any = sl.incremental("updated", initial_value=0)) -> Iterator[Any]:
        seen.append(updated.start_value)
        yield from ({"id": n, "updated": n} for n in range(1, 11))

    lagged = users(updated=sl.incremental(lag=4))

    assert plan_then_apply(pipeline, lagged, seen) == (0, 0)
    assert plan_then_apply(pipeline, lagged, seen) == (6, 6)  # the stored 10, less 4


def test_cursor_starts_reads_the_state_without_changing_it() -> None:
    @sl.resource
    def users(updated: Any = sl.incremental("updated", initial_value=0, lag=1)) -> Iterator[Any]:
        yield {"updated": 1}

    state = {"incremental": {"updated": {"initial_value": 0, "last_value": 9, "unique_hashes": ["x"]}}}
    before = copy.deepcopy(state)

    assert users.cursor_starts(state) == {"updated": 8}
    assert users.cursor_starts({}) == {"updated": 0}
    assert state == before
    assert users.apply_hints(write_disposition="replace").cursor_starts(state) == {"updated": 0}


# -- restatement: the resource's own start is the start its run binds ----------------------------


def _users(seen: list[Any]) -> sl.Resource:
    @sl.resource(name="users", primary_key="id", write_disposition="merge")
    def users(updated: Any = sl.incremental("updated", initial_value=day(0))) -> Iterator[Any]:
        seen.append(updated.start_value)
        yield from ({"id": n, "updated": day(n)} for n in (5, 6))

    return users


def test_a_restatement_compares_its_start_with_the_initial_value_passed_as_an_argument(
    pipeline: sl.Pipeline,
) -> None:
    seen: list[Any] = []
    users = _users(seen)(updated=sl.incremental("updated", initial_value=day(5)))
    pipeline.run(users)

    # day 3 is before the resource's own start (day 5, not the declared day 0): a full refresh
    plan = pipeline.plan(users, restate=["users"], start=day(3))
    assert plan.ignored == {}
    assert plan.incrementals == {"users.updated": day(5)}
    info = plan.apply()
    assert info.notes == []
    assert seen[-1] == day(5)

    # day 6 is after it: the resource sits the restatement out, expecting day 5
    runs = len(seen)
    plan = pipeline.plan(users, restate=["users"], start=day(6))
    assert plan.ignored == {"users": day(5).isoformat()}
    info = plan.apply()
    assert len(seen) == runs
    assert any(f"expected start: {day(5).isoformat()}" in note for note in info.notes)


def test_a_restatement_compares_its_start_with_an_initial_value_from_config(
    make_pipeline: Any, tmp_path: Path
) -> None:
    write_settings(
        tmp_path,
        "config.toml",
        '[restate_config.sources.updated]\ncursor_path = "updated"\n'
        f'initial_value = "{day(5).isoformat()}"\n',
    )
    pipeline = make_pipeline("restate_config")
    seen: list[Any] = []

    @sl.resource(name="users", primary_key="id", write_disposition="merge")
    def users(updated: sl.incremental = sl.config.value) -> Iterator[Any]:
        seen.append(updated.start_value)
        yield from ({"id": n, "updated": day(n)} for n in (5, 6))

    pipeline.run(users)
    assert pipeline.plan(users, restate=["users"], start=day(3)).ignored == {}
    assert pipeline.plan(users, restate=["users"], start=day(6)).ignored == {"users": day(5).isoformat()}
