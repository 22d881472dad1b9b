"""The people on the loans of the caller's scope (`loan:reporting@1.2.0` `people`), for a plugin
whose manifest declares a listing grant for `people` (`[datasets.people] fields = ["id",
"isCaller", "parts"] listing = true`, and `"name"` to read names). The host resolves the scope
on every call; names only for callers who may read them; never an email:

    found = people.search(name_tokens=["olivia"], parts=["LoanOfficer"], limit=10)
    for p in found.people:         # the caller first, then by name (or id)
        p.id, p.is_caller, p.parts, p.name
    found.total                    # how many matched, before the limit

A search by name from a caller who may not read names raises `DataDenied`."""

from __future__ import annotations

import dataclasses
from typing import Iterable

from . import host as _host

#: The parts a person plays on a loan: its officer, its assistant, its processor, its referring
#: agent (the host lists a person's in this order).
PARTS = ("LoanOfficer", "LoanAssistant", "Processor", "ReferringAgent")


@dataclasses.dataclass(frozen=True)
class PeopleQuery:
    """A search: every token must appear in the name (case-insensitively); only people playing
    one of `parts` (empty: anyone, the caller too); at most `limit` (1 to 100)."""

    name_tokens: tuple[str, ...] = ()
    parts: tuple[str, ...] = ()
    limit: int = 20


@dataclasses.dataclass(frozen=True)
class Person:
    """One person: their platform user id (what the filter's `loanOfficerIds` and `processorId`
    take), whether they are the caller, the parts they play, their name when it may be read."""

    id: str
    is_caller: bool
    parts: tuple[str, ...]
    name: str | None = None


@dataclasses.dataclass(frozen=True)
class Found:
    """A search's answer: at most the limit's people, and how many matched."""

    people: tuple[Person, ...]
    total: int


def search(name_tokens: Iterable[str] = (), parts: Iterable[str] = (), limit: int = 20) -> Found:
    """Searches the people of the caller's scope; raises `DataDenied`, `InvalidQuery` or
    `DataUnavailable`. A part not in `PARTS` is a `ValueError` (check a client's first)."""
    parts = tuple(parts)
    for p in parts:
        if p not in PARTS:
            raise ValueError(f"part {p!r}: expected one of {', '.join(PARTS)}")
    return _host.current().search_people(PeopleQuery(tuple(name_tokens), parts, limit))
