"""Unit tests without a server or WebAssembly: a fake host that answers a plugin's imports (who
is calling, today, log lines, data queries, lists, people, licences, prices) from the test, and
records what the plugin asked.

    from loanhost_plugin.testing import FakeHost
    from loanhost_plugin.data import Rows

    def test_counts_by_status():
        host = FakeHost(roles=["Agent"], answer=lambda q: Rows(["key0", "agg0"], [["Loan Open", 2]]))
        result = host.call(MyReport, {"statuses": ["Loan Open"]})
        assert result["buckets"] == [{"status": "Loan Open", "count": 2}]
        assert host.queries[0].dataset == "loans"

A list is answered by `pages` (`loanhost_plugin.listing.page(columns, rows, next_cursor)`), a
search by `people`, a licence read by `licenses`, a scenario by `prices`: each a function of
what the plugin asked, or a list of answers handed out in order.

The fake checks nothing the real host checks (scope, grants, filters, limits): run the built
component with `loanhost plugin run` on fixtures for that (docs/plugins.md).
"""

from __future__ import annotations

from typing import Any, Callable

from . import _json, host as _host
from .data import Query, Rows
from .licensing import LicensesOf
from .listing import ListQuery, Page
from .people import Found, PeopleQuery
from .pricing import Priced, Scenario


def _answer(answer: Any, asked: Any, what: str) -> Any:
    if callable(answer):
        return answer(asked)
    if isinstance(answer, list) and answer:
        return answer.pop(0)
    raise AssertionError(f"the plugin asked for {what} the test did not answer: {asked}")


class FakeHost:
    """Answers the host imports for one or more calls made with `call`."""

    def __init__(
        self,
        *,
        user_id: str = "00000000-0000-4000-8000-000000000001",
        roles: list[str] | tuple[str, ...] = ("Agent", "User"),
        can_read_names: bool = False,
        today: str = "2026-11-22",
        answer: Callable[[Query], Rows] | list[Rows] | None = None,
        pages: Callable[[ListQuery], Page] | list[Page] | None = None,
        people: Callable[[PeopleQuery], Found] | list[Found] | None = None,
        licenses: Callable[[str | None], LicensesOf | None] | list[LicensesOf | None] | None = None,
        prices: Callable[[Scenario], Priced] | list[Priced] | None = None,
    ):
        self._user_id = user_id
        self._roles = list(roles)
        self._names = can_read_names
        self._today = today
        self._answer = answer
        self._pages, self._people, self._licenses, self._prices = pages, people, licenses, prices
        #: The lists the plugin asked for a page of, in order.
        self.lists: list[ListQuery] = []
        #: Its people searches.
        self.searches: list[PeopleQuery] = []
        #: The users whose licences it read (None: the caller's).
        self.license_reads: list[str | None] = []
        #: The scenarios it priced.
        self.scenarios: list[Scenario] = []
        #: The queries the plugin ran, in order.
        self.queries: list[Query] = []
        #: The log lines it wrote, as (level, message).
        self.logs: list[tuple[str, str]] = []

    # ---- the host imports ---------------------------------------------------------------

    def user_id(self) -> str:
        return self._user_id

    def roles(self) -> list[str]:
        return list(self._roles)

    def can_read_names(self) -> bool:
        return self._names

    def today(self) -> str:
        return self._today

    def log(self, level: str, message: str) -> None:
        self.logs.append((level, message))

    def run(self, query: Query) -> Rows:
        self.queries.append(query)
        return _answer(self._answer, query, "a query")

    def list_page(self, query: ListQuery) -> Page:
        self.lists.append(query)
        return _answer(self._pages, query, "a page")

    def search_people(self, query: PeopleQuery) -> Found:
        self.searches.append(query)
        return _answer(self._people, query, "people")

    def user_licenses(self, user_id: str | None) -> LicensesOf | None:
        self.license_reads.append(user_id)
        return _answer(self._licenses, user_id, "licences")

    def quote(self, scenario: Scenario) -> Priced:
        self.scenarios.append(scenario)
        return _answer(self._prices, scenario, "prices")

    # ---- driving the tool ---------------------------------------------------------------

    def call(self, tool: type, arguments: dict | None = None) -> Any:
        """Calls `tool` (the Tool subclass) with `arguments` as a client would send them;
        returns the result parsed from its JSON (decimals as `Decimal`), or raises the
        `ToolError` the client would see."""
        previous = _host.install(self)
        try:
            text = tool().call_json(_json.dumps(arguments if arguments is not None else {}))
        finally:
            _host.install(previous)
        return _json.loads(text)

    @staticmethod
    def describe(tool: type) -> dict:
        """The tool's description as `tools/list` shows it."""
        return tool.description_of()
