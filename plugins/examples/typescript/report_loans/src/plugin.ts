/**
 * `report_loans` in TypeScript: point-in-time aggregates over the loan snapshot (current
 * attributes), grouped by a dimension and measured by a metric (docs/design.md §7.1). The same tool as
 * the Rust build (plugins/tools/report_loans), written with the TypeScript SDK: grouping,
 * counting and summing run in the database through the `data` capability; this plugin labels,
 * orders and truncates the buckets.
 */
import { data, Decimal, defineTool, internal, invalidParams, LOAN_FILTER_SCHEMA, canReadNames, s, type Infer, type Value } from "@loanhost/plugin";

/** Buckets returned at most. */
const MAX_BUCKETS = 100;
/** Groups read from the host at most (its own cap). */
const MAX_GROUPS = 10_000;

const GROUP_BY = ["None", "Status", "LoanType", "Purpose", "LoanOfficer", "ReferringAgent", "Month", "Quarter", "Year"] as const;
const METRICS = ["Count", "Sum", "Average", "Min", "Max"] as const;
const METRIC_FIELDS = { LoanAmount: "loanAmount", LockedCompensation: "lockedCompensation", EstimatedCompensation: "estimatedCompensation" } as const;
const DATE_FIELDS = { StatusDate: "statusDate", ClosingDate: "estimatedClosingDate", Updated: "updated" } as const;
const PERIODS = { Month: "month", Quarter: "quarter", Year: "year" } as const;

export const Arguments = s.object({
  // Any JSON, not only objects: anything else is refused by `run` with the Rust build's message.
  filter: s.any(LOAN_FILTER_SCHEMA).optional(),
  groupBy: s
    .enumOf(GROUP_BY)
    .default("None")
    .describe("Dimension to group by; None gives a single total. Month/Quarter/Year bucket on dateField and drop loans without that date."),
  metric: s.enumOf(METRICS).default("Count").describe("The function recorded in each bucket's value; all five are returned per bucket."),
  metricField: s
    .enumOf(["LoanAmount", "LockedCompensation", "EstimatedCompensation"] as const)
    .default("LoanAmount")
    .describe("Money field measured (USD); loans without a value are ignored by sum/average/min/max."),
  dateField: s.enumOf(["StatusDate", "ClosingDate", "Updated"] as const).default("StatusDate").describe("Date used by Month/Quarter/Year grouping."),
});
type Arguments = Infer<typeof Arguments>;

const Bucket = s.object(
  {
    key: s.string().describe("Status name, month `YYYY-MM`, quarter `YYYY-Qn`, year `YYYY`, an officer name, or `all`."),
    keyId: s.uuid().nullable().describe("The user id, set only when grouping by LoanOfficer or ReferringAgent."),
    count: s.integer().describe("Loans in the bucket."),
    sum: s.decimal().optional().describe("Sum of metricField over the loans that have a value; omitted when none has."),
    average: s.decimal().optional().describe("Average (2 decimal places) over the loans that have a value; omitted when none has."),
    min: s.decimal().optional().describe("Smallest value; omitted when no loan has one."),
    max: s.decimal().optional().describe("Largest value; omitted when no loan has one."),
    value: s.decimal().nullable().describe("The requested metric's value (the count for Count); null when no loan has a value."),
  },
  "One bucket of `report_loans`.",
);

export const Result = s.object(
  {
    groupBy: s.string().describe("Echo of groupBy."),
    metric: s.string().describe("Echo of metricField."),
    function: s.string().describe("Echo of metric."),
    totalCount: s.integer().describe("Loans in all buckets, truncated ones included."),
    bucketCount: s.integer().describe("Buckets returned."),
    truncated: s.boolean().describe("True when a high-cardinality grouping was capped."),
    buckets: s.array(Bucket).describe("The buckets: by count (highest first) for dimensions, by period for Month, Quarter and Year."),
  },
  "`LoanAggregationResponse` (`report_loans`): loans counted and measured per bucket.",
);
type Result = Infer<typeof Result>;

/** One bucket before ordering. */
interface Group {
  key: string;
  keyId: string | null;
  count: number;
  withValue: number;
  sum: Decimal | null;
  min: Decimal | null;
  max: Decimal | null;
}

const text = (c: Value): string | null => (typeof c === "string" ? c : c instanceof Decimal ? c.toString() : c instanceof data.Timestamp ? c.text : null);
const int = (c: Value): number => (typeof c === "number" ? Math.max(c, 0) : 0);
const dec = (c: Value): Decimal | null => (c instanceof Decimal ? c : null);
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function merge(groups: Group[]): Group[] {
  const out: Group[] = [];
  // By (key, keyId), in one pass: a search of `out` per group costs a report of 40 groups
  // more than the rest of its code, interpreted.
  const seen = new Map<string, Group>();
  for (let k = 0; k < groups.length; k++) {
    const g = groups[k];
    const id = g.keyId === null ? `n:${g.key}` : `i:${g.keyId}:${g.key}`;
    const same = seen.get(id);
    if (!same) {
      seen.set(id, g);
      out.push(g);
      continue;
    }
    same.count += g.count;
    same.withValue += g.withValue;
    same.sum = same.sum && g.sum ? same.sum.plus(g.sum) : (same.sum ?? g.sum);
    same.min = [same.min, g.min].filter((x): x is Decimal => x !== null).reduce<Decimal | null>((a, b) => (a === null || b.compare(a) < 0 ? b : a), null);
    same.max = [same.max, g.max].filter((x): x is Decimal => x !== null).reduce<Decimal | null>((a, b) => (a === null || b.compare(a) > 0 ? b : a), null);
  }
  return out;
}

function metricValue(g: Group, metric: Arguments["metric"]): Decimal | null {
  if (metric === "Count") return Decimal.of(g.count);
  if (g.withValue === 0) return null;
  const sum = g.sum ?? Decimal.ZERO;
  if (metric === "Sum") return sum;
  if (metric === "Average") return sum.average(g.withValue);
  return metric === "Min" ? g.min : g.max;
}

export default defineTool({
  name: "report_loans",
  title: "Loan aggregates",
  description:
    "Point-in-time aggregate of the caller's loans on their CURRENT attributes: counts, and " +
    "sum/average/min/max of a money field, grouped by status, loan type, purpose, loan " +
    "officer, referring agent, or the month/quarter/year of a date. Use it for 'how many " +
    "loans are in each status now', 'total volume by officer', 'loans updated per month'. " +
    "Do NOT use it to count loans closed or funded in a period: loans move on from Loan " +
    "Closed/Loan Funded (to Sold, Purchased, Archived), so current status undercounts; use " +
    "report_loan_milestones for that. Call get_loan_reporting_metadata first for exact " +
    "filter and grouping values. Results are limited to what the caller's role may see; an " +
    "empty result usually means scope, and sparse closing dates mean date filters on " +
    "ClosingDate often return little. At most 100 buckets are returned (truncated=true).",
  arguments: Arguments,
  result: Result,
  run(args): Result {
    const { groupBy, metric } = args;
    if (args.filter !== undefined && (typeof args.filter !== "object" || Array.isArray(args.filter) || args.filter instanceof Decimal)) {
      throw invalidParams("filter must be an object");
    }
    const names = canReadNames();
    const m = METRIC_FIELDS[args.metricField];
    const query = new data.Query("loans").filter(args.filter as Record<string, unknown> | undefined);
    const officers = groupBy === "LoanOfficer" || groupBy === "ReferringAgent";
    const dimension = groupBy === "Status" || groupBy === "LoanType" || groupBy === "Purpose";
    const periodic = groupBy === "Month" || groupBy === "Quarter" || groupBy === "Year";
    if (dimension) {
      query.groupBy({ Status: "status", LoanType: "loanType", Purpose: "purpose" }[groupBy]);
    } else if (officers) {
      const officer = groupBy === "LoanOfficer";
      query.groupBy(officer ? "loanOfficerId" : "referringAgentId");
      if (names) query.groupBy(officer ? "loanOfficerName" : "referringAgentName");
    } else if (periodic) {
      const date = DATE_FIELDS[args.dateField];
      query.where(date, data.isNotNull()).groupBy(data.period(date, PERIODS[groupBy]));
    }
    const nkeys = query.keys.length;
    query
      .aggregate(data.count(), data.countOf(m), data.sumOf(m), data.minOf(m), data.maxOf(m))
      .orderBy(nkeys, true)
      .limit(MAX_GROUPS);
    const rows = query.run();

    let groups: Group[] = [];
    // Indexed loops, here and below: inside the component JavaScript is interpreted, and a
    // `for…of` loop or an array method's callback costs a call per element.
    for (let k = 0; k < rows.rows.length; k++) {
      const r = rows.rows[k];
      let key: string;
      let keyId: string | null = null;
      if (groupBy === "None") key = "all";
      else if (dimension) key = text(r[0]) ?? "Unknown";
      else if (officers) {
        keyId = text(r[0]);
        const name = keyId !== null && names ? text(r[1]) : null;
        key = keyId === null ? "Unassigned" : name !== null && name.trim() !== "" ? name : keyId;
      } else key = text(r[0]) ?? "";
      const g: Group = {
        key,
        keyId,
        count: int(r[nkeys]),
        withValue: int(r[nkeys + 1]),
        sum: dec(r[nkeys + 2]),
        min: dec(r[nkeys + 3]),
        max: dec(r[nkeys + 4]),
      };
      if (groupBy !== "None" || g.count > 0 || rows.rows.length === 1) groups.push(g);
    }
    groups = merge(groups);
    let totalCount: number;
    if (rows.truncated) {
      query.keys = [];
      query.orders = [];
      query.maxRows = undefined;
      const all = query.run();
      totalCount = all.rows.length ? int(all.rows[0][0]) : 0;
    } else {
      totalCount = 0;
      for (let k = 0; k < groups.length; k++) totalCount += groups[k].count;
    }
    if (periodic) groups.sort((a, b) => cmp(a.key, b.key));
    else
      groups.sort(
        (a, b) => b.count - a.count || cmp(a.key, b.key) || (a.keyId === null ? (b.keyId === null ? 0 : -1) : b.keyId === null ? 1 : cmp(a.keyId, b.keyId)),
      );
    const truncated = rows.truncated || groups.length > MAX_BUCKETS;
    groups = groups.slice(0, MAX_BUCKETS);

    const buckets = [];
    for (let k = 0; k < groups.length; k++) {
      const g = groups[k];
      const has = g.withValue > 0;
      const sum = g.sum ?? Decimal.ZERO;
      if (g.keyId !== null && !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(g.keyId)) {
        throw internal(`the host sent a user id that is not a UUID: ${g.keyId}`);
      }
      buckets.push({
        key: g.key,
        keyId: g.keyId === null ? null : g.keyId.toLowerCase(),
        count: g.count,
        sum: has ? sum : undefined,
        average: has ? sum.average(g.withValue) : undefined,
        min: has && g.min ? g.min : undefined,
        max: has && g.max ? g.max : undefined,
        value: metricValue(g, metric),
      });
    }
    return {
      groupBy,
      metric: args.metricField,
      function: metric,
      totalCount,
      bucketCount: buckets.length,
      truncated,
      buckets,
    };
  },
});
