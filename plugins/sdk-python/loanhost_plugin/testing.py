"""Unit tests without a server or WebAssembly: a fake host that answers a plugin's imports (who
is calling, today, log lines, data queries) from the test, and records what the plugin asked.

    from loanhost_plugin.testing import FakeHost
    from loanhost_plugin.data import Rows

    def test_counts_by_status():
        host = FakeHost(roles=["Agent"], answer=lambda q: Rows(["key0", "agg0"], [["Loan Open", 2]]))
        result = host.call(MyReport, {"statuses": ["Loan Open"]})
        assert result["buckets"] == [{"status": "Loan Open", "count": 2}]
        assert host.queries[0].dataset == "loans"

The fake checks nothing the real host checks (scope, grants, filters, limits): run the built
component with `loanhost plugin run` on fixtures for that (docs/plugins.md).
"""

from __future__ import annotations

from typing import Any, Callable

from . import _json, host as _host
from .data import Query, Rows


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
    ):
        self._user_id = user_id
        self._roles = list(roles)
        self._names = can_read_names
        self._today = today
        self._answer = answer
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
        if callable(self._answer):
            return self._answer(query)
        if isinstance(self._answer, list) and self._answer:
            return self._answer.pop(0)
        raise AssertionError(f"the plugin ran a query the test did not answer: {query}")

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
