"""The Python SDK's own tests: arguments parsed with precise messages, exact JSON, schemas."""

import dataclasses
import datetime
import enum
import json
import sys
import uuid
from decimal import Decimal
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import loanhost_plugin as lp  # noqa: E402
from loanhost_plugin import _json, records  # noqa: E402
from loanhost_plugin import data  # noqa: E402
from loanhost_plugin.data import Query, Rows, count, period  # noqa: E402
from loanhost_plugin.testing import FakeHost  # noqa: E402


class Unit(enum.Enum):
    WEEK = "Week"
    MONTH = "Month"


@lp.arguments
@dataclasses.dataclass
class Args:
    from_date: datetime.date
    lookback: int = lp.field(default=4, description="Periods back.")
    unit: Unit = Unit.MONTH
    amounts: list[Decimal] | None = None


def test_arguments_are_parsed_by_their_camel_case_names():
    a = records.parse(Args, {"fromDate": "2026-01-31", "lookback": 2, "amounts": [1, "2.50"]})
    assert a == Args(datetime.date(2026, 1, 31), 2, Unit.MONTH, [Decimal(1), Decimal("2.50")])


@pytest.mark.parametrize(
    "value, message",
    [
        ("x", "arguments must be a JSON object, got string \"x\""),
        ({}, "missing field `fromDate`"),
        ({"fromDate": "2026-01-31", "extra": 1}, "unknown field `extra`, expected one of `fromDate`, `lookback`, `unit`, `amounts`"),
        ({"fromDate": "2026-1-31"}, 'fromDate: invalid value: string "2026-1-31", expected a date as YYYY-MM-DD'),
        ({"fromDate": "2026-01-31", "lookback": "2"}, 'lookback: invalid type: string "2", expected an integer'),
        ({"fromDate": "2026-01-31", "unit": "Day"}, "unit: unknown variant `Day`, expected one of `Week`, `Month`"),
        ({"fromDate": "2026-01-31", "amounts": [1, "lots"]}, 'amounts[1]: invalid value: string "lots", expected a decimal number'),
    ],
)
def test_every_mistake_is_one_invalid_params_naming_the_argument(value, message):
    with pytest.raises(lp.InvalidParams) as e:
        records.parse(Args, value)
    assert e.value.message == message


@lp.arguments
@dataclasses.dataclass
class Picked:
    color: str = lp.field(default="red", schema={"type": "string", "enum": ["red", "blue"]})


def test_an_enum_in_an_explicit_schema_is_enforced():
    assert records.parse(Picked, {"color": "blue"}) == Picked("blue")
    with pytest.raises(lp.InvalidParams) as e:
        records.parse(Picked, {"color": "green"})
    assert e.value.message == "color: unknown variant `green`, expected one of `red`, `blue`"


def test_the_input_schema_lists_defaults_and_refuses_other_properties():
    s = records.schema(Args)
    assert s["required"] == ["fromDate"]
    assert s["additionalProperties"] is False
    assert s["properties"]["lookback"] == {"type": "integer", "description": "Periods back.", "default": 4}
    assert s["properties"]["unit"] == {"type": "string", "enum": ["Week", "Month"], "default": "Month"}
    assert s["properties"]["amounts"] == {"type": "array", "items": {"type": "number"}}


def test_json_numbers_are_exact_both_ways():
    value = _json.loads('{"a": 0.1, "b": 350000.25, "c": 7}')
    assert value == {"a": Decimal("0.1"), "b": Decimal("350000.25"), "c": 7}
    assert _json.dumps({"x": Decimal("3.30"), "y": Decimal("1E+3"), "z": Decimal("-0.0500")}) == '{"x":3.3,"y":1000,"z":-0.05}'
    with pytest.raises(TypeError, match="float"):
        _json.dumps({"money": 0.1})


def test_the_native_writer_keeps_strings_as_they_are_and_refuses_floats_anywhere():
    # A string that holds the writer's own marks is written exactly (by the slower writer).
    tricky = {"a": "\0D1.5\0E", "b": Decimal("2.50"), "c": ['"\0D', "x\0E"]}
    assert json.loads(_json.dumps(tricky)) == {"a": "\0D1.5\0E", "b": 2.5, "c": ['"\0D', "x\0E"]}
    # Text that looks like a float is not one; a float in a list or a nested dict is.
    assert _json.dumps({"t": "1.5e3 and 2.5", "n": [1, -2, True, None]}) == '{"t":"1.5e3 and 2.5","n":[1,-2,true,null]}'
    with pytest.raises(TypeError, match="float"):
        _json.dumps({"a": [1, {"b": -2.5e-3}]})
    # Enums, dates and UUIDs in a result are written as their text.
    assert _json.dumps({"d": datetime.date(2026, 1, 31), "u": uuid.UUID(int=1)}) == (
        '{"d":"2026-01-31","u":"00000000-0000-0000-0000-000000000001"}'
    )


class Echo(lp.Tool):
    name = "echo"
    title = "Echo"
    description = "Counts loans per month."

    def run(self, args):
        print("asked for", lp.today().isoformat())
        rows = Query("loans").group_by(period("statusDate", "month")).aggregate(count()).run()
        return {"months": {r[0]: r[1] for r in rows}, "user": lp.user_id()}


def test_the_fake_host_answers_queries_and_keeps_the_log():
    host = FakeHost(user_id="u-1", today="2026-03-01", answer=[Rows(["key0", "agg0"], [["2026-02", 3]])])
    assert host.call(Echo) == {"months": {"2026-02": 3}, "user": "u-1"}
    assert host.logs == [("info", "asked for 2026-03-01")]
    assert host.queries[0].keys[0].unit == "month"
    with pytest.raises(lp.InvalidParams, match="unknown field `x`"):
        host.call(Echo, {"x": 1})


# ---- the 1.2.0 capabilities on the fake host ------------------------------------------------


def test_a_list_is_built_by_chaining_and_its_page_gives_rows_by_field():
    # Arrange
    from loanhost_plugin.listing import ListQuery, page

    host = FakeHost(pages=[page(["id", "loanAmount"], [["a", Decimal("1.50")]], "c2")])

    class Lister(lp.Tool):
        name = "lister"
        input_schema = {"type": "object"}

        def run(self, args):
            p = (
                ListQuery()
                .select("id", "loanAmount")
                .filter({"statuses": ["Loan Open"]})
                .where("loanAmount", data.gt(Decimal(100)))
                .order_by("amount", descending=False)
                .page_size(10)
                .after("c1")
                .page()
            )
            return {"rows": [dict(r) for r in p], "next": p.next_cursor, "n": len(p)}

    # Act
    result = host.call(Lister)
    # Assert
    q = host.lists[0]
    assert (q.dataset, q.fields, q.order, q.descending, q.size, q.cursor) == (
        "loans", ["id", "loanAmount"], "amount", False, 10, "c1")
    assert q.filter_json == '{"statuses":["Loan Open"]}' and q.predicates[0][0] == "loanAmount"
    assert result == {"rows": [{"id": "a", "loanAmount": Decimal("1.50")}], "next": "c2", "n": 1}


def test_a_list_refuses_an_order_that_is_not_one_of_the_specs():
    from loanhost_plugin.listing import ORDERS, ListQuery

    assert ORDERS == ("updated", "status-date", "amount", "closing-date", "commission")
    with pytest.raises(ValueError, match="order 'borrower': expected one of updated, status-date"):
        ListQuery().order_by("borrower")


def test_people_licences_and_prices_are_answered_and_recorded_by_the_fake():
    # Arrange
    from loanhost_plugin import licensing, people, pricing

    found = people.Found((people.Person("p1", True, ("LoanOfficer",), "Olivia"),), 1)
    mine = licensing.LicensesOf("u1", (licensing.License("TX", "TX-1", "2027"),))
    priced = pricing.Priced(Decimal("80.00"), (pricing.ProductPrice("30Y Fixed", Decimal("6.125"), Decimal("0.25"), "2026-11-01"),))
    host = FakeHost(people=[found], licenses=lambda user: mine if user is None else None, prices=[priced])
    scenario = pricing.Scenario("TX", Decimal(320000), 740, "Conventional", "Purchase", "PrimaryResidence", 360, 30, property_value=Decimal(400000))

    class Asker(lp.Tool):
        name = "asker"
        input_schema = {"type": "object"}

        def run(self, args):
            f = people.search(name_tokens=["oli"], parts=["LoanOfficer"], limit=5)
            return {
                "people": [p.name for p in f.people],
                "total": f.total,
                "mine": licensing.user_licenses().licenses[0].state,
                "theirs": licensing.user_licenses("u2"),
                "rate": pricing.quote(scenario).quotes[0].rate,
            }

    # Act
    result = host.call(Asker)
    # Assert
    assert result == {"people": ["Olivia"], "total": 1, "mine": "TX", "theirs": None, "rate": Decimal("6.125")}
    assert host.searches == [people.PeopleQuery(("oli",), ("LoanOfficer",), 5)]
    assert host.license_reads == [None, "u2"] and host.scenarios == [scenario]


def test_a_search_refuses_a_part_that_is_not_one_of_the_four():
    from loanhost_plugin import people

    with pytest.raises(ValueError, match="part 'Borrower': expected one of LoanOfficer, LoanAssistant"):
        people.search(parts=["Borrower"])


def test_a_capability_the_test_did_not_answer_fails_the_test_by_name():
    from loanhost_plugin.listing import ListQuery

    class Lister(lp.Tool):
        name = "lister"
        input_schema = {"type": "object"}

        def run(self, args):
            return {"n": len(ListQuery().select("id").page())}

    with pytest.raises(AssertionError, match="the plugin asked for a page the test did not answer"):
        FakeHost().call(Lister)


def test_the_sdk_targets_1_2_0_and_names_the_cursor_and_licence_refusals():
    assert lp.WIT_VERSION == "1.2.0"
    assert issubclass(lp.BadCursor, lp.InvalidParams) and issubclass(lp.StaleCursor, lp.BadRequest)
    assert str(lp.NotLicensed("no licence in TX")) == "forbidden: no licence in TX"
