"""A merge as one overwrite of the key range it touches (``replaceWhere``), not a MERGE.

A merge changes only destination rows whose key falls inside the load's key range
(``key_bounds``). Rewriting that range, as the rows kept from it plus the rows written,
is one Delta commit whose read and rewrite are both pruned to the files the range
overlaps by their statistics: its cost follows the change, not the table. Sail 0.7.2's
MERGE instead joins every file of the target whatever its ``ON`` clause says (10,000 rows
into 10,000,000 took 2.9 s as a MERGE, 0.05 s as this overwrite). Delta on Apache Spark is
the other way round (a MERGE bounded in its ``ON`` skips files, a ``replaceWhere`` on a
data column scans them all), so there the merge stays a MERGE: ``usable`` decides.

The rows kept are read from the table inside the write itself: the engine takes the
versions it reads and replaces when it plans the write, and a concurrent commit that
changes files inside the range after that makes this commit fail as a conflict (retried
from scratch, see ``retry``), as a MERGE's would. Sail resolves the two versions one after
the other while planning, and a commit landing in between would be overwritten without a
conflict: the loader holds the table's lock (``table_lock``) from the read to the commit,
so a rewrite is used only for tables that have one.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame

from sparkload.engine.capabilities import merge_skips_files
from sparkload.load.schema_check import align_to_table, check_types
from sparkload.load.table import DeltaTable

# Given the table's rows inside the range: the rows the merge writes and the ones it keeps.
Change = Callable[[DataFrame], tuple[DataFrame, DataFrame]]


def usable(table: DeltaTable, predicate: str | None, rows: DataFrame) -> bool:
    """Whether merging ``rows`` into ``table`` should be a range rewrite: the range is
    known, the engine's MERGE would read every file (where it skips files by the range in
    its ``ON``, the MERGE is as cheap: Delta on Apache Spark, whose ``replaceWhere`` on a
    data column reads every file instead), the table takes a ``replaceWhere`` overwrite (see
    ``DeltaTable.replace_where``) and has a commit lock (``table_lock``), and the rows bring
    no new column (Sail 0.7.2 refuses
    schema evolution in an overwrite that keeps rows: the MERGE adds it)."""
    if predicate is None or not table.replace_where or merge_skips_files(table.spark):
        return False
    if table.commit_lock() is None:  # no lock to hold from the read to the commit (table_lock)
        return False
    destination = table.schema()
    return destination is not None and set(rows.columns) <= set(destination.fieldNames())


def rewrite(table: DeltaTable, predicate: str, change: Change, load_id: str) -> None:
    """Replace the rows of ``table`` matching ``predicate`` by what ``change`` makes of them
    (rows written, which all match it, and rows kept), in one commit tagged with
    ``load_id``."""
    destination = table.schema()
    written, kept = change(table.read().where(predicate))
    check_types(written, destination, table.name)
    # The rows kept come first: a union takes its types from its first input, and the
    # table's lists name their element field as Delta does ("element") where the load's,
    # made from Arrow, do not ("item"). With the load first, Sail 0.7.2 refused the table's
    # rows of a list column (a list of structs kept whole by max_table_nesting=0, say) as
    # another type.
    rows = kept.unionByName(align_to_table(written, destination))
    table.write(rows, "overwrite", load_id, replaceWhere=predicate)
