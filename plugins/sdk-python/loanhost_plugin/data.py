"""Structured, aggregate queries of the host's datasets (`loan:reporting/data`). A query is data,
never SQL: the host compiles it, adds the caller's scope, and refuses datasets and fields the
manifest does not grant. Build one with `Query`, run it with `.run()`:

    rows = (Query("loans")
            .filter(args.filter)
            .group_by(field("status"))
            .aggregate(count(), sum_of("loanAmount"))
            .order_by(1, descending=True)
            .run())
    for status, n, total in rows:
        ...

Values in rows and predicates are Python values: `None`, `bool`, `int` (counts), `Decimal`
(exact money), `str` (text; timestamps as RFC 3339 text, see `Timestamp`)."""

from __future__ import annotations

import dataclasses
import datetime
from decimal import Decimal
from typing import Any, Iterator, Union

from . import _json
from . import host as _host


class Timestamp(str):
    """A UTC instant as RFC 3339 text (`2026-01-31T17:00:00Z`): a `timestamp` value."""

    @staticmethod
    def of(moment: datetime.datetime | datetime.date) -> "Timestamp":
        if isinstance(moment, datetime.datetime):
            moment = moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
            return Timestamp(moment.isoformat(timespec="seconds") + "Z")
        return Timestamp(moment.isoformat() + "T00:00:00Z")


Value = Union[None, bool, int, Decimal, str]


# ---- keys ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Field:
    """A field's value as is."""

    name: str


@dataclasses.dataclass(frozen=True)
class Period:
    """The UTC period (`week`, `month`, `quarter`, `year`) a date-time field falls in."""

    name: str
    unit: str


@dataclasses.dataclass(frozen=True)
class Mapped:
    """A label of a field's value: `entries` are (value, label) pairs; values not listed get
    `otherwise` (None keeps the value itself)."""

    name: str
    entries: tuple[tuple[str, str], ...]
    otherwise: str | None = None


Key = Union[Field, Period, Mapped]

PERIOD_UNITS = ("week", "month", "quarter", "year")


def field(name: str) -> Field:
    """Group by a field's value."""
    return Field(name)


def period(name: str, unit: str) -> Period:
    """Group by the `unit` (week, month, quarter, year) a date-time field falls in."""
    unit = unit.lower()
    if unit not in PERIOD_UNITS:
        raise ValueError(f"period unit {unit!r}: expected one of {', '.join(PERIOD_UNITS)}")
    return Period(name, unit)


def mapped(name: str, entries: dict[str, str] | list[tuple[str, str]], otherwise: str | None = None) -> Mapped:
    """Group by a label of a field's value (e.g. status -> funnel stage), mapped by the database."""
    pairs = tuple(entries.items()) if isinstance(entries, dict) else tuple(tuple(p) for p in entries)
    return Mapped(name, pairs, otherwise)


# ---- aggregates ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Aggregate:
    """An aggregate: `kind` is count, count-of, count-distinct, sum, min or max."""

    kind: str
    field: str | None = None


def count() -> Aggregate:
    """Number of rows."""
    return Aggregate("count")


def count_of(name: str) -> Aggregate:
    """Number of rows where the field is not null."""
    return Aggregate("count-of", name)


def count_distinct(name: str) -> Aggregate:
    """Number of distinct non-null values of the field."""
    return Aggregate("count-distinct", name)


def sum_of(name: str) -> Aggregate:
    """Exact sum of the field (null when no row has a value)."""
    return Aggregate("sum", name)


def min_of(name: str) -> Aggregate:
    """Smallest value of the field."""
    return Aggregate("min", name)


def max_of(name: str) -> Aggregate:
    """Largest value of the field."""
    return Aggregate("max", name)


# ---- predicates ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Condition:
    """A comparison: `op` is eq, ne, lt, le, gt, ge, any-of, is-null or is-not-null."""

    op: str
    value: Any = None


def eq(v: Value) -> Condition:
    return Condition("eq", v)


def ne(v: Value) -> Condition:
    return Condition("ne", v)


def lt(v: Value) -> Condition:
    return Condition("lt", v)


def le(v: Value) -> Condition:
    return Condition("le", v)


def gt(v: Value) -> Condition:
    return Condition("gt", v)


def ge(v: Value) -> Condition:
    return Condition("ge", v)


def any_of(values: list[Value]) -> Condition:
    """The field equals one of the values (an empty list matches nothing)."""
    return Condition("any-of", list(values))


def is_null() -> Condition:
    return Condition("is-null")


def is_not_null() -> Condition:
    return Condition("is-not-null")


@dataclasses.dataclass(frozen=True)
class Order:
    """Sort by output column `column` (keys first, then aggregates)."""

    column: int
    descending: bool = False


# ---- the query and its rows ----------------------------------------------------------------


@dataclasses.dataclass
class Query:
    """A structured, aggregate query of `dataset`; each method returns the query, so calls
    chain."""

    dataset: str
    filter_json: str | None = None
    predicates: list[tuple[str, Condition]] = dataclasses.field(default_factory=list)
    keys: list[Key] = dataclasses.field(default_factory=list)
    distinct: str | None = None
    aggregates: list[Aggregate] = dataclasses.field(default_factory=list)
    orders: list[Order] = dataclasses.field(default_factory=list)
    max_rows: int | None = None

    def filter(self, spec_filter: dict | str | None) -> "Query":
        """The spec's `filter` object, as the client sent it (the host validates it, and
        intersects `loanOfficerIds` with the caller's scope). None or `{}`-less: no filter."""
        if spec_filter is None:
            self.filter_json = None
        elif isinstance(spec_filter, str):
            self.filter_json = spec_filter
        else:
            self.filter_json = _json.dumps(spec_filter)
        return self

    def where(self, name: str, condition: Condition) -> "Query":
        """A predicate, AND-ed with the others, the filter and the caller's scope."""
        self.predicates.append((name, condition))
        return self

    def group_by(self, *keys: Key | str) -> "Query":
        """Group-by keys (a plain string is a field); none gives one row over all rows."""
        self.keys.extend(Field(k) if isinstance(k, str) else k for k in keys)
        return self

    def distinct_on(self, name: str) -> "Query":
        """Make rows distinct on (keys, this field) before aggregating (one row per loan)."""
        self.distinct = name
        return self

    def aggregate(self, *aggregates: Aggregate) -> "Query":
        """Aggregates, in output order after the keys."""
        self.aggregates.extend(aggregates)
        return self

    def order_by(self, column: int, descending: bool = False) -> "Query":
        """Sort by an output column; by default the keys ascending."""
        self.orders.append(Order(column, descending))
        return self

    def limit(self, n: int | None) -> "Query":
        """At most `n` rows (the host applies its own cap too)."""
        self.max_rows = n
        return self

    def run(self) -> "Rows":
        """Runs the query; raises `DataDenied`, `InvalidQuery` or `DataUnavailable`."""
        return _host.current().run(self)


@dataclasses.dataclass
class Rows:
    """The rows of a query result. Iterating gives the rows (lists of values)."""

    columns: list[str]
    rows: list[list[Value]]
    truncated: bool = False
    total_groups: int | None = None

    def __post_init__(self) -> None:
        if self.total_groups is None:
            self.total_groups = len(self.rows)

    def __iter__(self) -> Iterator[list[Value]]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)
