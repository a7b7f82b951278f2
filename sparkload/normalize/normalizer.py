"""Normalize a load package in Spark: staged files → typed, flattened tables as Parquet.

Per extracted table:
1. read the staged NDJSON/Parquet (schema inferred over every record, never a sample);
2. flatten nested dicts, give every row ``_sparkload_id`` and ``_sparkload_load_id`` and
   write the root rows to Parquet (the one place ids are drawn, so retries reuse them);
3. explode lists into nested tables linked by parent id, list index and root id;
4. profile each table (one aggregation per slice of its columns) and record how every
   column is typed.
The typing itself is applied by the loader when it reads the Parquet, so the package is
written once.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.engine_family import is_apache_spark
from sparkload.common.folder import Folder
from sparkload.common.hints import LoadHints
from sparkload.common.naming import PATH_SEPARATOR
from sparkload.common.package import ARROW_DIR, JSON_DIR, SPARK_DIR, SPARK_PART_PREFIX
from sparkload.common.sql import quote
from sparkload.common.system_columns import ID, LIST_IDX, LOAD_ID, PARENT_ID, ROOT_ID
from sparkload.exceptions import DamagedFileError, NormalizeError
from sparkload.extract.storage import EngineFiles
from sparkload.normalize.columns import Flattened, NestedList, case_collisions, flatten, flatten_element
from sparkload.normalize.conflicts import doubles_for_bigint_columns, preferred_types, split_conflicts
from sparkload.normalize.flat_json import arrow_schema, write_flat_json
from sparkload.normalize.hinted_collisions import refuse_hints_on_collided_columns
from sparkload.normalize.infer import ColumnSpec, infer_columns
from sparkload.normalize.json_schema import INFER_ALL, SMALL_FILE_BYTES, needs_rewrite, with_empty_dicts
from sparkload.normalize.observed import observing
from sparkload.normalize.slices import SLICE_COLUMNS, StagedTable
from sparkload.normalize.staged_schema import keep_schema, stage
from sparkload.normalize.system_keys import refuse_repeated_ids, take_system_columns

logger = logging.getLogger(__name__)

_NESTED_PREFIX = "__nested__"
# The width from which a flat table's staged NDJSON is normalized by Arrow in this process
# (normalize/flat_json.py): where the engine's plans cost more than linear time in the
# width. Below it the engine's flattening write is faster (1,000,000 rows of S1's eight
# columns: 4.0-5.1 s through the engine, 4.4-6.5 s through Arrow, side by side).
ARROW_MIN_COLUMNS = SLICE_COLUMNS
# The longest table name, in bytes: a table is a folder (and its package's staged folders
# add a suffix such as ``.kept1``), and filesystems take 255 bytes a name.
MAX_TABLE_NAME_BYTES = 240


@dataclasses.dataclass
class NormalizedTable:
    name: str
    parent: str | None
    root: str
    rows: int
    columns: list[ColumnSpec]
    system_columns: list[str]
    collisions: list[str]
    # Distinct primary keys in the load (merge roots): equal to rows means no duplicates.
    distinct_keys: int | None = None
    # Rows left out after normalize, by reason ("expectation 'valid_amount'", "schema
    # contract: new column 'x'"), with the folder the kept rows were written to (None: the
    # folder named after the table holds them all). See ``normalize/row_drop.py``.
    dropped: dict[str, int] = dataclasses.field(default_factory=dict)
    folder: str | None = None
    # Rows loaded although they broke a rule that only warns, by reason (an expectation
    # with on_violation="warn").
    warned: dict[str, int] = dataclasses.field(default_factory=dict)
    # The smallest and largest value of the columns whose range the staging write observed
    # (``key_bounds``): int columns read as they are staged and row id columns, where no
    # row holds a NULL. Rows left out later only narrow a range, so these bound the rows
    # the load writes (load/key_bounds.py).
    bounds: dict[str, list[Any]] = dataclasses.field(default_factory=dict)

    @property
    def rows_folder(self) -> str:
        """The folder of the package's normalized data that holds this table's rows."""
        return self.folder or self.name

    def to_dict(self) -> dict[str, object]:
        # The columns are left out of asdict, which would copy each spec field by field
        # only for to_dict to replace them (seconds for a table of 10,000 columns).
        data = dataclasses.asdict(dataclasses.replace(self, columns=[]))
        data["columns"] = [column.to_dict() for column in self.columns]
        if not self.bounds:
            del data["bounds"]  # as packages written before the ranges were kept have it
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NormalizedTable:
        values = dict(data)
        values["columns"] = [ColumnSpec.from_dict(c) for c in data["columns"]]
        return cls(**values)


class TableNormalizer:
    """Normalizes one extracted table and the nested tables under it."""

    def __init__(
        self,
        spark: SparkSession,
        load_id: str,
        hints: LoadHints,
        destination_schema: Callable[[str], T.StructType | None],
    ) -> None:
        self.spark = spark
        self.load_id = load_id
        self.hints = hints
        self.destination_schema = destination_schema
        self.max_nesting = hints.max_table_nesting
        self.root_key = hints.root_key
        self.column_hints = hints.columns

    def normalize(
        self,
        table: str,
        extracted: Path,
        out_uri: str,
        json_schema: str | None = None,
        engine_files: EngineFiles | None = None,
    ) -> list[NormalizedTable]:
        """Normalize one extracted table into Parquet folders under ``out_uri`` (one per
        table); ``json_schema`` is its staged NDJSON's schema if extraction inferred it;
        ``engine_files`` says where the engine reads the extracted files (by default, here)."""
        self._engine_files = engine_files or EngineFiles(extracted)
        refuse_cut_lines(extracted / JSON_DIR, self.load_id, table)
        schema = T._parse_datatype_json_string(json_schema) if json_schema else None
        preferred = preferred_types(
            self.destination_schema(table), self.column_hints, self.hints.nested_columns
        )
        try:
            if schema is not None and case_collisions(schema):
                raise _KeysDifferingInCase()
            raw = self._read(extracted, schema=schema)
            # Staged NDJSON alone, read with the schema inferred at extract, has that schema:
            # asking the engine for it again is a round trip that plans the whole width.
            json_only = isinstance(schema, T.StructType) and self._staged_json_only(extracted)
            raw_schema = schema if json_only and isinstance(schema, T.StructType) else raw.schema
            if not (doubles_for_bigint_columns(raw_schema, preferred) or case_collisions(raw_schema)):
                flat_files = self._json_files(extracted) if json_only else None
                return self._normalize(table, raw, out_uri, raw_schema, flat_files)
        except _KeysDifferingInCase:
            pass
        except Exception as exc:
            if not (needs_rewrite(exc) or _is_hidden_task_error(exc)):
                raise
        # Some field holds values of different JSON types, keys differ only in case or
        # dicts nest too deep for the engine: rewrite the staged rows and read them again.
        logger.info("table '%s': rewriting staged rows the engine cannot read as they are", table)
        split_dir = extracted / "json_split"
        split_conflicts(extracted / JSON_DIR, split_dir, preferred, table, self.max_nesting)
        self._engine_files.publish(split_dir)
        return self._normalize(table, self._read(extracted, json_dir=split_dir), out_uri)

    def _read(self, extracted: Path, json_dir: Path | None = None, schema: Any = None) -> DataFrame:
        frames = []
        json_dir = json_dir or extracted / JSON_DIR
        if json_dir.exists():
            files = self._engine_files.engine_path(json_dir)
            if schema is None and is_apache_spark(self.spark):
                inferred = self.spark.read.options(**INFER_ALL).json(files).schema
                listed = sorted(path for path in json_dir.iterdir() if path.is_file())
                schema = with_empty_dicts(inferred, listed)
            reader = (
                self.spark.read.schema(schema) if schema is not None else self.spark.read.options(**INFER_ALL)
            )
            frames.append(reader.json(files))
        if (extracted / ARROW_DIR).exists():
            frames.append(self.spark.read.parquet(self._engine_files.engine_path(extracted / ARROW_DIR)))
        # Each Spark DataFrame item is a folder of its own, with its own schema; they are
        # staged as Arrow items are, so they are read alike. Only finished folders count.
        spark_dir = extracted / SPARK_DIR
        if spark_dir.is_dir():
            parts = sorted(
                p for p in spark_dir.iterdir() if p.is_dir() and p.name.startswith(SPARK_PART_PREFIX)
            )
            frames += [self.spark.read.parquet(self._engine_files.engine_path(part)) for part in parts]
        if not frames:
            raise NormalizeError(f"nothing was staged in {extracted}")
        frame = frames[0]
        for other in frames[1:]:
            frame = frame.unionByName(other, allowMissingColumns=True)
        return frame

    @property
    def _id_prefix(self) -> str:
        """What every root row id drawn in this load begins with (its counter follows)."""
        return self.load_id.replace(".", "") + "_"

    def _staged_json_only(self, extracted: Path) -> bool:
        """Whether ``extracted`` holds staged NDJSON and nothing else (no Arrow or Spark
        DataFrame items, whose files are read beside it)."""
        return (extracted / JSON_DIR).is_dir() and not any(
            (extracted / kind).exists() for kind in (ARROW_DIR, SPARK_DIR)
        )

    def _json_files(self, extracted: Path) -> list[Path] | None:
        """The staged NDJSON files in the order they were written, where this process
        may write the normalized Parquet the engine reads (the engine reads this disk)."""
        if self._engine_files.remote is not None:
            return None
        return sorted(path for path in (extracted / JSON_DIR).iterdir() if path.is_file())

    def _normalize(
        self,
        table: str,
        raw: DataFrame,
        out_uri: str,
        raw_schema: T.StructType | None = None,
        json_files: list[Path] | None = None,
    ) -> list[NormalizedTable]:
        """Normalize the staged rows ``raw`` (of ``raw_schema``, asked of the engine when
        not given); ``json_files`` are the staged NDJSON files ``raw`` reads, when it reads
        nothing else."""
        raw_schema = raw_schema or raw.schema
        flat = flatten(
            raw_schema,
            lambda name: F.col(quote(name)),
            table,
            "",
            0,
            self.max_nesting,
            whole=_json_columns(self.column_hints),
            top=True,
        )
        refuse_hints_on_collided_columns(table, self.hints, flat.collisions)
        given_id = take_system_columns(flat, table, root=True, disposition=self.hints.disposition)
        # Unique within the load (Spark's partition-aware counter) and across loads (the
        # load id); drawn once here and stored, so every retry of the load reuses it. The
        # counter is zero-padded so ids sort as they were drawn: the nested rows of a run of
        # root rows then hold a narrow range of root ids, which a merge's rewrite prunes by.
        counter = F.lpad(F.lower(F.hex(F.monotonically_increasing_id())), 16, "0")
        row_id = F.concat(F.lit(self._id_prefix), counter)
        if given_id is not None:
            row_id = F.coalesce(given_id, row_id)  # dlt's "bring your own row id"
        target = f"{out_uri}/{table}"
        written = self._write_flat(json_files, raw_schema, flat, given_id, target)
        if written is not None:
            return [self._describe(table, None, table, written, flat, [ID, LOAD_ID])]
        columns = [leaf.selected() for leaf in flat.leaves]
        columns += [nested.column.alias(_NESTED_PREFIX + nested.table) for nested in flat.nested]
        columns += [row_id.alias(ID), F.lit(self.load_id).alias(LOAD_ID)]
        staged, written = self._stage(raw.select(*columns), target, flat, ids=[ID])
        if given_id is not None:
            refuse_repeated_ids(staged, table, self.load_id)
        result = [self._describe(table, None, table, written, flat, [ID, LOAD_ID])]
        root_id = F.col(ID)
        for nested in flat.nested:
            result += self._nested(nested, staged, root_id, table, table, out_uri)
        return result

    def _write_flat(
        self,
        json_files: list[Path] | None,
        raw_schema: T.StructType,
        flat: Flattened,
        given_id: Column | None,
        target: str,
    ) -> StagedTable | None:
        """Write a flat table's staged NDJSON ``json_files`` as its normalized Parquet at
        ``target`` without the engine (see normalize/flat_json.py); None where the table is
        not flat, brings its own row ids, or holds a value the Arrow read refuses: the
        engine's flattening write then does it."""
        if json_files is None or given_id is not None or flat.nested or not Folder(target).is_local:
            return None
        if len(raw_schema.fields) < ARROW_MIN_COLUMNS and not self._small_on_apache_spark(json_files):
            return None  # narrow: the engine's write, parallel and native, is the faster
        if len(flat.leaves) != len(raw_schema.fields) or not all(leaf.as_is for leaf in flat.leaves):
            return None
        schema = arrow_schema(raw_schema)
        if schema is None:
            return None
        summary = write_flat_json(json_files, schema, target, self._id_prefix, ID, LOAD_ID, self.load_id)
        if summary is None:
            return None
        system = [T.StructField(ID, T.StringType()), T.StructField(LOAD_ID, T.StringType())]
        written = T.StructType([*raw_schema.fields, *system])
        keep_schema(target, written)  # the load reads the folder with it, not its footers
        return StagedTable(self.spark, target, written, summary)

    def _small_on_apache_spark(self, json_files: list[Path]) -> bool:
        """Whether the staged NDJSON ``json_files`` are small enough, on Apache Spark, that
        Arrow writes them whatever their width: there the engine's write and the profile's
        pass over it are a job each, whose fixed cost exceeds Arrow's parse of this little."""
        size = sum(path.stat().st_size for path in json_files)
        return size <= SMALL_FILE_BYTES and is_apache_spark(self.spark)

    def _stage(
        self, frame: DataFrame, target: str, flat: Flattened, ids: list[str]
    ) -> tuple[DataFrame, StagedTable]:
        """Write ``frame`` as the Parquet folder ``target``; its rows read back with the
        schema they were written with (no read of the files' footers: on Apache Spark, a
        job), and the folder with the profile's first pass over ``flat``'s leaves and the
        range of its row id columns ``ids`` where the write could take them
        (normalize/observed.py)."""
        frame, observed = observing(frame, [leaf.name for leaf in flat.leaves], ids)
        schema = stage(frame, target)
        written = StagedTable(self.spark, target, schema, observed() if observed else None)
        return self.spark.read.schema(schema).parquet(target), written

    def _nested(
        self,
        nested: NestedList,
        parent: DataFrame,
        root_id: Column,
        root: str,
        parent_table: str,
        out_uri: str,
    ) -> list[NormalizedTable]:
        name = nested.table
        refuse_long_table_name(name, root)
        array = F.col(quote(_NESTED_PREFIX + name))
        exploded = parent.select(
            F.col(ID).alias(PARENT_ID),
            root_id.alias(ROOT_ID),
            F.posexplode(array).alias(LIST_IDX, "__element"),
        )
        flat = flatten_element(
            nested.element,
            F.col("__element"),
            name,
            nested.level,
            self.max_nesting,
            whole=_json_columns(self._nested_column_hints(name, root)),
        )
        take_system_columns(flat, name, root=False, disposition=self.hints.disposition)
        child_id = F.md5(F.concat_ws("|", F.col(PARENT_ID), F.lit(name), F.col(LIST_IDX).cast("string")))
        columns = [leaf.selected() for leaf in flat.leaves]
        columns += [inner.column.alias(_NESTED_PREFIX + inner.table) for inner in flat.nested]
        system = [PARENT_ID, LIST_IDX, ID, LOAD_ID] + ([ROOT_ID] if self.root_key else [])
        columns += [
            F.col(PARENT_ID),
            F.col(LIST_IDX).cast("bigint").alias(LIST_IDX),
            child_id.alias(ID),
            F.lit(self.load_id).alias(LOAD_ID),
            F.col(ROOT_ID),
        ]
        target = f"{out_uri}/{name}"
        staged, written = self._stage(exploded.select(*columns), target, flat, ids=[ROOT_ID])
        result = [self._describe(name, parent_table, root, written, flat, system)]
        for inner in flat.nested:
            result += self._nested(inner, staged, F.col(ROOT_ID), root, name, out_uri)
        return result

    def _describe(
        self,
        name: str,
        parent: str | None,
        root: str,
        staged: StagedTable,
        flat: Flattened,
        system: list[str],
    ) -> NormalizedTable:
        # The schema is read once, by the caller: on Spark Connect each ``.schema`` is a round
        # trip that analyses the whole plan, so a read per column made wide tables cost
        # quadratic time. (StructType looks a name up field by field: a dict keeps the
        # lookups linear too.)
        types = {field.name: field.dataType for field in staged.schema.fields}
        leaves = {leaf.name: types[leaf.name] for leaf in flat.leaves}
        is_root = parent is None
        hints = self.column_hints if is_root else self._nested_column_hints(name, root)
        keys: tuple[str, ...] = ()
        if is_root and self.hints.disposition == "merge":
            keys = self.hints.primary_key
        # The distinct keys are counted only where the merge asks for them (a query of its own).
        counted = keys if is_root and self.hints.merge_asks_for_duplicate_keys else ()
        specs, rows, distinct_keys = infer_columns(
            staged, name, leaves, hints, self.destination_schema(name), required=keys, distinct=counted
        )
        declared = {spec.name for spec in specs}
        missing = [key for key in keys if key not in declared]
        if missing:
            raise NormalizeError(
                f"table '{name}': primary key column(s) {', '.join(missing)} are not in the data",
                table=name,
            )
        collisions = [f"{c.original!r} → {c.resolved}" for c in flat.collisions]
        for note in collisions:
            logger.warning("table '%s': column name collision resolved: %s", name, note)
        bounds = _observed_bounds(staged, specs, rows)
        return NormalizedTable(
            name, parent, root, rows, specs, system, collisions, distinct_keys, bounds=bounds
        )

    def _nested_column_hints(self, name: str, root: str) -> Mapping[str, Mapping[str, object]]:
        """The column hints of the nested table ``name`` (dlt's nested_hints), which are
        keyed by the table's path under its root table."""
        start = root + PATH_SEPARATOR
        return self.hints.nested_columns.get(name.removeprefix(start), {}) if name.startswith(start) else {}


def _observed_bounds(staged: StagedTable, specs: list[ColumnSpec], rows: int) -> dict[str, list[Any]]:
    """The ranges the staging write observed that hold for the table's rows as the load
    reads them: of its row id columns, and of its int columns read as they are staged (a
    column fed by other staged columns too, or converted, may hold values outside its
    staged column's range). None where a column holds a NULL (no range holds it)."""
    summary = staged.summary
    if summary is None or not rows:
        return {}
    as_staged = [
        spec.name
        for spec in specs
        if spec.plain
        and spec.source == spec.name
        and not spec.parts
        and isinstance(spec.spark_type, T.IntegralType)
    ]
    bounds: dict[str, list[Any]] = {}
    for name in [*as_staged, ID, ROOT_ID]:
        column = summary.columns.get(name)
        if column is None or column.values != rows or column.low is None or column.high is None:
            continue
        bounds[name] = [column.low, column.high]
    return bounds


def refuse_long_table_name(name: str, root: str) -> None:
    """Refuse a nested table whose name no folder can have: each list in a list is a table
    one level further (``<table>__list``), so lists nested some 30 deep name one longer than
    a filesystem allows."""
    if len(name.encode()) <= MAX_TABLE_NAME_BYTES:
        return
    raise NormalizeError(
        f"table '{root}': the nested table '{name[:60]}…' would be named with "
        f"{len(name.encode())} bytes, more than the {MAX_TABLE_NAME_BYTES} a table's folder can "
        "have: its lists (or dicts in lists) nest too deep. Set max_table_nesting (dlt's "
        "hint) so deeper levels are kept whole as JSON, or flatten the data first. Nothing "
        "was loaded; the extracted package stays and the next run retries it "
        "(pipeline.drop_pending_packages() discards it)",
        table=root,
    )


def _json_columns(hints: Mapping[str, Mapping[str, object]]) -> frozenset[str]:
    """The columns hinted ``json``: kept whole, not flattened into columns or nested tables."""
    return frozenset(name for name, h in hints.items() if h.get("data_type") == "json")


def refuse_cut_lines(json_dir: Path, load_id: str, table: str) -> None:
    """Refuse staged NDJSON whose last line is incomplete. Extract writes whole lines, so a
    file that does not end with a newline was cut short after it was written (a full disk,
    a copy interrupted); Spark would read the cut line as a parse error or, leniently, as a
    row of NULLs. One byte read per file (files are rotated at 16 MiB)."""
    if not json_dir.is_dir():
        return
    for path in sorted(path for path in json_dir.iterdir() if path.is_file()):
        with open(path, "rb") as staged:
            size = staged.seek(0, 2)
            if size == 0:
                continue
            staged.seek(size - 1)
            if staged.read(1) == b"\n":
                continue
        raise DamagedFileError(
            f"load package {load_id}, table '{table}': the staged file {path} ends in the middle "
            "of a line (it was cut short after extract wrote it); pipeline.drop_pending_packages() "
            "discards the package, and the next run extracts its data again",
            path=str(path),
            load_id=load_id,
            table=table,
        )


class _KeysDifferingInCase(Exception):
    """The staged rows hold keys that differ only in case, which the engine cannot select."""


def _is_hidden_task_error(exc: Exception) -> bool:
    """Sail 0.7.2's cluster mode retries a failed task, and the retry can collide with the
    first attempt's output: the job then reports that collision instead of the task's own
    error (here, often the JSON type conflict). The split path reads the data again: it
    succeeds where the cause was a type conflict and raises the real error otherwise."""
    return "a different attempt has already produced job output" in str(exc)
