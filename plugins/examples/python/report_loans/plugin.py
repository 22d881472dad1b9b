"""`report_loans` in Python: point-in-time aggregates over the loan snapshot (current
attributes), grouped by a dimension and measured by a metric (docs/design.md §7.1). The same tool as
the Rust build (plugins/tools/report_loans), written with the Python SDK: grouping, counting and
summing run in the database through the `data` capability; this plugin labels, orders and
truncates the buckets."""

from __future__ import annotations

import dataclasses
import enum
import uuid
from decimal import Decimal
from typing import Any

import loanhost_plugin as lp
from loanhost_plugin import data
from loanhost_plugin.records import field

#: Buckets returned at most.
MAX_BUCKETS = 100
#: Groups read from the host at most (its own cap).
MAX_GROUPS = 10_000


class GroupBy(enum.Enum):
    NONE = "None"
    STATUS = "Status"
    LOAN_TYPE = "LoanType"
    PURPOSE = "Purpose"
    LOAN_OFFICER = "LoanOfficer"
    REFERRING_AGENT = "ReferringAgent"
    MONTH = "Month"
    QUARTER = "Quarter"
    YEAR = "Year"


class Metric(enum.Enum):
    COUNT = "Count"
    SUM = "Sum"
    AVERAGE = "Average"
    MIN = "Min"
    MAX = "Max"


class MetricField(enum.Enum):
    LOAN_AMOUNT = "LoanAmount"
    LOCKED_COMPENSATION = "LockedCompensation"
    ESTIMATED_COMPENSATION = "EstimatedCompensation"


class DateField(enum.Enum):
    STATUS_DATE = "StatusDate"
    CLOSING_DATE = "ClosingDate"
    UPDATED = "Updated"


METRIC_FIELDS = {
    MetricField.LOAN_AMOUNT: "loanAmount",
    MetricField.LOCKED_COMPENSATION: "lockedCompensation",
    MetricField.ESTIMATED_COMPENSATION: "estimatedCompensation",
}
DATE_FIELDS = {
    DateField.STATUS_DATE: "statusDate",
    DateField.CLOSING_DATE: "estimatedClosingDate",
    DateField.UPDATED: "updated",
}
PERIODS = {GroupBy.MONTH: "month", GroupBy.QUARTER: "quarter", GroupBy.YEAR: "year"}


@lp.arguments
@dataclasses.dataclass
class Arguments:
    # Any, not dict: anything but an object is refused by `run` with the Rust build's message.
    filter: Any = field(default=None, schema=lp.LOAN_FILTER_SCHEMA)
    group_by: GroupBy = field(
        default=GroupBy.NONE,
        description="Dimension to group by; None gives a single total. Month/Quarter/Year "
        "bucket on dateField and drop loans without that date.",
    )
    metric: Metric = field(
        default=Metric.COUNT,
        description="The function recorded in each bucket's value; all five are returned per bucket.",
    )
    metric_field: MetricField = field(
        default=MetricField.LOAN_AMOUNT,
        description="Money field measured (USD); loans without a value are ignored by "
        "sum/average/min/max.",
    )
    date_field: DateField = field(
        default=DateField.STATUS_DATE, description="Date used by Month/Quarter/Year grouping."
    )


@dataclasses.dataclass
class LoanAggregationBucket:
    """One bucket of `report_loans`."""

    key: str = field(
        description="Status name, month `YYYY-MM`, quarter `YYYY-Qn`, year `YYYY`, an officer "
        "name, or `all`."
    )
    key_id: uuid.UUID | None = field(
        description="The user id, set only when grouping by LoanOfficer or ReferringAgent."
    )
    count: int = field(description="Loans in the bucket.")
    sum: Decimal | None = field(
        omit_if_none=True,
        description="Sum of metricField over the loans that have a value; omitted when none has.",
    )
    average: Decimal | None = field(
        omit_if_none=True,
        description="Average (2 decimal places) over the loans that have a value; omitted when "
        "none has.",
    )
    min: Decimal | None = field(
        omit_if_none=True, description="Smallest value; omitted when no loan has one."
    )
    max: Decimal | None = field(
        omit_if_none=True, description="Largest value; omitted when no loan has one."
    )
    value: Decimal | None = field(
        description="The requested metric's value (the count for Count); null when no loan has "
        "a value."
    )


@dataclasses.dataclass
class LoanAggregationResponse:
    """`LoanAggregationResponse` (`report_loans`): loans counted and measured per bucket."""

    group_by: str = field(description="Echo of groupBy.")
    metric: str = field(description="Echo of metricField.")
    function: str = field(description="Echo of metric.")
    total_count: int = field(description="Loans in all buckets, truncated ones included.")
    bucket_count: int = field(description="Buckets returned.")
    truncated: bool = field(description="True when a high-cardinality grouping was capped.")
    buckets: list[LoanAggregationBucket] = field(
        description="The buckets: by count (highest first) for dimensions, by period for "
        "Month, Quarter and Year."
    )


@dataclasses.dataclass
class Bucket:
    """One bucket before ordering: exact sums in ten-thousandths (the host's scale)."""

    key: str
    key_id: str | None
    count: int
    with_value: int
    sum: Decimal | None
    min: Decimal | None
    max: Decimal | None


def text(cell: Any) -> str | None:
    if isinstance(cell, str):
        return str(cell)
    if isinstance(cell, Decimal):
        return str(cell)
    return None


def integer(cell: Any) -> int:
    return max(cell, 0) if isinstance(cell, int) and not isinstance(cell, bool) else 0


def decimal(cell: Any) -> Decimal | None:
    return cell if isinstance(cell, Decimal) else None


def average(total: Decimal, n: int) -> Decimal:
    """`total / n` rounded to 2 decimal places, half away from zero (exact integer arithmetic,
    as the Rust SDK's `Decimal::average`)."""
    scaled = int(total.scaleb(4).to_integral_value())
    den = n * 100
    cents, rest = divmod(abs(scaled), den)
    if 2 * rest >= den:
        cents += 1
    return Decimal(-cents if scaled < 0 else cents).scaleb(-2)


def merge(buckets: list[Bucket]) -> list[Bucket]:
    """Buckets with the same (key, keyId) merged (null-id officers may come in several rows
    when names are grouped too)."""
    out: list[Bucket] = []
    seen: dict[tuple[str, str | None], Bucket] = {}
    for b in buckets:
        same = seen.get((b.key, b.key_id))
        if same is None:
            seen[(b.key, b.key_id)] = b
            out.append(b)
            continue
        same.count += b.count
        same.with_value += b.with_value
        same.sum = b.sum if same.sum is None else same.sum if b.sum is None else same.sum + b.sum
        same.min = min((x for x in (same.min, b.min) if x is not None), default=None)
        same.max = max((x for x in (same.max, b.max) if x is not None), default=None)
    return out


def metric_value(b: Bucket, metric: Metric) -> Decimal | None:
    has = b.with_value > 0
    if metric is Metric.COUNT:
        return Decimal(b.count)
    if not has:
        return None
    if metric is Metric.SUM:
        return b.sum or Decimal(0)
    if metric is Metric.AVERAGE:
        return average(b.sum or Decimal(0), b.with_value)
    return b.min if metric is Metric.MIN else b.max


class ReportLoans(lp.Tool):
    name = "report_loans"
    title = "Loan aggregates"
    description = (
        "Point-in-time aggregate of the caller's loans on their CURRENT attributes: counts, and "
        "sum/average/min/max of a money field, grouped by status, loan type, purpose, loan "
        "officer, referring agent, or the month/quarter/year of a date. Use it for 'how many "
        "loans are in each status now', 'total volume by officer', 'loans updated per month'. "
        "Do NOT use it to count loans closed or funded in a period: loans move on from Loan "
        "Closed/Loan Funded (to Sold, Purchased, Archived), so current status undercounts; use "
        "report_loan_milestones for that. Call get_loan_reporting_metadata first for exact "
        "filter and grouping values. Results are limited to what the caller's role may see; an "
        "empty result usually means scope, and sparse closing dates mean date filters on "
        "ClosingDate often return little. At most 100 buckets are returned (truncated=true)."
    )
    Arguments = Arguments
    Result = LoanAggregationResponse

    def run(self, args: Arguments) -> LoanAggregationResponse:
        group_by, metric = args.group_by, args.metric
        if args.filter is not None and not isinstance(args.filter, dict):
            raise lp.InvalidParams("filter must be an object")
        names = lp.can_read_names()
        m = METRIC_FIELDS[args.metric_field]

        query = data.Query("loans").filter(args.filter)
        if group_by in (GroupBy.STATUS, GroupBy.LOAN_TYPE, GroupBy.PURPOSE):
            query.group_by({GroupBy.STATUS: "status", GroupBy.LOAN_TYPE: "loanType"}.get(group_by, "purpose"))
        elif group_by in (GroupBy.LOAN_OFFICER, GroupBy.REFERRING_AGENT):
            officer = group_by is GroupBy.LOAN_OFFICER
            query.group_by("loanOfficerId" if officer else "referringAgentId")
            if names:
                query.group_by("loanOfficerName" if officer else "referringAgentName")
        elif group_by in PERIODS:
            date = DATE_FIELDS[args.date_field]
            query.where(date, data.is_not_null())
            query.group_by(data.period(date, PERIODS[group_by]))
        nkeys = len(query.keys)
        query.aggregate(
            data.count(), data.count_of(m), data.sum_of(m), data.min_of(m), data.max_of(m)
        ).order_by(nkeys, descending=True).limit(MAX_GROUPS)
        rows = query.run()

        buckets = []
        for r in rows:
            key_id = None
            if group_by is GroupBy.NONE:
                key = "all"
            elif group_by in (GroupBy.STATUS, GroupBy.LOAN_TYPE, GroupBy.PURPOSE):
                key = text(r[0]) or "Unknown"
            elif group_by in (GroupBy.LOAN_OFFICER, GroupBy.REFERRING_AGENT):
                key_id = text(r[0])
                if key_id is None:
                    key = "Unassigned"
                else:
                    name = text(r[1]) if names else None
                    key = name if name is not None and name.strip() else key_id
            else:
                key = text(r[0]) or ""
            a = r[nkeys:]
            b = Bucket(key, key_id, integer(a[0]), integer(a[1]), decimal(a[2]), decimal(a[3]), decimal(a[4]))
            if group_by is not GroupBy.NONE or b.count > 0 or len(rows) == 1:
                buckets.append(b)
        buckets = merge(buckets)
        if rows.truncated:
            query.keys, query.orders, query.max_rows = [], [], None
            total = query.run()
            total_count = integer(total.rows[0][0]) if total.rows else 0
        else:
            total_count = sum(b.count for b in buckets)
        if group_by in PERIODS:
            buckets.sort(key=lambda b: b.key)
        else:
            buckets.sort(key=lambda b: (-b.count, b.key, b.key_id is not None, b.key_id or ""))
        truncated = rows.truncated or len(buckets) > MAX_BUCKETS
        buckets = buckets[:MAX_BUCKETS]

        out = []
        for b in buckets:
            has = b.with_value > 0
            total_sum = b.sum or Decimal(0)
            if b.key_id is None:
                key_uuid = None
            else:
                try:
                    key_uuid = uuid.UUID(b.key_id)
                except ValueError:
                    raise lp.Internal(f"the host sent a user id that is not a UUID: {b.key_id}") from None
            out.append(
                LoanAggregationBucket(
                    key=b.key,
                    key_id=key_uuid,
                    count=b.count,
                    sum=total_sum if has else None,
                    average=average(total_sum, b.with_value) if has else None,
                    min=b.min if has else None,
                    max=b.max if has else None,
                    value=metric_value(b, metric),
                )
            )
        return LoanAggregationResponse(
            group_by=group_by.value,
            metric=args.metric_field.value,
            function=metric.value,
            total_count=total_count,
            bucket_count=len(out),
            truncated=truncated,
            buckets=out,
        )


Tool = ReportLoans
