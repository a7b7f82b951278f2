"""Leave rows of a normalized table family out of its load, with the rows nested under them.

Schema contracts (``discard_row``) and data-quality expectations (``drop``) decide after
normalize which rows a load leaves out. A nested row belongs to its parent row: when the
parent is left out, so is every row below it, as in dlt. The kept rows of a table that
loses some are written to a folder of their own beside the table's normalized rows
(``NormalizedTable.folder``), so the folder normalize wrote is never rewritten in place
(it is what the kept rows are read from) and a package on an object store needs no rename.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sparkload.common.system_columns import ID, PARENT_ID
from sparkload.normalize.normalizer import NormalizedTable
from sparkload.normalize.staged_schema import read_staged, stage


def drop_rows(
    spark: SparkSession,
    family: list[NormalizedTable],
    normalized_uri: str,
    dropped: Mapping[str, DataFrame],
    reason: str,
) -> list[NormalizedTable]:
    """The family without the rows whose ``_sparkload_id`` is in ``dropped[table]`` (a
    frame of one column, ``_sparkload_id``) and without the rows nested under them.

    ``family`` lists a root table before its nested tables, a parent before its children
    (as the normalizer returns them). Each table that loses rows counts them under
    ``reason`` in ``NormalizedTable.dropped``; a table that loses none is returned as it was.
    """
    gone: dict[str, DataFrame] = {}
    result = []
    for table in family:
        ids = dropped.get(table.name)
        rows = read_staged(spark, f"{normalized_uri}/{table.rows_folder}")
        parent_gone = gone.get(table.parent) if table.parent is not None else None
        if parent_gone is not None:
            under = rows.join(parent_gone.select(F.col(ID).alias(PARENT_ID)), PARENT_ID, "left_semi")
            ids = under.select(ID) if ids is None else ids.select(ID).unionByName(under.select(ID))
        if ids is None or not ids.take(1):
            result.append(table)
            continue
        folder = f"{table.rows_folder}.kept{len(table.dropped) + 1}"
        kept_uri = f"{normalized_uri}/{folder}"
        schema = stage(rows.join(ids.select(ID).distinct(), ID, "left_anti"), kept_uri)
        kept = spark.read.schema(schema).parquet(kept_uri).count()
        counts = dict(table.dropped)
        counts[reason] = counts.get(reason, 0) + table.rows - kept
        # distinct_keys described the rows before the drop; None makes a merge dedupe.
        result.append(
            dataclasses.replace(table, rows=kept, dropped=counts, folder=folder, distinct_keys=None)
        )
        gone[table.name] = ids.select(ID)
    return result
