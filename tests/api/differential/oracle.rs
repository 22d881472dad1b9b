//! Each report recomputed from the imported lines (docs/design.md §5 and §7), for one caller
//! and one argument set. It shares no code with the plugins or the host's query compiler.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{json, Map, Value};
use time::{Date, Duration};

use super::tables::{
    funnel_stage, FUNNEL, MACRO, MLO, MLO_TERMINAL, ROLE_ORDER, STATUSES, WAREHOUSE,
};
use super::values::{
    at, midnight, money, month_label, months_after, passes, period, reads_names, roles_of,
    round_half_away,
};
use super::World;
use crate::data::{scaled, visible};

// ---- the reports ----------------------------------------------------------------------------

pub(super) fn in_scope<'a>(w: &'a World, caller: &Value, filter: &Value) -> Vec<&'a Value> {
    w.loans
        .iter()
        .filter(|l| visible(caller, &w.agents, l) && passes(filter, l))
        .collect()
}

/// A `report_loans` bucket's `key` and `keyId`.
pub(super) type BucketKey = (String, Option<String>);

/// docs/design.md §7.1.
pub(super) fn report_loans(w: &World, caller: &Value, args: &Value) -> Value {
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
pub(super) fn loan_pipeline_report(w: &World, caller: &Value, args: &Value) -> Value {
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
pub(super) fn report_loan_milestones(w: &World, caller: &Value, args: &Value) -> Value {
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

pub(super) fn org_wide_refusal(tool: &str, caller: &Value) -> Option<Value> {
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

pub(super) fn date_arg(args: &Value, key: &str) -> Option<Date> {
    args[key]
        .as_str()
        .map(|s| loanhost::config::parse_date(s).unwrap())
}

/// docs/design.md §7.4.
pub(super) fn warehouse_loan_milestone_report(w: &World, caller: &Value, args: &Value) -> Value {
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
pub(super) fn mlo_pipeline_report(w: &World, caller: &Value, args: &Value) -> Value {
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
