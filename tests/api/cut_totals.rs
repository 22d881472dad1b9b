//! Groups cut by their limit carry their totals: the same query without its keys, asked next
//! in the same call (as `report_loans` asks for its `totalCount`), is answered from them
//! without a statement, and equals that query run on its own, on both engines and for the
//! organisation's and a company's scopes.

use serde_json::{json, Value};

use crate::data::query_echo_options;
use crate::helpers::{seed_app, spawn_app_with, TestApp};
use crate::metrics::scrape;

/// Grouped queries whose aggregates add up across groups (counts, sums, least and greatest
/// of a decimal, an instant and, on SQLite, a text), each with its limit below its number of
/// groups. (PostgreSQL's greatest text is by the database's collation, which the host's
/// totals, by bytes, do not stand for: such a query runs its own statement.)
fn cut_queries(postgres: bool) -> Vec<Value> {
    let text = if postgres {
        "lockedCompensation"
    } else {
        "status"
    };
    let aggregates = json!([
        ["count", null],
        ["countOf", "loanAmount"],
        ["sum", "loanAmount"],
        ["min", "loanAmount"],
        ["max", "loanAmount"],
        ["min", "statusDate"],
        ["max", text],
        ["sum", "lockedCompensation"]
    ]);
    // Filtered: without a filter an organisation's or a company's groups come from the
    // import's totals, which answer the query without its keys as cheaply.
    let filter = json!({"statuses": ["Loan Open", "Loan Funded", "Loan Closed", "Loan Approved"]});
    vec![
        // An officer's loans, most first (report_loans's shape).
        json!({"dataset": "loans", "groupBy": [{"field": "loanOfficerId"}], "filter": filter,
               "aggregates": aggregates, "orderBy": [[1, true]], "limit": 2}),
        // Months of a date, with its null check (report_loans's period shape).
        json!({"dataset": "loans", "groupBy": [{"period": ["statusDate", "month"]}],
               "predicates": [["statusDate", "isNotNull", null]], "filter": filter,
               "aggregates": aggregates, "limit": 2}),
        // Labels of a status with a fallback, and a second key.
        json!({"dataset": "loans",
               "groupBy": [{"mapped": ["status", [["Loan Open", "Open"], ["Loan Funded", "Done"]], "Other"]},
                           {"field": "loanType"}],
               "filter": {"searchText": "a"},
               "aggregates": aggregates, "orderBy": [[2, true]], "limit": 2}),
    ]
}

/// An app on one engine with `query_echo`, `loans` seeded loans and its metrics' port.
async fn app_on(postgres: bool, loans: u64) -> (TestApp, u16) {
    let (options, port) = query_echo_options(postgres).with_metrics();
    let app = spawn_app_with(options).await;
    seed_app(&app, 27, loans).await;
    (app, port)
}

/// `grouped` without its keys, order and limit.
fn ungrouped(grouped: &Value) -> Value {
    let mut twin = grouped.clone();
    let o = twin.as_object_mut().unwrap();
    for k in ["groupBy", "orderBy", "limit"] {
        o.remove(k);
    }
    twin
}

#[tokio::test]
async fn the_ungrouped_query_after_cut_groups_is_answered_from_their_totals() {
    for postgres in [false, true] {
        // Arrange
        let (app, port) = app_on(postgres, 400).await;
        let callers = [
            app.token_for("admin@demo.loanhost.local"),
            app.token_for("processor@demo.loanhost.local"),
        ];
        let before = scrape(&app, port).await;
        let mut asked = 0.0;
        for token in &callers {
            for grouped in cut_queries(postgres) {
                let twin = ungrouped(&grouped);
                let mut both = grouped.clone();
                both["then"] = twin.clone();

                // Act
                let answer = app.call_ok(token, "query_echo", both).await;
                let alone = app.call_ok(token, "query_echo", twin).await;

                // Assert: the groups were cut (so their totals came along), and the
                // ungrouped answer within the call is the one its own statement gives.
                assert_eq!(answer["truncated"], true, "{postgres}: {answer}");
                let shown = answer["rows"].as_array().unwrap().len() as u64;
                assert!(answer["totalGroups"].as_u64().unwrap() > shown, "{answer}");
                assert_eq!(answer["then"], alone, "{postgres}: {grouped}");
                let row = &alone["rows"][0];
                assert!(row[0].as_i64().unwrap() > 0, "{alone}");
                assert!(row[2].is_string() && row[5].is_string(), "{alone}");
                asked += 1.0;
            }
        }
        let after = scrape(&app, port).await;

        // Assert: each ungrouped query in a call was answered without a statement; the
        // grouped ones and those run alone by theirs.
        let delta = |kind: &str| {
            let k = format!("loanhost_data_queries_total{{kind=\"{kind}\"}}");
            after.get(&k).copied().unwrap_or(0.0) - before.get(&k).copied().unwrap_or(0.0)
        };
        assert_eq!(delta("call_totals"), asked, "{postgres}: {after:?}");
        assert_eq!(delta("statement"), 2.0 * asked, "{postgres}: {after:?}");
    }
}

#[tokio::test]
async fn a_query_that_differs_from_the_cut_groups_runs_its_own_statement() {
    // Arrange: cut groups, then the ungrouped query with another filter, another aggregate
    // list, a distinct count (which groups do not add up to).
    let (app, port) = app_on(false, 300).await;
    let admin = app.token_for("admin@demo.loanhost.local");
    let grouped = cut_queries(false).remove(0);
    let twin = ungrouped(&grouped);
    let mut other_filter = twin.clone();
    other_filter["filter"] = json!({"statuses": ["Loan Open"]});
    let mut other_aggregates = twin.clone();
    other_aggregates["aggregates"] = json!([["count", null]]);
    let mut distinct = grouped.clone();
    distinct["aggregates"] = json!([["count", null], ["countDistinct", "loanType"]]);
    let before = scrape(&app, port).await;

    for (first, then) in [
        (grouped.clone(), other_filter),
        (grouped.clone(), other_aggregates),
        (distinct.clone(), ungrouped(&distinct)),
    ] {
        let mut both = first.clone();
        both["then"] = then.clone();

        // Act
        let answer = app.call_ok(&admin, "query_echo", both).await;
        let alone = app.call_ok(&admin, "query_echo", then).await;

        // Assert
        assert_eq!(answer["truncated"], true, "{answer}");
        assert_eq!(answer["then"], alone, "{first}");
    }
    let after = scrape(&app, port).await;
    let k = "loanhost_data_queries_total{kind=\"call_totals\"}";
    assert_eq!(
        after.get(k).copied().unwrap_or(0.0) - before.get(k).copied().unwrap_or(0.0),
        0.0,
        "{after:?}"
    );
}
