"""Load the tables of an SQL database into Delta Lake: a small SQLite shop, made here.

Runs offline on the embedded engine. Run it twice: ``orders`` is loaded incrementally
(only rows changed since the last run are read; the query itself filters them) and
merged on its primary key, which is reflected from the database.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import sparkload as sl
from sparkload.sources.sql_database import sql_database

HERE = Path(__file__).resolve().parent
DATABASE = HERE / "_shop.db"


def make_shop() -> None:
    """A SQLite file with two tables."""
    with sqlite3.connect(DATABASE) as db:
        db.executescript(
            """
            CREATE TABLE IF NOT EXISTS customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS orders (
                id INTEGER PRIMARY KEY, customer_id INTEGER, total NUMERIC(10, 2),
                updated_at DATETIME NOT NULL
            );
            INSERT OR IGNORE INTO customers VALUES (1, 'Ada'), (2, 'Grace');
            INSERT OR IGNORE INTO orders VALUES
                (1, 1, 19.99, '2024-05-01 10:00:00'),
                (2, 2, 5.00, '2024-05-01 11:00:00');
            """
        )
        # Every run changes order 1, so the incremental has a row to read on the next.
        db.execute(
            "UPDATE orders SET total = total + 1, "
            "updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now') WHERE id = 1"
        )


def main() -> None:
    make_shop()
    source = sql_database(f"sqlite:///{DATABASE}", table_names=["customers", "orders"])
    source.resources["customers"].apply_hints(write_disposition="replace")
    source.resources["orders"].apply_hints(
        write_disposition="merge",
        incremental=sl.sources.incremental("updated_at"),
    )
    pipeline = sl.pipeline(
        "sql_shop",
        destination=sl.destinations.delta(HERE / "_lake"),
        pipelines_dir=HERE / "_pipelines",
    )
    print(pipeline.run(source))
    print(pipeline.dataset().orders.df())


if __name__ == "__main__":
    main()
