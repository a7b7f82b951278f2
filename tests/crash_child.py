"""One scheduled run of a pipeline, for the fault-injection test (run as a subprocess).

    python crash_child.py <work dir> <run number>[,<run number>...] [<kill point>]

The source is what an API would serve on day <run number>: everything up to that day, so
repeating a run loads nothing new. Several run numbers run one after the other in this one
process, as a scheduler that keeps its process between runs would (one engine start for all).
Every kind of table is in it: an append table with an incremental cursor and nested rows, a
delete-insert merge with nested rows, a replace, an scd2 dimension and an append table paged
by hand through resource state.

A kill point makes the process SIGKILL itself at one stage boundary of the run:
``extract`` (after extract), ``normalize:N`` (right after the N-th table of the package
is normalized beside the data, before the package is complete), ``staged`` (the normalized
package is complete beside the data, the extracted one not yet deleted), ``normalize``
(after normalize), ``commit:N`` (right after the N-th Delta commit this process makes,
before the package records it), ``before_state`` / ``after_state`` (around the state
commit).
"""

from __future__ import annotations

import datetime
import itertools
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

import sparkload as sl
from sparkload.common.package import NORMALIZE_MANIFEST, LoadPackage
from sparkload.load import loader as loader_module
from sparkload.pipeline import pipeline as pipeline_module
from sparkload.pipeline import run_step
from sparkload.pipeline import state as state_store

DAY0 = datetime.datetime(2024, 3, 1, tzinfo=datetime.timezone.utc)
EVENTS_PER_DAY = 120


def die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def after(owner: Any, name: str, when: Callable[..., bool] = lambda *a, **k: True) -> None:
    """SIGKILL this process right after ``owner.name`` returns (if ``when`` holds)."""
    original = getattr(owner, name)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if when(*args, **kwargs):
            die()
        return result

    setattr(owner, name, wrapped)


def before(owner: Any, name: str) -> None:
    original = getattr(owner, name)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        die()
        return original(*args, **kwargs)

    setattr(owner, name, wrapped)


def arm(point: str) -> None:
    if point == "extract":
        after(run_step, "extract_batch")  # each batch of a run, as run() extracts it
    elif point == "staged":
        after(LoadPackage, "write", lambda _self, name, _data: name == NORMALIZE_MANIFEST)
    elif point == "normalize":
        after(pipeline_module.Pipeline, "normalize")
    elif point.startswith("normalize:"):
        # Tables normalize side by side; the first N to end have their files beside the
        # data, the package's normalize.json is not written yet.
        from sparkload.normalize.normalizer import TableNormalizer

        nth, ended = int(point.split(":")[1]), itertools.count(1)

        def nth_table(*_: Any) -> bool:
            return next(ended) == nth  # one step under the GIL: threads cannot double-count

        after(TableNormalizer, "normalize", nth_table)
    elif point.startswith("commit:"):
        countdown = [int(point.split(":")[1])]

        def nth(*_: Any) -> bool:
            countdown[0] -= 1
            return countdown[0] == 0

        after(loader_module, "with_commit_retry", nth)
    elif point == "before_state":
        before(state_store, "write_destination")
    elif point == "after_state":
        after(state_store, "write_destination")
    elif point:
        raise SystemExit(f"unknown kill point {point!r}")


def day_source(day: int) -> Any:
    @sl.resource(table_name="events", write_disposition="append")
    def events(
        ts: Any = sl.incremental("ts", initial_value=DAY0),  # noqa: B008 (how dlt declares it)
    ) -> Iterator[dict[str, Any]]:
        for i in range(day * EVENTS_PER_DAY):
            # Two events share each timestamp, so the cursor's boundary rows need dedup.
            moment = DAY0 + datetime.timedelta(minutes=12 * (i // 2))
            yield {"id": i, "ts": moment, "tags": [f"t{i % 3}", f"u{i % 5}"][: 1 + i % 2]}

    @sl.resource(primary_key="id", write_disposition="merge")
    def users() -> Iterator[dict[str, Any]]:
        for i in range(40 + 10 * day):
            level = day if i % 4 == 0 else 1
            roles = [f"r{j}" for j in range(i % 3 + level % 2)]
            yield {"id": i, "name": f"user-{i}-v{level}", "roles": roles}

    @sl.resource(write_disposition="replace")
    def snapshot() -> Iterator[dict[str, Any]]:
        yield [{"sku": s, "stock": (s * 7 + day) % 11} for s in range(25)]

    @sl.resource(primary_key="id", write_disposition={"disposition": "merge", "strategy": "scd2"})
    def dim() -> Iterator[dict[str, Any]]:
        for i in range(30):
            yield {"id": i, "tier": "gold" if (i + day) % 5 == 0 else "basic"}

    @sl.resource(write_disposition="append")
    def pages() -> Iterator[dict[str, Any]]:
        state = sl.current.resource_state()
        for page in range(state.get("next_page", 0), day * 2):
            yield [{"page": page, "row": r} for r in range(5)]
            state["next_page"] = page + 1

    @sl.source
    def api() -> Any:
        return events, users, snapshot, dim, pages

    return api()


def pipeline_in(work: str) -> Any:
    return sl.pipeline(
        "crashy",
        destination=sl.destinations.delta(os.path.join(work, "lake")),
        dataset_name="data",
        pipelines_dir=os.path.join(work, "pipelines"),
    )


def run_days(pipeline: Any, days: list[int]) -> None:
    """The scheduled runs of ``days``, one after the other; also what the test process runs
    itself where a run needs no kill (on the JVM, to spare a JVM start)."""
    for day in days:
        pipeline.run(day_source(day), execution_time=DAY0 + datetime.timedelta(days=day))


def main() -> None:
    work, days = sys.argv[1], [int(day) for day in sys.argv[2].split(",")]
    point = sys.argv[3] if len(sys.argv) > 3 else ""
    pipeline = pipeline_in(work)
    arm(point)
    print("STARTED", flush=True)
    run_days(pipeline, days)
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
