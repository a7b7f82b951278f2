"""Helpers that fit sparkload into other tools. Each tool's module imports that tool, so
``import sparkload`` imports none of them: ``sparkload.helpers.airflow`` needs Apache
Airflow, ``sparkload.helpers.decompose`` nothing beyond sparkload."""
