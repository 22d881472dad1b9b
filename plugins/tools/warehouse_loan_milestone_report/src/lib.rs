//! `warehouse_loan_milestone_report`: distinct loans per (period, warehouse milestone) in an
//! inclusive date range, from the Data Warehouse loan table (docs/design.md §7.4). Org-wide: no
//! caller scope applies; only Admin, Processor and ConciergeKey may call it.

use loanhost_guest::data::{self, Aggregate, Condition, Key, Predicate, Query, Value as Cell};
use loanhost_guest::dates::{date_arg, Bucket};
use loanhost_guest::models::reporting::{DwLoanMilestoneReportResponse, DwMilestoneRow};
use loanhost_guest::{parse_arguments, Description, Tool, ToolError};
use serde::Deserialize;
use serde_json::{json, Value};

/// Warehouse milestones in order, with their funnel stage.
const MILESTONES: &[(&str, &str)] = &[
    ("Opened", "1. Opened"),
    ("Submitted", "Other"),
    ("Underwriting", "Other"),
    ("Approved", "4. Approved"),
    ("Clear to Close", "4. Approved"),
    ("Docs", "Other"),
    ("Funded/Closed", "5. Closed & Funded"),
    ("Canceled", "Other"),
    ("Denied", "Other"),
    ("Withdrawn", "Other"),
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Args {
    #[serde(default)]
    from_date: Option<String>,
    #[serde(default)]
    to_date: Option<String>,
    #[serde(default)]
    bucket: Option<Bucket>,
}

fn stage_of(milestone: &str) -> (&'static str, u32) {
    let stage = MILESTONES
        .iter()
        .find(|(m, _)| *m == milestone)
        .map(|(_, s)| *s)
        .unwrap_or("Other");
    let order = match stage {
        "1. Opened" => 1,
        "2. Pre-Approved" => 2,
        "3. Rate Locked" => 3,
        "4. Approved" => 4,
        "5. Closed & Funded" => 5,
        _ => 6,
    };
    (stage, order)
}

struct Warehouse;

impl Tool for Warehouse {
    fn describe() -> Description {
        Description::new(
            "warehouse_loan_milestone_report",
            "Warehouse loan milestones",
            "Org-wide (not limited to the caller's loans) count of distinct loans reaching each Data \
             Warehouse milestone (Opened, Submitted, Underwriting, Approved, Clear to Close, Docs, \
             Funded/Closed, and the terminal Canceled, Denied, Withdrawn), per month or ISO week, \
             between fromDate and toDate inclusive, each with its funnel stage. For Admin, \
             Processor and ConciergeKey only. The get_loan_reporting_metadata vocabulary does not \
             cover this tool.",
        )
        .input_schema(json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["fromDate", "toDate"],
            "properties": {
                "fromDate": {"type": "string", "format": "date", "description": "YYYY-MM-DD, inclusive."},
                "toDate": {"type": "string", "format": "date", "description": "YYYY-MM-DD, inclusive; must not be before fromDate."},
                "bucket": {"type": "string", "enum": ["Month", "Week"], "default": "Month", "description": "Month (period YYYY-MM) or Week (YYYY-Wnn, ISO week)."}
            }
        }))
        .output_record::<DwLoanMilestoneReportResponse>()
    }

    fn call(arguments: Value) -> Result<Value, ToolError> {
        let args: Args = parse_arguments(arguments)?;
        let from = date_arg("fromDate", args.from_date.as_deref())?
            .ok_or_else(|| ToolError::invalid_params("fromDate is required (YYYY-MM-DD)"))?;
        let to = date_arg("toDate", args.to_date.as_deref())?
            .ok_or_else(|| ToolError::invalid_params("toDate is required (YYYY-MM-DD)"))?;
        if to < from {
            return Err(ToolError::bad_request(format!(
                "toDate {to} is before fromDate {from}"
            )));
        }
        let bucket = args.bucket.unwrap_or_default();
        let rows = data::run(&Query {
            dataset: "dw-loan-milestones".into(),
            filter: None,
            predicates: vec![
                Predicate {
                    field: "occurredAt".into(),
                    condition: Condition::Ge(Cell::Timestamp(from.midnight())),
                },
                Predicate {
                    field: "occurredAt".into(),
                    condition: Condition::Lt(Cell::Timestamp(to.plus_days(1).midnight())),
                },
            ],
            group_by: vec![
                Key::Period(("occurredAt".into(), bucket.unit())),
                Key::Field("milestone".into()),
            ],
            distinct_on: None,
            aggregates: vec![Aggregate::CountDistinct("loanId".into())],
            order_by: vec![],
            limit: None,
        })?;
        let mut out: Vec<(String, usize, String, u64)> = rows
            .rows
            .iter()
            .filter_map(|r| match (&r[0], &r[1], &r[2]) {
                (Cell::Text(p), Cell::Text(m), Cell::Integer(n)) if *n > 0 => {
                    let pos = MILESTONES.iter().position(|(x, _)| x == m).unwrap_or(999);
                    Some((p.clone(), pos, m.clone(), *n as u64))
                }
                _ => None,
            })
            .collect();
        out.sort();
        let rows: Vec<DwMilestoneRow> = out
            .into_iter()
            .map(|(period, _, milestone, loan_count)| {
                let (stage, stage_order) = stage_of(&milestone);
                DwMilestoneRow {
                    period,
                    milestone,
                    stage: stage.to_string(),
                    stage_order,
                    loan_count,
                }
            })
            .collect();
        loanhost_guest::result(&DwLoanMilestoneReportResponse {
            bucket: format!("{bucket:?}"),
            from_date: from.to_string(),
            to_date: to.to_string(),
            row_count: rows.len() as u64,
            rows,
        })
    }
}

loanhost_guest::export_tool!(Warehouse);
