"""Schemas of staged NDJSON files, inferred by Spark over every record.

Extraction hands each finished file to ``SchemaInference``, which infers its schema on a
background thread while Python keeps producing rows; the engine works on the other core.
Normalization then reads the files with the merged schema instead of inferring again.
Two files disagreeing on a field's type (other than integers vs floats) is a conflict:
normalization then takes the slow path that splits values into variant columns. So is a
file the engine cannot infer (values of conflicting types in one file, dicts nested deeper
than the engine can describe).
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, cast

import orjson
from pyspark.sql import types as T

from sparkload.common.engine_family import is_apache_spark
from sparkload.common.json_types import JSONValue

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Sail infers JSON schemas from a sample unless told otherwise, and then reads a later 2.5
# in an integer column as 2. Inferring over every record makes that impossible.
INFER_ALL = {"schemaInferMaxRecords": str(2**62)}


class SchemaConflict(Exception):
    """Two staged files give one field different, incompatible types."""


def is_json_type_conflict(exc: Exception) -> bool:
    """Whether the engine refused to read or infer JSON because one field holds values of
    incompatible JSON types (a scalar in one record, an object or array in another)."""
    text = str(exc)
    return "Json error" in text or "JSON" in text and "decod" in text


def is_schema_too_deep(exc: Exception) -> bool:
    """Whether the engine could not describe a schema to the client because it nests too
    deep (dicts 32 levels deep: the protobuf message describing it exceeds the client's
    recursion limit, and the client reports only that it could not read the response)."""
    return "Exception deserializing response" in str(exc)


def is_case_ambiguity(exc: Exception) -> bool:
    """Whether the engine refused keys that differ only in case (``Id``, ``id``): it
    resolves columns case-insensitively, as Spark does by default (Sail says the name is
    ambiguous, Apache Spark's JSON inference that the column already exists)."""
    text = str(exc)
    return "Ambiguous case-insensitive" in text or "COLUMN_ALREADY_EXISTS" in text


def needs_rewrite(exc: Exception) -> bool:
    """Whether reading staged NDJSON failed on something normalize's slow path rewrites
    (see normalize/conflicts.py): a type conflict, a schema nested too deep, keys that
    differ only in case."""
    return is_json_type_conflict(exc) or is_schema_too_deep(exc) or is_case_ambiguity(exc)


# Staged NDJSON of at most this many bytes is inferred in this process where the engine is
# Apache Spark and the records are flat (see ``scalar_schema``): there the engine's inference
# is a job of its own, whose fixed cost (planning, scheduling, a task) is tenths of a second
# to seconds, while parsing a file this small takes milliseconds.
SMALL_FILE_BYTES = 1 << 20


def infer_json_schema(spark: SparkSession, path: str, engine_path: str | None = None) -> T.StructType:
    """The file's schema, its fields in the order of the file's first record: JVM Spark
    sorts inferred fields by name, Sail keeps them as seen, and a table's columns (and the
    order of its nested tables) must not depend on the engine. The engine reads the file at
    ``engine_path`` (its copy in a bucket, for a cluster), this process at ``path``."""
    schema = _small_flat_schema(spark, path)
    if schema is None:
        schema = spark.read.options(**INFER_ALL).json(engine_path or path).schema
        if is_apache_spark(spark):
            schema = with_empty_dicts(schema, [Path(path)])
    with open(path, "rb") as staged:
        first = staged.readline()
    ordered = ordered_like(schema, orjson.loads(first)) if first.strip() else schema
    return cast(T.StructType, ordered)


def _small_flat_schema(spark: SparkSession, path: str) -> T.StructType | None:
    """The schema Apache Spark infers for the small file ``path`` of flat records, found
    here; None where the engine is to infer it (another engine, a larger file, records
    ``scalar_schema`` leaves to the engine)."""
    if Path(path).stat().st_size > SMALL_FILE_BYTES or not is_apache_spark(spark):
        return None
    with open(path, "rb") as staged:
        return scalar_schema(staged.read().splitlines())


_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def _scalar_type(value: JSONValue) -> T.DataType | None:
    """The type Apache Spark's JSON inference gives the JSON scalar ``value`` (NullType for
    null); None for a dict, a list or an integer outside a long (Spark infers a decimal)."""
    if value is None:
        return T.NullType()
    if isinstance(value, bool):  # before int: a bool is an int in Python
        return T.BooleanType()
    if isinstance(value, int):
        return T.LongType() if _LONG_MIN <= value <= _LONG_MAX else None
    if isinstance(value, float):
        return T.DoubleType()
    if isinstance(value, str):
        return T.StringType()
    return None


def scalar_schema(lines: list[bytes]) -> T.StructType | None:
    """The schema Apache Spark's JSON inference (over every record, its default options)
    gives the NDJSON ``lines`` when each record is an object of scalars: a long, double,
    boolean or string field per key, longs and doubles merging into doubles, the fields
    sorted by name as Spark sorts them. None where the engine is to infer: a dict or list
    value, an integer outside a long, a key null in every record (Apache Spark and Sail type
    it differently), two types that do not merge (Spark makes them a string column; the
    engine's read then decides), keys differing only in case, or a line not an object."""
    fields: dict[str, T.DataType] = {}
    for line in lines:
        if not line.strip():
            continue  # Spark skips blank lines
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            return None  # the engine's read reports or rewrites it
        if not isinstance(record, dict):
            return None
        for key, value in record.items():
            found = _scalar_type(value)
            if found is None:
                return None
            try:
                fields[key] = merge_types(fields.get(key, T.NullType()), found)
            except SchemaConflict:
                return None
    if not fields or any(isinstance(dtype, T.NullType) for dtype in fields.values()):
        return None
    if len({name.lower() for name in fields}) != len(fields):
        return None
    # Spark orders inferred fields by name, comparing UTF-16 code units.
    names = sorted(fields, key=lambda name: name.encode("utf-16-be"))
    return T.StructType([T.StructField(name, fields[name], True) for name in names])


def with_empty_dicts(schema: T.StructType, paths: list[Path]) -> T.StructType:
    """``schema``, inferred by Apache Spark from the staged NDJSON ``paths``, with the fields
    its inference deleted for holding only empty dicts (Spark drops a struct without fields,
    SPARK-8093): a list of ``{}`` in every row is a nested row per element in dlt, which the
    engine's read then gives (a read schema may hold a struct without fields). Only lines
    holding ``{}`` (orjson writes an empty dict so) are parsed here; a file without one
    costs one search of its bytes."""
    shape: T.DataType | None = None
    for path in paths:
        data = path.read_bytes()
        if b"{}" not in data:
            continue
        for line in data.splitlines():
            if b"{}" in line:
                try:
                    shape = _merged_shape(shape, _empty_dict_shape(orjson.loads(line)))
                except orjson.JSONDecodeError:
                    continue  # the engine's read reports or rewrites it
    if not isinstance(shape, T.StructType):
        return schema
    return cast(T.StructType, _with_shape(schema, shape))


def _empty_dict_shape(value: JSONValue) -> T.DataType | None:
    """The type of the parts of ``value`` that lead to an empty dict: a dict of those keys,
    a list of those elements; None where no empty dict is reached."""
    if isinstance(value, dict):
        fields = [(key, _empty_dict_shape(item)) for key, item in value.items()]
        kept = [T.StructField(key, found, True) for key, found in fields if found is not None]
        return T.StructType(kept) if kept or not value else None
    if isinstance(value, list):
        element: T.DataType | None = None
        for item in value:
            element = _merged_shape(element, _empty_dict_shape(item))
        return T.ArrayType(element, True) if element is not None else None
    return None


def _merged_shape(left: T.DataType | None, right: T.DataType | None) -> T.DataType | None:
    if left is None or right is None:
        return left if right is None else right
    if isinstance(left, T.StructType) and isinstance(right, T.StructType):
        fields = {field.name: field.dataType for field in left.fields}
        for field in right.fields:
            fields[field.name] = _merged_shape(fields.get(field.name), field.dataType) or field.dataType
        return T.StructType([T.StructField(name, dtype, True) for name, dtype in fields.items()])
    if isinstance(left, T.ArrayType) and isinstance(right, T.ArrayType):
        element = _merged_shape(left.elementType, right.elementType)
        return T.ArrayType(element or left.elementType, True)
    return left  # a dict in some rows, a list in others: the engine's type decides


def _with_shape(inferred: T.DataType, shape: T.DataType) -> T.DataType:
    """``inferred`` with the fields of ``shape`` it lacks added; a field the engine typed
    keeps its type."""
    if isinstance(inferred, T.StructType) and isinstance(shape, T.StructType):
        fields = {field.name: field for field in inferred.fields}
        for field in shape.fields:
            found = fields.get(field.name)
            dtype = field.dataType if found is None else _with_shape(found.dataType, field.dataType)
            fields[field.name] = T.StructField(field.name, dtype, True)
        return T.StructType(list(fields.values()))
    if isinstance(inferred, T.ArrayType) and isinstance(shape, T.ArrayType):
        return T.ArrayType(_with_shape(inferred.elementType, shape.elementType), inferred.containsNull)
    return inferred


def ordered_like(data_type: T.DataType, sample: JSONValue) -> T.DataType:
    """``data_type`` with struct fields in ``sample``'s key order (a decoded JSON value);
    fields the sample lacks follow in their inferred order."""
    if isinstance(data_type, T.StructType) and isinstance(sample, dict):
        by_name = {field.name: field for field in data_type.fields}
        names = [name for name in sample if name in by_name]
        names += [name for name in by_name if name not in sample]
        return T.StructType(
            [
                T.StructField(name, ordered_like(by_name[name].dataType, sample.get(name)), True)
                for name in names
            ]
        )
    if isinstance(data_type, T.ArrayType) and isinstance(sample, list):
        element = next((item for item in sample if item is not None), None)
        return T.ArrayType(ordered_like(data_type.elementType, element), data_type.containsNull)
    return data_type


def merge_types(left: T.DataType, right: T.DataType) -> T.DataType:
    if isinstance(left, T.NullType):
        return right
    if isinstance(right, T.NullType):
        return left
    if isinstance(left, T.StructType) and isinstance(right, T.StructType):
        return merge_structs(left, right)
    if isinstance(left, T.ArrayType) and isinstance(right, T.ArrayType):
        return T.ArrayType(merge_types(left.elementType, right.elementType), True)
    if left == right:
        return left
    numbers = {type(left), type(right)}
    if numbers <= {T.LongType, T.DoubleType}:
        return T.DoubleType()
    raise SchemaConflict(f"{left.simpleString()} vs {right.simpleString()}")


def merge_structs(left: T.StructType, right: T.StructType) -> T.StructType:
    fields = {f.name: f.dataType for f in left.fields}
    order = [f.name for f in left.fields]
    for field in right.fields:
        if field.name in fields:
            fields[field.name] = merge_types(fields[field.name], field.dataType)
        else:
            fields[field.name] = field.dataType
            order.append(field.name)
    return T.StructType([T.StructField(name, fields[name], True) for name in order])


class SchemaInference:
    """Infers the schema of each staged file as soon as it is closed."""

    def __init__(self, spark: SparkSession, engine_path: Callable[[Path], str] = str) -> None:
        self._spark = spark
        # Where the engine reads a closed file (EngineFiles.engine_path).
        self._engine_path = engine_path
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="sparkload-infer"
        )
        self._futures: dict[str, list[concurrent.futures.Future[T.StructType]]] = {}
        self._lock = threading.Lock()

    def file_closed(self, table: str, path: Path) -> None:
        future = self._pool.submit(infer_json_schema, self._spark, str(path), self._engine_path(path))
        with self._lock:
            self._futures.setdefault(table, []).append(future)

    def results(self) -> dict[str, str | None]:
        """Per table the merged schema as JSON, or None where files conflict."""
        out: dict[str, str | None] = {}
        try:
            for table, futures in self._futures.items():
                try:
                    # One file alone can hold a conflict the engine refuses to infer.
                    schemas = [future.result() for future in futures]
                    merged = schemas[0]
                    for schema in schemas[1:]:
                        merged = merge_structs(merged, schema)
                    out[table] = merged.json()
                except SchemaConflict:
                    out[table] = None
                except Exception as exc:
                    if not needs_rewrite(exc):
                        raise
                    out[table] = None  # normalization rewrites the values (conflicts.py)
        finally:
            self._pool.shutdown(wait=True)
        return out

    def cancel(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
