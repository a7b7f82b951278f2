"""Every user table of every duckdb database a template made, as JSON: dlt's side.

    <dlt venv python> dump_duckdb.py <work dir> <output file>

Runs in dlt's virtualenv after the template ran there; tests/dlt_diff (its ``dump_tables``
and ``canonical``) is on its path. A template's duckdb pipelines each keep a
``<pipeline>.duckdb`` in the working directory, a dataset per schema in it; tables are
named ``<dataset>.<table>``.
"""

from __future__ import annotations

import contextlib
import json
import sys
import types
from pathlib import Path

import duckdb
from dlt_runner import dump_tables

# A dataset is a schema with dlt's load table; this leaves out duckdb's own schemas and the
# `<dataset>_staging` schema dlt merges through.
DATASETS = "SELECT DISTINCT table_schema FROM information_schema.tables WHERE table_name = '_dlt_loads'"


def main() -> None:
    work, output = Path(sys.argv[1]), Path(sys.argv[2])
    tables = {}
    for database in sorted(work.glob("*.duckdb")):
        with contextlib.closing(duckdb.connect(str(database), read_only=True)) as connection:
            datasets = [row[0] for row in connection.execute(DATASETS).fetchall()]
        for dataset in sorted(datasets):
            # dump_tables reads only the dataset's name from the pipeline it is given.
            for table, content in dump_tables(types.SimpleNamespace(dataset_name=dataset), database).items():
                tables[f"{dataset}.{table}"] = content
    output.write_text(json.dumps(tables))


if __name__ == "__main__":
    main()
