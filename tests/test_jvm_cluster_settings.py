"""The S3A settings a JVM Spark on a cluster (``spark://``) gets, made from the same AWS
variables and config the embedded engine reads. The cluster itself: tests/standalone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparkload.engine.jvm_cluster import is_cluster_master, s3a_settings
from sparkload.engine.object_store import s3_values

S3A = "org.apache.hadoop.fs.s3a"
AWS_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_ENDPOINT_URL",
)


@pytest.fixture
def no_aws_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in (*AWS_VARIABLES, "AWS_ALLOW_HTTP"):
        monkeypatch.delenv(variable, raising=False)


def test_only_spark_urls_are_cluster_masters() -> None:
    assert is_cluster_master("spark://127.0.0.1:7077")
    assert not any(is_cluster_master(url) for url in ("local[2]", "sc://127.0.0.1:15002", "yarn"))


def test_the_aws_variables_become_s3a_settings_for_s3_and_s3a_urls(
    no_aws_variables: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000")

    assert s3a_settings(s3_values()) == {
        "spark.hadoop.fs.s3.impl": f"{S3A}.S3AFileSystem",
        "spark.hadoop.fs.s3a.aws.credentials.provider": f"{S3A}.SimpleAWSCredentialsProvider",
        "spark.hadoop.fs.s3a.access.key": "key",
        "spark.hadoop.fs.s3a.secret.key": "secret",
        "spark.hadoop.fs.s3a.endpoint.region": "eu-west-1",
        "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
        "spark.hadoop.fs.s3a.path.style.access": "true",
        "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
    }


def test_a_session_token_takes_the_temporary_credentials_provider(
    no_aws_variables: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(variable, "x")
    settings = s3a_settings(s3_values())
    assert settings["spark.hadoop.fs.s3a.aws.credentials.provider"].endswith(
        "TemporaryAWSCredentialsProvider"
    )
    assert settings["spark.hadoop.fs.s3a.session.token"] == "x"
    # No endpoint: AWS's own, by virtual-host addressing over TLS, as S3A defaults.
    assert not any("path.style" in key or "ssl" in key for key in settings)


def test_without_variables_the_settings_come_from_secrets_under_dlt_names(no_aws_variables: None) -> None:
    folder = Path(os.environ["SPARKLOAD_PROJECT_DIR"]) / ".sparkload"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "secrets.toml").write_text(
        "[destination.filesystem.credentials]\n"
        'aws_access_key_id = "from-secrets"\n'
        'aws_secret_access_key = "secret-from-secrets"\n'
        'region_name = "us-east-1"\n'
        'endpoint_url = "https://store.example:9000"\n'
    )
    settings = s3a_settings(s3_values())
    assert settings["spark.hadoop.fs.s3a.access.key"] == "from-secrets"
    assert settings["spark.hadoop.fs.s3a.secret.key"] == "secret-from-secrets"
    assert settings["spark.hadoop.fs.s3a.endpoint"] == "https://store.example:9000"
    assert settings["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "true"
    # Read only: this process's environment is left as it was.
    assert not any(variable in os.environ for variable in AWS_VARIABLES)
