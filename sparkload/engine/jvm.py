"""A JVM Spark with Delta Lake that sparkload starts itself, for a master URL such as
``local[2]`` (``spark="local[2]"``, ``SPARKLOAD_SPARK_MASTER`` or ``[engine] master``).

The Delta jars come through ``delta.configure_spark_with_delta_pip`` (Ivy fetches them once
into ``~/.ivy2``), so it needs the ``spark`` extra: ``pyspark`` with ``delta-spark``. What is
missing is said before a JVM is started, not at the first write.
"""

from __future__ import annotations

import importlib.util
import os
import re
from typing import Any

from sparkload.engine.logs import quiet_jvm
from sparkload.exceptions import EngineError

# Master URLs Spark itself takes; anything else is a typo or a Spark Connect URL.
_MASTER = re.compile(
    r"^(local(\[(\d+|\*)(,\d+)?\])?|local-cluster\[.*\]|spark://.+|yarn|k8s://.+|mesos://.+)$"
)

DELTA_SESSION_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}

HOW_TO_GET_DELTA = (
    "install the 'spark' extra (pip install 'sparkload[spark]': pyspark with delta-spark) and let "
    "sparkload start the JVM (spark='local[2]' or SPARKLOAD_SPARK_MASTER), or build your session with "
    "delta.configure_spark_with_delta_pip(builder) and the two Delta settings spark.sql.extensions="
    "io.delta.sql.DeltaSparkSessionExtension and spark.sql.catalog.spark_catalog="
    "org.apache.spark.sql.delta.catalog.DeltaCatalog; on Databricks, Delta Lake is built in"
)


def is_master_url(text: str) -> bool:
    return bool(_MASTER.match(text))


def jvm_session(master: str, settings: dict[str, str], packages: tuple[str, ...] = ()) -> Any:
    """A classic SparkSession on ``master`` with Delta Lake (and the Maven ``packages``)."""
    if importlib.util.find_spec("pyspark") is None or importlib.util.find_spec("pyspark.core") is None:
        raise EngineError(
            f"a JVM Spark ({master}) needs PySpark with its JVM part, which is not installed "
            "(pyspark-client, the embedded engine's client, has none): pip install 'sparkload[spark]'"
        )
    if importlib.util.find_spec("delta") is None:
        raise EngineError(
            f"a JVM Spark ({master}) needs Delta Lake, which is not installed: {HOW_TO_GET_DELTA}"
        )
    from delta import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName("sparkload")
    for key, value in {**DELTA_SESSION_CONF, **_local_defaults(master), **settings}.items():
        builder = builder.config(key, value)
    session = configure_spark_with_delta_pip(builder, extra_packages=list(packages)).getOrCreate()
    quiet_jvm(session)
    return session


def _local_defaults(master: str) -> dict[str, str]:
    """On one machine, Spark's 200 shuffle partitions turn every small MERGE into 200 tasks;
    one or two per core are plenty. The console progress bar would be written into the
    user's script output."""
    defaults = {"spark.ui.showConsoleProgress": "false"}
    if master.startswith("local"):
        cores = os.cpu_count() or 2
        defaults["spark.sql.shuffle.partitions"] = str(2 * cores)
        defaults["spark.databricks.delta.snapshotPartitions"] = str(cores)
    return defaults
