//! `get_user_licenses`, its REST path and `search_pricing` against an oracle over the import
//! files: for callers of every role, the licences the per-user check allows (own; Admin any
//! agent's; a ConciergeKey the agents they manage; no Processor branch), every other user
//! answered exactly as an unknown one; prices only in a state where the caller holds a licence
//! that has not expired, equal to the rate sheet's fitting rows, lowest rate first.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::values::roles_of;
use super::{callers, world, World};

const UNKNOWN: &str = "0fffffff-0000-4000-8000-000000000000";

/// The licences of `user` in the tool's shape, by state.
fn licenses_of(w: &World, user: &str) -> Vec<Value> {
    let mut out: Vec<Value> = w
        .licenses
        .iter()
        .filter(|l| l["userId"] == user)
        .map(|l| {
            json!({
                "state": l["state"],
                "stateLicenseNumber": l["stateLicenseNumber"],
                "expirationYear": l["expirationYear"],
            })
        })
        .collect();
    out.sort_by_key(|l| l["state"].as_str().unwrap().to_string());
    out
}

/// Whether `caller` may read `user`'s licences.
fn may_read(w: &World, caller: &Value, user: &str) -> bool {
    let roles = roles_of(caller);
    caller["id"] == user
        || (w.agents.contains_key(user)
            && (roles.contains(&"Admin")
                || (roles.contains(&"ConciergeKey")
                    && caller["managedAgentIds"]
                        .as_array()
                        .is_some_and(|m| m.iter().any(|a| a == user)))))
}

/// Users to try for `caller`: themselves, an agent the demo concierge manages, an officer of
/// another company, a processor, and no one.
fn targets(w: &World) -> Vec<String> {
    let concierge = w
        .agents
        .values()
        .find(|a| a["email"] == "concierge@demo.loanhost.local")
        .unwrap();
    let managed = concierge["managedAgentIds"][0]
        .as_str()
        .unwrap()
        .to_string();
    let mut officers: Vec<&str> = w
        .licenses
        .iter()
        .map(|l| l["userId"].as_str().unwrap())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    officers.retain(|o| *o != managed);
    let processor = w
        .agents
        .values()
        .find(|a| a["email"] == "processor@demo.loanhost.local")
        .unwrap();
    vec![
        managed,
        officers[officers.len() / 2].to_string(),
        processor["id"].as_str().unwrap().to_string(),
        UNKNOWN.to_string(),
    ]
}

#[tokio::test]
async fn licences_answer_the_per_user_check_for_every_role_over_mcp_and_rest() {
    for postgres in [false, true] {
        // Arrange
        let w = world(21, "2026-03-15", postgres).await;
        let refusal = "invalid_params: userId: no user with this id whose licences you may read";
        for caller in callers(&w) {
            let token = w.app.token_for(caller["email"].as_str().unwrap());
            let me = caller["id"].as_str().unwrap();
            let who = format!("{} postgres={postgres}", caller["email"]);

            // Act: their own, by default and by id, over MCP and REST.
            let own = w.app.call_ok(&token, "get_user_licenses", json!({})).await;
            let by_id = w
                .app
                .call_ok(&token, "get_user_licenses", json!({"userId": me}))
                .await;
            let rest = w
                .app
                .client
                .get(format!("{}/api/users/me/licenses", w.app.base))
                .bearer_auth(&token)
                .send()
                .await
                .unwrap();

            // Assert
            let expected = json!({
                "userId": me,
                "count": licenses_of(&w, me).len(),
                "licenses": licenses_of(&w, me),
            });
            assert_eq!(own, expected, "{who}");
            assert_eq!(by_id, expected, "{who}");
            assert_eq!(rest.status(), 200, "{who}");
            assert_eq!(rest.json::<Value>().await.unwrap(), expected, "{who}");

            for user in targets(&w) {
                let args = json!({"userId": user});
                let path = format!("{}/api/users/{user}/licenses", w.app.base);
                let rest = w
                    .app
                    .client
                    .get(&path)
                    .bearer_auth(&token)
                    .send()
                    .await
                    .unwrap();
                if may_read(&w, &caller, &user) {
                    let got = w.app.call_ok(&token, "get_user_licenses", args).await;
                    assert_eq!(
                        got["licenses"],
                        json!(licenses_of(&w, &user)),
                        "{who} {user}"
                    );
                    assert_eq!(rest.status(), 200, "{who} {user}");
                } else {
                    // Out of reach and unknown answer alike.
                    let got = w.app.call_err(&token, "get_user_licenses", args).await;
                    assert!(got.starts_with(refusal), "{who} {user}: {got}");
                    assert_eq!(rest.status(), 404, "{who} {user}");
                }
            }
        }
        // No token: the challenge.
        let none = w
            .app
            .client
            .get(format!("{}/api/users/me/licenses", w.app.base))
            .send()
            .await
            .unwrap();
        assert_eq!(none.status(), 401);
        assert!(none.headers().get("www-authenticate").is_some());
    }
}

/// The rate sheet's rows fitting the scenario, as the tool lists them.
fn sheet_quotes(w: &World, state_ltv: &str, score: i64, amount: f64) -> Vec<Value> {
    let ltv: f64 = state_ltv.parse().unwrap();
    let num = |v: &Value| match v {
        Value::Number(n) => n.as_f64().unwrap(),
        Value::String(s) => s.parse().unwrap(),
        _ => panic!("{v}"),
    };
    let mut rows: Vec<(usize, &Value)> = w
        .rates
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            r["loanType"] == "Conventional"
                && (r["purpose"].is_null() || r["purpose"] == "Purchase")
                && r["occupancy"] == "PrimaryResidence"
                && r["termMonths"] == 360
                && r["lockDays"] == 30
                && num(&r["minCreditScore"]) <= score as f64
                && num(&r["maxCreditScore"]) >= score as f64
                && num(&r["minLtv"]) <= ltv
                && num(&r["maxLtv"]) >= ltv
                && num(&r["minLoanAmount"]) <= amount
                && num(&r["maxLoanAmount"]) >= amount
        })
        .collect();
    rows.sort_by(|(i, a), (j, b)| {
        num(&a["rate"])
            .partial_cmp(&num(&b["rate"]))
            .unwrap()
            .then(num(&a["points"]).partial_cmp(&num(&b["points"])).unwrap())
            .then(a["product"].as_str().cmp(&b["product"].as_str()))
            .then(i.cmp(j))
    });
    rows.iter()
        .take(20)
        .map(|(_, r)| (r["product"].clone(), num(&r["rate"]), num(&r["points"])))
        .map(|(p, r, pts)| json!([p, r, pts]))
        .collect()
}

#[tokio::test]
async fn prices_only_where_the_caller_holds_a_current_licence_equal_to_the_sheet() {
    // Arrange
    let w = world(22, "2026-03-15", false).await;
    let scenario = |state: &str| {
        json!({"propertyState": state, "loanAmount": 400000, "propertyValue": 500000,
               "creditScore": 745, "loanType": "Conventional"})
    };
    let mut priced = 0;
    for caller in callers(&w) {
        let token = w.app.token_for(caller["email"].as_str().unwrap());
        let me = caller["id"].as_str().unwrap();
        let held = licenses_of(&w, me);
        let current: Vec<&str> = held
            .iter()
            .filter(|l| l["expirationYear"].as_str().unwrap() >= "2026")
            .map(|l| l["state"].as_str().unwrap())
            .collect();
        for state in ["CA", "TX", "FL", "NY", "WA"] {
            // Act
            let answer = w
                .app
                .call_tool(&token, "search_pricing", scenario(state))
                .await;
            // Assert
            let who = format!("{} {state}", caller["email"]);
            if current.contains(&state) {
                let r = &answer["structuredContent"];
                assert_eq!(r["indicative"], true, "{who}: {answer}");
                assert_eq!(r["scenario"]["ltv"], "80", "{who}");
                let got: Vec<Value> = r["quotes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|q| {
                        let f = |k: &str| q[k].as_str().unwrap().parse::<f64>().unwrap();
                        json!([q["product"], f("rate"), f("points")])
                    })
                    .collect();
                assert!(!got.is_empty(), "{who}");
                assert_eq!(got, sheet_quotes(&w, "80", 745, 400000.0), "{who}");
                priced += 1;
            } else {
                let text = answer["content"][0]["text"].as_str().unwrap_or_default();
                assert_eq!(answer["isError"], true, "{who}: {answer}");
                assert!(
                    text.starts_with(&format!("forbidden: you hold no licence in {state}")),
                    "{who}: {text}"
                );
            }
        }
    }
    assert!(priced > 0, "some caller is licensed somewhere");
    // A borrower identifier is refused by name, before anything is priced.
    let admin = w.app.token_for("admin@demo.loanhost.local");
    let mut with_borrower = scenario("TX");
    with_borrower["borrowerEmail"] = json!("someone@example.com");
    let refused = w
        .app
        .call_err(&admin, "search_pricing", with_borrower)
        .await;
    assert!(
        refused.starts_with("invalid_params: borrowerEmail: search_pricing takes no borrower"),
        "{refused}"
    );
}
