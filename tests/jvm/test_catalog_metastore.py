"""Catalog tables in a Hive metastore that outlives the JVM, as on EMR, Dataproc or a
self-managed cluster: one job loads ``spark_catalog.crm.*`` by name, a second job on a
new machine (another JVM, an empty working directory) resumes from the state table in
the metastore and merges into the same tables. Each job is a process of its own, so this
runs only with ``--engine=spark``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import deltalake
from test_jvm_sessions import run_script

JOB = """
from delta import configure_spark_with_delta_pip
from sparkload.engine.jvm import DELTA_SESSION_CONF

home = sys.argv[1]
builder = (
    builder.config("spark.sql.warehouse.dir", home + "/warehouse")
    .config("javax.jdo.option.ConnectionURL", f"jdbc:derby:;databaseName={home}/metastore_db;create=true")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.databricks.delta.snapshotPartitions", "1")
    .enableHiveSupport()
)
for key, value in DELTA_SESSION_CONF.items():
    builder = builder.config(key, value)
spark = configure_spark_with_delta_pip(builder).getOrCreate()

@sl.resource(primary_key="id", write_disposition="merge")
def customers(updated=sl.incremental("updated", initial_value=0)):
    print("CURSOR", updated.last_value)
    for i in range(1, 7):
        if i > updated.last_value and i <= LIMIT:
            yield {"id": i % 4, "updated": i, "tags": [f"t{i}"]}

pipeline = sl.pipeline(
    "crm",
    destination=sl.destinations.delta(catalog="spark_catalog"),
    dataset_name="crm",
    pipelines_dir=home + "/" + MACHINE,
    spark=spark,
)
print(pipeline.run(customers()))
rows = spark.read.table("spark_catalog.crm.customers").orderBy("id").collect()
print("ROWS", [(row["id"], row["updated"]) for row in rows])
print("LOCATION", pipeline.destination_dataset.table("customers").location())
print("NESTED", pipeline.destination_dataset.table("customers__tags").location())
"""


def job(tmp_path: Path, machine: str, limit: int) -> subprocess.CompletedProcess[str]:
    done = run_script(f"MACHINE = {machine!r}\nLIMIT = {limit}\n" + JOB, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_a_second_jvm_on_a_new_machine_resumes_from_the_metastore(tmp_path: Path) -> None:
    first = job(tmp_path, "machine_a", limit=3)
    assert "CURSOR 0" in first.stdout
    assert "ROWS [(1, 1), (2, 2), (3, 3)]" in first.stdout

    second = job(tmp_path, "machine_b", limit=6)
    # The cursor came from the state table in the metastore, not a working directory.
    assert "CURSOR 3" in second.stdout
    # ids 0..3 (i % 4): 4 → 0, 5 → 1 (merged over updated 1), 6 → 2 (over 2).
    assert "ROWS [(0, 4), (1, 5), (2, 6), (3, 3)]" in second.stdout

    location = second.stdout.split("LOCATION ", 1)[1].splitlines()[0]
    assert location.startswith(str(tmp_path / "warehouse"))
    table = deltalake.DeltaTable(location).to_pyarrow_table().sort_by("id")
    assert table.column("updated").to_pylist() == [4, 5, 6, 3]
    # The nested rows of merged customers were replaced with theirs.
    nested = second.stdout.split("NESTED ", 1)[1].splitlines()[0]
    assert sorted(deltalake.DeltaTable(nested).to_pyarrow_table().column("value").to_pylist()) == [
        "t3",
        "t4",
        "t5",
        "t6",
    ]
