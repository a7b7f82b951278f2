"""One of two writers merging into the same tables at the same moment (run as a subprocess).

    python concurrent_merge_child.py <work dir> <destination> <writer> <first id> <rounds>

Round after round, for each table the test names: extract and normalize a delete-insert
merge of ids ``first id`` … ``first id + 99`` (each with a nested list), write
``<work>/ready/<round>-<writer>``, wait until the test writes ``<work>/go/<round>``, load,
and write the outcome to ``<work>/done/<round>-<writer>``: ``ok``, or the error's class and
message, then a line with how many commits lost a race (retried, or withdrawn and merged). Holding every
writer at the gate until both have prepared their package makes their loads start at the
same moment, so the commits race for real.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sparkload as sl

ROWS = 100


class Retries(logging.Handler):
    """Counts the commits that lost a race: retried after a conflict, or a create that
    landed after another writer's (the warnings of each)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.count += "commit conflict" in message or "created it at the same moment" in message


def tables(rounds: int) -> list[str]:
    """The table of each round: a fresh one per round, then one table again and again."""
    return [f"fresh_{r}" for r in range(rounds)] + ["existing"] * rounds


def items(writer: str, first: int, step: int, table: str) -> Any:
    @sl.resource(name=table, table_name=table, primary_key="id", write_disposition="merge")
    def rows() -> Iterator[dict[str, Any]]:
        for i in range(first, first + ROWS):
            yield {"id": i, "writer": writer, "step": step, "tags": [f"{writer}-{step}", f"id-{i}"]}

    return rows()


def outcome(error: BaseException | None) -> str:
    if error is None:
        return "ok"
    return f"{type(error).__module__}.{type(error).__name__}: {error}"


def wait_for(path: Path) -> None:
    while not path.exists():
        time.sleep(0.01)


def main() -> None:
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test asks a stuck writer where it is
    work, destination, writer = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    first, rounds = int(sys.argv[4]), int(sys.argv[5])
    pipeline = sl.pipeline(
        f"writer_{writer}",
        destination=sl.destinations.delta(destination),
        dataset_name="shared",
        pipelines_dir=os.fspath(work / "pipelines"),
    )
    retries = Retries()
    for module in ("sparkload.load.retry", "sparkload.load.creation"):
        logging.getLogger(module).addHandler(retries)
    for step, table in enumerate(tables(rounds)):
        pipeline.extract(items(writer, first, step, table))
        pipeline.normalize()
        (work / "ready" / f"{step}-{writer}").touch()
        wait_for(work / "go" / str(step))
        error: BaseException | None = None
        retries.count = 0
        try:
            pipeline.load()
        except Exception as exc:
            error = exc
            traceback.print_exc()
            pipeline.drop_pending_packages()  # the next round starts from a clean slate
        done = work / "done" / f"{step}-{writer}"
        done.with_suffix(".tmp").write_text(f"{outcome(error)}\n{retries.count}")
        done.with_suffix(".tmp").rename(done)


if __name__ == "__main__":
    main()
