"""B1's request count: W1's second load in a bucket of moto's S3 server, each request the
server logged charged to the sparkload call (or Spark action) that was running.

    python benchmarks/b1_requests.py WORK_FOLDER [FIRST_LOAD_ROWS]

Prints the second load's time and request count, then per call the requests it made (its
own, not those of the calls it made) by kind. Commits run one at a time so that each
request has one caller. A diagnosis, not a timing: the wrappers cost time themselves.

The script's folder comes first on the import path, not the working directory: to count
the code of a checkout other than the installed one, run it with ``PYTHONPATH=<checkout>``
(the last line names the sparkload imported).
"""

from __future__ import annotations

import collections
import functools
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import s3_server
from lake import lake
from workload import FIRST_LOAD, SECOND_LOAD, SECOND_START, w1_rows

_COLOURS = re.compile(r"\x1b\[[0-9;]*m")
_REQUEST = re.compile(r'"(?P<method>[A-Z]+) (?P<path>\S+) HTTP/')
_IDS = re.compile(r"[0-9a-f]{8,}|[0-9.]{10,}")


def _kind(method: str, path: str) -> str:
    """A request with the ids taken out of its path: a LIST's prefix, a log or data file."""
    if "list-type=2" in path:
        prefix = re.search(r"prefix=([^&]*)", path)
        return f"LIST {_IDS.sub('*', prefix.group(1) if prefix else '')}"
    if path.split("?")[0].endswith(".parquet"):
        return f"{method} data file of {path.split('/lake/')[-1].split('/')[1]}"
    return f"{method} {_IDS.sub('*', path.split('?')[0].split('/lake/')[-1])}"


class Ledger:
    """Requests in the server's log, charged to the innermost open call."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.seen = 0
        self.stack: list[str] = []
        self.charged: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        self.calls: collections.Counter[str] = collections.Counter()

    def settle(self) -> None:
        requests = []
        for line in self.log.read_text(errors="replace").splitlines():
            match = _REQUEST.search(_COLOURS.sub("", line))
            if match:
                requests.append(_kind(match["method"], match["path"]))
        caller = self.stack[-1] if self.stack else "(between calls)"
        self.charged[caller].update(requests[self.seen :])
        self.seen = len(requests)

    def around(self, name: str, call: Callable[[], Any]) -> Any:
        self.settle()
        self.stack.append(name)
        self.calls[name] += 1
        try:
            return call()
        finally:
            self.settle()
            self.stack.pop()

    def wrap(self, owner: Any, attribute: str) -> None:
        function = getattr(owner, attribute)
        name = f"{getattr(owner, '__name__', owner)}.{attribute}"

        @functools.wraps(function)
        def counted(*args: Any, **kwargs: Any) -> Any:
            return self.around(name, lambda: function(*args, **kwargs))

        setattr(owner, attribute, counted)

    def wrap_at_caller(self, owner: Any, attribute: str, is_property: bool = False) -> None:
        """A Spark action or property, charged to the sparkload line that used it."""
        original = getattr(owner, attribute)

        def counted(frame_self: Any, *args: Any, **kwargs: Any) -> Any:
            frame = sys._getframe(1)
            while frame.f_back is not None and "pyspark" in frame.f_code.co_filename:
                frame = frame.f_back
            where = f"{frame.f_code.co_filename.split('sparkload/')[-1]}:{frame.f_lineno}"
            if is_property:
                return self.around(f"{attribute} @ {where}", lambda: original.fget(frame_self))
            return self.around(f"{attribute} @ {where}", lambda: original(frame_self, *args, **kwargs))

        setattr(owner, attribute, property(counted) if is_property else counted)

    def clear(self) -> None:
        self.settle()
        self.charged.clear()
        self.calls.clear()


def _instrument(ledger: Ledger) -> None:
    from pyspark.sql.connect import dataframe, readwriter

    from sparkload.load import creation, dataset, loader, merge_family, range_rewrite, table
    from sparkload.pipeline import pipeline, state

    loader._CONCURRENT_COMMITS = 1  # one caller per request
    for owner, attribute in [
        (pipeline.Pipeline, "normalize"),
        (pipeline.Pipeline, "load"),
        (pipeline.Pipeline, "_synced_state"),
        (pipeline.Pipeline, "_claim"),
        (state, "write_destination"),
        (state, "read_destination"),
        (loader.Loader, "_check_destructive_changes"),
        (loader.Loader, "_check_keys_and_history"),
        (loader.Loader, "_prepare_family"),
        (loader.Loader, "_already_committed"),
        (loader.Loader, "_commit"),
        (merge_family, "_replace_bounded"),
        (range_rewrite, "rewrite"),
        (table.DeltaTable, "exists"),
        (table.DeltaTable, "schema"),
        (table.PathTable, "schema"),
        (dataset.PathDataset, "table_names"),
        (creation, "lost_create_race"),
    ]:
        if attribute in vars(owner) or not isinstance(owner, type):
            ledger.wrap(owner, attribute)
    ledger.wrap_at_caller(dataframe.DataFrame, "schema", is_property=True)
    for action in ("collect", "count"):
        ledger.wrap_at_caller(dataframe.DataFrame, action)
    ledger.wrap_at_caller(readwriter.DataFrameWriter, "save")


def main(work: Path, first_rows: int) -> None:
    work.mkdir(parents=True, exist_ok=True)
    with s3_server.bucket(work) as settings:
        os.environ.update(settings)
        import sparkload as sl

        ledger = Ledger(work / "moto_server.log")
        _instrument(ledger)
        pipeline = sl.pipeline(
            "bench_w1",
            destination=sl.destinations.delta(lake(work)),
            pipelines_dir=work / "pipelines",
            dev_mode=True,
        )
        pipeline.run(sl.resource(w1_rows(first_rows), name="w1", primary_key="id", write_disposition="merge"))
        ledger.clear()
        started = time.perf_counter()
        second = w1_rows(SECOND_LOAD, SECOND_START)
        pipeline.run(sl.resource(second, name="w1", primary_key="id", write_disposition="merge"))
        elapsed = time.perf_counter() - started
        ledger.settle()
    total = sum(sum(kinds.values()) for kinds in ledger.charged.values())
    print(f"W1 second load in the bucket: {elapsed:.2f}s, {total} requests")
    for name, kinds in sorted(ledger.charged.items(), key=lambda item: -sum(item[1].values())):
        print(f"{sum(kinds.values()):5d}  {name}  ({ledger.calls.get(name, 0)} calls)")
        for kind, count in kinds.most_common():
            print(f"         {count:5d}  {kind}")
    print(f"sparkload imported from {sl.__file__}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else FIRST_LOAD)
