"""A JVM Spark with Delta Lake that sparkload starts itself, for a master URL such as
``local[2]`` (``spark="local[2]"``, ``SPARKLOAD_SPARK_MASTER`` or ``[engine] master``).

The Delta jars come through ``delta.configure_spark_with_delta_pip`` (Ivy fetches them once
into ``~/.ivy2``), so it needs the ``spark`` extra: ``pyspark`` with ``delta-spark``. What is
missing is said before a JVM is started, not at the first write.

Ivy resolves those packages again at every start (a few seconds, even with every jar in its
cache), so the jar files one start resolved are remembered (``delta-jars.json`` in
sparkload's cache folder) and handed to the next start as ``spark.jars``, while they all
still exist.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from sparkload.engine.logs import quiet_jvm
from sparkload.exceptions import EngineError

logger = logging.getLogger(__name__)

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
    conf = {**DELTA_SESSION_CONF, **_local_defaults(master), **_python_workers(), **settings}
    for key, value in conf.items():
        builder = builder.config(key, value)
    wanted = _delta_packages(configure_spark_with_delta_pip, packages)
    jars = _resolved_jars(wanted)
    if jars is not None:
        builder = builder.config("spark.jars", ",".join(jars))
    else:
        builder = builder.config("spark.jars.packages", wanted)
    session = builder.getOrCreate()
    if jars is None:
        _remember_jars(wanted, session.sparkContext.getConf().get("spark.jars", ""))
    quiet_jvm(session)
    return session


def _python_workers() -> dict[str, str]:
    """Python workers (a Python UDF, a DataFrame made from local rows) run this interpreter,
    the one sparkload is installed in: Spark would otherwise start ``python3`` from PATH,
    another environment, or none. What the user chose (PYSPARK_PYTHON,
    PYSPARK_DRIVER_PYTHON) stands."""
    chosen = {
        "spark.pyspark.python": "PYSPARK_PYTHON",
        "spark.pyspark.driver.python": "PYSPARK_DRIVER_PYTHON",
    }
    return {key: sys.executable for key, variable in chosen.items() if not os.environ.get(variable)}


def _delta_packages(configure: Any, extra: tuple[str, ...] = ()) -> str:
    """The Maven coordinates delta-spark's own set-up asks Ivy for (its version's jars, and
    the ``extra`` packages), read from a builder of their own (the set-up accepts nothing
    else)."""
    from pyspark.sql import SparkSession

    return str(configure(SparkSession.Builder(), extra_packages=list(extra))._options["spark.jars.packages"])


def _jars_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sparkload" / "delta-jars.json"


def _resolved_jars(packages: str) -> list[str] | None:
    """The jar files an earlier start resolved for ``packages``, if every one still exists."""
    try:
        known = json.loads(_jars_cache().read_text())
    except (OSError, ValueError):
        return None
    jars = known.get(packages) if isinstance(known, dict) else None
    if not jars or not all(isinstance(jar, str) and Path(jar).is_file() for jar in jars):
        return None
    return list(jars)


def _remember_jars(packages: str, resolved: str) -> None:
    """Keep the local jar files Ivy resolved for ``packages`` (Spark lists them in
    ``spark.jars``); a cache that cannot be written only costs the next start the resolution."""
    jars = [
        unquote(urlparse(jar).path) if jar.startswith("file:") else jar for jar in resolved.split(",") if jar
    ]
    if not jars or not all(Path(jar).is_file() for jar in jars):
        return
    path = _jars_cache()
    try:
        known = json.loads(path.read_text()) if path.exists() else {}
        known = known if isinstance(known, dict) else {}
        known[packages] = jars
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(known, indent=2))
        temporary.replace(path)
    except (OSError, ValueError) as exc:
        logger.debug("the resolved Delta jars were not remembered in %s: %s", path, exc)


def _local_defaults(master: str) -> dict[str, str]:
    """On one machine, Spark's 200 shuffle partitions turn every small MERGE into 200 tasks;
    one or two per core are plenty, and as many partitions of a Delta snapshot as cores.
    With partitions that few, adaptive execution has nothing to coalesce, while it runs
    each stage after a shuffle as a job of its own: off, W1's loads run 17 and 33 jobs
    instead of 21 and 55 (docs/engines.md, "Tuning a JVM session"). The console progress
    bar would be written into the user's script output."""
    defaults = {"spark.ui.showConsoleProgress": "false"}
    if master.startswith("local"):
        cores = os.cpu_count() or 2
        defaults["spark.sql.shuffle.partitions"] = str(2 * cores)
        defaults["spark.databricks.delta.snapshotPartitions"] = str(cores)
        defaults["spark.sql.adaptive.enabled"] = "false"
    return defaults
