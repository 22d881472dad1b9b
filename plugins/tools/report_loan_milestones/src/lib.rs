//! `report_loan_milestones`: how many distinct loans crossed each funnel (Northstar) stage —
//! or raw LOS milestone — per week or month, from the persisted LOS status history
//! (docs/design.md §7.3). A loan that crosses a stage in two periods counts in both. Loans that
//! have since moved on (sold, purchased, archived) keep their crossings.

use loanhost_guest::data::{
    self, Aggregate, Condition, Key, LabelMap, PeriodUnit, Predicate, Query, Value as Cell,
};
use loanhost_guest::dates::{self, Date};
use loanhost_guest::models::reporting::{LoanMilestoneReportResponse, MilestoneBucket};
use loanhost_guest::models::Decimal as Money;
use loanhost_guest::{parse_arguments, Description, Tool, ToolError};
use serde::Deserialize;
use serde_json::{json, Value};

/// (stage, raw statuses) of the funnel, in stage order; everything else is `Other`.
const NORTHSTAR: &[(&str, &[&str])] = &[
    ("1. Opened", &["Loan Open"]),
    ("2. Pre-Approved", &["Loan Preapproval"]),
    ("3. Rate Locked", &["Rate Locked"]),
    ("4. Approved", &["Loan Approved", "Loan Clear To Close"]),
    ("5. Closed & Funded", &["Loan Closed", "Loan Funded"]),
];
const OTHER: &str = "Other";
const MAX_ROWS: usize = 1000;
/// The longest windows: ten years of weeks, or of months.
const MAX_WEEKS: i64 = 520;
const MAX_MONTHS: i64 = 120;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Args {
    #[serde(default)]
    filter: Option<Value>,
    #[serde(default)]
    granularity: Option<String>,
    #[serde(default)]
    lookback: Option<i64>,
    #[serde(default)]
    group_by_northstar: Option<bool>,
    #[serde(default)]
    exclude_stages: Option<Vec<String>>,
}

/// Each stage's place in the answer's order (1-based; `Other` 6, a status not in the spec's
/// list 999), looked up by name in a sorted table built once per call: a year of raw
/// milestones is a row per (period, milestone), and a scan of the 46 statuses per row cost a
/// tenth of the tool's run.
struct StageOrder {
    sorted: Vec<(&'static str, u32)>,
    unknown: u32,
}

impl StageOrder {
    fn new(northstar: bool) -> StageOrder {
        let (names, unknown): (Vec<&'static str>, u32) = if northstar {
            (NORTHSTAR.iter().map(|(stage, _)| *stage).collect(), 6)
        } else {
            (loanhost_guest::vocab::LOAN_STATUSES.to_vec(), 999)
        };
        let mut sorted: Vec<(&'static str, u32)> = Vec::with_capacity(names.len());
        for (i, name) in names.into_iter().enumerate() {
            // The first place of a name listed twice, as a scan of the list would find.
            if !sorted.iter().any(|(n, _)| *n == name) {
                sorted.push((name, i as u32 + 1));
            }
        }
        sorted.sort_unstable();
        StageOrder { sorted, unknown }
    }

    fn of(&self, stage: &str) -> u32 {
        self.sorted
            .binary_search_by(|(name, _)| (*name).cmp(stage))
            .map_or(self.unknown, |i| self.sorted[i].1)
    }
}

/// One answer row before ordering; `rank` is its period's place among the periods seen.
struct Bucket {
    rank: u32,
    period: String,
    order: u32,
    stage: String,
    count: u64,
    amount: Money,
}

/// Ranks of the period labels in the order the host sends them. The host answers a query
/// without an order in its keys' text order, so a period's rows come together and the ranks
/// follow the labels' order: the answer's order is then (rank, stage order, stage), compared
/// as numbers first (a year of raw milestones compared period texts a dozen times a row).
/// Rows that come otherwise are ordered by the labels themselves.
#[derive(Default)]
struct PeriodRanks {
    last: Option<String>,
    next: u32,
    in_order: bool,
}

impl PeriodRanks {
    fn rank(&mut self, period: &str) -> u32 {
        match &self.last {
            Some(last) if last == period => return self.next - 1,
            Some(last) => self.in_order &= last.as_str() < period,
            None => self.in_order = true,
        }
        self.last = Some(period.to_string());
        self.next += 1;
        self.next - 1
    }

    /// Orders the buckets by period, stage order and stage.
    fn order(&self, buckets: &mut [Bucket]) {
        if self.in_order {
            buckets.sort_unstable_by(|a, b| {
                (a.rank, a.order, &a.stage).cmp(&(b.rank, b.order, &b.stage))
            });
        } else {
            buckets.sort_unstable_by(|a, b| {
                (&a.period, a.order, &a.stage).cmp(&(&b.period, b.order, &b.stage))
            });
        }
    }
}

struct Milestones;

impl Tool for Milestones {
    fn describe() -> Description {
        Description::new(
            "report_loan_milestones",
            "Loan milestones over time",
            "Historical flow: how many distinct loans reached each funnel stage (1. Opened, \
             2. Pre-Approved, 3. Rate Locked, 4. Approved, 5. Closed & Funded, Other) per week or \
             month, from the persisted LOS status history. THE tool for 'how many loans closed or \
             funded last month': it counts every loan that crossed the stage in the period even if \
             it has since been sold, purchased or archived (a current-status filter would miss \
             those). Counts are distinct loans per period; a loan crossing a stage in two periods \
             counts in both. Only loans synced to the LOS appear. The window is the last \
             `lookback` weeks or months ending with the current one. The filter applies to the \
             loans' current attributes; results are limited to the caller's scope.",
        )
        .input_schema(json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "filter": loanhost_guest::schema::loan_filter(),
                "granularity": {"type": "string", "examples": ["Week", "Month"], "default": "Month", "description": "Week (ISO, Monday start, period YYYY-Wnn) or Month (YYYY-MM). Any other value is not refused: it falls back to Month (the answer's granularity says which was used)."},
                "lookback": {"type": "integer", "default": 4, "maximum": MAX_WEEKS, "description": "Buckets back from the current one, which is included; zero or less becomes 4. At most 520 weeks or 120 months (ten years); more is refused."},
                "groupByNorthstar": {"type": "boolean", "default": true, "description": "true groups by funnel stage; false by raw LOS milestone name."},
                "excludeStages": {"type": "array", "items": {"type": "string"}, "examples": [["Other"]], "description": "Stage labels to leave out. With groupByNorthstar (the default) one of: 1. Opened, 2. Pre-Approved, 3. Rate Locked, 4. Approved, 5. Closed & Funded, Other (another label is refused, naming the closest); with groupByNorthstar false, raw LOS milestone names."}
            }
        }))
        .output_record::<LoanMilestoneReportResponse>()
    }

    fn call(arguments: Value) -> Result<Value, ToolError> {
        loanhost_guest::result(&answer(arguments)?)
    }

    fn call_text(arguments: Value) -> Result<String, ToolError> {
        loanhost_guest::result_text(&answer(arguments)?)
    }
}

/// The tool's answer as its record.
fn answer(arguments: Value) -> Result<LoanMilestoneReportResponse, ToolError> {
    let args: Args = parse_arguments(arguments)?;
    let filter = match args.filter {
        None | Some(Value::Null) => None,
        Some(f @ Value::Object(_)) => Some(f.to_string()),
        Some(_) => return Err(ToolError::invalid_params("filter must be an object")),
    };
    let week = args.granularity.as_deref() == Some("Week");
    let (max, unit) = if week {
        (MAX_WEEKS, "weeks")
    } else {
        (MAX_MONTHS, "months")
    };
    let lookback = match args.lookback {
        Some(n) if n > max => {
            return Err(ToolError::invalid_params(format!(
                "lookback: at most {max} {unit} (ten years); got {n}"
            )))
        }
        Some(n) if n > 0 => n,
        _ => 4,
    };
    let northstar = args.group_by_northstar.unwrap_or(true);
    let exclude = args.exclude_stages.unwrap_or_default();
    if northstar {
        let labels: Vec<&str> = NORTHSTAR
            .iter()
            .map(|(stage, _)| *stage)
            .chain([OTHER])
            .collect();
        if let Some(unknown) = exclude.iter().find(|s| !labels.contains(&s.as_str())) {
            return Err(ToolError::invalid_params(format!(
                "excludeStages: `{unknown}` is not a funnel stage; closest: {} (the stages: {})",
                loanhost_guest::vocab::closest(unknown, &labels, 2).join(", "),
                labels.join(", ")
            )));
        }
    }

    let today = dates::today();
    let (start, end): (Date, Date) = if week {
        let monday = today.week_start();
        (monday.plus_days(-7 * (lookback - 1)), monday.plus_days(7))
    } else {
        let first = today.month_start();
        (
            first.plus_months(-(lookback as i32 - 1)),
            first.plus_months(1),
        )
    };
    let stage_key = if northstar {
        let entries = NORTHSTAR
            .iter()
            .flat_map(|(stage, raws)| raws.iter().map(move |r| (r.to_string(), stage.to_string())))
            .collect();
        Key::Mapped(LabelMap {
            field: "milestone".into(),
            entries,
            otherwise: Some(OTHER.into()),
        })
    } else {
        Key::Field("milestone".into())
    };
    let rows = data::run(&Query {
        dataset: "los-status-history".into(),
        filter,
        predicates: vec![
            Predicate {
                field: "occurredAt".into(),
                condition: Condition::Ge(Cell::Timestamp(start.midnight())),
            },
            Predicate {
                field: "occurredAt".into(),
                condition: Condition::Lt(Cell::Timestamp(end.midnight())),
            },
        ],
        group_by: vec![
            Key::Period((
                "occurredAt".into(),
                if week {
                    PeriodUnit::Week
                } else {
                    PeriodUnit::Month
                },
            )),
            stage_key,
        ],
        distinct_on: Some("loanId".into()),
        aggregates: vec![Aggregate::Count, Aggregate::Sum("loan.loanAmount".into())],
        order_by: vec![],
        limit: None,
    })?;
    // The rows' texts are moved, not copied: 52 weeks of raw milestones are a thousand rows.
    // Their emptied vectors are let go unfreed (the instance ends with the call).
    let truncated = rows.truncated;
    let order = StageOrder::new(northstar);
    let mut rows = rows.rows;
    let mut buckets: Vec<Bucket> = Vec::with_capacity(rows.len());
    let mut periods = PeriodRanks::default();
    for r in rows.iter_mut() {
        let mut cells = r.iter_mut().map(|c| std::mem::replace(c, Cell::Null));
        let (Some(Cell::Text(period)), Some(Cell::Text(stage)), Some(count), Some(amount)) =
            (cells.next(), cells.next(), cells.next(), cells.next())
        else {
            continue;
        };
        let count = match count {
            Cell::Integer(i) => i as u64,
            _ => 0,
        };
        if count == 0 || exclude.contains(&stage) {
            continue;
        }
        // The host's decimal text is already the answer's number (exact, no trailing
        // zeros): checked as a JSON number, not parsed to a value and written back.
        let amount = match amount {
            Cell::Decimal(s) => Money::parse(&s).unwrap_or_else(|_| Money::from(0)),
            _ => Money::from(0),
        };
        buckets.push(Bucket {
            rank: periods.rank(&period),
            period,
            order: order.of(&stage),
            stage,
            count,
            amount,
        });
    }
    loanhost_guest::discard(rows);
    periods.order(&mut buckets);
    let truncated = truncated || buckets.len() > MAX_ROWS;
    buckets.truncate(MAX_ROWS);
    let granularity = if week { "Week" } else { "Month" };
    Ok(LoanMilestoneReportResponse {
        granularity: granularity.into(),
        group_by: if northstar { "Northstar" } else { "Milestone" }.into(),
        truncated,
        note: format!(
            "Distinct loans per {} and {} from persisted LOS status history, {} through {} (UTC); only loans synced to the LOS are covered. A loan that crosses a stage in two periods counts in both. The funnel stage mapping is provisional.",
            granularity.to_lowercase(),
            if northstar { "funnel stage" } else { "raw milestone" },
            start,
            end.plus_days(-1)
        ),
        buckets: buckets
            .into_iter()
            .map(|b| MilestoneBucket {
                period: b.period,
                stage: b.stage,
                stage_order: b.order,
                loan_count: b.count,
                loan_amount: b.amount,
            })
            .collect(),
    })
}

loanhost_guest::export_tool!(Milestones);

#[cfg(test)]
mod tests {
    use super::*;

    /// The first place of `stage` in the list, as the answer orders stages.
    fn scanned(stage: &str, northstar: bool) -> u32 {
        if northstar {
            NORTHSTAR
                .iter()
                .position(|(s, _)| *s == stage)
                .map_or(6, |p| p as u32 + 1)
        } else {
            loanhost_guest::vocab::LOAN_STATUSES
                .iter()
                .position(|s| *s == stage)
                .map_or(999, |p| p as u32 + 1)
        }
    }

    fn bucket(periods: &mut PeriodRanks, period: &str, order: u32, stage: &str) -> Bucket {
        Bucket {
            rank: periods.rank(period),
            period: period.into(),
            order,
            stage: stage.into(),
            count: 1,
            amount: Money::from(0),
        }
    }

    #[test]
    fn buckets_are_ordered_by_period_then_stage_however_the_rows_came() {
        // Arrange: the host's order (periods together, ascending), and two other orders.
        let rows = [
            ("2026-01", 9, "Loan Closed"),
            ("2026-01", 1, "Loan Open"),
            ("2026-02", 999, "Custom"),
            ("2026-02", 999, "Another"),
            ("2026-02", 1, "Loan Open"),
            ("2026-W09", 2, "Loan Preapproval"),
        ];
        let expected = [
            ("2026-01", "Loan Open"),
            ("2026-01", "Loan Closed"),
            ("2026-02", "Loan Open"),
            ("2026-02", "Another"),
            ("2026-02", "Custom"),
            ("2026-W09", "Loan Preapproval"),
        ];
        let mut reversed = rows;
        reversed.reverse();
        let mut interleaved = rows;
        interleaved.swap(1, 3);
        for (input, in_order) in [(rows, true), (reversed, false), (interleaved, false)] {
            // Act
            let mut periods = PeriodRanks::default();
            let mut buckets: Vec<Bucket> = input
                .iter()
                .map(|(p, o, s)| bucket(&mut periods, p, *o, s))
                .collect();
            periods.order(&mut buckets);

            // Assert
            assert_eq!(periods.in_order, in_order, "{input:?}");
            let got: Vec<(&str, &str)> = buckets
                .iter()
                .map(|b| (b.period.as_str(), b.stage.as_str()))
                .collect();
            assert_eq!(got, expected, "{input:?}");
        }
    }

    #[test]
    fn stage_order_is_the_place_in_the_list() {
        for northstar in [true, false] {
            let order = StageOrder::new(northstar);
            let names = NORTHSTAR
                .iter()
                .map(|(s, _)| *s)
                .chain(loanhost_guest::vocab::LOAN_STATUSES.iter().copied())
                .chain([OTHER, "", "Loan", "Loan Open ", "zzz"]);
            for name in names {
                assert_eq!(
                    order.of(name),
                    scanned(name, northstar),
                    "{name} ({northstar})"
                );
            }
        }
    }
}
