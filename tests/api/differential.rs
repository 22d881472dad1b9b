//! Differential tests on seeded data: every report, for callers of every role (several of them
//! holding more than one), with several argument sets each, on SQLite and on PostgreSQL, equals a
//! straightforward implementation written here as a whole JSON document, and the two engines
//! answer byte for byte the same. The oracle shares no code with the plugins or the host's query
//! compiler: it reads the import files and applies docs/design.md §5 and §7 (scope from `data.rs`).
//! One data set is generated back from a mid-March day, one from 2 January 2027, so windows run
//! across a year boundary and through ISO week 2026-W53.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{json, Map, Value};
use time::format_description::well_known::Rfc3339;
use time::{Date, Duration, OffsetDateTime};

use crate::data::{scaled, visible};
use crate::helpers::{
    example_plugin, seed_app_on, spawn_app_with, tool_manifest, tool_wasm, AppOptions, TestApp,
    TODAY,
};

const TOOLS: [&str; 5] = [
    "report_loans",
    "loan_pipeline_report",
    "report_loan_milestones",
    "warehouse_loan_milestone_report",
    "mlo_pipeline_report",
];

/// The spec's 45 loan statuses, in its order (the raw-milestone `stageOrder`).
const STATUSES: [&str; 45] = [
    "App Started",
    "Loan Officer Review",
    "Loan Open",
    "Loan Prequal",
    "Loan Preapproval",
    "Loan Submitted",
    "Loan Approved",
    "Loan Docs",
    "Loan Funded",
    "Loan On Hold",
    "Loan Suspended",
    "Loan Canceled",
    "Loan Denied",
    "Loan Closed",
    "Loan Underwriting",
    "Loan Other",
    "Loan Recorded",
    "Loan Clear To Close",
    "Loan Processing",
    "Loan Final Underwriting",
    "Loan Docs Back",
    "Loan Funding Conditions",
    "Loan Final Docs",
    "Loan Sold",
    "Loan Pre-Processing",
    "Loan Document Check",
    "Loan Document Check Failed",
    "Loan Pre-Underwriting",
    "Loan Condition Review",
    "Loan Pre-Doc QC",
    "Loan Docs Ordered",
    "Loan Docs Drawn",
    "Loan Investor Conditions",
    "Loan Investor Conditions Sent",
    "Loan Ready For Sale",
    "Loan Submitted For Purchase Review",
    "Loan In Purchase Review",
    "Loan Pre-Purchase Conditions",
    "Loan Submitted For Final Purchase Review",
    "Loan In Final Purchase Review",
    "Loan Clear To Purchase",
    "Loan Purchased",
    "Loan Counter Offer",
    "Loan Withdrawn",
    "Loan Archived",
];

/// docs/design.md §7.2: (order, stage, terminal, statuses).
const MACRO: [(u32, &str, bool, &[&str]); 10] = [
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

/// docs/design.md §7.3.
const FUNNEL: [&str; 5] = [
    "1. Opened",
    "2. Pre-Approved",
    "3. Rate Locked",
    "4. Approved",
    "5. Closed & Funded",
];

fn funnel_stage(raw: &str) -> &'static str {
    match raw {
        "Loan Open" => "1. Opened",
        "Loan Preapproval" => "2. Pre-Approved",
        "Rate Locked" => "3. Rate Locked",
        "Loan Approved" | "Loan Clear To Close" => "4. Approved",
        "Loan Closed" | "Loan Funded" => "5. Closed & Funded",
        _ => "Other",
    }
}

/// docs/design.md §7.4: milestones in order with their funnel stage.
const WAREHOUSE: [(&str, &str); 10] = [
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

/// docs/design.md §7.5: candidate stages in display order (1-based).
const MLO: [&str; 21] = [
    "1. Lead",
    "2. Contacted",
    "3. Interview Scheduled",
    "4. Interviewed",
    "5. Offer Extended",
    "6. Offer Accepted",
    "7. Pre-Licensing Course",
    "8. Exam Scheduled",
    "9. Exam Passed",
    "10. License Application Submitted",
    "11. Background Check",
    "12. License Approved",
    "13. NMLS Sponsorship",
    "14. Onboarding",
    "15. Systems Setup",
    "Fully Onboarded",
    "Closed Won",
    "Closed Lost",
    "License Not Approved",
    "Exam Failed",
    "App Cancelled",
];
const MLO_TERMINAL: [&str; 4] = [
    "Fully Onboarded",
    "License Not Approved",
    "Exam Failed",
    "App Cancelled",
];

/// Role codes in the order the host lists a caller's roles.
const ROLE_ORDER: [&str; 8] = [
    "Admin",
    "Processor",
    "ConciergeKey",
    "Agent",
    "DualLicensedAgent",
    "PreLicensed",
    "CompanyAdmin",
    "User",
];

struct World {
    app: TestApp,
    today: Date,
    agents: HashMap<String, Value>,
    loans: Vec<Value>,
    history: Vec<Value>,
    milestones: Vec<Value>,
    deals: Vec<Value>,
}

async fn world(seed: u64, today: &str, postgres: bool) -> World {
    world_in(seed, today, postgres, None).await
}

/// A world whose `report_loans` is the build written in `language` (plugins/examples/), when
/// given. Their compiled components are cached across the apps of the test run (an
/// interpreter's component takes seconds to compile).
async fn world_in(seed: u64, today: &str, postgres: bool, language: Option<&str>) -> World {
    let mut options = AppOptions {
        postgres,
        env: vec![("LOANHOST_TODAY", today.to_string())],
        ..AppOptions::default()
    };
    for t in TOOLS {
        options = match language {
            Some(language) if t == "report_loans" => {
                let (wasm, manifest) = example_plugin(language, t);
                options
                    .with_shared_compile_cache()
                    .plugin(t, wasm, manifest)
            }
            _ => options.plugin(t, tool_wasm(t), tool_manifest(t)),
        };
    }
    let app = spawn_app_with(options).await;
    let data = seed_app_on(&app, seed, 500, today).await;
    World {
        app,
        today: loanhost::config::parse_date(today).unwrap(),
        agents: data.agents,
        loans: data.loans,
        history: data.history,
        milestones: data.milestones,
        deals: data.deals,
    }
}

// ---- values --------------------------------------------------------------------------------

fn at(s: &str) -> OffsetDateTime {
    OffsetDateTime::parse(s, &Rfc3339).unwrap()
}

fn midnight(d: Date) -> OffsetDateTime {
    d.midnight().assume_utc()
}

fn month_label(t: Date) -> String {
    format!("{:04}-{:02}", t.year(), u8::from(t.month()))
}

fn period(t: OffsetDateTime, unit: &str) -> String {
    let d = t.date();
    match unit {
        "Week" => {
            let (y, w, _) = d.to_iso_week_date();
            format!("{y:04}-W{w:02}")
        }
        "Quarter" => format!("{:04}-Q{}", d.year(), (u8::from(d.month()) - 1) / 3 + 1),
        "Year" => format!("{:04}", d.year()),
        _ => month_label(d),
    }
}

/// The first day of the month `k` months after `d`'s month.
fn months_after(d: Date, k: i32) -> Date {
    let index = d.year() * 12 + i32::from(u8::from(d.month())) - 1 + k;
    Date::from_calendar_date(
        index.div_euclid(12),
        time::Month::try_from((index.rem_euclid(12) + 1) as u8).unwrap(),
        1,
    )
    .unwrap()
}

/// A scaled (×10⁴) decimal as the JSON number the reports write.
fn money(v: i128) -> Value {
    let sign = if v < 0 { "-" } else { "" };
    let (whole, frac) = (v.abs() / 10_000, v.abs() % 10_000);
    let text = if frac == 0 {
        format!("{sign}{whole}")
    } else {
        format!("{sign}{whole}.{frac:04}")
            .trim_end_matches('0')
            .to_string()
    };
    serde_json::from_str(&text).unwrap()
}

/// `num / den` rounded half away from zero (`den` > 0).
fn round_half_away(num: i128, den: i128) -> i128 {
    let (q, r) = (num / den, num % den);
    if 2 * r.abs() >= den {
        q + num.signum()
    } else {
        q
    }
}

fn roles_of(caller: &Value) -> Vec<&str> {
    caller["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect()
}

fn reads_names(caller: &Value) -> bool {
    roles_of(caller)
        .iter()
        .any(|r| ["Admin", "Processor", "ConciergeKey"].contains(r))
}

// ---- the filter, read from its JSON ---------------------------------------------------------

/// Whether `loan` passes `filter` (the spec's filter table, applied naively).
fn passes(filter: &Value, loan: &Value) -> bool {
    let Some(f) = filter.as_object() else {
        return true;
    };
    let text = |k: &str| loan[k].as_str();
    let same = |a: Option<&str>, b: &Value| {
        a.zip(b.as_str())
            .is_some_and(|(a, b)| a.eq_ignore_ascii_case(b))
    };
    f.iter().all(|(key, want)| match key.as_str() {
        "statuses" | "loanTypes" | "purposes" => {
            let field = match key.as_str() {
                "statuses" => "status",
                "loanTypes" => "loanType",
                _ => "purpose",
            };
            let list = want.as_array().unwrap();
            list.is_empty() || list.iter().any(|w| text(field) == w.as_str())
        }
        "statusDateFrom" | "closingDateFrom" | "updatedFrom" | "statusDateTo" | "closingDateTo"
        | "updatedTo" => {
            let field = match &key[..key.len() - if key.ends_with("From") { 4 } else { 2 }] {
                "statusDate" => "statusDate",
                "closingDate" => "estimatedClosingDate",
                _ => "updated",
            };
            let bound = at(want.as_str().unwrap());
            text(field).is_some_and(|v| {
                if key.ends_with("From") {
                    at(v) >= bound
                } else {
                    at(v) <= bound
                }
            })
        }
        "loanAmountMin" | "loanAmountMax" | "commissionMin" | "commissionMax" => {
            let field = if key.starts_with("loan") {
                "loanAmount"
            } else {
                "lockedCompensation"
            };
            let bound = scaled(want).unwrap();
            scaled(&loan[field]).is_some_and(|v| {
                if key.ends_with("Min") {
                    v >= bound
                } else {
                    v <= bound
                }
            })
        }
        "loanOfficerIds" => {
            let list = want.as_array().unwrap();
            list.is_empty() || list.iter().any(|w| same(text("loanOfficerId"), w))
        }
        "referringAgentId" => same(text("referringAgentId"), want),
        "processorId" => same(text("processorId"), want),
        "propertyState" => same(text("propertyState"), want),
        "searchText" => {
            let hay: Vec<String> = [
                "loanNumber",
                "borrowerFirstName",
                "borrowerLastName",
                "borrowerEmail",
            ]
            .iter()
            .filter_map(|k| text(k).map(str::to_lowercase))
            .collect();
            want.as_str()
                .unwrap()
                .split_whitespace()
                .all(|t| hay.iter().any(|h| h.contains(&t.to_lowercase())))
        }
        other => panic!("the oracle does not know filter field {other}"),
    })
}

// ---- the reports ----------------------------------------------------------------------------

fn in_scope<'a>(w: &'a World, caller: &Value, filter: &Value) -> Vec<&'a Value> {
    w.loans
        .iter()
        .filter(|l| visible(caller, &w.agents, l) && passes(filter, l))
        .collect()
}

/// A `report_loans` bucket's `key` and `keyId`.
type BucketKey = (String, Option<String>);

/// docs/design.md §7.1.
fn report_loans(w: &World, caller: &Value, args: &Value) -> Value {
    let group_by = args["groupBy"].as_str().unwrap_or("None");
    let metric = args["metric"].as_str().unwrap_or("Count");
    let metric_field = args["metricField"].as_str().unwrap_or("LoanAmount");
    let date_field = args["dateField"].as_str().unwrap_or("StatusDate");
    let mfield = match metric_field {
        "LoanAmount" => "loanAmount",
        "LockedCompensation" => "lockedCompensation",
        _ => "estimatedCompensation",
    };
    let dfield = match date_field {
        "StatusDate" => "statusDate",
        "ClosingDate" => "estimatedClosingDate",
        _ => "updated",
    };
    let names = reads_names(caller);
    let mut groups: BTreeMap<BucketKey, Vec<&Value>> = BTreeMap::new();
    if group_by == "None" {
        groups.insert(("all".into(), None), vec![]);
    }
    for l in in_scope(w, caller, &args["filter"]) {
        let key = match group_by {
            "None" => ("all".to_string(), None),
            "Status" | "LoanType" | "Purpose" => {
                let field = match group_by {
                    "Status" => "status",
                    "LoanType" => "loanType",
                    _ => "purpose",
                };
                (l[field].as_str().unwrap_or("Unknown").to_string(), None)
            }
            "LoanOfficer" | "ReferringAgent" => {
                let (id, name) = if group_by == "LoanOfficer" {
                    ("loanOfficerId", "loanOfficerName")
                } else {
                    ("referringAgentId", "referringAgentName")
                };
                match l[id].as_str() {
                    None => ("Unassigned".to_string(), None),
                    Some(id) => {
                        let shown = l[name]
                            .as_str()
                            .filter(|n| names && !n.trim().is_empty())
                            .unwrap_or(id);
                        (shown.to_string(), Some(id.to_string()))
                    }
                }
            }
            unit => match l[dfield].as_str() {
                None => continue,
                Some(d) => (period(at(d), unit), None),
            },
        };
        groups.entry(key).or_default().push(l);
    }
    let mut buckets: Vec<(BucketKey, Vec<&Value>)> = groups.into_iter().collect();
    if !["Month", "Quarter", "Year"].contains(&group_by) {
        buckets.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    }
    let total: usize = buckets.iter().map(|b| b.1.len()).sum();
    let truncated = buckets.len() > 100;
    buckets.truncate(100);
    let out: Vec<Value> = buckets
        .iter()
        .map(|((key, key_id), ls)| {
            let values: Vec<i128> = ls.iter().filter_map(|l| scaled(&l[mfield])).collect();
            let mut b = Map::new();
            b.insert("key".into(), json!(key));
            b.insert("keyId".into(), json!(key_id));
            b.insert("count".into(), json!(ls.len()));
            let mut value = json!(ls.len());
            if values.is_empty() {
                if metric != "Count" {
                    value = Value::Null;
                }
            } else {
                let sum: i128 = values.iter().sum();
                let average = money(100 * round_half_away(sum, 100 * values.len() as i128));
                let (min, max) = (
                    money(*values.iter().min().unwrap()),
                    money(*values.iter().max().unwrap()),
                );
                value = match metric {
                    "Count" => value,
                    "Sum" => money(sum),
                    "Average" => average.clone(),
                    "Min" => min.clone(),
                    _ => max.clone(),
                };
                b.insert("sum".into(), money(sum));
                b.insert("average".into(), average);
                b.insert("min".into(), min);
                b.insert("max".into(), max);
            }
            b.insert("value".into(), value);
            Value::Object(b)
        })
        .collect();
    json!({
        "groupBy": group_by, "metric": metric_field, "function": metric,
        "totalCount": total, "bucketCount": out.len(), "truncated": truncated, "buckets": out,
    })
}

/// docs/design.md §7.2.
fn loan_pipeline_report(w: &World, caller: &Value, args: &Value) -> Value {
    let months = match args["lookbackMonths"].as_i64() {
        None => 3,
        Some(n) if n < 1 => 3,
        Some(n) => n.min(36),
    } as i32;
    let loans = in_scope(w, caller, &args["filter"]);
    let mut active = 0;
    let stages: Vec<Value> = MACRO
        .iter()
        .map(|(order, stage, terminal, statuses)| {
            let here: Vec<&&Value> = loans
                .iter()
                .filter(|l| statuses.contains(&l["status"].as_str().unwrap()))
                .collect();
            if !terminal {
                active += here.len();
            }
            let amount: i128 = here.iter().filter_map(|l| scaled(&l["loanAmount"])).sum();
            json!({"stage": stage, "order": order, "isTerminal": terminal, "count": here.len(), "totalLoanAmount": money(amount), "statuses": statuses})
        })
        .collect();
    let this_month = months_after(w.today, 0);
    let trend: Vec<Value> = (0..months)
        .map(|i| {
            let label = month_label(months_after(this_month, i - (months - 1)));
            let here: Vec<&&Value> = loans
                .iter()
                .filter(|l| {
                    l["statusDate"]
                        .as_str()
                        .is_some_and(|d| period(at(d), "Month") == label)
                })
                .collect();
            let amount: i128 = here.iter().filter_map(|l| scaled(&l["loanAmount"])).sum();
            json!({"period": label, "count": here.len(), "totalLoanAmount": money(amount)})
        })
        .collect();
    json!({
        "currentPipelineByStage": stages,
        "monthlyTrend": trend,
        "activeLoanCount": active,
        "note": format!("Pipeline by current status; terminal stages are Post-Closing and Inactive. Monthly trend counts loans by the date their current status was set, over the {months} month(s) ending {}. Loans move on after closing or funding, so use report_loan_milestones to count loans closed or funded in a period.", month_label(this_month)),
    })
}

/// docs/design.md §7.3.
fn report_loan_milestones(w: &World, caller: &Value, args: &Value) -> Value {
    let week = args["granularity"] == "Week";
    let lookback = match args["lookback"].as_i64() {
        Some(n) if n > 0 => n.min(520),
        _ => 4,
    };
    let northstar = args["groupByNorthstar"].as_bool().unwrap_or(true);
    let exclude: Vec<&str> = args["excludeStages"]
        .as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap()).collect())
        .unwrap_or_default();
    let (start, end) = if week {
        let monday = w.today - Duration::days(w.today.weekday().number_days_from_monday().into());
        (
            monday - Duration::weeks(lookback - 1),
            monday + Duration::weeks(1),
        )
    } else {
        (
            months_after(w.today, -(lookback as i32 - 1)),
            months_after(w.today, 1),
        )
    };
    let loans: HashMap<&str, &Value> = in_scope(w, caller, &args["filter"])
        .into_iter()
        .map(|l| (l["id"].as_str().unwrap(), l))
        .collect();
    let mut cells: BTreeMap<(String, u32, String), BTreeSet<&str>> = BTreeMap::new();
    for h in &w.history {
        let when = at(h["occurredAt"].as_str().unwrap());
        let id = h["loanId"].as_str().unwrap();
        if when < midnight(start) || when >= midnight(end) || !loans.contains_key(id) {
            continue;
        }
        let raw = h["status"].as_str().unwrap();
        let (stage, order) = if northstar {
            let s = funnel_stage(raw);
            (
                s.to_string(),
                FUNNEL
                    .iter()
                    .position(|x| *x == s)
                    .map_or(6, |p| p as u32 + 1),
            )
        } else {
            (
                raw.to_string(),
                STATUSES
                    .iter()
                    .position(|x| *x == raw)
                    .map_or(999, |p| p as u32 + 1),
            )
        };
        if exclude.contains(&stage.as_str()) {
            continue;
        }
        cells
            .entry((
                period(when, if week { "Week" } else { "Month" }),
                order,
                stage,
            ))
            .or_default()
            .insert(id);
    }
    let truncated = cells.len() > 1000;
    let buckets: Vec<Value> = cells
        .iter()
        .take(1000)
        .map(|((period, order, stage), ids)| {
            let amount: i128 = ids.iter().filter_map(|id| scaled(&loans[id]["loanAmount"])).sum();
            json!({"period": period, "stage": stage, "stageOrder": order, "loanCount": ids.len(), "loanAmount": money(amount)})
        })
        .collect();
    let granularity = if week { "Week" } else { "Month" };
    json!({
        "granularity": granularity,
        "groupBy": if northstar { "Northstar" } else { "Milestone" },
        "truncated": truncated,
        "note": format!(
            "Distinct loans per {} and {} from persisted LOS status history, {start} through {} (UTC); only loans synced to the LOS are covered. A loan that crosses a stage in two periods counts in both. The funnel stage mapping is provisional.",
            granularity.to_lowercase(),
            if northstar { "funnel stage" } else { "raw milestone" },
            end - Duration::days(1),
        ),
        "buckets": buckets,
    })
}

fn org_wide_refusal(tool: &str, caller: &Value) -> Option<Value> {
    let roles = roles_of(caller);
    if roles
        .iter()
        .any(|r| ["Admin", "Processor", "ConciergeKey"].contains(r))
    {
        return None;
    }
    let held: Vec<&str> = ROLE_ORDER
        .iter()
        .copied()
        .filter(|r| *r == "User" || roles.contains(r))
        .collect();
    Some(json!(format!(
        "forbidden: `{tool}` requires one of the roles Admin, Processor, ConciergeKey; the caller has {}",
        held.join(", ")
    )))
}

fn date_arg(args: &Value, key: &str) -> Option<Date> {
    args[key]
        .as_str()
        .map(|s| loanhost::config::parse_date(s).unwrap())
}

/// docs/design.md §7.4.
fn warehouse_loan_milestone_report(w: &World, caller: &Value, args: &Value) -> Value {
    if let Some(refusal) = org_wide_refusal("warehouse_loan_milestone_report", caller) {
        return refusal;
    }
    let (from, to) = (
        date_arg(args, "fromDate").unwrap(),
        date_arg(args, "toDate").unwrap(),
    );
    if to < from {
        return json!(format!(
            "bad_request: toDate {to} is before fromDate {from}"
        ));
    }
    let bucket = args["bucket"].as_str().unwrap_or("Month");
    let mut cells: BTreeMap<(String, usize, String), BTreeSet<&str>> = BTreeMap::new();
    for m in &w.milestones {
        let when = at(m["occurredAt"].as_str().unwrap());
        if when < midnight(from) || when >= midnight(to + Duration::days(1)) {
            continue;
        }
        let name = m["milestone"].as_str().unwrap();
        let order = WAREHOUSE
            .iter()
            .position(|(x, _)| *x == name)
            .unwrap_or(999);
        cells
            .entry((period(when, bucket), order, name.to_string()))
            .or_default()
            .insert(m["loanId"].as_str().unwrap());
    }
    let rows: Vec<Value> = cells
        .iter()
        .map(|((period, order, name), ids)| {
            let stage = WAREHOUSE.get(*order).map_or("Other", |(_, s)| *s);
            let stage_order = FUNNEL.iter().position(|x| *x == stage).map_or(6, |p| p + 1);
            json!({"period": period, "milestone": name, "stage": stage, "stageOrder": stage_order, "loanCount": ids.len()})
        })
        .collect();
    json!({"bucket": bucket, "fromDate": from.to_string(), "toDate": to.to_string(), "rowCount": rows.len(), "rows": rows})
}

/// docs/design.md §7.5.
fn mlo_pipeline_report(w: &World, caller: &Value, args: &Value) -> Value {
    if let Some(refusal) = org_wide_refusal("mlo_pipeline_report", caller) {
        return refusal;
    }
    let from = date_arg(args, "fromDate");
    let to = date_arg(args, "toDate").unwrap_or(w.today);
    if let Some(from) = from.filter(|f| to < *f) {
        return json!(format!(
            "bad_request: toDate {to} is before fromDate {from}"
        ));
    }
    let bucket = args["bucket"].as_str().unwrap_or("Month");
    let mut cells: BTreeMap<(String, usize, String), BTreeSet<&str>> = BTreeMap::new();
    for d in &w.deals {
        let when = at(d["createdAt"].as_str().unwrap());
        if from.is_some_and(|f| when < midnight(f)) || when >= midnight(to + Duration::days(1)) {
            continue;
        }
        let stage = d["stage"].as_str().unwrap();
        let order = MLO.iter().position(|x| *x == stage).map_or(999, |p| p + 1);
        cells
            .entry((period(when, bucket), order, stage.to_string()))
            .or_default()
            .insert(d["id"].as_str().unwrap());
    }
    let rows: Vec<Value> = cells
        .iter()
        .map(|((period, order, stage), ids)| {
            json!({"period": period, "stage": stage, "displayOrder": order, "isTerminal": MLO_TERMINAL.contains(&stage.as_str()), "entryCount": ids.len()})
        })
        .collect();
    json!({"bucket": bucket, "rowCount": rows.len(), "rows": rows})
}

// ---- callers and argument sets --------------------------------------------------------------

/// Callers of every role: the demo users (three of whom hold several roles), a dual-licensed
/// officer, a concierge of another company, an assistant and a plain referrer.
fn callers(w: &World) -> Vec<Value> {
    let by_email = |e: &str| {
        w.agents
            .values()
            .find(|a| a["email"] == format!("{e}@demo.loanhost.local"))
            .unwrap_or_else(|| panic!("the seed has no {e}"))
            .clone()
    };
    let mut out: Vec<Value> = [
        "admin",
        "processor",
        "concierge",
        "agent",
        "prelicensed",
        "lead",
        "officer-processor",
        "referrer-concierge",
    ]
    .into_iter()
    .map(by_email)
    .collect();
    let first = |pick: &dyn Fn(&Value) -> bool| {
        let mut all: Vec<&Value> = w.agents.values().filter(|a| pick(a)).collect();
        all.sort_by_key(|a| a["email"].as_str().unwrap().to_string());
        all.first().map(|a| (*a).clone())
    };
    let email = |a: &Value| a["email"].as_str().unwrap().to_string();
    let on_loans = |a: &Value, field: &str| w.loans.iter().any(|l| l[field] == a["id"]);
    out.extend(first(&|a| a["roles"] == json!(["DualLicensedAgent"])));
    out.extend(first(&|a| {
        a["roles"] == json!(["ConciergeKey"]) && email(a) != "concierge@demo.loanhost.local"
    }));
    out.extend(first(&|a| {
        email(a).starts_with("assistant") && on_loans(a, "loanAssistantId")
    }));
    out.extend(first(&|a| {
        a["roles"] == json!(["Agent"])
            && email(a).starts_with("referrer")
            && on_loans(a, "referringAgentId")
    }));
    assert_eq!(out.len(), 12, "every kind of caller is in the seed");
    out
}

fn ymd(d: Date) -> String {
    d.to_string()
}

fn ts(d: Date) -> String {
    format!("{d}T00:00:00Z")
}

/// Argument sets per tool, relative to the data's "today".
fn argument_sets(w: &World) -> Vec<(&'static str, Value)> {
    let today = w.today;
    let some_officers: Vec<&str> = w
        .loans
        .iter()
        .step_by(97)
        .take(3)
        .map(|l| l["loanOfficerId"].as_str().unwrap())
        .collect();
    let a_referrer = w
        .loans
        .iter()
        .find_map(|l| l["referringAgentId"].as_str())
        .unwrap();
    vec![
        ("report_loans", json!({})),
        (
            "report_loans",
            json!({"groupBy": "Status", "metric": "Average"}),
        ),
        (
            "report_loans",
            json!({"groupBy": "LoanOfficer", "metric": "Sum", "metricField": "LockedCompensation"}),
        ),
        (
            "report_loans",
            json!({"groupBy": "ReferringAgent", "metric": "Max", "metricField": "EstimatedCompensation"}),
        ),
        (
            "report_loans",
            json!({"groupBy": "Month", "metric": "Min", "dateField": "ClosingDate"}),
        ),
        (
            "report_loans",
            json!({"groupBy": "Quarter", "dateField": "Updated", "filter": {"loanAmountMin": 200000, "loanAmountMax": "900000.5"}}),
        ),
        (
            "report_loans",
            json!({"groupBy": "Year", "metric": "Average", "metricField": "EstimatedCompensation"}),
        ),
        (
            "report_loans",
            json!({"groupBy": "LoanType", "metric": "Sum", "filter": {"statuses": ["Loan Open", "Loan Funded", "Loan Sold", "Loan Withdrawn"], "purposes": ["Purchase", "Refinance"]}}),
        ),
        (
            "report_loans",
            json!({"groupBy": "Purpose", "filter": {"statusDateFrom": ts(today - Duration::days(120)), "statusDateTo": ts(today), "propertyState": "tx"}}),
        ),
        (
            "report_loans",
            json!({"groupBy": "Status", "metric": "Max", "filter": {"loanOfficerIds": some_officers, "commissionMin": 1500}}),
        ),
        (
            "report_loans",
            json!({"groupBy": "LoanOfficer", "filter": {"referringAgentId": a_referrer.to_uppercase()}}),
        ),
        (
            "report_loans",
            json!({"metric": "Average", "filter": {"searchText": " LN0000 ", "updatedFrom": ts(today - Duration::days(400)), "closingDateTo": ts(today + Duration::days(30))}}),
        ),
        ("loan_pipeline_report", json!({})),
        ("loan_pipeline_report", json!({"lookbackMonths": 14})),
        (
            "loan_pipeline_report",
            json!({"lookbackMonths": 0, "filter": {"loanTypes": ["FHA", "VA"]}}),
        ),
        ("loan_pipeline_report", json!({"lookbackMonths": 99})),
        ("report_loan_milestones", json!({})),
        (
            "report_loan_milestones",
            json!({"granularity": "Week", "lookback": 6}),
        ),
        (
            "report_loan_milestones",
            json!({"granularity": "Week", "lookback": 60, "groupByNorthstar": false}),
        ),
        (
            "report_loan_milestones",
            json!({"granularity": "Quarterly", "lookback": -2, "excludeStages": ["Other", "3. Rate Locked"]}),
        ),
        (
            "report_loan_milestones",
            json!({"lookback": 15, "groupByNorthstar": false, "excludeStages": ["Loan Open"], "filter": {"purposes": ["Purchase"], "loanAmountMax": 600000}}),
        ),
        (
            "warehouse_loan_milestone_report",
            json!({"fromDate": ymd(today - Duration::days(170)), "toDate": ymd(today)}),
        ),
        (
            "warehouse_loan_milestone_report",
            json!({"fromDate": ymd(today - Duration::days(60)), "toDate": ymd(today + Duration::days(10)), "bucket": "Week"}),
        ),
        (
            "warehouse_loan_milestone_report",
            json!({"fromDate": ymd(today), "toDate": ymd(today - Duration::days(1))}),
        ),
        ("mlo_pipeline_report", json!({})),
        (
            "mlo_pipeline_report",
            json!({"fromDate": ymd(today - Duration::days(300)), "bucket": "Week"}),
        ),
        (
            "mlo_pipeline_report",
            json!({"fromDate": ymd(today - Duration::days(400)), "toDate": ymd(today - Duration::days(3)), "bucket": "Month"}),
        ),
        (
            "mlo_pipeline_report",
            json!({"fromDate": ymd(today + Duration::days(1))}),
        ),
    ]
}

fn expected(w: &World, tool: &str, caller: &Value, args: &Value) -> Value {
    match tool {
        "report_loans" => report_loans(w, caller, args),
        "loan_pipeline_report" => loan_pipeline_report(w, caller, args),
        "report_loan_milestones" => report_loan_milestones(w, caller, args),
        "warehouse_loan_milestone_report" => warehouse_loan_milestone_report(w, caller, args),
        _ => mlo_pipeline_report(w, caller, args),
    }
}

/// What a tool answered: its structured content, or its error text as a JSON string.
async fn answer(app: &TestApp, token: &str, tool: &str, args: &Value) -> Value {
    let result = app.call_tool(token, tool, args.clone()).await;
    if result["isError"] == true {
        result["content"][0]["text"].clone()
    } else {
        let text: Value =
            serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(
            text, result["structuredContent"],
            "{tool}: text and structured content differ"
        );
        result["structuredContent"].clone()
    }
}

/// Every tool, argument set and caller on one data set, on both engines.
async fn differential(seed: u64, today: &str) {
    // Arrange: the same files imported into SQLite and PostgreSQL.
    let engines = [
        world(seed, today, false).await,
        world(seed, today, true).await,
    ];
    let w = &engines[0];
    assert_eq!(w.loans, engines[1].loans, "both engines got the same data");
    let sets = argument_sets(w);
    let mut compared = BTreeMap::<&str, usize>::new();

    for caller in callers(w) {
        let email = caller["email"].as_str().unwrap();
        let who = format!("{email} {}", caller["roles"]);
        for (tool, args) in &sets {
            // Act
            let mut got = Vec::new();
            for e in &engines {
                got.push(answer(&e.app, &e.app.token_for(email), tool, args).await);
            }

            // Assert
            let want = expected(w, tool, &caller, args);
            assert_eq!(
                got[0], want,
                "sqlite: {tool} {args} for {who} (today {today})"
            );
            assert_eq!(
                got[1], want,
                "postgres: {tool} {args} for {who} (today {today})"
            );
            let rows = ["buckets", "rows", "currentPipelineByStage"]
                .iter()
                .filter_map(|k| want[*k].as_array())
                .map(|a| a.iter().filter(|r| r["count"] != 0).count())
                .sum::<usize>();
            *compared.entry(tool).or_default() += rows;
        }
    }
    for tool in TOOLS {
        assert!(
            compared.get(tool).copied().unwrap_or(0) > 50,
            "too little data compared for {tool}: {compared:?}"
        );
    }
}

/// `report_loans` written in `language` (plugins/examples/<language>/report_loans) answers
/// every argument set, for every caller, on both engines, as the oracle does: the same answers
/// as the Rust build, which the tests above hold to the same oracle.
async fn ported(language: &str, seed: u64, today: &str) {
    // Arrange
    let engines = [
        world_in(seed, today, false, Some(language)).await,
        world_in(seed, today, true, Some(language)).await,
    ];
    let w = &engines[0];
    let sets: Vec<_> = argument_sets(w)
        .into_iter()
        .filter(|(tool, _)| *tool == "report_loans")
        .collect();
    assert!(sets.len() >= 10);
    let mut buckets = 0;
    for caller in callers(w) {
        let email = caller["email"].as_str().unwrap();
        for (tool, args) in &sets {
            // Act
            let want = expected(w, tool, &caller, args);
            for (e, engine) in engines.iter().zip(["sqlite", "postgres"]) {
                let got = answer(&e.app, &e.app.token_for(email), tool, args).await;
                // Assert
                assert_eq!(
                    got, want,
                    "{language} on {engine}: {tool} {args} for {email} {}",
                    caller["roles"]
                );
            }
            buckets += want["buckets"].as_array().map_or(0, Vec::len);
        }
    }
    assert!(buckets > 50, "too little data compared: {buckets} buckets");
}

#[tokio::test]
async fn report_loans_written_in_python_equals_the_oracle_on_both_engines() {
    ported("python", 31, TODAY).await;
}

#[tokio::test]
async fn report_loans_written_in_typescript_equals_the_oracle_on_both_engines() {
    ported("typescript", 31, TODAY).await;
}

#[tokio::test]
async fn every_report_equals_the_oracle_on_both_engines_in_march() {
    differential(31, TODAY).await;
}

#[tokio::test]
async fn every_report_equals_the_oracle_on_both_engines_across_new_year_and_week_53() {
    // 2027-01-02 is a Saturday in ISO week 2026-W53: weekly windows end in week 53 of the
    // previous ISO year, monthly ones run from 2026 into 2027.
    assert_eq!(
        Date::from_calendar_date(2027, time::Month::January, 2)
            .unwrap()
            .to_iso_week_date(),
        (2026, 53, time::Weekday::Saturday)
    );
    differential(32, "2027-01-02").await;
}

#[test]
fn the_oracles_helpers_are_right() {
    assert_eq!(money(-12_345_000), json!(-1234.5));
    assert_eq!(money(5), json!(0.0005));
    assert_eq!(round_half_away(-15, 10), -2);
    assert_eq!(round_half_away(15, 10), 2);
    assert_eq!(round_half_away(14, 10), 1);
    assert_eq!(
        months_after(
            Date::from_calendar_date(2027, time::Month::January, 2).unwrap(),
            -1
        ),
        Date::from_calendar_date(2026, time::Month::December, 1).unwrap()
    );
    assert_eq!(period(at("2027-01-03T23:59:59Z"), "Week"), "2026-W53");
    assert_eq!(period(at("2027-01-04T00:00:00Z"), "Week"), "2027-W01");
    assert_eq!(period(at("2026-12-31T12:00:00Z"), "Quarter"), "2026-Q4");
}
