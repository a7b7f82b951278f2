"""An Apache Airflow DAG that loads one day of shop events per run with sparkload.

The incremental cursor opts in to the scheduler (``allow_external_schedulers=True``): inside
an Airflow task its range is the run's data interval, ``[data_interval_start,
data_interval_end)``, and the cursor stored in the dataset is not used. With ``catchup=True``
Airflow backfills every day since ``start_date``, each run loading exactly its own day;
clearing a run and running it again merges the same rows by ``id``, so it duplicates nothing.
Outside Airflow (``python examples/airflow_dag.py --no-airflow``) the same resource loads
incrementally from the stored cursor, as usual.

Put this file in Airflow's DAGs folder (Airflow 3). The Delta tables go to ``SPARKLOAD_LAKE``
(default: ``examples/_lake``); the pipeline's working files to ``SPARKLOAD_PIPELINES_DIR``
(default: ``examples/_pipelines``); an empty working directory is fine, as on a fresh worker.
"""

from __future__ import annotations

import datetime
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sparkload as sl

HERE = Path(__file__).resolve().parent
START = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
EVENT_EVERY = datetime.timedelta(hours=6)


def shop_events(since: datetime.datetime, until: datetime.datetime | None) -> Iterator[dict[str, Any]]:
    """Stands in for an API that returns the events created between two instants, both ends
    included (as many APIs do); the incremental drops the one at ``until``, so the event at a
    day's boundary lands in exactly one day."""
    until = until or datetime.datetime.now(datetime.timezone.utc)
    n = max(0, -((START - since) // EVENT_EVERY))  # the first event at or after ``since``
    while START + n * EVENT_EVERY <= until:
        created_at = START + n * EVENT_EVERY
        yield {"id": n, "kind": ("view", "cart", "order")[n % 3], "amount": n * 1.5, "created_at": created_at}
        n += 1


@sl.resource(primary_key="id", write_disposition="merge")
def events(
    created_at: sl.sources.incremental[datetime.datetime] = sl.sources.incremental(  # noqa: B008
        "created_at", initial_value=START, allow_external_schedulers=True
    ),
) -> Iterator[dict[str, Any]]:
    yield from shop_events(created_at.start_value, created_at.end_value)


def load_events() -> dict[str, Any]:
    """The task: one pipeline run. Returns what it loaded (an XCom in Airflow)."""
    pipeline = sl.pipeline(
        "airflow_events",
        destination=sl.destinations.delta(os.environ.get("SPARKLOAD_LAKE", str(HERE / "_lake"))),
        dataset_name="shop",
        pipelines_dir=os.environ.get("SPARKLOAD_PIPELINES_DIR", str(HERE / "_pipelines")),
    )
    info = pipeline.run(events())
    print(info)
    return {"load_id": info.load_id, "rows": info.row_counts.get("events", 0)}


if "--no-airflow" not in sys.argv:
    import pendulum
    from airflow.sdk import DAG, task
    from airflow.timetables.trigger import CronTriggerTimetable

    with DAG(
        "sparkload_shop_events",
        # A run at every midnight, its data interval being the day that just ended.
        schedule=CronTriggerTimetable("@daily", timezone="UTC", interval=datetime.timedelta(days=1)),
        # Three days to try it out: the runs at midnight of Jan 2, 3 and 4 load Jan 1, 2
        # and 3. Without end_date the DAG goes on loading one day after another.
        start_date=pendulum.datetime(2024, 1, 2, tz="UTC"),
        end_date=pendulum.datetime(2024, 1, 4, tz="UTC"),
        catchup=True,
        max_active_runs=1,  # runs of one pipeline must not overlap
        tags=["sparkload"],
    ) as dag:
        task(load_events)()

if __name__ == "__main__":
    if "--no-airflow" in sys.argv:
        load_events()
    else:
        dag.test()  # one run for the latest complete day, in this process
