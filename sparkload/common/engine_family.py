"""Which family of engine a session talks to, and what follows from it for files it writes.

Apache Spark (and Databricks) answer ``SELECT version()`` with the Spark version the
session reports; Sail answers with its own. The answer is asked once per session. The
capabilities that follow from it are named in ``engine/capabilities.py``; this layer holds
the one that every stage's Parquet writes need.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_lock = threading.Lock()
# id(session) → whether it is Apache Spark's (True) or Sail's (False).
_apache: dict[int, bool] = {}


def is_classic(spark: Any) -> bool:
    """Whether ``spark`` is a classic session, in this process's own JVM, rather than a
    Spark Connect client."""
    return "connect" not in type(spark).__module__


def is_apache_spark(spark: Any) -> bool:
    """Whether ``spark`` is a session of Apache Spark (classic, Connect or Databricks)."""
    with _lock:
        known = _apache.get(id(spark))
    if known is None and is_classic(spark):
        # A classic session runs in Apache Spark's JVM (Sail speaks Spark Connect only);
        # asking it would be a job of its own on that JVM.
        known = True
    if known is None:
        answer = str(spark.sql("SELECT version()").collect()[0][0])
        known = answer.split(" ")[0] == str(spark.version)
        with _lock:
            _apache[id(spark)] = known
    return known


def misreads_float_statistics(spark: SparkSession) -> bool:
    """Whether the engine misreads a file by its floating-point column statistics.

    Parquet and Delta statistics leave NaN out of a column's min and max, and Sail 0.7.2
    takes a column whose min equals its max for that constant: ``[1.5, NaN]`` reads as
    ``[1.5, 1.5]``, and a MERGE that rewrites the file stores what it read. Apache Spark reads
    the values. Where this is true, sparkload writes no such statistics.
    """
    return not is_apache_spark(spark)


def write_parquet(frame: DataFrame, path: str, mode: str) -> None:
    """Have the engine write ``frame`` as a Parquet folder at ``path`` (``mode``: overwrite or
    error), without column statistics where the engine would misread them. sparkload reads
    the files it stages whole, so they need none."""
    writer = frame.write.mode(mode)
    if misreads_float_statistics(frame.sparkSession):
        writer = writer.option("statistics_enabled", "none")
    writer.parquet(path)
