"""Load a folder of CSV files that grows between runs: only new and rewritten files are read
(incremental by modification date), and the rows merge on their key. Runs offline."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import sparkload as sl
from sparkload.sources.filesystem import filesystem, read_csv


def orders(landing: Path) -> sl.Resource:
    files = filesystem(bucket_url=str(landing), file_glob="*.csv")
    files.apply_hints(incremental=sl.sources.incremental("modification_date"))
    reader = (files | read_csv(file_name_column="source_file")).with_name("orders")
    reader.apply_hints(write_disposition="merge", primary_key="id")
    return reader


def main() -> None:
    work = Path(os.environ.get("SPARKLOAD_EXAMPLE_DIR") or tempfile.mkdtemp())
    landing = work / "landing"
    landing.mkdir(parents=True, exist_ok=True)
    (landing / "2024-05-01.csv").write_text("id,amount\n1,9.5\n2,3.25\n")
    pipeline = sl.pipeline("files_csv", destination=sl.destinations.delta(work / "lake"))
    print(pipeline.run(orders(landing)))

    time.sleep(1.1)  # a later modification time for the new and the rewritten file
    (landing / "2024-05-02.csv").write_text("id,amount\n3,1.0\n")
    (landing / "2024-05-01.csv").write_text("id,amount\n1,10.0\n2,3.25\n")
    info = pipeline.run(orders(landing))
    print(info)
    print(pipeline.dataset().orders.df().sort_values("id"))


if __name__ == "__main__":
    main()
