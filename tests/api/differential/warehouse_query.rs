//! `get_data_warehouse_fields` and `query_data_warehouse` against the catalog and an oracle over
//! the import files, on both engines: the fields as the host's catalog has them, the small
//! fields' values as the warehouse holds them; group-bys by a field and by a month, with
//! predicates, equal to the oracle's groups for Admin, Processor and ConciergeKey alike
//! (organisation-wide); an identifying field grouped on or compared is refused by the host;
//! other roles are refused.

use std::collections::{BTreeMap, BTreeSet};

use loanhost::data::catalog::Dataset;
use serde_json::{json, Value};

use super::{world, World};

const READERS: [&str; 3] = ["admin", "processor", "concierge"];

fn token(w: &World, who: &str) -> String {
    w.app.token_for(&format!("{who}@demo.loanhost.local"))
}

#[tokio::test]
async fn the_warehouse_fields_are_the_catalogs_with_the_warehouses_values() {
    // Arrange
    let w = world(23, "2026-03-15", false).await;
    // Act
    let answer = w
        .app
        .call_ok(&token(&w, "admin"), "get_data_warehouse_fields", json!({}))
        .await;
    // Assert
    let datasets = answer["datasets"].as_array().unwrap();
    assert_eq!(datasets.len(), 2);
    for d in datasets {
        let name = d["name"].as_str().unwrap();
        let catalog = Dataset::parse(name).unwrap();
        let fields = d["fields"].as_array().unwrap();
        let names: Vec<String> = fields
            .iter()
            .map(|f| f["name"].as_str().unwrap().into())
            .collect();
        assert_eq!(names, catalog.field_names(), "{name}");
        for f in fields {
            let field = catalog.field(f["name"].as_str().unwrap()).unwrap();
            assert_eq!(f["identifying"], json!(field.identifying()), "{name} {f}");
        }
        let (lines, key) = match name {
            "dw-loan-milestones" => (&w.milestones, "milestone"),
            _ => (&w.deals, "stage"),
        };
        let values: BTreeSet<&str> = lines.iter().map(|l| l[key].as_str().unwrap()).collect();
        let listed = fields.iter().find(|f| f["name"] == key).unwrap();
        let got: BTreeSet<&str> = listed["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(got, values, "{name}");
    }
}

#[tokio::test]
async fn warehouse_queries_equal_the_oracle_for_every_org_wide_role_on_both_engines() {
    for postgres in [false, true] {
        // Arrange
        let w = world(24, "2026-03-15", postgres).await;
        let some: Vec<&str> = w
            .milestones
            .iter()
            .map(|m| m["milestone"].as_str().unwrap())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .take(3)
            .collect();
        let since = "2025-10-01T00:00:00Z";
        // Oracle: distinct loans per milestone; loans per (month, milestone) of `some` since.
        let mut per_milestone: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        let mut per_month: BTreeMap<(String, &str), BTreeSet<&str>> = BTreeMap::new();
        for m in &w.milestones {
            let (loan, milestone, at) = (
                m["loanId"].as_str().unwrap(),
                m["milestone"].as_str().unwrap(),
                m["occurredAt"].as_str().unwrap(),
            );
            per_milestone.entry(milestone).or_default().insert(loan);
            let instant = |s: &str| {
                time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
                    .unwrap()
            };
            if some.contains(&milestone) && instant(at) >= instant(since) {
                let month = instant(at).to_offset(time::UtcOffset::UTC);
                let label = format!("{:04}-{:02}", month.year(), u8::from(month.month()));
                per_month
                    .entry((label, milestone))
                    .or_default()
                    .insert(loan);
            }
        }
        let mut stages: BTreeMap<&str, i64> = BTreeMap::new();
        for d in &w.deals {
            *stages.entry(d["stage"].as_str().unwrap()).or_default() += 1;
        }
        let by_milestone = json!({"dataset": "dw-loan-milestones", "groupBy": ["milestone"],
            "aggregates": [{"function": "CountDistinct", "field": "loanId"}], "limit": 1000});
        let by_month = json!({"dataset": "dw-loan-milestones",
            "groupBy": [{"field": "occurredAt", "period": "Month"}, "milestone"],
            "aggregates": [{"function": "CountDistinct", "field": "loanId"}],
            "where": [{"field": "milestone", "op": "in", "values": some},
                      {"field": "occurredAt", "op": "ge", "value": since}],
            "limit": 1000});
        let by_stage = json!({"dataset": "dw-deals", "groupBy": ["stage"],
            "orderBy": [{"column": "count", "descending": true}, {"column": "stage"}]});
        let mut answers = Vec::new();
        for who in READERS {
            let t = token(&w, who);
            // Act
            let a = w
                .app
                .call_ok(&t, "query_data_warehouse", by_milestone.clone())
                .await;
            let b = w
                .app
                .call_ok(&t, "query_data_warehouse", by_month.clone())
                .await;
            let c = w
                .app
                .call_ok(&t, "query_data_warehouse", by_stage.clone())
                .await;
            // Assert
            let rows = |v: &Value| v["rows"].as_array().unwrap().clone();
            let expected_a: Vec<Value> = per_milestone
                .iter()
                .map(|(m, loans)| json!([m, loans.len()]))
                .collect();
            assert_eq!(a["columns"], json!(["milestone", "distinctLoanId"]));
            assert_eq!(rows(&a), expected_a, "{who} postgres={postgres}");
            let expected_b: Vec<Value> = per_month
                .iter()
                .map(|((month, m), loans)| json!([month, m, loans.len()]))
                .collect();
            assert_eq!(rows(&b), expected_b, "{who} postgres={postgres}");
            let mut expected_c: Vec<(&str, i64)> = stages.iter().map(|(s, n)| (*s, *n)).collect();
            expected_c.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(y.0)));
            let expected_c: Vec<Value> = expected_c.iter().map(|(s, n)| json!([s, n])).collect();
            assert_eq!(rows(&c), expected_c, "{who} postgres={postgres}");
            assert_eq!(c["truncated"], json!(false));
            answers.push((a, b, c));
        }
        assert!(
            answers.windows(2).all(|p| p[0] == p[1]),
            "organisation-wide alike"
        );
    }
}

#[tokio::test]
async fn identifying_fields_are_only_counted_and_other_roles_are_refused() {
    // Arrange
    let w = world(25, "2026-03-15", false).await;
    let admin = token(&w, "admin");
    let loan = w.milestones[0]["loanId"].as_str().unwrap();
    let cases = [
        (
            json!({"dataset": "dw-loan-milestones", "groupBy": ["loanId"]}),
            "forbidden: ",
        ),
        (
            json!({"dataset": "dw-loan-milestones", "where": [{"field": "loanId", "op": "eq", "value": loan}]}),
            "forbidden: ",
        ),
        (
            json!({"dataset": "dw-deals", "aggregates": [{"function": "Min", "field": "id"}]}),
            "forbidden: ",
        ),
        (
            json!({"dataset": "loans"}),
            "invalid_params: dataset: `loans` is not one of dw-loan-milestones, dw-deals",
        ),
        (
            json!({"dataset": "dw-deals", "sql": "SELECT 1"}),
            "invalid_params: ",
        ),
        (
            json!({"dataset": "dw-deals", "groupBy": ["colour"]}),
            "invalid_params: groupBy: `colour` is not a field of dw-deals",
        ),
        (
            json!({"dataset": "dw-deals", "limit": 0}),
            "invalid_params: limit: 0 is not between 1 and 1000",
        ),
        (
            json!({"dataset": "dw-deals", "orderBy": [{"column": "stage"}]}),
            "invalid_params: orderBy: `stage` is not an output column",
        ),
    ];
    for (args, start) in cases {
        // Act
        let answer = w
            .app
            .call_err(&admin, "query_data_warehouse", args.clone())
            .await;
        // Assert
        assert!(answer.starts_with(start), "{args}: {answer}");
    }
    for who in ["agent", "prelicensed"] {
        let refused = w
            .app
            .call_err(
                &token(&w, who),
                "query_data_warehouse",
                json!({"dataset": "dw-deals"}),
            )
            .await;
        assert!(refused.starts_with("forbidden: "), "{who}: {refused}");
    }
}
