"""Checks of a load against its hints and the tables it changes, made before any commit.

A merge key that the data lacks, or holds NULL in, cannot say which stored rows a row
replaces: a NULL matches no stored row under SQL equality, so the NULL group would grow
on every load (scd2 would never retire it), and a missing column fails inside the
engine's commit. dlt refuses both in its normalize step; here the load refuses them
before its first commit, naming the table and the column. (Primary keys are checked in
normalize already.)

A table holding SCD Type 2 history has a NOT NULL valid_from column. A load of another
disposition would append rows without validity, or delete and update every version of a
key as if it were one row; the engine stops it only at the commit, with its own error.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.hints import LoadHints
from sparkload.common.sql import quote
from sparkload.exceptions import LoadError


def check_merge_key(table: str, hints: LoadHints, data_columns: Sequence[str], rows: DataFrame) -> None:
    """Refuse a merge whose merge key column is missing from the load or NULL in a row.

    ``data_columns`` are the columns the load brings; ``rows`` its rows, typed as the table
    takes them (a value of another type is NULL there: it went to a variant column)."""
    if hints.disposition != "merge" or not hints.merge_key:
        return
    missing = [key for key in hints.merge_key if key not in data_columns]
    if missing:
        raise LoadError(
            f"table '{table}': merge key column(s) {missing} are not in the data (or hold only "
            f"NULLs); every row needs a merge key value",
            table=table,
            column=missing[0],
        )
    counts = rows.select(
        *[
            F.count(F.when(F.col(quote(key)).isNull(), 1)).alias(f"k{i}")
            for i, key in enumerate(hints.merge_key)
        ]
    ).first()
    for i, key in enumerate(hints.merge_key):
        nulls = int(counts[f"k{i}"]) if counts is not None else 0
        if nulls:
            raise LoadError(
                f"table '{table}': merge key column '{key}' is NULL (or of another type than the "
                f"column) in {nulls} rows; a NULL merge key matches no stored row, so those rows "
                f"would never be replaced",
                table=table,
                column=key,
            )


def check_not_history(
    table: str, hints: LoadHints, destination: T.StructType | None, data_columns: Sequence[str]
) -> None:
    """Refuse a load other than scd2 (or replace) into a table with NOT NULL columns the
    load does not fill: the validity columns of a table loaded with the scd2 strategy."""
    if destination is None or hints.rebuilds:
        return
    if hints.disposition == "merge" and hints.strategy == "scd2":
        return
    unfilled = [f.name for f in destination.fields if not f.nullable and f.name not in data_columns]
    if unfilled:
        kind = hints.disposition if hints.disposition != "merge" else f"merge ({hints.strategy})"
        raise LoadError(
            f"table '{table}' has NOT NULL column(s) {unfilled} this {kind} load does not fill: it "
            "keeps SCD Type 2 history (they are its validity columns), which a load of another "
            "kind would break (versions without validity, every version of a key replaced as "
            "one row); load it with the scd2 strategy, or with replace to start over",
            table=table,
            column=unfilled[0],
        )
