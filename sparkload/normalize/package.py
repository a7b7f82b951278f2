"""The normalize stage's entry point: one extracted package normalized into its staged
package beside the data (``normalize_package``), table by table, side by side; what the
pipeline passes in stands for what lives above this layer (the destination's tables, the
committed state, the progress display)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from sparkload.common.folder import Folder
from sparkload.common.hints import LoadHints
from sparkload.common.package import LoadPackage
from sparkload.common.side_by_side import run_side_by_side
from sparkload.common.state_record import PipelineState
from sparkload.exceptions import DamagedFileError, NormalizeError, SparkloadError
from sparkload.extract.jobs import ExtractedTable
from sparkload.extract.manifest import ExtractManifest
from sparkload.extract.storage import EngineFiles
from sparkload.normalize.contracts import apply_contract_to_hints, apply_schema_contract
from sparkload.normalize.expectations import apply_expectations
from sparkload.normalize.manifest import NormalizeManifest
from sparkload.normalize.normalizer import NormalizedTable, TableNormalizer

if TYPE_CHECKING:  # pyspark comes with the engine extra the user installs
    from pyspark.sql import SparkSession
    from pyspark.sql import types as T

PARQUET = ".parquet"
# Tables normalized at once (each is a few engine calls; see common/side_by_side.py).
_CONCURRENT_TABLES = 4

# The column hints a table was last loaded with, by column (read from the committed state).
RecordedColumns = Callable[[PipelineState, str], Mapping[str, Mapping[str, object]]]


@dataclasses.dataclass(frozen=True)
class _Package:
    """What every table of one package normalizes with."""

    spark: SparkSession
    package: LoadPackage
    staged: LoadPackage
    engine_files: EngineFiles
    # The destination table's schema (None: no such table).
    table_schema: Callable[[str], T.StructType | None]
    recorded_columns: RecordedColumns
    on_table: Callable[[str], None]
    # The tables the load's refresh drops, which the schema contract judges as not there.
    dropped: frozenset[str]
    # The committed state (where a contract judges column hints).
    committed: PipelineState


def normalize_package(
    spark: SparkSession,
    package: LoadPackage,
    staged: LoadPackage,
    engine_files: EngineFiles,
    *,
    table_schema: Callable[[str], T.StructType | None],
    committed_state: Callable[[], PipelineState],
    recorded_columns: RecordedColumns,
    on_tables: Callable[[int | None], None],
    on_table: Callable[[str], None],
) -> NormalizeManifest:
    """Normalize ``package`` into ``staged``; returns the manifest written there.

    ``engine_files``: where the engine reads the extracted files; ``table_schema``: a
    destination table's schema; ``committed_state``: the committed state, read only where a
    contract judges column hints, ``recorded_columns`` the hints it holds for a table;
    ``on_tables``/``on_table``: the progress display's count of tables and each one done."""
    manifest = ExtractManifest.read(package)
    extracted_tables = manifest.tables
    refresh = manifest.refresh or {}
    # Tables the load's refresh drops before its first commit (drop_data keeps them).
    dropped = frozenset(refresh.get("tables") or ()) if refresh.get("mode") != "drop_data" else frozenset()
    # The column hints each table was last loaded with, which a contract's data_type mode
    # compares hints with; read once, before the tables normalize side by side, and only
    # where a contract asks (it reads the committed state).
    judged = any(_judges_hints(extracted.hints) for extracted in extracted_tables)
    engine_files.publish_all()
    committed: PipelineState = committed_state() if judged else {}
    context = _Package(
        spark,
        package,
        staged,
        engine_files,
        table_schema,
        recorded_columns,
        on_table,
        dropped,
        committed,
    )
    # Tables normalize independently of each other: side by side, so that the engine
    # calls of many small tables overlap.
    tasks = [
        functools.partial(_normalize_table, context, extracted)
        for extracted in extracted_tables
        if extracted.rows
    ]
    on_tables(len(tasks))
    normalized = run_side_by_side(tasks, _CONCURRENT_TABLES, "normalize")
    families = [table for family in normalized for table in family]
    normalized_manifest = NormalizeManifest(
        load_id=package.load_id,
        execution_time=manifest.execution_time,
        tables=families,
        hints={extracted.name: extracted.hints for extracted in extracted_tables},
        state=manifest.state,
        base_version=manifest.base_version,
        refresh=manifest.refresh,
        files=_normalized_files(staged, [table.rows_folder for table in families if table.rows]),
    )
    normalized_manifest.write(staged)
    return normalized_manifest


def normalized_counts(manifest: NormalizeManifest) -> dict[str, dict[str, int]]:
    """Rows and Parquet files per table of a normalized package, for its trace step."""
    return {
        table.name: {"rows": table.rows, "files": len(manifest.files_of(table))} for table in manifest.tables
    }


def _normalize_table(context: _Package, extracted: ExtractedTable) -> list[NormalizedTable]:
    """One extracted table, with its nested tables; the tables the load's refresh drops
    are judged by the schema contract as not there (as dlt does)."""
    name = extracted.name
    replacing = extracted.hints.rebuilds
    package, staged = context.package, context.staged

    def destination_schema(table: str) -> T.StructType | None:
        # A replaced table takes the load's types; other tables keep theirs.
        return None if replacing else context.table_schema(table)

    def contract_schema(table: str) -> T.StructType | None:
        return None if table in context.dropped else context.table_schema(table)

    try:
        # Column hints changing a column's type go by the contract's data_type mode.
        hints = apply_contract_to_hints(
            name,
            extracted.hints,
            contract_schema(name),
            context.recorded_columns(context.committed, name),
        )
        normalizer = TableNormalizer(context.spark, package.load_id, hints, destination_schema)
        tables = normalizer.normalize(
            name,
            package.extracted_table_dir(name),
            staged.normalized_uri,
            extracted.json_schema,
            context.engine_files,
        )
        _refuse_lost_rows(package, extracted, tables[0].rows)
        # The schema contract judges against the tables as they are, replaced or not,
        # but for those the refresh drops first.
        tables = apply_schema_contract(
            context.spark,
            tables,
            staged.normalized_uri,
            extracted.hints.schema_contract,
            contract_schema,
        )
        # Data-quality expectations, before any commit: may refuse the load or drop rows.
        tables = apply_expectations(
            context.spark, tables, staged.normalized_uri, extracted.hints.expectations, extracted.resource
        )
        context.on_table(name)
        return tables
    except SparkloadError:
        raise
    except Exception as exc:
        raise NormalizeError(
            f"table '{name}' (resource '{extracted.resource}'): {exc}. The extracted "
            "package stays in the working directory and the next run retries it; "
            "pipeline.drop_pending_packages() discards it",
            table=name,
        ) from exc


def _refuse_lost_rows(package: LoadPackage, extracted: ExtractedTable, normalized_rows: int) -> None:
    """Stop before any commit when the staged files hold other than the rows extract wrote
    (lines deleted from a staged file): the count normalize's profile already took, against
    extract.json's, so the check costs nothing."""
    if normalized_rows == extracted.rows:
        return
    folder = package.extracted_table_dir(extracted.name)
    raise DamagedFileError(
        f"load package {package.load_id}, table '{extracted.name}': extract wrote {extracted.rows} "
        f"rows, but the staged files in {folder} hold {normalized_rows}; they were changed after "
        "extract. pipeline.drop_pending_packages() discards the package, and the next run "
        "extracts its data again",
        path=str(folder),
        load_id=package.load_id,
        table=extracted.name,
        expected_rows=extracted.rows,
        found_rows=normalized_rows,
    )


def _normalized_files(staged: LoadPackage, folders: list[str]) -> dict[str, dict[str, int]]:
    """The Parquet files normalize wrote, by the folder of each table's rows, with their
    sizes: what the load checks before its first commit (a listing per table, no engine
    call)."""
    return {name: Folder(staged.normalized_table_uri(name)).file_sizes(PARQUET) for name in folders}


def _judges_hints(hints: LoadHints) -> bool:
    """Whether a table's contract judges its column hints (data_type other than evolve)."""
    contract = hints.schema_contract or {}
    return bool(hints.columns) and contract.get("data_type", "evolve") != "evolve"
