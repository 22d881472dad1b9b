// The view of report_loans: the requested metric as bars per bucket, on a time axis when the
// buckets are months, quarters or years; the exact figures in a table below.
import { bars, startView, table, timeBars } from "@loanhost/views";

interface Bucket {
  key: string;
  count: number;
  sum?: number;
  average?: number;
  min?: number;
  max?: number;
  value: number | null;
}
interface Result {
  groupBy: string;
  metric: string;
  function: string;
  totalCount: number;
  bucketCount: number;
  truncated: boolean;
  buckets: Bucket[];
}

const TIME = new Set(["Month", "Quarter", "Year"]);

function measure(r: Result): string {
  return r.function === "Count" ? "Loans" : `${r.function} of ${r.metric}`;
}

startView<Result>({
  title: (r) => `${measure(r)} by ${r.groupBy}`,
  isEmpty: (r) => r.buckets.length === 0,
  warning: (r) =>
    r.truncated
      ? `Only the ${r.bucketCount} largest ${r.groupBy} buckets are shown; the total counts every loan.`
      : undefined,
  render: (r, ctx) => {
    const data = r.buckets
      .filter((b) => b.value !== null)
      .map((b) => ({ key: b.key, value: Number(b.value) }));
    const total = document.createElement("p");
    total.className = "headline";
    total.innerHTML = "";
    total.append(`${r.totalCount.toLocaleString("en-US")} `);
    const small = document.createElement("small");
    small.textContent = `loans in ${r.bucketCount} bucket${r.bucketCount === 1 ? "" : "s"}`;
    total.append(small);
    const chart = TIME.has(r.groupBy)
      ? timeBars(ctx, `${measure(r)} per ${r.groupBy.toLowerCase()}`, data, measure(r))
      : bars(ctx, `${measure(r)} per ${r.groupBy}`, data, measure(r));
    const rows = r.buckets.map((b) => [b.key, b.count, b.value === null ? "–" : Number(b.value)]);
    return [total, chart, table("Figures", [r.groupBy, "Loans", measure(r)], rows)];
  },
});
