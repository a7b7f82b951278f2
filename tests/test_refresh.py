"""dlt's ``refresh=`` on run, extract and sl.pipeline: what each mode drops, truncates and
starts over, and that a refresh cut short is finished by the next run exactly once.

The expected tables, columns and recorded starts come from dlt 1.31 on duckdb, run on the
same source (the dlt_diff cases ``refresh_*`` compare the end of the same script)."""

# Incrementals are declared as call defaults: that is dlt's API.
# ruff: noqa: B008

from __future__ import annotations

from pathlib import Path
from typing import Any

import deltalake
import pytest
from conftest import delta_rows, user_columns

import sparkload as sl
from sparkload.pipeline import state as state_store

RUN1_ORDERS = [{"id": 1, "updated": 1, "items": ["a", "b"]}, {"id": 2, "updated": 2, "items": ["c"]}]
RUN2_ORDERS = [{"id": 3, "updated": 1, "extra": "x"}]


def make_shop(seen: list[tuple[Any, ...]]) -> Any:
    @sl.source(name="shop")
    def shop(order_rows: list[dict[str, Any]], customer_rows: list[dict[str, Any]]) -> Any:
        @sl.resource(name="orders", write_disposition="append")
        def orders(updated: Any = sl.sources.incremental("updated", initial_value=0)) -> Any:
            source_state = sl.current.source_state()
            own = sl.current.resource_state()
            seen.append((updated.start_value, source_state.get("runs"), own.get("runs")))
            source_state["runs"] = source_state.get("runs", 0) + 1
            own["runs"] = own.get("runs", 0) + 1
            yield from order_rows

        @sl.resource(name="customers", primary_key="id", write_disposition="merge")
        def customers() -> Any:
            yield from customer_rows

        return orders, customers

    return shop


def tables(pipeline: sl.Pipeline) -> list[str]:
    return sorted(name for name in pipeline.destination_dataset.table_names() if not name.startswith("_"))


def columns(pipeline: sl.Pipeline, table: str) -> set[str]:
    names = deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").schema().to_arrow().names
    return {name for name in names if not name.startswith("_")}


# mode -> (tables after the refresh, orders' columns, (start, source runs, resource runs)
# seen by the refreshed run): dlt 1.31's.
DLT_AFTER_REFRESH = {
    "drop_sources": (["orders"], {"id", "updated", "extra"}, (0, None, None)),
    "drop_resources": (["customers", "orders"], {"id", "updated", "extra"}, (0, 1, None)),
    "drop_data": (["customers", "orders", "orders__items"], {"id", "updated", "extra"}, (0, 1, None)),
}


@pytest.mark.parametrize("mode", sorted(DLT_AFTER_REFRESH))
def test_refresh_drops_what_dlt_drops(make_pipeline: Any, mode: str) -> None:
    seen: list[tuple[Any, ...]] = []
    shop = make_shop(seen)
    pipeline = make_pipeline()
    pipeline.run(shop(RUN1_ORDERS, [{"id": 10, "name": "ann"}]))
    assert tables(pipeline) == ["customers", "orders", "orders__items"]

    pipeline.run(shop(RUN2_ORDERS, [{"id": 11, "name": "bob"}]).with_resources("orders"), refresh=mode)

    expected_tables, orders_columns, started = DLT_AFTER_REFRESH[mode]
    assert tables(pipeline) == expected_tables
    assert user_columns(delta_rows(pipeline, "orders")) == [{"id": 3, "updated": 1, "extra": "x"}]
    assert orders_columns <= columns(pipeline, "orders")
    if mode == "drop_data":
        assert delta_rows(pipeline, "orders__items") == []  # truncated, kept
    if "customers" in expected_tables:
        assert [row["id"] for row in delta_rows(pipeline, "customers")] == [10]
    assert seen[-1] == started
    # The next run continues from the refreshed run's cursor.
    pipeline.run(shop([{"id": 4, "updated": 1}, {"id": 5, "updated": 5}], [{"id": 12, "name": "cy"}]))
    assert sorted(row["id"] for row in delta_rows(pipeline, "orders")) == [3, 4, 5]
    assert seen[-1][0] == 1


def test_drop_resources_drops_the_columns_of_the_dropped_table(make_pipeline: Any) -> None:
    """As dlt drops the table with its schema: a column the new rows lack is gone (drop_data
    keeps it, see above)."""
    shop = make_shop([])
    pipeline = make_pipeline()
    pipeline.run(shop([{"id": 1, "updated": 1, "old": "y"}], []))
    pipeline.run(shop([{"id": 2, "updated": 2}], []).with_resources("orders"), refresh="drop_resources")
    assert columns(pipeline, "orders") == {"id", "updated"}


def test_pipeline_refresh_applies_to_every_run(make_pipeline: Any) -> None:
    """sl.pipeline(refresh=...) as dlt.pipeline(refresh=...): each run refreshes."""
    seen: list[tuple[Any, ...]] = []
    shop = make_shop(seen)
    pipeline = make_pipeline(refresh="drop_data")
    pipeline.run(shop(RUN1_ORDERS, []))
    pipeline.run(shop(RUN2_ORDERS, []))
    assert [start for start, _, _ in seen] == [0, 0]
    assert user_columns(delta_rows(pipeline, "orders")) == [{"id": 3, "updated": 1, "extra": "x"}]


def test_extract_takes_refresh(make_pipeline: Any) -> None:
    shop = make_shop([])
    pipeline = make_pipeline()
    pipeline.run(shop(RUN1_ORDERS, [{"id": 10, "name": "ann"}]))
    pipeline.extract(shop(RUN2_ORDERS, []).with_resources("orders"), refresh="drop_resources")
    assert "orders__items" in tables(pipeline)  # dropped by the load, not the extract
    pipeline.normalize()
    pipeline.load()
    assert tables(pipeline) == ["customers", "orders"]


def test_a_bad_refresh_mode_is_refused(make_pipeline: Any) -> None:
    with pytest.raises(sl.SparkloadError, match="refresh must be one of"):
        make_pipeline(refresh="drop_everything")
    pipeline = make_pipeline()
    with pytest.raises(sl.SparkloadError, match="refresh must be one of"):
        pipeline.run([{"id": 1}], table_name="t", refresh="full")
    assert not pipeline.destination_dataset.table_names()


@pytest.mark.parametrize("mode", ["drop_resources", "drop_data"])
def test_a_refresh_cut_short_after_its_table_commits_is_finished_once(
    make_pipeline: Any, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The load dropped (or truncated) and committed the new rows, then died before the
    state: the next run finishes the package without dropping the new rows again."""
    seen: list[tuple[Any, ...]] = []
    shop = make_shop(seen)
    pipeline = make_pipeline()
    pipeline.run(shop(RUN1_ORDERS, []))
    committed = pipeline.state["_state_version"]

    original = state_store.write_destination

    def dies(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("killed before the state commit")

    monkeypatch.setattr(state_store, "write_destination", dies)
    with pytest.raises(Exception, match="killed before the state commit"):
        pipeline.run(shop(RUN2_ORDERS, []).with_resources("orders"), refresh=mode)
    monkeypatch.setattr(state_store, "write_destination", original)
    assert user_columns(delta_rows(pipeline, "orders")) == [{"id": 3, "updated": 1, "extra": "x"}]

    pipeline.run()  # finishes the package
    assert user_columns(delta_rows(pipeline, "orders")) == [{"id": 3, "updated": 1, "extra": "x"}]
    assert pipeline.state["_state_version"] > committed
    resource_state = pipeline.state["sources"]["shop"]["resources"]["orders"]
    assert resource_state["runs"] == 1  # reset by the refresh, then one run


def test_a_refresh_cut_short_before_its_commits_is_finished(
    make_pipeline: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Dropped, then died before the first commit: the next run loads the package."""
    from sparkload.load import package as load_package_module

    shop = make_shop([])
    pipeline = make_pipeline()
    pipeline.run(shop(RUN1_ORDERS, [{"id": 10, "name": "ann"}]))

    class DiesBeforeCommits(load_package_module.Loader):  # type: ignore[misc,name-defined]
        def load(self) -> Any:
            raise RuntimeError("killed before the first commit")

    original = load_package_module.Loader
    monkeypatch.setattr(load_package_module, "Loader", DiesBeforeCommits)
    with pytest.raises(Exception, match="killed before the first commit"):
        pipeline.run(shop(RUN2_ORDERS, []).with_resources("orders"), refresh="drop_resources")
    assert "orders" not in tables(pipeline)  # dropped: the package is claimed
    monkeypatch.setattr(load_package_module, "Loader", original)

    pipeline.run()
    assert tables(pipeline) == ["customers", "orders"]
    assert user_columns(delta_rows(pipeline, "orders")) == [{"id": 3, "updated": 1, "extra": "x"}]


def test_a_refreshed_load_refused_by_its_checks_drops_nothing(make_pipeline: Any) -> None:
    # The load's own checks (here a NULL merge key) run before the refresh drops a table: a
    # refused load leaves every table as it was, the old rows included.
    pipeline = make_pipeline()

    @sl.resource(name="orders", write_disposition="merge", merge_key="day")
    def orders(rows: list[dict[str, Any]]) -> Any:
        yield from rows

    pipeline.run(orders([{"id": 1, "day": 1}]))
    version = deltalake.DeltaTable(f"{pipeline.dataset_uri}/orders").version()
    with pytest.raises(sl.exceptions.PipelineStepFailed, match="merge key column"):
        pipeline.run(orders([{"id": 2, "day": None}, {"id": 3, "day": 2}]), refresh="drop_resources")
    assert tables(pipeline) == ["orders"]
    assert deltalake.DeltaTable(f"{pipeline.dataset_uri}/orders").version() == version
    assert user_columns(delta_rows(pipeline, "orders")) == [{"id": 1, "day": 1}]
