//! `report_loans`: point-in-time aggregates over the loan snapshot (current attributes),
//! grouped by a dimension and measured by a metric (DESIGN.md §7.1). Grouping, counting and
//! summing run in the database through the `data` capability; this plugin labels, orders and
//! truncates the buckets.

use loanhost_guest::data::{
    self, Aggregate, Condition, Key, Order, PeriodUnit, Predicate, Query, Value as Cell,
};
use loanhost_guest::models::reporting::{LoanAggregationBucket, LoanAggregationResponse};
use loanhost_guest::models::{self, Uuid};
use loanhost_guest::{caller, parse_arguments, Decimal, Description, Tool, ToolError};
use serde::Deserialize;
use serde_json::{json, Value};

/// Buckets returned at most.
const MAX_BUCKETS: usize = 100;
/// Groups read from the host at most (its own cap).
const MAX_GROUPS: u32 = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
enum GroupBy {
    #[default]
    None,
    Status,
    LoanType,
    Purpose,
    LoanOfficer,
    ReferringAgent,
    Month,
    Quarter,
    Year,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
enum Metric {
    #[default]
    Count,
    Sum,
    Average,
    Min,
    Max,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
enum MetricField {
    #[default]
    LoanAmount,
    LockedCompensation,
    EstimatedCompensation,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
enum DateField {
    #[default]
    StatusDate,
    ClosingDate,
    Updated,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Args {
    #[serde(default)]
    filter: Option<Value>,
    #[serde(default)]
    group_by: Option<GroupBy>,
    #[serde(default)]
    metric: Option<Metric>,
    #[serde(default)]
    metric_field: Option<MetricField>,
    #[serde(default)]
    date_field: Option<DateField>,
}

fn name_of<T: std::fmt::Debug>(v: T) -> String {
    format!("{v:?}")
}

impl MetricField {
    fn field(self) -> &'static str {
        match self {
            MetricField::LoanAmount => "loanAmount",
            MetricField::LockedCompensation => "lockedCompensation",
            MetricField::EstimatedCompensation => "estimatedCompensation",
        }
    }
}

impl DateField {
    fn field(self) -> &'static str {
        match self {
            DateField::StatusDate => "statusDate",
            DateField::ClosingDate => "estimatedClosingDate",
            DateField::Updated => "updated",
        }
    }
}

/// One bucket before ordering.
struct Bucket {
    key: String,
    key_id: Option<String>,
    count: u64,
    with_value: u64,
    sum: Option<Decimal>,
    min: Option<Decimal>,
    max: Option<Decimal>,
}

fn text(c: &Cell) -> Option<String> {
    match c {
        Cell::Text(s) | Cell::Decimal(s) | Cell::Timestamp(s) => Some(s.clone()),
        _ => None,
    }
}

fn int(c: &Cell) -> u64 {
    match c {
        Cell::Integer(i) => (*i).max(0) as u64,
        _ => 0,
    }
}

fn decimal(c: &Cell) -> Option<Decimal> {
    match c {
        Cell::Decimal(s) => Decimal::parse(s),
        _ => None,
    }
}

fn metric_value(b: &Bucket, metric: Metric) -> Option<models::Decimal> {
    let has = b.with_value > 0;
    match metric {
        Metric::Count => Some(b.count.into()),
        Metric::Sum if has => Some(b.sum.unwrap_or_default().into()),
        Metric::Average if has => Some(b.sum.unwrap_or_default().average(b.with_value).into()),
        Metric::Min if has => b.min.map(Into::into),
        Metric::Max if has => b.max.map(Into::into),
        _ => None,
    }
}

struct ReportLoans;

impl Tool for ReportLoans {
    fn describe() -> Description {
        Description::new(
            "report_loans",
            "Loan aggregates",
            "Point-in-time aggregate of the caller's loans on their CURRENT attributes: counts, and \
             sum/average/min/max of a money field, grouped by status, loan type, purpose, loan \
             officer, referring agent, or the month/quarter/year of a date. Use it for 'how many \
             loans are in each status now', 'total volume by officer', 'loans updated per month'. \
             Do NOT use it to count loans closed or funded in a period: loans move on from Loan \
             Closed/Loan Funded (to Sold, Purchased, Archived), so current status undercounts; use \
             report_loan_milestones for that. Call get_loan_reporting_metadata first for exact \
             filter and grouping values. Results are limited to what the caller's role may see; an \
             empty result usually means scope, and sparse closing dates mean date filters on \
             ClosingDate often return little. At most 100 buckets are returned (truncated=true).",
        )
        .input_schema(input_schema())
        .output_record::<LoanAggregationResponse>()
    }

    fn call(arguments: Value) -> Result<Value, ToolError> {
        let args: Args = parse_arguments(arguments)?;
        let group_by = args.group_by.unwrap_or_default();
        let metric = args.metric.unwrap_or_default();
        let metric_field = args.metric_field.unwrap_or_default();
        let date_field = args.date_field.unwrap_or_default();
        let filter = match args.filter {
            None | Some(Value::Null) => None,
            Some(f @ Value::Object(_)) => Some(f.to_string()),
            Some(_) => return Err(ToolError::invalid_params("filter must be an object")),
        };
        let names = caller::can_read_names();
        let m = metric_field.field();

        let mut predicates = Vec::new();
        let keys: Vec<Key> = match group_by {
            GroupBy::None => vec![],
            GroupBy::Status => vec![Key::Field("status".into())],
            GroupBy::LoanType => vec![Key::Field("loanType".into())],
            GroupBy::Purpose => vec![Key::Field("purpose".into())],
            GroupBy::LoanOfficer | GroupBy::ReferringAgent => {
                let (id, name) = if group_by == GroupBy::LoanOfficer {
                    ("loanOfficerId", "loanOfficerName")
                } else {
                    ("referringAgentId", "referringAgentName")
                };
                let mut k = vec![Key::Field(id.into())];
                if names {
                    k.push(Key::Field(name.into()));
                }
                k
            }
            GroupBy::Month | GroupBy::Quarter | GroupBy::Year => {
                let unit = match group_by {
                    GroupBy::Month => PeriodUnit::Month,
                    GroupBy::Quarter => PeriodUnit::Quarter,
                    _ => PeriodUnit::Year,
                };
                predicates.push(Predicate {
                    field: date_field.field().into(),
                    condition: Condition::IsNotNull,
                });
                vec![Key::Period((date_field.field().into(), unit))]
            }
        };
        let nkeys = keys.len();
        let q = Query {
            dataset: "loans".into(),
            filter,
            predicates,
            group_by: keys,
            distinct_on: None,
            aggregates: vec![
                Aggregate::Count,
                Aggregate::CountOf(m.into()),
                Aggregate::Sum(m.into()),
                Aggregate::Min(m.into()),
                Aggregate::Max(m.into()),
            ],
            order_by: vec![Order {
                column: nkeys as u32,
                descending: true,
            }],
            limit: Some(MAX_GROUPS),
        };
        let rows = data::run(&q)?;
        let mut buckets: Vec<Bucket> = rows
            .rows
            .iter()
            .map(|r| {
                let (key, key_id) = match group_by {
                    GroupBy::None => ("all".to_string(), None),
                    GroupBy::Status | GroupBy::LoanType | GroupBy::Purpose => {
                        (text(&r[0]).unwrap_or_else(|| "Unknown".into()), None)
                    }
                    GroupBy::LoanOfficer | GroupBy::ReferringAgent => match text(&r[0]) {
                        None => ("Unassigned".to_string(), None),
                        Some(id) => {
                            let name = if names {
                                text(&r[1]).filter(|n| !n.trim().is_empty())
                            } else {
                                None
                            };
                            (name.unwrap_or_else(|| id.clone()), Some(id))
                        }
                    },
                    _ => (text(&r[0]).unwrap_or_default(), None),
                };
                let a = &r[nkeys..];
                Bucket {
                    key,
                    key_id,
                    count: int(&a[0]),
                    with_value: int(&a[1]),
                    sum: decimal(&a[2]),
                    min: decimal(&a[3]),
                    max: decimal(&a[4]),
                }
            })
            .filter(|b| group_by != GroupBy::None || b.count > 0 || rows.rows.len() == 1)
            .collect();
        // "Unassigned" officers / referrers may come from several null-id rows only when names
        // are grouped too; merge buckets with the same (key, keyId).
        buckets = merge(buckets);
        let total_count: u64 = if rows.truncated {
            let all = Query {
                group_by: vec![],
                order_by: vec![],
                limit: None,
                ..q
            };
            let t = data::run(&all)?;
            t.rows.first().map(|r| int(&r[0])).unwrap_or(0)
        } else {
            buckets.iter().map(|b| b.count).sum()
        };
        match group_by {
            GroupBy::Month | GroupBy::Quarter | GroupBy::Year => {
                buckets.sort_by(|a, b| a.key.cmp(&b.key))
            }
            _ => buckets.sort_by(|a, b| {
                b.count
                    .cmp(&a.count)
                    .then_with(|| a.key.cmp(&b.key))
                    .then_with(|| a.key_id.cmp(&b.key_id))
            }),
        }
        let truncated = rows.truncated || buckets.len() > MAX_BUCKETS;
        buckets.truncate(MAX_BUCKETS);
        let out = buckets
            .iter()
            .map(|b| {
                let has = b.with_value > 0;
                let sum = b.sum.unwrap_or_default();
                let key_id = match &b.key_id {
                    None => None,
                    Some(id) => Some(id.parse::<Uuid>().map_err(|_| {
                        ToolError::internal(format!(
                            "the host sent a user id that is not a UUID: {id}"
                        ))
                    })?),
                };
                Ok(LoanAggregationBucket {
                    key: b.key.clone(),
                    key_id,
                    count: b.count,
                    sum: has.then(|| sum.into()),
                    average: has.then(|| sum.average(b.with_value).into()),
                    min: b.min.filter(|_| has).map(Into::into),
                    max: b.max.filter(|_| has).map(Into::into),
                    value: metric_value(b, metric),
                })
            })
            .collect::<Result<Vec<_>, ToolError>>()?;
        loanhost_guest::result(&LoanAggregationResponse {
            group_by: name_of(group_by),
            metric: name_of(metric_field),
            function: name_of(metric),
            total_count,
            bucket_count: out.len() as u64,
            truncated,
            buckets: out,
        })
    }
}

/// Merges buckets with the same (key, keyId), keeping the first one's place: one pass with an
/// index, as an organisation's officers are thousands of buckets.
fn merge(buckets: Vec<Bucket>) -> Vec<Bucket> {
    let mut out: Vec<Bucket> = Vec::with_capacity(buckets.len());
    let mut seen: std::collections::HashMap<(String, Option<String>), usize> =
        std::collections::HashMap::with_capacity(buckets.len());
    for b in buckets {
        match seen.get(&(b.key.clone(), b.key_id.clone())) {
            Some(&i) => {
                let o = &mut out[i];
                o.count += b.count;
                o.with_value += b.with_value;
                o.sum = match (o.sum, b.sum) {
                    (Some(x), Some(y)) => Some(x + y),
                    (x, y) => x.or(y),
                };
                o.min = [o.min, b.min].into_iter().flatten().min();
                o.max = [o.max, b.max].into_iter().flatten().max();
            }
            None => {
                seen.insert((b.key.clone(), b.key_id.clone()), out.len());
                out.push(b);
            }
        }
    }
    out
}

fn input_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "filter": loanhost_guest::schema::loan_filter(),
            "groupBy": {"type": "string", "enum": ["None", "Status", "LoanType", "Purpose", "LoanOfficer", "ReferringAgent", "Month", "Quarter", "Year"], "default": "None",
                        "description": "Dimension to group by; None gives a single total. Month/Quarter/Year bucket on dateField and drop loans without that date."},
            "metric": {"type": "string", "enum": ["Count", "Sum", "Average", "Min", "Max"], "default": "Count",
                       "description": "The function recorded in each bucket's value; all five are returned per bucket."},
            "metricField": {"type": "string", "enum": ["LoanAmount", "LockedCompensation", "EstimatedCompensation"], "default": "LoanAmount",
                            "description": "Money field measured (USD); loans without a value are ignored by sum/average/min/max."},
            "dateField": {"type": "string", "enum": ["StatusDate", "ClosingDate", "Updated"], "default": "StatusDate",
                          "description": "Date used by Month/Quarter/Year grouping."}
        }
    })
}

loanhost_guest::export_tool!(ReportLoans);
