"""The host as a plugin sees it: who is calling, today's date, log lines, data queries, and the
1.2.0 capabilities (lists of loans, people, licences, prices). Inside the component these are
the imports of `loan:reporting@1.2.0`; in a unit test they are a
`loanhost_plugin.testing.FakeHost` (nothing here needs a server or WebAssembly)."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .data import Query, Rows
    from .licensing import LicensesOf
    from .listing import ListQuery, Page
    from .people import Found, PeopleQuery
    from .pricing import Priced, Scenario


class Host(Protocol):
    """What the SDK asks of the host (the WIT imports)."""

    def user_id(self) -> str: ...
    def roles(self) -> list[str]: ...
    def can_read_names(self) -> bool: ...
    def today(self) -> str: ...
    def log(self, level: str, message: str) -> None: ...
    def run(self, query: "Query") -> "Rows": ...
    def list_page(self, query: "ListQuery") -> "Page": ...
    def search_people(self, query: "PeopleQuery") -> "Found": ...
    def user_licenses(self, user_id: str | None) -> "LicensesOf | None": ...
    def quote(self, scenario: "Scenario") -> "Priced": ...


_current: Host | None = None

try:
    # Written by `LOANHOST_SDK_PROFILE=1 scripts/build-plugin.sh` beside the plugin: a build whose
    # stages are marked for the host's profile.
    from loanhost_profile import ENABLED as _PROFILE  # type: ignore[import-not-found]
except ImportError:
    _PROFILE = False


def mark(stage: str) -> None:
    """Marks that a call reached `stage`, in a profile build only (a log line the profiling host
    of `make bench`'s `languages` records as a stage mark); nothing in any other build."""
    if _PROFILE and _current is not None:
        _current.log("debug", "loanhost-profile:" + stage)


def _bind_component() -> None:
    """Binds the component's imports, if this runs inside a component being built. Called by the
    package's `__init__` once everything else is imported: a module first imported during a
    call is not in the component's snapshot, and there are no files to read it from then."""
    global _current
    try:
        from ._wasm import WasmHost
    except ModuleNotFoundError as e:
        # Outside the component (unit tests): no `wit_world`; a test installs a FakeHost.
        if e.name not in ("wit_world", "componentize_py_types"):
            raise
        return
    _current = WasmHost()


def current() -> Host:
    """The host in use: a test's fake when one is installed, else the component's imports."""
    if _current is None:
        raise RuntimeError(
            "no loanhost host outside a component: install a loanhost_plugin.testing.FakeHost"
        )
    return _current


def install(host: Host | None) -> Host | None:
    """Installs `host` (None: back to the component's imports); returns the one it replaces."""
    global _current
    previous, _current = _current, host
    return previous


def user_id() -> str:
    """The caller's platform user id (a UUID, lower-case hyphenated)."""
    return current().user_id()


def roles() -> list[str]:
    """The caller's role codes (`Admin`, `Agent`, …, and the baseline `User`)."""
    return current().roles()


def has_any_role(*wanted: str) -> bool:
    """Whether the caller holds any of the role codes."""
    return any(r in wanted for r in current().roles())


def can_read_names() -> bool:
    """Whether the caller may read officer, processor and referrer names."""
    return current().can_read_names()


def today() -> datetime.date:
    """Today's date in UTC as the host sees it (never the wall clock: inside the sandbox there
    is none)."""
    return datetime.date.fromisoformat(current().today())


class log:
    """Log lines, tagged by the host with the plugin's name and the call id (capped per call)."""

    @staticmethod
    def debug(message: Any) -> None:
        current().log("debug", str(message))

    @staticmethod
    def info(message: Any) -> None:
        current().log("info", str(message))

    @staticmethod
    def warn(message: Any) -> None:
        current().log("warn", str(message))

    @staticmethod
    def error(message: Any) -> None:
        current().log("error", str(message))
