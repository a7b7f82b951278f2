"""Spark DataFrames as items: checked, staged by the engine, never collected.

A DataFrame a resource yields is written by the engine itself into the load package as
Parquet, with its columns shaped as ``stage_arrow`` shapes an Arrow table's (strings tagged
as plain text, times as tagged text), so normalize reads it exactly as it reads Arrow items
and flattens it as it flattens dicts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.sql import quote
from sparkload.common.tags import TAG_STRING, TAG_TIME
from sparkload.exceptions import ExtractError, ResourceError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Types a Delta table of sparkload cannot hold as they are: the user casts them first.
# By name, as PySpark versions differ in which of them they define.
_UNSUPPORTED = frozenset(
    {
        "MapType",
        "NullType",
        "VariantType",
        "CalendarIntervalType",
        "DayTimeIntervalType",
        "YearMonthIntervalType",
        "GeographyType",
        "GeometryType",
    }
)


def check_session(resource: str, frame: DataFrame, spark: SparkSession) -> None:
    """Refuse a DataFrame of another engine than the pipeline's: the engine writes it into
    the package, and a DataFrame can only be written by the server that holds its plan."""
    own = frame.sparkSession
    if own is spark or _engine_of(own) == _engine_of(spark):
        return
    raise ResourceError(
        f"resource '{resource}': it yielded a Spark DataFrame of another Spark session "
        f"({_engine_of(own)}) than the pipeline's ({_engine_of(spark)}); make the DataFrame "
        "with pipeline.spark, or run the pipeline with spark=<the DataFrame's session>"
    )


def _engine_of(session: SparkSession) -> str:
    """Where a session's plans run: a Spark Connect server's address, or this process's JVM
    (classic sessions of one process share one SparkContext)."""
    client = getattr(session, "client", None)
    builder = getattr(client, "_builder", None)
    url = getattr(builder, "url", None)
    if url is not None:
        return f"Spark Connect at {getattr(url, 'netloc', url)}"
    return "the JVM of this process"


def staged_columns(resource: str, schema: T.StructType) -> list[Column]:
    """The columns of a DataFrame as extract stages Arrow: top-level and struct strings
    tagged plain text, times tagged; an unsupported type raises naming its column.

    Strings inside arrays stay untagged, as Arrow's lists do (tagging them needs a lambda,
    which Sail's cluster mode cannot run with field access): normalize takes such strings
    as plain text either way."""
    return [
        _staged(resource, field.name, F.col(quote(field.name)), field.dataType).alias(field.name)
        for field in schema.fields
    ]


def _staged(resource: str, path: str, column: Column, dtype: T.DataType) -> Column:
    if _unsupported(dtype):
        hint = (
            " (a column of NULLs only: cast it to the type it should have)"
            if isinstance(dtype, T.NullType)
            else ""
        )
        raise ExtractError(
            resource,
            f"column '{path}' of a Spark DataFrame item has type {dtype.simpleString()}, which "
            f"sparkload cannot load{hint}; cast or drop it before yielding the DataFrame",
        )
    if isinstance(dtype, (T.StringType, T.VarcharType, T.CharType)):
        return F.concat(F.lit(TAG_STRING), column.cast("string"))
    if type(dtype).__name__ == "TimeType":
        return F.concat(F.lit(TAG_TIME), column.cast("string"))
    if isinstance(dtype, T.StructType):
        children = [
            _staged(resource, f"{path}.{field.name}", column.getField(field.name), field.dataType).alias(
                field.name
            )
            for field in dtype.fields
        ]
        # A NULL struct stays NULL (not a struct of NULLs), as in Arrow.
        return F.when(column.isNotNull(), F.struct(*children))
    if isinstance(dtype, T.ArrayType):
        _refuse_unsupported(resource, f"{path}[]", dtype.elementType)
    return column


def _refuse_unsupported(resource: str, path: str, dtype: T.DataType) -> None:
    """Check the element type of an array, which is staged as it is."""
    if isinstance(dtype, T.StructType):
        for field in dtype.fields:
            _refuse_unsupported(resource, f"{path}.{field.name}", field.dataType)
    elif isinstance(dtype, T.ArrayType):
        _refuse_unsupported(resource, f"{path}[]", dtype.elementType)
    elif _unsupported(dtype) or type(dtype).__name__ == "TimeType":
        raise ExtractError(
            resource,
            f"column '{path}' of a Spark DataFrame item has type {dtype.simpleString()}, which "
            "sparkload cannot load inside an array; cast or drop it before yielding the DataFrame",
        )


def _unsupported(dtype: T.DataType) -> bool:
    return type(dtype).__name__ in _UNSUPPORTED or isinstance(dtype, T.UserDefinedType)
