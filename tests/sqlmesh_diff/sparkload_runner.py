"""The sparkload side of a case: the same schedule declared as a resource's time intervals,
run by real pipelines on the embedded engine, each window the resource is called with
recorded, run by run, in the form the oracle writes (half-open, naive UTC ISO texts)."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sparkload as sl

UTC = datetime.timezone.utc


def moment(text: str) -> datetime.datetime:
    """A case's naive UTC text as the aware datetime a pipeline run takes."""
    return datetime.datetime.fromisoformat(text).replace(tzinfo=UTC)


def _plain(value: datetime.datetime) -> str:
    return value.astimezone(UTC).replace(tzinfo=None).isoformat()


def run_case(case: dict[str, Any], workdir: Path) -> list[list[list[str]]] | dict[str, str]:
    calls: list[list[str]] = []

    def make() -> sl.Resource:
        declared = sl.sources.intervals(
            "ts",
            start=case["start"],
            cron=case["cron"],
            lookback=case.get("lookback", 0),
            batch_size=case.get("batch_size"),
            end=case.get("end"),
            allow_partials=bool(case.get("allow_partials")),
        )

        @sl.resource(name="events")
        def events(window: Any = declared) -> Iterator[dict[str, Any]]:
            calls.append([_plain(window.start), _plain(window.end)])
            yield from ()

        return events

    pipeline = sl.pipeline(
        f"sqlmesh_diff_{case['id']}",
        destination=sl.destinations.delta(workdir / "lake"),
        pipelines_dir=workdir / "pipelines",
    )
    restatement = case.get("restatement")
    ranged = case.get("run_range")
    result = []
    try:
        for index, execution_time in enumerate(case["runs"]):
            calls.clear()
            if restatement is not None and restatement["run"] == index:
                pipeline.run(
                    make(),
                    execution_time=moment(execution_time),
                    restate=["events"],
                    start=restatement["start"],
                    end=restatement["end"],
                )
            elif ranged is not None and ranged["run"] == index:
                pipeline.run(
                    make(), execution_time=moment(execution_time), start=ranged["start"], end=ranged["end"]
                )
            else:
                pipeline.run(make(), execution_time=moment(execution_time))
            result.append(sorted(calls))
    except Exception as exc:  # a refused case is a result to compare, not a crash
        return {"error": f"{type(exc).__name__}: {exc}"}
    return result
