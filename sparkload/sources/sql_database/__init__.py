"""Tables of any SQLAlchemy database, as ``dlt.sources.sql_database``::

    from sparkload.sources.sql_database import sql_database, sql_table

    source = sql_database("postgresql://loader@db/shop", table_names=["orders", "customers"])
    orders = sql_table("postgresql://loader@db/shop", table="orders",
                       incremental=sl.sources.incremental("updated_at"))

Each table becomes a resource named after it (write disposition ``append``, its reflected
primary key, column hints from its SQL types) that reads the table in chunks of
``chunk_size`` rows through a server-side cursor, each chunk an Arrow table (the default
``pyarrow`` backend) or a list of dicts (``sqlalchemy``). An incremental's range is pushed
into the query.

Where the engine is a JVM Spark with the database's JDBC driver, ``backend="spark"`` reads
through Spark's JDBC source instead (``jdbc.py``): the resource yields one lazy Spark
DataFrame of the table's kept columns, typed by Spark's JDBC mapping (only the primary key
comes from reflection), and an incremental's range is a Spark ``where`` that the JDBC source
pushes down to the database. See docs/sql_database.md.

SQLAlchemy is an optional dependency (``pip install "sparkload[sql_database]"``), imported
when a source or table is made, not when this module is.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Optional, ParamSpec

from sparkload.common import context
from sparkload.common.hints import TWriteDispositionConfig
from sparkload.common.origin import Origin, mark_origin
from sparkload.config import secrets
from sparkload.config.injection import bind_config
from sparkload.exceptions import ResourceError
from sparkload.extract import mark
from sparkload.extract.decorators import resource as make_resource
from sparkload.extract.decorators import source
from sparkload.extract.hints import TableHintArgs
from sparkload.extract.incremental import Incremental
from sparkload.extract.resource import Resource
from sparkload.sources.sql_database import jdbc, reflection
from sparkload.sources.sql_database.column_types import REFLECTION_LEVELS
from sparkload.sources.sql_database.connection import engine_for
from sparkload.sources.sql_database.query import QueryAdapter, table_query
from sparkload.sources.sql_database.reader import read_chunks

if TYPE_CHECKING:
    import sqlalchemy as sa
    from sqlalchemy.sql.selectable import NamedFromClause

__all__ = ["ReflectionLevel", "TableBackend", "sql_database", "sql_table"]

TableBackend = Literal["pyarrow", "sqlalchemy", "pandas", "connectorx", "spark"]
ReflectionLevel = Literal["minimal", "full", "full_with_precision"]
BACKENDS = ("pyarrow", "sqlalchemy", "spark")
INSTALL_HINT = 'pip install "sparkload[sql_database]"'

# SQLAlchemy's types in quotes: config injection evaluates these signatures at run time, where
# SQLAlchemy (an optional dependency) may be absent; a quoted name stays a forward reference.
MetaDataArg = Optional["sa.MetaData"]  # noqa: UP007 - "sa.MetaData" | None fails at run time
EngineAdapter = Callable[["sa.engine.Engine"], "sa.engine.Engine"]


@source
def sql_database(
    credentials: object = secrets.value,
    schema: str | None = None,
    metadata: MetaDataArg = None,
    table_names: Sequence[str] | None = None,
    chunk_size: int = 50000,
    backend: TableBackend = "pyarrow",
    detect_precision_hints: bool | None = False,
    reflection_level: ReflectionLevel | None = "full",
    defer_table_reflect: bool | None = False,
    table_adapter_callback: reflection.TableAdapter | None = None,
    backend_kwargs: Mapping[str, object] | None = None,
    include_views: bool = False,
    type_adapter_callback: reflection.TypeAdapter | None = None,
    query_adapter_callback: QueryAdapter | None = None,
    resolve_foreign_keys: bool = False,
    engine_adapter_callback: EngineAdapter | None = None,
    incremental: Incremental[Any] | None = None,
    engine_kwargs: Mapping[str, object] | None = None,
) -> Iterator[Resource]:
    """A resource for each of ``table_names`` (default: every table of ``schema``, and its
    views with ``include_views``), as dlt's ``sql_database``. Unlike dlt, whose default
    backend is ``sqlalchemy``, the default is ``pyarrow``: chunks go to Delta as Parquet."""
    settings = _settings(
        backend,
        chunk_size,
        reflection_level,
        detect_precision_hints,
        backend_kwargs,
        resolve_foreign_keys,
        query_adapter_callback,
    )
    engine = _engine(credentials, engine_adapter_callback, engine_kwargs)
    meta = metadata if metadata is not None else _metadata(schema)
    if defer_table_reflect and not table_names:
        raise ValueError(
            "sql_database: defer_table_reflect=True needs table_names (nothing is reflected now)"
        )
    names = list(table_names) if table_names else reflection.table_names(engine, schema, include_views)
    for name in names:
        yield _table_resource(
            _TableRead(
                engine=engine,
                name=name,
                schema=schema,
                metadata=meta,
                settings=settings,
                table_adapter_callback=table_adapter_callback,
                type_adapter_callback=type_adapter_callback,
                query_adapter_callback=query_adapter_callback,
            ),
            defer_table_reflect=bool(defer_table_reflect),
            incremental=incremental,
        )


P = ParamSpec("P")


def _configured_per_table(make: Callable[P, Resource]) -> Callable[P, Resource]:
    """dlt's config sections of ``sql_table``: an argument the caller leaves out is read from
    ``sources.sql_database.<table>.<argument>``, then ``sources.sql_database.<argument>``, so
    each table can have its own backend, chunk size, columns or incremental."""

    @functools.wraps(make)
    def configured(*args: P.args, **kwargs: P.kwargs) -> Resource:
        table = inspect.signature(make).bind_partial(*args, **kwargs).arguments.get("table")
        chains: list[tuple[str, ...]] = [("sources", "sql_database", str(table))] if table else []
        chains.append(("sources", "sql_database"))
        bound = bind_config(make, args, kwargs, sections=chains[0], other_sections=chains[1:])
        return make(*bound.args, **bound.kwargs)

    return configured


@_configured_per_table
def sql_table(
    credentials: object = secrets.value,
    table: str | None = None,
    schema: str | None = None,
    metadata: MetaDataArg = None,
    incremental: Incremental[Any] | None = None,
    chunk_size: int = 50000,
    backend: TableBackend = "pyarrow",
    detect_precision_hints: bool | None = None,
    reflection_level: ReflectionLevel | None = "full",
    defer_table_reflect: bool | None = None,
    table_adapter_callback: reflection.TableAdapter | None = None,
    backend_kwargs: Mapping[str, object] | None = None,
    type_adapter_callback: reflection.TypeAdapter | None = None,
    included_columns: Sequence[str] | None = None,
    excluded_columns: Sequence[str] | None = None,
    query_adapter_callback: QueryAdapter | None = None,
    resolve_foreign_keys: bool = False,
    engine_adapter_callback: EngineAdapter | None = None,
    # Any: config injection coerces by this annotation, and a TypedDict in it (the dict form
    # of TWriteDispositionConfig) cannot be checked with isinstance at run time.
    write_disposition: Any = "append",
    primary_key: str | Sequence[str] | None = None,
    merge_key: str | Sequence[str] | None = None,
    engine_kwargs: Mapping[str, object] | None = None,
) -> Resource:
    """The table ``table`` as one resource, as dlt's ``sql_table``; an argument left out is
    read from config, ``sources.sql_database.<table>.<argument>`` first, then
    ``sources.sql_database.<argument>`` (``credentials`` must be found). ``included_columns``
    keeps only those columns and ``excluded_columns`` leaves those out (before
    ``table_adapter_callback``); ``primary_key`` replaces the reflected one; ``engine_kwargs``
    go to ``sqlalchemy.create_engine``."""
    if not table:
        raise ValueError("sql_table needs table=, the name of the table to read")
    if isinstance(incremental, Mapping):  # given field by field in config
        incremental = Incremental(**incremental)
    settings = _settings(
        backend,
        chunk_size,
        reflection_level,
        detect_precision_hints,
        backend_kwargs,
        resolve_foreign_keys,
        query_adapter_callback,
    )
    engine = _engine(credentials, engine_adapter_callback, engine_kwargs)
    adapter = table_adapter_callback
    if included_columns is not None or excluded_columns is not None:
        adapter = _select_columns(included_columns, excluded_columns, table_adapter_callback)
    return _table_resource(
        _TableRead(
            engine=engine,
            name=table,
            schema=schema,
            metadata=metadata if metadata is not None else _metadata(schema),
            settings=settings,
            table_adapter_callback=adapter,
            type_adapter_callback=type_adapter_callback,
            query_adapter_callback=query_adapter_callback,
        ),
        defer_table_reflect=bool(defer_table_reflect),
        incremental=incremental,
        write_disposition=write_disposition,
        primary_key=primary_key,
        merge_key=merge_key,
    )


@dataclass(frozen=True)
class _Settings:
    backend: str
    chunk_size: int
    reflection_level: str
    # Spark JDBC options, backend spark only.
    backend_kwargs: dict[str, str] = field(default_factory=dict)


@dataclass
class _TableRead:
    """Everything reading one table needs; reflected once, on first use."""

    engine: sa.engine.Engine
    name: str
    schema: str | None
    metadata: sa.MetaData
    settings: _Settings
    table_adapter_callback: reflection.TableAdapter | None
    type_adapter_callback: reflection.TypeAdapter | None
    query_adapter_callback: QueryAdapter | None
    _table: NamedFromClause | None = field(default=None, repr=False)

    def table(self) -> NamedFromClause:
        """The reflected table, or the select of it that ``table_adapter_callback`` returned."""
        if self._table is None:
            self._table = reflection.reflect_table(
                self.engine,
                self.name,
                self.schema,
                self.metadata,
                self.table_adapter_callback,
                self.type_adapter_callback,
            )
        return self._table

    def hints(self) -> TableHintArgs:
        if self.settings.backend == "spark":
            # Spark's JDBC mapping types the columns; reflection gives the primary key alone.
            key = reflection.primary_key(self.table())
            return {"columns": {}, "primary_key": key} if key else {"columns": {}}
        found = reflection.table_hints(self.table(), self.settings.reflection_level, self.settings.backend)
        hints: TableHintArgs = {"columns": found.columns}
        if found.primary_key:
            hints["primary_key"] = found.primary_key
        return hints

    def _named_table(self) -> sa.Table:
        import sqlalchemy as sa

        table = self.table()
        if not isinstance(table, sa.Table):
            raise ResourceError(
                f"sql_database: table '{self.name}': backend='spark' reads a table by name through "
                "Spark's JDBC source, not the select table_adapter_callback returned; leave columns "
                "out in place (table._columns.remove) or use backend='pyarrow'"
            )
        return table

    def chunks(self, incremental: Incremental[Any] | None) -> Iterator[object]:
        if self.settings.backend == "spark":
            # One lazy DataFrame; the incremental's range is applied to it as a Spark filter,
            # which the JDBC source pushes down to the database.
            spark = context.active_pipeline().spark
            yield jdbc.read_frame(
                spark,
                self.engine,
                self._named_table(),
                self.settings.chunk_size,
                self.settings.backend_kwargs,
            )
            return
        query = table_query(self.table(), incremental, self.query_adapter_callback, self.engine)
        yield from read_chunks(
            self.engine,
            query,
            self.table(),
            self.name,
            self.settings.chunk_size,
            self.settings.backend,
            self.settings.reflection_level,
        )


def _table_resource(
    read: _TableRead,
    *,
    defer_table_reflect: bool,
    incremental: Incremental[Any] | None,
    write_disposition: TWriteDispositionConfig = "append",
    primary_key: str | Sequence[str] | None = None,
    merge_key: str | Sequence[str] | None = None,
) -> Resource:
    hints: TableHintArgs = {} if defer_table_reflect else read.hints()
    hints["write_disposition"] = write_disposition
    if primary_key is not None:
        hints["primary_key"] = primary_key
    if merge_key is not None:
        hints["merge_key"] = merge_key
    made: Resource = make_resource(_read_table, name=read.name, **hints)(
        table_read=read, incremental=incremental, deferred_hints=defer_table_reflect
    )
    mark_origin(made, table_origin(read.engine.url, read.schema, read.name))
    return made


# SQLAlchemy's backend names that OpenLineage's naming conventions spell otherwise.
_OPENLINEAGE_SCHEMES = {"postgresql": "postgres", "mssql": "sqlserver"}


def table_origin(url: sa.engine.URL, schema: str | None, table: str) -> Origin:
    """The table as OpenLineage names a database's table: namespace ``scheme://host:port``
    (no user, password or query), name ``database.schema.table``. A database without a server
    (a SQLite file) is its file: namespace ``sqlite://<path>``, name ``schema.table`` (SQLite's
    own schema is ``main``)."""
    backend = url.get_backend_name()
    scheme = _OPENLINEAGE_SCHEMES.get(backend, backend)
    if url.host:
        port = f":{url.port}" if url.port else ""
        parts = [url.database, schema, table]
        return Origin(f"{scheme}://{url.host}{port}", ".".join(part for part in parts if part))
    # A file given as an SQLite URI (``file:<path>?...``, with ``uri=true``) is its path.
    path = (url.database or "").removeprefix("file:").split("?", 1)[0]
    return Origin(f"{scheme}://{path}", f"{schema or 'main'}.{table}")


def _read_table(
    table_read: _TableRead, incremental: Incremental[Any] | None = None, deferred_hints: bool = False
) -> Iterator[object]:
    """One table's chunks; ``incremental`` is the resource's, bound to this run (its start is
    what the previous run reached), so the query reads only rows from there on."""
    if deferred_hints:
        # Reflected only now (dlt's defer_table_reflect): the hints apply from here on.
        yield mark.with_hints([], mark.make_hints(**table_read.hints()))
    yield from table_read.chunks(incremental)


def _settings(
    backend: str,
    chunk_size: int,
    reflection_level: str | None,
    detect_precision_hints: bool | None,
    backend_kwargs: Mapping[str, object] | None,
    resolve_foreign_keys: bool,
    query_adapter_callback: QueryAdapter | None = None,
) -> _Settings:
    """The arguments checked before anything connects, each refusal naming the argument."""
    _require_sqlalchemy()
    if backend not in BACKENDS:
        raise ValueError(
            f"sql_database backend={backend!r} is not supported by sparkload; use one of "
            f"{', '.join(BACKENDS)} (pyarrow yields Arrow tables, which sparkload stages as Parquet)"
        )
    options: dict[str, str] = {}
    if backend == "spark":
        if query_adapter_callback is not None:
            raise ValueError(
                "sql_database backend='spark' builds no SQL query, so query_adapter_callback cannot "
                "apply; leave columns out with table_adapter_callback, or filter the rows with a "
                "Spark filter (resource.add_map on the DataFrame) or an incremental"
            )
        options = jdbc.check_backend_kwargs(backend_kwargs or {})
    elif backend_kwargs:
        raise ValueError(
            f"sql_database backend_kwargs are not supported with backend={backend!r} (got "
            f"{sorted(backend_kwargs)}); only backend='spark' takes them, as Spark JDBC options"
        )
    if resolve_foreign_keys:
        raise ValueError("sql_database resolve_foreign_keys=True: sparkload has no table references hint")
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"sql_database chunk_size must be a positive int, got {chunk_size!r}")
    level = reflection_level or "full"
    if detect_precision_hints:
        level = "full_with_precision"  # dlt's older flag for the same
    if level not in REFLECTION_LEVELS:
        raise ValueError(f"sql_database reflection_level must be one of {REFLECTION_LEVELS}, got {level!r}")
    return _Settings(backend, chunk_size, level, options)


def _require_sqlalchemy() -> None:
    try:
        import sqlalchemy
    except ImportError as exc:
        raise ImportError(f"sparkload's sql_database source needs SQLAlchemy 2: {INSTALL_HINT}") from exc
    if int(sqlalchemy.__version__.split(".")[0]) < 2:
        raise ImportError(
            f"sparkload's sql_database source needs SQLAlchemy 2 (found {sqlalchemy.__version__}): "
            + INSTALL_HINT
        )


def _engine(
    credentials: object,
    engine_adapter_callback: EngineAdapter | None,
    engine_kwargs: Mapping[str, object] | None = None,
) -> sa.engine.Engine:
    engine = engine_for(credentials, engine_kwargs or {})
    return engine_adapter_callback(engine) if engine_adapter_callback is not None else engine


def _metadata(schema: str | None) -> sa.MetaData:
    import sqlalchemy as sa

    return sa.MetaData(schema=schema)


def _select_columns(
    included: Sequence[str] | None, excluded: Sequence[str] | None, then: reflection.TableAdapter | None
) -> reflection.TableAdapter:
    """dlt's default table adapter: keep ``included`` (all when None), drop ``excluded``, then
    call the user's adapter. A name the table does not have is refused: a misspelt excluded
    column would otherwise be loaded."""

    def adapt(table: sa.Table) -> object:
        unknown = sorted({*(included or ()), *(excluded or ())} - set(table.columns.keys()))
        if unknown:
            raise ResourceError(
                f"sql_database: table '{table.name}' has no column {', '.join(map(repr, unknown))} "
                "named in included_columns/excluded_columns; its columns are "
                + ", ".join(table.columns.keys())
            )
        for column in list(table.columns):
            if (included is not None and column.name not in included) or column.name in (excluded or ()):
                table._columns.remove(column)
        return then(table) if then is not None else None

    return adapt


def __getattr__(name: str) -> type[sa.Table]:
    # dlt's scripts import SQLAlchemy's ``Table`` from here (``from dlt.sources.sql_database
    # import Table``); SQLAlchemy is an optional dependency, so it is loaded only when asked.
    if name == "Table":
        _require_sqlalchemy()
        import sqlalchemy as sa

        return sa.Table
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
