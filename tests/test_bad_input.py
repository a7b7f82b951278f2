"""Bad input: every failure is a clear error naming where it happened, and nothing already
loaded is lost or changed. Odd identifiers and odd strings land intact.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from conftest import delta_rows, delta_version, spark_rows, user_columns

import sparkload as sl
from sparkload.common.naming import normalize_identifier
from sparkload.common.package import list_packages
from sparkload.exceptions import PipelineStepFailed, UnserializableValueError, UnsupportedItemError


def snapshot(pipeline: sl.Pipeline, table: str) -> tuple[int, list[dict[str, Any]]]:
    """A table's Delta version and rows, to compare before and after a failed run."""
    return delta_version(pipeline, table), delta_rows(pipeline, table, order_by="_sparkload_id")


def exception_chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def pending_packages(pipeline: sl.Pipeline) -> list[str]:
    """Load ids of the packages waiting, extracted here or normalized beside the data."""
    waiting = [p.name for p in pipeline.packages_dir.iterdir()] if pipeline.packages_dir.exists() else []
    return waiting + [
        p.load_id for p in list_packages(pipeline.destination_dataset.staging_folder(pipeline.pipeline_name))
    ]


@pytest.fixture
def loaded(pipeline: sl.Pipeline) -> sl.Pipeline:
    """A pipeline with an earlier successful load into ``users`` (and its nested table)."""
    pipeline.run(
        [{"id": 1, "name": "ada", "tags": ["x"]}, {"id": 2, "name": "bob", "tags": []}],
        table_name="users",
    )
    return pipeline


# -- items that are not dicts -----------------------------------------------------------------

# (an int or a string is a row {"value": ...}, as in dlt: tests/test_dlt_fidelity.py)
NON_DICTS = [pytest.param({1, 2}, id="set"), pytest.param(object(), id="object")]


@pytest.mark.parametrize("bad", NON_DICTS)
def test_non_dict_item_fails_and_leaves_earlier_tables_untouched(loaded: sl.Pipeline, bad: Any) -> None:
    before = {t: snapshot(loaded, t) for t in ("users", "users__tags")}

    @sl.resource(table_name="users")
    def mixed() -> Iterator[Any]:
        yield {"id": 3, "name": "cy", "tags": ["y"]}
        yield {"id": 4, "name": "di", "tags": []}
        yield bad

    with pytest.raises(PipelineStepFailed) as failure:
        loaded.run(mixed)

    assert failure.value.step == "extract"
    assert isinstance(failure.value.__cause__, UnsupportedItemError)
    message = str(failure.value)
    assert "mixed" in message
    assert type(bad).__name__ in message
    assert {t: snapshot(loaded, t) for t in before} == before
    assert pending_packages(loaded) == []


@pytest.mark.parametrize("bad", NON_DICTS)
def test_non_dict_item_error_gives_its_position(pipeline: sl.Pipeline, bad: Any) -> None:
    @sl.resource
    def mixed() -> Iterator[Any]:
        yield {"id": 1}
        yield {"id": 2}
        yield bad

    with pytest.raises(PipelineStepFailed) as failure:
        pipeline.run(mixed)

    assert "mixed" in str(failure.value)
    assert "item 2" in str(failure.value)


# -- values that cannot be stored -------------------------------------------------------------


class Opaque:
    pass


@pytest.mark.parametrize(
    ("item", "column"),
    [
        pytest.param({"id": 9, "user": {"tags": {"a", "b"}}}, "user__tags", id="nested-set"),
        pytest.param({"id": 9, "tags": frozenset({"a"})}, "tags", id="top-level-frozenset"),
        pytest.param({"id": 9, "user": {"meta": {"obj": Opaque()}}}, "user__meta__obj", id="deep-object"),
        pytest.param(
            {"id": 9, "lines": [{"sku": "a"}, {"sku": Opaque()}]}, "lines__sku", id="object-in-list"
        ),
        # A valid bigint beyond 53 bits beside the culprit: the culprit is named, not it.
        pytest.param({"id": 9, "big": 2**60, "obj": Opaque()}, "obj", id="object-beside-a-big-int"),
        pytest.param(
            {"id": 9, "v": 2**63},
            "'v': the integer 9223372036854775808 does not fit a 64-bit",
            id="int-too-big",
        ),
        pytest.param(
            {"id": 9, "v": -(2**63) - 1}, "'v': the integer -9223372036854775809", id="int-too-small"
        ),
    ],
)
def test_unserializable_value_names_column_resource_and_item(
    loaded: sl.Pipeline, item: dict[str, Any], column: str
) -> None:
    before = snapshot(loaded, "users")

    @sl.resource(table_name="users")
    def people() -> Iterator[dict[str, Any]]:
        yield {"id": 8, "name": "ok"}
        yield item

    with pytest.raises(PipelineStepFailed) as failure:
        loaded.run(people)

    cause = failure.value.__cause__
    assert isinstance(cause, UnserializableValueError)
    assert cause.resource == "people"
    message = str(failure.value)
    assert column in message
    assert "people" in message
    assert "item 1" in message
    assert snapshot(loaded, "users") == before


def test_non_string_dict_key_is_a_clear_error(pipeline: sl.Pipeline) -> None:
    with pytest.raises(PipelineStepFailed) as failure:
        pipeline.run([{"id": 1, "attrs": {1: "one"}}], table_name="keyed")

    assert isinstance(failure.value.__cause__, UnserializableValueError)
    assert "attrs__1" in str(failure.value)
    assert "keyed" in str(failure.value)


# -- the generator fails part-way ---------------------------------------------------------------


def _source_with_cursor(fail_after: int | None) -> Any:
    @sl.source
    def feed() -> Any:
        @sl.resource(table_name="users")
        def flaky() -> Iterator[dict[str, Any]]:
            state = sl.current.resource_state()
            state["runs"] = state.get("runs", 0) + 1
            for i in range(3):
                if fail_after is not None and i == fail_after:
                    raise RuntimeError("upstream API went away")
                yield {"id": 100 + i, "name": f"new{i}"}

        return flaky

    return feed()


def test_generator_exception_loses_nothing_and_next_run_works(loaded: sl.Pipeline) -> None:
    loaded.run(_source_with_cursor(fail_after=None), write_disposition="append")
    before = snapshot(loaded, "users")
    state_before = loaded.state["sources"]["feed"]["resources"]["flaky"]
    assert state_before == {"runs": 1}

    with pytest.raises(PipelineStepFailed) as failure:
        loaded.run(_source_with_cursor(fail_after=2))

    assert failure.value.step == "extract"
    assert any(
        isinstance(e, RuntimeError) and str(e) == "upstream API went away"
        for e in exception_chain(failure.value)
    )
    # the two rows yielded before the failure did not land; the state change was not committed
    assert snapshot(loaded, "users") == before
    assert pending_packages(loaded) == []
    assert loaded.state["sources"]["feed"]["resources"]["flaky"] == {"runs": 1}

    info = loaded.run(_source_with_cursor(fail_after=None))

    assert info.row_counts == {"users": 3}
    ids = sorted(r["id"] for r in delta_rows(loaded, "users"))
    assert ids == [1, 2, 100, 100, 101, 101, 102, 102]
    assert delta_version(loaded, "users") == before[0] + 1
    assert loaded.state["sources"]["feed"]["resources"]["flaky"] == {"runs": 2}


def test_generator_exception_error_names_the_resource(pipeline: sl.Pipeline) -> None:
    with pytest.raises(PipelineStepFailed) as failure:
        pipeline.run(_source_with_cursor(fail_after=2))

    assert "flaky" in str(failure.value)
    assert "upstream API went away" in str(failure.value)


def test_type_error_in_generator_is_not_reported_as_unserializable(pipeline: sl.Pipeline) -> None:
    @sl.resource
    def buggy() -> Iterator[dict[str, Any]]:
        yield {"id": 1}
        yield {"id": 2}
        raise TypeError("user code bug")

    with pytest.raises(PipelineStepFailed) as failure:
        pipeline.run(buggy)

    chain = exception_chain(failure.value)
    assert not any(isinstance(e, UnserializableValueError) for e in chain)
    assert "cannot be serialized" not in str(failure.value)
    assert "buggy" in str(failure.value)
    assert any(isinstance(e, TypeError) and str(e) == "user code bug" for e in chain)


# -- identifiers that come from data ------------------------------------------------------------

ODD_KEYS = {
    "first name": "first_name",
    "a`; DROP TABLE x; --": "a_drop_table_xxxx",
    "select": "select",
    "from": "from",
    "Ünïcode": "_n_code",
    "back`tick": "back_tick",
    'say "hi"': None,
    "it's": None,
    "a.b.c": "a_b_c",
    "1st": "_1st",
    "userID": "user_id",
    "日本語": None,
}


def test_odd_keys_become_snake_case_columns_with_values_intact(pipeline: sl.Pipeline) -> None:
    expected = {key: name or normalize_identifier(key) for key, name in ODD_KEYS.items()}
    # the hard-coded names are what dlt's snake_case convention gives
    assert {k: normalize_identifier(k) for k in ODD_KEYS} == expected
    item = {"id": 1, **{key: f"value of {key}" for key in ODD_KEYS}}

    info = pipeline.run([item], table_name="Select From")

    assert info.row_counts == {"select_from": 1}
    for read in (delta_rows, spark_rows):
        (row,) = user_columns(read(pipeline, "select_from"))
        assert set(row) == {"id", *expected.values()}
        for key, column in expected.items():
            assert row[column] == f"value of {key}"
    assert pipeline.table("select_from").select("select", "from").collect()[0].asDict() == {
        "select": "value of select",
        "from": "value of from",
    }


def test_blank_key_error_names_the_table(loaded: sl.Pipeline) -> None:
    before = snapshot(loaded, "users")

    with pytest.raises(PipelineStepFailed) as failure:
        loaded.run([{"id": 5, "   ": "blank"}], table_name="blank_keys")

    assert "blank_keys" in str(failure.value)
    assert snapshot(loaded, "users") == before


def test_colliding_keys_become_two_columns_and_keep_both_values(pipeline: sl.Pipeline) -> None:
    info = pipeline.run([{"id": 1, "a b": "spaced", "a_b": "underscored"}], table_name="collide")

    assert info.notes == ["table 'collide': column name collision resolved: 'a b' → a_b_1"]
    assert "collision" in str(info)

    for read in (delta_rows, spark_rows):
        (row,) = user_columns(read(pipeline, "collide"))
        # The key already in normal form keeps the plain name, whatever the key order.
        assert row == {"id": 1, "a_b": "underscored", "a_b_1": "spaced"}


def test_colliding_keys_keep_their_columns_across_loads(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "a b": "spaced-1", "a_b": "underscored-1"}], table_name="collide")
    # the same dict, keys written in the other order
    pipeline.run([{"id": 2, "a_b": "underscored-2", "a b": "spaced-2"}], table_name="collide")

    rows = user_columns(delta_rows(pipeline, "collide", order_by="id"))
    columns = {name: [row[name] for row in rows] for name in ("a_b", "a_b_1")}
    assert sorted(columns.values()) == [["spaced-1", "spaced-2"], ["underscored-1", "underscored-2"]]


@pytest.mark.parametrize("hint", ["primary_key", "merge_key"])
def test_a_hint_on_a_column_two_keys_normalize_to_is_refused_and_the_loaded_one_works(
    pipeline: sl.Pipeline, hint: str
) -> None:
    # "Id" and "id" both normalize to `id`; "Id" loads as `id_1`. A key "Id" normalized to
    # `id` would merge on the other key's values (Id=2 lost, Id=1 doubled).
    rows = [{"Id": 1, "id": 10, "v": "a"}, {"Id": 2, "id": 10, "v": "b"}]
    given: dict[str, Any] = {
        "primary_key": {"primary_key": "Id"},
        "merge_key": {"primary_key": "v", "merge_key": "Id"},
    }[hint]
    pipeline.run([{"Id": 0, "id": 0, "v": "z"}], table_name="other")
    before = snapshot(pipeline, "other")

    with pytest.raises(PipelineStepFailed) as failure:
        pipeline.run(rows, table_name="ids", write_disposition="merge", **given)

    message = str(failure.value)
    assert "table 'ids'" in message
    assert "'id' is ambiguous" in message
    assert "'Id' as 'id_1'" in message
    assert not (Path(pipeline.dataset_uri) / "ids").exists()
    assert snapshot(pipeline, "other") == before

    # Named by the column it loads as, the key matches the right values.
    pipeline.drop_pending_packages()
    pipeline.run(rows, table_name="ids", write_disposition="merge", primary_key="id_1")
    pipeline.run(
        [{"Id": 1, "id": 11, "v": "a2"}], table_name="ids", write_disposition="merge", primary_key="id_1"
    )
    got = [(r["id_1"], r["id"], r["v"]) for r in user_columns(delta_rows(pipeline, "ids", order_by="id_1"))]
    assert got == [(1, 11, "a2"), (2, 10, "b")]


def _nested(kind: str, depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value} if kind == "dict" else [value]
    return value


@pytest.mark.parametrize(
    ("kind", "depth", "step", "said"),
    [
        # JSON serialization stops at 254 levels; the explanation once hit Python's recursion limit.
        ("dict", 1500, "extract", "column 'v__a__a__a__a__a__a__a__…': dicts and lists nest more than 254"),
        ("list", 1500, "extract", "column 'v': dicts and lists nest more than 254"),
        # Each list in a list is a nested table: at 45 its name is longer than a folder's.
        ("list", 45, "normalize", "bytes, more than the 240 a table's folder can have"),
        # At 60 the engine cannot describe the staged rows to its client.
        ("list", 60, "normalize", "column 'v': lists nest more than 40 levels deep"),
    ],
)
def test_items_nested_too_deep_fail_naming_table_and_column_and_change_nothing(
    loaded: sl.Pipeline, kind: str, depth: int, step: str, said: str
) -> None:
    before = snapshot(loaded, "users")

    with pytest.raises(PipelineStepFailed) as failure:
        loaded.run([{"id": 1, "v": _nested(kind, depth)}], table_name="deep")

    message = str(failure.value)
    assert failure.value.step == step
    assert said in message
    assert ("resource 'deep'" if step == "extract" else "table 'deep'") in message
    assert "max_table_nesting" in message or step == "extract"
    assert snapshot(loaded, "users") == before
    assert not (Path(loaded.dataset_uri) / "deep").exists()
    # Dropped, the package leaves the pipeline as it was: the next run loads.
    loaded.drop_pending_packages()
    assert loaded.run([{"id": 2, "v": _nested(kind, 3)}], table_name="deep").loads_ids


# -- numbers that do not fit --------------------------------------------------------------------


@pytest.mark.parametrize("value", [2**64, -(2**63) - 1, 10**30])
def test_int_beyond_64_bit_is_a_clear_error_naming_the_column(loaded: sl.Pipeline, value: int) -> None:
    before = snapshot(loaded, "users")

    with pytest.raises(PipelineStepFailed) as failure:
        loaded.run([{"id": 7, "stats": {"big": value}}], table_name="users")

    assert isinstance(failure.value.__cause__, UnserializableValueError)
    assert "stats__big" in str(failure.value)
    assert "users" in str(failure.value)
    assert snapshot(loaded, "users") == before


def test_int_beyond_signed_64_bit_is_an_error_or_kept_exactly(pipeline: sl.Pipeline) -> None:
    value = 2**63 + 1
    try:
        pipeline.run([{"id": 1, "big": value}], table_name="big")
    except PipelineStepFailed as failure:
        assert "big" in str(failure)
        return
    (row,) = delta_rows(pipeline, "big")
    assert row["big"] == value
    assert isinstance(row["big"], int) or str(row["big"]) == str(value)


# -- strings that look like sparkload's internal tags --------------------------------------------

NUL_STRINGS = [
    "\x00abc",
    "\x00Zlooks-like-a-tag",
    "\x00Z2024-01-01T00:00:00+00:00",
    "\x00Sescaped?",
    "\x00N1.5",
    "\x00D2024-01-01",
    "\x00B",
    "\x00",
]


def test_nul_led_strings_round_trip_from_dicts(pipeline: sl.Pipeline) -> None:
    items = [{"i": i, "s": s, "nested": {"s": s}, "list": [s]} for i, s in enumerate(NUL_STRINGS)]

    pipeline.run(items, table_name="nul")

    for read in (delta_rows, spark_rows):
        rows = read(pipeline, "nul", order_by="i")
        assert [r["s"] for r in rows] == NUL_STRINGS
        assert [r["nested__s"] for r in rows] == NUL_STRINGS
    listed = delta_rows(pipeline, "nul__list")
    parent = {r["_sparkload_id"]: r["i"] for r in delta_rows(pipeline, "nul")}
    assert sorted((parent[r["_sparkload_parent_id"]], r["value"]) for r in listed) == list(
        enumerate(NUL_STRINGS)
    )


def test_nul_led_strings_share_a_column_with_real_timestamps(pipeline: sl.Pipeline) -> None:

    when = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    pipeline.run(
        [{"i": 0, "at": when}, {"i": 1, "at": when}, {"i": 2, "at": "\x00Zlooks-like-a-tag"}], table_name="ts"
    )

    rows = delta_rows(pipeline, "ts", order_by="i")
    assert [r["at"] for r in rows[:2]] == [when, when]
    # the text went to a variant column, unchanged
    assert rows[2]["at"] is None
    assert rows[2]["at__v_text"] == "\x00Zlooks-like-a-tag"


@pytest.mark.parametrize("kind", ["arrow", "pandas"])
def test_nul_led_strings_round_trip_from_arrow_and_pandas(make_pipeline: Any, kind: str) -> None:
    data = {"i": list(range(len(NUL_STRINGS))), "s": NUL_STRINGS}
    frame: Any = pa.table(data) if kind == "arrow" else pd.DataFrame(data)
    pipeline = make_pipeline()

    pipeline.run(frame, table_name="nul")

    assert [r["s"] for r in delta_rows(pipeline, "nul", order_by="i")] == NUL_STRINGS


@pytest.mark.parametrize("table", ["_sparkload_pipeline_state", "_Sparkload_Packages", "_sparkload_mine"])
def test_a_reserved_table_name_is_refused_and_the_state_survives(loaded: sl.Pipeline, table: str) -> None:
    """A table named like sparkload's own would take the state table's place: refused before
    anything is written, and the pipeline goes on as it was."""
    state = loaded.state
    before = snapshot(loaded, "users")
    with pytest.raises(PipelineStepFailed, match="keeps for its own tables") as failure:
        loaded.run([{"id": 1, "v": 1}], table_name=table)
    assert table in str(failure.value)
    assert not loaded.has_pending_data

    @sl.resource(table_name=lambda item: item["kind"])
    def mixed() -> Iterator[dict[str, Any]]:
        yield {"kind": "fine", "id": 1}
        yield {"kind": table, "id": 2}

    with pytest.raises(PipelineStepFailed, match="keeps for its own tables"):
        loaded.run(mixed)
    assert snapshot(loaded, "users") == before
    assert loaded.state == state
    assert loaded.run([{"id": 3}], table_name="fine").loads_ids
