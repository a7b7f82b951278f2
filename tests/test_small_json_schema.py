"""``scalar_schema`` leaves to the engine every file whose schema it cannot know to be
Apache Spark's: nested values, columns null in every row, conflicting types, keys
differing only in case, integers beyond a long."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

from sparkload.normalize.json_schema import scalar_schema


@pytest.mark.parametrize(
    "lines",
    [
        [b'{"a": {"b": 1}}'],
        [b'{"a": [1]}'],
        [b'{"a": 1, "b": null}'],
        [b'{"a": 1}', b'{"a": "x"}'],
        [b'{"a": 1}', b'{"a": true}'],
        [b'{"Id": 1, "id": 2}'],
        [b'{"a": 9223372036854775808}'],
        [b"[1, 2]"],
        [b'{"a": 1'],
        [b""],
    ],
)
def test_records_the_engine_is_to_infer(lines: list[bytes]) -> None:
    assert scalar_schema(lines) is None


def test_flat_records_merge_longs_into_doubles_and_sort_by_name() -> None:
    schema = scalar_schema([b'{"z": 1, "a": "x"}', b'{"z": 2.5, "m": false, "a": null}'])
    assert schema == T.StructType(
        [
            T.StructField("a", T.StringType(), True),
            T.StructField("m", T.BooleanType(), True),
            T.StructField("z", T.DoubleType(), True),
        ]
    )
