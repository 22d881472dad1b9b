"""The host inside the component: the generated bindings of `loan:reporting@1.1.0`
(`wit_world`, written by componentize-py at build time). Importable only there; everything the
SDK needs of it during a call is imported here, at build time (see `host.py`)."""

from __future__ import annotations

from decimal import Decimal
from json import loads as _json_loads

from componentize_py_types import Err  # type: ignore[import-not-found]
from wit_world.exports.tool import ToolDescription  # type: ignore[import-not-found]  # noqa: F401
from wit_world.imports import caller, clock, data, log, types  # type: ignore[import-not-found]  # noqa: F401

from . import _json
from .data import Field, Mapped, Period, Query, Rows, Timestamp
from .errors import DataDenied, DataUnavailable, InvalidQuery
from .host import mark

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
