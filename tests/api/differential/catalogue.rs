//! The whole catalogue read for personal data, on both engines: every tool the server lists,
//! called as every kind of caller with argument sets of each, over the seeded data set. Every
//! answer (successes and refusals alike) is read for a borrower's email, for an officer's,
//! processor's or referrer's name given to a caller who may not read names, for a loan outside
//! the caller's scope, and for a field the tool's output schema does not declare: any one fails.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::oracle::in_scope;
use super::values::reads_names;
use super::{argument_sets, callers, world, World};

/// Argument sets for the tools beyond the six reports.
fn more_arguments(w: &World) -> Vec<(&'static str, Value)> {
    let officer = w.loans[0]["loanOfficerId"].clone();
    let mut applications: Vec<(&'static str, Value)> = w
        .applications
        .iter()
        .step_by(5)
        .flat_map(|a| {
            let args = json!({"loanApplicationId": a["id"]});
            [
                ("get_loan_application", args.clone()),
                ("get_loan_application_tasks", args.clone()),
                ("get_loan_application_contacts", args),
            ]
        })
        .collect();
    applications.push(("search_loan_applications", json!({"pageSize": 100})));
    applications.push((
        "search_loan_applications",
        json!({"statuses": ["ReadyToSubmit"], "searchText": "a", "pageSize": 100}),
    ));
    applications.into_iter().chain(vec![
        ("query_loans", json!({"pageSize": 100})),
        (
            "query_loans",
            json!({"pageSize": 100, "orderBy": "amount", "includeBorrowerName": true}),
        ),
        (
            "query_loans",
            json!({"filter": {"loanOfficerIds": [officer]}, "pageSize": 100}),
        ),
        ("search_users", json!({"limit": 100})),
        (
            "search_users",
            json!({"roles": ["LoanOfficer", "ReferringAgent"], "limit": 100}),
        ),
        ("get_user_licenses", json!({})),
        ("get_user_licenses", json!({"userId": officer})),
        (
            "search_pricing",
            json!({"propertyState": "TX", "loanAmount": 350000, "ltv": 80, "creditScore": 720, "loanType": "FHA"}),
        ),
        ("get_data_warehouse_fields", json!({})),
        ("get_loan_reporting_metadata", json!({})),
        (
            "query_data_warehouse",
            json!({"dataset": "dw-deals", "groupBy": ["stage"]}),
        ),
        (
            "query_data_warehouse",
            json!({"dataset": "dw-loan-milestones", "groupBy": ["milestone"], "aggregates": [{"function": "CountDistinct", "field": "loanId"}]}),
        ),
    ])
    .collect()
}

/// The spec's per-loan tools, whose scope is every loan for Admin and Processor.
const PER_LOAN: [&str; 4] = [
    "get_loan_application",
    "get_loan_application_tasks",
    "get_loan_application_contacts",
    "search_loan_applications",
];

/// Every string in `v`.
fn strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// The keys of `v` its schema does not declare (where the schema lists properties).
fn undeclared(v: &Value, schema: &Value, at: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(o) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, x) in o {
                    match props.get(k) {
                        Some(s) => undeclared(x, s, &format!("{at}.{k}"), out),
                        None => out.push(format!("{at}.{k}")),
                    }
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = schema.get("items") {
                for (i, x) in a.iter().enumerate() {
                    undeclared(x, items, &format!("{at}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn no_tool_gives_any_caller_personal_data_it_may_not_read_on_both_engines() {
    for postgres in [false, true] {
        // Arrange
        let w = world(26, "2026-03-15", postgres).await;
        let admin = w.app.token_for("admin@demo.loanhost.local");
        let listed = w.app.rpc(&admin, "tools/list", json!({})).await;
        let tools: Vec<(String, Value)> = listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["name"].as_str().unwrap().to_string(),
                    t["outputSchema"].clone(),
                )
            })
            .collect();
        let mut sets = argument_sets(&w);
        sets.extend(more_arguments(&w));
        for (tool, _) in &tools {
            assert!(
                sets.iter().any(|(t, _)| t == tool),
                "no arguments for {tool}"
            );
        }
        let emails: BTreeSet<&str> = w
            .loans
            .iter()
            .filter_map(|l| l["borrowerEmail"].as_str())
            .collect();
        let names: BTreeSet<&str> = w
            .loans
            .iter()
            .flat_map(|l| {
                ["loanOfficerName", "processorName", "referringAgentName"].map(|f| l[f].as_str())
            })
            .flatten()
            .collect();
        let loan_ids: BTreeSet<&str> = w.loans.iter().map(|l| l["id"].as_str().unwrap()).collect();
        let mut calls = 0;
        for caller in callers(&w) {
            let token = w.app.token_for(caller["email"].as_str().unwrap());
            let visible: BTreeSet<&str> = in_scope(&w, &caller, &json!({}))
                .iter()
                .map(|l| l["id"].as_str().unwrap())
                .collect();
            let org_wide = super::values::roles_of(&caller)
                .iter()
                .any(|r| ["Admin", "Processor"].contains(r));
            for (tool, schema) in &tools {
                for (_, args) in sets.iter().filter(|(t, _)| t == tool) {
                    // Act
                    let answer = w.app.call_tool(&token, tool, args.clone()).await;
                    calls += 1;

                    // Assert
                    let who = format!("{} {tool} {args} postgres={postgres}", caller["email"]);
                    let mut texts = Vec::new();
                    strings(&answer, &mut texts);
                    for s in &texts {
                        assert!(
                            !emails.iter().any(|e| s.contains(e)),
                            "{who}: a borrower's email"
                        );
                        if !reads_names(&caller) {
                            assert!(!names.contains(s), "{who}: the name {s}");
                        }
                        if loan_ids.contains(s) && !(org_wide && PER_LOAN.contains(&tool.as_str()))
                        {
                            assert!(
                                visible.contains(s),
                                "{who}: loan {s} is not in the caller's scope"
                            );
                        }
                    }
                    if answer["isError"] != json!(true) {
                        let mut extra = Vec::new();
                        undeclared(&answer["structuredContent"], schema, "", &mut extra);
                        assert!(
                            extra.is_empty(),
                            "{who}: fields outside the schema {extra:?}"
                        );
                    }
                }
            }
        }
        assert!(calls > 12 * tools.len(), "{calls} calls");
    }
}
