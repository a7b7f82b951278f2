"""dlt's schema object, read from what a pipeline loaded, and its YAML files.

sparkload keeps no schema of its own beside the data: the schema is what the Delta tables
and the pipeline state say. The tables are those the state records for the pipeline's
resources (``resource_tables``) that the dataset holds; their columns and types are the
Delta tables'; the hints (write disposition, keys, column hints) are recorded in the state
at each extract, under ``state["schema"]``:

    state["schema"] = {"tables": {<root table>: {"resource": ..., "write_disposition": ...,
                                                 "primary_key": [...], "merge_key": [...],
                                                 "columns": {<column>: {<hint>: ...}}}}}

The hints live in the state, not in a file of the working directory, because the state is
committed with the data: any machine that runs or attaches to the pipeline sees the same
schema, and a hint is never recorded for a load that did not happen. A state written
before the record existed has none: its tables still show, with the columns Delta gives.

``version_hash`` is dlt's: a digest of the schema's content. ``version`` counts the
schema's tables and columns, so it grows whenever a table or column appears, as dlt's does;
unlike dlt's it is not a count of changes (a changed hint shows in ``version_hash`` only),
because a count of changes would have to be recorded as the tables change, and a run cut
short and resumed changes them in other steps than one that is not: the schema it shows
would depend on how a load got there.

``import_schema_path`` / ``export_schema_path`` are dlt's folders of ``<name>.schema.yaml``
files: the export is written after every load; the import's table and column hints apply
to the tables an extract fills, beneath the resources' own hints.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import orjson
import yaml
from pyspark.sql import types as T

from sparkload.common.hints import DATA_TYPES, LoadHints
from sparkload.common.local_files import write_atomically
from sparkload.common.naming import RESERVED_TABLE_PREFIX, normalize_table_name
from sparkload.common.state_record import SCHEMA_KEY, PipelineState, SchemaRecord, TableHintsRecord
from sparkload.common.system_columns import ID, LIST_IDX, LOAD_ID, PARENT_ID, ROOT_ID
from sparkload.exceptions import SparkloadConfigError, TableNotFoundError
from sparkload.extract.jobs import ExtractedTable
from sparkload.extract.load_hints import keys_of_columns, normalize_column_path
from sparkload.load.dataset import Dataset
from sparkload.normalize.types import data_type_of_spark
from sparkload.pipeline import resource_tables
from sparkload.pipeline.state import STATE_TABLE

if TYPE_CHECKING:
    from sparkload.normalize.normalizer import NormalizedTable

logger = logging.getLogger(__name__)

SCHEMA_FILE_SUFFIX = ".schema.yaml"
# Column hints an imported schema may set on a table sparkload loads (others in the file,
# dlt's ``description`` say, are left out: they would change nothing).
IMPORTED_COLUMN_HINTS = ("data_type", "nullable", "precision", "scale", "hard_delete", "dedup_sort")
KEY_HINTS: tuple[Literal["primary_key"], Literal["merge_key"]] = ("primary_key", "merge_key")
# dlt's hints on its own columns, given to sparkload's counterparts.
_SYSTEM_COLUMN_HINTS: dict[str, dict[str, bool]] = {
    ID: {"unique": True, "row_key": True},
    LOAD_ID: {},
    PARENT_ID: {"parent_key": True},
    LIST_IDX: {},
    ROOT_ID: {"root_key": True},
}
_DLT_PREFIX = "_dlt"


# -- the record in the state ---------------------------------------------------------------------
def record(state: PipelineState, tables: Iterable[ExtractedTable]) -> None:
    """At extract, before ``resource_tables.record`` counts its tables as loaded: the hints
    of the tables it fills (each root table keeps the hints of the latest extract that
    filled it, which carry the recorded NOT NULL columns: see ``with_recorded_not_null``).
    A table keeps each key recorded for it that its extract does not give, whatever its
    disposition, as dlt's stored schema keeps them: an append or replace run in between
    does not make a merge table keyless (``with_recorded_keys``)."""
    recorded: dict[str, TableHintsRecord] = {}
    for table in tables:
        # As resource_tables records them: a table with no rows is not written, unless a
        # replace empties it.
        if table.rows or table.hints.disposition == "replace":
            hints = _with_keys(table.hints, recorded_keys(state, table))
            recorded[table.name] = _hint_record(table.resource, hints)
    if recorded:
        state.setdefault(SCHEMA_KEY, SchemaRecord()).setdefault("tables", {}).update(recorded)


def with_recorded_not_null(state: PipelineState, tables: Iterable[ExtractedTable]) -> None:
    """Give each table the ``nullable: False`` hints recorded for its columns that its
    extract does not hint ``nullable`` itself: as in dlt, whose stored schema keeps a column
    NOT NULL in later loads until a hint says ``nullable: True``. Normalize then refuses the
    NULL as it does for the extract's own hints, and ``record`` keeps the hint. A table
    dropped since (a drop or a refresh dropping its resource) is no longer recorded as
    loaded: its hints are forgotten, as dlt drops the table from its schema."""
    loaded = _loaded_tables(state)
    for table in tables:
        if table.name not in loaded:
            continue
        kept = [
            name
            for name, hints in recorded_columns(state, table.name).items()
            if hints.get("nullable") is False and "nullable" not in table.hints.columns.get(name, {})
        ]
        if kept:
            columns = {name: dict(column) for name, column in table.hints.columns.items()}
            for name in kept:
                columns[name] = {**columns.get(name, {}), "nullable": False}
            table.hints = dataclasses.replace(table.hints, columns=columns)


def with_recorded_keys(state: PipelineState, tables: Iterable[ExtractedTable]) -> None:
    """Give each merged table the keys recorded for it that its extract does not give: as
    in dlt, whose stored schema keeps a key given once (by a column hint, ``primary_key=``
    or an imported schema) until a load gives that key anew, so a later merge without it
    merges on it instead of appending duplicate keys, and a load naming its primary key
    alone still replaces the rows of the merge key's partitions. A key the extract gives
    is its own (a change of keys stays ``destructive``'s to judge); a table dropped since
    has no keys recorded."""
    for table in tables:
        if table.hints.disposition == "merge":
            table.hints = _with_keys(table.hints, recorded_keys(state, table))


# Strategies that match rows by the primary key alone: a merge key recorded by an earlier
# delete-insert load is not theirs, and is forgotten by their load, as dlt's upsert leaves
# it out of its statement and its stored schema.
_PRIMARY_KEY_ONLY = ("upsert", "insert-only")


def recorded_keys(state: PipelineState, table: ExtractedTable) -> dict[str, tuple[str, ...]]:
    """The keys recorded for ``table`` that its extract does not give, while it is still
    loaded (a drop or a refresh dropping its resource forgets them, as dlt drops the table
    from its schema); empty otherwise. Not the merge key for an upsert or insert-only load,
    which forgets it."""
    loaded = _loaded_tables(state)
    if table.name not in loaded:
        return {}
    entry = ((state.get(SCHEMA_KEY) or {}).get("tables") or {}).get(table.name) or {}
    given = {"primary_key": table.hints.primary_key, "merge_key": table.hints.merge_key}
    keys: dict[str, tuple[str, ...]] = {
        hint: tuple(entry[hint]) for hint in KEY_HINTS if entry.get(hint) and not given[hint]
    }
    if table.hints.strategy in _PRIMARY_KEY_ONLY:
        keys.pop("merge_key", None)
    return keys


def _with_keys(hints: LoadHints, keys: Mapping[str, tuple[str, ...]]) -> LoadHints:
    if not keys:
        return hints
    return dataclasses.replace(
        hints,
        primary_key=keys.get("primary_key", hints.primary_key),
        merge_key=keys.get("merge_key", hints.merge_key),
    )


def _loaded_tables(state: PipelineState) -> set[str]:
    """The tables the state records as loaded (a drop or a dropping refresh removes them)."""
    return {name for names in resource_tables.root_tables(state).values() for name in names}


def recorded_columns(state: PipelineState, table: str) -> dict[str, dict[str, object]]:
    """The column hints ``table`` was last loaded with (normalized names)."""
    tables = (state.get(SCHEMA_KEY) or {}).get("tables") or {}
    return {name: dict(hints) for name, hints in ((tables.get(table) or {}).get("columns") or {}).items()}


def _hint_record(resource: str, hints: LoadHints) -> TableHintsRecord:
    return {
        "resource": resource,
        "write_disposition": hints.write_disposition.as_given(),
        "primary_key": list(hints.primary_key),
        "merge_key": list(hints.merge_key),
        "columns": {name: dict(column) for name, column in hints.columns.items()},
    }


# -- the schema object -----------------------------------------------------------------------------
@dataclasses.dataclass
class Schema:
    """dlt's ``Schema``, read-only: the tables as dicts of dlt's shape (``name``,
    ``columns`` by name, ``write_disposition``, ``resource``, ``parent``)."""

    name: str
    version: int
    version_hash: str
    tables: dict[str, dict[str, Any]]

    def data_tables(self, include_incomplete: bool = False) -> list[dict[str, Any]]:
        """The tables holding loaded data: every table but sparkload's own. (Every table of
        a sparkload schema has typed columns, so ``include_incomplete`` changes nothing.)"""
        return [table for name, table in self.tables.items() if not name.startswith(RESERVED_TABLE_PREFIX)]

    def data_table_names(self, include_incomplete: bool = False) -> list[str]:
        return [table["name"] for table in self.data_tables(include_incomplete)]

    def get_table(self, table_name: str) -> dict[str, Any]:
        """The table ``table_name`` (as written in the data, or normalized)."""
        name = table_name if table_name in self.tables else normalize_column_path(table_name)
        if name not in self.tables:
            raise TableNotFoundError(table_name, f"schema '{self.name}'", list(self.tables))
        return self.tables[name]

    def get_table_columns(self, table_name: str, include_incomplete: bool = False) -> dict[str, Any]:
        columns: dict[str, Any] = self.get_table(table_name)["columns"]
        return columns

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "version_hash": self.version_hash,
            "name": self.name,
            "tables": {name: _copy(table) for name, table in self.tables.items()},
        }

    def to_pretty_yaml(self) -> str:
        """The schema as dlt writes its ``.schema.yaml``: tables and columns by name, without
        their ``name`` fields."""
        document = self.to_dict()
        for table in document["tables"].values():
            table.pop("name", None)
            for column in table["columns"].values():
                column.pop("name", None)
        return str(yaml.safe_dump(document, sort_keys=False, allow_unicode=True))

    def __repr__(self) -> str:
        return (
            f"<sparkload.Schema(name='{self.name}', version={self.version}, "
            f"tables={list(self.tables)}, version_hash='{self.version_hash}')>"
        )


_NESTED_TYPES = (T.StructType, T.ArrayType, T.MapType)


@dataclasses.dataclass(frozen=True)
class PendingTable:
    """A table a waiting package fills, as far as its extract or normalize has shaped it:
    ``fields`` is a Spark ``StructType`` of its columns."""

    name: str
    resource: str
    parent: str | None
    fields: T.StructType


def extracted_shapes(tables: Iterable[ExtractedTable]) -> list[PendingTable]:
    """The tables of an extracted package with the columns its extract inferred: the
    top-level ones of a simple type (a dict or list becomes columns or a nested table only
    when normalized)."""
    shapes = []
    for table in tables:
        parsed = T._parse_datatype_json_string(table.json_schema) if table.json_schema else None
        inferred = parsed.fields if isinstance(parsed, T.StructType) else []
        simple = [f for f in inferred if not isinstance(f.dataType, _NESTED_TYPES)]
        shapes.append(PendingTable(table.name, table.resource, None, T.StructType(simple)))
    return shapes


def normalized_shapes(tables: Iterable[NormalizedTable], state: PipelineState) -> list[PendingTable]:
    """The tables of a normalized package (its manifest's) with their columns' types."""
    recorded = (state.get(SCHEMA_KEY) or {}).get("tables", {})
    shapes = []
    for table in tables:
        fields = [
            T.StructField(column.name, T._parse_datatype_json_string(column.target))
            for column in table.columns
        ]
        root = table.root or table.name
        resource = (recorded.get(root) or {}).get("resource") or root
        shapes.append(PendingTable(table.name, resource, table.parent, T.StructType(fields)))
    return shapes


def read_schema(
    name: str, state: PipelineState, dataset: Dataset, pending: Iterable[PendingTable] = ()
) -> Schema:
    """The schema of a pipeline whose state is ``state``, from its tables now; a table only
    a waiting package fills (``pending``, newest last) is there with the columns its
    extract or normalize found, as dlt's schema has a table once it is extracted."""
    tables = _observed_tables(state, dataset)
    loaded = frozenset(tables)
    hints = (state.get(SCHEMA_KEY) or {}).get("tables", {})
    for shape in pending:  # a later package's shape of a table replaces an earlier one's
        if shape.name not in loaded:
            root_hints = None if shape.parent else hints.get(shape.name)
            tables[shape.name] = _table(shape.name, shape.resource, shape.fields, root_hints, shape.parent)
    return Schema(name, _version(tables), _content_hash(tables), tables)


def _version(tables: Mapping[str, Mapping[str, Any]]) -> int:
    """The number of tables and columns (see the module's docstring for why a count)."""
    return sum(1 + len(table.get("columns", {})) for table in tables.values())


def has_schema(state: PipelineState) -> bool:
    """Whether the pipeline has loaded a table (dlt's pipeline has no schema before)."""
    return bool(state.get(SCHEMA_KEY) or state.get(resource_tables.TABLES_KEY))


def _observed_tables(state: PipelineState, dataset: Dataset) -> dict[str, dict[str, object]]:
    """Each table of the pipeline that the dataset holds, in dlt's shape."""
    present = dataset.table_names()
    hints = (state.get(SCHEMA_KEY) or {}).get("tables", {})
    owners: dict[str, str] = {}
    for (_, resource), names in sorted(resource_tables.tables_by_resource(state, present).items()):
        for name in names:
            owners.setdefault(name, resource)
    tables: dict[str, dict[str, object]] = {}
    for name in sorted(owners):
        schema = dataset.table(name).schema()
        if schema is not None:
            parent = _parent(name, owners)
            tables[name] = _table(name, owners[name], schema, None if parent else hints.get(name), parent)
    if STATE_TABLE in present and tables:
        schema = dataset.table(STATE_TABLE).schema()
        if schema is not None:
            state_table = _table(STATE_TABLE, STATE_TABLE, schema, None, None)
            state_table["write_disposition"] = "append"
            tables[STATE_TABLE] = state_table
    return tables


def _parent(name: str, tables: Mapping[str, str]) -> str | None:
    """A nested table's parent: the nearest table its name extends (``users__address__tags``
    is a child of ``users`` when no table ``users__address`` exists)."""
    parts = name.split(resource_tables.NESTING_SEPARATOR)
    for end in range(len(parts) - 1, 0, -1):
        candidate = resource_tables.NESTING_SEPARATOR.join(parts[:end])
        if candidate in tables:
            return candidate
    return None


def _table(
    name: str, resource: str, schema: T.StructType, hints: TableHintsRecord | None, parent: str | None
) -> dict[str, object]:
    declared = dict((hints or {}).get("columns") or {})
    keys = {hint: list((hints or {}).get(hint) or []) for hint in KEY_HINTS}
    merged = _disposition((hints or {}).get("write_disposition")).get("write_disposition") == "merge"
    columns = {}
    for field in schema.fields:
        column: dict[str, object] = {"name": field.name}
        # A type no sparkload data type names (another writer's) is left out, as dlt leaves
        # out an incomplete column's.
        with contextlib.suppress(ValueError):
            column["data_type"] = data_type_of_spark(field.dataType)
        if column.get("data_type") == "decimal" and isinstance(field.dataType, T.DecimalType):
            column["precision"], column["scale"] = field.dataType.precision, field.dataType.scale
        if column.get("data_type") == "text" and (declared.get(field.name) or {}).get("data_type") in (
            "time",
            "json",
        ):
            # Delta has no TIME or JSON type: times and json columns are stored as text
            column["data_type"] = declared[field.name]["data_type"]
        column["nullable"] = bool(field.nullable)
        if field.name in _SYSTEM_COLUMN_HINTS:
            column["nullable"] = False  # sparkload fills its own columns in every row
            column.update(_SYSTEM_COLUMN_HINTS[field.name])
        for key_hint in KEY_HINTS:
            if field.name in keys[key_hint]:
                column[key_hint] = True
        if column.get("primary_key") and merged:
            column["nullable"] = False  # a merge refuses a NULL key
        for hint, value in (declared.get(field.name) or {}).items():
            if hint not in ("data_type", "precision", "scale"):  # the table's own types win
                column[hint] = value
        columns[field.name] = column
    table: dict[str, object] = {"name": name, "columns": columns}
    if parent is not None:
        table["parent"] = parent
    else:
        table.update(_disposition((hints or {}).get("write_disposition")))
        table["resource"] = resource
    return table


def _disposition(given: object) -> dict[str, object]:
    """A recorded write disposition as dlt's table keys: ``write_disposition`` and, for a
    merge strategy other than the default, ``x-merge-strategy``."""
    if isinstance(given, Mapping):
        out = {"write_disposition": given.get("disposition")}
        if given.get("strategy") not in (None, "delete-insert"):
            out["x-merge-strategy"] = given["strategy"]
        return out
    return {} if given is None else {"write_disposition": given}


def _content_hash(tables: Mapping[str, object]) -> str:
    """dlt's ``version_hash``: a digest of the schema's content, in base64."""
    content = orjson.dumps(tables, option=orjson.OPT_SORT_KEYS)
    return base64.b64encode(hashlib.sha256(content).digest()).decode()


def _copy(value: object) -> object:
    if isinstance(value, Mapping):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


# -- the files ---------------------------------------------------------------------------------------
class SchemaFiles:
    """dlt's ``import_schema_path`` and ``export_schema_path``: folders of
    ``<schema name>.schema.yaml`` files."""

    def __init__(
        self,
        schema_name: str,
        import_path: str | os.PathLike[str] | None,
        export_path: str | os.PathLike[str] | None,
    ) -> None:
        self.schema_name = schema_name
        self.import_path = Path(import_path) if import_path is not None else None
        self.export_path = Path(export_path) if export_path is not None else None

    @property
    def configured(self) -> bool:
        return self.import_path is not None or self.export_path is not None

    @property
    def file_name(self) -> str:
        return f"{self.schema_name}{SCHEMA_FILE_SUFFIX}"

    def apply_import(self, tables: Mapping[str, ExtractedTable]) -> None:
        """Give each table the hints the import file sets for it: under the resource's own
        (a hint the resource declares wins, as in dlt). Only root tables take column hints."""
        imported = self.read_import()
        for table in tables.values():
            found = imported.get(table.name)
            if found:
                table.hints = _with_imported(table.hints, found)

    def read_import(self) -> dict[str, dict[str, dict[str, object]]]:
        """The import file's tables, names normalized, with only the hints sparkload uses."""
        if self.import_path is None:
            return {}
        path = self.import_path / self.file_name
        if not path.exists():
            others = sorted(p.name for p in self.import_path.glob(f"*{SCHEMA_FILE_SUFFIX}"))
            if others:
                logger.warning(
                    "%s holds %s but not %s: a sparkload pipeline's schema is named after the "
                    "pipeline; rename the file to import it",
                    self.import_path,
                    ", ".join(others),
                    self.file_name,
                )
            return {}
        try:
            document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise SparkloadConfigError(f"the imported schema {path} is not valid YAML: {exc}") from exc
        if not isinstance(document, Mapping) or not isinstance(document.get("tables") or {}, Mapping):
            raise SparkloadConfigError(f"the imported schema {path} has no 'tables' mapping")
        return {
            normalize_table_name(str(name)): _imported_table(path, str(name), table)
            for name, table in (document.get("tables") or {}).items()
            if not _is_system_name(str(name))
        }

    def after_load(self, schema: Schema, declared: Schema) -> None:
        """Write the export (the schema as loaded) and, as dlt does on a pipeline's first run,
        an import file holding the hints the resources declared when there is none yet."""
        if self.export_path is not None:
            write_atomically(self.export_path / self.file_name, schema.to_pretty_yaml().encode())
        if self.import_path is not None and not (self.import_path / self.file_name).exists():
            write_atomically(self.import_path / self.file_name, declared.to_pretty_yaml().encode())


def declared_schema(name: str, state: PipelineState) -> Schema:
    """The hints the resources declared (what dlt writes to a new import file): the tables
    recorded in the state, with their declared columns and keys only."""
    entry = state.get(SCHEMA_KEY) or {}
    tables = {}
    for table_name, hints in sorted((entry.get("tables") or {}).items()):
        columns: dict[str, dict[str, object]] = {
            column: {"name": column, **values} for column, values in hints.get("columns", {}).items()
        }
        for hint in KEY_HINTS:
            for column in hints.get(hint) or []:
                columns.setdefault(column, {"name": column}).update({"nullable": False, hint: True})
        table: dict[str, object] = {"name": table_name, "columns": columns}
        table.update(_disposition(hints.get("write_disposition")))
        table["resource"] = hints.get("resource")
        tables[table_name] = table
    return Schema(name, _version(tables), _content_hash(tables), tables)


def _is_system_name(name: str) -> bool:
    return name.startswith(RESERVED_TABLE_PREFIX) or name.startswith(_DLT_PREFIX)


def _imported_table(path: Path, table: str, content: object) -> dict[str, dict[str, object]]:
    if not isinstance(content, Mapping):
        raise SparkloadConfigError(f"the imported schema {path}: table '{table}' is not a mapping")
    columns = content.get("columns") or {}
    if not isinstance(columns, Mapping):
        raise SparkloadConfigError(f"the imported schema {path}: table '{table}' has no 'columns' mapping")
    out: dict[str, dict[str, object]] = {}
    for name, hints in columns.items():
        if _is_system_name(str(name)) or not isinstance(hints, Mapping):
            continue
        data_type = hints.get("data_type")
        if data_type is not None and data_type not in DATA_TYPES:
            raise SparkloadConfigError(
                f"the imported schema {path}: table '{table}', column '{name}': data_type must be "
                f"one of {', '.join(DATA_TYPES)}, got {data_type!r}"
            )
        out[normalize_column_path(str(name))] = {
            hint: hints[hint] for hint in (*IMPORTED_COLUMN_HINTS, *KEY_HINTS) if hint in hints
        }
    return out


def _with_imported(hints: LoadHints, imported: Mapping[str, Mapping[str, object]]) -> LoadHints:
    """``hints`` with the imported column hints beneath the declared ones, and the imported
    keys where the resource declares none."""
    columns = {name: dict(column) for name, column in hints.columns.items()}
    for name, column in imported.items():
        own = {hint: value for hint, value in column.items() if hint in IMPORTED_COLUMN_HINTS}
        if own:
            columns[name] = {**own, **columns.get(name, {})}
    return dataclasses.replace(
        hints,
        columns=columns,
        primary_key=hints.primary_key or keys_of_columns(imported, "primary_key"),
        merge_key=hints.merge_key or keys_of_columns(imported, "merge_key"),
    )
