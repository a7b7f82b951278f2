"""The JVM test session's start settings (tests/jvm_class_archive.py): child processes' JVMs
get the first JIT tier only, a JVM started under ``optimizing_jit`` keeps the optimizing
tier and the archive, and the setting is back as it was after."""

from __future__ import annotations

import os
from pathlib import Path

import jvm_class_archive as archive_settings
import pytest


def test_options_name_the_archive_only_where_it_was_dumped(tmp_path: Path) -> None:
    missing = tmp_path / "none.jsa"
    assert archive_settings.jdk_options(missing).split() == [
        archive_settings.FIRST_TIER_ONLY,
        archive_settings.QUIET,
    ]
    dumped = tmp_path / "classes.jsa"
    dumped.write_bytes(b"")
    assert archive_settings.jdk_options(dumped).split()[0] == f"-XX:SharedArchiveFile={dumped.resolve()}"


def test_a_long_lived_jvm_keeps_the_optimizing_tier_and_the_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dumped = tmp_path / "classes.jsa"
    dumped.write_bytes(b"")
    for_children = archive_settings.jdk_options(dumped)
    monkeypatch.setenv("JDK_JAVA_OPTIONS", for_children)
    with archive_settings.optimizing_jit():
        inside = os.environ["JDK_JAVA_OPTIONS"].split()
    assert archive_settings.FIRST_TIER_ONLY not in inside
    assert f"-XX:SharedArchiveFile={dumped.resolve()}" in inside
    assert os.environ["JDK_JAVA_OPTIONS"] == for_children


def test_without_the_settings_nothing_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JDK_JAVA_OPTIONS", raising=False)
    with archive_settings.optimizing_jit():
        assert "JDK_JAVA_OPTIONS" not in os.environ
    assert "JDK_JAVA_OPTIONS" not in os.environ
