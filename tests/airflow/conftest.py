"""A real Apache Airflow for these tests: its home, metadata database and DAGs folder in a
temporary directory, made before anything imports Airflow."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

EXAMPLE_DAG = Path(__file__).resolve().parents[2] / "examples" / "airflow_dag.py"
RULE_DAGS = Path(__file__).resolve().parent / "dags" / "sparkload_rule_dags.py"
REST_API_DAG = Path(__file__).resolve().parent / "dags" / "sparkload_rest_api_dag.py"
TASKS_GROUP_DAGS = Path(__file__).resolve().parent / "dags" / "sparkload_tasks_group_dags.py"
HOME = Path(tempfile.mkdtemp(prefix="sparkload_airflow_"))
DAGS = HOME / "dags"
os.environ.update(
    {
        "AIRFLOW_HOME": str(HOME),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
    }
)


@pytest.fixture(scope="session")
def dags_folder() -> Path:
    """Airflow's DAGs folder holding the example DAG, the rule DAGs, the rest_api DAG and the
    tasks group's DAGs, with a migrated metadata database."""
    DAGS.mkdir(parents=True, exist_ok=True)
    for dag_file in (EXAMPLE_DAG, RULE_DAGS, REST_API_DAG, TASKS_GROUP_DAGS):
        shutil.copy(dag_file, DAGS / dag_file.name)
    sys.path.insert(0, str(DAGS))  # as Airflow does when it parses the folder
    subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True, capture_output=True)
    return DAGS
