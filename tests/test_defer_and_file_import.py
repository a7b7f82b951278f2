"""dlt's deferred items (``@sl.defer``) and file imports (``sl.mark.with_file_import``).

Every test loads through a real pipeline, with real files on disk, and reads the tables
back with delta-rs. The expected rows are what dlt 1.31 loaded (into duckdb) from the same
resources; each test says what dlt did.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import delta_rows, user_columns

import sparkload as sl
from sparkload.exceptions import ExtractError, PipelineStepFailed, ResourceError


def rows(pipeline: sl.Pipeline, table: str) -> list[dict[str, Any]]:
    """A table's rows without sparkload's columns, in a stable order."""
    return sorted(user_columns(delta_rows(pipeline, table)), key=repr)


def tables(pipeline: sl.Pipeline) -> list[str]:
    dataset = Path(pipeline.dataset_uri)
    return sorted(p.name for p in dataset.iterdir() if not p.name.startswith("_")) if dataset.exists() else []


def step_error(excinfo: pytest.ExceptionInfo[PipelineStepFailed]) -> BaseException:
    cause = excinfo.value.__cause__
    assert cause is not None
    return cause


class Concurrency:
    """How many calls run at once, at most."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self.peak = 0

    def __enter__(self) -> None:
        with self._lock:
            self._active += 1
            self.peak = max(self.peak, self._active)

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._active -= 1


# -- sl.defer ----------------------------------------------------------------------------------


def test_deferred_items_run_five_at_a_time_and_their_results_are_the_items(pipeline: sl.Pipeline) -> None:
    # dlt 1.31: 12 rows in `details` (a deferred returning None adds none, one returning a
    # list adds its rows); at most 5 calls run at once (extract.workers).
    running = Concurrency()

    @sl.defer
    def fetch(i: int) -> Any:
        with running:
            time.sleep(0.3 if i % 3 == 0 else 0.05)
        if i == 4:
            return None
        if i == 5:
            return [{"id": 50}, {"id": 51}]
        return {"id": i}

    @sl.source
    def api() -> Any:
        @sl.resource
        def ids() -> Iterator[int]:
            yield from range(12)

        @sl.transformer(data_from=ids, parallelized=True)
        def details(i: int) -> Iterator[Any]:
            yield fetch(i)

        return ids, details

    info = pipeline.run(api())

    assert running.peak == 5
    assert info.row_counts["details"] == 12
    assert sorted(r["id"] for r in rows(pipeline, "details")) == [0, 1, 2, 3, 6, 7, 8, 9, 10, 11, 50, 51]


def test_a_transformer_returning_a_deferred_call_and_arrow_and_generator_results(
    pipeline: sl.Pipeline,
) -> None:
    # dlt 1.31: `@dlt.transformer` over `@dlt.defer` runs the calls side by side (12 calls of
    # 0.1 s took 0.5 s); a deferred Arrow table and a deferred generator load their rows:
    # tarrow holds 0..5 and 100..105, tgen 0..5 and -5..0.
    @sl.resource
    def ids() -> Iterator[int]:
        yield from range(6)

    @sl.transformer(data_from=ids)
    @sl.defer
    def slow(i: int) -> dict[str, int]:
        time.sleep(0.2)
        return {"id": i}

    @sl.defer
    def arrow(i: int) -> pa.Table:
        return pa.table({"id": [i, i + 100]})

    @sl.defer
    def generated(i: int) -> Iterator[dict[str, int]]:
        yield {"id": i}
        yield {"id": -i}

    @sl.transformer(data_from=ids)
    def tarrow(i: int) -> Iterator[Any]:
        yield arrow(i)

    @sl.transformer(data_from=ids)
    def tgen(i: int) -> Iterator[Any]:
        yield generated(i)

    started = time.monotonic()
    pipeline.extract(slow)
    assert time.monotonic() - started < 6 * 0.2
    pipeline.normalize()
    pipeline.load()
    pipeline.run([tarrow, tgen])

    assert sorted(r["id"] for r in rows(pipeline, "slow")) == [0, 1, 2, 3, 4, 5]
    assert sorted(r["id"] for r in rows(pipeline, "tarrow")) == [*range(6), *range(100, 106)]
    assert sorted(r["id"] for r in rows(pipeline, "tgen")) == [-5, -4, -3, -2, -1, 0, 0, 1, 2, 3, 4, 5]


def test_steps_and_the_incremental_see_what_a_deferred_call_returns(pipeline: sl.Pipeline) -> None:
    # dlt 1.31: the map, the filter and the incremental run on each deferred call's result:
    # r holds ids 2 and 4 (ts >= 2, id 3 filtered out) with m = 1, last_value 4; the
    # transformer's map adds tm to both of its results.
    @sl.defer
    def get(i: int) -> dict[str, int]:
        return {"id": i, "ts": i}

    @sl.resource
    def r(ts: Any = sl.sources.incremental("ts", initial_value=2)) -> Iterator[Any]:  # noqa: B008
        for i in range(5):
            yield get(i)

    @sl.transformer(data_from=sl.resource([[1, 2]], name="parent"))
    def t(ids: list[int]) -> Iterator[Any]:
        for i in ids:
            yield get(i)

    mapped = r().add_map(lambda row: {**row, "m": 1}).add_filter(lambda row: row["id"] != 3)
    # Iterated by hand, as dlt's are, the calls are made and their results go on the same way.
    assert list(mapped) == [{"id": 2, "ts": 2, "m": 1}, {"id": 4, "ts": 4, "m": 1}]
    pipeline.run([mapped, t.add_map(lambda row: {**row, "tm": 1})])

    assert rows(pipeline, "r") == [{"id": 2, "m": 1, "ts": 2}, {"id": 4, "m": 1, "ts": 4}]
    assert rows(pipeline, "t") == [{"id": 1, "tm": 1, "ts": 1}, {"id": 2, "tm": 1, "ts": 2}]
    [source] = pipeline.state["sources"].values()
    assert source["resources"]["r"]["incremental"]["ts"]["last_value"] == 4


def test_a_failing_deferred_call_fails_the_extract_naming_the_resource_and_loads_nothing(
    pipeline: sl.Pipeline,
) -> None:
    # dlt 1.31: PipelineStepFailed at step=extract, caused by ResourceExtractionError naming
    # `details` and the ValueError's message; nothing of the run is loaded (not `other` either).
    @sl.defer
    def fetch(i: int, fail: bool) -> dict[str, int]:
        if fail and i == 3:
            raise ValueError("no detail for 3")
        return {"id": i, "run": 2 if fail else 1}

    def details_of(fail: bool) -> sl.Resource:
        @sl.resource
        def ids() -> Iterator[int]:
            yield from range(6)

        @sl.transformer(data_from=ids, parallelized=True)
        def details(i: int) -> Iterator[Any]:
            yield fetch(i, fail)

        return details

    @sl.resource
    def other() -> Iterator[dict[str, int]]:
        yield {"x": 1}

    pipeline.run(details_of(False))
    with pytest.raises(PipelineStepFailed) as excinfo:
        pipeline.run([details_of(True), other()])

    error = step_error(excinfo)
    assert isinstance(error, ExtractError)
    assert error.resource == "details"
    assert "no detail for 3" in str(error)
    assert excinfo.value.step == "extract"
    assert tables(pipeline) == ["details"]
    assert {r["run"] for r in rows(pipeline, "details")} == {1}
    assert not pipeline.has_pending_data


# -- sl.mark.with_file_import ------------------------------------------------------------------


def test_a_jsonl_file_is_loaded_as_the_resource_table_and_left_in_place(
    pipeline: sl.Pipeline, tmp_path: Path
) -> None:
    # dlt 1.31: the file is linked into the package (the source stays, unchanged) and loaded
    # as `users`: (1, "Ada"), (2, "Bob"). dlt loads it without normalizing it (it needs
    # column hints and cannot flatten `address`); sparkload normalizes it like any staged
    # file, so `address` becomes address__city and `tags` the nested table users__tags.
    source = tmp_path / "users.jsonl"
    text = (
        json.dumps({"id": 1, "name": "Ada", "address": {"city": "London"}, "tags": ["a", "b"]})
        + "\n"
        + json.dumps({"id": 2, "name": "Bob", "address": {"city": "Paris"}, "tags": []})
        + "\n"
    )
    source.write_text(text)

    @sl.resource
    def users() -> Iterator[Any]:
        yield sl.mark.with_file_import(source, "jsonl")

    info = pipeline.run(users())

    assert info.row_counts["users"] == 2
    assert rows(pipeline, "users") == [
        {"id": 1, "name": "Ada", "address__city": "London"},
        {"id": 2, "name": "Bob", "address__city": "Paris"},
    ]
    assert sorted(r["value"] for r in rows(pipeline, "users__tags")) == ["a", "b"]
    assert source.read_text() == text


def test_a_parquet_file_is_loaded_into_the_table_its_hints_name(
    pipeline: sl.Pipeline, tmp_path: Path
) -> None:
    # dlt 1.31: with make_hints(table_name="orders_x") the file lands in orders_x:
    # (10, 1.5), (11, 2.5), (12, 3.5); the resource's own table gets nothing. Strings keep
    # their Arrow type (an ISO date stays text), as for an Arrow table a resource yields.
    source = tmp_path / "orders.parquet"
    pq.write_table(
        pa.table({"order_id": [10, 11, 12], "amount": [1.5, 2.5, 3.5], "day": ["2024-01-01", "x", "y"]}),
        source,
    )
    numbers = tmp_path / "numbers.parquet"  # no strings: linked as it is
    pq.write_table(pa.table({"order_id": [13], "amount": [4.5]}), numbers)

    @sl.resource
    def orders() -> Iterator[Any]:
        yield sl.mark.with_file_import(source, "parquet", 3, hints=sl.mark.make_hints(table_name="orders_x"))
        yield sl.mark.with_file_import(str(numbers), "parquet")

    info = pipeline.run(orders())

    assert info.row_counts == {"orders_x": 4}
    assert tables(pipeline) == ["orders_x"]
    assert rows(pipeline, "orders_x") == [
        {"order_id": 10, "amount": 1.5, "day": "2024-01-01"},
        {"order_id": 11, "amount": 2.5, "day": "x"},
        {"order_id": 12, "amount": 3.5, "day": "y"},
        {"order_id": 13, "amount": 4.5, "day": None},
    ]
    assert pq.read_table(source).num_rows == 3


@pytest.mark.parametrize(
    ("name", "content", "file_format", "message"),
    [
        ("missing.jsonl", None, "jsonl", "does not exist"),
        ("broken.jsonl", b'{"id": 1}\n{"id": 2, "name": \n', "jsonl", "line 2 of the file"),
        ("list.jsonl", b'{"id": 1}\n[1, 2]\n', "jsonl", "not an object"),
        ("broken.parquet", b"PAR1 not really parquet", "parquet", "is not a Parquet file"),
    ],
)
def test_a_missing_or_broken_file_fails_the_extract_naming_it_and_loads_nothing(
    pipeline: sl.Pipeline, tmp_path: Path, name: str, content: bytes | None, file_format: str, message: str
) -> None:
    # dlt 1.31: a missing file fails at step=extract (FileImportNotFound naming the file);
    # dlt does not read the file, so a broken one fails only when the destination loads it.
    # Here it fails at extract too, naming the file; the table keeps its rows.
    source = tmp_path / name
    if content is not None:
        source.write_bytes(content)

    @sl.resource
    def users(first: bool) -> Iterator[Any]:
        if first:
            yield {"id": 0}
        else:
            yield {"id": 9}
            yield sl.mark.with_file_import(source, file_format)

    pipeline.run(users(True))
    with pytest.raises(PipelineStepFailed) as excinfo:
        pipeline.run(users(False))

    error = step_error(excinfo)
    assert isinstance(error, ExtractError)
    assert str(source) in str(error) and message in str(error)
    assert rows(pipeline, "users") == [{"id": 0}]
    assert not pipeline.has_pending_data


def test_formats_sparkload_cannot_import_are_refused_by_name(tmp_path: Path) -> None:
    # dlt 1.31 takes any of its loader file formats (csv, insert_values, ...) and leaves the
    # destination to read them; sparkload imports what its engine normalizes.
    with pytest.raises(ResourceError, match="'csv'.*jsonl and parquet"):
        sl.mark.with_file_import(tmp_path / "users.csv", "csv")
