"""Parallelized resources beside the others: the parallelized ones run in threads of their
own while the others run one after the other in the calling thread. (A failure on either
side: tests/test_extract_api.py.)"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from conftest import delta_rows

import sparkload as sl


def test_other_resources_run_in_the_calling_thread_while_parallelized_ones_run(
    pipeline: sl.Pipeline,
) -> None:
    parallel_started = threading.Event()
    serial_done = threading.Event()

    @sl.resource(name="parallel", parallelized=True)
    def parallel() -> Iterator[dict[str, Any]]:
        yield {"thread": threading.current_thread().name}
        parallel_started.set()
        if not serial_done.wait(timeout=10):
            raise RuntimeError("the other resources did not run while this one was running")

    @sl.resource(name="serial")
    def serial() -> Iterator[dict[str, Any]]:
        if not parallel_started.wait(timeout=10):
            raise RuntimeError("the parallelized resource did not start")
        yield {"thread": threading.current_thread().name}
        serial_done.set()

    caller = threading.current_thread().name
    info = pipeline.run([parallel, serial])

    assert info.row_counts == {"parallel": 1, "serial": 1}
    assert [row["thread"] for row in delta_rows(pipeline, "serial")] == [caller]
    assert [row["thread"] for row in delta_rows(pipeline, "parallel")] != [caller]
