"""``sparkload pipeline <name> info|drop``, run as a real command against real pipelines.

Every command runs in a subprocess of its own (the installed ``sparkload`` console script,
``cli_process.py``), with its own embedded engine, on Delta tables the test's pipeline
wrote; tables are read back with delta-rs. A test that runs the pipeline again after a
command makes the pipeline anew, as a new script would: a Pipeline object keeps the state
it read.
"""

# The incrementals are declared as call defaults: that is dlt's API.
# ruff: noqa: B008

from __future__ import annotations

import datetime
import json
import os
import shutil
from pathlib import Path
from typing import Any

import deltalake
import pytest
from cli_process import sparkload, succeeded
from conftest import delta_rows, user_columns

import sparkload as sl
from sparkload.common.package import PACKAGES_FOLDER
from sparkload.load.table import LOCKS_FOLDER
from sparkload.pipeline import state as state_store
from sparkload.pipeline.lock import RunLock

UTC = datetime.timezone.utc
NAME = "shop_pipeline"

ORDERS_FIRST = [
    {"id": 1, "updated": 1, "items": [{"sku": "a"}, {"sku": "b"}]},
    {"id": 2, "updated": 2, "items": [{"sku": "c"}]},
]
ORDERS_SECOND = [*ORDERS_FIRST, {"id": 3, "updated": 3, "items": [{"sku": "d"}]}]
CUSTOMERS = [
    {"id": 1, "joined": datetime.datetime(2024, 2, 1, tzinfo=UTC), "tags": ["vip", "new"]},
    {"id": 2, "joined": datetime.datetime(2024, 3, 1, tzinfo=UTC), "tags": ["new"]},
]


def shop(orders_rows: list[dict[str, Any]], customers_rows: list[dict[str, Any]] = CUSTOMERS) -> Any:
    """Two merge resources with incrementals (an int and a datetime cursor) and nested lists."""

    @sl.resource(primary_key="id", write_disposition="merge")
    def orders(updated: Any = sl.sources.incremental("updated", initial_value=0)) -> Any:
        yield from orders_rows

    @sl.resource(primary_key="id", write_disposition="merge")
    def customers(
        joined: Any = sl.sources.incremental(
            "joined", initial_value=datetime.datetime(2024, 1, 1, tzinfo=UTC)
        ),
    ) -> Any:
        yield from customers_rows

    @sl.source
    def shop() -> Any:
        return orders, customers

    return shop()


@pytest.fixture
def loaded(make_pipeline: Any) -> sl.Pipeline:
    """The shop loaded twice; the second run adds order 3."""
    pipeline = make_pipeline(NAME)
    pipeline.run(shop(ORDERS_FIRST))
    pipeline.run(shop(ORDERS_SECOND))
    return pipeline


@pytest.fixture
def pipelines_dir(tmp_path: Path) -> Path:
    return tmp_path / "pipelines"  # the one make_pipeline uses


def info_sources(out: str) -> dict[str, Any]:
    """The ``sources:`` JSON that ends ``info``'s output."""
    return dict(json.loads(out.split("\nsources:\n", 1)[1]))


def info_header(out: str) -> dict[str, str]:
    head = out.split("\nresources and their tables:\n", 1)[0]
    return dict(line.split(": ", 1) for line in head.splitlines())


def exists(pipeline: sl.Pipeline, table: str) -> bool:
    return Path(pipeline.dataset_uri, table).exists()


def destination_state(pipeline: sl.Pipeline, other_dir: Path) -> dict[str, Any]:
    """The state as a machine with an empty working directory restores it."""
    fresh = sl.pipeline(
        NAME, destination=pipeline.destination, dataset_name=pipeline.dataset_name, pipelines_dir=other_dir
    )
    return fresh.state


# -- info --------------------------------------------------------------------------------------


def test_info_prints_every_incremental_and_the_tables_of_each_resource(
    loaded: sl.Pipeline, pipelines_dir: Path
) -> None:
    out = succeeded(sparkload("pipeline", NAME, "info", "--pipelines-dir", pipelines_dir))

    header = info_header(out)
    assert header["pipeline"] == NAME
    assert header["destination"] == loaded.destination.bucket_url
    assert header["dataset"] == f"{loaded.dataset_name} ({loaded.dataset_uri})"
    assert header["state version"] == str(loaded.state["_state_version"])
    assert "  shop.orders: orders, orders__items\n" in out
    assert "  shop.customers: customers, customers__tags\n" in out

    resources = info_sources(out)["shop"]["resources"]
    orders = resources["orders"]["incremental"]["updated"]
    state = loaded.state["sources"]["shop"]["resources"]
    assert orders["initial_value"] == 0
    assert orders["last_value"] == 3
    assert orders["unique_hashes"] == state["orders"]["incremental"]["updated"]["unique_hashes"] != []
    customers = resources["customers"]["incremental"]["joined"]
    assert customers["initial_value"] == "2024-01-01T00:00:00+00:00"
    assert customers["last_value"] == "2024-03-01T00:00:00+00:00"
    assert customers["unique_hashes"] == state["customers"]["incremental"]["joined"]["unique_hashes"] != []


def test_info_on_a_machine_without_the_working_directory_reads_the_destination(
    loaded: sl.Pipeline, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "other_machine"

    refused = sparkload("pipeline", NAME, "info", "--pipelines-dir", elsewhere)
    assert refused.returncode == 1
    assert "--destination" in refused.stderr

    out = succeeded(
        sparkload(
            "pipeline", NAME, "info", "--pipelines-dir", elsewhere,
            "--destination", loaded.destination.bucket_url, "--dataset", loaded.dataset_name,
        )
    )  # fmt: skip
    assert info_header(out)["state version"] == str(loaded.state["_state_version"])
    cursor = info_sources(out)["shop"]["resources"]["orders"]["incremental"]["updated"]
    assert (cursor["initial_value"], cursor["last_value"]) == (0, 3)
    assert "  shop.orders: orders, orders__items\n" in out


# -- drop --------------------------------------------------------------------------------------


def test_drop_one_resource_removes_its_tables_and_state_and_keeps_the_others(
    loaded: sl.Pipeline, pipelines_dir: Path, tmp_path: Path
) -> None:
    customers_before = delta_rows(loaded, "customers", order_by="id")
    tags_before = delta_rows(loaded, "customers__tags", order_by="value")
    cursor_before = loaded.state["sources"]["shop"]["resources"]["customers"]

    out = succeeded(
        sparkload("pipeline", NAME, "drop", "--resources", "orders", "-y", "--pipelines-dir", pipelines_dir)
    )
    assert "deleted tables: orders, orders__items" in out

    for table in ("orders", "orders__items"):
        assert not exists(loaded, table)
        with pytest.raises(deltalake.exceptions.TableNotFoundError):
            deltalake.DeltaTable(f"{loaded.dataset_uri}/{table}")
    assert delta_rows(loaded, "customers", order_by="id") == customers_before
    assert delta_rows(loaded, "customers__tags", order_by="value") == tags_before

    state = destination_state(loaded, tmp_path / "other_machine")
    assert state["_state_version"] == loaded.state["_state_version"] + 1
    assert state["sources"]["shop"]["resources"] == {"customers": cursor_before}
    assert state["tables"] == {"shop": {"customers": ["customers"]}}
    assert state_store.read_local(loaded.working_dir) == state


def test_drop_all_removes_every_table_the_state_and_pending_packages(
    loaded: sl.Pipeline, pipelines_dir: Path, tmp_path: Path
) -> None:
    loaded.extract(shop([{"id": 4, "updated": 4, "items": []}]))
    assert loaded.has_pending_data

    out = succeeded(sparkload("pipeline", NAME, "drop", "-y", "--pipelines-dir", pipelines_dir))
    assert "pending load packages are discarded" in out

    assert loaded.destination_dataset.user_tables() == []
    # the state table stays, the (now empty) folder where load packages wait, and the
    # tables' commit lock files (another writer may hold one: never deleted)
    kept = [LOCKS_FOLDER, PACKAGES_FOLDER, "_sparkload_pipeline_state"]
    assert sorted(os.listdir(loaded.dataset_uri)) == kept
    state = destination_state(loaded, tmp_path / "other_machine")
    assert (state["sources"], state["tables"]) == ({}, {})
    assert not loaded.has_pending_data


def test_after_a_drop_the_next_run_loads_from_the_initial_value_into_fresh_tables(
    loaded: sl.Pipeline,
) -> None:
    result = loaded.drop_resources(["orders"])  # the Python face of the command
    assert result.plan.tables == ["orders", "orders__items"]

    # Without the drop the cursor (3) would let none of these rows through.
    info = loaded.run(shop(ORDERS_FIRST))

    assert info.row_counts["orders"] == 2
    rows = user_columns(delta_rows(loaded, "orders", order_by="id"))
    assert rows == [{"id": 1, "updated": 1}, {"id": 2, "updated": 2}]
    assert sorted(r["sku"] for r in delta_rows(loaded, "orders__items")) == ["a", "b", "c"]
    assert deltalake.DeltaTable(f"{loaded.dataset_uri}/orders").version() == 0  # a fresh table
    cursor = loaded.state["sources"]["shop"]["resources"]["orders"]["incremental"]["updated"]
    assert (cursor["initial_value"], cursor["last_value"]) == (0, 2)


def test_state_only_drop_resets_the_cursor_and_keeps_the_tables(
    loaded: sl.Pipeline, make_pipeline: Any, pipelines_dir: Path
) -> None:
    orders_before = delta_rows(loaded, "orders", order_by="id")

    out = succeeded(
        sparkload(
            "pipeline",
            NAME,
            "drop",
            "--resources",
            "orders",
            "--state-only",
            "-y",
            "--pipelines-dir",
            pipelines_dir,
        )
    )
    assert "tables are kept (--state-only)" in out

    assert delta_rows(loaded, "orders", order_by="id") == orders_before
    assert exists(loaded, "orders__items")
    again = make_pipeline(NAME)
    assert "orders" not in again.state["sources"]["shop"]["resources"]
    assert again.state["tables"]["shop"]["orders"] == ["orders"]
    info = again.run(shop(ORDERS_FIRST))
    assert info.row_counts["orders"] == 2  # from the initial value again, merged into the same rows
    assert len(delta_rows(again, "orders")) == 3


def test_drop_asks_first_and_changes_nothing_when_told_no(loaded: sl.Pipeline, pipelines_dir: Path) -> None:
    version = loaded.state["_state_version"]

    declined = sparkload(
        "pipeline", NAME, "drop", "--resources", "orders", "--pipelines-dir", pipelines_dir, stdin="n\n"
    )
    assert declined.returncode == 1
    assert "tables to delete: orders, orders__items" in declined.stdout
    assert exists(loaded, "orders") and exists(loaded, "orders__items")
    assert state_store.read_local(loaded.working_dir)["_state_version"] == version

    succeeded(
        sparkload(
            "pipeline", NAME, "drop", "--resources", "orders", "--pipelines-dir", pipelines_dir, stdin="y\n"
        )
    )
    assert not exists(loaded, "orders")


def test_drop_refuses_while_the_pipeline_runs(loaded: sl.Pipeline, pipelines_dir: Path) -> None:
    version = loaded.state["_state_version"]

    with RunLock(pipelines_dir / f".{NAME}.lock", NAME).held():  # as a run in another process holds it
        refused = sparkload("pipeline", NAME, "drop", "-y", "--pipelines-dir", pipelines_dir)

    assert refused.returncode == 1
    assert f"pipeline '{NAME}' is already running" in refused.stderr
    assert exists(loaded, "orders") and exists(loaded, "customers__tags")
    assert state_store.read_local(loaded.working_dir)["_state_version"] == version


def test_a_drop_cut_short_while_deleting_tables_completes_when_run_again(
    loaded: sl.Pipeline, pipelines_dir: Path, tmp_path: Path
) -> None:
    # What a drop interrupted inside the deletion of ``orders`` leaves: its log gone, its data
    # files and nested table still there, the state not yet committed.
    shutil.rmtree(Path(loaded.dataset_uri, "orders", "_delta_log"))

    out = succeeded(
        sparkload("pipeline", NAME, "drop", "--resources", "orders", "-y", "--pipelines-dir", pipelines_dir)
    )

    assert "deleted tables: orders, orders__items" in out
    assert not exists(loaded, "orders") and not exists(loaded, "orders__items")
    assert (
        "orders" not in destination_state(loaded, tmp_path / "other_machine")["sources"]["shop"]["resources"]
    )


def test_a_table_two_resources_fill_stays_until_both_are_dropped(make_pipeline: Any) -> None:
    pipeline = make_pipeline(NAME)
    first = sl.resource([{"id": 1, "tags": ["x"]}], name="first", table_name="events")
    second = sl.resource([{"id": 2, "tags": ["y"]}], name="second", table_name="events")
    pipeline.run([first, second])

    kept = pipeline.drop_resources(["first"])

    assert (kept.plan.tables, kept.plan.shared_tables) == ([], ["events", "events__tags"])
    assert sorted(row["id"] for row in delta_rows(pipeline, "events")) == [1, 2]
    assert pipeline.state["tables"] == {NAME: {"second": ["events"]}}

    dropped = pipeline.drop_resources(["second"])

    assert dropped.plan.tables == ["events", "events__tags"]
    assert not exists(pipeline, "events") and not exists(pipeline, "events__tags")
    assert pipeline.state["tables"] == {}


def test_the_state_records_the_tables_a_resource_filled_and_no_others(make_pipeline: Any) -> None:
    pipeline = make_pipeline(NAME)

    pipeline.run(shop([], customers_rows=[]))
    assert "tables" not in pipeline.state

    pipeline.run(shop(ORDERS_FIRST, customers_rows=[]))
    assert pipeline.state["tables"] == {"shop": {"orders": ["orders"]}}
