"""One destination Delta table: where it is, whether it exists, its schema and version."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from sparkload.load import delta_log

# Bytes per data file a write aims at (the engine cuts files of a partition at this size).
TARGET_FILE_SIZE = 16 * 1024 * 1024


class DeltaTable:
    def __init__(self, spark: Any, dataset_uri: str, name: str) -> None:
        self.spark = spark
        self.name = name
        self.uri = f"{dataset_uri.rstrip('/')}/{name}"

    def exists(self) -> bool:
        return delta_log.table_exists(self.uri)

    def schema(self) -> T.StructType | None:
        if not self.exists():
            return None
        return self.read().schema

    def read(self) -> DataFrame:
        return self.spark.read.format("delta").load(self.uri)

    def version(self) -> int | None:
        return delta_log.latest_version(self.uri)

    def committed_by(self, load_id: str) -> int | None:
        """The version a commit tagged with ``load_id`` made, if that commit happened."""
        return delta_log.version_with_metadata(self.uri, load_id)

    def writer(self, df: DataFrame, mode: str, load_id: str) -> Any:
        # Files of bounded size hold narrow key ranges when rows arrive in key order, so a
        # later MERGE rewrites only the files its keys hit (the engine prunes by file stats).
        return (
            df.write.format("delta")
            .mode(mode)
            .option("userMetadata", load_id)
            .option("target_file_size", str(TARGET_FILE_SIZE))
        )
