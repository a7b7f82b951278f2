"""Staged NDJSON of a flat table written as normalized Parquet by Arrow, in this process.

A table whose staged rows are flat (every key a column already in normal form, of a JSON
scalar type, no dict or list to flatten) needs nothing of the flattening write but a
format change and the row ids. The engine (Sail 0.7.2) plans a query in more than linear
time in its width: the JSON read and Parquet write of 10,000 columns took a few minutes
there. Arrow reads the same files with the schema inferred at extract, in C++, and writes
them with the ids drawn here (see docs/performance.md, C1).

Values come out as the engine's read gives them, or not at all: Arrow reads each file
with the schema as it is, and refuses a value that does not fit its column (a float in a
bigint column, a string in a number column, a key the schema lacks, a key twice in a row)
where the engine would read NULL. Such a table returns None and takes the engine's path.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.json as pj
import pyarrow.parquet as pq
from pyspark.sql import types as T

from sparkload.common.folder import Folder, filesystem
from sparkload.extract.storage import STAGED_STATISTICS
from sparkload.normalize.summary import Summary

# The Spark types of JSON scalars, as Arrow reads and Parquet stores them.
_ARROW_TYPES: dict[type[T.DataType], pa.DataType] = {
    T.LongType: pa.int64(),
    T.DoubleType: pa.float64(),
    T.StringType: pa.string(),
    T.BooleanType: pa.bool_(),
}
# Arrow parses a file one block at a time and makes a chunk of every column per block;
# with thousands of columns, chunks of few rows cost more than the parse. A whole staged
# file (rotated at 16 MiB) is one block.
_MIN_BLOCK = 1 << 20
# A staged file is read whole, so one larger than extract writes (an imported NDJSON file
# may be of any size) takes the engine's path rather than this process's memory.
_MAX_FILE = 64 << 20


def arrow_schema(schema: T.StructType) -> pa.Schema | None:
    """``schema`` in Arrow's types, or None when a field is not a JSON scalar (a dict, a
    list, or NULL in every row)."""
    fields = []
    for field in schema.fields:
        arrow_type = _ARROW_TYPES.get(type(field.dataType))
        if arrow_type is None:
            return None
        fields.append(pa.field(field.name, arrow_type))
    return pa.schema(fields)


def write_flat_json(
    files: Sequence[Path],
    schema: pa.Schema,
    target_uri: str,
    id_prefix: str,
    id_column: str,
    load_id_column: str,
    load_id: str,
) -> Summary | None:
    """Write the NDJSON ``files`` (read with ``schema``) as Parquet into the folder
    ``target_uri``, replacing what is there, with a row id (``id_prefix`` and a counter of
    16 hex digits, in the order the rows were staged) and the load id; one Parquet file per
    staged file, each read and written before the next (one file in memory at a time).
    Returns the summary of the rows written (normalize/summary.py), or None, with nothing
    left written, when a value does not fit ``schema``, a file is larger than extract
    writes them, or there are no rows."""
    if any(path.stat().st_size > _MAX_FILE for path in files):
        return None
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error")
    Folder(target_uri).delete()
    fs, folder = filesystem(target_uri)
    fs.create_dir(folder, recursive=True)
    summary = Summary()
    try:
        for part, path in enumerate(files):
            size = path.stat().st_size
            if size == 0:
                continue
            read = pj.ReadOptions(block_size=max(size + 1, _MIN_BLOCK))
            table = pj.read_json(path, read_options=read, parse_options=options)
            summary.add(table)
            drawn = summary.rows - table.num_rows
            ids = pa.array([f"{id_prefix}{n:016x}" for n in range(drawn, summary.rows)], pa.string())
            loads = pa.repeat(pa.scalar(load_id, pa.string()), table.num_rows)
            table = table.append_column(id_column, ids).append_column(load_id_column, loads)
            with fs.open_output_stream(f"{folder}/part-{part:05d}.parquet") as out:
                pq.write_table(table, out, write_statistics=STAGED_STATISTICS)
    except pa.ArrowInvalid:
        Folder(target_uri).delete()
        return None
    if summary.rows == 0:
        Folder(target_uri).delete()  # no rows: the engine's path writes the empty table
        return None
    return summary
