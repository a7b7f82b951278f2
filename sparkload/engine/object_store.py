"""S3 settings for this process: the standard AWS variables, completed from sparkload's
config and secrets under dlt's names.

The embedded Sail server runs in this process and builds its S3 client from the standard
AWS variables when it first touches a bucket; pyarrow's S3 filesystem (manifests, markers,
listings) reads the same variables. So the one place both look is this process's
environment: a value from ``[destination.filesystem.credentials]`` (dlt's names) is put
there when the variable is unset, and ``AWS_ALLOW_HTTP=true`` is added for an ``http://``
endpoint (Sail refuses one without it; pyarrow needs nothing). A variable the user set is
never changed: where config says otherwise (also a value put there from config that
config no longer holds: the engine may have built its client from it), the pipeline is
refused, naming both settings.

Two writers in one bucket: no file lock orders their commits there, so a Delta commit must
be exclusive by itself. Sail's Delta writer writes ``_delta_log/<version>.json`` with
``PutMode::Create``, which its S3 client sends as a PUT with ``If-None-Match: *`` under
``AWS_CONDITIONAL_PUT=etag``: the store refuses a version another writer took (412) and
the writer retries on the next one. sparkload sets that value when the variable is unset
(it is the client's default today; set here so that the engine sparkload starts does not
depend on its client's defaults), keeps another the user set (``dynamo:<table>``, a lock
table, is exclusive too), and refuses ``disabled``, with which Sail cannot commit to S3.

On a JVM Spark (delta-spark), a Delta commit to S3 goes through the log store of the URL's
scheme (``spark.delta.logStore.s3a.impl``). Its default, ``S3SingleDriverLogStore``, keeps
two writers apart only inside one driver: two processes can each write the same version and
one commit is lost. So a bucket destination on a JVM session is refused unless the log store
is chosen: in the session's settings (``io.delta.storage.S3DynamoDBLogStore`` for several
writers), or by stating in sparkload's config (``[engine] delta_log_store``) that one driver
at a time writes (``io.delta.storage.S3SingleDriverLogStore``); a JVM that sparkload starts
gets that value as its log store settings. Apache Spark's own Spark Connect server commits
with delta-spark too, so a session to it is refused the same way, its server's settings
read through the session's configuration (which carries them).

No value read here reaches a log line or an exception: messages name settings only.
"""

from __future__ import annotations

import logging
import os
import threading
import urllib.parse
from collections.abc import Callable

from sparkload.common.engine_family import is_apache_spark
from sparkload.config import config, secrets
from sparkload.exceptions import ConfigValueError

logger = logging.getLogger(__name__)

S3_SCHEMES = frozenset({"s3", "s3a"})
CREDENTIALS_SECTION = "destination.filesystem.credentials"
# dlt's name under CREDENTIALS_SECTION → the standard variable, and whether it is a secret.
_SETTINGS: tuple[tuple[str, str, bool], ...] = (
    ("aws_access_key_id", "AWS_ACCESS_KEY_ID", False),
    ("aws_secret_access_key", "AWS_SECRET_ACCESS_KEY", True),
    ("aws_session_token", "AWS_SESSION_TOKEN", True),
    ("region_name", "AWS_REGION", False),
    ("endpoint_url", "AWS_ENDPOINT_URL", False),
)
ALLOW_HTTP = "AWS_ALLOW_HTTP"
CONDITIONAL_PUT = "AWS_CONDITIONAL_PUT"
EXCLUSIVE_COMMITS = "etag"  # If-None-Match: * on a commit's PUT
_lock = threading.Lock()


def is_s3_url(uri: str) -> bool:
    return urllib.parse.urlsplit(uri).scheme.lower() in S3_SCHEMES


def apply_s3_settings(uri: str) -> None:
    """Make this process's S3 settings complete for ``uri`` (nothing for another scheme)."""
    if not is_s3_url(uri):
        return
    with _lock:
        for name, variable, secret in _SETTINGS:
            key = f"{CREDENTIALS_SECTION}.{name}"
            value = (secrets if secret else config).get(key)
            if value is None:
                continue
            text = str(value)
            current = os.environ.get(variable)
            if current is None:
                _set(variable, text)
            elif current != text:
                raise ConfigValueError(
                    f"{key} and the environment variable {variable} are both set, to different "
                    f"values: the engine and pyarrow read one set of S3 settings per process "
                    f"(the environment's); set one of the two",
                    key=key,
                )
        endpoint = os.environ.get("AWS_ENDPOINT_URL", "")
        if endpoint.lower().startswith("http://") and ALLOW_HTTP not in os.environ:
            _set(ALLOW_HTTP, "true")
        _require_exclusive_commits()


def _require_exclusive_commits() -> None:
    conditional_put = os.environ.get(CONDITIONAL_PUT)
    if conditional_put is None:
        _set(CONDITIONAL_PUT, EXCLUSIVE_COMMITS)
    elif conditional_put.strip().lower() == "disabled":
        raise ConfigValueError(
            f"the environment variable {CONDITIONAL_PUT} is 'disabled': the Sail engine (embedded, "
            f"or a Sail server started with this environment) writes each Delta commit to S3 "
            f"as a conditional PUT, so that a second writer cannot overwrite it, and fails "
            f"without one; unset {CONDITIONAL_PUT} or set it to '{EXCLUSIVE_COMMITS}'",
            key=CONDITIONAL_PUT,
        )


def _set(variable: str, value: str) -> None:
    os.environ[variable] = value
    logger.debug("set %s for this process's S3 clients", variable)


DELTA_LOG_STORE_CONFIG = "engine.delta_log_store"
SINGLE_DRIVER_LOG_STORE = "io.delta.storage.S3SingleDriverLogStore"
MULTI_WRITER_LOG_STORE = "io.delta.storage.S3DynamoDBLogStore"


def log_store_key(scheme: str) -> str:
    return f"spark.delta.logStore.{scheme}.impl"


def log_store_settings() -> dict[str, str]:
    """The log store settings for a JVM that sparkload starts: those of ``[engine]
    delta_log_store`` for ``s3://`` and ``s3a://`` (nothing when it is unset)."""
    chosen = config.get(DELTA_LOG_STORE_CONFIG)
    if chosen is None:
        return {}
    return {log_store_key(scheme): str(chosen) for scheme in sorted(S3_SCHEMES)}


def refuse_unsafe_jvm_commits(spark: object, uri: str) -> None:
    """Refuse a bucket ``uri`` on a delta-spark session (classic JVM, or Apache Spark's
    Spark Connect server) whose Delta commits to it are not known to be exclusive (see the
    module's text); Sail's sessions and other URLs pass."""
    if not is_s3_url(uri):
        return
    found = _delta_spark_settings(spark)
    if found is None:
        return
    engine, started, setting = found
    scheme = urllib.parse.urlsplit(uri).scheme.lower()
    key = log_store_key(scheme)
    # What delta-spark reads: the session's Spark settings, fixed when its JVM started.
    if setting(key) or setting("spark.delta.logStore.class"):
        return
    chosen = config.get(DELTA_LOG_STORE_CONFIG)
    if chosen is not None and str(chosen) == SINGLE_DRIVER_LOG_STORE:
        return  # the default store, which one driver at a time may use
    if chosen is not None:
        raise ConfigValueError(
            f"{DELTA_LOG_STORE_CONFIG} is set, but {started} without "
            f"{key}: a log store is chosen when the JVM starts; start it with "
            f"{key} set (sparkload sets it on a session it starts)",
            key=DELTA_LOG_STORE_CONFIG,
        )
    raise ConfigValueError(
        f"{engine} commits to {scheme}:// through its default log store, "
        f"{SINGLE_DRIVER_LOG_STORE}, which keeps two writers apart only inside one driver: two "
        f"processes loading this destination could each take a commit's version and one commit "
        f"would be lost. Choose the log store: {key}={MULTI_WRITER_LOG_STORE} (with its DynamoDB "
        f"table, package io.delta:delta-storage-s3-dynamodb) in the session's settings for several "
        f'writers, or [engine] delta_log_store = "{SINGLE_DRIVER_LOG_STORE}" in sparkload\'s config '
        f"(ENGINE__DELTA_LOG_STORE) to state that one driver at a time writes it",
        key=key,
    )


def _delta_spark_settings(spark: object) -> tuple[str, str, Callable[[str], str | None]] | None:
    """For a session whose Delta commits delta-spark makes: the engine's name, what started
    its JVM, and a reader of the Spark settings it started with; None for another engine
    (Sail, whose commits are exclusive by a conditional PUT)."""
    if "connect" in type(spark).__module__:
        if not is_apache_spark(spark):
            return None
        # The server's static settings, which its sessions' configuration carries.
        conf = spark.conf  # type: ignore[attr-defined]
        return (
            "Apache Spark's Spark Connect server (delta-spark)",
            "the Spark Connect server was started",
            lambda key: conf.get(key, None),
        )
    try:
        started_with = spark.sparkContext.getConf()  # type: ignore[attr-defined]
    except Exception:
        return None  # not a classic session: nothing of delta-spark's to ask
    return "the JVM Spark engine (delta-spark)", "this JVM Spark session was started", started_with.get


def s3_values() -> dict[str, str]:
    """The standard AWS variables that are set, completed from config as
    ``apply_s3_settings`` completes them (without setting anything): for an engine that
    takes S3 settings of its own rather than this process's environment (a JVM's
    ``fs.s3a.*``). Never logged: secrets are among them."""
    values: dict[str, str] = {}
    for name, variable, secret in _SETTINGS:
        value = os.environ.get(variable)
        if value is None:
            configured = (secrets if secret else config).get(f"{CREDENTIALS_SECTION}.{name}")
            value = None if configured is None else str(configured)
        if value is not None:
            values[variable] = value
    return values
