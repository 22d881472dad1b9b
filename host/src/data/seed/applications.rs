//! The seed's loan applications (`loan_applications.jsonl`, schema v21): one for one loan in
//! ten, with the spreads a processor meets (files ready to submit, files blocked by a wizard
//! section, by a required document, by both, and files already submitted), the borrower and
//! often a co-borrower, tasks with their documents, the file's contacts and its timeline.
//! Never a borrower's sensitive data: the import would refuse it. Drawn from a generator of
//! its own, so the other files are the same with or without applications.

use std::io::{BufWriter, Write};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use time::{Duration, OffsetDateTime};

use loanhost_models::SECTION_NAMES;

use super::iso;
use super::people::{uuid, FIRST, LAST};

/// One loan in this many has an application.
pub const ONE_IN: u32 = 10;

/// Required borrower documents: (code, title).
const REQUIRED_DOCUMENTS: [(&str, &str); 4] = [
    ("PAYSTUBS", "Pay stubs (last 30 days)"),
    ("W2", "W-2s (last 2 years)"),
    ("BANK_STATEMENTS", "Bank statements (last 2 months)"),
    ("PHOTO_ID", "Photo ID"),
];

/// Statuses of a document the borrower has provided, and of one still missing.
const DOCUMENT_IN: [&str; 3] = ["Uploaded", "Submitted", "Accepted"];
const DOCUMENT_MISSING: [&str; 3] = ["Requested", "Rejected", "Outstanding"];
const SECTION_OPEN: [&str; 2] = ["InProgress", "NotStarted"];

/// The fields a section may still miss.
const MISSING_FIELDS: [&str; 6] = [
    "currentAddress.yearsAtAddress",
    "employments[0].startDate",
    "assets[0].amount",
    "liabilities",
    "maritalStatus",
    "numberOfDependents",
];

/// How a seeded file stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Ready,
    Submitted,
    BlockedBySection,
    BlockedByDocument,
    BlockedByBoth,
}

/// Writes the applications of the seed's loans.
pub(super) struct Applications {
    pub(super) w: BufWriter<std::fs::File>,
    rng: StdRng,
    pub(super) written: u64,
}

/// What an application takes from its loan.
pub(super) struct LoanFacts<'a> {
    pub(super) line: &'a Value,
    pub(super) status_date: OffsetDateTime,
}

impl Applications {
    pub(super) fn new(w: BufWriter<std::fs::File>, seed: u64) -> Applications {
        Applications {
            w,
            rng: StdRng::seed_from_u64(seed ^ 0x00A1_1CA7_10E5),
            written: 0,
        }
    }

    /// Writes an application of the loan `facts` for one loan in [`ONE_IN`].
    pub(super) fn maybe_write(&mut self, facts: LoanFacts<'_>) -> std::io::Result<()> {
        if self.rng.gen_range(0..ONE_IN) != 0 {
            return Ok(());
        }
        let line = application(&mut self.rng, &facts);
        writeln!(self.w, "{line}")?;
        self.written += 1;
        Ok(())
    }
}

fn application(rng: &mut StdRng, facts: &LoanFacts<'_>) -> Value {
    let loan = facts.line;
    let shape = match rng.gen_range(0..20) {
        0..=3 => Shape::Submitted,
        4..=8 => Shape::Ready,
        9..=13 => Shape::BlockedBySection,
        14..=17 => Shape::BlockedByDocument,
        _ => Shape::BlockedByBoth,
    };
    let created = facts.status_date - Duration::days(rng.gen_range(5..60));
    let updated = created + Duration::hours(rng.gen_range(1..24 * 30));
    let id = uuid(rng);
    let borrower_id = uuid(rng);
    let open_sections: Vec<usize> = match shape {
        Shape::BlockedBySection | Shape::BlockedByBoth => {
            let n = rng.gen_range(1..=3);
            let mut picked: Vec<usize> = (0..n).map(|_| rng.gen_range(0..7)).collect();
            picked.sort_unstable();
            picked.dedup();
            picked
        }
        _ => vec![],
    };
    // One file in five whose last section is open has never opened it: no record of it.
    let unopened = open_sections.contains(&6) && rng.gen_bool(0.2);
    let sections: Vec<Value> = SECTION_NAMES
        .iter()
        .enumerate()
        .filter(|(i, _)| !(*i == 6 && unopened))
        .map(|(i, name)| {
            let open = open_sections.contains(&i);
            let status = match (open, rng.gen_bool(0.5)) {
                (true, _) => SECTION_OPEN[rng.gen_range(0..2)],
                (false, true) => "Completed",
                (false, false) => "Accepted",
            };
            let missing: Vec<&str> = match open {
                true => vec![MISSING_FIELDS[rng.gen_range(0..MISSING_FIELDS.len())]],
                false => vec![],
            };
            json!({
                "sectionName": name,
                "status": status,
                "taskCode": format!("VERIFY_{}", name.to_uppercase().replace([' ', '&'], "_")),
                "missingFields": missing,
            })
        })
        .collect();
    let missing_document = matches!(shape, Shape::BlockedByDocument | Shape::BlockedByBoth)
        .then(|| rng.gen_range(0..REQUIRED_DOCUMENTS.len()));
    let mut tasks = Vec::new();
    let mut documents = Vec::new();
    for (k, (code, title)) in REQUIRED_DOCUMENTS.iter().enumerate() {
        let status = match (missing_document == Some(k), shape) {
            (true, _) => DOCUMENT_MISSING[rng.gen_range(0..3)],
            (false, Shape::Submitted) => ["Submitted", "Accepted"][rng.gen_range(0..2)],
            (false, _) => DOCUMENT_IN[rng.gen_range(0..3)],
        };
        let task_id = uuid(rng);
        let mut document_ids = vec![];
        if DOCUMENT_IN.contains(&status) {
            let doc_id = uuid(rng);
            document_ids.push(doc_id.clone());
            documents.push(document(&doc_id, &id, &task_id, title, updated));
        }
        tasks.push(json!({
            "id": task_id, "code": code, "title": title, "kind": "BorrowerDocument",
            "status": status, "isRequired": true, "borrowerId": borrower_id,
            "dueDate": (created + Duration::days(14)).date().to_string(),
            "completedTimestampUtc": DOCUMENT_IN.contains(&status).then(|| iso(updated)),
            "documentIds": document_ids,
        }));
    }
    // A gift letter that is asked for but not required: it never blocks.
    if rng.gen_bool(0.3) {
        tasks.push(json!({
            "id": uuid(rng), "code": "GIFT_LETTER", "title": "Gift letter",
            "kind": "BorrowerDocument", "status": "Requested", "isRequired": false,
            "borrowerId": borrower_id, "documentIds": [],
        }));
    }
    for (code, title, kind) in [
        ("VOE", "Verify employment", "Verification"),
        ("LE_ACK", "Acknowledge the Loan Estimate", "Disclosure"),
    ] {
        let status = ["Outstanding", "Requested", "Accepted", "Waived"][rng.gen_range(0..4)];
        tasks.push(json!({
            "id": uuid(rng), "code": code, "title": title, "kind": kind, "status": status,
            "isRequired": true, "documentIds": [],
        }));
    }
    let submitted = shape == Shape::Submitted;
    let mut timeline = vec![json!({"event": "Started", "occurredAt": iso(created)})];
    if submitted {
        timeline.push(json!({"event": "Submitted", "occurredAt": iso(updated)}));
    }
    json!({
        "id": id,
        "loanId": loan["id"],
        "losType": {"id": "7d1c6f0e-5b1a-4c8e-9f3a-2b6d8e4a1c01", "type": "LOS", "name": "Encompass"},
        "isSubmitted": submitted,
        "isLoanEditable": !submitted,
        "isSetupComplete": true,
        "isDeleted": false,
        "skipStatedIncomePreapproval": false,
        "startStatedIncomePreapproval": false,
        "timestamp": updated.unix_timestamp() * 1000,
        "createdTimestampUtc": iso(created),
        "updatedTimestampUtc": iso(updated),
        "updatedBy": loan["loanOfficerId"],
        "updatedByEmail": "officer@loanhost.example",
        "updatedByFirstName": loan["loanOfficerName"].as_str().and_then(|n| n.split(' ').next()),
        "updatedByLastName": loan["loanOfficerName"].as_str().and_then(|n| n.split(' ').nth(1)),
        "referredBy": loan["referringAgentId"].as_str().map(|rid| contact(
            rid, loan["referringAgentName"].as_str(), "Referral", "Referring agent")),
        "borrower": borrower(rng, loan, &borrower_id),
        "sections": sections,
        "tasks": tasks,
        "documents": documents,
        "contacts": contacts(rng, loan),
        "timeline": timeline,
    })
}

fn borrower(rng: &mut StdRng, loan: &Value, id: &str) -> Value {
    let mut b = person(
        loan["borrowerFirstName"].as_str(),
        loan["borrowerLastName"].as_str(),
    );
    b["hdBorrowerId"] = json!(id);
    b["isPrimary"] = json!(true);
    b["numberOfDependents"] = json!(rng.gen_range(0..4));
    b["assets"] = json!([{
        "institutionName": "First Community Bank", "amount": rng.gen_range(5_000..250_000) as f64,
        "accountName": "Checking", "assetAccountId": uuid(rng), "name": "Checking",
    }]);
    if rng.gen_bool(0.35) {
        let first = FIRST[rng.gen_range(0..FIRST.len())];
        let mut co = person(Some(first), loan["borrowerLastName"].as_str());
        co["hdBorrowerId"] = json!(uuid(rng));
        co["isPrimary"] = json!(false);
        b["coBorrower"] = co;
    }
    b
}

fn person(first: Option<&str>, last: Option<&str>) -> Value {
    json!({
        "firstName": first, "lastName": last,
        "contacts": {"email": null, "mobilePhone": "555-0100", "workPhone": null},
        "isMilitary": false, "borrowerType": "Individual",
        "employments": [], "otherIncomes": [], "liabilities": [],
    })
}

fn contacts(rng: &mut StdRng, loan: &Value) -> Vec<Value> {
    let mut out = vec![contact(
        loan["loanOfficerId"].as_str().unwrap_or_default(),
        loan["loanOfficerName"].as_str(),
        "LoanOfficer",
        "Loan officer",
    )];
    if let Some(p) = loan["processorId"].as_str() {
        out.push(contact(
            p,
            loan["processorName"].as_str(),
            "Processor",
            "Processor",
        ));
    }
    let last = LAST[rng.gen_range(0..LAST.len())];
    out.push(json!({
        "id": uuid(rng), "firstName": "Dana", "lastName": last, "role": "Title",
        "roleName": "Title company", "agentName": format!("{last} Title"),
        "phone": "555-0142", "email": "closings@title.example", "state": loan["propertyState"],
    }));
    out
}

fn contact(id: &str, name: Option<&str>, role: &str, role_name: &str) -> Value {
    let mut parts = name.unwrap_or_default().splitn(2, ' ');
    json!({
        "id": id, "firstName": parts.next(), "lastName": parts.next(), "role": role,
        "roleName": role_name, "phone": "555-0199",
    })
}

fn document(id: &str, application: &str, task: &str, title: &str, at: OffsetDateTime) -> Value {
    json!({
        "id": id, "name": format!("{title}.pdf"), "isPdfConversionComplete": true,
        "loanApplicationId": application, "loanApplicationTaskId": task,
        "createdTimestamp": iso(at), "updatedTimestamp": iso(at), "isVault": false,
        "description": title, "isDeleted": false, "isInternal": false, "isObsolete": false,
        "title": title,
    })
}
