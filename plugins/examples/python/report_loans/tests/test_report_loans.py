"""Unit tests of the Python report_loans against the SDK's fake host (no server, no Wasm)."""

import sys
from decimal import Decimal
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import plugin  # noqa: E402
from loanhost_plugin import InvalidParams  # noqa: E402
from loanhost_plugin.data import Rows  # noqa: E402
from loanhost_plugin.testing import FakeHost  # noqa: E402

OFFICER = "8f0a3b6e-9a63-4f6e-9d55-0c1e0f4c2a11"


def test_counts_and_measures_by_status_in_the_database():
    # Arrange: the host answers the grouped query.
    host = FakeHost(
        answer=lambda q: Rows(
            ["key0", "agg0", "agg1", "agg2", "agg3", "agg4"],
            [
                ["Loan Open", 2, 2, Decimal("300000.5"), Decimal("100000"), Decimal("200000.5")],
                ["Loan Funded", 1, 0, None, None, None],
            ],
        )
    )
    # Act
    result = host.call(plugin.ReportLoans, {"groupBy": "Status", "metric": "Average"})
    # Assert
    q = host.queries[0]
    assert q.dataset == "loans" and [k.name for k in q.keys] == ["status"]
    assert [a.kind for a in q.aggregates] == ["count", "count-of", "sum", "min", "max"]
    assert result["totalCount"] == 3
    open_, funded = result["buckets"]
    assert open_ == {
        "key": "Loan Open",
        "keyId": None,
        "count": 2,
        "sum": Decimal("300000.5"),
        "average": Decimal("150000.25"),
        "min": Decimal("100000"),
        "max": Decimal("200000.5"),
        "value": Decimal("150000.25"),
    }
    assert funded == {"key": "Loan Funded", "keyId": None, "count": 1, "value": None}


def test_officers_without_a_name_right_are_keyed_by_id():
    host = FakeHost(
        can_read_names=False,
        answer=lambda q: Rows(
            ["key0", "agg0", "agg1", "agg2", "agg3", "agg4"],
            [[OFFICER, 3, 3, Decimal("3"), Decimal("1"), Decimal("1")], [None, 1, 0, None, None, None]],
        ),
    )
    result = host.call(plugin.ReportLoans, {"groupBy": "LoanOfficer", "metric": "Sum"})
    assert [k.name for k in host.queries[0].keys] == ["loanOfficerId"]
    assert [(b["key"], b["keyId"], b["value"]) for b in result["buckets"]] == [
        (OFFICER, OFFICER, Decimal("3")),
        ("Unassigned", None, None),
    ]


def test_averages_round_half_away_from_zero_to_cents():
    assert plugin.average(Decimal("0.05"), 2) == Decimal("0.03")
    assert plugin.average(Decimal("-0.05"), 2) == Decimal("-0.03")
    assert plugin.average(Decimal("10"), 3) == Decimal("3.33")


def test_unknown_values_are_invalid_params_naming_the_argument():
    with pytest.raises(InvalidParams) as e:
        FakeHost().call(plugin.ReportLoans, {"groupBy": "Weekday"})
    assert str(e.value).startswith("invalid_params: groupBy: unknown variant `Weekday`")
    with pytest.raises(InvalidParams, match="filter must be an object"):
        FakeHost().call(plugin.ReportLoans, {"filter": "open loans"})
