"""Indicative prices from the rate sheet the platform imports (`loan:reporting@1.2.0` `pricing`),
for a plugin whose manifest grants `rate-sheet`. The host refuses a scenario unless the caller
holds a licence in its property state that has not expired (`NotLicensed`); a scenario carries
no borrower identifier:

    priced = pricing.quote(pricing.Scenario(
        property_state="TX", loan_amount=Decimal("320000"), property_value=Decimal("400000"),
        credit_score=740, loan_type="Conventional", purpose="Purchase",
        occupancy="PrimaryResidence", term_months=360, lock_days=30))
    priced.ltv                     # Decimal("80.00")
    priced.quotes[0].rate          # the lowest rate, Decimal
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal

from . import host as _host


@dataclasses.dataclass(frozen=True)
class Scenario:
    """A loan scenario: give `property_value` or `ltv` (percent)."""

    property_state: str
    loan_amount: Decimal
    credit_score: int
    loan_type: str
    purpose: str
    occupancy: str
    term_months: int
    lock_days: int
    property_value: Decimal | None = None
    ltv: Decimal | None = None


@dataclasses.dataclass(frozen=True)
class ProductPrice:
    """One product's indicative price: its name on the sheet, the note rate (percent), points
    (percent of the amount; negative: a credit), the sheet's effective date (`YYYY-MM-DD`)."""

    product: str
    rate: Decimal
    points: Decimal
    effective_date: str


@dataclasses.dataclass(frozen=True)
class Priced:
    """The LTV the sheet was read at (percent) and the products that fit, lowest rate first (at
    most 20; none when nothing fits)."""

    ltv: Decimal
    quotes: tuple[ProductPrice, ...]


def quote(scenario: Scenario) -> Priced:
    """The rate sheet's prices for `scenario`; raises `NotLicensed`, `DataDenied`, `InvalidQuery`
    or `DataUnavailable`."""
    return _host.current().quote(scenario)
