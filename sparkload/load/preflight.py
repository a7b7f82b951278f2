"""Checks of a load against its hints and the tables it changes, made before any commit.

A merge key that the data lacks, or holds NULL in, cannot say which stored rows a row
replaces: a NULL matches no stored row under SQL equality, so the NULL group would grow
on every load (scd2 would never retire it), and a missing column fails inside the
engine's commit. dlt refuses both in its normalize step; here the load refuses them
before its first commit, naming the table and the column. (Primary keys are checked in
normalize already.)

A table holding SCD Type 2 history has validity columns (the state records their names). A load of another
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
from sparkload.load.merge_config import DEFAULT_VALIDITY_COLUMNS


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
    table: str,
    hints: LoadHints,
    destination: T.StructType | None,
    data_columns: Sequence[str],
    recorded_validity: Sequence[str] = (),
) -> None:
    """Refuse a load other than scd2 (or replace) into a table keeping SCD Type 2 history:
    one whose validity columns (those the state recorded for it, the default names, or NOT
    NULL columns) the load does not fill. NOT NULL alone is not enough: the engine drops the
    constraint when a later scd2 load adds a column."""
    if destination is None or hints.rebuilds:
        return
    if hints.disposition == "merge" and hints.strategy == "scd2":
        return
    history = {*recorded_validity, *DEFAULT_VALIDITY_COLUMNS}
    unfilled = [
        f.name
        for f in destination.fields
        if (not f.nullable or f.name in history) and f.name not in data_columns
    ]
    if unfilled:
        kind = hints.disposition if hints.disposition != "merge" else f"merge ({hints.strategy})"
        raise LoadError(
            f"table '{table}' has validity column(s) {unfilled} this {kind} load does not fill: it "
            "keeps SCD Type 2 history (they are its validity columns), which a load of another "
            "kind would break (versions without validity, every version of a key replaced as "
            "one row); load it with the scd2 strategy, or with replace to start over",
            table=table,
            column=unfilled[0],
        )
