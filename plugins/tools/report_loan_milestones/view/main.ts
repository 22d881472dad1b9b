// The view of report_loan_milestones: the funnel (distinct loans reaching each stage, over the
// whole window, in stage order) and the same by period as a heatmap.
import { bars, heatmap, inOrder, startView, table } from "@loanhost/views";

interface Bucket {
  period: string;
  stage: string;
  stageOrder: number;
  loanCount: number;
  loanAmount: number;
}
interface Result {
  granularity: string;
  groupBy: string;
  truncated: boolean;
  note: string;
  buckets: Bucket[];
}

startView<Result>({
  title: (r) => `${r.groupBy === "Northstar" ? "Funnel" : "Milestones"} by ${r.granularity.toLowerCase()}`,
  note: (r) => r.note,
  warning: (r) => (r.truncated ? "The report was cut at its row limit: the oldest periods are missing." : undefined),
  isEmpty: (r) => r.buckets.length === 0,
  render: (r, ctx) => {
    const stages = inOrder(r.buckets, (b) => b.stage, (b) => b.stageOrder);
    const totals = new Map<string, number>();
    for (const b of r.buckets) totals.set(b.stage, (totals.get(b.stage) ?? 0) + b.loanCount);
    return [
      bars(
        ctx,
        "Loans reaching each stage (all periods)",
        stages.map((s) => ({ key: s, value: totals.get(s) ?? 0 })),
        "Loans",
      ),
      heatmap(
        ctx,
        `Loans reaching each stage per ${r.granularity.toLowerCase()}`,
        r.buckets.map((b) => ({ period: b.period, category: b.stage, value: b.loanCount })),
        stages,
        "Loans",
      ),
      table(
        "Figures",
        ["Period", "Stage", "Loans", "Loan amount (USD)"],
        r.buckets.map((b) => [b.period, b.stage, b.loanCount, Number(b.loanAmount)]),
      ),
    ];
  },
});
