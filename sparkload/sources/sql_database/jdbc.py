"""Backend ``spark``: a table read through Spark's JDBC source as one lazy Spark DataFrame.

The JDBC URL is made from the SQLAlchemy URL (PostgreSQL, MySQL, SQL Server), with user and
password as options, never in the URL's text; ``backend_kwargs`` may give ``jdbc_url``,
``driver`` and any other option of Spark's JDBC source. Only the reflected (and adapted)
table's columns are selected, which Spark prunes in the query it sends; an incremental's
range is the Spark ``where`` that sparkload applies to DataFrame items, which the JDBC
source pushes down to the database. Column types are Spark's JDBC mapping.

The DataFrame's schema is resolved when it is made, so an engine that cannot read JDBC (the
embedded Sail engine has no JDBC source; a JVM without the database's driver) fails in
extract, naming the table and the fix, before anything is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from sparkload.common.sql import quote
from sparkload.exceptions import ResourceError

if TYPE_CHECKING:
    import sqlalchemy as sa
    from pyspark.sql import DataFrame, SparkSession

# SQLAlchemy dialect -> how its JDBC URL is written, and the driver's Maven coordinate.
_URLS = {
    "postgresql": ("jdbc:postgresql://{host}{port}/{database}", "org.postgresql:postgresql:<version>"),
    "mysql": ("jdbc:mysql://{host}{port}/{database}", "com.mysql:mysql-connector-j:<version>"),
    "mariadb": ("jdbc:mysql://{host}{port}/{database}", "com.mysql:mysql-connector-j:<version>"),
    "mssql": (
        "jdbc:sqlserver://{host}{port};databaseName={database}",
        "com.microsoft.sqlserver:mssql-jdbc:<version>",
    ),
}
# The driver class of each JDBC URL sparkload makes, given as the ``driver`` option: without
# it Spark asks java.sql.DriverManager, which does not see jars added to a running session
# (spark.jars.packages in a session's builder) and answers "No suitable driver".
_DRIVERS = {
    "postgresql": "org.postgresql.Driver",
    "mysql": "com.mysql.cj.jdbc.Driver",
    "mariadb": "com.mysql.cj.jdbc.Driver",
    "mssql": "com.microsoft.sqlserver.jdbc.SQLServerDriver",
}
# Options sparkload sets itself from the table and the source's arguments.
_OWN_OPTIONS = frozenset({"dbtable", "query"})


def jdbc_url(url: sa.engine.URL) -> str:
    """The JDBC URL of the database ``url`` names, without user or password."""
    dialect = url.get_backend_name()
    if dialect not in _URLS:
        raise ValueError(
            f"sql_database backend='spark': no JDBC URL is known for the dialect {dialect!r} "
            f"(known: {', '.join(sorted(_URLS))}); give backend_kwargs={{'jdbc_url': ...}} or use "
            "backend='pyarrow'"
        )
    if not url.host or not url.database:
        raise ValueError(
            f"sql_database backend='spark': the {dialect} URL needs a host and a database for a JDBC "
            "URL; give backend_kwargs={'jdbc_url': ...} or use backend='pyarrow'"
        )
    template = _URLS[dialect][0]
    port = f":{url.port}" if url.port else ""
    return template.format(host=url.host, port=port, database=url.database)


def check_backend_kwargs(backend_kwargs: Mapping[str, object]) -> dict[str, str]:
    """``backend_kwargs`` as Spark JDBC options (string values); the table is sparkload's."""
    own = sorted(set(backend_kwargs) & _OWN_OPTIONS)
    if own:
        raise ValueError(
            f"sql_database backend='spark': backend_kwargs {own} are set by sparkload from the table; "
            "leave columns out with table_adapter_callback or included_columns"
        )
    return {str(key): str(value) for key, value in backend_kwargs.items() if value is not None}


def jdbc_options(
    engine: sa.engine.Engine, table: sa.Table, chunk_size: int, backend_kwargs: Mapping[str, str]
) -> dict[str, str]:
    """The options of Spark's JDBC source that read ``table``; ``backend_kwargs`` come last."""
    url = engine.url
    options = dict(backend_kwargs)
    if "jdbc_url" in options:
        options["url"] = options.pop("jdbc_url")
    elif "url" not in options:
        options["url"] = jdbc_url(url)
        options.setdefault("driver", _DRIVERS[url.get_backend_name()])
    preparer = engine.dialect.identifier_preparer
    name = preparer.quote_identifier(str(table.name))
    if table.schema:
        name = f"{preparer.quote_identifier(str(table.schema))}.{name}"
    options["dbtable"] = name
    options.setdefault("fetchsize", str(chunk_size))
    if url.username and "user" not in options:
        options["user"] = url.username
    if url.password is not None and "password" not in options:
        options["password"] = str(url.password)
    return options


def read_frame(
    spark: SparkSession,
    engine: sa.engine.Engine,
    table: sa.Table,
    chunk_size: int,
    backend_kwargs: Mapping[str, str],
) -> DataFrame:
    """``table``'s kept columns as a lazy DataFrame of Spark's JDBC source, its schema
    resolved now (the engine connects to read it), so a failure is raised here."""
    options = jdbc_options(engine, table, chunk_size, backend_kwargs)
    columns = [quote(str(column.name)) for column in table.columns]
    try:
        frame = spark.read.format("jdbc").options(**options).load().select(*columns)
        frame.schema  # noqa: B018 - resolves the plan: Spark Connect and Sail are lazy until here
    except Exception as exc:
        raise ResourceError(_failure(table, engine, options["url"], exc)) from exc
    return frame


def _failure(table: sa.Table, engine: sa.engine.Engine, url: str, exc: BaseException) -> str:
    dialect = engine.url.get_backend_name()
    package = _URLS.get(dialect, ("", "<the driver's Maven coordinate>"))[1]
    first = _summary(exc)
    return (
        f"sql_database: table '{table.name}' could not be read with backend='spark' through Spark's "
        f"JDBC source ({url}): {type(exc).__name__}: {first[:500]}. backend='spark' needs a JVM "
        "Spark with the database's JDBC driver on its classpath, e.g. "
        f"spark.jars.packages={package} (the embedded Sail engine has no JDBC source registered); "
        "or use backend='pyarrow'"
    )


def _summary(exc: BaseException) -> str:
    """The engine's error in one line: a JVM error's Java exception, not Py4J's call."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            return str(java.toString())
        except Exception:  # noqa: BLE001 - the gateway may be gone; fall back to the text
            pass
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__
