"""dlt's own `dlt init` templates, as the installed dlt wheel ships them, run by dlt and by
sparkload; the tables each loaded compared.

Each template is read from dlt's virtualenv (``dlt/_workspace/_templates/`` of the installed
package, never a copy in this project) and run as a user runs it: ``python <template>.py`` in
a working directory of its own, where ``.dlt/`` holds the settings it asks for. dlt runs
the text as shipped (its duckdb databases land in that directory); sparkload runs it with
only its import lines changed (``import dlt`` -> ``import sparkload as dlt``,
``from dlt.X import`` -> ``from sparkload.X import``) and its ``destination=`` given
``dlt.destinations.delta(<folder>)``. What the templates read is served locally under the
addresses their text names: the web APIs by a proxy (``api_proxy``); the ``samples`` bucket
of the filesystem template is a folder of made-up files (``samples``) in each working
directory; the public Rfam MySQL database is a local MariaDB (``rfam_server``), both sides
then running inside a network namespace where Rfam's host name is 127.0.0.1 (``netns``; the
tests of those templates are skipped where no namespace can be made: not root, no unshare).

Compared as tests/dlt_diff compares (its ``differences``): the same tables by
``<dataset>.<table>``, each with the same rows, system columns by meaning (``_dlt_*`` against
``_sparkload_*``). A template that fails on sparkload's side today is listed in
``SPARKLOAD_FAILS`` and runs as a strict expected failure, so it fails once it passes. A
template that cannot run with only its imports and destination changed is listed in
``NOT_RUN`` with the reason (docs/dlt.md says the same).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deltalake
import pytest
from api_data import routes
from api_proxy import ApiProxy, running_proxy
from diff_values import canonical
from netns import Namespace, Unavailable
from rfam_server import rfam_namespace
from samples import copy_samples, write_samples
from test_dlt_diff import differences

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
DLT_ENV = ROOT / "benchmarks" / "dlt_env.py"
DLT_DIFF = HERE.parent / "dlt_diff"
# One template's two runs together (dlt's, sparkload's with its engine) take seconds.
RUN_TIMEOUT = 240

# Where each template lives under the installed package's dlt/_workspace/_templates/.
SINGLE_FILE = "_single_file_templates"
CORE_SOURCE = "_core_source_templates"
TEMPLATES: dict[str, str] = {
    "arrow": SINGLE_FILE,
    "context_rest_api": SINGLE_FILE,
    "dataframe": SINGLE_FILE,
    "debug": SINGLE_FILE,
    "fruitshop": SINGLE_FILE,
    "github_api": SINGLE_FILE,
    "requests": SINGLE_FILE,
    "rest_api": CORE_SOURCE,
    "filesystem": CORE_SOURCE,
    "sql_database": CORE_SOURCE,
    "default": SINGLE_FILE,
}

# Templates that connect to Rfam's public MySQL host by name: both sides run inside a
# namespace where that name is a local MariaDB (rfam_server).
READS_RFAM = {"sql_database", "default"}

# Templates not run: each needs more than its imports and destination changed, or dlt itself
# cannot run it (no oracle): template -> why. Every template dlt 1.31 ships is run.
NOT_RUN: dict[str, str] = {}

# Columns whose values are the run's own (time.time() in a map): compared by kind only.
VOLATILE_COLUMNS: dict[str, set[str]] = {
    "arrow": {"updated_at"},
    "dataframe": {"updated_at"},
    # A file's URL names the working directory its side ran in.
    "filesystem": {"file_url"},
}

# Templates whose script loads no table under dlt either: context_rest_api's resources are
# TODOs; sql_database's __main__ (load_standalone_table_resource) only extracts.
LOADS_NOTHING = {"context_rest_api", "sql_database"}

# Templates sparkload cannot run today, with the failure: each runs as xfail(strict=True).
SPARKLOAD_FAILS: dict[str, str] = {
    "filesystem": (
        "sparkload's FileItemDict has no fsspec filesystem (the template's first step calls "
        "item.fsspec.download) and sparkload's readers no read_csv_duckdb (its last two steps)"
    ),
}

# A dataset of a dev_mode pipeline is named with the time it was made: dlt's
# `<dataset>_YYYYMMDDhhmmss`, sparkload's with microseconds too.
DEV_MODE_DATASET = re.compile(r"^(\w+?)_\d{14,20}(\.)")

# The import lines the port changes, and nothing else of the text but the destination.
IMPORT_DLT = re.compile(r"^(\s*)import dlt$", re.MULTILINE)
FROM_DLT = re.compile(r"^(\s*)from dlt((?:\.\w+)+) import ", re.MULTILINE)
DESTINATION = re.compile(r"""destination=(["'])[a-z_]+\1""")


# Any import of dlt the two patterns above left: the port would still run dlt's code.
ANY_DLT_IMPORT = re.compile(r"^\s*(import|from) dlt\b", re.MULTILINE)


def port_to_sparkload(text: str, delta_root: Path) -> str:
    """The template as a dlt user ports it: imports, and the destination."""
    text = IMPORT_DLT.sub(r"\1import sparkload as dlt", text)
    text = FROM_DLT.sub(r"\1from sparkload\2 import ", text)
    assert not ANY_DLT_IMPORT.search(text), f"an import of dlt the port does not change: {text}"
    text, destinations = DESTINATION.subn(f"destination=dlt.destinations.delta({str(delta_root)!r})", text)
    assert destinations, "the template names no destination= to change"
    return text


def _module_from(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def dlt_python() -> str:
    python: str = _module_from(DLT_ENV).python_with_dlt(duckdb=True, templates=True)
    return python


@pytest.fixture(scope="session")
def templates_dir(dlt_python: str) -> Path:
    """dlt/_workspace/_templates of the dlt installed in dlt's virtualenv."""
    package = subprocess.run(
        [dlt_python, "-c", "import os, dlt; print(os.path.dirname(dlt.__file__))"],
        check=True,
        capture_output=True,
        text=True,
        env=_without_python_paths(dict(os.environ)),
    ).stdout.strip()
    return Path(package) / "_workspace" / "_templates"


@pytest.fixture(scope="session")
def api_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiProxy]:
    with running_proxy(routes(), tmp_path_factory.mktemp("api_proxy")) as proxy:
        yield proxy


@pytest.fixture(scope="session")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files the filesystem template reads, written once and copied to each side."""
    return write_samples(tmp_path_factory.mktemp("samples"))


@pytest.fixture(scope="session")
def rfam() -> Iterator[Namespace]:
    """The namespace where Rfam's host is a local MariaDB; skipped where none can be made."""
    try:
        with rfam_namespace() as namespace:
            yield namespace
    except Unavailable as reason:
        pytest.skip(f"no local Rfam database: {reason}")


@pytest.fixture(scope="session")
def rfam_api_proxy(rfam: Namespace, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiProxy]:
    """The proxy for the templates that run inside the Rfam namespace: it listens in there
    (skipped where this process cannot join the namespace's network)."""
    try:
        with running_proxy(routes(), tmp_path_factory.mktemp("rfam_api_proxy"), rfam.inside) as proxy:
            yield proxy
    except Unavailable as reason:
        pytest.skip(f"no API proxy inside the Rfam namespace: {reason}")


def _without_python_paths(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def _work_dir(folder: Path, template: str, samples: Path) -> Path:
    """The user's project folder: the template's settings in .dlt/, as `dlt init` leaves them."""
    folder.mkdir(parents=True)
    settings = folder / ".dlt"
    settings.mkdir()
    (settings / "config.toml").write_text('[runtime]\nlog_level = "WARNING"\ndlthub_telemetry = false\n')
    # The secrets a template asks for without a default (context_rest_api's bearer token).
    if template == "context_rest_api":
        (settings / "secrets.toml").write_text('[sources.rest_api_source]\naccess_token = "t0ken"\n')
    # The bucket the filesystem template reads: a folder beside it.
    if template == "filesystem":
        copy_samples(samples, folder)
    return folder


def _start(
    python: str, script: Path, env: dict[str, str], namespace: Namespace | None
) -> subprocess.Popen[str]:
    command = [python, script.name]
    return subprocess.Popen(
        namespace.command(command, cwd=script.parent) if namespace else command,
        cwd=script.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


class SparkloadDiffers(AssertionError):
    """Sparkload's run failed or loaded other tables than dlt's: what SPARKLOAD_FAILS expects.
    A failure of dlt's side (the oracle) or of the harness is any other error, never expected."""


def _finish(process: subprocess.Popen[str], side: str, failure: type[AssertionError]) -> str:
    try:
        output, _ = process.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        raise failure(f"{side}'s run did not end in {RUN_TIMEOUT}s:\n{output[-4000:]}") from None
    if process.returncode != 0:
        raise failure(f"{side}'s run failed (exit {process.returncode}):\n{output[-4000:]}")
    return output


def sparkload_tables(delta_root: Path) -> dict[str, dict[str, Any]]:
    """Every user table under the Delta root, ``<dataset>.<table>``, read by delta-rs."""
    tables = {}
    for log in sorted(delta_root.glob("*/*/_delta_log")):
        table_dir = log.parent
        dataset, table = table_dir.parent.name, table_dir.name
        if table.startswith("_sparkload"):
            continue
        arrow = deltalake.DeltaTable(str(table_dir)).to_pyarrow_table()
        rows = [{k: canonical(v) for k, v in row.items()} for row in arrow.to_pylist()]
        tables[f"{dataset}.{table}"] = {"columns": arrow.column_names, "rows": rows}
    return tables


def _kinds_only(tables: dict[str, dict[str, Any]], columns: set[str]) -> None:
    """The run's own values (a time taken during the run) replaced by their kind."""
    for content in tables.values():
        for row in content["rows"]:
            for column in columns & row.keys():
                row[column] = {"$volatile": type(row[column]).__name__}


def _dev_mode_free(tables: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The tables with a dev_mode dataset's time suffix taken out of their names."""
    return {DEV_MODE_DATASET.sub(r"\1_<dev_mode>\2", name): content for name, content in tables.items()}


def _params() -> list[Any]:
    params = []
    for name in TEMPLATES:
        marks = []
        if name in SPARKLOAD_FAILS:
            marks.append(
                pytest.mark.xfail(strict=True, raises=SparkloadDiffers, reason=SPARKLOAD_FAILS[name])
            )
        params.append(pytest.param(name, id=name, marks=marks))
    return params


@pytest.mark.timeout(2 * RUN_TIMEOUT + 120)
@pytest.mark.parametrize("template", _params())
def test_template_loads_what_dlt_loads(
    template: str,
    tmp_path: Path,
    dlt_python: str,
    templates_dir: Path,
    samples: Path,
    request: pytest.FixtureRequest,
) -> None:
    namespace: Namespace | None = None
    if template in READS_RFAM:
        namespace = request.getfixturevalue("rfam")
        api_proxy: ApiProxy = request.getfixturevalue("rfam_api_proxy")
    else:
        api_proxy = request.getfixturevalue("api_proxy")
    source = templates_dir / TEMPLATES[template] / f"{template}_pipeline.py"
    text = source.read_text()
    env = {**_without_python_paths(dict(os.environ)), **api_proxy.environment()}
    # Neither side reads the developer's settings or the test run's: each has a home of its
    # own, and the working directory is the project folder (.dlt/, .sparkload/), as a user's is.
    env.pop("SPARKLOAD_PROJECT_DIR", None)
    dlt_env = {
        **env,
        "DLT_DATA_DIR": str(tmp_path / "dlt_home"),
        "RUNTIME__DLTHUB_TELEMETRY": "false",
        "PYTHONPATH": str(DLT_DIFF),
    }
    sparkload_env = {
        **env,
        "SPARKLOAD_GLOBAL_DIR": str(tmp_path / "sparkload_home"),
        "SPARKLOAD_PIPELINES_DIR": str(tmp_path / "sparkload_home" / "pipelines"),
        # The checkout under test, not whatever sparkload the interpreter has installed.
        "PYTHONPATH": str(ROOT),
    }
    dlt_script = _work_dir(tmp_path / "dlt", template, samples) / source.name
    dlt_script.write_text(text)
    delta_root = tmp_path / "delta"
    sparkload_script = _work_dir(tmp_path / "sparkload", template, samples) / source.name
    sparkload_script.write_text(port_to_sparkload(text, delta_root))

    dlt_run = _start(dlt_python, dlt_script, dlt_env, namespace)
    sparkload_run = _start(sys.executable, sparkload_script, sparkload_env, namespace)
    sparkload_failure = None
    try:
        # dlt is the oracle: a template it cannot run is a defect of this test, whatever
        # sparkload did.
        _finish(dlt_run, "dlt", AssertionError)
        _finish(sparkload_run, "sparkload", SparkloadDiffers)
    except SparkloadDiffers as failure:
        sparkload_failure = failure
    finally:
        for process in (dlt_run, sparkload_run):
            if process.poll() is None:
                process.kill()
                process.wait()

    dumped = tmp_path / "dlt_tables.json"
    subprocess.run(
        [dlt_python, str(HERE / "dump_duckdb.py"), str(dlt_script.parent), str(dumped)],
        check=True,
        env=dlt_env,
    )
    theirs = json.loads(dumped.read_text())
    # A template that loads data and nothing came: the proxy did not answer what it asked.
    assert bool(theirs) != (template in LOADS_NOTHING), f"dlt loaded {sorted(theirs)}"
    if sparkload_failure is not None:
        raise sparkload_failure
    theirs, ours = _dev_mode_free(theirs), _dev_mode_free(sparkload_tables(delta_root))
    for tables in (theirs, ours):
        _kinds_only(tables, VOLATILE_COLUMNS.get(template, set()))
    found = differences(
        {"tables": theirs, "records": [], "row_counts": []},
        {"tables": ours, "records": [], "row_counts": []},
        compare_row_counts=False,
    )
    if found:
        raise SparkloadDiffers(f"{template}: sparkload differs from dlt 1.31\n" + "\n".join(found))


def test_every_shipped_template_is_run_or_said_why_not(templates_dir: Path) -> None:
    """A template a new dlt release adds (or renames) is run here or listed with the reason."""
    shipped = {
        path.name.removesuffix("_pipeline.py") for path in templates_dir.glob("_*_templates/*_pipeline.py")
    }
    assert shipped == set(TEMPLATES) | set(NOT_RUN)
    assert not set(TEMPLATES) & set(NOT_RUN)
    for listed in (SPARKLOAD_FAILS, VOLATILE_COLUMNS, LOADS_NOTHING):
        assert set(listed) <= set(TEMPLATES)
