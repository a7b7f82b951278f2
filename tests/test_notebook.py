"""examples/quickstart.ipynb, executed as Jupyter runs it: a real IPython kernel (ipykernel)
driven by nbclient, on this virtualenv's Python, in a temporary working directory so the
tables it writes land nowhere in the repository. Its outputs are checked cell by cell, and
the Delta table it wrote is read back with delta-rs."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deltalake
import ipykernel.kernelspec
import nbformat
import pytest
from html_reading import HtmlPage, read_html
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "quickstart.ipynb"
KERNEL = "sparkload-test"


@pytest.fixture
def kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[KernelManager]:
    """A kernel of this Python (``sys.executable``), from a kernelspec written into a temporary
    prefix: whatever kernels the machine has installed (or none) play no part, and Jupyter's
    and IPython's own files (connection files, history, profiles) go to the tmp dir too.
    Shut down after the test: nbclient leaves a kernel manager it was given running, and the
    kernel holds an engine of its own."""
    for variable, folder in (
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("JUPYTER_DATA_DIR", "data"),
        ("JUPYTER_CONFIG_DIR", "config"),
        ("IPYTHONDIR", "ipython"),
    ):
        (tmp_path / "jupyter" / folder).mkdir(parents=True)
        monkeypatch.setenv(variable, str(tmp_path / "jupyter" / folder))
    prefix = tmp_path / "jupyter" / "prefix"
    ipykernel.kernelspec.install(kernel_name=KERNEL, prefix=str(prefix))
    specs = KernelSpecManager(kernel_dirs=[str(prefix / "share" / "jupyter" / "kernels")])
    assert specs.get_kernel_spec(KERNEL).argv[0] == sys.executable
    manager = KernelManager(kernel_name=KERNEL, kernel_spec_manager=specs)
    yield manager
    if manager.has_kernel:
        manager.shutdown_kernel(now=True)


def test_the_stored_notebook_has_no_outputs() -> None:
    """Stored clean, so a change to it is a change to its code and text only."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source


def test_the_quickstart_notebook_runs_and_shows_its_loads_and_tables(
    kernel: KernelManager, tmp_path: Path
) -> None:
    workdir = tmp_path / "notebook"
    workdir.mkdir()
    notebook = nbformat.read(NOTEBOOK, as_version=4)

    # Raises CellExecutionError, with the cell and its traceback, if any cell fails.
    NotebookClient(
        notebook, km=kernel, timeout=300, startup_timeout=120, resources={"metadata": {"path": str(workdir)}}
    ).execute()

    outputs = {tag: cell.outputs for cell in notebook.cells for tag in cell.metadata.get("tags", [])}
    errors = [o for cell in notebook.cells for o in cell.get("outputs", []) if o.output_type == "error"]
    assert errors == []

    first = _html(outputs["first-run"])
    # Its text form (a terminal's IPython, a text-only front end) is the short summary.
    (result,) = [o for o in outputs["first-run"] if o.output_type == "execute_result"]
    assert result.data["text/plain"].startswith("Pipeline quickstart load ")
    assert "StepTiming(" not in result.data["text/plain"]
    assert first.tables[0].named()["pipeline"] == "quickstart"
    assert first.table("Tables").rows == [
        ["table", "rows", "disposition", "Delta version"],
        ["users", "3", "merge", "0"],
        ["users__languages", "6", "merge", "0"],
    ]
    assert _frame_rows(outputs["read-back"]) == [
        ["1", "Ada", "London"],
        ["2", "Grace", "New York"],
        ["3", "Linus", "Helsinki"],
    ]
    assert _frame_rows(outputs["row-counts"]) == [["users", "3"], ["users__languages", "6"]]
    second = _html(outputs["second-run"])
    assert second.table("Tables").column("rows") == ["2", "3"]
    assert second.table("Tables").column("Delta version") == ["1", "1"]
    # The merge updated Ada and added Margaret: one row per id.
    assert _frame_rows(outputs["after-merge"]) == [
        ["1", "Ada", "Paris"],
        ["2", "Grace", "New York"],
        ["3", "Linus", "Helsinki"],
        ["4", "Margaret", "Boston"],
    ]
    trace = _html(outputs["trace"])
    assert trace.table("Steps").column("step") == ["extract", "normalize", "load"]
    assert trace.table("Tables").column("rows") == ["2", "3"]

    # Each step of the longer load drew a widget bar (tqdm.auto with ipywidgets installed),
    # and the run's table shows its rows.
    bars = [o for o in outputs["progress"] if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert len(bars) == 3
    # Beside each widget the notebook keeps its text, what a viewer that draws no widget
    # shows (GitHub, nbconvert's HTML): the final counts, not the bar as it started.
    texts = [bar["data"]["text/plain"] for bar in bars]
    assert texts[0].startswith("extract: 100%") and "200k/200k" in texts[0], texts[0]
    assert [text.split(":")[0] for text in texts] == ["extract", "normalize", "load"]
    assert all("100%" in text and "1/1" in text for text in texts[1:]), texts
    assert _html(outputs["progress"]).table("Tables").rows[1][:2] == ["events", "200,000"]

    # Written under the notebook's working directory, as its text says; read by delta-rs.
    users = deltalake.DeltaTable(str(workdir / "_lake" / "demo" / "users")).to_pyarrow_table().to_pylist()
    assert sorted((row["id"], row["city"]) for row in users) == [
        (1, "Paris"),
        (2, "New York"),
        (3, "Helsinki"),
        (4, "Boston"),
    ]


def _html(outputs: list[Any]) -> HtmlPage:
    """The cell's result as its HTML display (what Jupyter shows)."""
    (result,) = [o for o in outputs if o.output_type == "execute_result"]
    return read_html(result.data["text/html"])


def _frame_rows(outputs: list[Any]) -> list[list[str]]:
    """A pandas DataFrame result's rows as shown, without the index column."""
    (frame,) = _html(outputs).tables
    return [row[1:] for row in frame.rows[1:]]
