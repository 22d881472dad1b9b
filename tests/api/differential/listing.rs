//! `query_loans` against the oracle, on both engines: for callers of every role and several
//! filters, walking every page gives exactly the loans the oracle finds in the caller's scope
//! under the filter, each once, in order, each field equal to its import line; `totalCount` is
//! the oracle's count; names only for callers who may read them; a borrower's names only when
//! asked and allowed; never a borrower's email, never a field outside the tool's allow-list.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::oracle::in_scope;
use super::values::{reads_names, roles_of};
use super::{callers, world, world_in, World};
use crate::data::scaled;
use crate::helpers::import_lines;

/// Every field `query_loans` may return.
const ALLOWED: [&str; 21] = [
    "id",
    "loanNumber",
    "status",
    "statusDate",
    "loanType",
    "purpose",
    "loanAmount",
    "lockedCompensation",
    "estimatedCompensation",
    "estimatedClosingDate",
    "updated",
    "propertyState",
    "loanOfficerId",
    "loanAssistantId",
    "processorId",
    "referringAgentId",
    "loanOfficerName",
    "processorName",
    "referringAgentName",
    "borrowerFirstName",
    "borrowerLastName",
];

fn reads_borrowers(caller: &Value) -> bool {
    let roles = roles_of(caller);
    !roles.contains(&"PreLicensed")
        && roles.iter().any(|r| {
            [
                "Admin",
                "Processor",
                "ConciergeKey",
                "Agent",
                "DualLicensedAgent",
            ]
            .contains(r)
        })
}

/// Every page of `query_loans` for `token` over `args`: the loans in order, and each page's
/// `totalCount`.
async fn walk(w: &World, token: &str, args: &Value) -> (Vec<Value>, BTreeSet<i64>) {
    let mut loans = Vec::new();
    let mut totals = BTreeSet::new();
    let mut args = args.clone();
    for _ in 0..200 {
        let page = w.app.call_ok(token, "query_loans", args.clone()).await;
        totals.insert(page["totalCount"].as_i64().unwrap());
        loans.extend(page["loans"].as_array().unwrap().iter().cloned());
        match page["nextCursor"].as_str() {
            Some(c) => args["cursor"] = json!(c),
            None => return (loans, totals),
        }
    }
    panic!("the walk did not end in 200 pages");
}

/// The loans are in `order` (one of the spec's `orderByOptions`), highest first when
/// `descending`, loans without the value last.
fn in_order(loans: &[Value], order: &str, descending: bool, who: &Value) {
    let field = match order {
        "amount" => "loanAmount",
        "statusDate" => "statusDate",
        "closingDate" => "estimatedClosingDate",
        "commission" => "lockedCompensation",
        _ => "updated",
    };
    // Amounts scaled to integers, instants as epoch nanoseconds: one number to compare.
    let key = |l: &Value| -> Option<i128> {
        let v = &l[field];
        match field {
            "loanAmount" | "lockedCompensation" => scaled(v),
            _ => v.as_str().map(|s| {
                time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
                    .unwrap()
                    .unix_timestamp_nanos()
            }),
        }
    };
    let keys: Vec<Option<i128>> = loans.iter().map(key).collect();
    for pair in keys.windows(2) {
        let ordered = match (pair[0], pair[1]) {
            (None, Some(_)) => false,
            (_, None) => true,
            (Some(a), Some(b)) => match descending {
                true => a >= b,
                false => a <= b,
            },
        };
        assert!(
            ordered,
            "{who}: {order} descending={descending}: {:?}",
            pair
        );
    }
}

/// The import line's value of `field`, as the tool gives it (amounts compared as numbers).
fn same(field: &str, listed: &Value, line: &Value) -> bool {
    match field {
        "loanAmount" | "lockedCompensation" | "estimatedCompensation" => {
            scaled(listed) == scaled(line.get(field).unwrap_or(&Value::Null))
        }
        "statusDate" | "updated" | "estimatedClosingDate" => {
            let instant = |v: &Value| {
                v.as_str().map(|s| {
                    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
                        .unwrap()
                })
            };
            instant(listed) == instant(line.get(field).unwrap_or(&Value::Null))
        }
        _ => listed == line.get(field).unwrap_or(&Value::Null),
    }
}

#[tokio::test]
async fn query_loans_lists_exactly_the_oracles_loans_for_every_role_on_both_engines() {
    for postgres in [false, true] {
        lists_exactly_the_oracles_loans(&world(17, "2026-03-15", postgres).await, postgres).await;
    }
}

/// `query_loans` written in `language` (plugins/examples/<language>/query_loans, through its
/// SDK's `listing`) lists as the oracle does, as the Rust build is held to above.
async fn ported(language: &str) {
    for postgres in [false, true] {
        let w = world_in(17, "2026-03-15", postgres, Some((language, "query_loans"))).await;
        lists_exactly_the_oracles_loans(&w, postgres).await;
    }
}

#[tokio::test]
async fn query_loans_written_in_python_lists_the_oracles_loans_on_both_engines() {
    ported("python").await;
}

#[tokio::test]
async fn query_loans_written_in_typescript_lists_the_oracles_loans_on_both_engines() {
    ported("typescript").await;
}

/// For callers of every role and four filters, each in another order: every page of
/// `query_loans` walked gives the oracle's loans once each, each field its import line's, names
/// only where they may be read; a borrower's names only when asked and allowed.
async fn lists_exactly_the_oracles_loans(w: &World, postgres: bool) {
    // Arrange
    let some_officer = w.loans[3]["loanOfficerId"].clone();
    let filters = [
        json!({}),
        json!({"statuses": ["Loan Open", "Loan Underwriting", "Loan Approved"]}),
        json!({"loanOfficerIds": [some_officer], "loanAmountMin": 100000}),
        json!({"purposes": ["Refinance"], "loanTypes": ["Conventional", "FHA"]}),
    ];
    for caller in callers(w) {
        let token = w.app.token_for(caller["email"].as_str().unwrap());
        let names = reads_names(&caller);
        for (i, filter) in filters.iter().enumerate() {
            let (order, descending) = [
                ("amount", true),
                ("updated", false),
                ("statusDate", true),
                ("closingDate", false),
            ][i];
            let args = json!({"filter": filter, "orderBy": order, "descending": descending, "pageSize": 100});

            // Act
            let (loans, totals) = walk(w, &token, &args).await;

            // Assert
            in_order(&loans, order, descending, &caller["email"]);
            let expected: BTreeSet<String> = in_scope(w, &caller, filter)
                .iter()
                .map(|l| l["id"].as_str().unwrap().to_string())
                .collect();
            let ids: Vec<String> = loans
                .iter()
                .map(|l| l["id"].as_str().unwrap().to_string())
                .collect();
            let unique: BTreeSet<String> = ids.iter().cloned().collect();
            let who = format!("{} {filter} postgres={postgres}", caller["email"]);
            assert_eq!(unique.len(), ids.len(), "{who}: a loan listed twice");
            assert_eq!(unique, expected, "{who}");
            assert_eq!(totals, BTreeSet::from([expected.len() as i64]), "{who}");
            for l in &loans {
                let line = w.loans.iter().find(|x| x["id"] == l["id"]).unwrap();
                let obj = l.as_object().unwrap();
                for (k, v) in obj {
                    assert!(ALLOWED.contains(&k.as_str()), "{who}: field {k}");
                    assert!(
                        same(k, v, line),
                        "{who}: {k} = {v}, the import has {}",
                        line[k]
                    );
                }
                assert!(!obj.contains_key("borrowerEmail"), "{who}");
                assert!(!obj.contains_key("borrowerFirstName"), "{who}: not asked");
                assert_eq!(obj.contains_key("loanOfficerName"), names, "{who}");
                assert_eq!(obj.contains_key("processorName"), names, "{who}");
            }
        }
        // A borrower's names, when asked: only for the roles that may read them.
        let asked = json!({"includeBorrowerName": true, "pageSize": 5});
        if reads_borrowers(&caller) {
            let page = w.app.call_ok(&token, "query_loans", asked).await;
            for l in page["loans"].as_array().unwrap() {
                let line = w.loans.iter().find(|x| x["id"] == l["id"]).unwrap();
                assert_eq!(l["borrowerFirstName"], line["borrowerFirstName"]);
                assert_eq!(l["borrowerLastName"], line["borrowerLastName"]);
                assert!(l.get("borrowerEmail").is_none());
            }
        } else {
            let refused = w.app.call_err(&token, "query_loans", asked).await;
            assert!(
                refused.starts_with("forbidden: field `borrowerFirstName` is a borrower's name"),
                "{}: {refused}",
                caller["email"]
            );
        }
    }
}

#[tokio::test]
async fn query_loans_refuses_bad_arguments_and_cursors_with_their_reason() {
    // Arrange
    let w = world(18, "2026-03-15", false).await;
    let admin = w.app.token_for("admin@demo.loanhost.local");
    let first = w
        .app
        .call_ok(
            &admin,
            "query_loans",
            json!({"pageSize": 10, "orderBy": "amount"}),
        )
        .await;
    let cursor = first["nextCursor"].as_str().unwrap();

    // Act
    let refusals = [
        json!({"orderBy": "colour"}),
        json!({"pageSize": 0}),
        json!({"pageSize": 101}),
        json!({"filter": {"statuses": ["Nope"]}}),
        json!({"cursor": "lc1.forged"}),
        json!({"cursor": cursor, "orderBy": "updated"}),
        json!({"cursor": cursor, "orderBy": "amount", "filter": {"loanAmountMin": 1}}),
        json!({"borrowerEmail": true}),
    ];
    let mut answers = Vec::new();
    for args in &refusals {
        answers.push(w.app.call_err(&admin, "query_loans", args.clone()).await);
    }

    // Assert
    let starts = [
        "invalid_params: orderBy: `colour` is not one of updated, statusDate, amount, closingDate, commission",
        "invalid_params: pageSize: 0 is not between 1 and 100",
        "invalid_params: pageSize: 101 is not between 1 and 100",
        "invalid_params: filter: `statuses`: `Nope` is not a loan status",
        "invalid_params: cursor: the cursor was not issued for this caller and this query",
        "invalid_params: cursor: the cursor was not issued for this caller and this query",
        "invalid_params: cursor: the cursor was not issued for this caller and this query",
        "invalid_params: ",
    ];
    for (answer, start) in answers.iter().zip(starts) {
        assert!(answer.starts_with(start), "{answer}\nexpected: {start}");
    }
}

/// `query_loans` written in Python and in TypeScript answers the host's refusals as the Rust
/// build does (each SDK maps `list-error` to the same tool errors): a bad filter, a cursor
/// changed, sent for another list or by another caller, a cursor cut before an import, a
/// borrower's names for a caller who may not read them.
#[tokio::test]
async fn query_loans_written_in_python_and_typescript_refuse_as_the_rust_build_does() {
    for language in ["python", "typescript"] {
        // Arrange
        let w = world_in(18, "2026-03-15", false, Some((language, "query_loans"))).await;
        let admin = w.app.token_for("admin@demo.loanhost.local");
        let list = json!({"pageSize": 10, "orderBy": "amount"});
        let first = w.app.call_ok(&admin, "query_loans", list.clone()).await;
        let cursor = first["nextCursor"].as_str().unwrap().to_string();
        let with = |mut args: Value| {
            args["cursor"] = json!(cursor);
            args
        };
        let other = callers(&w)
            .into_iter()
            .find(|c| !reads_borrowers(c))
            .expect("a caller who may not read borrowers' names");
        let other = w.app.token_for(other["email"].as_str().unwrap());

        // Act
        let mut answers = Vec::new();
        for args in [
            json!({"filter": {"statuses": ["Nope"]}}),
            json!({"cursor": "lc1.forged", "orderBy": "amount", "pageSize": 10}),
            with(json!({"orderBy": "updated", "pageSize": 10})),
            with(json!({"orderBy": "amount", "pageSize": 10, "filter": {"loanAmountMin": 1}})),
        ] {
            answers.push(w.app.call_err(&admin, "query_loans", args).await);
        }
        answers.push(
            w.app
                .call_err(&other, "query_loans", with(list.clone()))
                .await,
        );
        answers.push(
            w.app
                .call_err(&other, "query_loans", json!({"includeBorrowerName": true}))
                .await,
        );
        import_lines(&w.app, "loans.jsonl", &[w.loans[0].to_string()]).await;
        answers.push(
            w.app
                .call_err(&admin, "query_loans", with(list.clone()))
                .await,
        );

        // Assert
        let not_issued =
            "invalid_params: cursor: the cursor was not issued for this caller and this query";
        let starts = [
            "invalid_params: filter: `statuses`: `Nope` is not a loan status",
            not_issued,
            not_issued,
            not_issued,
            not_issued,
            "forbidden: field `borrowerFirstName` is a borrower's name",
            "bad_request: cursor: the loans changed since this list's first page",
        ];
        for (answer, start) in answers.iter().zip(starts) {
            assert!(
                answer.starts_with(start),
                "{language}: {answer}\nexpected: {start}"
            );
        }
    }
}
