//! `search_users` against the oracle, on both engines: for callers of every role, the people on
//! the loans the oracle finds in the caller's scope and the caller, each with the union of the
//! parts they play there; names (the directory's, else the loans') only for callers who may read
//! names; name words matched as the oracle matches them; never an email, never a field outside
//! the tool's allow-list, never a person off the caller's loans.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::oracle::in_scope;
use super::values::reads_names;
use super::{callers, world, World};

/// Every field of a user `search_users` may return.
const ALLOWED: [&str; 4] = ["id", "isCaller", "roles", "name"];

/// The parts, as the tool names them, and the loan field of each.
const PARTS: [(&str, &str); 4] = [
    ("LoanOfficer", "loanOfficerId"),
    ("LoanAssistant", "loanAssistantId"),
    ("Processor", "processorId"),
    ("ReferringAgent", "referringAgentId"),
];

/// The loan field holding the name the loans give a part's person.
fn loan_name_field(part: &str) -> Option<&'static str> {
    match part {
        "LoanOfficer" => Some("loanOfficerName"),
        "Processor" => Some("processorName"),
        "ReferringAgent" => Some("referringAgentName"),
        _ => None,
    }
}

/// Per person of the caller's scope (and the caller): their parts in the tool's order and
/// their name.
fn oracle(w: &World, caller: &Value) -> BTreeMap<String, (Vec<String>, Option<String>)> {
    let mut people: BTreeMap<String, (Vec<String>, Option<String>)> = BTreeMap::new();
    for loan in in_scope(w, caller, &json!({})) {
        for (part, field) in PARTS {
            let Some(id) = loan[field].as_str() else {
                continue;
            };
            let entry = people.entry(id.to_string()).or_default();
            if !entry.0.iter().any(|p| p == part) {
                entry.0.push(part.to_string());
            }
            if let Some(name) = loan_name_field(part).and_then(|f| loan[f].as_str()) {
                if entry.1.as_deref().is_none_or(|n| name > n) {
                    entry.1 = Some(name.to_string());
                }
            }
        }
    }
    people
        .entry(caller["id"].as_str().unwrap().to_string())
        .or_default();
    for (id, (parts, name)) in people.iter_mut() {
        parts.sort_by_key(|p| PARTS.iter().position(|(q, _)| q == p));
        if let Some(a) = w.agents.get(id) {
            let first = a["firstName"].as_str();
            let last = a["lastName"].as_str();
            if first.is_some() || last.is_some() {
                let full = format!("{} {}", first.unwrap_or(""), last.unwrap_or(""));
                *name = Some(full.trim().to_string());
            }
        }
    }
    people
}

#[tokio::test]
async fn search_users_finds_exactly_the_oracles_people_for_every_role_on_both_engines() {
    for postgres in [false, true] {
        // Arrange
        let w = world(19, "2026-03-15", postgres).await;
        for caller in callers(&w) {
            let token = w.app.token_for(caller["email"].as_str().unwrap());
            let names = reads_names(&caller);
            let me = caller["id"].as_str().unwrap();
            let who = format!("{} postgres={postgres}", caller["email"]);
            let want = oracle(&w, &caller);

            // Act
            let all = w
                .app
                .call_ok(&token, "search_users", json!({"limit": 100}))
                .await;

            // Assert
            let users = all["users"].as_array().unwrap();
            assert!(!all.to_string().contains('@'), "{who}: an email in {all}");
            assert_eq!(all["totalMatched"], json!(want.len()), "{who}");
            assert_eq!(all["truncated"], json!(false), "{who}");
            assert_eq!(users[0]["id"], json!(me), "{who}: the caller first");
            let mut got = BTreeMap::new();
            for u in users {
                for k in u.as_object().unwrap().keys() {
                    assert!(ALLOWED.contains(&k.as_str()), "{who}: field {k}");
                }
                let id = u["id"].as_str().unwrap().to_string();
                assert_eq!(u["isCaller"], json!(id == me), "{who}");
                let parts: Vec<String> = u["roles"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p.as_str().unwrap().to_string())
                    .collect();
                got.insert(id, (parts, u["name"].as_str().map(str::to_string)));
            }
            let expected: BTreeMap<String, (Vec<String>, Option<String>)> = want
                .iter()
                .map(|(id, (parts, name))| {
                    (id.clone(), (parts.clone(), name.clone().filter(|_| names)))
                })
                .collect();
            assert_eq!(got, expected, "{who}");

            // Each part on its own: the people the oracle has in it.
            for (part, _) in PARTS {
                let one = w
                    .app
                    .call_ok(
                        &token,
                        "search_users",
                        json!({"roles": [part], "limit": 100}),
                    )
                    .await;
                let ids: Vec<&str> = one["users"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|u| u["id"].as_str().unwrap())
                    .collect();
                let mut expected: Vec<&str> = want
                    .iter()
                    .filter(|(_, (parts, _))| parts.iter().any(|p| p == part))
                    .map(|(id, _)| id.as_str())
                    .collect();
                let mut sorted = ids.clone();
                sorted.sort();
                expected.sort();
                assert_eq!(sorted, expected, "{who}: {part}");
            }

            // By a name word: name readers find every person whose name holds it; others are
            // refused before anything is read.
            let word = want
                .values()
                .filter_map(|(_, n)| n.as_deref())
                .find_map(|n| n.split_whitespace().last())
                .unwrap()
                .to_lowercase();
            let by_name = json!({"query": word.to_uppercase(), "limit": 100});
            if names {
                let found = w.app.call_ok(&token, "search_users", by_name).await;
                let mut ids: Vec<&str> = found["users"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|u| u["id"].as_str().unwrap())
                    .collect();
                let mut expected: Vec<&str> = want
                    .iter()
                    .filter(|(_, (_, n))| {
                        n.as_deref()
                            .is_some_and(|n| n.to_lowercase().contains(&word))
                    })
                    .map(|(id, _)| id.as_str())
                    .collect();
                ids.sort();
                expected.sort();
                assert_eq!(ids, expected, "{who}: {word}");
            } else {
                let refused = w.app.call_err(&token, "search_users", by_name).await;
                assert!(
                    refused.starts_with("forbidden: query: searching people by name needs"),
                    "{who}: {refused}"
                );
            }
        }
    }
}

#[tokio::test]
async fn search_users_refuses_bad_arguments_with_their_reason() {
    // Arrange
    let w = world(20, "2026-03-15", false).await;
    let admin = w.app.token_for("admin@demo.loanhost.local");
    let refusals = [
        (json!({"limit": 0}), "invalid_params: limit: 0 is not between 1 and 100"),
        (json!({"limit": 101}), "invalid_params: limit: 101 is not between 1 and 100"),
        (
            json!({"roles": ["Borrower"]}),
            "invalid_params: roles: `Borrower` is not one of LoanOfficer, LoanAssistant, Processor, ReferringAgent",
        ),
        (json!({"email": "x"}), "invalid_params: "),
        (
            json!({"query": "a b c d e f g h i"}),
            "invalid_params: query: 9 words; at most 8",
        ),
    ];
    for (args, start) in refusals {
        // Act
        let answer = w.app.call_err(&admin, "search_users", args).await;
        // Assert
        assert!(answer.starts_with(start), "{answer}\nexpected: {start}");
    }
    // A limit below the matches: truncated, the caller still first.
    let one = w
        .app
        .call_ok(&admin, "search_users", json!({"limit": 1}))
        .await;
    assert_eq!(one["users"].as_array().unwrap().len(), 1);
    assert_eq!(one["truncated"], json!(true));
    assert_eq!(one["users"][0]["isCaller"], json!(true));
}
