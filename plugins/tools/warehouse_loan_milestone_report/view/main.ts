// The view of warehouse_loan_milestone_report: loans reaching each warehouse milestone per
// period, as a heatmap with milestones in funnel order.
import { heatmap, inOrder, startView, table } from "@loanhost/views";

interface Row {
  period: string;
  milestone: string;
  stage: string;
  stageOrder: number;
  loanCount: number;
}
interface Result {
  bucket: string;
  fromDate: string;
  toDate: string;
  rowCount: number;
  rows: Row[];
}

startView<Result>({
  title: (r) => `Warehouse milestones by ${r.bucket.toLowerCase()}, ${r.fromDate} to ${r.toDate}`,
  isEmpty: (r) => r.rows.length === 0,
  render: (r, ctx) => {
    const milestones = inOrder(r.rows, (row) => row.milestone, (row) => row.stageOrder);
    return [
      heatmap(
        ctx,
        `Loans reaching each milestone per ${r.bucket.toLowerCase()}`,
        r.rows.map((row) => ({ period: row.period, category: row.milestone, value: row.loanCount })),
        milestones,
        "Loans",
      ),
      table(
        "Figures",
        ["Period", "Milestone", "Stage", "Loans"],
        r.rows.map((row) => [row.period, row.milestone, row.stage, row.loanCount]),
      ),
    ];
  },
});
