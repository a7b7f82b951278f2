"""dlt's schema object (``pipeline.default_schema``) and its import/export YAML files, over
real loads; what the schema says is checked against the Delta tables read by delta-rs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import deltalake
import pytest
import yaml
from conftest import delta_rows

import sparkload as sl
from sparkload.pipeline import schema as schema_view


def _delta_columns(pipeline: sl.Pipeline, table: str) -> list[str]:
    return [field.name for field in deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").schema().fields]


@sl.resource(primary_key="id", write_disposition="merge", columns={"score": {"data_type": "double"}})
def users(extra: bool = False) -> Any:
    row: dict[str, Any] = {"id": 1, "name": "Ada", "score": 3, "tags": ["a", "b"]}
    if extra:
        row["age"] = 36
    yield row


def test_schema_describes_the_loaded_tables(pipeline: sl.Pipeline) -> None:
    assert pipeline.default_schema_name is None
    assert pipeline.schemas == {}

    pipeline.run(users())

    schema = pipeline.default_schema
    assert pipeline.default_schema_name == schema.name == pipeline.pipeline_name
    assert list(pipeline.schemas) == [schema.name]
    assert schema.data_table_names() == ["users", "users__tags"]
    assert "_sparkload_pipeline_state" in schema.tables
    # Every column Delta has, and only those, with sparkload's data types.
    for table in ("users", "users__tags"):
        assert sorted(schema.get_table_columns(table)) == sorted(_delta_columns(pipeline, table))
    columns = schema.get_table_columns("users")
    assert columns["id"] == {
        "name": "id",
        "data_type": "bigint",
        "nullable": False,
        "primary_key": True,
    }
    assert columns["score"]["data_type"] == "double"  # the column hint, as loaded
    assert delta_rows(pipeline, "users")[0]["score"] == 3.0
    assert columns["name"]["data_type"] == "text"
    users_table = schema.get_table("users")
    assert users_table["write_disposition"] == "merge"
    assert users_table["resource"] == "users"
    tags = schema.get_table("users__tags")
    assert tags["parent"] == "users"
    assert tags["columns"]["_sparkload_parent_id"]["parent_key"] is True
    with pytest.raises(KeyError):
        schema.get_table("nope")
    as_dict = schema.to_dict()
    assert as_dict["name"] == schema.name and as_dict["version"] == schema.version
    assert as_dict["tables"]["users"]["columns"]["id"]["primary_key"] is True


def test_version_grows_when_the_tables_change_shape(pipeline: sl.Pipeline) -> None:
    pipeline.run(users())
    first = pipeline.default_schema
    assert first.version >= 1

    pipeline.run(users())  # the same shape: the same version
    assert pipeline.default_schema.version == first.version
    assert pipeline.default_schema.version_hash == first.version_hash

    pipeline.run(users(extra=True))  # a new column
    assert "age" in _delta_columns(pipeline, "users")
    second = pipeline.default_schema
    assert second.version > first.version
    assert second.version_hash != first.version_hash
    assert second.get_table_columns("users")["age"]["data_type"] == "bigint"

    pipeline.run(sl.resource([{"k": 1}], name="other"))  # a new table
    third = pipeline.default_schema
    assert third.version > second.version
    assert "other" in third.data_table_names()
    # Read from the tables, so a fresh reader of the pipeline agrees.
    assert (
        sl.attach(pipeline.pipeline_name, pipelines_dir=str(pipeline.pipelines_dir)).default_schema.version
        == third.version
    )


def test_export_writes_the_schema_after_each_run(make_pipeline: Any, tmp_path: Path) -> None:
    export = tmp_path / "schemas" / "export"
    pipeline = make_pipeline("chess", export_schema_path=export)
    pipeline.run(users())

    document = yaml.safe_load((export / "chess.schema.yaml").read_text())
    assert document["name"] == "chess"
    first_version = document["version"]
    assert first_version == pipeline.default_schema.version
    assert document["tables"]["users"]["columns"]["id"] == {
        "data_type": "bigint",
        "nullable": False,
        "primary_key": True,
    }
    assert document["tables"]["users"]["write_disposition"] == "merge"
    assert set(document["tables"]["users__tags"]["columns"]) == set(_delta_columns(pipeline, "users__tags"))

    pipeline.run(users(extra=True))
    document = yaml.safe_load((export / "chess.schema.yaml").read_text())
    assert document["version"] > first_version
    assert document["tables"]["users"]["columns"]["age"]["data_type"] == "bigint"


def test_import_types_a_column_that_appears_later(make_pipeline: Any, tmp_path: Path) -> None:
    imports = tmp_path / "import"
    pipeline = make_pipeline("chess", import_schema_path=imports)
    pipeline.run(users())
    # As in dlt, a first run writes the import file with the hints the resources declared.
    path = imports / "chess.schema.yaml"
    document = yaml.safe_load(path.read_text())
    assert document["tables"]["users"]["columns"]["score"] == {"data_type": "double"}
    assert document["tables"]["users"]["columns"]["id"]["primary_key"] is True
    assert "name" not in document["tables"]["users"]["columns"]  # inferred, not declared

    # The user declares the type of a column the data does not have yet, and of a table
    # the pipeline has not loaded yet.
    document["tables"]["users"]["columns"]["age"] = {"data_type": "double"}
    document["tables"]["events"] = {"columns": {"ts": {"data_type": "text"}}}
    path.write_text(yaml.safe_dump(document))

    events = sl.resource([{"ts": "2024-01-01T00:00:00Z"}], name="events")
    pipeline.run([users(extra=True), events])

    assert delta_rows(pipeline, "users")[0]["age"] == 36.0
    assert isinstance(delta_rows(pipeline, "users")[0]["age"], float)
    assert delta_rows(pipeline, "events")[0]["ts"] == "2024-01-01T00:00:00Z"  # not a timestamp
    columns = pipeline.default_schema.get_table_columns
    assert columns("users")["age"]["data_type"] == "double"
    assert columns("events")["ts"]["data_type"] == "text"


def test_resource_hints_win_over_imported_ones(make_pipeline: Any, tmp_path: Path) -> None:
    imports = tmp_path / "import"
    imports.mkdir()
    (imports / "chess.schema.yaml").write_text(
        yaml.safe_dump({"name": "chess", "tables": {"users": {"columns": {"score": {"data_type": "text"}}}}})
    )
    pipeline = make_pipeline("chess", import_schema_path=imports)
    pipeline.run(users())
    assert delta_rows(pipeline, "users")[0]["score"] == 3.0  # the resource's double


def test_imported_primary_key_makes_the_merge_key(make_pipeline: Any, tmp_path: Path) -> None:
    imports = tmp_path / "import"
    imports.mkdir()
    (imports / "chess.schema.yaml").write_text(
        yaml.safe_dump({"tables": {"players": {"columns": {"id": {"primary_key": True}}}}})
    )
    pipeline = make_pipeline("chess", import_schema_path=imports)

    @sl.resource(write_disposition="merge")
    def players(name: str) -> Any:
        yield {"id": 1, "name": name}

    pipeline.run(players("a"))
    pipeline.run(players("b"))
    assert [row["name"] for row in delta_rows(pipeline, "players")] == ["b"]
    assert pipeline.default_schema.get_table_columns("players")["id"]["primary_key"] is True


def test_imported_type_change_of_an_existing_column_is_destructive(
    make_pipeline: Any, tmp_path: Path
) -> None:
    imports = tmp_path / "import"
    pipeline = make_pipeline("chess", import_schema_path=imports)
    pipeline.run(sl.resource([{"id": 1, "code": 7}], name="codes"))
    path = imports / "chess.schema.yaml"
    document = yaml.safe_load(path.read_text())
    document["tables"]["codes"] = {"columns": {"code": {"data_type": "text"}}}
    path.write_text(yaml.safe_dump(document))

    # The column keeps its type; text that does not fit it would change it: refused.
    with pytest.raises(sl.PipelineStepFailed) as failed:
        pipeline.run(sl.resource([{"id": 2, "code": "x"}], name="codes"))
    assert isinstance(failed.value.__cause__, sl.DestructiveChangeError)
    assert [row["code"] for row in delta_rows(pipeline, "codes")] == [7]


def test_bad_imported_data_type_is_refused(make_pipeline: Any, tmp_path: Path) -> None:
    imports = tmp_path / "import"
    imports.mkdir()
    (imports / "chess.schema.yaml").write_text(
        yaml.safe_dump({"tables": {"codes": {"columns": {"code": {"data_type": "wei"}}}}})
    )
    pipeline = make_pipeline("chess", import_schema_path=imports)
    with pytest.raises(sl.PipelineStepFailed, match="data_type must be one of"):
        pipeline.run(sl.resource([{"code": 1}], name="codes"))


def test_a_state_without_the_record_still_gives_a_schema(pipeline: sl.Pipeline) -> None:
    pipeline.run(users())
    # A state written before the schema record existed: tables, no hints.
    old_state = {key: value for key, value in pipeline.state.items() if key != schema_view.SCHEMA_KEY}
    schema = schema_view.read_schema("old", old_state, pipeline.destination_dataset)
    assert schema.data_table_names() == ["users", "users__tags"]
    assert schema.version == pipeline.default_schema.version  # read from the tables alone
    assert "primary_key" not in schema.get_table_columns("users")["id"]
    assert "write_disposition" not in schema.get_table("users")
