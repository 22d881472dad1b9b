//! `report_loans`: point-in-time aggregates over the loan snapshot (current attributes),
//! grouped by a dimension and measured by a metric (docs/design.md §7.1). Grouping, counting and
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

mod merge;
use merge::merge;

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

/// One bucket before ordering: its keys moved out of the host's row (an organisation's
/// officers or referrers are thousands of rows, of which at most [`MAX_BUCKETS`] are answered),
/// its money left as decimal text until a merge or the answer reads it.
struct Bucket {
    key: String,
    key_id: Option<String>,
    count: u64,
    with_value: u64,
    sum: Option<String>,
    min: Option<String>,
    max: Option<String>,
    /// Whether another group's bucket may have the same (key, keyId): see [`merge`].
    twin: bool,
}

/// The cell's text, moved out of the row (the row keeps a null).
fn take_text(c: &mut Cell) -> Option<String> {
    match std::mem::replace(c, Cell::Null) {
        Cell::Text(s) | Cell::Decimal(s) | Cell::Timestamp(s) => Some(s),
        _ => None,
    }
}

fn int(c: &Cell) -> u64 {
    match c {
        Cell::Integer(i) => (*i).max(0) as u64,
        _ => 0,
    }
}

/// A decimal cell's text, moved out of the row, parsed when read.
fn take_money(c: &mut Cell) -> Option<String> {
    match std::mem::replace(c, Cell::Null) {
        Cell::Decimal(s) => Some(s),
        _ => None,
    }
}

/// The bucket's money values, read once.
struct Values {
    sum: Option<Decimal>,
    min: Option<Decimal>,
    max: Option<Decimal>,
}

impl Bucket {
    fn values(&self) -> Values {
        Values {
            sum: self.sum.as_deref().and_then(Decimal::parse),
            min: self.min.as_deref().and_then(Decimal::parse),
            max: self.max.as_deref().and_then(Decimal::parse),
        }
    }
}

/// A bucket's money, each value converted once to the models' decimal (the metric's value
/// is one of them, cloned).
struct Money {
    sum: Option<models::Decimal>,
    average: Option<models::Decimal>,
    min: Option<models::Decimal>,
    max: Option<models::Decimal>,
}

impl Money {
    fn of(b: &Bucket) -> Money {
        if b.with_value == 0 {
            return Money {
                sum: None,
                average: None,
                min: None,
                max: None,
            };
        }
        let v = b.values();
        let sum = v.sum.unwrap_or_default();
        Money {
            sum: Some(sum.into()),
            average: Some(sum.average(b.with_value).into()),
            min: v.min.map(Into::into),
            max: v.max.map(Into::into),
        }
    }

    /// The value the metric names.
    fn value(&self, b: &Bucket, metric: Metric) -> Option<models::Decimal> {
        match metric {
            Metric::Count => Some(b.count.into()),
            Metric::Sum => self.sum.clone(),
            Metric::Average => self.average.clone(),
            Metric::Min => self.min.clone(),
            Metric::Max => self.max.clone(),
        }
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
        loanhost_guest::result(&answer(arguments)?)
    }

    fn call_text(arguments: Value) -> Result<String, ToolError> {
        loanhost_guest::result_text(&answer(arguments)?)
    }
}

/// The tool's answer as its record.
fn answer(arguments: Value) -> Result<LoanAggregationResponse, ToolError> {
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
    let data::Rows {
        rows, truncated, ..
    } = data::run(&q)?;
    let single = rows.len() == 1;
    let mut buckets: Vec<Bucket> = Vec::with_capacity(rows.len());
    for mut r in rows {
        // A person is grouped per (id, name) when names are read: the groups of one id whose
        // names are blank, or are the id itself, are all keyed by the id, and every group
        // without an id is "Unassigned". Any other person's group has a bucket of its own.
        let (key, key_id, twin) = match group_by {
            GroupBy::None => ("all".to_string(), None, false),
            GroupBy::Status | GroupBy::LoanType | GroupBy::Purpose => (
                take_text(&mut r[0]).unwrap_or_else(|| "Unknown".into()),
                None,
                true,
            ),
            GroupBy::LoanOfficer | GroupBy::ReferringAgent => match take_text(&mut r[0]) {
                None => ("Unassigned".to_string(), None, names),
                Some(id) => {
                    let name = if names {
                        take_text(&mut r[1]).filter(|n| !n.trim().is_empty())
                    } else {
                        None
                    };
                    match name {
                        Some(name) if name != id => (name, Some(id), false),
                        _ => (id.clone(), Some(id), names),
                    }
                }
            },
            _ => (take_text(&mut r[0]).unwrap_or_default(), None, true),
        };
        let a = &mut r[nkeys..];
        let b = Bucket {
            key,
            key_id,
            count: int(&a[0]),
            with_value: int(&a[1]),
            sum: take_money(&mut a[2]),
            min: take_money(&mut a[3]),
            max: take_money(&mut a[4]),
            twin,
        };
        if group_by != GroupBy::None || b.count > 0 || single {
            buckets.push(b);
        }
        loanhost_guest::discard(r);
    }
    // "Unassigned" officers / referrers may come from several null-id rows only when names
    // are grouped too, and an officer from several rows with blank names; merge buckets with
    // the same (key, keyId).
    let mut buckets = merge(buckets);
    let total_count: u64 = if truncated {
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
    // (key, keyId) is unique after the merge, so each order below is total: picking the
    // first MAX_BUCKETS and sorting them answers what sorting them all would.
    let order: fn(&Bucket, &Bucket) -> std::cmp::Ordering = match group_by {
        GroupBy::Month | GroupBy::Quarter | GroupBy::Year => |a, b| a.key.cmp(&b.key),
        _ => |a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| a.key.cmp(&b.key))
                .then_with(|| a.key_id.cmp(&b.key_id))
        },
    };
    let truncated = truncated || buckets.len() > MAX_BUCKETS;
    if buckets.len() > MAX_BUCKETS {
        buckets.select_nth_unstable_by(MAX_BUCKETS, order);
    }
    let shown = MAX_BUCKETS.min(buckets.len());
    buckets[..shown].sort_unstable_by(order);
    let out = buckets[..shown]
        .iter()
        .map(|b| {
            let key_id = match &b.key_id {
                None => None,
                Some(id) => Some(id.parse::<Uuid>().map_err(|_| {
                    ToolError::internal(format!("the host sent a user id that is not a UUID: {id}"))
                })?),
            };
            let money = Money::of(b);
            let value = money.value(b, metric);
            Ok(LoanAggregationBucket {
                key: b.key.clone(),
                key_id,
                count: b.count,
                sum: money.sum,
                average: money.average,
                min: money.min,
                max: money.max,
                value,
            })
        })
        .collect::<Result<Vec<_>, ToolError>>()?;
    loanhost_guest::discard(buckets);
    Ok(LoanAggregationResponse {
        group_by: name_of(group_by),
        metric: name_of(metric_field),
        function: name_of(metric),
        total_count,
        bucket_count: out.len() as u64,
        truncated,
        buckets: out,
    })
}

fn input_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "filter": loanhost_guest::schema::loan_filter(),
            "groupBy": {"type": "string", "enum": loanhost_guest::vocab::GROUP_BY_DIMENSIONS, "default": "None",
                        "description": "Dimension to group by; None gives a single total. Month/Quarter/Year bucket on dateField and drop loans without that date."},
            "metric": {"type": "string", "enum": loanhost_guest::vocab::METRIC_FUNCTIONS, "default": "Count",
                       "description": "The function recorded in each bucket's value; all five are returned per bucket."},
            "metricField": {"type": "string", "enum": loanhost_guest::vocab::METRIC_FIELDS, "default": "LoanAmount",
                            "description": "Money field measured (USD); loans without a value are ignored by sum/average/min/max."},
            "dateField": {"type": "string", "enum": loanhost_guest::vocab::DATE_FIELDS, "default": "StatusDate",
                          "description": "Date used by Month/Quarter/Year grouping."}
        }
    })
}

loanhost_guest::export_tool!(ReportLoans);
