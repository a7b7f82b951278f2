"""A daily DAG whose task loads issues with the declarative ``rest_api`` source from the API
at ``SPARKLOAD_REST_API_URL``. The endpoint's incremental opts in to the scheduler
(``allow_external_schedulers=True``), so each run sends its data interval to the API as the
endpoint's ``start_param`` and ``end_param`` (``since`` and ``until``)."""

from __future__ import annotations

import datetime
import os
from typing import Any

import pendulum
from airflow.sdk import DAG, task
from airflow.timetables.trigger import CronTriggerTimetable

import sparkload as sl
from sparkload.sources.rest_api import rest_api_source


def github_issues_config(base_url: str) -> dict[str, Any]:
    return {
        "client": {"base_url": base_url, "paginator": "single_page"},
        "resource_defaults": {"primary_key": "id", "write_disposition": "merge"},
        "resources": [
            {
                "name": "issues",
                "endpoint": {
                    "path": "issues",
                    "incremental": {
                        "start_param": "since",
                        "end_param": "until",
                        "cursor_path": "updated_at",
                        # A str initial_value: the interval's ends are sent as ISO-8601 text.
                        "initial_value": "2024-01-01T00:00:00Z",
                        "allow_external_schedulers": True,
                    },
                },
            }
        ],
    }


def load_issues() -> None:
    pipeline = sl.pipeline(
        "airflow_rest_api",
        destination=sl.destinations.delta(os.environ["SPARKLOAD_LAKE"]),
        dataset_name="github",
        pipelines_dir=os.environ["SPARKLOAD_PIPELINES_DIR"],
    )
    pipeline.run(rest_api_source(github_issues_config(os.environ["SPARKLOAD_REST_API_URL"]), name="github"))


with DAG(
    "sparkload_rest_api_issues",
    schedule=CronTriggerTimetable("@daily", timezone="UTC", interval=datetime.timedelta(days=1)),
    start_date=pendulum.datetime(2024, 1, 1, tz="UTC"),
    catchup=False,
) as dag:
    task(load_issues)()
