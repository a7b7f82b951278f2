"""Public errors: one home (``sparkload/exceptions.py``), all exported from ``sparkload``, and
each carrying what went wrong as attributes. The attribute tests run real pipelines."""

from __future__ import annotations

import ast
import builtins
import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest
from conftest import delta_rows

import sparkload as sl
import sparkload.exceptions

PACKAGE = Path(sparkload.__file__).parent
# An internal signal between two functions of one module: raised while merging staged files'
# schemas and caught beside it (the merged schema becomes None), it never reaches users.
INTERNAL_EXCEPTIONS = {
    ("normalize/json_schema.py", "SchemaConflict"),
    # A bound that cannot be a literal: its caller runs the statement without it.
    ("common/literals.py", "UnrenderableLiteral"),
    # A file sl.mark.with_file_import names cannot be staged: the extractor turns it into
    # an ExtractError naming the resource.
    ("extract/storage.py", "ImportedFileError"),
}


def public_errors() -> dict[str, type[sl.SparkloadError]]:
    """Every public error (``HTTPRequestError`` is made on first use, with requests' base)."""
    sparkload.exceptions.HTTPRequestError  # noqa: B018
    return {
        name: value
        for name, value in vars(sparkload.exceptions).items()
        if inspect.isclass(value) and issubclass(value, sl.SparkloadError) and not name.startswith("_")
    }


def test_every_public_error_is_exported_from_sparkload() -> None:
    errors = public_errors()
    assert "PipelineLockedError" in errors and "ConfigFieldMissingError" in errors
    for name, error in errors.items():
        assert getattr(sl, name) is error, name
        assert name in sl.__all__, name
    assert sl.exceptions is sparkload.exceptions


def exception_classes(tree: ast.Module, known: set[str]) -> list[str]:
    """Classes of ``tree`` with a base named like a known exception class."""

    def base_name(base: ast.expr) -> str:
        return base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")

    return [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and any(base_name(b) in known for b in node.bases)
    ]


def test_no_module_but_exceptions_defines_a_public_exception() -> None:
    trees = {str(path.relative_to(PACKAGE)): ast.parse(path.read_text()) for path in PACKAGE.rglob("*.py")}
    known = {
        name
        for name, value in vars(builtins).items()
        if isinstance(value, type) and issubclass(value, BaseException)
    }
    # Subclasses of subclasses: repeat until no module adds a new exception name.
    while True:
        found = {name for tree in trees.values() for name in exception_classes(tree, known)}
        if found <= known:
            break
        known |= found
    misplaced = [
        (module, name)
        for module, tree in trees.items()
        if module != "exceptions.py"
        for name in exception_classes(tree, known)
        if not name.startswith("_") and (module, name) not in INTERNAL_EXCEPTIONS
    ]
    assert misplaced == []


# -- the attributes, from real pipelines -----------------------------------------------------
def test_a_refused_type_change_names_its_table_and_column(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "v": 10}], table_name="items")
    with pytest.raises(sl.PipelineStepFailed) as failure:
        pipeline.run([{"id": 2, "v": "ten"}], table_name="items")

    assert failure.value.step == "load"
    assert failure.value.load_id is not None
    error = failure.value.__cause__
    assert isinstance(error, sl.DestructiveChangeError)
    assert isinstance(error, sl.SchemaConflictError)  # one except catches every schema conflict
    assert (error.table, error.column) == ("items", "v")
    assert (error.tables, error.columns) == (("items",), ("v",))
    [(table, column, description)] = error.changes
    assert (table, column) == ("items", "v")
    assert "changes type from bigint to text" in description
    assert description in str(error)


def test_a_changed_key_is_a_destructive_change_without_a_column(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "k": 1}], table_name="keyed", primary_key="id", write_disposition="merge")
    with pytest.raises(sl.PipelineStepFailed) as failure:
        pipeline.run([{"id": 1, "k": 2}], table_name="keyed", primary_key="k", write_disposition="merge")

    error = failure.value.__cause__
    assert isinstance(error, sl.DestructiveChangeError)
    assert error.table == "keyed" and error.column is None and error.columns == ()


def test_a_variant_column_of_another_type_is_a_schema_conflict_with_both_types(pipeline: sl.Pipeline) -> None:
    """Another writer made ``v__v_text`` an int column: text values of ``v`` cannot go there."""
    uri = f"{pipeline.dataset_uri}/items"
    Path(pipeline.dataset_uri).mkdir(parents=True, exist_ok=True)
    deltalake.write_deltalake(
        uri,
        pa.table({"v": pa.array([1], pa.int64()), "v__v_text": pa.array([None], pa.int32())}),
    )
    with pytest.raises(sl.PipelineStepFailed) as failure:
        pipeline.run([{"v": "ten"}], table_name="items")

    error = failure.value.__cause__
    assert type(error) is sl.SchemaConflictError
    assert (error.table, error.column, error.variant_column) == ("items", "v", "v__v_text")
    assert (error.load_type, error.table_type) == ("text", "int")


def test_duplicate_keys_name_the_key_values(pipeline: sl.Pipeline) -> None:
    rows = [{"id": 1, "v": "a"}, {"id": 1, "v": "b"}, {"id": 2, "v": "c"}]
    upsert = {"disposition": "merge", "strategy": "upsert"}
    pipeline.run([{"id": 0, "v": "z"}], table_name="keyed", primary_key="id", write_disposition=upsert)
    with pytest.raises(sl.PipelineStepFailed) as failure:
        pipeline.run(rows, table_name="keyed", primary_key="id", write_disposition=upsert)

    error = failure.value.__cause__
    assert isinstance(error, sl.DuplicateKeyError) and isinstance(error, sl.LoadError)
    assert (error.table, error.primary_key, error.key_values) == ("keyed", ("id",), ((1,),))
    assert "has several rows for id=1" in str(error)


def test_a_row_without_its_cursor_names_resource_cursor_and_row(pipeline: sl.Pipeline) -> None:
    @sl.resource
    def events(updated_at: Any = sl.sources.incremental("updated_at")) -> Iterator[dict[str, Any]]:  # noqa: B008
        yield {"id": 1, "updated_at": 1}
        yield {"id": 2}

    with pytest.raises(sl.PipelineStepFailed) as failure:
        pipeline.run(events())

    assert failure.value.step == "extract"
    error = failure.value.__cause__
    assert isinstance(error, sl.IncrementalCursorError) and isinstance(error, sl.ResourceError)
    assert (error.resource, error.cursor_path, error.row) == ("events", "updated_at", {"id": 2})


def test_an_item_of_the_wrong_kind_gives_its_position(pipeline: sl.Pipeline) -> None:
    @sl.resource
    def mixed() -> Iterator[Any]:
        yield {"id": 1}
        yield {1, 2}  # a set: neither a row nor a value

    with pytest.raises(sl.PipelineStepFailed) as failure:
        pipeline.run(mixed)

    error = failure.value.__cause__
    assert isinstance(error, sl.UnsupportedItemError)
    assert (error.resource, error.position) == ("mixed", 1)


def test_a_second_run_of_a_running_pipeline_names_the_pipeline_and_its_lock(make_pipeline: Any) -> None:
    outer = make_pipeline("busy")
    refused: list[sl.PipelineLockedError] = []

    @sl.resource
    def items() -> Iterator[dict[str, Any]]:
        # The same pipeline, as another process would open it, while this run holds the lock.
        try:
            make_pipeline("busy").run([{"id": 2}], table_name="other")
        except sl.PipelineLockedError as error:
            refused.append(error)
        yield {"id": 1}

    outer.run(items)

    [error] = refused
    assert error.pipeline_name == "busy"
    assert Path(error.lock_path).name == ".busy.lock"
    assert error.lock_path in str(error)


def test_a_missing_config_value_names_the_field_and_the_keys_tried(pipeline: sl.Pipeline) -> None:
    @sl.resource
    def pages(page_size: int = sl.config.value) -> Iterator[dict[str, Any]]:
        yield {"size": page_size}

    with pytest.raises(sl.PipelineStepFailed) as failure:
        pipeline.run(pages)

    error = failure.value.__cause__
    assert isinstance(error, sl.ConfigFieldMissingError) and isinstance(error, sl.SparkloadConfigError)
    assert error.fields == ("page_size",)
    assert "PAGE_SIZE" in error.tried["page_size"]


def test_an_outdated_plan_names_the_tables_that_moved(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1}], table_name="items")
    plan = pipeline.plan(sl.resource([{"id": 2}], name="items"))
    pipeline.run([{"id": 3}], table_name="items")  # another run in between

    with pytest.raises(sl.PlanOutdatedError) as failure:
        plan.apply()

    assert failure.value.changed_tables == ("items",)
    assert failure.value.planned != failure.value.current


def counted(upto: int) -> sl.Resource:
    """Ids below ``upto``, by an incremental cursor: each run that loads moves the state on."""

    @sl.resource(name="items")
    def items(cursor: sl.incremental[int] = sl.incremental("id")) -> Iterator[dict[str, int]]:  # noqa: B008
        yield from ({"id": i} for i in range(upto))

    return items


def test_an_overtaken_package_is_discarded_naming_its_load_and_both_state_versions(
    make_pipeline: Any, tmp_path: Path
) -> None:
    """Two working directories (two machines) of one pipeline extract from one state; the
    second to load discards its package, says so, and its next run carries on."""
    first, second = (make_pipeline("shared", pipelines_dir=tmp_path / machine) for machine in ("a", "b"))
    first.run(counted(1))
    second.extract(counted(3))  # from state version 1
    (load_id,) = second.list_extracted_load_packages()
    first.run(counted(2))  # commits state version 2
    second.normalize()

    info = second.load()

    assert info.loads_ids == []
    (note,) = info.notes
    assert f"load package {load_id}" in note
    assert "pipeline 'shared'" in note
    assert "extracted from state version 1" in note
    assert "has since committed version 2" in note
    assert "discarded" in note
    assert not second.has_pending_data
    second.run(counted(3))
    assert sorted(r["id"] for r in delta_rows(second, "items")) == [0, 1, 2]
