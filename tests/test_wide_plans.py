"""Wide tables cost the engine time that grows faster than their width in each query, so
normalize asks its per-column questions of slices of the columns, and the load writes
columns staged as the table takes them without an expression each."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from pathlib import Path

from conftest import delta_rows, user_columns
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

import sparkload as sl
from sparkload.common.tags import TAG_STRING
from sparkload.normalize.infer import infer_columns
from sparkload.normalize.slices import SLICE_COLUMNS, StagedTable


@dataclasses.dataclass(frozen=True)
class _CountingStaged(StagedTable):
    """A staged table that notes how many columns each of its reads holds."""

    widths: list[int] = dataclasses.field(default_factory=list)

    def read(self, names: Collection[str]) -> DataFrame:
        self.widths.append(len(set(names)))
        return super().read(names)


def test_profile_reads_slices_of_columns(pipeline: sl.Pipeline, tmp_path: Path) -> None:
    spark = pipeline.spark
    width = 2 * SLICE_COLUMNS + 2
    columns = [F.col("id")]
    for i in range(1, width - 1):
        text = F.concat(F.lit(f"v{i}_"), F.col("id").cast("string"))
        columns.append((F.col("id") * i if i % 2 else text).alias(f"c{i}"))
    # A real string that begins with NUL, staged escaped: its tag comes off on load.
    columns.append(F.lit(TAG_STRING + "\x00nul").alias("escaped"))
    uri = str(tmp_path / "staged")
    spark.range(3).select(*columns).write.parquet(uri)
    schema = spark.read.parquet(uri).schema
    staged = _CountingStaged(spark, uri, schema)

    specs, rows, distinct = infer_columns(
        staged,
        "wide",
        {f.name: f.dataType for f in schema.fields},
        {},
        None,
        required=("id",),
        distinct=("id",),
    )

    assert (rows, distinct) == (3, 3)
    assert len(staged.widths) >= 3 and max(staged.widths) <= SLICE_COLUMNS + 1  # the key beside a slice
    plain = {spec.name: spec.plain for spec in specs}
    assert len(plain) == width
    assert plain.pop("escaped") is False  # its values lose their tag on the way
    assert all(plain.values())  # ints and text no tag can begin: read as staged


def test_columns_read_as_staged_keep_their_values(pipeline: sl.Pipeline) -> None:
    rows = [
        {"id": i, "n": i * 7, "x": i + 0.25, "t": f"v{i}", "nul": f"\x00{i}", "d": f"{i}-x"} for i in range(4)
    ]
    pipeline.run(sl.resource(rows, name="plain", write_disposition="append"))
    assert sorted(user_columns(delta_rows(pipeline, "plain")), key=lambda r: r["id"]) == rows
