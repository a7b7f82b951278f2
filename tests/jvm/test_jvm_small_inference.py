"""A small staged NDJSON file of flat records has its schema found in this process on
Apache Spark (``normalize/json_schema.scalar_schema``) rather than by a job of the engine's
JSON inference: the two must give the same schema. Runs with ``--engine=spark``."""

from __future__ import annotations

from pathlib import Path

from test_jvm_lean import printed, run_child

COMPARE = """
import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession

from sparkload.normalize.json_schema import INFER_ALL, scalar_schema

spark = SparkSession.builder.master("local[1]").getOrCreate()
samples = json.loads(sys.argv[1])
for n, lines in enumerate(samples):
    path = Path(sys.argv[2]) / f"sample{n}.json"
    path.write_text("".join(line + "\\n" for line in lines))
    found = scalar_schema(path.read_bytes().splitlines())
    inferred = spark.read.options(**INFER_ALL).json(str(path)).schema
    print("SAME", n, found == inferred, found, inferred)
"""

SAMPLES = [
    ['{"id": 1, "v": "a"}', '{"id": 2.5, "w": true}'],
    ['{"b": 1, "a": null}', '{"a": "x", "c": false}', ""],
    ['{"\\u00e9": 1, "z": 2, "A": 3, "_x": 1, "\\ud83d\\ude00": "s", "\\uff5e": "t"}'],
    ['{"n": -9223372036854775808, "m": 9223372036854775807, "d": 1e300, "e": -0.0}'],
    ['{"ts": "2024-01-01T00:00:00Z", "day": "2024-01-01", "num": "12", "dec": 1.50}'],
]


def test_a_small_flat_files_schema_is_the_one_apache_spark_infers(tmp_path: Path) -> None:
    import json

    out = tmp_path / "files"
    out.mkdir()
    script = COMPARE.replace("sys.argv[1]", repr(json.dumps(SAMPLES))).replace("sys.argv[2]", repr(str(out)))
    done = run_child(script, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    for n in range(len(SAMPLES)):
        assert printed(done, f"SAME {n}").startswith("True"), printed(done, f"SAME {n}")
