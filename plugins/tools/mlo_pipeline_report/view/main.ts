// The view of mlo_pipeline_report: recruiting cohorts (the period deals were created) by the
// stage they are at now, as a heatmap in stage order.
import { heatmap, inOrder, startView, table } from "@loanhost/views";

interface Row {
  period: string;
  stage: string;
  displayOrder: number;
  isTerminal: boolean;
  entryCount: number;
}
interface Result {
  bucket: string;
  rowCount: number;
  rows: Row[];
}

startView<Result>({
  title: (r) => `Recruiting cohorts by ${r.bucket.toLowerCase()} and current stage`,
  isEmpty: (r) => r.rows.length === 0,
  render: (r, ctx) => {
    const stages = inOrder(r.rows, (row) => row.stage, (row) => row.displayOrder);
    return [
      heatmap(
        ctx,
        `Deals created per ${r.bucket.toLowerCase()}, by stage now`,
        r.rows.map((row) => ({ period: row.period, category: row.stage, value: row.entryCount })),
        stages,
        "Deals",
      ),
      table(
        "Figures",
        ["Cohort", "Stage", "Deals"],
        r.rows.map((row) => [row.period, row.stage, row.entryCount]),
      ),
    ];
  },
});
