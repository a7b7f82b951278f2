"""Runs differential cases under dlt itself, on duckdb: the reference side of tests/dlt_diff.

    <dlt venv python> dlt_runner.py <results dir> <work dir> <case file>...

Runs in the virtualenv with dlt (benchmarks/dlt_env.py), never beside sparkload. All cases
run in this one process, one after the other, each in a folder of its own (its pipelines'
working directories and duckdb files) with the environment restored after it; each case's
tables, records and row counts go to ``<results dir>/<case>.json`` as soon as it is done, so
the pytest side can compare a case while the next ones still run here.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dlt
import duckdb
from diff_values import canonical

HARNESS_MODULE = "diff_harness"


class CaseRun:
    """What one case made and recorded: its pipelines, the values it recorded, the row
    counts of each ``pipeline.run``."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.pipelines: list[tuple[Any, Path]] = []
        self.records: list[list[Any]] = []
        self.row_counts: list[list[Any]] = []

    def make_pipeline(self, name: str, **kwargs: Any) -> Any:
        database = self.work / f"{name}.duckdb"
        kwargs.setdefault("destination", dlt.destinations.duckdb(str(database)))
        kwargs.setdefault("pipelines_dir", str(self.work / "pipelines"))
        kwargs.setdefault("dataset_name", "data")
        pipeline = dlt.pipeline(name, **kwargs)
        run = pipeline.run

        def run_and_count(*args: Any, **run_kwargs: Any) -> Any:
            info = run(*args, **run_kwargs)
            self.row_counts.append([name, _row_counts(pipeline)])
            return info

        pipeline.run = run_and_count
        self.pipelines.append((pipeline, database))
        return pipeline

    def record(self, label: str, value: Any) -> None:
        self.records.append([label, canonical(value)])


def _row_counts(pipeline: Any) -> dict[str, int]:
    """The rows dlt's normalize counted per user table in the last run (none if it had no data)."""
    normalize_info = pipeline.last_trace.last_normalize_info if pipeline.last_trace else None
    counts = normalize_info.row_counts if normalize_info is not None else {}
    return {table: rows for table, rows in counts.items() if not table.startswith("_dlt")}


def dump_tables(pipeline: Any, database: Path) -> dict[str, dict[str, Any]]:
    """Every user table of the pipeline's dataset, as it is in duckdb (dlt's own tables left out)."""
    if not database.exists():
        return {}
    tables: dict[str, dict[str, Any]] = {}
    with contextlib.closing(duckdb.connect(str(database), read_only=True)) as connection:
        # Timestamps come back as aware datetimes in the session's zone; UTC keeps them readable.
        connection.execute("SET TimeZone = 'UTC'")
        names = [
            row[0]
            for row in connection.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = ?",
                [pipeline.dataset_name],
            ).fetchall()
            if not row[0].startswith("_dlt")
        ]
        for table in sorted(names):
            types_by_column = dict(
                connection.execute(
                    "SELECT column_name, data_type FROM information_schema.columns "
                    "WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
                    [pipeline.dataset_name, table],
                ).fetchall()
            )
            cursor = connection.execute(f'SELECT * FROM "{pipeline.dataset_name}"."{table}"')
            columns = [d[0] for d in cursor.description]
            rows = []
            for values in cursor.fetchall():
                row = {}
                for column, value in zip(columns, values, strict=True):
                    # duckdb hands a JSON column (dlt's json type: data nested beyond
                    # max_table_nesting) back as its text; the data is what it spells.
                    if types_by_column.get(column) == "JSON" and value is not None:
                        value = json.loads(value)
                    row[column] = canonical(value)
                rows.append(row)
            tables[table] = {"columns": columns, "rows": rows}
    return tables


@contextlib.contextmanager
def case_scope(work: Path) -> Iterator[None]:
    """The case runs in its own folder (no .dlt settings from elsewhere) and may set
    environment variables (dlt's config); both are put back after it."""
    saved_env = dict(os.environ)
    saved_cwd = Path.cwd()
    work.mkdir(parents=True, exist_ok=True)
    os.chdir(work)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def run_case(case_file: Path, work: Path) -> dict[str, Any]:
    case = CaseRun(work)
    harness = types.ModuleType(HARNESS_MODULE)
    harness.make_pipeline = case.make_pipeline  # type: ignore[attr-defined]
    harness.record = case.record  # type: ignore[attr-defined]
    sys.modules[HARNESS_MODULE] = harness
    # The case runs as a module of its own name: dlt names config sections after a
    # resource's module, and sparkload's side runs it the same way.
    module = types.ModuleType(case_file.stem)
    module.__file__ = str(case_file)
    sys.modules[case_file.stem] = module
    try:
        with case_scope(work):
            # dont_inherit: this file's `from __future__ import annotations` must not turn
            # the case's annotations into strings (dlt finds incremental arguments by them).
            code = compile(case_file.read_text(), str(case_file), "exec", dont_inherit=True)
            exec(code, module.__dict__)
        tables = {}
        for pipeline, database in case.pipelines:
            for table, content in dump_tables(pipeline, database).items():
                tables[f"{pipeline.pipeline_name}.{table}"] = content
        return {"tables": tables, "records": case.records, "row_counts": case.row_counts}
    finally:
        del sys.modules[case_file.stem]
        del sys.modules[HARNESS_MODULE]


def main() -> None:
    results, work = Path(sys.argv[1]), Path(sys.argv[2])
    results.mkdir(parents=True, exist_ok=True)
    for case_file in map(Path, sys.argv[3:]):
        try:
            outcome = run_case(case_file, work / case_file.stem)
        except Exception:
            outcome = {"error": traceback.format_exc()}
        # Written aside and renamed: the pytest side never reads half a result.
        partial = results / f"{case_file.stem}.json.partial"
        partial.write_text(json.dumps(outcome))
        os.replace(partial, results / f"{case_file.stem}.json")


if __name__ == "__main__":
    main()
