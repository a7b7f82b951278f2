"""LoadInfo's entries are typed records a script may still read as the dicts they were."""

from __future__ import annotations

import orjson

from sparkload.pipeline.load_info import LoadedTable, LoadInfo, RowsByReason, StepTiming


def _info() -> LoadInfo:
    return LoadInfo(
        "shop",
        "/lake/shop",
        "2",
        [LoadedTable("orders", 3, 0, "append", "1"), LoadedTable("orders", 2, 1, "merge", "2")],
        [StepTiming("load", 1.5)],
        ["a note"],
        ["1", "2"],
        [RowsByReason("2", "orders", "expectation 'positive'", "dropped", 4)],
    )


def test_entries_have_attributes_and_keys() -> None:
    info = _info()
    first = info.tables[0]
    assert (first.table, first.rows, first.version, first.load_id) == ("orders", 3, 0, "1")
    assert first["rows"] == 3 and first.get("disposition") == "append" and first.get("nope") is None
    assert dict(first) == {
        "table": "orders",
        "rows": 3,
        "version": 0,
        "disposition": "append",
        "load_id": "1",
    }
    assert first == {"table": "orders", "rows": 3, "version": 0, "disposition": "append", "load_id": "1"}
    assert info.rows_by_reason[0]["outcome"] == "dropped"
    assert info.row_counts == {"orders": 5} and info.versions == {"orders": 1}
    assert info.dropped_rows == {"orders": {"expectation 'positive'": 4}}


def test_a_saved_info_reads_back_typed() -> None:
    info = _info()
    saved = orjson.loads(orjson.dumps(info.to_dict()))
    assert saved["tables"][1] == {
        "table": "orders",
        "rows": 2,
        "version": 1,
        "disposition": "merge",
        "load_id": "2",
    }
    again = LoadInfo.from_dict(saved)
    assert isinstance(again.tables[0], LoadedTable) and isinstance(again.rows_by_reason[0], RowsByReason)
    assert again == info
