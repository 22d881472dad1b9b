//! `loan_pipeline_report`: where the caller's loans sit now, by macro stage (docs/design.md §7.2),
//! plus activity by status date per month over a look-back window ending with this month.
//! The status→stage mapping runs in the database as a label map.

use loanhost_guest::data::{
    self, Aggregate, Condition, Key, LabelMap, PeriodUnit, Predicate, Query, Value as Cell,
};
use loanhost_guest::dates::{self, Date};
use loanhost_guest::models::reporting::{
    LoanPipelineReportResponse, MonthlyTrendPoint, PipelineStage,
};
use loanhost_guest::{parse_arguments, Decimal, Description, Tool, ToolError};
use serde::Deserialize;
use serde_json::{json, Value};

/// (order, stage, terminal, statuses): the macro stages, provisional per the spec.
const STAGES: &[(u32, &str, bool, &[&str])] = &[
    (
        1,
        "Lead",
        false,
        &[
            "App Started",
            "Loan Officer Review",
            "Loan Prequal",
            "Loan Other",
        ],
    ),
    (
        2,
        "Application",
        false,
        &["Loan Open", "Loan Preapproval", "Loan Counter Offer"],
    ),
    (
        3,
        "Processing",
        false,
        &[
            "Loan Submitted",
            "Loan Pre-Processing",
            "Loan Processing",
            "Loan Document Check",
            "Loan Document Check Failed",
            "Loan On Hold",
            "Loan Suspended",
        ],
    ),
    (
        4,
        "Underwriting",
        false,
        &[
            "Loan Pre-Underwriting",
            "Loan Underwriting",
            "Loan Condition Review",
            "Loan Final Underwriting",
        ],
    ),
    (5, "Approved", false, &["Loan Approved"]),
    (
        6,
        "Clear to Close",
        false,
        &["Loan Clear To Close", "Loan Pre-Doc QC"],
    ),
    (
        7,
        "Docs",
        false,
        &[
            "Loan Docs Ordered",
            "Loan Docs Drawn",
            "Loan Docs",
            "Loan Docs Back",
            "Loan Final Docs",
            "Loan Funding Conditions",
            "Loan Closed",
        ],
    ),
    (8, "Funded", false, &["Loan Funded", "Loan Recorded"]),
    (
        9,
        "Post-Closing",
        true,
        &[
            "Loan Investor Conditions",
            "Loan Investor Conditions Sent",
            "Loan Ready For Sale",
            "Loan Submitted For Purchase Review",
            "Loan In Purchase Review",
            "Loan Pre-Purchase Conditions",
            "Loan Submitted For Final Purchase Review",
            "Loan In Final Purchase Review",
            "Loan Clear To Purchase",
            "Loan Sold",
            "Loan Purchased",
            "Loan Archived",
        ],
    ),
    (
        10,
        "Inactive",
        true,
        &["Loan Canceled", "Loan Denied", "Loan Withdrawn"],
    ),
];
const UNMAPPED: &str = "Unmapped";

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Args {
    #[serde(default)]
    filter: Option<Value>,
    #[serde(default)]
    lookback_months: Option<i64>,
}

fn int(c: &Cell) -> u64 {
    match c {
        Cell::Integer(i) => (*i).max(0) as u64,
        _ => 0,
    }
}

fn money(c: &Cell) -> Decimal {
    match c {
        Cell::Decimal(s) => Decimal::parse(s).unwrap_or_default(),
        _ => Decimal::ZERO,
    }
}

fn text(c: &Cell) -> String {
    match c {
        Cell::Text(s) => s.clone(),
        _ => String::new(),
    }
}

struct Pipeline;

impl Tool for Pipeline {
    fn describe() -> Description {
        Description::new(
            "loan_pipeline_report",
            "Loan pipeline",
            "Where the caller's loans sit NOW, by macro pipeline stage (Lead, Application, \
             Processing, Underwriting, Approved, Clear to Close, Docs, Funded, then the terminal \
             Post-Closing and Inactive), each with its count, total loan amount and the raw statuses \
             it rolls up; plus monthly activity by status date over the last lookbackMonths months \
             (this month included). Current-state only: to count loans closed or funded in a \
             period use report_loan_milestones. An empty result usually means the caller's scope.",
        )
        .input_schema(json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "filter": loanhost_guest::schema::loan_filter(),
                "lookbackMonths": {"type": "integer", "default": 3, "description": "Months of monthly trend ending with the current month; below 1 becomes 3, above 36 becomes 36."}
            }
        }))
        .output_record::<LoanPipelineReportResponse>()
    }

    fn call(arguments: Value) -> Result<Value, ToolError> {
        let args: Args = parse_arguments(arguments)?;
        let filter = match args.filter {
            None | Some(Value::Null) => None,
            Some(f @ Value::Object(_)) => Some(f.to_string()),
            Some(_) => return Err(ToolError::invalid_params("filter must be an object")),
        };
        let months = match args.lookback_months {
            None => 3,
            Some(n) if n < 1 => 3,
            Some(n) => n.min(36),
        } as i32;

        // Current pipeline: loans by mapped stage.
        let entries: Vec<(String, String)> = STAGES
            .iter()
            .flat_map(|(_, stage, _, statuses)| {
                statuses
                    .iter()
                    .map(move |s| (s.to_string(), stage.to_string()))
            })
            .collect();
        let by_stage = data::run(&Query {
            dataset: "loans".into(),
            filter: filter.clone(),
            predicates: vec![],
            group_by: vec![Key::Mapped(LabelMap {
                field: "status".into(),
                entries,
                otherwise: Some(UNMAPPED.into()),
            })],
            distinct_on: None,
            aggregates: vec![Aggregate::Count, Aggregate::Sum("loanAmount".into())],
            order_by: vec![],
            limit: None,
        })?;
        let found = |stage: &str| {
            by_stage
                .rows
                .iter()
                .find(|r| text(&r[0]) == stage)
                .map(|r| (int(&r[1]), money(&r[2])))
        };
        let mut rows: Vec<PipelineStage> = Vec::new();
        let mut active = 0;
        for (order, stage, terminal, statuses) in STAGES {
            let (count, amount) = found(stage).unwrap_or((0, Decimal::ZERO));
            if !terminal {
                active += count;
            }
            rows.push(PipelineStage {
                stage: stage.to_string(),
                order: *order,
                is_terminal: *terminal,
                count,
                total_loan_amount: amount.into(),
                statuses: statuses.iter().map(|s| s.to_string()).collect(),
            });
        }
        if let Some((count, amount)) = found(UNMAPPED) {
            active += count;
            rows.push(PipelineStage {
                stage: UNMAPPED.into(),
                order: 99,
                is_terminal: false,
                count,
                total_loan_amount: amount.into(),
                statuses: vec![],
            });
        }

        // Monthly trend by status date over the window ending with this month.
        let this_month = dates::today().month_start();
        let first: Date = this_month.plus_months(-(months - 1));
        let after: Date = this_month.plus_months(1);
        let trend = data::run(&Query {
            dataset: "loans".into(),
            filter,
            predicates: vec![
                Predicate {
                    field: "statusDate".into(),
                    condition: Condition::Ge(Cell::Timestamp(first.midnight())),
                },
                Predicate {
                    field: "statusDate".into(),
                    condition: Condition::Lt(Cell::Timestamp(after.midnight())),
                },
            ],
            group_by: vec![Key::Period(("statusDate".into(), PeriodUnit::Month))],
            distinct_on: None,
            aggregates: vec![Aggregate::Count, Aggregate::Sum("loanAmount".into())],
            order_by: vec![],
            limit: None,
        })?;
        let monthly: Vec<MonthlyTrendPoint> = (0..months)
            .map(|i| {
                let label = first.plus_months(i).month_label();
                let (count, amount) = trend
                    .rows
                    .iter()
                    .find(|r| text(&r[0]) == label)
                    .map(|r| (int(&r[1]), money(&r[2])))
                    .unwrap_or((0, Decimal::ZERO));
                MonthlyTrendPoint {
                    period: label,
                    count,
                    total_loan_amount: amount.into(),
                }
            })
            .collect();
        loanhost_guest::result(&LoanPipelineReportResponse {
            current_pipeline_by_stage: rows,
            monthly_trend: monthly,
            active_loan_count: active,
            note: format!(
                "Pipeline by current status; terminal stages are Post-Closing and Inactive. Monthly trend counts loans by the date their current status was set, over the {months} month(s) ending {}. Loans move on after closing or funding, so use report_loan_milestones to count loans closed or funded in a period.",
                this_month.month_label()
            ),
        })
    }
}

loanhost_guest::export_tool!(Pipeline);
