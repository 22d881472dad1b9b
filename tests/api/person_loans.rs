//! Schema v15: a person's loan rows (`person_loans`) follow their loan through re-imports, so
//! a person's milestone report counts a loan exactly while they hold a role on it, at its
//! amount now (the scope's isolation through the rows the import keeps).

/// Loan count and (stage, amount) pairs of a caller's milestone report (two months ending with
/// TODAY), by funnel stage or by raw status.
async fn milestones_of(app: &crate::helpers::TestApp, token: &str, raw: bool) -> (u64, String) {
    let args = serde_json::json!({"lookback": 2, "groupByNorthstar": !raw});
    let (count, buckets) = crate::helpers::milestone_buckets(app, token, args).await;
    let stages: Vec<String> = buckets
        .iter()
        .map(|b| format!("{} {}", b["stage"].as_str().unwrap(), b["loanAmount"]))
        .collect();
    (count, stages.join(","))
}

async fn a_persons_loan_rows_follow_their_loan(postgres: bool) {
    use crate::helpers::{import_lines, milestones_app};
    use serde_json::json;
    // Arrange: a loan the Agent originates and the PreLicensed caller referred, with history.
    let app = milestones_app(postgres).await;
    // A referrer who is PreLicensed (held with Agent): referred loans only.
    let (agent, prelicensed, other) = (
        "00000000-0000-0000-0000-0000000000b2",
        "00000000-0000-0000-0000-0000000000e5",
        "00000000-0000-0000-0000-0000000000d4",
    );
    import_lines(
        &app,
        "agents.jsonl",
        &[
            json!({"id": prelicensed, "email": "referrer@example.com", "firstName": "Pat",
                 "lastName": "Lee", "roles": ["Agent", "PreLicensed"], "managedAgentIds": []})
            .to_string(),
            // A ConciergeKey managing the Agent: the loans the Agent is the officer of.
            json!({"id": "00000000-0000-0000-0000-0000000000f6", "email": "concierge@example.com",
                 "firstName": "Kim", "lastName": "Ray", "roles": ["ConciergeKey"],
                 "managedAgentIds": [agent]})
            .to_string(),
        ],
    )
    .await;
    let referrer = app.token_for("referrer@example.com");
    let concierge = app.token_for("concierge@example.com");
    let id = "00000000-0000-4000-8000-00000000b001";
    let loan = |officer: &str, assistant: Option<&str>, referrer: Option<&str>, amount: &str| {
        json!({"id": id, "status": "Loan Open", "loanAmount": amount, "loanOfficerId": officer,
               "loanAssistantId": assistant, "referringAgentId": referrer})
        .to_string()
    };
    import_lines(
        &app,
        "loans.jsonl",
        &[loan(agent, None, Some(prelicensed), "100")],
    )
    .await;
    import_lines(
        &app,
        "los_status_history.jsonl",
        &[
            json!({"loanId": id, "status": "Loan Open", "occurredAt": "2026-03-02T10:00:00Z"})
                .to_string(),
        ],
    )
    .await;

    // Act: the loan changes hands, then gains history with a status outside the spec's list.
    let first = (
        milestones_of(&app, "agent-token", false).await,
        milestones_of(&app, &referrer, false).await,
        milestones_of(&app, &concierge, false).await,
    );
    // The referrer becomes its assistant: a PreLicensed caller sees referred loans only.
    import_lines(
        &app,
        "loans.jsonl",
        &[loan(other, Some(prelicensed), None, "250.5")],
    )
    .await;
    let moved = (
        milestones_of(&app, "agent-token", false).await,
        milestones_of(&app, &referrer, false).await,
    );
    import_lines(
        &app,
        "loans.jsonl",
        &[loan(other, Some(agent), None, "250.5")],
    )
    .await;
    let assisted = (
        milestones_of(&app, "agent-token", false).await,
        milestones_of(&app, &concierge, false).await,
    );
    import_lines(
        &app,
        "los_status_history.jsonl",
        &[
            json!({"loanId": id, "status": "Submitted to investor", "occurredAt": "2026-03-03T09:00:00Z"})
                .to_string(),
        ],
    )
    .await;
    let raw = milestones_of(&app, "agent-token", true).await;

    // Assert: a person sees the loan exactly while they hold a role on it, at its amount now.
    let opened = |amount: &str| (1, format!("1. Opened {amount}"));
    assert_eq!(first, (opened("100"), opened("100"), opened("100")));
    assert_eq!(
        moved,
        ((0, String::new()), (0, String::new())),
        "no role left"
    );
    assert_eq!(
        assisted,
        (opened("250.5"), (0, String::new())),
        "the assistant's, and not the ConciergeKey's (its agent is no longer the officer)"
    );
    assert_eq!(
        raw,
        (2, "Loan Open 250.5,Submitted to investor 250.5".into()),
        "a status without a bit of its own, read from the history rows"
    );
}

#[tokio::test]
async fn sqlite_a_persons_loan_rows_follow_their_loan() {
    a_persons_loan_rows_follow_their_loan(false).await;
}

#[tokio::test]
async fn postgres_a_persons_loan_rows_follow_their_loan() {
    a_persons_loan_rows_follow_their_loan(true).await;
}
