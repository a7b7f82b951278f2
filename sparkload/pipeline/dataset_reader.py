"""``pipeline.dataset()``: dlt's read API over the tables a pipeline loaded.

``ReadableDataset`` is dlt's ``Dataset``: its tables are ``dataset.<table>``,
``dataset["<table>"]`` and ``dataset.table("<table>")``, a SQL query is ``dataset("SELECT
...")``, and ``row_counts()`` counts every table's rows. Each of them is a ``Relation``,
dlt's lazy relation: ``select``, ``limit``, ``head`` and ``order_by`` make a new relation
(the engine evaluates them), and nothing runs until ``df()``, ``arrow()``, ``fetch*()`` or
``iter_*()`` is called. ``spark()`` hands over the Spark DataFrame itself.

Every read goes to the committed Delta table, by path or by catalog name, as the loader
addresses it (``load.dataset.Dataset``): a relation read twice sees the table's newest
version each time, as dlt's query does.

"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard, cast

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparkload.common.sql import quote
from sparkload.common.system_columns import LOAD_ID
from sparkload.exceptions import SparkloadError, TableNotFoundError
from sparkload.extract.load_hints import normalize_column_path
from sparkload.load.dataset import SYSTEM_PREFIX, Dataset

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import Column, Row, SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSession

# The session settings sparkload's statements run with (``Pipeline._session_scope``).
SessionScope = Callable[[], contextlib.AbstractContextManager[None]]

ROW_COUNTS_SCHEMA = "table_name string, row_count bigint"

# A classic (JVM) session resolves a query's table names through temporary views, which
# are the session's: one query at a time registers and drops them.
_classic_views = threading.Lock()


class Relation:
    """A table or a query of the dataset, evaluated by the engine only when fetched.

    dlt's ``Relation``: each fetch runs the query afresh (``fetchmany(2)`` twice gives the
    same first two rows, as dlt's does). Without an ``order_by`` the engine returns rows in
    no particular order."""

    def __init__(self, frame: DataFrame, session_scope: SessionScope) -> None:
        self._frame = frame
        self._session_scope = session_scope

    def _derived(self, frame: DataFrame) -> Relation:
        return Relation(frame, self._session_scope)

    # -- the relation's shape -------------------------------------------------------------
    def spark(self) -> DataFrame:
        """The relation as a Spark DataFrame: lazy, nothing is collected."""
        return self._frame

    @property
    def columns(self) -> list[str]:
        """The relation's column names, in order."""
        return list(self._frame.columns)

    def _ipython_key_completions_(self) -> list[str]:
        return self.columns

    def _column(self, name: str) -> Column:
        """The column ``name`` names: itself, else its normalized form (``userName`` →
        ``user_name``, as the load named it); an unknown name is left to the engine, whose
        error names it."""
        columns = self.columns
        if name not in columns:
            normalized = _normalized(name)
            if normalized in columns:
                name = normalized
        return F.col(quote(name))

    def select(self, *columns: str) -> Relation:
        """Only ``columns``, in that order (a ``SELECT`` of them)."""
        return self._derived(self._frame.select(*(self._column(name) for name in columns)))

    def __getitem__(self, columns: str | Sequence[str]) -> Relation:
        """``relation["id"]``, ``relation[["id", "name"]]``: ``select``, as in dlt."""
        return self.select(*([columns] if isinstance(columns, str) else columns))

    def limit(self, limit: int) -> Relation:
        """At most ``limit`` rows (a ``LIMIT``, evaluated by the engine)."""
        return self._derived(self._frame.limit(int(limit)))

    def head(self, limit: int = 5) -> Relation:
        """The first ``limit`` rows (5 unless told): ``limit``, as in dlt."""
        return self.limit(limit)

    def order_by(self, column_name: str, direction: str = "asc") -> Relation:
        """Rows ordered by one column, ``direction`` ``"asc"`` or ``"desc"`` (dlt's)."""
        if direction not in ("asc", "desc"):
            raise ValueError(f"direction must be 'asc' or 'desc', got {direction!r}")
        column = self._column(column_name)
        return self._derived(self._frame.orderBy(column.asc() if direction == "asc" else column.desc()))

    # -- fetching -------------------------------------------------------------------------
    def arrow(self, chunk_size: int | None = None) -> pa.Table:
        """The rows as a pyarrow Table; with ``chunk_size``, only the first that many."""
        frame = self._frame if chunk_size is None else self._frame.limit(int(chunk_size))
        with self._session_scope():
            return _collect_arrow(frame)

    def df(self, chunk_size: int | None = None) -> pd.DataFrame:
        """The rows as a pandas DataFrame (timestamps UTC-aware, as in ``arrow()``)."""
        return self.arrow(chunk_size).to_pandas()

    def fetchall(self) -> list[tuple[Any, ...]]:
        return _tuples(self.arrow())

    def fetchmany(self, size: int = 1) -> list[tuple[Any, ...]]:
        """The first ``size`` rows (a DB-API cursor's default size is 1)."""
        return _tuples(self.arrow(size))

    def fetchone(self) -> tuple[Any, ...] | None:
        rows = self.fetchmany(1)
        return rows[0] if rows else None

    def fetchscalar(self) -> Any:
        """The one value of a one-row, one-column result (None for no row)."""
        rows = self.fetchmany(2)
        if not rows:
            return None
        if len(rows) != 1 or len(rows[0]) != 1:
            raise ValueError(
                f"expected one row of one column, got {len(rows)} or more rows of {len(rows[0])} columns"
            )
        return rows[0][0]

    def iter_arrow(self, chunk_size: int) -> Iterator[pa.Table]:
        """pyarrow Tables of ``chunk_size`` rows (the last may be shorter), streamed from
        the engine as they arrive: the rows are never all in memory at once."""
        if int(chunk_size) < 1:
            raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
        with self._session_scope():
            yield from _rechunked(_arrow_stream(self._frame), int(chunk_size))

    def iter_df(self, chunk_size: int) -> Iterator[pd.DataFrame]:
        for table in self.iter_arrow(chunk_size):
            yield table.to_pandas()

    def iter_fetch(self, chunk_size: int) -> Iterator[list[tuple[Any, ...]]]:
        for table in self.iter_arrow(chunk_size):
            yield _tuples(table)

    def __repr__(self) -> str:
        return f"<sparkload Relation ({', '.join(self.columns)})>"


class ReadableDataset:
    """dlt's ``Dataset`` over a pipeline's dataset (a folder, or a catalog's schema)."""

    def __init__(self, dataset: Dataset, session_scope: SessionScope) -> None:
        self._dataset = dataset
        self._session_scope = session_scope

    @property
    def tables(self) -> list[str]:
        """The dataset's committed tables: the loaded ones, then sparkload's own
        (``_sparkload_*``), as dlt lists its ``_dlt_*`` tables after the data."""
        names = self._dataset.table_names()
        return [n for n in names if not n.startswith(SYSTEM_PREFIX)] + [
            n for n in names if n.startswith(SYSTEM_PREFIX)
        ]

    def _ipython_key_completions_(self) -> list[str]:
        return self.tables

    def _resolve(self, name: str, tables: Sequence[str]) -> str:
        """The table ``name`` means: itself, else its normalized name (``MyUsers`` →
        ``my_users``, the table the load made of it)."""
        if name in tables:
            return name
        normalized = _normalized(name)
        if normalized is not None and normalized in tables:
            return normalized
        raise TableNotFoundError(str(name), self._dataset.shown, tables)

    def _frame(self, name: str) -> DataFrame:
        return self._dataset.table(name).read()

    def table(self, table_name: str) -> Relation:
        """The committed table ``table_name`` as a relation."""
        name = self._resolve(table_name, self.tables)
        return Relation(self._frame(name), self._session_scope)

    def __getitem__(self, table_name: str) -> Relation:
        return self.table(table_name)

    def __getattr__(self, name: str) -> Relation:
        # A table named like a method of the dataset is reached by ``dataset["name"]``.
        # Dunder names are Python's own (copy, pickle): never a table.
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self.table(name)

    def query(self, query: str) -> Relation:
        """A SQL query run by the engine, in its dialect (Spark SQL); the dataset's tables
        are named as ``tables`` lists them, without catalog or schema."""
        tables = self.tables
        spark = self._dataset.spark
        frames = {name: self._frame(name) for name in tables}
        return Relation(_query_frame(spark, query, frames), self._session_scope)

    def __call__(self, query: str) -> Relation:
        """``dataset("SELECT ...")``: ``query``, as in dlt."""
        return self.query(query)

    def row_counts(
        self,
        *,
        data_tables: bool = True,
        dlt_tables: bool = False,
        table_names: Sequence[str] | None = None,
        load_id: str | None = None,
    ) -> Relation:
        """A relation of ``(table_name, row_count)`` per table, counted by the engine:
        the loaded tables (nested ones included), with ``dlt_tables=True`` sparkload's own
        (``_sparkload_pipeline_state``) too, or the ``table_names`` given. With
        ``load_id``, the rows that load wrote, and only the tables that record it."""
        tables = self.tables
        if table_names:
            selected = [self._resolve(name, tables) for name in table_names]
        else:
            selected = [
                name for name in tables if (dlt_tables if name.startswith(SYSTEM_PREFIX) else data_tables)
            ]
        counts: DataFrame | None = None
        for position, name in enumerate(selected):
            frame = self._frame(name)
            if load_id is not None:
                if LOAD_ID not in frame.columns:
                    continue
                frame = frame.where(F.col(quote(LOAD_ID)) == F.lit(load_id))
            count = frame.agg(F.count(F.lit(1)).alias("row_count")).select(
                F.lit(position).alias("position"), F.lit(name).alias("table_name"), F.col("row_count")
            )
            counts = count if counts is None else counts.unionAll(count)
        if counts is None:
            return Relation(self._dataset.spark.createDataFrame([], ROW_COUNTS_SCHEMA), self._session_scope)
        # In the order of ``tables`` (a union's rows come in no order of their own).
        return Relation(counts.orderBy("position").select("table_name", "row_count"), self._session_scope)

    def __repr__(self) -> str:
        return f"<sparkload dataset {self._dataset.shown}>"


def _normalized(name: str) -> str | None:
    """``name`` as the load names a table or column, or None where it has no normal form."""
    try:
        return normalize_column_path(name)
    except (TypeError, ValueError):
        return None


def _tuples(table: pa.Table) -> list[tuple[Any, ...]]:
    """Rows as tuples, by position (a query may give two columns one name)."""
    return list(zip(*(column.to_pylist() for column in table.columns), strict=True))


def _collect_arrow(frame: DataFrame) -> pa.Table:
    """All of ``frame``'s rows, as Arrow, timestamps in UTC (what ``toArrow`` gives)."""
    return frame.toArrow()


def _arrow_stream(frame: DataFrame) -> Iterator[pa.Table]:
    """``frame``'s rows as Arrow tables, as the engine sends them.

    A Spark Connect session (the embedded engine, a Connect server) streams Arrow batches:
    its client's iterator is the one that hands them over unconverted (PySpark's public
    ``toLocalIterator`` turns each batch into Row objects). A classic session streams
    partitions through ``toLocalIterator``, converted back to Arrow here."""
    arrow_schema = _arrow_schema(frame)
    client = getattr(frame.sparkSession, "client", None)
    plan = getattr(frame, "_plan", None)
    if client is not None and plan is not None and hasattr(client, "to_table_as_iterator"):
        for part in client.to_table_as_iterator(plan.to_proto(client), plan.observations):
            if isinstance(part, pa.Table):
                # The server's timestamps carry the session's time zone; toArrow's are UTC.
                yield part.rename_columns(arrow_schema.names).cast(arrow_schema)
        return
    yield from _rows_as_arrow(frame.toLocalIterator(prefetchPartitions=True), arrow_schema)


def _arrow_schema(frame: DataFrame) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(frame.schema, timezone="UTC")


def _rows_as_arrow(rows: Iterable[Row], schema: pa.Schema, batch: int = 10_000) -> Iterator[pa.Table]:
    """Rows of a classic session's ``toLocalIterator`` as Arrow tables of ``batch`` rows."""
    pending: list[Row] = []
    for row in rows:
        pending.append(row)
        if len(pending) == batch:
            yield _row_table(pending, schema)
            pending = []
    if pending:
        yield _row_table(pending, schema)


def _row_table(rows: list[Row], schema: pa.Schema) -> pa.Table:
    columns = list(zip(*rows, strict=True))
    arrays = [
        pa.array([_plain(value) for value in column], type=field.type)
        for column, field in zip(columns, schema, strict=True)
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


def _plain(value: object) -> object:
    """A Row (a struct value) as a dict, recursively, which pyarrow takes for a struct."""
    if hasattr(value, "asDict"):
        return value.asDict(recursive=True)
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _rechunked(tables: Iterable[pa.Table], size: int) -> Iterator[pa.Table]:
    """Tables of exactly ``size`` rows (the last may hold fewer) from tables of any size."""
    held: list[pa.Table] = []
    count = 0
    for table in tables:
        while table.num_rows:
            take = min(size - count, table.num_rows)
            held.append(table.slice(0, take))
            count += take
            table = table.slice(take)
            if count == size:
                yield pa.concat_tables(held).combine_chunks()
                held, count = [], 0
    if count:
        yield pa.concat_tables(held).combine_chunks()


def _query_frame(spark: SparkSession, query: str, tables: dict[str, DataFrame]) -> DataFrame:
    """``query`` with each of ``tables``' names meaning that DataFrame (the dataset's table),
    and nothing registered in the session that outlives the query where the engine allows."""
    if not _is_connect(spark):
        return _classic_query(spark, query, tables)
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
    from pyspark.sql.connect.plan import SQL, SubqueryAlias

    # Spark Connect names relations for one query only: what spark.sql(q, t=df) sends for
    # a {t} placeholder, here under the tables' own names (dlt's queries have no
    # placeholders). The session's catalog is left as it was.
    references = [SubqueryAlias(cast(ConnectDataFrame, frame)._plan, name) for name, frame in tables.items()]
    return ConnectDataFrame(SQL(query, [], {}, references), spark)


def _is_connect(spark: SparkSession) -> TypeGuard[ConnectSession]:
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # a classic PySpark without the Connect client's packages
        return False
    return isinstance(spark, ConnectSession)


def _classic_query(spark: SparkSession, query: str, tables: dict[str, DataFrame]) -> DataFrame:
    """A classic session analyzes a query when it is made, so the tables are temporary
    views only while it is made (as PySpark's own ``spark.sql(q, t=df)`` does)."""
    with _classic_views:
        taken = {t.name for t in spark.catalog.listTables() if t.isTemporary} & set(tables)
        if taken:
            raise SparkloadError(
                f"the session holds temporary views named like tables of the dataset "
                f"({', '.join(sorted(taken))}); a query could not tell them apart"
            )
        try:
            for name, frame in tables.items():
                frame.createTempView(name)
            return spark.sql(query)
        finally:
            for name in tables:
                spark.catalog.dropTempView(name)
