"""Pages of loan rows (`loan:reporting@1.2.0` `listing`), for a plugin whose manifest declares a
listing grant for `loans` (`[datasets.loans] fields = [...] listing = true`). The host checks
every field against the grant and the caller's roles, ANDs in the caller's scope, orders by one
of the spec's `orderByOptions`, caps a page at 100 rows and seals the cursor it issues to the
caller, the plugin, the list and the snapshot:

    page = (ListQuery("loans")
            .select("id", "loanNumber", "status", "loanAmount")
            .filter(args.filter)
            .order_by("updated", descending=True)
            .page_size(25)
            .after(args.cursor)
            .page())
    for row in page.rows:          # {"id": "…", "loanAmount": Decimal("350000.00"), …}
        ...
    page.next_cursor               # None on the last page

A cursor another caller sends back, or one sent for another list, raises `BadCursor`; one cut
from a snapshot an import has since replaced raises `StaleCursor` (list from the first page)."""

from __future__ import annotations

import dataclasses
from typing import Iterator

from . import _json
from . import host as _host
from .data import Condition, Value

#: The orders a list may take (the spec's `orderByOptions`): when the loan last changed, when it
#: entered its status, its amount, its estimated closing date, its locked compensation. Nulls
#: come last either way; the loan breaks ties.
ORDERS = ("updated", "status-date", "amount", "closing-date", "commission")

#: Rows a page at most.
MAX_PAGE_SIZE = 100


@dataclasses.dataclass
class ListQuery:
    """A list of `dataset` (`loans` or `loan-applications`); each method returns the list, so calls
    chain."""

    dataset: str = "loans"
    fields: list[str] = dataclasses.field(default_factory=list)
    filter_json: str | None = None
    predicates: list[tuple[str, Condition]] = dataclasses.field(default_factory=list)
    order: str = "updated"
    descending: bool = True
    size: int = 50
    cursor: str | None = None

    def select(self, *fields: str) -> "ListQuery":
        """The fields of each row, in order (1 to 32, each granted by the manifest)."""
        self.fields.extend(fields)
        return self

    def filter(self, spec_filter: dict | str | None) -> "ListQuery":
        """The spec's `filter` object, as the client sent it (the host translates it as for a
        query: it can only narrow the caller's scope). None: no filter."""
        if spec_filter is None or isinstance(spec_filter, str):
            self.filter_json = spec_filter
        else:
            self.filter_json = _json.dumps(spec_filter)
        return self

    def where(self, name: str, condition: Condition) -> "ListQuery":
        """A predicate, AND-ed with the others, the filter and the caller's scope."""
        self.predicates.append((name, condition))
        return self

    def order_by(self, order: str, descending: bool = True) -> "ListQuery":
        """One of `ORDERS` (its field must be granted too); highest first unless told."""
        if order not in ORDERS:
            raise ValueError(f"order {order!r}: expected one of {', '.join(ORDERS)}")
        self.order, self.descending = order, descending
        return self

    def page_size(self, n: int) -> "ListQuery":
        """Rows of a page, 1 to `MAX_PAGE_SIZE` (the host refuses any other)."""
        self.size = n
        return self

    def after(self, cursor: str | None) -> "ListQuery":
        """Continue where the page whose `next_cursor` this is ended; None: the first page."""
        self.cursor = cursor
        return self

    def page(self) -> "Page":
        """One page; raises `DataDenied`, `InvalidQuery`, `BadCursor`, `StaleCursor` or
        `DataUnavailable`."""
        return _host.current().list_page(self)


@dataclasses.dataclass
class Page:
    """One page of a list. Iterating gives the rows."""

    columns: list[str]
    #: Each row a dict keyed by field (`str`, `int`, `bool`, `Decimal`, `Timestamp`, `None`).
    rows: list[dict[str, Value]]
    #: The cursor of the next page; None on the last one.
    next_cursor: str | None = None

    def __iter__(self) -> Iterator[dict[str, Value]]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


def page(columns: list[str], rows: list[list[Value]], next_cursor: str | None = None) -> Page:
    """A page from rows of values, one per column (what a test's fake host answers)."""
    return Page(list(columns), [dict(zip(columns, row)) for row in rows], next_cursor)
