//! Random role combinations and loan filters against the oracle: the filters drawn at random
//! and the predicates they stand for.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::periods::{epoch_ms, iso};
use super::world::{engine, oracle, scaled, world, LoanPredicate, World};
use crate::helpers::DEFAULT_ROLES;

/// A random filter and the oracle's reading of it.
pub(super) fn random_filter(rng: &mut rand::rngs::StdRng, w: &World) -> (Value, LoanPredicate) {
    use rand::seq::SliceRandom;
    use rand::Rng;
    let statuses: Vec<String> = {
        let mut all: Vec<&str> = w
            .loans
            .iter()
            .map(|l| l["status"].as_str().unwrap())
            .collect();
        all.sort();
        all.dedup();
        let n = rng.gen_range(1..4);
        all.choose_multiple(rng, n).map(|s| s.to_string()).collect()
    };
    let officers: Vec<String> = w
        .loans
        .choose_multiple(rng, 3)
        .map(|l| l["loanOfficerId"].as_str().unwrap().to_string())
        .collect();
    let some_loan = w.loans.choose(rng).unwrap().clone();
    let base = epoch_ms("2026-03-15T12:00:00Z");
    let day = 86_400_000i64;
    let mut filter = serde_json::Map::new();
    let mut checks: Vec<LoanPredicate> = Vec::new();
    let p = 0.15;
    if rng.gen_bool(p) {
        let s = statuses.clone();
        filter.insert("statuses".into(), json!(s));
        checks.push(Box::new(move |l| {
            s.iter().any(|x| l["status"] == x.as_str())
        }));
    }
    if rng.gen_bool(p) {
        let t = ["FHA", "VA", "Conventional"][rng.gen_range(0..3)].to_string();
        filter.insert("loanTypes".into(), json!([t]));
        checks.push(Box::new(move |l| l["loanType"] == t.as_str()));
    }
    if rng.gen_bool(p) {
        let t = ["Purchase", "Refinance", "Home Equity"][rng.gen_range(0..3)].to_string();
        filter.insert("purposes".into(), json!([t]));
        checks.push(Box::new(move |l| l["purpose"] == t.as_str()));
    }
    for (from_key, to_key, field) in [
        ("statusDateFrom", "statusDateTo", "statusDate"),
        ("closingDateFrom", "closingDateTo", "estimatedClosingDate"),
        ("updatedFrom", "updatedTo", "updated"),
    ] {
        if rng.gen_bool(p) {
            let from = base - rng.gen_range(0..700) * day;
            let to = from + rng.gen_range(1..300) * day;
            filter.insert(from_key.into(), json!(iso(from)));
            filter.insert(to_key.into(), json!(iso(to)));
            checks.push(Box::new(move |l| {
                l[field]
                    .as_str()
                    .is_some_and(|s| (from..=to).contains(&epoch_ms(s)))
            }));
        }
    }
    if rng.gen_bool(p) {
        let (lo, hi) = (
            rng.gen_range(50_000..400_000) as i128,
            rng.gen_range(400_000..5_000_000) as i128,
        );
        filter.insert("loanAmountMin".into(), json!(lo));
        filter.insert("loanAmountMax".into(), json!(hi));
        checks.push(Box::new(move |l| {
            scaled(&l["loanAmount"]).is_some_and(|a| (lo * 10_000..=hi * 10_000).contains(&a))
        }));
    }
    if rng.gen_bool(p) {
        let lo = rng.gen_range(0..5_000) as i128;
        filter.insert("commissionMin".into(), json!(lo));
        checks.push(Box::new(move |l| {
            scaled(&l["lockedCompensation"]).is_some_and(|a| a >= lo * 10_000)
        }));
    }
    if rng.gen_bool(p) {
        let s = ["CA", "TX", "FL"][rng.gen_range(0..3)].to_string();
        filter.insert("propertyState".into(), json!(s.to_lowercase()));
        checks.push(Box::new(move |l| l["propertyState"] == s.as_str()));
    }
    if rng.gen_bool(p) {
        let ids = officers.clone();
        filter.insert("loanOfficerIds".into(), json!(ids));
        checks.push(Box::new(move |l| {
            ids.iter().any(|i| l["loanOfficerId"] == i.as_str())
        }));
    }
    if rng.gen_bool(p) {
        if let Some(r) = some_loan["referringAgentId"].as_str().map(str::to_string) {
            filter.insert("referringAgentId".into(), json!(r.to_uppercase()));
            checks.push(Box::new(move |l| l["referringAgentId"] == r.as_str()));
        }
    }
    if rng.gen_bool(p) {
        if let Some(r) = some_loan["processorId"].as_str().map(str::to_string) {
            filter.insert("processorId".into(), json!(r));
            checks.push(Box::new(move |l| l["processorId"] == r.as_str()));
        }
    }
    if rng.gen_bool(p) {
        let token = some_loan["borrowerLastName"]
            .as_str()
            .unwrap()
            .to_uppercase();
        filter.insert("searchText".into(), json!(format!("  {token} ")));
        let t = token.to_lowercase();
        checks.push(Box::new(move |l| {
            [
                "loanNumber",
                "borrowerFirstName",
                "borrowerLastName",
                "borrowerEmail",
            ]
            .iter()
            .filter_map(|k| l[*k].as_str())
            .any(|v| v.to_lowercase().contains(&t))
        }));
    }
    (
        Value::Object(filter),
        Box::new(move |l| checks.iter().all(|c| c(l))),
    )
}

#[tokio::test]
async fn random_role_combinations_and_filters_match_the_oracle() {
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng};
    for (seed, postgres) in [(21u64, false), (22, false), (23, true)] {
        // Arrange
        let mut w = world(seed, 400, postgres).await;
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let roles = [
            "Admin",
            "Processor",
            "ConciergeKey",
            "Agent",
            "DualLicensedAgent",
            "PreLicensed",
        ];
        let companies: Vec<String> = w
            .loans
            .iter()
            .filter_map(|l| l["companyId"].as_str().map(str::to_string))
            .collect();
        let officers: Vec<String> = w
            .loans
            .iter()
            .filter_map(|l| l["loanOfficerId"].as_str().map(str::to_string))
            .collect();
        let people: Vec<String> = w.agents.keys().cloned().collect();
        // Callers whose ids appear on loans (officers, assistants, referrers).
        let mut ids: Vec<String> = people
            .iter()
            .filter(|id| {
                w.loans.iter().any(|l| {
                    ["loanOfficerId", "loanAssistantId", "referringAgentId"]
                        .iter()
                        .any(|k| l[*k] == id.as_str())
                })
            })
            .cloned()
            .collect();
        ids.sort();

        let mut non_empty = 0;
        for round in 0..20 {
            // A real agent (so the Agent rules hit loans) given a random role combination.
            let id = ids.choose(&mut rng).unwrap().clone();
            let mut held: Vec<&str> = roles
                .iter()
                .copied()
                .filter(|r| rng.gen_bool(if *r == "Admin" { 0.1 } else { 0.35 }))
                .collect();
            if held.is_empty() {
                held.push(roles[rng.gen_range(1..roles.len())]);
            }
            let company = companies.choose(&mut rng).cloned();
            let managed_n = rng.gen_range(0..4);
            let managed: Vec<String> = officers
                .choose_multiple(&mut rng, managed_n)
                .cloned()
                .collect();
            let email = w.agents[&id]["email"].as_str().unwrap().to_string();
            let written = loanhost::data::NewAgent {
                id: id.clone(),
                email: email.clone(),
                company_id: company.clone(),
                roles: held.iter().map(|r| r.to_string()).collect(),
                managed_agent_ids: managed.clone(),
                ..Default::default()
            };
            w.app.db.upsert_agent(&written).await.unwrap();
            // PostgreSQL's directory sees the change once notified (docs/decisions/0013-the-agent-directory.md).
            w.app.until_directory_shows(&written).await;
            let agent = json!({"id": id, "email": email, "companyId": company, "roles": held, "managedAgentIds": managed});
            w.agents.insert(id.clone(), agent.clone());
            let (filter, keep) = random_filter(&mut rng, &w);
            let token = w.app.token_for(&email);
            let callable = held.iter().any(|r| DEFAULT_ROLES.contains(r));

            // Act
            let result = w.app.call_tool(&token, "query_echo", json!({"dataset": "loans", "groupBy": [{"field": "status"}], "aggregates": [["count", null], ["sum", "loanAmount"]], "filter": filter})).await;

            // Assert
            if !callable {
                assert_eq!(result["isError"], true, "{held:?} may not call the tool");
                continue;
            }
            assert_eq!(result["isError"], false, "{result}");
            let got: BTreeMap<String, (i64, Option<i128>)> = result["structuredContent"]["rows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|row| {
                    (
                        row[0].as_str().unwrap().to_string(),
                        (row[1].as_i64().unwrap(), scaled(&row[2])),
                    )
                })
                .collect();
            let expected = oracle(&w, &agent, keep.as_ref());
            assert_eq!(
                got,
                expected,
                "{} seed {seed} round {round}: roles {held:?}, filter {filter}",
                engine(postgres)
            );
            non_empty += usize::from(!expected.is_empty());
        }
        assert!(
            non_empty >= 3,
            "seed {seed}: only {non_empty} rounds had loans to compare"
        );
    }
}
