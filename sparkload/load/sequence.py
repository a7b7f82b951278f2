"""Out-of-order protection (``sequence_by``): an older version of a record never wins.

Every version of a key carries a sequence value (a log sequence number, an update time).
A load's row is applied only if no stored version of its key is newer: neither a row in
the table nor a *tombstone*, the sequence value of a hard delete. Tombstones live in a
small Delta table next to the data (``_sparkload_tombstones__<table>``), so a delete that
arrives before an older insert still wins over it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from sparkload.common.sql import qualified, quote
from sparkload.common.system_columns import LOAD_ID
from sparkload.load import merge_sql
from sparkload.load.table import DeltaTable

_STORED = "__sparkload_stored_sequence"


def tombstone_table(root: str) -> str:
    return f"_sparkload_tombstones__{root}"


def newer_than_stored(
    rows: DataFrame, stored_in: Sequence[DeltaTable], primary_key: Sequence[str], sequence: str
) -> DataFrame:
    """The rows of the load whose sequence is at least the newest stored for their key
    (a row with a NULL sequence is older than any stored version)."""
    keys = list(primary_key)
    tables = [t for t in stored_in if t.exists()]
    if not tables:
        return rows
    parts = [t.read().select(*[F.col(quote(c)) for c in [*keys, sequence]]) for t in tables]
    stored = functools.reduce(DataFrame.unionByName, parts)
    newest = stored.groupBy(*[F.col(quote(k)) for k in keys]).agg(
        F.max(F.col(quote(sequence))).alias(_STORED)
    )
    joined = rows.join(newest, on=keys, how="left")
    seq = F.col(quote(sequence))
    keep = F.col(_STORED).isNull() | (seq.isNotNull() & (seq >= F.col(_STORED)))
    return joined.where(keep).drop(_STORED)


def tombstones(deletes: DataFrame, primary_key: Sequence[str], sequence: str, load_id: str) -> DataFrame:
    """What a tombstone records of a hard delete: its key and sequence value."""
    columns = [F.col(quote(c)) for c in [*primary_key, sequence]]
    return deletes.select(*columns, F.lit(load_id).alias(LOAD_ID))


def merge_tombstones(
    target: DeltaTable, rows: DataFrame, primary_key: Sequence[str], sequence: str, load_id: str
) -> None:
    """Keep the newest deleted sequence value per key."""
    newer = f"{qualified(merge_sql.SOURCE, sequence)} > {qualified(merge_sql.TARGET, sequence)}"
    merge_sql.merge_into(
        target,
        merge_sql.source_of(target, rows),
        on=merge_sql.columns_match(primary_key),
        clauses=[merge_sql.when_matched_update_all(newer), merge_sql.when_not_matched_insert_all()],
        load_id=load_id,
    )
