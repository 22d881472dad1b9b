// The view of loan_pipeline_report: loans per macro stage in pipeline order (terminal stages
// muted), and the monthly trend of loans by the month their status was set.
import { bars, startView, table, trendLine } from "@loanhost/views";

interface Stage {
  stage: string;
  order: number;
  isTerminal: boolean;
  count: number;
  totalLoanAmount: number;
  statuses: string[];
}
interface Point {
  period: string;
  count: number;
  totalLoanAmount: number;
}
interface Result {
  currentPipelineByStage: Stage[];
  monthlyTrend: Point[];
  activeLoanCount: number;
  note: string;
}

startView<Result>({
  title: "Pipeline by stage",
  note: (r) => r.note,
  isEmpty: (r) => r.currentPipelineByStage.every((s) => s.count === 0) && r.monthlyTrend.length === 0,
  render: (r, ctx) => {
    const headline = document.createElement("p");
    headline.className = "headline";
    headline.append(`${r.activeLoanCount.toLocaleString("en-US")} `);
    const small = document.createElement("small");
    small.textContent = "active loans";
    headline.append(small);
    const stages = [...r.currentPipelineByStage].sort((a, b) => a.order - b.order);
    return [
      headline,
      bars(
        ctx,
        "Loans now in each stage",
        stages.map((s) => ({ key: s.stage, value: s.count, muted: s.isTerminal })),
        "Loans",
      ),
      table(
        "Stages",
        ["Stage", "Loans", "Loan amount (USD)", "Statuses"],
        stages.map((s) => [s.stage, s.count, Number(s.totalLoanAmount), s.statuses.join(", ")]),
      ),
      ...(r.monthlyTrend.length
        ? [
            trendLine(
              ctx,
              "Loans by the month their status was set",
              r.monthlyTrend.map((p) => ({ key: p.period, value: p.count })),
              "Loans",
            ),
            table(
              "Monthly trend",
              ["Month", "Loans", "Loan amount (USD)"],
              r.monthlyTrend.map((p) => [p.period, p.count, Number(p.totalLoanAmount)]),
            ),
          ]
        : []),
    ];
  },
});
