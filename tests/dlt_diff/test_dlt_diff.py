"""Differential cases: one dlt script, run by dlt 1.31 on duckdb and by sparkload on Delta.

Each file in ``cases/`` is a script written against dlt's public API (``import dlt``). dlt runs
it unchanged in its own virtualenv (``dlt_runner.py``, a subprocess started once for all
selected cases); sparkload runs the same text here, in this process, with the one line
``import dlt`` read as ``import sparkload as dlt``. A case gets its pipelines from
``diff_harness.make_pipeline(name)`` (each side's destination in a folder of the case's own)
and may ``diff_harness.record(label, value)`` what it observes (the items a resource
yielded, say).

Compared cell for cell, after the case:

- every user table of every pipeline the case made (not dlt's ``_dlt_*`` tables nor
  sparkload's own): the same tables, each with the same multiset of rows;
- system columns by what they mean, not by value: ids and load ids are drawn at random and
  left out; a nested row carries its parent row (``<parent>``, recursively) and its
  position (``<list_idx>``), so a nested row linked to the wrong parent is a difference;
  scd2 validity columns are compared as NULL / not NULL (the boundaries are run times);
- the values the case recorded, in order;
- each ``pipeline.run``'s row counts per table (dlt: its normalize's counts), except in
  the cases listed in ``ROW_COUNTS_NOT_COMPARED``.

A case where the two disagree today is listed in ``DISAGREEMENTS`` and runs as a strict
expected failure: it fails the session once they agree, so the entry is removed then.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deltalake
import pytest
from diff_values import canonical, dumps

import sparkload as sl

HERE = Path(__file__).parent
CASES = sorted((HERE / "cases").glob("*.py"))
RUNNER = HERE / "dlt_runner.py"
DLT_ENV = HERE.parents[1] / "benchmarks" / "dlt_env.py"
HARNESS_MODULE = "diff_harness"
# The one line a case's text differs in between the two sides (a comment may follow it).
DLT_IMPORT = re.compile(r"^import dlt(?=[ \t]*(#.*)?$)", re.MULTILINE)
# How long a case may wait for dlt's result (dlt runs the cases one by one before it).
DLT_RESULT_TIMEOUT = 900.0

# Cases where sparkload's tables (or records, or row counts) differ from dlt's today:
# case -> the difference, concretely. Each runs as xfail(strict=True).
DISAGREEMENTS: dict[str, str] = {
    "column_hint_scale_rounding": (
        "Decimal('1.005') in a column hinted decimal(6, 2): dlt (duckdb) rounds it to 1.01 without "
        "a word; sparkload never rounds: `price` is NULL there and price__v_decimal holds 1.005"
    ),
    "drift_keys_differing_in_case": (
        "keys `Id` and `id`: dlt names both `id`; in the row holding both it keeps only the last "
        "value (id=11, 10 is lost), in other rows it puts either into `id` (20, 30). sparkload "
        "gives `Id` the column `id_1` in the whole load: (id=10, id_1=11), (id=NULL, id_1=20), "
        "(id=30, id_1=NULL)"
    ),
    "drift_scalar_dict_list_in_one_field": (
        "`v` holding 10, then {'a': 20}, then [30, 40]: dlt writes v=10, the column v__a=20 and "
        "the nested table t__v (30, 40); sparkload keeps the first type in `v` (10) and the dict "
        "and the list whole as JSON text in the variant column v__v_text ('{\"a\":20}', '[30,40]')"
    ),
    "insert_only_hard_delete": (
        "insert-only with hard_delete: dlt keeps the nested row 'b' of the row flagged as deleted "
        "(t__tags holds a, b, d; b has no root row); sparkload drops it with its row (a, d)"
    ),
    "int_into_bool_column": (
        "the int 2 in a column of bools, no hint: dlt coerces it to true in `flag`; sparkload "
        "converts values only into a column whose type a hint or the table declares, and here "
        "keeps flag__v_bigint=2 (true would lose the 2)"
    ),
    "int_then_float_in_one_load": (
        "1, 2.5, 3 in one column of one load: dlt types `num` bigint from the first row (1, 3) and "
        "writes 2.5 to num__v_double; sparkload types `num` double (1.0, 2.5, 3.0), no variant column"
    ),
    "merge_row_counts": (
        "row counts of a merge with dedup_sort and hard_delete: dlt counts the rows extracted "
        "({'t': 3}, then {'t': 2}); sparkload the rows written ({'t': 2}, then {'t': 1}: the "
        "duplicate of id 1 and the hard-deleted row are not counted)"
    ),
    "scd2_row_counts": (
        "scd2 row counts of a second load where only nk 2's list changed: dlt counts every row "
        "extracted ({'t': 2, 't__c': 4}); sparkload the new version and its nested rows "
        "({'t': 1, 't__c': 2})"
    ),
}

# Cases whose row counts are not compared: case -> why the counts mean different things.
# sparkload's LoadInfo.row_counts counts the rows a load writes, dlt's normalize counts every
# row extracted; merge_row_counts and scd2_row_counts hold that difference, once.
_COUNTS_WRITTEN = "row counts: rows written (sparkload) against rows extracted (dlt), see {}"
ROW_COUNTS_NOT_COMPARED: dict[str, str] = {
    "insert_only_hard_delete": _COUNTS_WRITTEN.format("merge_row_counts"),
    "merge_dedup_sort": _COUNTS_WRITTEN.format("merge_row_counts"),
    "merge_hard_delete": _COUNTS_WRITTEN.format("merge_row_counts"),
    "scd2_change_in_nested_data": _COUNTS_WRITTEN.format("scd2_row_counts"),
    "scd2_merge_key_keeps_absent_rows": _COUNTS_WRITTEN.format("scd2_row_counts"),
    "scd2_rows_differing_in_nested_data": _COUNTS_WRITTEN.format("scd2_row_counts"),
    "scd2_versions_and_retired_keys": _COUNTS_WRITTEN.format("scd2_row_counts"),
}


def _case_params() -> list[Any]:
    params = []
    for case in CASES:
        marks = []
        if case.stem in DISAGREEMENTS:
            marks.append(pytest.mark.xfail(strict=True, reason=DISAGREEMENTS[case.stem]))
        params.append(pytest.param(case, id=case.stem, marks=marks))
    return params


class DltResults:
    """The dlt side's results, read as the runner writes them."""

    def __init__(self, process: subprocess.Popen[str], results: Path, log: Path) -> None:
        self.process = process
        self.results = results
        self.log = log

    def of(self, case: str) -> dict[str, Any]:
        path = self.results / f"{case}.json"
        deadline = time.monotonic() + DLT_RESULT_TIMEOUT
        while not path.exists():
            if self.process.poll() is not None and not path.exists():
                pytest.fail(
                    f"dlt's runner ended without a result for {case}:\n{self.log.read_text()[-4000:]}"
                )
            if time.monotonic() > deadline:
                pytest.fail(f"no result from dlt for {case} in {DLT_RESULT_TIMEOUT:.0f}s")
            time.sleep(0.1)
        outcome: dict[str, Any] = json.loads(path.read_text())
        if "error" in outcome:
            pytest.fail(f"the case failed under dlt:\n{outcome['error']}")
        return outcome


def _python_with_dlt() -> str:
    spec = importlib.util.spec_from_file_location("dlt_env", DLT_ENV)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    python: str = module.python_with_dlt(duckdb=True)
    return python


@pytest.fixture(scope="session")
def dlt_results(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DltResults]:
    """dlt runs every selected case in one subprocess, started before the first comparison
    and running while sparkload runs its side here."""
    selected = [
        item.callspec.params["case"]
        for item in request.session.items
        if hasattr(item, "callspec") and "case" in item.callspec.params
    ]
    root = tmp_path_factory.mktemp("dlt_side")
    log = root / "runner.log"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # The runner imports diff_values from its own folder; dlt's global folder (~/.dlt) is one
    # of the run's own, as sparkload's is (conftest); no telemetry leaves the machine.
    env.update(
        PYTHONPATH=str(HERE),
        DLT_DATA_DIR=str(root / "dlt_home"),
        RUNTIME__DLTHUB_TELEMETRY="false",
        RUST_LOG="error",
    )
    with log.open("w") as output:
        process = subprocess.Popen(
            [_python_with_dlt(), str(RUNNER), str(root / "results"), str(root / "work"), *map(str, selected)],
            stdout=output,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
    try:
        yield DltResults(process, root / "results", log)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


class SparkloadCase:
    """The harness module a case imports, on sparkload's side."""

    def __init__(self, make_pipeline: Any) -> None:
        self._make_pipeline = make_pipeline
        self.pipelines: list[sl.Pipeline] = []
        self.records: list[list[Any]] = []
        self.row_counts: list[list[Any]] = []

    def make_pipeline(self, name: str, **kwargs: Any) -> sl.Pipeline:
        kwargs.setdefault("dataset_name", "data")
        pipeline: sl.Pipeline = self._make_pipeline(name, **kwargs)
        run = pipeline.run

        def run_and_count(*args: Any, **run_kwargs: Any) -> Any:
            info = run(*args, **run_kwargs)
            counts = {t: n for t, n in info.row_counts.items() if not t.startswith("_sparkload")}
            self.row_counts.append([name, counts])
            return info

        pipeline.run = run_and_count  # type: ignore[method-assign]
        self.pipelines.append(pipeline)
        return pipeline

    def record(self, label: str, value: Any) -> None:
        self.records.append([label, canonical(value)])

    def tables(self) -> dict[str, dict[str, Any]]:
        """Every user table of the case's pipelines, read by delta-rs."""
        tables = {}
        for pipeline in self.pipelines:
            for table in sorted(pipeline.destination_dataset.user_tables()):
                arrow = deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").to_pyarrow_table()
                # A json column holds JSON text (Delta has no JSON type; the pipeline's schema
                # names the column's type): as on dlt's side, the data is what it spells.
                columns = pipeline.default_schema.get_table_columns(table)
                json_columns = {c for c, column in columns.items() if column.get("data_type") == "json"}
                rows = [
                    {
                        k: canonical(json.loads(v) if k in json_columns and isinstance(v, str) else v)
                        for k, v in row.items()
                    }
                    for row in arrow.to_pylist()
                ]
                tables[f"{pipeline.pipeline_name}.{table}"] = {"columns": arrow.column_names, "rows": rows}
        return tables


def run_under_sparkload(case_file: Path, make_pipeline: Any) -> dict[str, Any]:
    text = case_file.read_text()
    assert len(DLT_IMPORT.findall(text)) == 1, (
        f"{case_file.name} must import dlt exactly once, as `import dlt`"
    )
    case = SparkloadCase(make_pipeline)
    harness = types.ModuleType(HARNESS_MODULE)
    harness.make_pipeline = case.make_pipeline  # type: ignore[attr-defined]
    harness.record = case.record  # type: ignore[attr-defined]
    # As on dlt's side: the case runs as a module of its own name.
    module = types.ModuleType(case_file.stem)
    module.__file__ = str(case_file)
    saved_env = dict(os.environ)
    sys.modules[HARNESS_MODULE] = harness
    sys.modules[case_file.stem] = module
    try:
        # dont_inherit: as on dlt's side, the case's annotations stay objects, not the
        # strings this module's `from __future__ import annotations` would make them.
        code = compile(
            DLT_IMPORT.sub("import sparkload as dlt", text), str(case_file), "exec", dont_inherit=True
        )
        exec(code, module.__dict__)
    finally:
        del sys.modules[case_file.stem]
        del sys.modules[HARNESS_MODULE]
        # A case may set dlt's config in the environment; the next case must not see it.
        os.environ.clear()
        os.environ.update(saved_env)
    return {"tables": case.tables(), "records": case.records, "row_counts": case.row_counts}


# What the system columns of either side mean, by their name after the prefix.
RANDOM_SYSTEM_COLUMNS = {"id", "load_id", "root_id"}  # drawn per run: no meaning across sides
VALIDITY_COLUMNS = {"valid_from", "valid_to"}  # scd2's run-time boundaries: NULL or not


def meaningful_rows(tables: dict[str, dict[str, Any]], system_prefix: str) -> dict[str, list[str]]:
    """Each table's rows as sorted JSON texts: user columns as they are, system columns by
    what they mean (see the module's docstring)."""
    rows_by_id: dict[str, dict[Any, Any]] = {}
    meaningful: dict[str, list[str]] = {}
    # Parents before their nested tables: a nested table's name extends its parent's.
    for key in sorted(tables, key=lambda name: name.count("__")):
        parents = [other for other in tables if key.startswith(other + "__")]
        parent = max(parents, key=len) if parents else None
        rows_by_id[key] = {}
        texts = []
        for row in tables[key]["rows"]:
            out = {column: value for column, value in row.items() if not column.startswith(system_prefix)}
            system = {
                column[len(system_prefix) :]: v
                for column, v in row.items()
                if column.startswith(system_prefix)
            }
            for name, value in system.items():
                if name in RANDOM_SYSTEM_COLUMNS:
                    continue
                if name == "parent_id":
                    out["<parent>"] = (
                        rows_by_id[parent].get(value, "<no such parent row>") if parent else value
                    )
                elif name in VALIDITY_COLUMNS:
                    out[f"<{name} is null>"] = value is None
                else:
                    out[f"<{name}>"] = value
            rows_by_id[key][system.get("id")] = out
            texts.append(dumps(out))
        meaningful[key] = sorted(texts)
    return meaningful


def nonzero_counts(runs: list[list[Any]]) -> list[list[Any]]:
    """Each run's row counts without the tables it wrote no row to: dlt names a replaced
    table it emptied with 0 rows and leaves out its nested tables, sparkload names both with
    0; either way no row was written there."""
    return [[pipeline, {table: n for table, n in counts.items() if n}] for pipeline, counts in runs]


def differences(theirs: dict[str, Any], ours: dict[str, Any], compare_row_counts: bool) -> list[str]:
    """What differs between dlt's outcome (``theirs``) and sparkload's (``ours``), in words."""
    found: list[str] = []
    dlt_tables = meaningful_rows(theirs["tables"], "_dlt_")
    sparkload_tables = meaningful_rows(ours["tables"], "_sparkload_")
    for table in sorted(set(dlt_tables) | set(sparkload_tables)):
        if table not in sparkload_tables:
            found.append(
                f"table {table}: only dlt has it, with rows\n    " + "\n    ".join(dlt_tables[table])
            )
            continue
        if table not in dlt_tables:
            found.append(
                f"table {table}: only sparkload has it, with rows\n    "
                + "\n    ".join(sparkload_tables[table])
            )
            continue
        dlt_columns = {c for c in theirs["tables"][table]["columns"] if not c.startswith("_dlt_")}
        sparkload_columns = {c for c in ours["tables"][table]["columns"] if not c.startswith("_sparkload_")}
        if dlt_columns != sparkload_columns:
            found.append(
                f"table {table}: columns only in dlt's {sorted(dlt_columns - sparkload_columns)}, "
                f"only in sparkload's {sorted(sparkload_columns - dlt_columns)}"
            )
        only_dlt = collections.Counter(dlt_tables[table]) - collections.Counter(sparkload_tables[table])
        only_sparkload = collections.Counter(sparkload_tables[table]) - collections.Counter(dlt_tables[table])
        if only_dlt or only_sparkload:
            counts = f"{len(dlt_tables[table])} in dlt's, {len(sparkload_tables[table])} in sparkload's"
            lines = [f"table {table}: rows differ ({counts})"]
            lines += [f"  only dlt's:       {row}" for row in sorted(only_dlt.elements())]
            lines += [f"  only sparkload's: {row}" for row in sorted(only_sparkload.elements())]
            found.append("\n".join(lines))
    if theirs["records"] != ours["records"]:
        found.append(
            f"records differ:\n  dlt's:       {dumps(theirs['records'])}\n"
            f"  sparkload's: {dumps(ours['records'])}"
        )
    dlt_counts, sparkload_counts = nonzero_counts(theirs["row_counts"]), nonzero_counts(ours["row_counts"])
    if compare_row_counts and dlt_counts != sparkload_counts:
        found.append(
            f"row counts per run differ:\n  dlt's:       {dumps(dlt_counts)}\n"
            f"  sparkload's: {dumps(sparkload_counts)}"
        )
    return found


@pytest.mark.timeout(DLT_RESULT_TIMEOUT + 300)
@pytest.mark.parametrize("case", _case_params())
def test_sparkload_agrees_with_dlt(case: Path, dlt_results: DltResults, make_pipeline: Any) -> None:
    try:
        ours = run_under_sparkload(case, make_pipeline)
    except Exception:
        # A case dlt cannot run either is a defect of the case, not a difference.
        dlt_results.of(case.stem)
        raise
    theirs = dlt_results.of(case.stem)
    found = differences(theirs, ours, compare_row_counts=case.stem not in ROW_COUNTS_NOT_COMPARED)
    if found:
        pytest.fail(f"{case.stem}: sparkload differs from dlt 1.31\n" + "\n".join(found), pytrace=False)


def test_every_listed_case_exists() -> None:
    """A case renamed or removed takes its entries in the lists with it."""
    names = {case.stem for case in CASES}
    assert set(DISAGREEMENTS) <= names and set(ROW_COUNTS_NOT_COMPARED) <= names
