//! `mlo_pipeline_report`: MLO recruiting cohorts (docs/design.md §7.5): deals by creation period
//! and their current stage, from the Data Warehouse deal table. Org-wide; concerns recruiting
//! and licensing candidates, not loans.

use loanhost_guest::data::{self, Aggregate, Condition, Key, Predicate, Query, Value as Cell};
use loanhost_guest::dates::{self, date_arg, Bucket};
use loanhost_guest::models::reporting::{MloPipelineReportResponse, MloPipelineRow};
use loanhost_guest::{parse_arguments, Description, Tool, ToolError};
use serde::Deserialize;
use serde_json::{json, Value};

/// The candidate stages with their display order; any other stage is 999.
const STAGES: &[(&str, u32)] = &[
    ("1. Lead", 1),
    ("2. Contacted", 2),
    ("3. Interview Scheduled", 3),
    ("4. Interviewed", 4),
    ("5. Offer Extended", 5),
    ("6. Offer Accepted", 6),
    ("7. Pre-Licensing Course", 7),
    ("8. Exam Scheduled", 8),
    ("9. Exam Passed", 9),
    ("10. License Application Submitted", 10),
    ("11. Background Check", 11),
    ("12. License Approved", 12),
    ("13. NMLS Sponsorship", 13),
    ("14. Onboarding", 14),
    ("15. Systems Setup", 15),
    ("Fully Onboarded", 16),
    ("Closed Won", 17),
    ("Closed Lost", 18),
    ("License Not Approved", 19),
    ("Exam Failed", 20),
    ("App Cancelled", 21),
];
const TERMINAL: &[&str] = &[
    "Fully Onboarded",
    "License Not Approved",
    "Exam Failed",
    "App Cancelled",
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

struct MloPipeline;

impl Tool for MloPipeline {
    fn describe() -> Description {
        Description::new(
            "mlo_pipeline_report",
            "MLO recruiting pipeline",
            "Org-wide MLO recruiting and licensing pipeline (candidates, not loans): for each deal \
             creation period (a cohort, by month or ISO week), how many deals created then are now \
             at each candidate stage (1. Lead … 15. Systems Setup, Fully Onboarded, Closed Won, \
             Closed Lost, License Not Approved, Exam Failed, App Cancelled). A row is a \
             cohort-to-date figure, not a transition count. For Admin, Processor and ConciergeKey \
             only. Dates are optional: no fromDate means all history, no toDate means up to today.",
        )
        .input_schema(json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "fromDate": {"type": "string", "format": "date", "description": "YYYY-MM-DD, inclusive; omitted means all history."},
                "toDate": {"type": "string", "format": "date", "description": "YYYY-MM-DD, inclusive; omitted means up to today."},
                "bucket": {"type": "string", "enum": ["Month", "Week"], "default": "Month", "description": "Month (YYYY-MM) or Week (YYYY-Wnn, ISO week)."}
            }
        }))
        .output_record::<MloPipelineReportResponse>()
    }

    fn call(arguments: Value) -> Result<Value, ToolError> {
        loanhost_guest::result(&answer(arguments)?)
    }

    fn call_text(arguments: Value) -> Result<String, ToolError> {
        loanhost_guest::result_text(&answer(arguments)?)
    }
}

/// The tool's answer as its record.
fn answer(arguments: Value) -> Result<MloPipelineReportResponse, ToolError> {
    let args: Args = parse_arguments(arguments)?;
    let from = date_arg("fromDate", args.from_date.as_deref())?;
    let to = date_arg("toDate", args.to_date.as_deref())?.unwrap_or_else(dates::today);
    if let Some(f) = from {
        if to < f {
            return Err(ToolError::bad_request(format!(
                "toDate {to} is before fromDate {f}"
            )));
        }
    }
    let bucket = args.bucket.unwrap_or_default();
    let mut predicates = vec![Predicate {
        field: "createdAt".into(),
        condition: Condition::Lt(Cell::Timestamp(to.plus_days(1).midnight())),
    }];
    if let Some(f) = from {
        predicates.push(Predicate {
            field: "createdAt".into(),
            condition: Condition::Ge(Cell::Timestamp(f.midnight())),
        });
    }
    let rows = data::run(&Query {
        dataset: "dw-deals".into(),
        filter: None,
        predicates,
        group_by: vec![
            Key::Period(("createdAt".into(), bucket.unit())),
            Key::Field("stage".into()),
        ],
        distinct_on: None,
        aggregates: vec![Aggregate::CountDistinct("id".into())],
        order_by: vec![],
        limit: None,
    })?;
    // The rows' texts are moved, not copied: all history by week is thousands of rows.
    let mut out: Vec<(String, u32, String, u64)> = rows
        .rows
        .into_iter()
        .filter_map(|r| {
            let mut r = r.into_iter();
            match (r.next()?, r.next()?, r.next()?) {
                (Cell::Text(p), Cell::Text(s), Cell::Integer(n)) if n > 0 => {
                    let order = STAGES
                        .iter()
                        .find(|(x, _)| *x == s)
                        .map(|(_, o)| *o)
                        .unwrap_or(999);
                    Some((p, order, s, n as u64))
                }
                _ => None,
            }
        })
        .collect();
    out.sort_unstable();
    let rows: Vec<MloPipelineRow> = out
        .into_iter()
        .map(
            |(period, display_order, stage, entry_count)| MloPipelineRow {
                period,
                display_order,
                is_terminal: TERMINAL.contains(&stage.as_str()),
                stage,
                entry_count,
            },
        )
        .collect();
    Ok(MloPipelineReportResponse {
        bucket: format!("{bucket:?}"),
        row_count: rows.len() as u64,
        rows,
    })
}

loanhost_guest::export_tool!(MloPipeline);
