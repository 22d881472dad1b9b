/**
 * `query_loans` in TypeScript: the loans behind a report's bucket (docs/design.md §7.7). The same
 * tool as the Rust build (plugins/tools/query_loans), written with the TypeScript SDK: one page
 * of the caller's loans matching the spec's `filter`, in one of the spec's `orderByOptions`,
 * through the `listing` capability (loan:reporting@1.2.0), and the count of every loan matching
 * through `data`, so a list reconciles with `report_loans`' `totalCount` for the same filter.
 * The host decides which fields and rows it may read; this plugin names them and pages.
 */
import { canReadNames, data, Decimal, defineTool, invalidParams, ListQuery, LOAN_FILTER_SCHEMA, s, type Infer, type OrderOption, type Value } from "@loanhost/plugin";

/** Rows of a page unless the caller asks for another size. */
const DEFAULT_PAGE_SIZE = 25;
/** Rows of a page at most (the host's own cap). */
const MAX_PAGE_SIZE = 100;

/** The fields of every listed loan. */
export const FIELDS = [
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
];
/** The people's names, for callers who may read names (Admin, Processor, ConciergeKey). */
const NAME_FIELDS = ["loanOfficerName", "processorName", "referringAgentName"];
/** The borrower's names, when asked (and only for callers the host lets read them). */
const BORROWER_FIELDS = ["borrowerFirstName", "borrowerLastName"];

/** The spec's `orderByOptions`, by the SDK's order names. */
const ORDERS: Record<string, OrderOption> = {
  updated: "updated",
  statusDate: "status-date",
  amount: "amount",
  closingDate: "closing-date",
  commission: "commission",
};

export const Arguments = s.object({
  // Any JSON, not only objects: anything else is refused by `run` with the Rust build's message.
  filter: s.any(LOAN_FILTER_SCHEMA).optional(),
  orderBy: s
    .enumOf(["updated", "statusDate", "amount", "closingDate", "commission"] as const)
    .default("updated")
    .describe(
      "The order (the spec's orderByOptions): updated, statusDate, amount (loan amount), closingDate (estimated closing date), commission (locked compensation). Loans without that value come last.",
    ),
  descending: s.boolean().default(true).describe("Highest (latest) first."),
  pageSize: s.integer().default(DEFAULT_PAGE_SIZE).describe("Loans in this page (1 to 100)."),
  cursor: s.string().optional().describe("nextCursor of the previous page; send the same filter and order with it."),
  includeBorrowerName: s.boolean().default(false).describe("Add the borrower's first and last name (refused for roles that may not read them)."),
});
type Arguments = Infer<typeof Arguments>;

const text = { type: ["string", "null"] };
const Result = s.json({
  type: "object",
  required: ["loans", "totalCount", "orderBy", "descending", "pageSize", "nextCursor"],
  properties: {
    loans: {
      type: "array",
      items: {
        type: "object",
        description: "A loan: amounts as exact decimal strings, dates as RFC 3339 instants; names only where the caller may read them.",
        required: FIELDS,
        properties: Object.fromEntries([...FIELDS, ...NAME_FIELDS, ...BORROWER_FIELDS].map((f) => [f, text])),
        additionalProperties: false,
      },
    },
    totalCount: {
      type: "integer",
      minimum: 0,
      description: "Every loan in the caller's scope matching the filter (report_loans' totalCount for the same filter).",
    },
    orderBy: { type: "string" },
    descending: { type: "boolean" },
    pageSize: { type: "integer" },
    nextCursor: { type: ["string", "null"], description: "Pass back as cursor for the next page; null on the last page." },
  },
});

/** A listed value as the tool writes it: amounts as their exact decimal text (the host's scale
 * kept), instants as their text, everything else as the host gave it. */
const asText = (v: Value): Value => (v instanceof Decimal ? v.toString() : v instanceof data.Timestamp ? v.text : v);

export default defineTool({
  name: "query_loans",
  title: "Loans behind a bucket",
  description:
    "Lists the individual loans in the caller's scope that match a filter, one page at a " +
    "time: the loans behind a report's bucket ('which 12 loans are in Underwriting?', " +
    "'show me Olivia's pipeline' with filter.loanOfficerIds from search_users). Each loan " +
    "has its id, loan number, status and dates, type, purpose, amounts, property state and " +
    "the ids of its officer, assistant, processor and referring agent. Use it to see WHICH " +
    "loans; never to count or total them: use report_loans for counts, sums and averages " +
    "(its totalCount equals this tool's totalCount for the same filter). Ordered by one of " +
    "updated, statusDate, amount, closingDate, commission (loans without that value " +
    "last). To read further, pass nextCursor back as cursor with the same filter and " +
    "order. Officer, processor and referrer names appear only for Admin, Processor and " +
    "ConciergeKey; borrower names only with includeBorrowerName=true and only for roles " +
    "allowed to read them; borrower emails are never returned.",
  arguments: Arguments,
  result: Result,
  run(args: Arguments) {
    if (args.filter !== undefined && (args.filter === null || typeof args.filter !== "object" || Array.isArray(args.filter) || args.filter instanceof Decimal)) {
      throw invalidParams("filter must be an object");
    }
    if (args.pageSize < 1 || args.pageSize > MAX_PAGE_SIZE) {
      throw invalidParams(`pageSize: ${args.pageSize} is not between 1 and ${MAX_PAGE_SIZE}`);
    }
    const filter = args.filter as Record<string, unknown> | undefined;
    const fields = [...FIELDS, ...(canReadNames() ? NAME_FIELDS : []), ...(args.includeBorrowerName ? BORROWER_FIELDS : [])];
    const page = new ListQuery("loans")
      .select(...fields)
      .filter(filter)
      .orderBy(ORDERS[args.orderBy], args.descending)
      .pageSize(args.pageSize)
      .after(args.cursor)
      .page();
    const total = new data.Query("loans").filter(filter).aggregate(data.count()).run();
    const count = total.rows[0]?.[0];
    return {
      loans: page.rows.map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, asText(v)]))),
      totalCount: typeof count === "number" ? Math.max(count, 0) : 0,
      orderBy: args.orderBy,
      descending: args.descending,
      pageSize: args.pageSize,
      nextCursor: page.nextCursor ?? null,
    };
  },
});
