"""Flat tables: staged NDJSON written as normalized Parquet by Arrow, without the engine's
flattening write, and loaded with every value as the engine's path loads it."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import delta_rows, user_columns
from pyspark.sql import DataFrame
from pyspark.sql import types as T

import sparkload as sl
from sparkload.common.system_columns import ID, LOAD_ID
from sparkload.normalize import flat_json, normalizer
from sparkload.normalize.flat_json import arrow_schema, write_flat_json
from sparkload.normalize.infer import infer_columns
from sparkload.normalize.slices import StagedTable

UTC = datetime.timezone.utc
PLUS_TWO = datetime.timezone(datetime.timedelta(hours=2))


def _tricky_rows() -> list[dict[str, Any]]:
    """Values JSON cannot hold as they are (tagged at extract) beside plain ones, a column of
    each per kind, so the staged table stays flat."""
    return [
        {
            "id": 1,
            "big": 2**53 + 1,  # beyond a double's exact integers: tagged at extract
            "biggest": 2**63 - 1,
            "small": -(2**63),
            "price": decimal.Decimal("1.005"),
            "ratio": 0.1,
            "tiny": 5e-324,
            "huge": 1.7976931348623157e308,
            "negative_zero": -0.0,
            "naive": datetime.datetime(2024, 1, 2, 3, 4, 5, 123456),
            "aware": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=PLUS_TWO),
            "day": datetime.date(2024, 2, 29),
            "nul_led": "\x00Dnot a tag",
            "list_like": "[1, 2]",
            "dict_like": '{"a": 1}',
            "text": 'héllo ✓ \n\t"quoted"',
            "flag": True,
            "empty": "",
        },
        {
            "id": 2,
            "big": -(2**53) - 1,
            "biggest": 2**62,  # each column beyond 53 bits in every row: plain ints beside
            "small": -(2**60),  # tagged ones make a column of mixed kinds, split apart
            "price": decimal.Decimal("-2.675"),
            "ratio": 2,  # an int in a float column
            "tiny": None,
            "huge": -1.5,
            "negative_zero": 0.0,
            "naive": None,
            "aware": datetime.datetime(1999, 12, 31, 23, 59, 59, tzinfo=UTC),
            "day": None,
            "nul_led": None,
            "list_like": "[",
            "dict_like": None,
            "text": None,
            "flag": False,
            "empty": None,
        },
    ]


def _expected() -> list[dict[str, Any]]:
    rows = _tricky_rows()
    rows[0]["naive"] = rows[0]["naive"].replace(tzinfo=UTC)  # naive is taken as UTC, as dlt does
    rows[0]["aware"] = rows[0]["aware"].astimezone(UTC)
    rows[1]["ratio"] = 2.0
    return rows


def _normalized_files(pipeline: sl.Pipeline, table: str) -> list[Path]:
    packages = Path(pipeline.dataset_uri) / "_sparkload_packages"
    return sorted(packages.glob(f"*/*/normalized/{table}/*.parquet"))


@pytest.fixture
def arrow_for_narrow_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Arrow's path for tables of any width: the tests' tables are narrow, and the path is
    taken from ``normalizer.ARROW_MIN_COLUMNS`` columns on (the engine's is faster below)."""
    monkeypatch.setattr(normalizer, "ARROW_MIN_COLUMNS", 1)


def test_a_narrow_flat_table_is_normalized_by_the_engine(pipeline: sl.Pipeline) -> None:
    pipeline.extract(sl.resource([{"id": n, "name": f"n{n}"} for n in range(50)], name="narrow"))
    pipeline.normalize()
    files = _normalized_files(pipeline, "narrow")
    assert files
    assert not any(pq.ParquetFile(f).metadata.created_by.startswith("parquet-cpp-arrow") for f in files)


def test_a_wide_flat_table_is_normalized_by_arrow(pipeline: sl.Pipeline) -> None:
    row = {"id": 1, **{f"c{n}": n for n in range(normalizer.ARROW_MIN_COLUMNS)}}
    pipeline.extract(sl.resource([row], name="wide"))
    pipeline.normalize()
    files = _normalized_files(pipeline, "wide")
    assert files
    assert all(pq.ParquetFile(f).metadata.created_by.startswith("parquet-cpp-arrow") for f in files)


@pytest.mark.usefixtures("arrow_for_narrow_tables")
def test_a_flat_table_is_normalized_by_arrow_with_its_ids(pipeline: sl.Pipeline) -> None:
    rows = [{"id": n, "name": f"n{n}", "score": n / 4, "ok": n % 2 == 0} for n in range(50)]
    pipeline.extract(sl.resource(rows, name="flat"))
    pipeline.normalize()
    files = _normalized_files(pipeline, "flat")
    assert files
    # Written in this process by Arrow, not by the engine's flattening write.
    assert all(pq.ParquetFile(f).metadata.created_by.startswith("parquet-cpp-arrow") for f in files)
    staged = pa.concat_tables(pq.read_table(f) for f in files).to_pylist()
    assert [{k: r[k] for k in ("id", "name", "score", "ok")} for r in staged] == rows
    ids = [r[ID] for r in staged]
    load_id = staged[0][LOAD_ID]
    assert len(set(ids)) == len(ids) and ids == sorted(ids)  # unique, in the order staged
    assert all(i.startswith(load_id.replace(".", "") + "_") for i in ids)
    pipeline.load()
    assert sorted(user_columns(delta_rows(pipeline, "flat")), key=lambda r: r["id"]) == rows


@pytest.mark.usefixtures("arrow_for_narrow_tables")
def test_tricky_values_load_alike_flat_and_through_the_engine(make_pipeline: Any) -> None:
    flat = make_pipeline()
    flat.extract(sl.resource(_tricky_rows(), name="tricky"))
    flat.normalize()
    files = _normalized_files(flat, "tricky")
    assert files
    assert all(pq.ParquetFile(f).metadata.created_by.startswith("parquet-cpp-arrow") for f in files)
    flat.load()
    # A dict in one row makes the table one to flatten: the engine's path writes it.
    nested = make_pipeline()
    rows = _tricky_rows()
    rows[1]["extra"] = {"k": 1}
    nested.run(sl.resource(rows, name="tricky"))
    by_arrow = sorted(user_columns(delta_rows(flat, "tricky")), key=lambda r: r["id"])
    by_engine = sorted(user_columns(delta_rows(nested, "tricky")), key=lambda r: r["id"])
    for row in by_engine:
        del row["extra__k"]
    assert by_arrow == by_engine == _expected()
    assert [type(r["price"]) for r in by_arrow] == [decimal.Decimal] * 2
    assert str(by_arrow[0]["negative_zero"]) == "-0.0"
    assert [r[k] for r in flat.table("tricky").orderBy("id").collect() for k in ("big",)] == [
        2**53 + 1,
        -(2**53) - 1,
    ]


def test_a_value_arrow_refuses_writes_nothing(tmp_path: Path) -> None:
    staged = tmp_path / "part-00000.jsonl"
    staged.write_bytes(b'{"a": 1}\n{"a": 2.5}\n')  # a float where the schema says bigint
    target = tmp_path / "out"
    schema = pa.schema([pa.field("a", pa.int64())])
    assert write_flat_json([staged], schema, str(target), "x_", ID, LOAD_ID, "1.2") is None
    assert not target.exists()
    staged.write_bytes(b'{"a": 1}\n{"a": 2}\n')
    summary = write_flat_json([staged], schema, str(target), "x_", ID, LOAD_ID, "1.2")
    assert summary is not None and summary.rows == 2
    assert (summary.columns["a"].low, summary.columns["a"].high) == (1, 2)
    written = pq.read_table(target).to_pylist()
    assert written == [
        {"a": 1, ID: "x_0000000000000000", LOAD_ID: "1.2"},
        {"a": 2, ID: "x_0000000000000001", LOAD_ID: "1.2"},
    ]


@dataclasses.dataclass(frozen=True)
class _CountingStaged(StagedTable):
    """A staged table that notes the columns each of its reads holds."""

    reads: list[list[str]] = dataclasses.field(default_factory=list)

    def read(self, names: Collection[str]) -> DataFrame:
        self.reads.append(sorted(names))
        return super().read(names)


def test_the_profile_of_a_flat_table_comes_from_its_arrow_summary(
    pipeline: sl.Pipeline, tmp_path: Path
) -> None:
    staged = tmp_path / "part-00000.jsonl"
    lines = [
        b'{"id": 1, "n": 5, "x": 0.5, "t": "plain", "d": "2024-01-02", "b": true, "e": null}',
        b'{"id": 2, "n": -3, "x": null, "t": "\\u0000Dtagged", "d": "1x", "b": null, "e": null}',
        b'{"id": 3, "n": null, "x": 2.0, "t": null, "d": null, "b": false, "e": "[1]"}',
    ]
    staged.write_bytes(b"\n".join(lines) + b"\n")
    spark_schema = T.StructType(
        [
            T.StructField(name, dtype)
            for name, dtype in [
                ("id", T.LongType()),
                ("n", T.LongType()),
                ("x", T.DoubleType()),
                ("t", T.StringType()),
                ("d", T.StringType()),
                ("b", T.BooleanType()),
                ("e", T.StringType()),
            ]
        ]
    )
    arrow = arrow_schema(spark_schema)
    assert arrow is not None
    target = str(tmp_path / "out")
    summary = write_flat_json([staged], arrow, target, "x_", ID, LOAD_ID, "1.2")
    assert summary is not None
    leaves = {field.name: field.dataType for field in spark_schema.fields}
    full = T.StructType(
        [*spark_schema.fields, T.StructField(ID, T.StringType()), T.StructField(LOAD_ID, T.StringType())]
    )
    by_engine = infer_columns(StagedTable(pipeline.spark, target, full), "t", leaves, {}, None)
    summarized = _CountingStaged(pipeline.spark, target, full, summary)
    by_arrow = infer_columns(summarized, "t", leaves, {}, None)
    assert [spec.to_dict() for spec in by_arrow[0]] == [spec.to_dict() for spec in by_engine[0]]
    assert by_arrow[1:] == by_engine[1:] == (3, None)
    # The engine read only the string columns some value of which may be of another kind.
    assert summarized.reads
    assert all(set(read) <= {"d", "e", "t"} for read in summarized.reads)


def test_a_file_larger_than_extract_writes_is_left_to_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    staged = tmp_path / "import-00000.jsonl"
    staged.write_bytes(b'{"a": 1}\n{"a": 2}\n')
    monkeypatch.setattr(flat_json, "_MAX_FILE", staged.stat().st_size - 1)
    target = tmp_path / "out"
    schema = pa.schema([pa.field("a", pa.int64())])
    assert write_flat_json([staged], schema, str(target), "x_", ID, LOAD_ID, "1.2") is None
    assert not target.exists()
