"""Unit tests of the Python query_loans against the SDK's fake host (no server, no Wasm)."""

import sys
from decimal import Decimal
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import plugin  # noqa: E402
from loanhost_plugin import InvalidParams  # noqa: E402
from loanhost_plugin.data import Rows, Timestamp  # noqa: E402
from loanhost_plugin.listing import page  # noqa: E402
from loanhost_plugin.testing import FakeHost  # noqa: E402

LOAN = "6a1f2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


def listed(q):
    row = {f: None for f in q.fields}
    row.update(id=LOAN, loanAmount=Decimal("350000.00"), updated=Timestamp("2026-03-01T12:00:00Z"))
    return page(q.fields, [[row[f] for f in q.fields]], "next-page")


def test_lists_a_page_and_counts_every_loan_of_the_filter():
    # Arrange
    host = FakeHost(pages=listed, answer=[Rows(["agg0"], [[42]])])
    # Act
    result = host.call(
        plugin.QueryLoans,
        {"filter": {"statuses": ["Loan Open"]}, "orderBy": "closingDate", "descending": False, "pageSize": 10},
    )
    # Assert
    q = host.lists[0]
    assert (q.dataset, q.order, q.descending, q.size, q.cursor) == ("loans", "closing-date", False, 10, None)
    assert q.filter_json == '{"statuses":["Loan Open"]}'
    assert q.fields == list(plugin.FIELDS), "no names for a caller who may not read them"
    assert host.queries[0].filter_json == q.filter_json
    assert result["totalCount"] == 42 and result["nextCursor"] == "next-page"
    assert result["loans"][0]["loanAmount"] == "350000.00"
    assert result["loans"][0]["updated"] == "2026-03-01T12:00:00Z"


def test_names_only_for_callers_who_may_read_them_and_borrowers_only_when_asked():
    # Arrange
    host = FakeHost(can_read_names=True, pages=listed, answer=lambda q: Rows(["agg0"], [[1]]))
    # Act
    host.call(plugin.QueryLoans, {"cursor": "abc", "includeBorrowerName": True})
    # Assert
    q = host.lists[0]
    assert q.fields[-5:] == ["loanOfficerName", "processorName", "referringAgentName", "borrowerFirstName", "borrowerLastName"]
    assert (q.order, q.descending, q.size, q.cursor) == ("updated", True, 25, "abc")


@pytest.mark.parametrize(
    "args, message",
    [
        ({"filter": [1]}, "filter must be an object"),
        ({"pageSize": 0}, "pageSize: 0 is not between 1 and 100"),
        ({"pageSize": 101}, "pageSize: 101 is not between 1 and 100"),
    ],
)
def test_refuses_bad_arguments_before_asking_the_host(args, message):
    host = FakeHost()
    with pytest.raises(InvalidParams) as e:
        host.call(plugin.QueryLoans, args)
    assert message in str(e.value) and host.lists == []


def test_an_unknown_order_is_refused_by_its_enum():
    with pytest.raises(InvalidParams) as e:
        FakeHost().call(plugin.QueryLoans, {"orderBy": "borrower"})
    assert "orderBy" in str(e.value)
