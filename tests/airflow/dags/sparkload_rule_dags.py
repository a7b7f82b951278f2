"""DAGs for the data-interval rules: one triggered by hand only (its data interval is empty:
start == end == the logical date) and one daily DAG without an end date (a run can be asked
for a day that has not ended yet). Their task records the range each incremental got,
in the cursor's type, as a row of the table ``ranges``."""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterator
from typing import Any

import pendulum
from airflow.sdk import DAG, task
from airflow.timetables.trigger import CronTriggerTimetable

import sparkload as sl


@sl.resource(write_disposition="append")
def ranges(
    at: sl.sources.incremental[datetime.datetime] = sl.sources.incremental(  # noqa: B008
        "at", allow_external_schedulers=True, on_cursor_value_missing="include"
    ),
    epoch: sl.sources.incremental[int] = sl.sources.incremental(  # noqa: B008
        "epoch", allow_external_schedulers=True, on_cursor_value_missing="include"
    ),
) -> Iterator[dict[str, Any]]:
    # No cursor values in the row, so both incrementals let it through.
    yield {
        "start": at.start_value,
        "end": at.end_value,
        "epoch_start": epoch.start_value,
        "epoch_end": epoch.end_value,
    }


def record_ranges() -> None:
    pipeline = sl.pipeline(
        "airflow_rules",
        destination=sl.destinations.delta(os.environ["SPARKLOAD_LAKE"]),
        dataset_name="rules",
        pipelines_dir=os.environ["SPARKLOAD_PIPELINES_DIR"],
    )
    pipeline.run(ranges())


with DAG(
    "sparkload_manual_runs", schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC")
) as manual:
    task(record_ranges)()

with DAG(
    "sparkload_daily_open_ended",
    schedule=CronTriggerTimetable("@daily", timezone="UTC", interval=datetime.timedelta(days=1)),
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
) as daily:
    task(record_ranges)()
