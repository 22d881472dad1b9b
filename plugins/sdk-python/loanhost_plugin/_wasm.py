"""The host inside the component: the generated bindings of `loan:reporting@1.2.0`
(`wit_world`, written by componentize-py at build time). Importable only there; everything the
SDK needs of it during a call is imported here, at build time (see `host.py`)."""

from __future__ import annotations

from decimal import Decimal
from json import loads as _json_loads

from componentize_py_types import Err  # type: ignore[import-not-found]
from wit_world.exports.tool import ToolDescription  # type: ignore[import-not-found]  # noqa: F401
from wit_world.imports import caller, clock, data, log, types  # type: ignore[import-not-found]  # noqa: F401
from wit_world.imports import licensing as wit_licensing  # type: ignore[import-not-found]
from wit_world.imports import listing as wit_listing  # type: ignore[import-not-found]
from wit_world.imports import people as wit_people  # type: ignore[import-not-found]
from wit_world.imports import pricing as wit_pricing  # type: ignore[import-not-found]

from . import _json
from .data import Field, Mapped, Period, Query, Rows, Timestamp
from .errors import BadCursor, DataDenied, DataUnavailable, InvalidQuery, NotLicensed, StaleCursor
from .host import mark
from .licensing import License, LicensesOf
from .listing import ListQuery, Page
from .people import PARTS, Found, PeopleQuery, Person
from .pricing import Priced, ProductPrice, Scenario

_LEVELS = {
    "debug": log.Level.DEBUG,
    "info": log.Level.INFO,
    "warn": log.Level.WARN,
    "error": log.Level.ERROR,
}
_UNITS = {
    "week": data.PeriodUnit.WEEK,
    "month": data.PeriodUnit.MONTH,
    "quarter": data.PeriodUnit.QUARTER,
    "year": data.PeriodUnit.YEAR,
}
_AGGREGATES = {
    "count-of": data.Aggregate_CountOf,
    "count-distinct": data.Aggregate_CountDistinct,
    "sum": data.Aggregate_Sum,
    "min": data.Aggregate_Min,
    "max": data.Aggregate_Max,
}
_CONDITIONS = {
    "eq": data.Condition_Eq,
    "ne": data.Condition_Ne,
    "lt": data.Condition_Lt,
    "le": data.Condition_Le,
    "gt": data.Condition_Gt,
    "ge": data.Condition_Ge,
}


def _value(v):
    if v is None:
        return data.Value_Null()
    if isinstance(v, bool):
        return data.Value_Boolean(v)
    if isinstance(v, int):
        return data.Value_Integer(v)
    if isinstance(v, Decimal):
        return data.Value_Decimal(_json.decimal_text(v))
    if isinstance(v, Timestamp):
        return data.Value_Timestamp(str(v))
    if isinstance(v, str):
        return data.Value_Text(v)
    raise TypeError(f"a {type(v).__name__} cannot be sent in a query (float: use Decimal)")


#: What becomes of each kind of column of `data.run-json` (text and booleans stay as parsed).
_DECIMAL, _TIMESTAMP, _INTEGER = data.ColumnKind.DECIMAL, data.ColumnKind.TIMESTAMP, data.ColumnKind.INTEGER


_ORDERS = {
    "updated": wit_listing.OrderOption.UPDATED,
    "status-date": wit_listing.OrderOption.STATUS_DATE,
    "amount": wit_listing.OrderOption.AMOUNT,
    "closing-date": wit_listing.OrderOption.CLOSING_DATE,
    "commission": wit_listing.OrderOption.COMMISSION,
}
_PARTS = dict(
    zip(
        PARTS,
        (
            wit_people.Part.LOAN_OFFICER,
            wit_people.Part.LOAN_ASSISTANT,
            wit_people.Part.PROCESSOR,
            wit_people.Part.REFERRING_AGENT,
        ),
    )
)
_PART_NAMES = {v: k for k, v in _PARTS.items()}


def _refused(error):
    """The SDK's exception for a capability's refusal (every `*-error` variant shares these
    case names)."""
    name = type(error).__name__.rsplit("_", 1)[-1]
    message = error.value
    if name == "Denied":
        return DataDenied(message)
    if name == "InvalidQuery":
        return InvalidQuery(message)
    if name == "BadCursor":
        return BadCursor("cursor: " + message)
    if name == "StaleCursor":
        return StaleCursor("cursor: " + message)
    if name == "NotLicensed":
        return NotLicensed(message)
    return DataUnavailable(message)


def _text(v):
    return None if v is None else _json.decimal_text(Decimal(v))


def _rows(kinds, text):
    """The rows of `run-json`: parsed by the C parser, then only the columns of decimals,
    instants and integers sent as text (past 2^53) visited."""
    rows = _json_loads(text)
    for c, kind in enumerate(kinds):
        if kind == _DECIMAL:
            for row in rows:
                if row[c] is not None:
                    row[c] = Decimal(row[c])
        elif kind == _TIMESTAMP:
            for row in rows:
                if row[c] is not None:
                    row[c] = Timestamp(row[c])
        elif kind == _INTEGER:
            for row in rows:
                if isinstance(row[c], str):
                    row[c] = int(row[c])
    return rows


def _condition(c):
    if c.op in _CONDITIONS:
        return _CONDITIONS[c.op](_value(c.value))
    if c.op == "any-of":
        return data.Condition_AnyOf([_value(x) for x in c.value])
    if c.op == "is-null":
        return data.Condition_IsNull()
    return data.Condition_IsNotNull()


def _key(k):
    if isinstance(k, Field):
        return data.Key_Field(k.name)
    if isinstance(k, Period):
        return data.Key_Period((k.name, _UNITS[k.unit]))
    assert isinstance(k, Mapped)
    return data.Key_Mapped(data.LabelMap(k.name, [tuple(p) for p in k.entries], k.otherwise))


def _aggregate(a):
    if a.kind == "count":
        return data.Aggregate_Count()
    return _AGGREGATES[a.kind](a.field)


class WasmHost:
    """The component's imports."""

    def user_id(self) -> str:
        return caller.user_id()

    def roles(self) -> list[str]:
        return list(caller.roles())

    def can_read_names(self) -> bool:
        return caller.can_read_names()

    def today(self) -> str:
        return clock.today()

    def log(self, level: str, message: str) -> None:
        log.write(_LEVELS[level], message)

    def run(self, q: Query) -> Rows:
        wq = data.Query(
            dataset=q.dataset,
            filter=q.filter_json,
            predicates=[data.Predicate(f, _condition(c)) for f, c in q.predicates],
            group_by=[_key(k) for k in q.keys],
            distinct_on=q.distinct,
            aggregates=[_aggregate(a) for a in q.aggregates],
            order_by=[data.Order(o.column, o.descending) for o in q.orders],
            limit=q.max_rows,
        )
        try:
            r = data.run_json(wq)
            mark("rows-lifted")
        except Err as e:
            error = e.value
            if isinstance(error, data.DataError_Denied):
                raise DataDenied(error.value) from None
            if isinstance(error, data.DataError_InvalidQuery):
                raise InvalidQuery(error.value) from None
            raise DataUnavailable(error.value) from None
        rows = Rows(
            columns=list(r.columns),
            rows=_rows(r.kinds, r.rows),
            truncated=r.truncated,
            total_groups=r.total_groups,
        )
        mark("rows-decoded")
        return rows

    def list_page(self, q: ListQuery) -> Page:
        wq = wit_listing.ListQuery(
            dataset=q.dataset,
            filter=q.filter_json,
            predicates=[data.Predicate(f, _condition(c)) for f, c in q.predicates],
            fields=list(q.fields),
            order_by=_ORDERS[q.order],
            descending=q.descending,
            page_size=q.size,
            cursor=q.cursor,
        )
        try:
            p = wit_listing.list_page_json(wq)
        except Err as e:
            raise _refused(e.value) from None
        columns = list(p.columns)
        rows = _rows(p.kinds, p.rows)
        return Page(columns, [dict(zip(columns, row)) for row in rows], p.next_cursor)

    def search_people(self, q: PeopleQuery) -> Found:
        wq = wit_people.PeopleQuery(list(q.name_tokens), [_PARTS[p] for p in q.parts], q.limit)
        try:
            f = wit_people.search(wq)
        except Err as e:
            raise _refused(e.value) from None
        return Found(
            tuple(Person(p.id, p.is_caller, tuple(_PART_NAMES[x] for x in p.parts), p.name) for p in f.people),
            f.total,
        )

    def user_licenses(self, user_id: str | None) -> LicensesOf | None:
        try:
            of = wit_licensing.user_licenses(user_id)
        except Err as e:
            raise _refused(e.value) from None
        if of is None:
            return None
        return LicensesOf(
            of.user_id,
            tuple(License(x.state, x.state_license_number, x.expiration_year) for x in of.licenses),
        )

    def quote(self, s: Scenario) -> Priced:
        ws = wit_pricing.Scenario(
            property_state=s.property_state,
            loan_amount=_text(s.loan_amount),
            property_value=_text(s.property_value),
            ltv=_text(s.ltv),
            credit_score=s.credit_score,
            loan_type=s.loan_type,
            purpose=s.purpose,
            occupancy=s.occupancy,
            term_months=s.term_months,
            lock_days=s.lock_days,
        )
        try:
            r = wit_pricing.quote(ws)
        except Err as e:
            raise _refused(e.value) from None
        return Priced(
            Decimal(r.ltv),
            tuple(ProductPrice(q.product, Decimal(q.rate), Decimal(q.points), q.effective_date) for q in r.quotes),
        )
