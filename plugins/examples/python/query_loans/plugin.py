"""`query_loans` in Python: the loans behind a report's bucket (docs/design.md §7.7). The same
tool as the Rust build (plugins/tools/query_loans), written with the Python SDK: one page of the
caller's loans matching the spec's `filter`, in one of the spec's `orderByOptions`, through the
`listing` capability (loan:reporting@1.2.0), and the count of every loan matching through
`data`, so a list reconciles with `report_loans`' `totalCount` for the same filter. The host
decides which fields and rows it may read; this plugin names them and pages."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

import loanhost_plugin as lp
from loanhost_plugin import data
from loanhost_plugin.listing import ListQuery
from loanhost_plugin.records import field

#: Rows of a page unless the caller asks for another size.
DEFAULT_PAGE_SIZE = 25
#: Rows of a page at most (the host's own cap).
MAX_PAGE_SIZE = 100

#: The fields of every listed loan.
FIELDS = (
    "id",
    "loanNumber",
    "status",
    "statusDate",
    "loanType",
    "purpose",
    "loanAmount",
    "lockedCompensation",
    "estimatedCompensation",
    "estimatedClosingDate",
    "updated",
    "propertyState",
    "loanOfficerId",
    "loanAssistantId",
    "processorId",
    "referringAgentId",
)
#: The people's names, for callers who may read names (Admin, Processor, ConciergeKey).
NAME_FIELDS = ("loanOfficerName", "processorName", "referringAgentName")
#: The borrower's names, when asked (and only for callers the host lets read them).
BORROWER_FIELDS = ("borrowerFirstName", "borrowerLastName")

#: The spec's `orderByOptions`, by the SDK's order names.
ORDERS = {
    "updated": "updated",
    "statusDate": "status-date",
    "amount": "amount",
    "closingDate": "closing-date",
    "commission": "commission",
}

DESCRIPTION = (
    "Lists the individual loans in the caller's scope that match a filter, one page at a "
    "time: the loans behind a report's bucket ('which 12 loans are in Underwriting?', "
    "'show me Olivia's pipeline' with filter.loanOfficerIds from search_users). Each loan "
    "has its id, loan number, status and dates, type, purpose, amounts, property state and "
    "the ids of its officer, assistant, processor and referring agent. Use it to see WHICH "
    "loans; never to count or total them: use report_loans for counts, sums and averages "
    "(its totalCount equals this tool's totalCount for the same filter). Ordered by one of "
    "updated, statusDate, amount, closingDate, commission (loans without that value "
    "last). To read further, pass nextCursor back as cursor with the same filter and "
    "order. Officer, processor and referrer names appear only for Admin, Processor and "
    "ConciergeKey; borrower names only with includeBorrowerName=true and only for roles "
    "allowed to read them; borrower emails are never returned."
)


@lp.arguments
@dataclasses.dataclass
class Arguments:
    # Any, not dict: anything but an object is refused by `run` with the Rust build's message.
    filter: Any = field(default=None, schema=lp.LOAN_FILTER_SCHEMA)
    order_by: str = field(
        default="updated",
        schema={
            "type": "string",
            "enum": list(ORDERS),
            "default": "updated",
            "description": "The order (the spec's orderByOptions): updated, statusDate, amount "
            "(loan amount), closingDate (estimated closing date), commission (locked "
            "compensation). Loans without that value come last.",
        },
    )
    descending: bool = field(default=True, description="Highest (latest) first.")
    page_size: int = field(
        default=DEFAULT_PAGE_SIZE,
        schema={
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_PAGE_SIZE,
            "default": DEFAULT_PAGE_SIZE,
            "description": "Loans in this page.",
        },
    )
    cursor: str | None = field(
        default=None,
        schema={
            "type": "string",
            "maxLength": 256,
            "description": "nextCursor of the previous page; send the same filter and order with it.",
        },
    )
    include_borrower_name: bool = field(
        default=False,
        description="Add the borrower's first and last name (refused for roles that may not "
        "read them).",
    )


def output_schema() -> dict:
    text = {"type": ["string", "null"]}
    return {
        "type": "object",
        "required": ["loans", "totalCount", "orderBy", "descending", "pageSize", "nextCursor"],
        "properties": {
            "loans": {
                "type": "array",
                "items": {
                    "type": "object",
                    "description": "A loan: amounts as exact decimal strings, dates as RFC 3339 "
                    "instants; names only where the caller may read them.",
                    "required": list(FIELDS),
                    "properties": {f: text for f in FIELDS + NAME_FIELDS + BORROWER_FIELDS},
                    "additionalProperties": False,
                },
            },
            "totalCount": {
                "type": "integer",
                "minimum": 0,
                "description": "Every loan in the caller's scope matching the filter "
                "(report_loans' totalCount for the same filter).",
            },
            "orderBy": {"type": "string"},
            "descending": {"type": "boolean"},
            "pageSize": {"type": "integer"},
            "nextCursor": {
                "type": ["string", "null"],
                "description": "Pass back as cursor for the next page; null on the last page.",
            },
        },
    }


def as_text(value: Any) -> Any:
    """A listed value as the tool writes it: amounts as their exact decimal text (the host's
    scale kept), everything else as the host gave it."""
    return str(value) if isinstance(value, Decimal) else value


class QueryLoans(lp.Tool):
    name = "query_loans"
    title = "Loans behind a bucket"
    description = DESCRIPTION
    Arguments = Arguments
    output_schema = output_schema()

    def run(self, args: Arguments) -> dict:
        if args.filter is not None and not isinstance(args.filter, dict):
            raise lp.InvalidParams("filter must be an object")
        order = ORDERS.get(args.order_by)
        if order is None:
            raise lp.InvalidParams(
                f"orderBy: `{args.order_by}` is not one of {', '.join(ORDERS)}"
            )
        if not 1 <= args.page_size <= MAX_PAGE_SIZE:
            raise lp.InvalidParams(
                f"pageSize: {args.page_size} is not between 1 and {MAX_PAGE_SIZE}"
            )
        fields = list(FIELDS)
        if lp.can_read_names():
            fields += NAME_FIELDS
        if args.include_borrower_name:
            fields += BORROWER_FIELDS
        page = (
            ListQuery("loans")
            .select(*fields)
            .filter(args.filter)
            .order_by(order, descending=args.descending)
            .page_size(args.page_size)
            .after(args.cursor)
            .page()
        )
        total = data.Query("loans").filter(args.filter).aggregate(data.count()).run()
        count = total.rows[0][0] if total.rows else 0
        return {
            "loans": [{k: as_text(v) for k, v in row.items()} for row in page.rows],
            "totalCount": max(count, 0) if isinstance(count, int) else 0,
            "orderBy": args.order_by,
            "descending": args.descending,
            "pageSize": args.page_size,
            "nextCursor": page.next_cursor,
        }


Tool = QueryLoans
