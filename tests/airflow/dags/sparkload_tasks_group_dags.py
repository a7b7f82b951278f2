"""DAGs made with ``PipelineTasksGroup``: daily DAGs whose run loads a two-resource source
(an incremental that takes the run's data interval and an interval resource) into
``SPARKLOAD_LAKE``, one per decompose mode, and three whose ``orders`` fails on its first
try (counted in a file under ``SPARKLOAD_PIPELINES_DIR``): retried by Airflow, retried by
the group's retry policy, not retried."""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pendulum
import tenacity
from airflow.sdk import DAG
from airflow.timetables.trigger import CronTriggerTimetable

import sparkload as sl
from sparkload.helpers.airflow import PipelineTasksGroup

START = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
EVERY = datetime.timedelta(hours=6)
LAST = START + datetime.timedelta(days=4)  # the stand-in API's data ends here


def every_6_hours(since: datetime.datetime, until: datetime.datetime) -> Iterator[datetime.datetime]:
    """The instants an event happened in [since, until], both ends included (as many APIs
    answer): the incremental and the window must clip the one at ``until``."""
    at = START
    while at <= min(until, LAST):
        if at >= since:
            yield at
        at += EVERY


def shop(tries_file: Path, failures: int) -> Any:
    @sl.resource(primary_key="id", write_disposition="merge")
    def orders(
        created_at: sl.sources.incremental[datetime.datetime] = sl.sources.incremental(  # noqa: B008
            "created_at", initial_value=START, allow_external_schedulers=True
        ),
    ) -> Iterator[dict[str, Any]]:
        tries = int(tries_file.read_text()) + 1 if tries_file.exists() else 1
        tries_file.write_text(str(tries))
        if tries <= failures:
            raise RuntimeError(f"the orders API is down (try {tries})")
        for at in every_6_hours(created_at.start_value, created_at.end_value):
            yield {"id": int((at - START) / EVERY), "created_at": at}

    @sl.resource(write_disposition={"disposition": "merge", "strategy": "time-range"})
    def visits(
        window: Any = sl.sources.intervals("at", start=START, cron="@daily"),  # noqa: B008 (dlt's way)
    ) -> Iterator[dict[str, Any]]:
        for at in every_6_hours(window.start, window.end):
            if at < window.end:
                yield {"at": at, "page": f"/p/{at.hour}"}

    @sl.source(name="shop")
    def source() -> Any:
        return [orders, visits]

    return source()


def tasks_group_dag(
    name: str,
    decompose: str,
    lake: Path,
    pipelines_dir: Path,
    *,
    failures: int = 0,
    group_arguments: dict[str, Any] | None = None,
    **task_arguments: Any,
) -> DAG:
    """A DAG whose group ``shop`` runs the source in ``decompose`` mode (``group_arguments``
    to the group, ``task_arguments`` to its tasks); the tasks' working folders under
    ``pipelines_dir``/``tasks``."""
    pipeline = sl.pipeline(
        "shop_tasks",
        destination=sl.destinations.delta(lake),
        dataset_name="shop",
        pipelines_dir=pipelines_dir,
    )
    with DAG(
        f"sparkload_tasks_group_{name}",
        schedule=CronTriggerTimetable("@daily", timezone="UTC", interval=datetime.timedelta(days=1)),
        start_date=pendulum.datetime(2024, 1, 2, tz="UTC"),
        catchup=False,
        max_active_runs=1,
    ) as dag:
        group = PipelineTasksGroup(
            "shop", local_data_folder=str(pipelines_dir / "tasks"), **(group_arguments or {})
        )
        group.add_run(
            pipeline,
            shop(pipelines_dir / "orders_tries", failures),
            decompose=decompose,  # type: ignore[arg-type]
            **task_arguments,
        )
    return dag


# Made when the tests set where they load (Airflow parses this folder at each dag.test).
if "SPARKLOAD_LAKE" in os.environ and "SPARKLOAD_PIPELINES_DIR" in os.environ:
    LAKE, PIPELINES = Path(os.environ["SPARKLOAD_LAKE"]), Path(os.environ["SPARKLOAD_PIPELINES_DIR"])
    dags = {mode: tasks_group_dag(mode, mode, LAKE, PIPELINES) for mode in ("none", "serialize", "parallel")}
    dags["parallel-isolated"] = tasks_group_dag("parallel_isolated", "parallel-isolated", LAKE, PIPELINES)
    dags["retried"] = tasks_group_dag(
        "retried", "serialize", LAKE, PIPELINES, failures=1, retries=1, retry_delay=datetime.timedelta(0)
    )
    dags["retry_policy"] = tasks_group_dag(
        "retry_policy",
        "none",
        LAKE,
        PIPELINES,
        failures=1,
        group_arguments={
            "retry_policy": tenacity.Retrying(stop=tenacity.stop_after_attempt(2), reraise=True),
            "retry_pipeline_steps": ("extract", "load"),
            "save_load_info": True,
            "save_trace_info": True,
        },
    )
    dags["not_retried"] = tasks_group_dag("not_retried", "none", LAKE, PIPELINES, failures=1)
