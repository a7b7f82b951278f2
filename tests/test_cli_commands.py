"""``sparkload --version``, ``pipeline --list``, ``pipeline <name> info --json|schema|load-package|sync``
and ``plan``/``apply``, run through the installed console script against real pipelines.

Each command runs in a process of its own (``cli_process.py``); the pipelines it reads
ran on the embedded engine in the test's tmp dir, and tables are read back with delta-rs.
"""

# The incrementals and intervals are declared as call defaults: that is dlt's API.
# ruff: noqa: B008

from __future__ import annotations

import datetime
import importlib.metadata
import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import deltalake
import pytest
import yaml
from cli_process import failed, sparkload, succeeded
from conftest import delta_rows

import sparkload as sl
from sparkload.pipeline import state as state_store

UTC = datetime.timezone.utc
NAME = "shop_pipeline"


def orders_rows(*ids: int) -> list[dict[str, Any]]:
    return [{"id": i, "updated": i, "day": f"2024-01-0{i}", "items": [{"sku": f"s{i}"}]} for i in ids]


def shop(rows: list[dict[str, Any]]) -> Any:
    """A merge resource with an incremental cursor, keys, a column hint and a nested list."""

    @sl.resource(
        primary_key="id",
        merge_key="day",
        write_disposition="merge",
        columns={"day": {"data_type": "date", "partition": True}},
    )
    def orders(updated: Any = sl.sources.incremental("updated", initial_value=0)) -> Any:
        yield from rows

    @sl.source
    def shop() -> Any:
        return (orders,)

    return shop()


@pytest.fixture
def loaded(make_pipeline: Any) -> sl.Pipeline:
    """The shop loaded twice; the second run adds order 3."""
    pipeline = make_pipeline(NAME)
    pipeline.run(shop(orders_rows(1, 2)))
    pipeline.run(shop(orders_rows(1, 2, 3)))
    return pipeline


@pytest.fixture
def pipelines_dir(tmp_path: Path) -> Path:
    return tmp_path / "pipelines"  # the one make_pipeline uses


def as_json(result: Any) -> Any:
    return json.loads(succeeded(result))


# -- --version, --list -----------------------------------------------------------------------------


def test_version_and_the_list_of_pipelines(
    loaded: sl.Pipeline, make_pipeline: Any, pipelines_dir: Path
) -> None:
    assert succeeded(sparkload("--version")).strip() == f"sparkload {importlib.metadata.version('sparkload')}"
    make_pipeline("never_ran", dataset_name="other")  # a working folder with pipeline.json alone

    out = succeeded(sparkload("pipeline", "--list", "--pipelines-dir", pipelines_dir))

    assert out.splitlines()[0] == f"2 pipelines in {pipelines_dir}"
    # the pipeline that ran first (the other never ran: its last run is unknown)
    assert out.splitlines()[1].startswith(f"{NAME}: last run 20")
    assert out.splitlines()[1].endswith(f"state version {loaded.state['_state_version']}")
    assert out.splitlines()[2:] == [
        f"  dataset: {loaded.dataset_name}",
        f"  destination: {loaded.destination.bucket_url}",
        "never_ran: last run unknown, state version none",
        "  dataset: other",
        f"  destination: {loaded.destination.bucket_url}",
    ]

    listed = as_json(sparkload("pipeline", "--list", "--json", "--pipelines-dir", pipelines_dir))
    assert listed["pipelines_dir"] == str(pipelines_dir)
    first, second = listed["pipelines"]
    assert (first["name"], first["dataset_name"], first["destination"]) == (
        NAME,
        loaded.dataset_name,
        loaded.destination.bucket_url,
    )
    assert first["state_version"] == loaded.state["_state_version"]
    assert datetime.datetime.fromisoformat(first["last_run"]).tzinfo is not None
    assert (second["name"], second["last_run"], second["state_version"]) == ("never_ran", None, None)

    empty = succeeded(sparkload("pipeline", "--list", "--pipelines-dir", pipelines_dir / "none_here"))
    assert empty == f"no pipelines in {pipelines_dir / 'none_here'}\n"

    one_line = failed(sparkload("pipeline", "none_here", "info", "--pipelines-dir", pipelines_dir))
    assert one_line.startswith("error: pipeline 'none_here' has no pipeline.json")
    debugged = sparkload("--debug", "pipeline", "none_here", "info", "--pipelines-dir", pipelines_dir)
    assert debugged.returncode == 1
    assert debugged.stderr.startswith("Traceback (most recent call last):")
    last = debugged.stderr.rstrip().splitlines()[-1]
    assert last.startswith("sparkload.exceptions.SparkloadError: pipeline 'none_here'")


# -- info --json ---------------------------------------------------------------------------------


def test_info_as_json(loaded: sl.Pipeline, pipelines_dir: Path) -> None:
    info = as_json(sparkload("pipeline", NAME, "info", "--json", "--pipelines-dir", pipelines_dir))

    assert info["pipeline"] == NAME
    assert (info["dataset"], info["dataset_uri"]) == (loaded.dataset_name, loaded.dataset_uri)
    assert info["destination"] == loaded.destination.bucket_url
    assert info["state_version"] == loaded.state["_state_version"]
    assert info["pending_load_packages"] == []
    assert info["resources"] == {"shop.orders": ["orders", "orders__items"]}
    cursor = info["sources"]["shop"]["resources"]["orders"]["incremental"]["updated"]
    assert (cursor["initial_value"], cursor["last_value"]) == (0, 3)


# -- schema ----------------------------------------------------------------------------------------


def test_schema_as_aligned_text_json_and_yaml(loaded: sl.Pipeline, pipelines_dir: Path) -> None:
    text = succeeded(sparkload("pipeline", NAME, "schema", "--pipelines-dir", pipelines_dir))

    blocks = {block.splitlines()[0]: block.splitlines()[1:] for block in text.split("\n\n")}
    assert next(iter(blocks)).startswith(f"schema {NAME}: version ")
    orders = blocks["orders: merge, resource orders"]
    header, *rows = orders
    assert header.split() == ["column", "type", "nullable", "hints"]
    cells = {row.split()[0]: row for row in rows}
    assert cells["id"].split() == ["id", "bigint", "no", "primary_key"]
    assert cells["day"].split() == ["day", "date", "yes", "merge_key,", "partition"]
    assert cells["updated"].split() == ["updated", "bigint", "yes"]
    # column-aligned: every row's type and nullable start where the header's do
    for word in ("type", "nullable"):
        at = header.index(word)
        assert all(row[at - 1] == " " and row[at] != " " for row in rows)
    nested = blocks["orders__items: nested in orders"]
    assert any(row.split()[:2] == ["sku", "text"] for row in nested)
    assert max(len(line) for line in text.splitlines()) <= 100

    as_dict = as_json(sparkload("pipeline", NAME, "schema", "--json", "--pipelines-dir", pipelines_dir))
    assert as_dict == json.loads(json.dumps(loaded.default_schema.to_dict()))
    id_column = as_dict["tables"]["orders"]["columns"]["id"]
    assert (id_column["data_type"], id_column["nullable"], id_column["primary_key"]) == (
        "bigint",
        False,
        True,
    )
    assert as_dict["tables"]["orders"]["columns"]["day"]["merge_key"] is True
    assert as_dict["tables"]["orders__items"]["parent"] == "orders"

    document = yaml.safe_load(
        succeeded(sparkload("pipeline", NAME, "schema", "--format", "yaml", "--pipelines-dir", pipelines_dir))
    )
    assert document["name"] == NAME
    assert document["tables"]["orders"]["columns"]["day"] == {
        "data_type": "date",
        "nullable": True,
        "merge_key": True,
        "partition": True,
    }


# -- load-package ----------------------------------------------------------------------------------


def test_load_package_shows_pending_and_loaded_packages(loaded: sl.Pipeline, pipelines_dir: Path) -> None:
    loaded_id = loaded.list_completed_load_packages()[-1]  # the second run's
    extracted_id = loaded.extract(shop(orders_rows(1, 2, 3, 4, 5)))

    out = succeeded(sparkload("pipeline", NAME, "load-package", "--pipelines-dir", pipelines_dir))
    lines = out.splitlines()
    assert lines[:2] == [
        f"load package: {extracted_id}",
        "state: extracted (pending: the next run normalizes and loads it)",
    ]
    assert lines[-2].split() == ["table", "rows", "files"]
    assert lines[-1].split() == ["orders", "2", "1"]  # orders 4 and 5; nested rows come with normalize

    loaded.normalize()
    pending = as_json(sparkload("pipeline", NAME, "load-package", "--json", "--pipelines-dir", pipelines_dir))
    assert (pending["load_id"], pending["state"], pending["pending"]) == (extracted_id, "normalized", True)
    assert {t["table"]: (t["rows"], t["files"] > 0) for t in pending["tables"]} == {
        "orders": (2, True),
        "orders__items": (2, True),
    }
    assert pending["package_path"].startswith(loaded.dataset_uri)

    done = as_json(
        sparkload("pipeline", NAME, "load-package", loaded_id, "--json", "--pipelines-dir", pipelines_dir)
    )
    assert (done["load_id"], done["state"], done["pending"]) == (loaded_id, "loaded", False)
    versions = {
        t: deltalake.DeltaTable(f"{loaded.dataset_uri}/{t}").version() for t in ("orders", "orders__items")
    }
    assert {t["table"]: (t["rows"], t["disposition"], t["version"]) for t in done["tables"]} == {
        "orders": (1, "merge", versions["orders"]),  # order 3 alone: the cursor stood at 2
        "orders__items": (1, "merge", versions["orders__items"]),
    }
    assert done["state_version"] == loaded.committed_state["_state_version"]

    unknown = failed(sparkload("pipeline", NAME, "load-package", "123.456", "--pipelines-dir", pipelines_dir))
    assert unknown == f"error: pipeline '{NAME}' has no load package 123.456"


# -- sync ------------------------------------------------------------------------------------------


def test_sync_restores_a_deleted_working_folder_and_the_next_run_continues_from_it(
    loaded: sl.Pipeline, make_pipeline: Any, pipelines_dir: Path
) -> None:
    committed = loaded.state
    shutil.rmtree(loaded.working_dir)
    assert "--destination" in failed(sparkload("pipeline", NAME, "info", "--pipelines-dir", pipelines_dir))
    assert "--destination" in failed(
        sparkload("pipeline", NAME, "sync", "-y", "--pipelines-dir", pipelines_dir)
    )

    where = ["--destination", loaded.destination.bucket_url, "--dataset", loaded.dataset_name]
    out = succeeded(sparkload("pipeline", NAME, "sync", "-y", "--pipelines-dir", pipelines_dir, *where))

    assert (
        out.splitlines()[-1]
        == f"restored state version {committed['_state_version']} from {loaded.dataset_uri}"
    )
    assert state_store.read_local(loaded.working_dir) == committed
    # attached by name again: pipeline.json is back
    info = as_json(sparkload("pipeline", NAME, "info", "--json", "--pipelines-dir", pipelines_dir))
    assert (info["state_version"], info["dataset_uri"]) == (committed["_state_version"], loaded.dataset_uri)

    again = make_pipeline(NAME)
    run = again.run(shop(orders_rows(1, 2, 3, 4)))
    assert run.row_counts["orders"] == 1  # only order 4: the cursor restored stood at 3
    assert sorted(row["id"] for row in delta_rows(again, "orders")) == [1, 2, 3, 4]


def test_sync_discards_extracted_packages_and_keeps_normalized_ones(
    loaded: sl.Pipeline, make_pipeline: Any, pipelines_dir: Path
) -> None:
    kept = loaded.extract(shop(orders_rows(1, 2, 3, 4)))
    loaded.normalize()  # beside the dataset now
    discarded = loaded.extract(shop(orders_rows(1, 2, 3, 4, 5)))

    declined = sparkload("pipeline", NAME, "sync", "--pipelines-dir", pipelines_dir, stdin="n\n")
    assert declined.returncode == 1
    assert loaded.list_extracted_load_packages() == [discarded]

    out = succeeded(sparkload("pipeline", NAME, "sync", "-y", "--pipelines-dir", pipelines_dir))
    said = " ".join(out.split())  # as wrapped to the terminal's width
    assert "extracted packages, discarded (their state was never committed: the next run " in said
    assert f"extracts their data again): {discarded}" in said
    assert f"normalized packages, kept beside the dataset (the next run loads them): {kept}" in said

    again = make_pipeline(NAME)
    assert (again.list_extracted_load_packages(), again.list_normalized_load_packages()) == ([], [kept])
    first = again.run(shop(orders_rows(1, 2, 3, 4, 5, 6)))
    assert first.loads_ids == [kept]  # the kept package, and not the discarded one
    assert sorted(row["id"] for row in delta_rows(again, "orders")) == [1, 2, 3, 4]
    second = again.run(shop(orders_rows(1, 2, 3, 4, 5, 6)))
    assert second.row_counts["orders"] == 2  # 5 and 6, from the cursor the kept package committed
    assert sorted(row["id"] for row in delta_rows(again, "orders")) == [1, 2, 3, 4, 5, 6]


# -- plan and apply --------------------------------------------------------------------------------

SCRIPT = """
import datetime

import sparkload as sl

UTC = datetime.timezone.utc


@sl.resource(name="daily")
def daily(
    window=sl.sources.intervals(
        "ts", start=datetime.datetime(2024, 9, 20, tzinfo=UTC), cron="@daily", batch_size=3
    ),
):
    moment = window.start
    while moment < window.end:
        yield from ({{"ts": moment + datetime.timedelta(hours=h), "v": h}} for h in range(2))
        moment += datetime.timedelta(days=1)

{extra}
pipeline = sl.pipeline(
    "daily_pipeline",
    destination=sl.destinations.delta({lake!r}),
    pipelines_dir={pipelines!r},
)

if __name__ == "__main__":
    raise SystemExit("the command must not run the script's main block")
"""


def write_script(tmp_path: Path, extra: str = "", name: str = "daily_script.py") -> Path:
    path = tmp_path / name
    lake, pipelines = str(tmp_path / "lake"), str(tmp_path / "pipelines")
    path.write_text(SCRIPT.format(extra=textwrap.dedent(extra), lake=lake, pipelines=pipelines))
    return path


def test_plan_then_apply_a_scripts_interval_resource(tmp_path: Path) -> None:
    script = write_script(tmp_path)
    dataset = tmp_path / "lake" / "daily_pipeline_dataset"
    now = "2024-09-27T00:00:00+00:00"

    text = succeeded(sparkload("plan", script, "--execution-time", now))
    assert "└── daily (merge/time-range, resource daily)" in text
    assert "└── daily: 2024-09-20 - 2024-09-26 (3 batches)" in text
    planned = as_json(sparkload("plan", script, "--execution-time", now, "--json"))
    assert planned["intervals"] == [
        {"resource": "daily", "missing": [["2024-09-20", "2024-09-26"]], "batches": 3, "restated": None}
    ]
    assert [(t["table"], t["status"]) for t in planned["tables"]] == [("daily", "added")]

    declined = sparkload("apply", script, "--execution-time", now, stdin="n\n")
    assert declined.returncode == 1
    assert "nothing applied" in declined.stdout
    assert not (dataset / "daily").exists()

    applied = as_json(sparkload("apply", script, "--execution-time", now, "-y", "--json"))
    assert applied["plan"]["intervals"][0]["missing"] == [["2024-09-20", "2024-09-26"]]
    assert len(applied["load_info"]["loads_ids"]) == 3  # one package per batch
    assert sum(t["rows"] for t in applied["load_info"]["tables"]) == 14
    rows = deltalake.DeltaTable(str(dataset / "daily")).to_pyarrow_table().to_pylist()
    assert len(rows) == 14

    again = succeeded(sparkload("plan", script, "--execution-time", now))
    assert "No changes: nothing to load." in again

    restated = succeeded(
        sparkload(
            "apply", script, "--execution-time", now, "-y",
            "--restate", "daily", "--start", "2024-09-22", "--end", "2024-09-23",
        )
    )  # fmt: skip
    assert "└── daily: 2024-09-22 - 2024-09-23" in restated  # a date end is its whole day
    assert "Pipeline daily_pipeline load " in restated  # the LoadInfo
    assert len(deltalake.DeltaTable(str(dataset / "daily")).to_pyarrow_table().to_pylist()) == 14


def test_plan_names_the_candidates_when_a_script_defines_several(tmp_path: Path) -> None:
    script = write_script(
        tmp_path,
        extra="""
        @sl.resource(name="users", primary_key="id", write_disposition="merge")
        def users():
            yield {"id": 1}


        @sl.source
        def api():
            return daily, users
        """,
    )
    ambiguous = failed(sparkload("plan", script, "--execution-time", "2024-09-27"))
    assert ambiguous == (
        f"error: {script} defines several sources and resources: daily, users; choose one with --data NAME"
    )
    chosen = as_json(sparkload("plan", script, "--data", "users", "--execution-time", "2024-09-27", "--json"))
    assert [(t["table"], t["status"]) for t in chosen["tables"]] == [("users", "added")]
    assert chosen["intervals"] == []
    # a source function is called, as the script would call it
    whole = as_json(sparkload("plan", script, "--data", "api", "--execution-time", "2024-09-27", "--json"))
    assert sorted(t["table"] for t in whole["tables"]) == ["daily", "users"]
    assert [i["resource"] for i in whole["intervals"]] == ["daily"]

    # --start without --restate: the run loads the missing intervals from there only
    ranged = sparkload(
        "plan", script, "--data", "daily", "--start", "2024-09-22", "--execution-time", "2024-09-27"
    )
    ranged_plan = as_json(
        sparkload(
            "plan", script, "--data", "daily", "--start", "2024-09-22", "--execution-time", "2024-09-27",
            "--json",
        )
    )  # fmt: skip
    assert "daily: 2024-09-22 - 2024-09-26" in succeeded(ranged)
    assert ranged_plan["intervals"][0]["missing"] == [["2024-09-22", "2024-09-26"]]
    broken = tmp_path / "broken.py"
    broken.write_text("import sparkload\nraise ValueError('no config')\n")
    assert failed(sparkload("plan", broken)) == f"error: {broken}: importing it failed: ValueError: no config"
