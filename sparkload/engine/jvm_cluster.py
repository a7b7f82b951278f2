"""A JVM Spark that sparkload starts against a standalone cluster's master (``spark://host:port``:
``spark=``, ``SPARKLOAD_SPARK_MASTER`` or ``[engine] master``).

Its executors run on other machines and cannot read this machine's disk, so the tables live
in a bucket, reached through Hadoop's S3A filesystem: the session gets ``hadoop-aws`` of the
Hadoop version PySpark ships (Ivy fetches it, with the AWS SDK it needs, beside delta-spark;
Spark hands every such jar to the executors) and ``fs.s3a.*`` settings made from the same AWS
variables and config the embedded engine reads (``engine/object_store.py``). ``s3://`` URLs
are given to S3A too, as on EMR and Databricks, so one destination URL serves every engine.

The session lives as long as the process and serves every pipeline after the first, also
one whose AWS variables were set (or changed) after the JVM started: a JVM never sees its
process's later environment. So before a pipeline touches a bucket, the session's S3A
settings are made those of the variables as they are then (``follow_s3_settings``), and the
bucket's S3A filesystem, which Hadoop caches per bucket with the client it first built, is
reopened if it was opened under other settings.
"""

from __future__ import annotations

import dataclasses
import glob
import importlib.util
import os
import re
import threading
import urllib.parse
import weakref
from typing import Any

from sparkload.engine.jvm import jvm_session
from sparkload.engine.object_store import is_s3_url, log_store_settings, s3_values
from sparkload.exceptions import EngineError

_CLUSTER_MASTER = re.compile(r"^spark://.+$")
# The jar whose name carries the Hadoop version of PySpark's own jars.
_HADOOP_CLIENT = re.compile(r"hadoop-client-api-(\d+\.\d+\.\d+)\.jar$")
# The standard AWS variable → the S3A setting it becomes (under spark.hadoop.).
_S3A = {
    "AWS_ACCESS_KEY_ID": "fs.s3a.access.key",
    "AWS_SECRET_ACCESS_KEY": "fs.s3a.secret.key",
    "AWS_SESSION_TOKEN": "fs.s3a.session.token",
    "AWS_REGION": "fs.s3a.endpoint.region",
    "AWS_ENDPOINT_URL": "fs.s3a.endpoint",
}
_HADOOP_PREFIX = "spark.hadoop."


@dataclasses.dataclass
class _S3aState:
    """The S3A settings a session of sparkload's started with and holds now, and for each
    bucket (``scheme://bucket``) seen since the settings its cached filesystem has."""

    started_with: dict[str, str]
    settings: dict[str, str]
    opened_under: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)


# Sessions s3a_session started: their S3A settings are sparkload's to keep current.
_s3a_states: weakref.WeakKeyDictionary[Any, _S3aState] = weakref.WeakKeyDictionary()
_s3a_lock = threading.Lock()


def is_cluster_master(url: str) -> bool:
    return bool(_CLUSTER_MASTER.match(url))


def s3a_session(master: str, settings: dict[str, str]) -> Any:
    """A classic SparkSession on ``master`` (a cluster's, or ``local[...]``: a JVM in this
    process loads into a bucket the same way), with Delta Lake and S3A."""
    hadoop = f"org.apache.hadoop:hadoop-aws:{hadoop_version()}"
    s3a = s3a_settings(s3_values())
    conf = {**s3a, **log_store_settings(), **settings}
    session = jvm_session(master, conf, packages=(hadoop,))
    with _s3a_lock:
        _s3a_states[session] = _S3aState(s3a, s3a)
    return session


def follow_s3_settings(spark: Any, uri: str) -> None:
    """Give a session ``s3a_session`` started the S3A settings of the AWS variables (and
    config) as they are now, before it touches the bucket of ``uri``; the bucket's cached
    filesystem, if opened under other settings, is closed so that the next use opens it
    anew. A session sparkload did not start keeps the S3A settings its owner gave it."""
    if not is_s3_url(uri):
        return
    with _s3a_lock:
        state = _s3a_states.get(spark)
        if state is None:
            return
        wanted = s3a_settings(s3_values())
        if wanted != state.settings:
            _set_hadoop_settings(spark, state.settings, wanted)
            state.settings = wanted
        parts = urllib.parse.urlsplit(uri)
        bucket = f"{parts.scheme.lower()}://{parts.netloc}"
        # A bucket not yet seen here was opened, if at all, under the settings of the start.
        opened_under = state.opened_under.setdefault(bucket, state.started_with)
        if opened_under != wanted:
            _close_cached_filesystem(spark, bucket)
            state.opened_under[bucket] = wanted


def _set_hadoop_settings(spark: Any, before: dict[str, str], wanted: dict[str, str]) -> None:
    """Replace the S3A settings ``before`` with ``wanted`` in the context's Hadoop
    configuration, the one every read and write (Delta's too) builds its own from."""
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    for key in before.keys() - wanted.keys():
        hadoop.unset(key.removeprefix(_HADOOP_PREFIX))
    for key, value in wanted.items():
        hadoop.set(key.removeprefix(_HADOOP_PREFIX), value)


def _close_cached_filesystem(spark: Any, bucket: str) -> None:
    """Close the filesystem Hadoop's cache holds for ``bucket`` (closing drops it from the
    cache), with the S3 client it built from the settings of its first use."""
    jvm = spark.sparkContext._jvm
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI(bucket), hadoop).close()


def hadoop_version() -> str:
    """The Hadoop version of PySpark's jars: hadoop-aws must match it exactly."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        raise EngineError(
            "a JVM Spark on a cluster needs PySpark with its jars: pip install 'sparkload[spark]'"
        )
    jars = os.path.join(os.path.dirname(spec.origin), "jars")
    for jar in glob.glob(os.path.join(jars, "hadoop-client-api-*.jar")):
        found = _HADOOP_CLIENT.search(jar)
        if found:
            return found.group(1)
    raise EngineError(
        f"found no hadoop-client-api jar in {jars}, so not the Hadoop version for hadoop-aws: "
        "install pyspark (not pyspark-client): pip install 'sparkload[spark]'"
    )


def s3a_settings(values: dict[str, str]) -> dict[str, str]:
    """Session settings that point S3A (for ``s3a://`` and ``s3://``) at ``values``, the
    standard AWS variables: keys, region and endpoint; an endpoint of a server of one's own
    (MinIO, a test server) is addressed by path, and one over ``http://`` without TLS."""
    settings = {
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        # The keys are given here, not looked up along AWS's provider chain.
        **(
            {"spark.hadoop.fs.s3a.aws.credentials.provider": _key_provider(values)}
            if "AWS_ACCESS_KEY_ID" in values
            else {}
        ),
    }
    for variable, name in _S3A.items():
        if variable in values:
            settings[f"spark.hadoop.{name}"] = values[variable]
    endpoint = values.get("AWS_ENDPOINT_URL")
    if endpoint is not None:
        settings["spark.hadoop.fs.s3a.path.style.access"] = "true"
        plain_http = endpoint.lower().startswith("http://")
        settings["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(not plain_http).lower()
    return settings


def _key_provider(values: dict[str, str]) -> str:
    if "AWS_SESSION_TOKEN" in values:
        return "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
    return "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
