//! The report matrix: every shape of arguments the five report tools take, end to end over
//! HTTP against a server on loopback with `BENCH_LOANS` seeded loans (default 1,000,000, their
//! LOS history and the warehouse tables), as an Admin, an Agent, a Processor (company scope)
//! and a ConciergeKey (managed officers), on SQLite and (when `BENCH_POSTGRES_URL` names a
//! server) on PostgreSQL.
//!
//! Each line runs beside its **raw-SQL reference**: the best hand-written SQL for the same
//! answer, on the same database in the same run, through a pool of its own (sqlx, no host).
//! Before a line is timed, the tool's answer is checked equal to the reference's, bucket by
//! bucket (keys, counts, amounts). Then the call and the reference run in alternation, each
//! until it has run `MATRIX_SECONDS` itself (default 1.5) or `MATRIX_REPS` times (default
//! 200), at least twice (before the thirteenth round the pair stopped together, so a fast call
//! beside a slow reference ran as few times as the reference); the best time of each is
//! compared (on a shared machine the least disturbed
//! run of each: a line of a few milliseconds, whose best of 15 runs depended on how many of
//! them met the machine's wake-up noise, gets as many runs as a slow line gets seconds).
//!
//! Bounds, flagged per line: end to end ≤ 1.1 × raw + 1 ms; Admin ≤ 300 ms on PostgreSQL and
//! ≤ 1 s on SQLite; Agent ≤ 2 ms.
//!
//! The run's tables are written, as the run goes, into one generated file: a whole run (no
//! filter below) into `docs/benchmarks/matrix-<date>.md` of the clone, the dated record that
//! `docs/benchmarks.md` summarises; a filtered run into `~/.cache/loanhost/bench/`
//! (`MATRIX_REPORT=<path>` names another file). Each file says what was run, on what, the lines
//! met per caller and engine, the lines over a bound, then every line.
//!
//! `MATRIX_CALLERS=admin,agent` keeps those callers; `MATRIX_ONLY=<text>` keeps the lines whose
//! label holds the text (`a|b`: either); `MATRIX_ENGINES=postgres` keeps that engine;
//! `MATRIX_REPS=<n>` sets the cap of runs a line.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

mod common;

use loanhost::data::history_keys::{
    month_index, status_bit, week_index, STATUS_BITS, UNLISTED_BIT,
};
use loanhost::data::Db;
use serde_json::{json, Value};
use sqlx::{Row, TypeInfo, ValueRef};

use common::full::{bench_dir, engines, loans, Served, TODAY};

#[path = "report_matrix/report.rs"]
mod matrix_report;
use matrix_report::Report;

/// A value of a reference row.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Null,
    Int(i64),
    Text(String),
}

impl Cell {
    fn int(&self) -> Option<i64> {
        match self {
            Cell::Int(i) => Some(*i),
            _ => None,
        }
    }
}

/// One reference statement: SQL with `?` placeholders, and its values.
struct Statement {
    sql: String,
    params: Vec<Value>,
}

/// Runs a statement on the reference pool; every row, each column as a [`Cell`].
async fn fetch(db: &Db, st: &Statement) -> Vec<Vec<Cell>> {
    macro_rules! go {
        ($pool:expr, $sql:expr) => {{
            let mut q = sqlx::query($sql);
            for p in &st.params {
                q = match p {
                    Value::String(s) => q.bind(s.clone()),
                    v => q.bind(v.as_i64().unwrap()),
                };
            }
            q.fetch_all($pool)
                .await
                .unwrap_or_else(|e| panic!("{e}: {}", st.sql))
                .iter()
                .map(|r| {
                    (0..r.len())
                        .map(|i| {
                            // By the value's type, as hand-written code would (trying each
                            // type in turn built an error per text cell).
                            let raw = r.try_get_raw(i).unwrap();
                            if raw.is_null() {
                                return Cell::Null;
                            }
                            match raw.type_info().name() {
                                "INT8" | "INTEGER" | "BIGINT" => {
                                    Cell::Int(r.try_get_unchecked::<i64, _>(i).unwrap())
                                }
                                "INT4" => {
                                    Cell::Int(r.try_get_unchecked::<i32, _>(i).unwrap().into())
                                }
                                _ => r
                                    .try_get::<String, _>(i)
                                    .map(Cell::Text)
                                    .unwrap_or_else(|e| panic!("column {i}: {e}: {}", st.sql)),
                            }
                        })
                        .collect()
                })
                .collect()
        }};
    }
    match db {
        Db::Sqlite(p) => go!(p, st.sql.as_str()),
        Db::Postgres(p) => {
            let numbered = loanhost::data::store::number_placeholders(&st.sql);
            go!(p, numbered.as_str())
        }
    }
}

/// The caller a line runs as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    Admin,
    Agent,
    Processor,
    Concierge,
}

impl Who {
    const ALL: [Who; 4] = [Who::Admin, Who::Agent, Who::Processor, Who::Concierge];
    fn name(self) -> &'static str {
        match self {
            Who::Admin => "admin",
            Who::Agent => "agent",
            Who::Processor => "processor",
            Who::Concierge => "concierge",
        }
    }
    fn email(self) -> String {
        format!("{}@demo.loanhost.local", self.name())
    }
}

/// What the reference needs of the caller's scope, read from the directory.
struct ScopeFacts {
    me: String,
    company: String,
    managed: Vec<String>,
}

/// The caller's scope as SQL over `l`, with its values.
fn scope_sql(who: Who, f: &ScopeFacts) -> (String, Vec<Value>) {
    match who {
        Who::Admin => ("1 = 1".into(), vec![]),
        Who::Agent => (
            "(l.loan_officer_id = ? OR l.loan_assistant_id = ? OR l.referring_agent_id = ?)".into(),
            vec![json!(f.me), json!(f.me), json!(f.me)],
        ),
        Who::Processor => ("l.company_id = ?".into(), vec![json!(f.company)]),
        Who::Concierge => (
            format!(
                "l.loan_officer_id IN ({})",
                vec!["?"; f.managed.len()].join(", ")
            ),
            f.managed.iter().map(|m| json!(m)).collect(),
        ),
    }
}

/// Epoch milliseconds of an RFC 3339 instant.
fn ms(s: &str) -> i64 {
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).unwrap();
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

/// The filters of the matrix: (label, filter, its SQL over `l`, values).
fn filters() -> Vec<(&'static str, Value, String, Vec<Value>)> {
    vec![
        (
            "searchText",
            json!({"searchText": "smith"}),
            "l.search_key LIKE ? ESCAPE '\\'".into(),
            vec![json!("%smith%")],
        ),
        (
            "wide filter",
            json!({
                "statuses": ["Loan Open", "Loan Processing", "Loan Underwriting", "Loan Approved", "Loan Funded"],
                "loanTypes": ["Conventional", "FHA"],
                "purposes": ["Purchase", "Refinance"],
                "loanAmountMin": 100000, "loanAmountMax": 800000,
                "statusDateFrom": "2025-01-01T00:00:00Z", "statusDateTo": "2026-09-30T23:59:59.999Z"
            }),
            "l.status IN (?, ?, ?, ?, ?) AND l.loan_type IN (?, ?) AND l.purpose IN (?, ?) \
             AND l.loan_amount >= ? AND l.loan_amount <= ? AND l.status_date >= ? AND l.status_date <= ?"
                .into(),
            vec![
                json!("Loan Open"),
                json!("Loan Processing"),
                json!("Loan Underwriting"),
                json!("Loan Approved"),
                json!("Loan Funded"),
                json!("Conventional"),
                json!("FHA"),
                json!("Purchase"),
                json!("Refinance"),
                json!(100_000_i64 * 10_000),
                json!(800_000_i64 * 10_000),
                json!(ms("2025-01-01T00:00:00Z")),
                json!(ms("2026-09-30T23:59:59.999Z")),
            ],
        ),
    ]
}

/// SQL for the month index (`year × 12 + month − 1`) of an epoch-millisecond column.
fn month_sql(col: &str, postgres: bool) -> String {
    if postgres {
        format!(
            "(EXTRACT(YEAR FROM to_timestamp({col} / 1000.0) AT TIME ZONE 'UTC')::int * 12 \
             + EXTRACT(MONTH FROM to_timestamp({col} / 1000.0) AT TIME ZONE 'UTC')::int - 1)"
        )
    } else {
        format!(
            "(CAST(strftime('%Y', {col} / 1000.0, 'unixepoch') AS INTEGER) * 12 \
             + CAST(strftime('%m', {col} / 1000.0, 'unixepoch') AS INTEGER) - 1)"
        )
    }
}

/// The month index column the snapshot stores beside a date column (schema v6).
fn stored_month(date: &str) -> &'static str {
    match date {
        "l.status_date" => "l.status_month",
        "l.estimated_closing_date" => "l.estimated_closing_month",
        "l.updated" => "l.updated_month",
        other => panic!("no stored month for {other}"),
    }
}

/// SQL for the ISO week index (weeks from Monday 1969-12-29) of a non-negative
/// epoch-millisecond column.
fn week_sql(col: &str) -> String {
    format!("(({col} / 86400000 + 3) / 7)")
}

fn month_label(mi: i64) -> String {
    format!("{:04}-{:02}", mi.div_euclid(12), mi.rem_euclid(12) + 1)
}

fn week_label(wi: i64) -> String {
    let monday = time::Date::from_calendar_date(1969, time::Month::December, 29).unwrap()
        + time::Duration::days(7 * wi);
    let (y, w, _) = monday.to_iso_week_date();
    format!("{y:04}-W{w:02}")
}

/// What a line asks and how its answer is checked.
enum Shape {
    /// `report_loans`: the key's SQL and how its values become bucket keys.
    Loans {
        key: Option<(String, KeyLabel)>,
        date_not_null: Option<&'static str>,
    },
    /// `loan_pipeline_report` with this many months.
    Pipeline { months: i64 },
    /// `report_loan_milestones`.
    Milestones {
        week: bool,
        lookback: i64,
        northstar: bool,
        exclude: Vec<String>,
    },
    /// `mlo_pipeline_report` / `warehouse_loan_milestone_report`.
    Warehouse {
        deals: bool,
        week: bool,
        from: Option<String>,
        to: String,
    },
}

#[derive(Clone, Copy)]
enum KeyLabel {
    Text(&'static str),
    Month,
    Quarter,
    Year,
}

/// One line of the matrix.
struct Line {
    tool: &'static str,
    label: String,
    args: Value,
    shape: Shape,
    /// The filter's SQL and values (empty: none).
    filter: (String, Vec<Value>),
}

/// The groupBy dimensions and metric functions, from the platform's vocabulary.
const GROUPS: [&str; 9] = loanhost::data::values::GROUP_BY_DIMENSIONS;
const METRICS: [&str; 5] = loanhost::data::values::METRIC_FUNCTIONS;
const FIELDS: [(&str, &str); 3] = [
    ("LoanAmount", "l.loan_amount"),
    ("LockedCompensation", "l.locked_compensation"),
    ("EstimatedCompensation", "l.estimated_compensation"),
];
const DATES: [(&str, &str); 3] = [
    ("StatusDate", "l.status_date"),
    ("ClosingDate", "l.estimated_closing_date"),
    ("Updated", "l.updated"),
];

fn loans_shape(group: &str, date: &'static str) -> Shape {
    let key = match group {
        "None" => None,
        "Status" => Some(("l.status".into(), KeyLabel::Text("Unknown"))),
        "LoanType" => Some(("l.loan_type".into(), KeyLabel::Text("Unknown"))),
        "Purpose" => Some(("l.purpose".into(), KeyLabel::Text("Unknown"))),
        "LoanOfficer" => Some(("l.loan_officer_id".into(), KeyLabel::Text("Unassigned"))),
        "ReferringAgent" => Some(("l.referring_agent_id".into(), KeyLabel::Text("Unassigned"))),
        // Schema v6: the month index each date has beside it (grouped by month first, then
        // by quarter or year over those few rows: `reference`).
        "Month" => Some((stored_month(date).into(), KeyLabel::Month)),
        "Quarter" => Some((stored_month(date).into(), KeyLabel::Quarter)),
        _ => Some((stored_month(date).into(), KeyLabel::Year)),
    };
    let periodic = matches!(group, "Month" | "Quarter" | "Year");
    Shape::Loans {
        key,
        date_not_null: periodic.then_some(date),
    }
}

/// Every line of the matrix (the metric field of a `report_loans` line travels in its args).
fn lines() -> Vec<Line> {
    let mut out = Vec::new();
    let none = || (String::new(), vec![]);
    for group in GROUPS {
        for metric in METRICS {
            for (field, _) in FIELDS {
                out.push(Line {
                    tool: "report_loans",
                    label: format!("groupBy {group}, {metric} of {field}"),
                    args: json!({"groupBy": group, "metric": metric, "metricField": field}),
                    shape: loans_shape(group, "l.status_date"),
                    filter: none(),
                });
            }
        }
    }
    for group in ["Month", "Quarter", "Year"] {
        for (date, col) in &DATES[1..] {
            out.push(Line {
                tool: "report_loans",
                label: format!("groupBy {group} on {date}"),
                args: json!({"groupBy": group, "dateField": date}),
                shape: loans_shape(group, col),
                filter: none(),
            });
        }
    }
    for (name, filter, sql, params) in filters() {
        for group in ["None", "Status", "LoanOfficer"] {
            out.push(Line {
                tool: "report_loans",
                label: format!("groupBy {group}, {name}"),
                args: json!({"groupBy": group, "filter": filter}),
                shape: loans_shape(group, "l.status_date"),
                filter: (sql.clone(), params.clone()),
            });
        }
    }
    for months in [3, 24] {
        out.push(Line {
            tool: "loan_pipeline_report",
            label: format!("lookbackMonths {months}"),
            args: json!({"lookbackMonths": months}),
            shape: Shape::Pipeline { months },
            filter: none(),
        });
    }
    let (_, wide, wide_sql, wide_params) = filters().remove(1);
    for week in [false, true] {
        for lookback in [4, 52] {
            for northstar in [true, false] {
                let excluded = if northstar { "Other" } else { "Loan Open" };
                for variant in ["", "excludeStages", "filter"] {
                    let mut args = json!({
                        "granularity": if week { "Week" } else { "Month" },
                        "lookback": lookback,
                        "groupByNorthstar": northstar,
                    });
                    let mut exclude = vec![];
                    let mut filter = none();
                    match variant {
                        "excludeStages" => {
                            args["excludeStages"] = json!([excluded]);
                            exclude.push(excluded.to_string());
                        }
                        "filter" => {
                            args["filter"] = wide.clone();
                            filter = (wide_sql.clone(), wide_params.clone());
                        }
                        _ => {}
                    }
                    out.push(Line {
                        tool: "report_loan_milestones",
                        label: format!(
                            "{} lookback {lookback}, northstar {northstar}{}{variant}",
                            if week { "Week" } else { "Month" },
                            if variant.is_empty() { "" } else { ", " }
                        ),
                        args,
                        shape: Shape::Milestones {
                            week,
                            lookback,
                            northstar,
                            exclude,
                        },
                        filter,
                    });
                }
            }
        }
    }
    for deals in [true, false] {
        let tool = if deals {
            "mlo_pipeline_report"
        } else {
            "warehouse_loan_milestone_report"
        };
        for week in [false, true] {
            for quarter in [false, true] {
                let (from, to) = if quarter {
                    (Some("2026-07-01".to_string()), "2026-09-30".to_string())
                } else if deals {
                    (None, TODAY.to_string())
                } else {
                    (Some("2000-01-01".to_string()), TODAY.to_string())
                };
                let mut args = json!({"bucket": if week { "Week" } else { "Month" }});
                if let Some(f) = &from {
                    args["fromDate"] = json!(f);
                }
                if quarter || !deals {
                    args["toDate"] = json!(to);
                }
                out.push(Line {
                    tool,
                    label: format!(
                        "{} {}",
                        if week { "Week" } else { "Month" },
                        if quarter { "2026-Q3" } else { "all history" }
                    ),
                    args,
                    shape: Shape::Warehouse {
                        deals,
                        week,
                        from,
                        to,
                    },
                    filter: none(),
                });
            }
        }
    }
    out
}

/// The Northstar stages and their statuses (docs/design.md §7.3).
const NORTHSTAR: [(&str, &[&str]); 5] = [
    ("1. Opened", &["Loan Open"]),
    ("2. Pre-Approved", &["Loan Preapproval"]),
    ("3. Rate Locked", &["Rate Locked"]),
    ("4. Approved", &["Loan Approved", "Loan Clear To Close"]),
    ("5. Closed & Funded", &["Loan Closed", "Loan Funded"]),
];

/// The day `TODAY` as epoch milliseconds.
fn today_ms() -> i64 {
    ms(&format!("{TODAY}T00:00:00Z"))
}

fn and(where_sql: &mut String, params: &mut Vec<Value>, sql: &str, values: &[Value]) {
    if !sql.is_empty() {
        where_sql.push_str(" AND ");
        where_sql.push_str(sql);
        params.extend_from_slice(values);
    }
}

/// The reference statements of a line for a caller.
fn reference(line: &Line, who: Who, facts: &ScopeFacts, postgres: bool) -> Vec<Statement> {
    let (scope, scope_params) = scope_sql(who, facts);
    let mut where_sql = scope;
    let mut params = scope_params;
    // A person's search on PostgreSQL reads their own loans and tests each, off the trigram
    // index (schema v14), whose bitmap of a common token alone is ten times their statement.
    let filter = if postgres && matches!(who, Who::Agent | Who::Concierge) {
        line.filter
            .0
            .replace("l.search_key", "(l.search_key || '')")
    } else {
        line.filter.0.clone()
    };
    and(&mut where_sql, &mut params, &filter, &line.filter.1);
    let bigint = if postgres { "BIGINT" } else { "INTEGER" };
    match &line.shape {
        Shape::Loans { key, date_not_null } => {
            let m = FIELDS
                .iter()
                .find(|(f, _)| line.args["metricField"].as_str().unwrap_or("LoanAmount") == *f)
                .unwrap()
                .1;
            // Organisation-wide, the month index's own covering index holds the null check
            // too, and a company's status month index (schema v9) a Processor's status date;
            // another scope's index serves a scoped caller, who checks the date it reads.
            if let Some(d) = date_not_null {
                let d = if who == Who::Admin || (who == Who::Processor && *d == "l.status_date") {
                    stored_month(d)
                } else {
                    d
                };
                where_sql.push_str(&format!(" AND {d} IS NOT NULL"));
            }
            // A caller who may read names is answered per (id, name), as the tool groups
            // (an Agent per id), and the name is read as the answer shows it (the last
            // column); the check keys both by id.
            let named = who != Who::Agent;
            let (k, group, name) = match key {
                None => ("NULL".to_string(), String::new(), String::new()),
                Some((k, _)) if named && k == "l.loan_officer_id" => (
                    k.clone(),
                    " GROUP BY 1, l.loan_officer_name".into(),
                    ", l.loan_officer_name".into(),
                ),
                Some((k, _)) if named && k == "l.referring_agent_id" => (
                    k.clone(),
                    " GROUP BY 1, l.referring_agent_name".into(),
                    ", l.referring_agent_name".into(),
                ),
                Some((k, _)) => (k.clone(), " GROUP BY 1".into(), String::new()),
            };
            // Quarters and years: months first (in index order), then the few months merged.
            let per = match key {
                Some((_, KeyLabel::Quarter)) => Some(3),
                Some((_, KeyLabel::Year)) => Some(12),
                _ => None,
            };
            if let Some(per) = per {
                return vec![Statement {
                    sql: format!(
                        "SELECT k / {per}, CAST(SUM(c) AS {bigint}), CAST(SUM(cm) AS {bigint}), \
                         CAST(SUM(s) AS {bigint}), MIN(mn), MAX(mx) FROM (SELECT {k} AS k, \
                         COUNT(*) AS c, COUNT({m}) AS cm, SUM({m}) AS s, MIN({m}) AS mn, \
                         MAX({m}) AS mx FROM loans l WHERE {where_sql}{group}) i GROUP BY 1"
                    ),
                    params,
                }];
            }
            vec![Statement {
                sql: format!(
                    "SELECT {k} AS k, COUNT(*), COUNT({m}), CAST(SUM({m}) AS {bigint}), MIN({m}), MAX({m}){name} \
                     FROM loans l WHERE {where_sql}{group}"
                ),
                params,
            }]
        }
        Shape::Pipeline { months } => {
            let today = month_index(today_ms());
            let (first, after) = (today - months + 1, today + 1);
            let bound = |mi: i64| {
                ms(&format!(
                    "{:04}-{:02}-01T00:00:00Z",
                    mi.div_euclid(12),
                    mi.rem_euclid(12) + 1
                ))
            };
            // Whole months: organisation-wide, a range of the month index's covering index,
            // and for a Processor a range of the company's (schema v9); another scoped
            // caller's few loans are read by the scope's index and their dates.
            let mut trend_params = params.clone();
            let (column, range) = if matches!(who, Who::Admin | Who::Processor) {
                ("l.status_month", [json!(first), json!(after)])
            } else {
                ("l.status_date", [json!(bound(first)), json!(bound(after))])
            };
            trend_params.extend(range);
            vec![
                Statement {
                    sql: format!(
                        "SELECT l.status, COUNT(*), CAST(SUM(l.loan_amount) AS {bigint}) FROM loans l \
                         WHERE {where_sql} GROUP BY 1"
                    ),
                    params,
                },
                Statement {
                    sql: format!(
                        "SELECT l.status_month, COUNT(*), CAST(SUM(l.loan_amount) AS {bigint}) FROM loans l \
                         WHERE {where_sql} AND {column} >= ? AND {column} < ? GROUP BY 1"
                    ),
                    params: trend_params,
                },
            ]
        }
        Shape::Milestones {
            week,
            lookback,
            northstar,
            exclude,
        } => {
            // The period sets (schema v4): one row per (period, loan) with the union of its
            // statuses' bits; count the loans per (period, set) once, then give each label the
            // sets that hold one of its statuses.
            let (table, current) = if *week {
                ("los_history_weeks", week_index(today_ms()))
            } else {
                ("los_history_months", month_index(today_ms()))
            };
            let mut labels: Vec<(String, i64)> = Vec::new();
            if *northstar {
                let mut mapped = 0;
                for (stage, statuses) in NORTHSTAR {
                    let mask = statuses.iter().map(|s| status_bit(s)).fold(0, |a, b| a | b);
                    mapped |= mask;
                    labels.push((stage.into(), mask));
                }
                let every = ((1_i64 << STATUS_BITS.len()) - 1) | UNLISTED_BIT;
                labels.push(("Other".into(), every & !mapped));
            } else {
                labels.extend(STATUS_BITS.iter().map(|s| (s.to_string(), status_bit(s))));
            }
            labels.retain(|(l, _)| !exclude.contains(l));
            let stages: Vec<String> = labels
                .iter()
                .map(|(l, mask)| format!("SELECT '{l}' AS stage, CAST({mask} AS BIGINT) AS mask"))
                .collect();
            let alone = who == Who::Admin && line.filter.0.is_empty();
            let (from, amount) = if alone {
                (
                    format!("{table} r WHERE r.in_snapshot = 1"),
                    "r.loan_amount",
                )
            } else {
                (
                    format!("{table} r JOIN loans l ON l.key = r.loan_key WHERE {where_sql}"),
                    "l.loan_amount",
                )
            };
            let mut ps = if alone { vec![] } else { params };
            ps.extend([json!(current - lookback + 1), json!(current)]);
            vec![Statement {
                sql: format!(
                    "WITH x AS MATERIALIZED (\
                       SELECT r.period_index AS pi, r.status_bits AS bits, COUNT(*) AS c, SUM({amount}) AS amount \
                       FROM {from} AND r.period_index >= ? AND r.period_index <= ? GROUP BY 1, 2) \
                     SELECT x.pi, s.stage, CAST(SUM(x.c) AS BIGINT), CAST(SUM(x.amount) AS BIGINT) \
                     FROM x CROSS JOIN ({}) s WHERE (x.bits & s.mask) <> 0 GROUP BY 1, 2",
                    stages.join(" UNION ALL ")
                ),
                params: ps,
            }]
        }
        Shape::Warehouse {
            deals,
            week,
            from,
            to,
        } => {
            let (table, col, key, count) = if *deals {
                ("dw_deals d", "d.created_at", "d.stage", "COUNT(*)")
            } else {
                (
                    "dw_loan_milestones m",
                    "m.occurred_at",
                    "m.milestone",
                    "COUNT(DISTINCT m.loan_key)",
                )
            };
            let period = if *week {
                week_sql(col)
            } else {
                month_sql(col, postgres)
            };
            let mut ps = vec![];
            let mut conds = vec![format!("{col} < ?")];
            ps.push(json!(ms(&format!("{to}T00:00:00Z")) + 86_400_000));
            if let Some(f) = from {
                conds.push(format!("{col} >= ?"));
                ps.push(json!(ms(&format!("{f}T00:00:00Z"))));
            }
            vec![Statement {
                sql: format!(
                    "SELECT {period}, {key}, {count} FROM {table} WHERE {} GROUP BY 1, 2",
                    conds.join(" AND ")
                ),
                params: ps,
            }]
        }
    }
}

/// Decimal text (`"123.45"`) as units of 10⁻⁴.
fn scaled(v: &Value) -> Option<i64> {
    let s = match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let (sign, digits) = match s.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, s.as_str()),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let frac = format!("{frac:0<4}");
    Some(sign * (int.parse::<i64>().unwrap() * 10_000 + frac[..4].parse::<i64>().unwrap()))
}

/// Checks a tool's answer against its reference rows; the reason when they differ.
fn check(line: &Line, answer: &Value, rows: &[Vec<Vec<Cell>>]) -> Result<(), String> {
    let s = &answer["result"]["structuredContent"];
    let label_of = |c: &Cell, how: KeyLabel| -> String {
        match (c, how) {
            (Cell::Null, KeyLabel::Text(t)) => t.to_string(),
            (Cell::Text(t), _) => t.clone(),
            (Cell::Int(i), KeyLabel::Month) => month_label(*i),
            (Cell::Int(i), KeyLabel::Quarter) => {
                format!("{:04}-Q{}", i.div_euclid(4), i.rem_euclid(4) + 1)
            }
            (Cell::Int(i), KeyLabel::Year) => format!("{i:04}"),
            (c, _) => format!("{c:?}"),
        }
    };
    // (key → values) of the reference, and of the answer.
    let mut want: BTreeMap<String, Vec<Option<i64>>> = BTreeMap::new();
    let mut got: BTreeMap<String, Vec<Option<i64>>> = BTreeMap::new();
    let mut truncated = s["truncated"].as_bool().unwrap_or(false);
    match &line.shape {
        Shape::Loans { key, .. } => {
            let how = key.as_ref().map(|(_, h)| *h);
            for r in &rows[0] {
                let k = match how {
                    None => "all".to_string(),
                    Some(h) => label_of(&r[0], h),
                };
                let has = r[2].int().unwrap_or(0) > 0;
                let v = vec![
                    r[1].int(),
                    if has {
                        Some(r[3].int().unwrap_or(0))
                    } else {
                        None
                    },
                    r[4].int().filter(|_| has),
                    r[5].int().filter(|_| has),
                ];
                want.insert(k, v);
            }
            let total: i64 = want.values().map(|v| v[0].unwrap()).sum();
            if s["totalCount"].as_i64() != Some(total) {
                return Err(format!("totalCount {} against {total}", s["totalCount"]));
            }
            for b in s["buckets"].as_array().unwrap() {
                let k = b["keyId"].as_str().unwrap_or(b["key"].as_str().unwrap());
                got.insert(
                    k.to_string(),
                    vec![
                        b["count"].as_i64(),
                        scaled(&b["sum"]),
                        scaled(&b["min"]),
                        scaled(&b["max"]),
                    ],
                );
            }
        }
        Shape::Pipeline { .. } => {
            let by_status: BTreeMap<String, (i64, i64)> = rows[0]
                .iter()
                .map(|r| {
                    (
                        label_of(&r[0], KeyLabel::Text("")),
                        (r[1].int().unwrap(), r[2].int().unwrap_or(0)),
                    )
                })
                .collect();
            for stage in s["currentPipelineByStage"].as_array().unwrap() {
                let name = stage["stage"].as_str().unwrap().to_string();
                let (mut c, mut a) = (0, 0);
                for st in stage["statuses"].as_array().unwrap() {
                    if let Some((x, y)) = by_status.get(st.as_str().unwrap()) {
                        c += x;
                        a += y;
                    }
                }
                want.insert(name.clone(), vec![Some(c), Some(a)]);
                got.insert(
                    name,
                    vec![stage["count"].as_i64(), scaled(&stage["totalLoanAmount"])],
                );
            }
            for r in &rows[1] {
                want.insert(
                    label_of(&r[0], KeyLabel::Month),
                    vec![r[1].int(), Some(r[2].int().unwrap_or(0))],
                );
            }
            for p in s["monthlyTrend"].as_array().unwrap() {
                if p["count"].as_i64() == Some(0) {
                    continue;
                }
                got.insert(
                    p["period"].as_str().unwrap().to_string(),
                    vec![p["count"].as_i64(), scaled(&p["totalLoanAmount"])],
                );
            }
        }
        Shape::Milestones { week, .. } => {
            for r in &rows[0] {
                let p = r[0].int().unwrap();
                let period = if *week { week_label(p) } else { month_label(p) };
                want.insert(
                    format!("{period} {}", label_of(&r[1], KeyLabel::Text(""))),
                    vec![r[2].int(), Some(r[3].int().unwrap_or(0))],
                );
            }
            for b in s["buckets"].as_array().unwrap() {
                if b["loanCount"].as_i64() == Some(0) {
                    continue;
                }
                got.insert(
                    format!(
                        "{} {}",
                        b["period"].as_str().unwrap(),
                        b["stage"].as_str().unwrap()
                    ),
                    vec![b["loanCount"].as_i64(), scaled(&b["loanAmount"])],
                );
            }
        }
        Shape::Warehouse { deals, week, .. } => {
            let (stage, count) = if *deals {
                ("stage", "entryCount")
            } else {
                ("milestone", "loanCount")
            };
            for r in &rows[0] {
                let p = r[0].int().unwrap();
                let period = if *week { week_label(p) } else { month_label(p) };
                want.insert(
                    format!("{period} {}", label_of(&r[1], KeyLabel::Text(""))),
                    vec![r[2].int()],
                );
            }
            for b in s["rows"].as_array().unwrap() {
                got.insert(
                    format!(
                        "{} {}",
                        b["period"].as_str().unwrap(),
                        b[stage].as_str().unwrap()
                    ),
                    vec![b[count].as_i64()],
                );
            }
            truncated |= s["rowCount"].as_u64() != Some(got.len() as u64);
        }
    }
    for (k, v) in &got {
        match want.get(k) {
            Some(w) if w == v => {}
            Some(w) => return Err(format!("`{k}`: {v:?} against the reference's {w:?}")),
            None => return Err(format!("`{k}` is not in the reference's answer")),
        }
    }
    if !truncated && got.len() != want.len() {
        let missing: Vec<_> = want
            .keys()
            .filter(|k| !got.contains_key(*k))
            .take(3)
            .collect();
        return Err(format!(
            "{} buckets against the reference's {} (missing e.g. {missing:?})",
            got.len(),
            want.len()
        ));
    }
    if truncated && got.len() >= want.len() {
        return Err("truncated, yet every bucket is there".into());
    }
    Ok(())
}

fn best(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn bench() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rt = common::runtime();
    let n = loans();
    let dir = bench_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let seconds: f64 = std::env::var("MATRIX_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if std::env::args().any(|a| a == "--test") {
            0.0
        } else {
            1.5
        });
    let callers: Vec<Who> = match std::env::var("MATRIX_CALLERS") {
        Ok(list) => Who::ALL
            .into_iter()
            .filter(|w| list.split(',').any(|c| c.trim() == w.name()))
            .collect(),
        Err(_) => Who::ALL.to_vec(),
    };
    let only = std::env::var("MATRIX_ONLY").ok();
    let reps: usize = std::env::var("MATRIX_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let only_engines = std::env::var("MATRIX_ENGINES").ok();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let filtered = [
        "MATRIX_CALLERS",
        "MATRIX_ONLY",
        "MATRIX_ENGINES",
        "MATRIX_REPS",
    ]
    .iter()
    .any(|k| std::env::var_os(k).is_some());
    let mut report = Report::new(n, seconds, reps, filtered, &dir);
    let mut misses = Vec::new();
    for (engine, db_url) in rt.block_on(engines(n)) {
        if only_engines.as_deref().is_some_and(|e| !e.contains(engine)) {
            continue;
        }
        let postgres = engine == "postgres";
        let served = Served::start(&rt, db_url, n);
        let (raw, db, url) = (&served.raw, &served.db, &served.url);
        let facts = rt.block_on(async {
            let agent = |email: String| {
                let db = db.clone();
                async move {
                    db.agent_by_email(&email)
                        .await
                        .unwrap()
                        .expect("a demo user")
                }
            };
            let processor = agent(Who::Processor.email()).await;
            let concierge = agent(Who::Concierge.email()).await;
            ScopeFacts {
                me: agent(Who::Agent.email()).await.id,
                company: db
                    .agent_company(&processor.id)
                    .await
                    .unwrap()
                    .expect("the demo processor's company"),
                managed: db.managed_agents(&concierge.id).await.unwrap(),
            }
        });
        let started_engine = Instant::now();
        for who in &callers {
            let token = served.token(&who.email(), Duration::from_secs(7200));
            for line in lines() {
                let name = format!("{} {}", line.tool, line.label);
                if only
                    .as_deref()
                    .is_some_and(|o| !o.split('|').any(|o| name.contains(o)))
                {
                    continue;
                }
                let warehouse = matches!(line.shape, Shape::Warehouse { .. });
                // The warehouse reports are organisation-wide (no caller scope): the same
                // statement for every role that may call them, measured once, as the Admin.
                if warehouse && *who != Who::Admin {
                    continue;
                }
                let call =
                    || common::tools_call(&client, url, &token, line.tool, line.args.clone());
                let statements = reference(&line, *who, &facts, postgres);
                let run_raw = || async {
                    let mut out = Vec::new();
                    for st in &statements {
                        out.push(fetch(raw, st).await);
                    }
                    out
                };
                let t = Instant::now();
                let answer = rt.block_on(call());
                let first = t.elapsed().as_secs_f64() * 1e3;
                if answer["result"]["isError"] != false {
                    let msg = format!(
                        "{engine} {} {name}: the call failed after {first:.0} ms: {}",
                        who.name(),
                        answer["result"]["content"][0]["text"]
                    );
                    eprintln!("{msg}");
                    misses.push(msg);
                    continue;
                }
                let rows = rt.block_on(run_raw());
                if let Err(why) = check(&line, &answer, &rows) {
                    panic!(
                        "{engine} {} {name}: the reference must give the tool's answer: {why}",
                        who.name()
                    );
                }
                // Each side runs until it has run `seconds` itself or `reps` times (at least
                // twice), alternating while both still run: a tool call of 2 ms beside a
                // reference of 50 ms gets its own runs, not the reference's count of them.
                let (mut e2e, mut sql) = (Vec::new(), Vec::new());
                let more = |runs: &Vec<f64>| {
                    runs.len() < 2
                        || (runs.len() < reps && runs.iter().sum::<f64>() < seconds * 1e3)
                };
                while more(&e2e) || more(&sql) {
                    if more(&e2e) {
                        let a = Instant::now();
                        rt.block_on(call());
                        e2e.push(a.elapsed().as_secs_f64() * 1e3);
                    }
                    if more(&sql) {
                        let b = Instant::now();
                        rt.block_on(run_raw());
                        sql.push(b.elapsed().as_secs_f64() * 1e3);
                    }
                }
                let (e, r) = (best(&e2e), best(&sql));
                let mut flags = Vec::new();
                if e > 1.1 * r + 1.0 {
                    flags.push("over 1.1x + 1 ms");
                }
                match who {
                    Who::Admin if postgres && e > 300.0 => flags.push("over 300 ms"),
                    Who::Admin if !postgres && e > 1000.0 => flags.push("over 1 s"),
                    Who::Agent if e > 2.0 => flags.push("over 2 ms"),
                    _ => {}
                }
                let verdict = if flags.is_empty() {
                    "met".to_string()
                } else {
                    flags.join(", ")
                };
                let args = line.label.clone();
                println!(
                    "{engine:8} {:9} {:32} {args:60} {e:>9.2} ms  raw {r:>9.2} ms  ratio {:>5.2}  {verdict}",
                    who.name(),
                    line.tool,
                    e / r
                );
                report.line(who.name(), line.tool, &args, e, r, &verdict);
                if !flags.is_empty() {
                    misses.push(format!(
                        "{engine} {} {name}: {e:.2} ms against raw {r:.2} ms: {verdict}",
                        who.name()
                    ));
                }
            }
        }
        report.engine_done(engine, started_engine.elapsed());
        println!(
            "{engine}: the matrix took {:.0} s; its tables are in {}",
            started_engine.elapsed().as_secs_f64(),
            report.path().display()
        );
        served.server.abort();
    }
    println!(
        "\nreport_matrix ({n} loans): {} lines over a bound",
        misses.len()
    );
    for m in &misses {
        println!("  {m}");
    }
}

fn main() {
    bench();
}
