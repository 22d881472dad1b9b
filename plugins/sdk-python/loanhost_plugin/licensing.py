"""Users' state licences (`loan:reporting@1.2.0` `licensing`), for a plugin whose manifest grants
`user-licenses`. The host applies the per-user access check on every call (the caller's own;
any agent's for Admin; the agents a ConciergeKey manages; no Processor branch):

    mine = licensing.user_licenses()            # the caller's
    theirs = licensing.user_licenses(user_id)   # None: unknown, or not the caller's to read
"""

from __future__ import annotations

import dataclasses

from . import host as _host


@dataclasses.dataclass(frozen=True)
class License:
    """One state licence: the 2-letter state (as a loan's `propertyState`), the number the state
    issued, the year it expires (`YYYY`; it holds through that year's end)."""

    state: str
    state_license_number: str | None = None
    expiration_year: str | None = None


@dataclasses.dataclass(frozen=True)
class LicensesOf:
    """A user's licences, by state."""

    user_id: str
    licenses: tuple[License, ...]


def user_licenses(user_id: str | None = None) -> LicensesOf | None:
    """The licences of `user_id` (None: the caller's); None when the user is unknown or one the
    caller may not read (the two answer alike). Raises `DataDenied`, `InvalidQuery` (not a
    UUID) or `DataUnavailable`."""
    return _host.current().user_licenses(user_id)
