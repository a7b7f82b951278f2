"""Q1 with sparkload: a PostgreSQL table of N rows (bigint key, numeric, timestamptz, text,
jsonb) loaded with ``sql_table`` (pyarrow backend, chunks of 50,000 rows, merge on the
reflected key, incremental on ``updated_at``), then a second run after 1,000 rows changed,
which reads only those. The server is a throwaway one, as the tests start it.

Prints one JSON line: {"rows": N, "first": s, "second": s, "second_rows": n,
"peak_rss": bytes, "rss_engine_started": bytes}.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

import sqlalchemy as sa

import sparkload as sl
from sparkload.sources.sql_database import sql_table

# The tests' throwaway server (initdb, pg_ctl on a free port, stopped at the end).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from postgres_server import postgres_server  # noqa: E402

KIB = 1024  # ru_maxrss is in KiB on Linux
CHANGED = 1_000


def fill(engine: sa.Engine, rows: int) -> None:
    """The table, filled by the server itself (generate_series), so Python makes no row."""
    with engine.begin() as db:
        db.execute(
            sa.text(
                "CREATE TABLE orders (id bigint PRIMARY KEY, amount numeric(12, 2), "
                "updated_at timestamptz NOT NULL, note text, doc jsonb)"
            )
        )
        db.execute(
            sa.text(
                "INSERT INTO orders SELECT i, (i % 100000) / 100.0, "
                "timestamptz '2024-01-01' + i * interval '1 second', 'order ' || i, "
                "jsonb_build_object('i', i, 'tags', jsonb_build_array('a', 'b')) "
                "FROM generate_series(1, :rows) AS i"
            ),
            {"rows": rows},
        )


def main(work: Path, rows: int) -> None:
    with postgres_server() as url:
        engine = sa.create_engine(url)
        fill(engine, rows)
        pipeline = sl.pipeline(
            "bench_q1",
            destination=sl.destinations.delta(work / "lake"),
            pipelines_dir=work / "pipelines",
            dev_mode=True,
        )
        _ = pipeline.spark  # the engine's start-up is not part of a load
        started_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * KIB

        def orders() -> sl.Resource:
            table = sql_table(
                engine,
                table="orders",
                chunk_size=50_000,
                incremental=sl.sources.incremental("updated_at"),
            )
            return table.apply_hints(write_disposition="merge")

        started = time.perf_counter()
        first = pipeline.run(orders())
        first_seconds = time.perf_counter() - started
        assert first.row_counts == {"orders": rows}, first.row_counts
        with engine.begin() as db:
            db.execute(
                sa.text("UPDATE orders SET note = 'changed', updated_at = now() WHERE id <= :n"),
                {"n": CHANGED},
            )
        started = time.perf_counter()
        second = pipeline.run(orders())
        second_seconds = time.perf_counter() - started
        assert pipeline.table("orders").count() == rows
        engine.dispose()
    print(
        json.dumps(
            {
                "rows": rows,
                "first": first_seconds,
                "second": second_seconds,
                "second_rows": second.row_counts.get("orders", 0),
                "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * KIB,
                "rss_engine_started": started_rss,
            }
        )
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000)
