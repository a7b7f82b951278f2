"""Data-quality expectations (``expectations=`` / ``on_violation=`` on a resource): warn, drop
and fail on root rows and the rows nested under them, counts in LoadInfo and the trace, bad
conditions refused, and expectations on merge and replace resources. Real pipelines on the
embedded engine; tables read back with delta-rs.

dlt has no expectations (this is Databricks' ``@dlt.expect`` / ``expect_or_drop`` /
``expect_or_fail``), so there is no dlt oracle here; as in Databricks, a condition that is
NULL for a row is not a violation.
"""

from __future__ import annotations

from typing import Any

import deltalake
import pytest
from conftest import delta_rows, user_columns

import sparkload as sl


def _orders() -> list[dict[str, Any]]:
    return [
        {"id": 1, "amount": 10, "items": [{"sku": "a"}, {"sku": "b"}]},
        {"id": 2, "amount": -5, "items": [{"sku": "c"}]},
        {"id": 3, "amount": None, "items": [{"sku": "d"}]},
        {"id": 4, "amount": -1, "items": []},
    ]


def _ids(pipeline: sl.Pipeline, table: str) -> list[Any]:
    return sorted(row["id"] for row in delta_rows(pipeline, table))


def _skus(pipeline: sl.Pipeline) -> list[str]:
    return sorted(row["sku"] for row in delta_rows(pipeline, "orders__items"))


def _cause(failure: pytest.ExceptionInfo[BaseException]) -> BaseException:
    """The error a failed pipeline step wraps."""
    error: BaseException | None = failure.value
    while error is not None and not isinstance(error, sl.ExpectationError):
        error = error.__cause__
    assert error is not None, failure.value
    return error


# -- warn --------------------------------------------------------------------------------------
def test_warn_is_the_default_loads_every_row_and_counts_the_violations(
    pipeline: sl.Pipeline, caplog: pytest.LogCaptureFixture
) -> None:
    @sl.resource(expectations={"valid_amount": "amount >= 0"})
    def orders() -> Any:
        yield _orders()

    info = pipeline.run(orders())

    assert _ids(pipeline, "orders") == [1, 2, 3, 4]
    assert _skus(pipeline) == ["a", "b", "c", "d"]  # nested rows of violating rows stay
    # amount NULL (id 3) is not a violation: the condition is NULL, not false (Databricks).
    assert info.expectations == {"orders": {"valid_amount": {"warned": 2}}}
    assert info.warned_rows == {"orders": {"expectation 'valid_amount'": 2}}
    assert info.dropped_rows == {}
    assert pipeline.last_trace is not None
    assert pipeline.last_trace.expectations == info.expectations
    assert "2 row(s) break expectation 'valid_amount'" in caplog.text
    assert "expectation 'valid_amount'" in str(info)


def test_no_violation_reports_nothing(pipeline: sl.Pipeline) -> None:
    @sl.resource(expectations={"valid_amount": "amount >= 0"}, on_violation="fail")
    def orders() -> Any:
        yield [{"id": 1, "amount": 1}, {"id": 2, "amount": None}]

    info = pipeline.run(orders())
    assert _ids(pipeline, "orders") == [1, 2]
    assert info.expectations == {} and info.rows_by_reason == []


# -- drop --------------------------------------------------------------------------------------
def test_drop_leaves_out_violating_rows_and_the_rows_nested_under_them(pipeline: sl.Pipeline) -> None:
    @sl.resource(expectations={"valid_amount": "amount >= 0"}, on_violation="drop")
    def orders() -> Any:
        yield _orders()

    info = pipeline.run(orders())

    assert _ids(pipeline, "orders") == [1, 3]
    assert _skus(pipeline) == ["a", "b", "d"]  # "c" belonged to order 2
    assert info.row_counts == {"orders": 2, "orders__items": 3}
    assert info.expectations == {
        "orders": {"valid_amount": {"dropped": 2}},
        "orders__items": {"valid_amount": {"dropped": 1}},
    }
    assert info.dropped_rows == {
        "orders": {"expectation 'valid_amount'": 2},
        "orders__items": {"expectation 'valid_amount'": 1},
    }


def test_per_expectation_actions_and_a_row_breaking_two_drops_counts_once(pipeline: sl.Pipeline) -> None:
    @sl.resource(
        expectations={
            "valid_amount": {"condition": "amount >= 0", "on_violation": "drop"},
            "small_id": {"condition": "id < 4", "on_violation": "drop"},
            "has_amount": "amount IS NOT NULL",  # the resource's on_violation: warn
        }
    )
    def orders() -> Any:
        yield _orders()

    info = pipeline.run(orders())

    assert _ids(pipeline, "orders") == [1, 3]
    # id 4 breaks valid_amount and small_id: left out by, and counted under, the first.
    assert info.expectations["orders"] == {
        "valid_amount": {"dropped": 2},
        "has_amount": {"warned": 1},
    }


def test_drop_of_every_row_loads_an_empty_batch(pipeline: sl.Pipeline) -> None:
    @sl.resource(expectations={"positive": "amount > 0"}, on_violation="drop")
    def orders() -> Any:
        yield [{"id": 1, "amount": -1, "items": [{"sku": "a"}]}]

    info = pipeline.run(orders())
    assert info.expectations == {
        "orders": {"positive": {"dropped": 1}},
        "orders__items": {"positive": {"dropped": 1}},
    }
    for table in ("orders", "orders__items"):
        assert not (deltalake.DeltaTable.is_deltatable(f"{pipeline.dataset_uri}/{table}")) or (
            delta_rows(pipeline, table) == []
        )


# -- fail --------------------------------------------------------------------------------------
def test_fail_refuses_the_load_and_leaves_every_table_as_it_was(pipeline: sl.Pipeline) -> None:
    @sl.resource(name="orders", expectations={"valid_amount": "amount >= 0"}, on_violation="fail")
    def first() -> Any:
        yield [{"id": 0, "amount": 1, "items": [{"sku": "z"}]}]

    pipeline.run(first())
    before = {
        table: (
            deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").version(),
            delta_rows(pipeline, table),
        )
        for table in ("orders", "orders__items")
    }

    @sl.resource(name="orders", expectations={"valid_amount": "amount >= 0"}, on_violation="fail")
    def second() -> Any:
        yield _orders()

    with pytest.raises(sl.PipelineStepFailed) as failure:
        pipeline.run(second())
    error = _cause(failure)
    assert isinstance(error, sl.ExpectationError)
    assert error.expectation == "valid_amount" and error.condition == "amount >= 0"
    assert error.failed_rows == 2 and error.table == "orders" and error.resource == "orders"
    assert sorted(row["id"] for row in error.sample) == [2, 4]
    assert error.sample[0].keys() == {"id", "amount"}
    message = str(error)
    assert "valid_amount" in message and "amount >= 0" in message and "2 row(s)" in message
    assert "'amount': -5" in message

    after = {
        table: (
            deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").version(),
            delta_rows(pipeline, table),
        )
        for table in ("orders", "orders__items")
    }
    assert after == before
    # The package stays pending, as for every refused load; dropping it ends the matter.
    assert pipeline.has_pending_data
    pipeline.drop_pending_packages()
    assert not pipeline.has_pending_data


def test_fail_wins_over_drop_in_the_same_resource(pipeline: sl.Pipeline) -> None:
    @sl.resource(
        expectations={
            "valid_amount": {"condition": "amount >= 0", "on_violation": "drop"},
            "known_id": {"condition": "id <= 3", "on_violation": "fail"},
        }
    )
    def orders() -> Any:
        yield _orders()

    with pytest.raises(sl.PipelineStepFailed) as failure:
        pipeline.run(orders())
    error = _cause(failure)
    assert isinstance(error, sl.ExpectationError)
    assert error.expectation == "known_id" and error.failed_rows == 1
    assert not deltalake.DeltaTable.is_deltatable(f"{pipeline.dataset_uri}/orders")


# -- conditions ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("condition", "said"),
    [
        ("no_such_column > 0", "no_such_column"),
        ("amount >= ", "cannot be evaluated"),
        ("amount + 1", "not a boolean"),
    ],
)
def test_a_bad_condition_is_refused_naming_the_resource_and_expectation(
    pipeline: sl.Pipeline, condition: str, said: str
) -> None:
    @sl.resource(expectations={"checked": condition})
    def orders() -> Any:
        yield _orders()

    with pytest.raises(sl.PipelineStepFailed) as failure:
        pipeline.run(orders())
    error = _cause(failure)
    assert isinstance(error, sl.ExpectationError)
    assert error.expectation == "checked" and error.resource == "orders" and error.failed_rows is None
    message = str(error)
    assert "expectation 'checked'" in message and "resource 'orders'" in message and said in message
    assert "amount" in message  # the columns a condition can name
    assert not deltalake.DeltaTable.is_deltatable(f"{pipeline.dataset_uri}/orders")


@pytest.mark.parametrize(
    ("hints", "said"),
    [
        ({"expectations": {"x": "id > 0"}, "on_violation": "skip"}, "on_violation must be one of"),
        ({"expectations": {"x": {"condition": "id > 0", "on_violation": "quarantine"}}}, "on_violation"),
        ({"expectations": {"x": 5}}, "the condition must be"),
        ({"expectations": {"x": {"condition": "id > 0", "action": "drop"}}}, "unknown key"),
        ({"expectations": ["id > 0"]}, "expectations must be a dict"),
    ],
)
def test_bad_hint_values_are_refused_when_the_hint_is_set(hints: dict[str, Any], said: str) -> None:
    with pytest.raises(sl.ResourceError, match=said):
        sl.resource([{"id": 1}], name="r", **hints)
    with pytest.raises(sl.ResourceError, match=said):
        sl.resource([{"id": 1}], name="r").apply_hints(**hints)


def test_conditions_see_the_rows_typed_as_the_table_takes_them(pipeline: sl.Pipeline) -> None:
    # created_at is staged as text and typed as a timestamp by its column hint: the condition
    # compares timestamps, and user names are normalized (camelCase → snake_case).
    @sl.resource(
        columns={"createdAt": {"data_type": "timestamp"}},
        expectations={"recent": "created_at >= TIMESTAMP '2024-01-01 00:00:00'"},
        on_violation="drop",
    )
    def events() -> Any:
        yield [
            {"id": 1, "createdAt": "2024-06-01T00:00:00+00:00"},
            {"id": 2, "createdAt": "2023-06-01T00:00:00+00:00"},
        ]

    info = pipeline.run(events())
    assert _ids(pipeline, "events") == [1]
    assert info.expectations == {"events": {"recent": {"dropped": 1}}}


# -- hints plumbing --------------------------------------------------------------------------------
def test_apply_hints_and_transformer_take_expectations(pipeline: sl.Pipeline) -> None:
    @sl.resource
    def numbers() -> Any:
        yield from ({"n": n} for n in range(5))

    @sl.transformer(data_from=numbers, expectations={"even": "n % 2 = 0"}, on_violation="drop")
    def doubled(item: dict[str, Any]) -> Any:
        yield {"n": item["n"] * 2 + (item["n"] == 3)}

    numbers.apply_hints(expectations={"small": "n < 3"}, on_violation="drop")
    info = pipeline.run([numbers, doubled])
    assert sorted(r["n"] for r in delta_rows(pipeline, "numbers")) == [0, 1, 2]
    assert sorted(r["n"] for r in delta_rows(pipeline, "doubled")) == [0, 2, 4, 8]
    assert info.expectations == {"numbers": {"small": {"dropped": 2}}, "doubled": {"even": {"dropped": 1}}}

    # apply_hints replaces the expectations as a whole; {} drops them.
    numbers.apply_hints(expectations={})
    info = pipeline.run(numbers)
    assert info.expectations == {}


def test_on_violation_applied_later_changes_expectations_without_an_action(pipeline: sl.Pipeline) -> None:
    @sl.resource(
        expectations={"positive": "amount > 0", "kept": {"condition": "id < 2", "on_violation": "warn"}}
    )
    def orders() -> Any:
        yield [{"id": 1, "amount": 1}, {"id": 2, "amount": -1}, {"id": 3, "amount": 2}]

    orders.apply_hints(on_violation="drop")
    info = pipeline.run(orders())
    assert _ids(pipeline, "orders") == [1, 3]
    # "kept" counts the rows it let through: id 3, not id 2 (dropped by "positive").
    assert info.expectations == {"orders": {"positive": {"dropped": 1}, "kept": {"warned": 1}}}


# -- dispositions ---------------------------------------------------------------------------------------
def test_dropped_rows_are_not_merged(pipeline: sl.Pipeline) -> None:
    def orders(rows: list[dict[str, Any]]) -> Any:
        return sl.resource(
            rows,
            name="orders",
            write_disposition="merge",
            primary_key="id",
            expectations={"valid_amount": "amount >= 0"},
            on_violation="drop",
        )

    pipeline.run(orders([{"id": 1, "amount": 1, "items": [{"sku": "a"}]}, {"id": 2, "amount": 2}]))
    info = pipeline.run(
        orders(
            [
                {"id": 1, "amount": -1, "items": [{"sku": "bad"}]},  # dropped: id 1 stays as it was
                {"id": 2, "amount": 20},
                {"id": 3, "amount": -3},  # dropped: never inserted
            ]
        )
    )
    rows = sorted(user_columns(delta_rows(pipeline, "orders")), key=lambda r: r["id"])
    assert rows == [{"id": 1, "amount": 1}, {"id": 2, "amount": 20}]
    assert _skus(pipeline) == ["a"]
    assert info.expectations == {
        "orders": {"valid_amount": {"dropped": 2}},
        "orders__items": {"valid_amount": {"dropped": 1}},
    }


def test_replace_loads_only_the_kept_rows(pipeline: sl.Pipeline) -> None:
    def orders(rows: list[dict[str, Any]]) -> Any:
        return sl.resource(
            rows, name="orders", write_disposition="replace", expectations={"valid_amount": "amount >= 0"}
        ).apply_hints(on_violation="drop")

    pipeline.run(orders([{"id": 9, "amount": 9, "items": [{"sku": "old"}]}]))
    info = pipeline.run(orders(_orders()))
    assert _ids(pipeline, "orders") == [1, 3]
    assert _skus(pipeline) == ["a", "b", "d"]
    assert info.row_counts == {"orders": 2, "orders__items": 3}
