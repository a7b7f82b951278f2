"""A JVM Spark that sparkload starts against a standalone cluster's master (``spark://host:port``:
``spark=``, ``SPARKLOAD_SPARK_MASTER`` or ``[engine] master``).

Its executors run on other machines and cannot read this machine's disk, so the tables live
in a bucket, reached through Hadoop's S3A filesystem: the session gets ``hadoop-aws`` of the
Hadoop version PySpark ships (Ivy fetches it, with the AWS SDK it needs, beside delta-spark;
Spark hands every such jar to the executors) and ``fs.s3a.*`` settings made from the same AWS
variables and config the embedded engine reads (``engine/object_store.py``). ``s3://`` URLs
are given to S3A too, as on EMR and Databricks, so one destination URL serves every engine.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
from typing import Any

from sparkload.engine.jvm import jvm_session
from sparkload.engine.object_store import log_store_settings, s3_values
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


def is_cluster_master(url: str) -> bool:
    return bool(_CLUSTER_MASTER.match(url))


def s3a_session(master: str, settings: dict[str, str]) -> Any:
    """A classic SparkSession on ``master`` (a cluster's, or ``local[...]``: a JVM in this
    process loads into a bucket the same way), with Delta Lake and S3A."""
    hadoop = f"org.apache.hadoop:hadoop-aws:{hadoop_version()}"
    conf = {**s3a_settings(s3_values()), **log_store_settings(), **settings}
    return jvm_session(master, conf, packages=(hadoop,))


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
