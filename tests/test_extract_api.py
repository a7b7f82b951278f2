"""The dlt-style user API: resources, sources, transformers, hints, config, state and the run.

Every test runs a real pipeline on the embedded engine into Delta tables under a tmp dir and
reads the rows back with delta-rs (and, where cheap, with Spark too).
"""

from __future__ import annotations

import datetime
import logging
import re
import threading
import traceback
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import deltalake
import pandas as pd
import pyarrow as pa
import pytest
from conftest import delta_history, delta_rows, delta_version, spark_rows, user_columns

import sparkload as sl
from sparkload.common.folder import Folder
from sparkload.common.package import EXTRACT_MANIFEST, LoadPackage
from sparkload.exceptions import ConfigFieldMissingError, PipelineStepFailed
from sparkload.pipeline.state import read_destination, write_destination

SECRET = "tok-9Qx!7zz-unguessable"


def arrow_type(pipeline: sl.Pipeline, table: str, column: str) -> pa.DataType:
    """A column's type as delta-rs sees it."""
    schema = deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").to_pyarrow_table().schema
    return schema.field(column).type


def table_exists(pipeline: sl.Pipeline, table: str) -> bool:
    return (Path(pipeline.dataset_uri) / table / "_delta_log").is_dir()


def write_settings(tmp_path: Path, name: str, text: str) -> None:
    """A TOML file in the project settings dir (conftest points SPARKLOAD_PROJECT_DIR there)."""
    directory = tmp_path / "_project" / ".sparkload"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(text, encoding="utf-8")


# -- @sl.resource -----------------------------------------------------------------------------


def test_resource_function_runs_uncalled_and_called_with_args(make_pipeline: Any) -> None:
    @sl.resource
    def numbers(n: int = 2) -> Iterator[dict[str, Any]]:
        for i in range(n):
            yield {"i": i}

    uncalled = make_pipeline()
    uncalled.run(numbers)
    assert [r["i"] for r in delta_rows(uncalled, "numbers", order_by="i")] == [0, 1]

    called = make_pipeline()
    called.run(numbers(3))
    assert [r["i"] for r in delta_rows(called, "numbers", order_by="i")] == [0, 1, 2]
    assert [r["i"] for r in spark_rows(called, "numbers", order_by="i")] == [0, 1, 2]


def test_name_and_table_name_hints_choose_the_table(pipeline: sl.Pipeline) -> None:
    @sl.resource(name="renamed")
    def by_name() -> Iterator[dict[str, Any]]:
        yield {"x": 1}

    @sl.resource(table_name="explicit_table")
    def by_table() -> Iterator[dict[str, Any]]:
        yield {"x": 2}

    pipeline.run(by_name)
    pipeline.run(by_table)

    assert user_columns(delta_rows(pipeline, "renamed")) == [{"x": 1}]
    assert user_columns(delta_rows(pipeline, "explicit_table")) == [{"x": 2}]
    assert not table_exists(pipeline, "by_name")
    assert not table_exists(pipeline, "by_table")


def test_table_name_function_dispatches_items_to_tables(pipeline: sl.Pipeline) -> None:
    @sl.resource(table_name=lambda item: item["type"])
    def events() -> Iterator[dict[str, Any]]:
        yield {"type": "click", "id": 1}
        yield {"type": "view", "id": 2}
        yield {"type": "click", "id": 3}

    info = pipeline.run(events)

    assert info.row_counts == {"click": 2, "view": 1}
    assert [r["id"] for r in delta_rows(pipeline, "click", order_by="id")] == [1, 3]
    assert [r["id"] for r in delta_rows(pipeline, "view", order_by="id")] == [2]
    assert not table_exists(pipeline, "events")


def test_append_twice_doubles_the_rows(pipeline: sl.Pipeline) -> None:
    @sl.resource(write_disposition="append")
    def items() -> Iterator[dict[str, Any]]:
        yield {"id": 1}
        yield {"id": 2}

    pipeline.run(items)
    pipeline.run(items)

    assert sorted(r["id"] for r in delta_rows(pipeline, "items")) == [1, 1, 2, 2]


def test_replace_keeps_only_the_last_run_and_adds_one_version_per_run(pipeline: sl.Pipeline) -> None:
    batches = [[{"id": 1}, {"id": 2}], [{"id": 3}], [{"id": 4}, {"id": 5}]]

    @sl.resource(write_disposition="replace")
    def items(batch: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        yield from batch

    pipeline.run(items(batches[0]))
    first = delta_version(pipeline, "items")
    pipeline.run(items(batches[1]))
    assert [r["id"] for r in delta_rows(pipeline, "items")] == [3]
    assert delta_version(pipeline, "items") == first + 1
    pipeline.run(items(batches[2]))
    assert [r["id"] for r in delta_rows(pipeline, "items", order_by="id")] == [4, 5]
    assert delta_version(pipeline, "items") == first + 2


def test_merge_with_primary_key_updates_rather_than_duplicates(pipeline: sl.Pipeline) -> None:
    @sl.resource(write_disposition="merge", primary_key="id")
    def users(rows: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        yield from rows

    pipeline.run(users([{"id": 1, "name": "ada"}, {"id": 2, "name": "bob"}]))
    pipeline.run(users([{"id": 2, "name": "bobby"}, {"id": 3, "name": "cy"}]))

    for read in (delta_rows, spark_rows):
        rows = read(pipeline, "users", order_by="id")
        assert [(r["id"], r["name"]) for r in rows] == [(1, "ada"), (2, "bobby"), (3, "cy")]


def test_columns_hint_sets_type_and_creates_declared_missing_column(pipeline: sl.Pipeline) -> None:
    @sl.resource(columns={"amount": {"data_type": "double"}, "note": {"data_type": "text"}})
    def payments() -> Iterator[dict[str, Any]]:
        yield {"id": 1, "amount": 10}
        yield {"id": 2, "amount": 25}

    pipeline.run(payments)

    rows = delta_rows(pipeline, "payments", order_by="id")
    assert [(r["id"], r["amount"], r["note"]) for r in rows] == [(1, 10.0, None), (2, 25.0, None)]
    assert all(isinstance(r["amount"], float) for r in rows)
    assert pa.types.is_float64(arrow_type(pipeline, "payments", "amount"))
    note_type = arrow_type(pipeline, "payments", "note")
    assert (
        pa.types.is_string(note_type)
        or pa.types.is_large_string(note_type)
        or pa.types.is_string_view(note_type)
    )
    assert pa.types.is_int64(arrow_type(pipeline, "payments", "id"))


# -- what a resource may yield -------------------------------------------------------------


def test_resource_yielding_pages_of_dicts(pipeline: sl.Pipeline) -> None:
    @sl.resource
    def pages() -> Iterator[list[dict[str, Any]]]:
        yield [{"id": 1}, {"id": 2}]
        yield [{"id": 3}]

    info = pipeline.run(pages)

    assert info.row_counts == {"pages": 3}
    assert [r["id"] for r in delta_rows(pipeline, "pages", order_by="id")] == [1, 2, 3]


def test_plain_list_of_dicts_with_table_name(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], table_name="t")

    assert user_columns(delta_rows(pipeline, "t", order_by="id")) == [
        {"id": 1, "v": "a"},
        {"id": 2, "v": "b"},
    ]


def test_generator_expression(pipeline: sl.Pipeline) -> None:
    pipeline.run(({"sq": i * i} for i in range(4)), table_name="squares")

    assert [r["sq"] for r in delta_rows(pipeline, "squares", order_by="sq")] == [0, 1, 4, 9]


def test_async_generator_resource(pipeline: sl.Pipeline) -> None:
    @sl.resource
    async def slow() -> AsyncIterator[dict[str, Any]]:
        for i in range(3):
            yield {"i": i}

    pipeline.run(slow)

    assert [r["i"] for r in delta_rows(pipeline, "slow", order_by="i")] == [0, 1, 2]


def test_arrow_table_and_record_batch(pipeline: sl.Pipeline) -> None:
    table = pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", "b"]})
    batch = pa.RecordBatch.from_pydict({"id": pa.array([3], pa.int64()), "name": ["c"]})

    @sl.resource
    def arrows() -> Iterator[Any]:
        yield table
        yield batch

    info = pipeline.run(arrows)

    assert info.row_counts == {"arrows": 3}
    assert user_columns(delta_rows(pipeline, "arrows", order_by="id")) == [
        {"id": 1, "name": "a"},
        {"id": 2, "name": "b"},
        {"id": 3, "name": "c"},
    ]


def test_pandas_dataframe(pipeline: sl.Pipeline) -> None:
    frame = pd.DataFrame({"id": [1, 2], "score": [0.5, 1.5]})

    pipeline.run(frame, table_name="scores")

    assert user_columns(delta_rows(pipeline, "scores", order_by="id")) == [
        {"id": 1, "score": 0.5},
        {"id": 2, "score": 1.5},
    ]


def test_dicts_and_arrow_tables_mixed_in_one_table(pipeline: sl.Pipeline) -> None:
    @sl.resource
    def mixed() -> Iterator[Any]:
        yield {"id": 1, "name": "dict"}
        yield pa.table({"id": pa.array([2], pa.int64()), "name": ["arrow"]})
        yield {"id": 3, "name": "dict again"}

    pipeline.run(mixed)

    assert user_columns(delta_rows(pipeline, "mixed", order_by="id")) == [
        {"id": 1, "name": "dict"},
        {"id": 2, "name": "arrow"},
        {"id": 3, "name": "dict again"},
    ]


# -- resource methods ------------------------------------------------------------------------


def _five() -> Iterator[dict[str, Any]]:
    for i in range(1, 6):
        yield {"id": i}


def test_add_map_transforms_and_none_drops(pipeline: sl.Pipeline) -> None:
    res = sl.resource(_five, name="mapped")
    res.add_map(lambda item: {**item, "double": item["id"] * 2})
    res.add_map(lambda item: None if item["id"] == 3 else item)

    pipeline.run(res)

    assert [(r["id"], r["double"]) for r in delta_rows(pipeline, "mapped", order_by="id")] == [
        (1, 2),
        (2, 4),
        (4, 8),
        (5, 10),
    ]


def test_add_filter_keeps_matching_items(pipeline: sl.Pipeline) -> None:
    res = sl.resource(_five, name="evens").add_filter(lambda item: item["id"] % 2 == 0)

    pipeline.run(res)

    assert [r["id"] for r in delta_rows(pipeline, "evens", order_by="id")] == [2, 4]


def test_add_yield_map_turns_one_item_into_several(pipeline: sl.Pipeline) -> None:
    def explode(item: dict[str, Any]) -> Iterator[dict[str, Any]]:
        for copy in range(item["id"]):
            yield {"id": item["id"], "copy": copy}

    res = sl.resource([{"id": 1}, {"id": 3}], name="exploded").add_yield_map(explode)

    pipeline.run(res)

    rows = sorted((r["id"], r["copy"]) for r in delta_rows(pipeline, "exploded"))
    assert rows == [(1, 0), (3, 0), (3, 1), (3, 2)]


def test_add_limit_counts_pages_and_closes_the_generator(pipeline: sl.Pipeline) -> None:
    closed: list[bool] = []

    @sl.resource
    def endless() -> Iterator[list[dict[str, Any]]]:
        page = 0
        try:
            while True:
                yield [{"page": page, "n": 0}, {"page": page, "n": 1}]
                page += 1
        finally:
            closed.append(True)

    info = pipeline.run(endless.add_limit(3))

    assert info.row_counts == {"endless": 6}
    assert sorted({r["page"] for r in delta_rows(pipeline, "endless")}) == [0, 1, 2]
    assert closed == [True]


def test_add_limit_does_not_fetch_a_page_beyond_the_limit(pipeline: sl.Pipeline) -> None:
    # dlt's add_limit returns right after the n-th yield; a generator that calls an API
    # per page must not make one more call than asked for.
    fetched: list[int] = []

    @sl.resource
    def api() -> Iterator[dict[str, Any]]:
        for page in range(100):
            fetched.append(page)
            yield {"page": page}

    pipeline.run(api.add_limit(2))

    assert [r["page"] for r in delta_rows(pipeline, "api", order_by="page")] == [0, 1]
    assert fetched == [0, 1]


def test_apply_hints_primary_key_and_write_disposition(pipeline: sl.Pipeline) -> None:
    @sl.resource
    def users(name: str) -> Iterator[dict[str, Any]]:
        yield {"id": 1, "name": name}

    pipeline.run(users("ada").apply_hints(primary_key="id", write_disposition="merge"))
    pipeline.run(users("ada lovelace").apply_hints(primary_key="id", write_disposition="merge"))

    assert [(r["id"], r["name"]) for r in delta_rows(pipeline, "users")] == [(1, "ada lovelace")]


def test_bind_sets_arguments_in_place(pipeline: sl.Pipeline) -> None:
    @sl.resource
    def countdown(start: int) -> Iterator[dict[str, Any]]:
        for i in range(start, 0, -1):
            yield {"i": i}

    returned = countdown.bind(3)

    assert returned is countdown
    pipeline.run(countdown)
    assert [r["i"] for r in delta_rows(pipeline, "countdown", order_by="i")] == [1, 2, 3]


def test_with_name_loads_into_the_new_name(pipeline: sl.Pipeline) -> None:
    @sl.resource
    def original() -> Iterator[dict[str, Any]]:
        yield {"id": 7}

    pipeline.run(original.with_name("other"))

    assert [r["id"] for r in delta_rows(pipeline, "other")] == [7]
    assert not table_exists(pipeline, "original")
    assert original.name == "original"


# -- @sl.source --------------------------------------------------------------------------------


def _shop_source() -> Any:
    @sl.source
    def shop() -> Any:
        @sl.resource
        def a() -> Iterator[dict[str, Any]]:
            yield {"id": 1}

        @sl.resource
        def b() -> Iterator[dict[str, Any]]:
            yield {"id": 2}

        @sl.resource(selected=False)
        def hidden() -> Iterator[dict[str, Any]]:
            yield {"id": 3}

        return a, b, hidden

    return shop


def test_source_resources_and_unselected_resource_is_skipped(pipeline: sl.Pipeline) -> None:
    source = _shop_source()()

    assert list(source.resources) == ["a", "b", "hidden"]
    assert isinstance(source.resources["a"], sl.Resource)
    assert source.a is source.resources["a"]
    assert list(source.selected_resources) == ["a", "b"]

    info = pipeline.run(source)

    assert info.row_counts == {"a": 1, "b": 1}
    assert [r["id"] for r in delta_rows(pipeline, "a")] == [1]
    assert [r["id"] for r in delta_rows(pipeline, "b")] == [2]
    assert not table_exists(pipeline, "hidden")


def test_with_resources_loads_only_the_named_ones(pipeline: sl.Pipeline) -> None:
    source = _shop_source()().with_resources("a")

    info = pipeline.run(source)

    assert info.row_counts == {"a": 1}
    assert not table_exists(pipeline, "b")


def test_root_key_on_a_replace_source_adds_root_id_to_nested_tables(make_pipeline: Any) -> None:
    @sl.source
    def orders_src() -> Any:
        @sl.resource(write_disposition="replace")
        def orders() -> Iterator[dict[str, Any]]:
            yield {"id": 1, "lines": [{"sku": "x", "parts": [1, 2]}]}
            yield {"id": 2, "lines": [{"sku": "y", "parts": []}, {"sku": "z", "parts": [3]}]}

        return orders

    without = make_pipeline()
    without.run(orders_src())
    assert "_sparkload_root_id" not in delta_rows(without, "orders__lines")[0]

    with_key = make_pipeline()
    source = orders_src()
    source.root_key = True
    with_key.run(source)

    root_ids = {r["id"]: r["_sparkload_id"] for r in delta_rows(with_key, "orders")}
    lines = delta_rows(with_key, "orders__lines", order_by="sku")
    assert [(r["sku"], r["_sparkload_root_id"]) for r in lines] == [
        ("x", root_ids[1]),
        ("y", root_ids[2]),
        ("z", root_ids[2]),
    ]
    parts = delta_rows(with_key, "orders__lines__parts", order_by="value")
    assert [(r["value"], r["_sparkload_root_id"]) for r in parts] == [
        (1, root_ids[1]),
        (2, root_ids[1]),
        (3, root_ids[2]),
    ]


def test_max_table_nesting_zero_keeps_structs_and_arrays(pipeline: sl.Pipeline) -> None:
    @sl.source(max_table_nesting=0)
    def crm() -> Any:
        @sl.resource
        def people() -> Iterator[dict[str, Any]]:
            yield {"id": 1, "address": {"city": "London", "zip": "N1"}, "tags": ["a", "b"]}
            yield {"id": 2, "address": {"city": "Paris", "zip": "75"}, "tags": []}

        return people

    info = pipeline.run(crm())

    assert info.row_counts == {"people": 2}
    assert not any(name.startswith("people__") for name in info.row_counts)
    assert not table_exists(pipeline, "people__tags")
    for read in (delta_rows, spark_rows):
        rows = read(pipeline, "people", order_by="id")
        assert [r["address"]["city"] for r in rows] == ["London", "Paris"]
        assert [list(r["tags"]) for r in rows] == [["a", "b"], []]
        assert "address__city" not in rows[0]
    assert pa.types.is_struct(arrow_type(pipeline, "people", "address"))
    assert pipeline.table("people").where("address.city = 'Paris'").count() == 1


# -- transformers --------------------------------------------------------------------------


def test_transformer_in_a_source_reads_the_parent_once(pipeline: sl.Pipeline) -> None:
    calls = 0

    @sl.resource
    def users() -> Iterator[dict[str, Any]]:
        nonlocal calls
        calls += 1
        yield {"id": 1}
        yield {"id": 2}

    @sl.transformer(data_from=users)
    def details(user: dict[str, Any]) -> Iterator[dict[str, Any]]:
        yield {"user_id": user["id"], "detail": f"user {user['id']}"}

    @sl.source
    def app() -> Any:
        return users, details

    info = pipeline.run(app())

    assert calls == 1
    assert info.row_counts == {"users": 2, "details": 2}
    assert [r["id"] for r in delta_rows(pipeline, "users", order_by="id")] == [1, 2]
    assert [(r["user_id"], r["detail"]) for r in delta_rows(pipeline, "details", order_by="user_id")] == [
        (1, "user 1"),
        (2, "user 2"),
    ]


def test_pipe_syntax_feeds_a_transformer(pipeline: sl.Pipeline) -> None:
    @sl.resource
    def numbers() -> Iterator[dict[str, Any]]:
        yield from ({"n": n} for n in range(3))

    @sl.transformer
    def squared(item: dict[str, Any]) -> Iterator[dict[str, Any]]:
        yield {"n": item["n"], "sq": item["n"] ** 2}

    info = pipeline.run(numbers | squared)

    assert info.row_counts == {"squared": 3}
    assert [(r["n"], r["sq"]) for r in delta_rows(pipeline, "squared", order_by="n")] == [
        (0, 0),
        (1, 1),
        (2, 4),
    ]


def test_transformer_receives_the_page_its_parent_yielded(pipeline: sl.Pipeline) -> None:
    # dlt's pokemon example: the parent yields a list (one page) and the transformer
    # iterates over it: `def pokemon(pokemons): for p in pokemons: ...`
    received: list[Any] = []

    @sl.resource(selected=False)
    def pokemon_list() -> Iterator[list[dict[str, Any]]]:
        yield [{"name": "bulbasaur"}, {"name": "ivysaur"}]

    @sl.transformer(data_from=pokemon_list)
    def pokemon(pokemons: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        received.append(pokemons)
        for p in pokemons:
            yield {"name": p["name"]}

    pipeline.run(pokemon)

    assert received == [[{"name": "bulbasaur"}, {"name": "ivysaur"}]]
    assert sorted(r["name"] for r in delta_rows(pipeline, "pokemon")) == ["bulbasaur", "ivysaur"]


def test_transformer_arguments_left_out_keep_their_defaults_for_every_parent_item(
    pipeline: sl.Pipeline,
) -> None:
    # Nothing in the config gives `extra` or `n`: every call, not only the first, gets the
    # function's own defaults (a copy of "nothing configured" once replaced them).
    received: list[tuple[Any, int, list[int]]] = []

    @sl.resource(selected=False)
    def parents() -> Iterator[dict[str, Any]]:
        yield from ({"id": i} for i in range(3))

    @sl.transformer(data_from=parents)
    def children(
        item: dict[str, Any], extra: Any = None, n: int = 5, seen: list[int] | None = None
    ) -> Iterator[dict[str, Any]]:
        received.append((extra, n, list(seen or [])))
        yield {"id": item["id"], "n": n, "extra": extra}

    pipeline.run(children)

    assert received == [(None, 5, [])] * 3
    assert [(r["id"], r["n"]) for r in delta_rows(pipeline, "children", order_by="id")] == [
        (0, 5),
        (1, 5),
        (2, 5),
    ]


# -- run() overrides -------------------------------------------------------------------------


def test_run_arguments_override_the_resource_hints(pipeline: sl.Pipeline) -> None:
    @sl.resource(table_name="declared", write_disposition="append")
    def payments(amount: int) -> Iterator[dict[str, Any]]:
        yield {"id": 1, "amount": amount}

    overrides: dict[str, Any] = {
        "table_name": "overridden",
        "write_disposition": "merge",
        "primary_key": "id",
        "columns": {"amount": {"data_type": "double"}},
    }
    pipeline.run(payments(5), **overrides)
    pipeline.run(payments(7), **overrides)

    assert [(r["id"], r["amount"]) for r in delta_rows(pipeline, "overridden")] == [(1, 7.0)]
    assert pa.types.is_float64(arrow_type(pipeline, "overridden", "amount"))
    assert not table_exists(pipeline, "declared")
    # the resource itself keeps its own hints
    assert payments.table_name == "declared"


# -- config and secrets -----------------------------------------------------------------------


def _configured_source() -> Any:
    @sl.source
    def shop() -> Any:
        @sl.resource
        def orders(
            api_key: str = sl.secrets.value, page_size: int = sl.config.value
        ) -> Iterator[dict[str, Any]]:
            yield {"page_size": page_size, "key_ok": api_key == SECRET}

        return orders

    return shop


def test_resource_config_and_secret_from_environment(
    pipeline: sl.Pipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCES__SHOP__ORDERS__PAGE_SIZE", "25")
    monkeypatch.setenv("SOURCES__SHOP__ORDERS__API_KEY", SECRET)

    pipeline.run(_configured_source()())

    assert user_columns(delta_rows(pipeline, "orders")) == [{"page_size": 25, "key_ok": True}]


def test_resource_config_and_secret_from_toml_files(pipeline: sl.Pipeline, tmp_path: Path) -> None:
    write_settings(tmp_path, "config.toml", "[sources.shop.orders]\npage_size = 7\n")
    write_settings(tmp_path, "secrets.toml", f'[sources.shop]\napi_key = "{SECRET}"\n')

    pipeline.run(_configured_source()())

    assert user_columns(delta_rows(pipeline, "orders")) == [{"page_size": 7, "key_ok": True}]


def test_source_secret_is_looked_up_under_the_source_section(pipeline: sl.Pipeline, tmp_path: Path) -> None:
    write_settings(tmp_path, "secrets.toml", f'[sources.src]\ntoken = "{SECRET}"\n')

    @sl.source
    def src(token: str = sl.secrets.value) -> Any:
        @sl.resource
        def me() -> Iterator[dict[str, Any]]:
            yield {"authorized": token == SECRET}

        return me

    pipeline.run(src())

    assert user_columns(delta_rows(pipeline, "me")) == [{"authorized": True}]


def test_missing_config_lists_the_keys_tried_and_never_shows_the_secret(
    pipeline: sl.Pipeline, tmp_path: Path
) -> None:
    write_settings(tmp_path, "secrets.toml", f'[sources.shop.orders]\napi_key = "{SECRET}"\n')
    source = _configured_source()()

    with pytest.raises(PipelineStepFailed) as failure:
        pipeline.run(source)

    cause = failure.value.__cause__
    assert isinstance(cause, ConfigFieldMissingError)
    assert cause.fields == ("page_size",)
    message = str(failure.value)
    for key in (
        "SOURCES__SHOP__ORDERS__PAGE_SIZE",
        "sources.shop.orders.page_size",
        "sources.shop.page_size",
        "sources.page_size",
    ):
        assert key in message
    assert "api_key" not in cause.fields
    shown = "".join(traceback.format_exception(failure.value)) + repr(source) + repr(source.orders)
    assert SECRET not in shown
    assert not table_exists(pipeline, "orders")


def test_explicit_secret_argument_stays_out_of_reprs(pipeline: sl.Pipeline, tmp_path: Path) -> None:
    write_settings(tmp_path, "config.toml", "[sources.shop.orders]\npage_size = 3\n")
    source = _configured_source()()
    bound = source.orders(api_key=SECRET)

    assert SECRET not in repr(bound)
    assert SECRET not in str(bound)
    pipeline.run(bound)
    assert user_columns(delta_rows(pipeline, "orders")) == [{"page_size": 3, "key_ok": True}]


# -- state ----------------------------------------------------------------------------------


def _chess_source(archives: list[str]) -> Any:
    """dlt's chess example: the resource remembers which archive URLs it loaded."""

    @sl.source
    def chess() -> Any:
        @sl.resource(write_disposition="append")
        def players_games() -> Iterator[dict[str, Any]]:
            checked = sl.current.resource_state().setdefault("archives", [])
            for url in archives:
                if url in checked:
                    continue
                checked.append(url)
                yield {"url": url}

        return players_games

    return chess()


def test_resource_state_persists_between_runs(pipeline: sl.Pipeline) -> None:
    pipeline.run(_chess_source(["a1", "a2"]))
    pipeline.run(_chess_source(["a1", "a2", "a3"]))

    assert sorted(r["url"] for r in delta_rows(pipeline, "players_games")) == ["a1", "a2", "a3"]
    resource_state = pipeline.state["sources"]["chess"]["resources"]["players_games"]
    assert resource_state["archives"] == ["a1", "a2", "a3"]


def test_source_state_is_shared_by_the_resources_of_a_source(pipeline: sl.Pipeline) -> None:
    @sl.source
    def feed() -> Any:
        @sl.resource
        def writer() -> Iterator[dict[str, Any]]:
            sl.current.source_state()["cursor"] = 42
            yield {"wrote": 42}

        @sl.resource
        def reader() -> Iterator[dict[str, Any]]:
            yield {"saw": sl.current.source_state().get("cursor")}

        return writer, reader

    pipeline.run(feed())

    assert user_columns(delta_rows(pipeline, "reader")) == [{"saw": 42}]
    assert pipeline.state["sources"]["feed"]["cursor"] == 42


def test_state_is_restored_from_the_destination_on_a_fresh_machine(
    make_pipeline: Any, tmp_path: Path
) -> None:
    first = make_pipeline("chess_pipeline")
    first.run(_chess_source(["a1", "a2"]))

    fresh_dir = tmp_path / "other_machine"
    fresh = make_pipeline("chess_pipeline", pipelines_dir=fresh_dir)
    assert fresh.dataset_uri == first.dataset_uri

    assert fresh.state["sources"]["chess"]["resources"]["players_games"]["archives"] == ["a1", "a2"]
    info = fresh.run(_chess_source(["a1", "a2", "a3"]))
    assert info.row_counts == {"players_games": 1}
    assert sorted(r["url"] for r in delta_rows(fresh, "players_games")) == ["a1", "a2", "a3"]


def test_drop_forgets_local_state_which_is_then_restored_from_the_destination(pipeline: sl.Pipeline) -> None:
    # Pipeline.state: "restored from the destination if the working directory has none";
    # dlt does the same after drop() (restore_from_destination).
    pipeline.run(_chess_source(["a1"]))
    assert any(pipeline.working_dir.iterdir())

    pipeline.drop()

    assert list(pipeline.working_dir.iterdir()) == []
    assert pipeline.state["sources"]["chess"]["resources"]["players_games"]["archives"] == ["a1"]
    info = pipeline.run(_chess_source(["a1", "a2"]))
    assert info.row_counts == {"players_games": 1}
    assert sorted(r["url"] for r in delta_rows(pipeline, "players_games")) == ["a1", "a2"]


def test_dev_mode_uses_a_fresh_dataset_each_time(make_pipeline: Any) -> None:
    one = make_pipeline("dev_pipeline", dev_mode=True)
    one.run([{"id": 1}], table_name="t")
    two = make_pipeline("dev_pipeline", dev_mode=True)
    two.run([{"id": 2}], table_name="t")

    assert one.dataset_name != two.dataset_name
    assert one.dataset_name.startswith("dev_pipeline_dataset")
    assert [r["id"] for r in delta_rows(one, "t")] == [1]
    assert [r["id"] for r in delta_rows(two, "t")] == [2]


# -- steps, trace and LoadInfo -------------------------------------------------------------


def _users() -> Any:
    @sl.resource
    def users() -> Iterator[dict[str, Any]]:
        yield {"id": 1, "name": "ada", "langs": ["en", "fr"]}
        yield {"id": 2, "name": "bob", "langs": ["de"]}

    return users


def test_extract_normalize_load_as_separate_steps_equal_run(make_pipeline: Any) -> None:
    stepped = make_pipeline()
    load_id = stepped.extract(_users())
    assert stepped.normalize() == [load_id]
    info = stepped.load()

    whole = make_pipeline()
    whole.run(_users())

    assert info.load_id == load_id
    assert info.row_counts == {"users": 2, "users__langs": 3}
    for table in ("users", "users__langs"):
        got = sorted(map(repr, user_columns(delta_rows(stepped, table))))
        want = sorted(map(repr, user_columns(delta_rows(whole, table))))
        assert got == want
    assert {r["_sparkload_load_id"] for r in delta_rows(stepped, "users")} == {load_id}


def test_trace_load_info_and_delta_versions(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 0}], table_name="users")  # so versions are not all zero
    info = pipeline.run(_users())

    assert pipeline.last_trace is not None
    steps = {timing.step for timing in pipeline.last_trace.timings}
    assert steps == {"extract", "normalize", "load"}
    assert all(timing.seconds >= 0 for timing in pipeline.last_trace.timings)

    assert info.row_counts == {"users": 2, "users__langs": 3}
    text = str(info)
    assert info.load_id is not None and info.load_id in text
    for table, rows in info.row_counts.items():
        assert re.search(rf"^\s*{table}\s+{rows} rows", text, re.MULTILINE), text

    assert info.versions == {
        "users": delta_version(pipeline, "users"),
        "users__langs": delta_version(pipeline, "users__langs"),
    }
    assert info.versions["users"] == 1
    for table, version in info.versions.items():
        commits = {entry["version"]: entry for entry in delta_history(pipeline, table)}
        assert commits[version].get("userMetadata") == info.load_id


def test_every_replace_commit_carries_its_load_id(pipeline: sl.Pipeline) -> None:
    load_ids = []
    for n in range(2):
        info = pipeline.run([{"n": n}], table_name="snap", write_disposition="replace")
        load_ids.append(info.load_id)

    metadata = {e["version"]: e.get("userMetadata") for e in delta_history(pipeline, "snap")}
    assert metadata == {0: load_ids[0], 1: load_ids[1]}


# -- progress and execution_time -----------------------------------------------------------


def test_progress_log_emits_records(make_pipeline: Any, caplog: pytest.LogCaptureFixture) -> None:
    pipeline = make_pipeline(progress="log")
    with caplog.at_level(logging.INFO, logger="sparkload.progress"):
        pipeline.run([{"id": 1}], table_name="logged")

    messages = [r.getMessage() for r in caplog.records if r.name == "sparkload.progress"]
    assert any(m.startswith("extract started (load package ") for m in messages)
    assert any(m.startswith("extract finished: 1 row in ") for m in messages)
    assert "load: table 'logged' loaded (1 of 1)" in messages
    assert [r["id"] for r in delta_rows(pipeline, "logged")] == [1]


def test_progress_tqdm_shows_a_bar(make_pipeline: Any, capsys: pytest.CaptureFixture[str]) -> None:
    pipeline = make_pipeline(progress="tqdm")
    pipeline.run([{"id": 1}], table_name="barred")

    err = capsys.readouterr().err
    assert "extract" in err
    assert "load" in err
    assert [r["id"] for r in delta_rows(pipeline, "barred")] == [1]


def test_execution_time_is_recorded_in_the_package_manifest(pipeline: sl.Pipeline) -> None:

    when = datetime.datetime(2024, 5, 17, 12, 30, tzinfo=datetime.timezone.utc)

    load_id = pipeline.extract([{"id": 1}], table_name="t", execution_time=when)

    manifest = LoadPackage(Folder(str(pipeline.packages_dir)), load_id).read(EXTRACT_MANIFEST)
    assert datetime.datetime.fromisoformat(manifest["execution_time"]) == when
    pipeline.normalize()
    pipeline.load()
    assert [r["id"] for r in delta_rows(pipeline, "t")] == [1]

    # run() accepts it too
    info = pipeline.run([{"id": 2}], table_name="t", execution_time=when)
    assert info.row_counts == {"t": 1}


# -- parallelized resources ---------------------------------------------------------------------
def test_parallelized_resources_run_at_the_same_time(pipeline: sl.Pipeline) -> None:
    """Each of two parallelized resources waits for the other to have yielded its first item
    before yielding its second: run one after the other, neither could finish."""
    started = {"a": threading.Event(), "b": threading.Event()}

    def make(name: str, other: str) -> sl.Resource:
        @sl.resource(name=name, parallelized=True)
        def rows() -> Iterator[dict[str, Any]]:
            yield {"n": 1, "resource_state": sl.current.resource_state().setdefault("seen", name)}
            started[name].set()
            if not started[other].wait(timeout=10):
                raise RuntimeError(f"{other} never ran while {name} was running")
            yield from ({"n": n, "resource_state": name} for n in range(2, 1002))

        return rows

    @sl.source
    def both() -> Any:
        return make("a", "b"), make("b", "a")

    info = pipeline.run(both())

    assert info.row_counts == {"a": 1001, "b": 1001}
    for name in ("a", "b"):
        rows = delta_rows(pipeline, name)
        assert sorted(r["n"] for r in rows) == list(range(1, 1002))
        assert {r["resource_state"] for r in rows} == {name}  # each thread saw its own resource
        assert pipeline.state["sources"]["both"]["resources"][name]["seen"] == name


def test_parallelized_resources_filling_one_table_lose_no_row(pipeline: sl.Pipeline) -> None:
    def make(offset: int) -> sl.Resource:
        return sl.resource(
            ({"id": offset + n} for n in range(30_000)),
            name=f"part{offset}",
            table_name="numbers",
            parallelized=True,
        )

    info = pipeline.run([make(0), make(100_000), make(200_000)])

    assert info.row_counts == {"numbers": 90_000}
    ids = sorted(r["id"] for r in delta_rows(pipeline, "numbers"))
    assert ids == [offset + n for offset in (0, 100_000, 200_000) for n in range(30_000)]


@pytest.mark.parametrize("broken_in_a_thread", [True, False], ids=["parallelized", "calling-thread"])
def test_a_failing_resource_stops_the_parallelized_ones_and_loads_nothing(
    pipeline: sl.Pipeline, broken_in_a_thread: bool
) -> None:
    """A resource failing in a thread of its own, or in the calling thread beside the
    parallelized ones: the others stop at their next item and its error is the one raised."""
    stopped = threading.Event()

    @sl.resource(name="endless", parallelized=True)
    def endless() -> Iterator[dict[str, Any]]:
        try:
            n = 0
            while True:  # stopped by the other resource's failure
                n += 1
                yield {"n": n}
        finally:
            stopped.set()

    @sl.resource(name="broken", parallelized=broken_in_a_thread)
    def broken() -> Iterator[dict[str, Any]]:
        yield {"n": 1}
        raise ValueError("the API said no")

    with pytest.raises(PipelineStepFailed) as failed:
        pipeline.run([endless, broken])

    assert "broken" in str(failed.value) and "the API said no" in str(failed.value)
    assert stopped.is_set()
    assert not table_exists(pipeline, "endless") and not table_exists(pipeline, "broken")
    assert not pipeline.has_pending_data


def test_the_newest_destination_state_is_found_whether_the_local_copy_is_behind_or_ahead(
    pipeline: sl.Pipeline,
) -> None:
    """The state read skips files older than the local copy's version; a local copy ahead of
    the destination (a dataset restored from a backup) falls back to reading every row."""
    for version in (1, 2, 3):
        state = {"_state_version": version, "sources": {"s": {"v": version}}}
        write_destination(pipeline.destination_dataset, pipeline.pipeline_name, state, f"load{version}")

    def newest(known: int) -> Any:
        state = read_destination(pipeline.destination_dataset, pipeline.pipeline_name, known)
        return state["_state_version"], state["sources"]["s"]["v"]

    assert [newest(known) for known in (0, 1, 3, 7)] == [(3, 3)] * 4
