"""``sparkload.helpers.airflow.PipelineTasksGroup`` against a real Apache Airflow (``nox -s
airflow``): a two-resource source (an incremental taking the run's data interval, an
interval resource) as the tasks of each decompose mode, with dlt's task ids and
dependencies, run by Airflow's own ``dag.test``; a task that fails and is retried loads
once; two runs load their own intervals."""

from __future__ import annotations

import collections
import datetime
import importlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import deltalake
import pendulum
import pytest
from airflow.utils.state import DagRunState, TaskInstanceState

import sparkload as sl

UTC = datetime.timezone.utc
JAN_1 = datetime.datetime(2024, 1, 1, tzinfo=UTC)
DAY = datetime.timedelta(days=1)

# Task ids and the tasks right after each one, as dlt's helper makes them.
TASKS = {
    "none": {"shop.shop_orders-visits": set()},
    "serialize": {"shop.shop_orders": {"shop.shop_visits"}, "shop.shop_visits": set()},
    "parallel": {
        "shop.shop_orders": {"shop.shop_visits"},
        "shop.shop_visits": {"shop.shop_orders-visits_end"},
        "shop.shop_orders-visits_end": set(),
    },
}
TASKS["parallel-isolated"] = TASKS["parallel"]


@pytest.fixture
def folders(dags_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A new lake and pipelines folder per test, where the DAGs load (see the DAGs' module)."""
    lake, pipelines_dir = tmp_path / "lake", tmp_path / "pipelines"
    monkeypatch.setenv("SPARKLOAD_LAKE", str(lake))
    monkeypatch.setenv("SPARKLOAD_PIPELINES_DIR", str(pipelines_dir))
    return lake, pipelines_dir


def tasks_group_dag(name: str) -> Any:
    """The DAG ``name`` of the DAGs' module, made for this test's folders."""
    return importlib.reload(importlib.import_module("sparkload_tasks_group_dags")).dags[name]


def run_day(dag: Any, day_start: datetime.datetime) -> Any:
    """The DAG's run for the day starting at ``day_start`` (made at the day's end)."""
    run = dag.test(logical_date=pendulum.instance(day_start + DAY))
    assert (run.data_interval_start, run.data_interval_end) == (day_start, day_start + DAY)
    return run


def rows(table: Path) -> list[dict[str, Any]]:
    return deltalake.DeltaTable(str(table)).to_pyarrow_table().to_pylist()


def days_by_load(table: list[dict[str, Any]], column: str) -> list[list[datetime.date]]:
    """The days of ``column`` each load wrote, one list per load, in order."""
    by_load = collections.defaultdict(set)
    for row in table:
        by_load[row["_sparkload_load_id"]].add(row[column].date())
    return [sorted(by_load[load_id]) for load_id in sorted(by_load)]


def shop_state(lake: Path, pipeline_name: str, tmp_path: Path) -> dict[str, Any]:
    """The state ``pipeline_name`` committed to the dataset (read from a new working folder)."""
    pipeline = sl.pipeline(
        pipeline_name,
        destination=sl.destinations.delta(lake),
        dataset_name="shop",
        pipelines_dir=tmp_path / "readers",
    )
    resources: dict[str, Any] = pipeline.state.get("sources", {}).get("shop", {}).get("resources", {})
    return resources


@pytest.mark.parametrize("decompose", ["none", "serialize", "parallel", "parallel-isolated"])
def test_each_decompose_mode_loads_the_days_interval_in_dlts_tasks(
    decompose: str, folders: tuple[Path, Path], tmp_path: Path
) -> None:
    lake, pipelines_dir = folders
    dag = tasks_group_dag(decompose)
    assert {task.task_id: set(task.downstream_task_ids) for task in dag.tasks} == TASKS[decompose]

    run = run_day(dag, JAN_1)
    assert run.state == DagRunState.SUCCESS
    assert {ti.task_id: ti.state for ti in run.get_task_instances()} == dict.fromkeys(
        TASKS[decompose], TaskInstanceState.SUCCESS
    )
    # Jan 1 only: the events at 00:00, 06:00, 12:00 and 18:00 (Jan 2 00:00 is the next day's).
    orders = rows(lake / "shop" / "orders")
    assert sorted(o["id"] for o in orders) == [0, 1, 2, 3]
    visits = rows(lake / "shop" / "visits")
    assert sorted(v["at"] for v in visits) == [JAN_1 + n * datetime.timedelta(hours=6) for n in range(4)]
    # Each task worked in a folder of its own and removed it.
    assert list((pipelines_dir / "tasks").iterdir()) == []

    # The interval resource's ledger is in the state of the pipeline that ran it: the
    # group's, or in "parallel-isolated" the pipeline named after its task.
    runs_visits = "shop_visits" if decompose == "parallel-isolated" else "shop_tasks"
    ledger = shop_state(lake, runs_visits, tmp_path)["visits"]["intervals"]
    assert len(ledger) == 1
    # The incremental took the run's interval: no cursor stored.
    assert "incremental" not in shop_state(lake, "shop_tasks", tmp_path).get("orders", {})


def test_two_runs_load_the_rows_of_their_own_interval(folders: tuple[Path, Path]) -> None:
    lake, _ = folders
    dag = tasks_group_dag("serialize")
    # A later day first: the stored state plays no part in which rows a run loads.
    for day in (JAN_1 + DAY, JAN_1):
        assert run_day(dag, day).state == DagRunState.SUCCESS

    orders = rows(lake / "shop" / "orders")
    assert sorted(o["id"] for o in orders) == list(range(8))
    jan_1, jan_2 = JAN_1.date(), (JAN_1 + DAY).date()
    assert days_by_load(orders, "created_at") == [[jan_2], [jan_1]]
    visits = rows(lake / "shop" / "visits")
    assert len(visits) == 8
    assert days_by_load(visits, "at") == [[jan_2], [jan_1]]


def test_a_task_that_failed_is_retried_by_airflow_and_loads_once(folders: tuple[Path, Path]) -> None:
    """``orders`` fails on its first try: Airflow retries the task (``retries=1``), which
    starts again in a new working folder from the committed state and loads the day once."""
    lake, pipelines_dir = folders
    dag = tasks_group_dag("retried")
    run = run_day(dag, JAN_1)
    assert run.state == DagRunState.SUCCESS
    orders_task = run.get_task_instance("shop.shop_orders")
    assert orders_task.state == TaskInstanceState.SUCCESS
    assert orders_task.try_number == 2
    assert (pipelines_dir / "orders_tries").read_text() == "2"
    orders = rows(lake / "shop" / "orders")
    assert sorted(o["id"] for o in orders) == [0, 1, 2, 3]
    assert len({o["_sparkload_load_id"] for o in orders}) == 1
    assert len(rows(lake / "shop" / "visits")) == 4


def test_the_retry_policy_retries_the_run_inside_the_task(folders: tuple[Path, Path]) -> None:
    """With a tenacity policy that retries the extract step, the task itself runs the
    pipeline again and succeeds on its first Airflow try; its load info and trace are
    saved in the dataset."""
    lake, pipelines_dir = folders
    dag = tasks_group_dag("retry_policy")
    run = run_day(dag, JAN_1)
    assert run.state == DagRunState.SUCCESS
    assert run.get_task_instance("shop.shop_orders-visits").try_number == 1
    assert (pipelines_dir / "orders_tries").read_text() == "2"
    orders = rows(lake / "shop" / "orders")
    assert sorted(o["id"] for o in orders) == [0, 1, 2, 3]
    [load_id] = {o["_sparkload_load_id"] for o in orders}
    assert [info["load_id"] for info in rows(lake / "shop" / "_load_info")] == [load_id]
    [trace] = rows(lake / "shop" / "_trace")
    # The trace is that of the run whose rows loaded (not of the run saving the load info).
    assert (trace["pipeline_name"], trace["load_info__load_id"]) == ("shop_tasks", load_id)


def test_without_a_step_to_retry_the_task_fails(folders: tuple[Path, Path]) -> None:
    """dlt's default: only the load is retried inside the task; a failed extract fails it."""
    lake, pipelines_dir = folders
    dag = tasks_group_dag("not_retried")
    run = run_day(dag, JAN_1)
    assert run.state == DagRunState.FAILED
    assert (pipelines_dir / "orders_tries").read_text() == "1"
    assert not (lake / "shop" / "orders").exists()


def test_decompose_refuses_what_it_cannot_cut(folders: tuple[Path, Path]) -> None:
    lake, pipelines_dir = folders
    module = importlib.import_module("sparkload_tasks_group_dags")
    pipeline = sl.pipeline("refused", destination=sl.destinations.delta(lake), pipelines_dir=pipelines_dir)
    with module.DAG("sparkload_refusals", schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC")):
        group = module.PipelineTasksGroup("refused", local_data_folder=str(pipelines_dir))
        with pytest.raises(ValueError, match=r"decompose='serialize'\) cuts a source into tasks; got list"):
            group.add_run(pipeline, [{"a": 1}], decompose="serialize")
        with pytest.raises(ValueError, match="decompose='sideways'"):
            group.add_run(pipeline, [{"a": 1}], decompose="sideways")
        dev = sl.pipeline(
            "dev", destination=sl.destinations.delta(lake), pipelines_dir=pipelines_dir, dev_mode=True
        )
        with pytest.raises(ValueError, match="'dev' has dev_mode=True"):
            group.add_run(dev, module.shop(pipelines_dir / "tries", 0), decompose="parallel")
        with pytest.raises(TypeError, match="loader_file_format"):
            group.add_run(pipeline, [{"a": 1}], loader_file_format="parquet")
        with pytest.raises(ValueError, match="abort_task_if_any_job_failed=False"):
            module.PipelineTasksGroup("refused_2", abort_task_if_any_job_failed=False)


def test_a_transformer_runs_in_the_task_of_its_resource() -> None:
    from sparkload.helpers.decompose import components

    @sl.resource
    def users() -> Any:
        yield [{"id": 1}, {"id": 2}]

    @sl.transformer(data_from=users)
    def user_details(user: dict[str, Any]) -> Any:
        yield {"id": user["id"], "detail": "x"}

    @sl.resource
    def countries() -> Any:
        yield {"code": "PL"}

    @sl.source
    def crm() -> Any:
        return [users, countries, user_details]

    parts = components(crm())
    assert [list(part.selected_resources) for part in parts] == [["users", "user_details"], ["countries"]]


def test_importing_sparkload_imports_no_airflow() -> None:
    code = "import sys, sparkload; print(sorted(m for m in sys.modules if m.split('.')[0] == 'airflow'))"
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert imported.stdout == "[]\n"
