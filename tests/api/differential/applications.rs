//! The loan-application tools and their REST path against an oracle over the import files
//! (issue #73, decision 0046): for callers of every role on both engines, every seeded
//! application in the per-loan scope (Admin and Processor every one, everyone else those of
//! their reporting scope) answers its section-completion report as the specification's rules
//! give it, written again here; every other answers exactly as an unknown one, over MCP and
//! REST alike. The search finds what the oracle finds; `loanTypes` is refused. Names only for
//! callers who may read them, and no answer carries a borrower's sensitive data.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::values::{reads_names, roles_of};
use super::{callers, world, World};
use crate::data::visible;

const UNKNOWN: &str = "0fffffff-0000-4000-8000-000000000000";
const REFUSAL: &str =
    "invalid_params: loanApplicationId: no loan application with this id that you may read";

/// The sections in sidebar order.
pub(crate) const SECTIONS: [&str; 7] = [
    "About You",
    "Loan & Property",
    "Work & Income",
    "Assets",
    "Liabilities",
    "Real Estate",
    "Additional Details",
];

/// The section-completion report the specification's rules give the import line `app`:
/// (allSectionsComplete, isReadyToSubmit, submitBlockers).
pub(crate) fn report(app: &Value) -> (bool, bool, Vec<String>) {
    let submitted = app["isSubmitted"] == true;
    let status_of = |name: &str| -> String {
        app["sections"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["sectionName"] == name)
            .map(|s| s["status"].as_str().unwrap().to_string())
            .unwrap_or_else(|| "NotStarted".into())
    };
    let open: Vec<String> = SECTIONS
        .iter()
        .filter(|n| !["Completed", "Accepted"].contains(&status_of(n).as_str()))
        .map(|n| format!("Section '{n}' is {}", status_of(n)))
        .collect();
    let mut missing: Vec<(String, String)> = app["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["isRequired"] == true && t["kind"] == "BorrowerDocument")
        .filter(|t| !["Uploaded", "Submitted", "Accepted"].contains(&t["status"].as_str().unwrap()))
        .map(|t| {
            (
                t["title"].as_str().unwrap().to_string(),
                t["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    missing.sort();
    let mut blockers = Vec::new();
    if submitted {
        blockers.push("Already submitted".to_string());
    }
    let all = open.is_empty();
    blockers.extend(open);
    blockers.extend(
        missing
            .into_iter()
            .map(|(t, s)| format!("Required document '{t}' is {s}")),
    );
    (all, blockers.is_empty(), blockers)
}

/// Whether `caller` may read `app` (the spec's per-loan tools' scope).
fn may_read(w: &World, caller: &Value, app: &Value) -> bool {
    let roles = roles_of(caller);
    let Some(loan) = w.loans.iter().find(|l| l["id"] == app["loanId"]) else {
        return false;
    };
    roles.contains(&"Admin") || roles.contains(&"Processor") || visible(caller, &w.agents, loan)
}

/// Every text an answer holds, for the leak checks.
fn texts(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|v| texts(v, out)),
        Value::Object(o) => o.values().for_each(|v| texts(v, out)),
        _ => {}
    }
}

/// The borrower's sensitive fields an answer writes: each must be null (`creditScores` empty).
fn assert_held_back(borrower: &Value, who: &str) {
    if borrower.is_null() {
        return;
    }
    for k in [
        "ssn",
        "encryptedSsn",
        "birthDate",
        "demographics",
        "declaration",
        "hmdaApplicantCreditScore",
        "fico",
        "softCreditExternalId",
    ] {
        assert!(
            borrower[k].is_null(),
            "{who}: borrower.{k} = {}",
            borrower[k]
        );
    }
    assert_eq!(borrower["creditScores"], json!([]), "{who}");
    for a in borrower["assets"].as_array().into_iter().flatten() {
        assert!(a["accountNumber"].is_null(), "{who}");
    }
    assert_held_back(&borrower["coBorrower"], who);
}

#[tokio::test]
async fn every_application_answers_the_specifications_readiness_in_scope_for_every_role() {
    for postgres in [false, true] {
        // Arrange
        let w = world(23, "2026-03-15", postgres).await;
        assert!(w.applications.len() >= 30, "the seed writes applications");
        let reports: Vec<_> = w.applications.iter().map(report).collect();
        for shape in [(true, true), (true, false), (false, false)] {
            assert!(
                reports.iter().any(|r| (r.0, r.1) == shape),
                "the seed has files with (allSectionsComplete, ready) = {shape:?}"
            );
        }
        assert!(w.applications.iter().any(|a| a["isSubmitted"] == true));
        for caller in callers(&w) {
            let token = w.app.token_for(caller["email"].as_str().unwrap());
            let who = format!("{} postgres={postgres}", caller["email"]);
            let mut read = 0;
            for (app, (all, ready, blockers)) in w.applications.iter().zip(&reports) {
                let id = app["id"].as_str().unwrap();
                let args = json!({"loanApplicationId": id});
                let path = format!("{}/api/loan-applications/{id}", w.app.base);

                // Act
                let rest = w
                    .app
                    .client
                    .get(&path)
                    .bearer_auth(&token)
                    .send()
                    .await
                    .unwrap();
                let status = rest.status();
                let rest_body: Value = rest.json().await.unwrap();

                // Assert
                if !may_read(&w, &caller, app) {
                    let got = w.app.call_err(&token, "get_loan_application", args).await;
                    assert_eq!(got, REFUSAL, "{who} {id}");
                    assert_eq!(status, 404, "{who} {id}");
                    continue;
                }
                read += 1;
                let got = w.app.call_ok(&token, "get_loan_application", args).await;
                let c = &got["sectionCompletion"];
                assert_eq!(got["id"], app["id"], "{who}");
                assert_eq!(c["allSectionsComplete"], *all, "{who} {id}");
                assert_eq!(c["isReadyToSubmit"], *ready, "{who} {id}");
                assert_eq!(c["submitBlockers"], json!(blockers), "{who} {id}");
                let names: Vec<&str> = c["sections"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s["sectionName"].as_str().unwrap())
                    .collect();
                assert_eq!(names, SECTIONS, "{who}");
                assert_eq!(got["loanInfo"]["loanId"], app["loanId"], "{who}");
                assert_eq!(
                    got["tasks"].as_array().unwrap().len(),
                    app["tasks"].as_array().unwrap().len()
                );
                assert!(got["updatedByIp"].is_null(), "{who}");
                assert_held_back(&got["loanInfo"]["borrower"], &who);
                // Names only for callers who may read them.
                if !reads_names(&caller) {
                    assert!(got["updatedByEmail"].is_null(), "{who}");
                    assert!(got["referredBy"]["firstName"].is_null(), "{who}");
                }
                assert_eq!(status, 200, "{who} {id}");
                assert_eq!(rest_body, got, "{who}: REST answers as the tool does");
            }
            let expected = w
                .applications
                .iter()
                .filter(|a| may_read(&w, &caller, a))
                .count();
            assert_eq!(read, expected, "{who}");
            let unknown = json!({"loanApplicationId": UNKNOWN});
            let got = w
                .app
                .call_err(&token, "get_loan_application", unknown)
                .await;
            assert_eq!(got, REFUSAL, "{who}");
        }
    }
}

#[tokio::test]
async fn the_search_finds_what_the_oracle_finds_and_refuses_loan_types() {
    for postgres in [false, true] {
        // Arrange
        let w = world(24, "2026-03-15", postgres).await;
        for caller in callers(&w) {
            let token = w.app.token_for(caller["email"].as_str().unwrap());
            let who = format!("{} postgres={postgres}", caller["email"]);
            let readable: Vec<&Value> = w
                .applications
                .iter()
                .filter(|a| may_read(&w, &caller, a))
                .collect();
            let Some(probe) = readable.first() else {
                continue;
            };
            let loan = w.loans.iter().find(|l| l["id"] == probe["loanId"]).unwrap();
            let last = loan["borrowerLastName"].as_str().unwrap().to_lowercase();
            for status in ["InProgress", "ReadyToSubmit", "Submitted"] {
                // Act: every page of the caller's applications of this readiness.
                let mut found = BTreeSet::new();
                let mut cursor: Option<String> = None;
                let mut updated: Vec<String> = vec![];
                for _ in 0..20 {
                    let mut args = json!({"statuses": [status], "pageSize": 7});
                    if let Some(c) = &cursor {
                        args["cursor"] = json!(c);
                    }
                    let page = w
                        .app
                        .call_ok(&token, "search_loan_applications", args)
                        .await;
                    for a in page["applications"].as_array().unwrap() {
                        assert!(found.insert(a["loanApplicationId"].as_str().unwrap().to_string()));
                        updated.push(a["updatedTimestampUtc"].as_str().unwrap().to_string());
                    }
                    cursor = page["nextCursor"].as_str().map(str::to_string);
                    if cursor.is_none() {
                        break;
                    }
                }

                // Assert: the oracle's applications of that readiness, latest first.
                let expected: BTreeSet<String> = readable
                    .iter()
                    .filter(|a| {
                        let (_, ready, _) = report(a);
                        let is = match (a["isSubmitted"] == true, ready) {
                            (true, _) => "Submitted",
                            (false, true) => "ReadyToSubmit",
                            _ => "InProgress",
                        };
                        is == status
                    })
                    .map(|a| a["id"].as_str().unwrap().to_string())
                    .collect();
                assert_eq!(found, expected, "{who} {status}");
                let instants: Vec<i128> = updated
                    .iter()
                    .map(|u| super::values::at(u).unix_timestamp_nanos())
                    .collect();
                assert!(
                    instants.windows(2).all(|p| p[0] >= p[1]),
                    "{who}: latest first"
                );
            }
            // By the borrower's last name: every application of a loan whose borrower has it.
            let page = w
                .app
                .call_ok(
                    &token,
                    "search_loan_applications",
                    json!({"searchText": last, "pageSize": 100}),
                )
                .await;
            let found: BTreeSet<&str> = page["applications"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a["loanApplicationId"].as_str().unwrap())
                .collect();
            let expected: BTreeSet<&str> = readable
                .iter()
                .filter(|a| {
                    let l = w.loans.iter().find(|l| l["id"] == a["loanId"]).unwrap();
                    l["borrowerLastName"]
                        .as_str()
                        .unwrap()
                        .to_lowercase()
                        .contains(&last)
                        || l["borrowerFirstName"]
                            .as_str()
                            .unwrap()
                            .to_lowercase()
                            .contains(&last)
                        || l["borrowerEmail"]
                            .as_str()
                            .unwrap()
                            .to_lowercase()
                            .contains(&last)
                })
                .map(|a| a["id"].as_str().unwrap())
                .collect();
            assert_eq!(found, expected, "{who} searchText={last}");
            let refused = w
                .app
                .call_err(
                    &token,
                    "search_loan_applications",
                    json!({"loanTypes": ["FHA"]}),
                )
                .await;
            assert!(
                refused.contains("search_loan_applications cannot filter by loan type; use query_loans with filter.loanTypes"),
                "{who}: {refused}"
            );
        }
    }
}

#[tokio::test]
async fn tasks_and_contacts_are_answered_in_scope_with_names_only_for_name_readers() {
    // Arrange
    let w = world(25, "2026-03-15", false).await;
    for caller in callers(&w) {
        let token = w.app.token_for(caller["email"].as_str().unwrap());
        let who = caller["email"].to_string();
        for app in w
            .applications
            .iter()
            .filter(|a| may_read(&w, &caller, a))
            .take(6)
        {
            let args = json!({"loanApplicationId": app["id"]});

            // Act
            let tasks = w
                .app
                .call_ok(&token, "get_loan_application_tasks", args.clone())
                .await;
            let outstanding = w
                .app
                .call_ok(
                    &token,
                    "get_loan_application_tasks",
                    json!({"loanApplicationId": app["id"], "outstandingOnly": true}),
                )
                .await;
            let contacts = w
                .app
                .call_ok(&token, "get_loan_application_contacts", args)
                .await;

            // Assert
            assert_eq!(
                tasks["tasks"],
                app["tasks"]
                    .as_array()
                    .map(|t| {
                        t.iter()
                            .map(|t| {
                                let mut t = t.clone();
                                for k in ["code", "borrowerId", "dueDate", "completedTimestampUtc"]
                                {
                                    t.as_object_mut().unwrap().entry(k).or_insert(Value::Null);
                                }
                                t
                            })
                            .collect::<Vec<_>>()
                    })
                    .map(Value::from)
                    .unwrap(),
                "{who}"
            );
            let waiting = app["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| {
                    ["Outstanding", "Requested", "Rejected"]
                        .contains(&t["status"].as_str().unwrap())
                })
                .count();
            assert_eq!(
                outstanding["tasks"].as_array().unwrap().len(),
                waiting,
                "{who}"
            );
            let (_, _, blockers) = report(app);
            // The titles the report's document blockers name, in the report's order.
            let blocking: Vec<&str> = blockers
                .iter()
                .filter_map(|b| b.strip_prefix("Required document '"))
                .map(|t| &t[..t.rfind("' is ").unwrap()])
                .collect();
            assert_eq!(tasks["blockingDocuments"], json!(blocking), "{who}");
            let listed = contacts["contacts"].as_array().unwrap();
            assert_eq!(
                listed.len(),
                app["contacts"].as_array().unwrap().len(),
                "{who}"
            );
            assert_eq!(contacts["namesShown"], reads_names(&caller), "{who}");
            for (c, stored) in listed.iter().zip(app["contacts"].as_array().unwrap()) {
                assert_eq!(c["role"], stored["role"], "{who}");
                match reads_names(&caller) {
                    true => assert_eq!(c["lastName"], stored["lastName"], "{who}"),
                    false => {
                        assert!(c["lastName"].is_null() && c["phone"].is_null(), "{who}")
                    }
                }
            }
        }
    }
}

/// The values the leak test plants, one per kind of sensitive data: (key, value, what an
/// answer would show of it).
const PLANTED: [(&str, &str, &str); 7] = [
    ("ssn", "\"078-05-1120\"", "078-05-1120"),
    (
        "encryptedSsn",
        "\"ENC-PLANTED-SSN-9f2c\"",
        "ENC-PLANTED-SSN-9f2c",
    ),
    ("birthDate", "\"1961-07-04\"", "1961-07-04"),
    (
        "demographics",
        "{\"gender\":{\"name\":\"PLANTED-GENDER\"}}",
        "PLANTED-GENDER",
    ),
    (
        "declaration",
        "{\"hasBankruptcy\":true,\"x\":\"PLANTED-DECL\"}",
        "PLANTED-DECL",
    ),
    (
        "creditScores",
        "[{\"score\":\"PLANTED-SCORE-812\"}]",
        "PLANTED-SCORE-812",
    ),
    (
        "accountNumber",
        "\"PLANTED-ACCT-55501234\"",
        "PLANTED-ACCT-55501234",
    ),
];

/// Writes `borrower` into the stored application `id` behind the import's back (as a future
/// import path that forgot to refuse would).
async fn store_borrower(db: &loanhost::data::Db, id: &str, borrower: &Value) {
    let sql = "UPDATE loan_applications SET borrower = ? WHERE id = ?";
    match db {
        loanhost::data::Db::Sqlite(p) => sqlx::query(sql)
            .bind(borrower.to_string())
            .bind(id)
            .execute(p)
            .await
            .map(|_| ())
            .unwrap(),
        loanhost::data::Db::Postgres(_) => unreachable!("the leak test runs on SQLite"),
    }
}

#[tokio::test]
async fn a_line_with_sensitive_data_is_refused_and_no_answer_carries_any() {
    // Arrange: the seeded world, then an import of an application carrying each planted value.
    let w = world(26, "2026-03-15", false).await;
    let app = &w.applications[0];
    let before = w
        .app
        .call_ok(
            &w.app.token_for("admin@demo.loanhost.local"),
            "get_loan_application",
            json!({"loanApplicationId": app["id"]}),
        )
        .await;
    for (key, value, _) in PLANTED {
        let mut line = app.clone();
        let planted: Value = serde_json::from_str(value).unwrap();
        match key {
            "accountNumber" => line["borrower"]["assets"][0][key] = planted,
            "ssn" | "birthDate" => {
                line["borrower"]["coBorrower"] = json!({"firstName": "C", key: planted})
            }
            _ => line["borrower"][key] = planted,
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("loan_applications.jsonl"),
            format!("{line}\n"),
        )
        .unwrap();

        // Act
        let err = loanhost::data::import::import_dir(&w.app.db, dir.path(), |_, _| {})
            .await
            .unwrap_err()
            .to_string();

        // Assert: refused with the field's path, and nothing kept.
        assert!(
            err.starts_with("loan_applications.jsonl:1: field borrower."),
            "{err}"
        );
        assert!(
            err.contains(key) && err.contains("loanhost does not store it"),
            "{err}"
        );
    }
    let admin = w.app.token_for("admin@demo.loanhost.local");
    let after = w
        .app
        .call_ok(
            &admin,
            "get_loan_application",
            json!({"loanApplicationId": app["id"]}),
        )
        .await;
    assert_eq!(before, after, "a refused import keeps nothing");

    // A stored borrower that holds every planted value (the import's refusal bypassed): the
    // answers still write each sensitive field null.
    let mut leaky = app["borrower"].clone();
    for (key, value, _) in PLANTED {
        let planted: Value = serde_json::from_str(value).unwrap();
        match key {
            "accountNumber" => leaky["assets"][0][key] = planted,
            _ => leaky[key] = planted,
        }
    }
    let mut co = leaky.clone();
    co.as_object_mut().unwrap().remove("coBorrower");
    leaky["coBorrower"] = co;
    store_borrower(&w.app.db, app["id"].as_str().unwrap(), &leaky).await;

    // Every answer of every tool and path, as every role, holds none of the planted values.
    let mut seen = Vec::new();
    for caller in callers(&w) {
        let token = w.app.token_for(caller["email"].as_str().unwrap());
        for app in &w.applications {
            let args = json!({"loanApplicationId": app["id"]});
            for tool in [
                "get_loan_application",
                "get_loan_application_tasks",
                "get_loan_application_contacts",
            ] {
                let r = w.app.call_tool(&token, tool, args.clone()).await;
                texts(&r, &mut seen);
            }
            let path = format!(
                "{}/api/loan-applications/{}",
                w.app.base,
                app["id"].as_str().unwrap()
            );
            let rest = w
                .app
                .client
                .get(&path)
                .bearer_auth(&token)
                .send()
                .await
                .unwrap();
            texts(&rest.json::<Value>().await.unwrap(), &mut seen);
        }
        let r = w
            .app
            .call_tool(&token, "search_loan_applications", json!({"pageSize": 100}))
            .await;
        texts(&r, &mut seen);
    }
    for (_, _, shown) in PLANTED {
        assert!(
            !seen.iter().any(|t| t.contains(shown)),
            "an answer carries {shown}"
        );
    }
    assert!(seen.len() > 1000, "the leak check read the answers");
}

#[tokio::test]
async fn a_company_admin_reads_exactly_its_companys_applications() {
    // Arrange: a CompanyAdmin of the company with the most applications.
    let w = world(27, "2026-03-15", false).await;
    let company_of = |a: &Value| {
        w.loans
            .iter()
            .find(|l| l["id"] == a["loanId"])
            .map(|l| l["companyId"].clone())
            .unwrap()
    };
    let company = company_of(&w.applications[0]);
    let email = "company-admin@demo.loanhost.local";
    let line = json!({"id": "0eeeeeee-0000-4000-8000-000000000001", "email": email,
        "firstName": "Casey", "lastName": "Admin", "companyId": company, "roles": ["CompanyAdmin"]});
    crate::helpers::import_lines(&w.app, "agents.jsonl", &[line.to_string()]).await;
    let token = w.app.token_for(email);
    let mut read = 0;
    for app in &w.applications {
        let args = json!({"loanApplicationId": app["id"]});

        // Act
        let got = w.app.call_tool(&token, "get_loan_application", args).await;

        // Assert: its company's, and no other.
        if company_of(app) == company {
            assert_eq!(got["isError"], false, "{got}");
            read += 1;
        } else {
            assert_eq!(got["content"][0]["text"], REFUSAL, "{}", app["id"]);
        }
    }
    assert!(read > 0 && read < w.applications.len(), "{read}");
}
