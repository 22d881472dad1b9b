//! The fields a plugin may read: what its manifest grants per dataset, checked by the host
//! before anything answers a query; identifying fields counted by any plugin granted them,
//! read only with a listing grant; a manifest in the earlier list form aggregate-only.

use serde_json::{json, Value};

use crate::helpers::{fixture_wasm, seed_app, spawn_app_with, AppOptions, TestApp, DEFAULT_ROLES};

/// `query_echo` deployed with `datasets` (the manifest's text for them) on a seeded store.
async fn echo_granted(datasets: &str) -> TestApp {
    let roles = DEFAULT_ROLES
        .iter()
        .map(|r| format!("\"{r}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let manifest = format!(
        "name = \"query_echo\"\nwit_version = \"1.2.0\"\nroles = [{roles}]\n{datasets}\n[limits]\nmemory_mib = 64\ntimeout_ms = 20000\nmax_output_bytes = 4194304\n"
    );
    let app = spawn_app_with(AppOptions::default().plugin(
        "query_echo",
        fixture_wasm("query-echo"),
        manifest,
    ))
    .await;
    seed_app(&app, 7, 200).await;
    app
}

fn grouped_by(field: &str) -> Value {
    json!({"dataset": "loans", "groupBy": [{"field": field}], "aggregates": [["count", null]]})
}

#[tokio::test]
async fn a_plugin_reads_only_the_fields_its_manifest_names() {
    // Arrange
    let app = echo_granted(
        "scope = \"caller\"\n\n[datasets.loans]\nfields = [\"status\", \"loanAmount\", \"id\"]\n",
    )
    .await;

    // Act
    let by_status = app
        .call_ok("admin-token", "query_echo", grouped_by("status"))
        .await;
    let summed = app
        .call_ok(
            "admin-token",
            "query_echo",
            json!({"dataset": "loans", "aggregates": [["sum", "loanAmount"], ["countDistinct", "id"]]}),
        )
        .await;
    let by_purpose = app
        .call_err("admin-token", "query_echo", grouped_by("purpose"))
        .await;
    let compared = app
        .call_err(
            "admin-token",
            "query_echo",
            json!({"dataset": "loans", "predicates": [["loanType", "eq", "FHA"]], "aggregates": [["count", null]]}),
        )
        .await;
    let by_id = app
        .call_err("admin-token", "query_echo", grouped_by("id"))
        .await;

    // Assert
    assert!(
        !by_status["rows"].as_array().unwrap().is_empty(),
        "{by_status}"
    );
    assert_eq!(summed["rows"].as_array().unwrap().len(), 1, "{summed}");
    for refused in [&by_purpose, &compared] {
        assert!(
            refused.starts_with("forbidden: ") && refused.contains("is not granted to this plugin"),
            "{refused}"
        );
    }
    assert!(
        by_id.contains("`id` of dataset `loans` identifies a loan"),
        "{by_id}"
    );
}

#[tokio::test]
async fn identifying_fields_are_listed_only_with_a_listing_grant() {
    // Arrange
    let counting =
        echo_granted("scope = \"caller\"\n\n[datasets.loans]\nfields = [\"loanNumber\"]\n").await;
    let listing = echo_granted(
        "scope = \"caller\"\n\n[datasets.loans]\nfields = [\"loanNumber\"]\nlisting = true\n",
    )
    .await;
    let probe = json!({"dataset": "loans", "predicates": [["loanNumber", "eq", "L-1"]], "aggregates": [["count", null]]});
    let highest = json!({"dataset": "loans", "aggregates": [["max", "loanNumber"]]});

    // Act
    let refused = [
        counting
            .call_err("admin-token", "query_echo", grouped_by("loanNumber"))
            .await,
        counting
            .call_err("admin-token", "query_echo", probe.clone())
            .await,
        counting
            .call_err("admin-token", "query_echo", highest.clone())
            .await,
    ];
    let counted = counting
        .call_ok(
            "admin-token",
            "query_echo",
            json!({"dataset": "loans", "aggregates": [["countDistinct", "loanNumber"]]}),
        )
        .await;
    let listed = listing
        .call_ok("admin-token", "query_echo", grouped_by("loanNumber"))
        .await;

    // Assert
    for r in &refused {
        assert!(r.contains("identifies a loan or a deal"), "{r}");
    }
    assert_eq!(counted["rows"].as_array().unwrap().len(), 1, "{counted}");
    assert!(listed["rows"].as_array().unwrap().len() > 1, "{listed}");
    listing.call_ok("admin-token", "query_echo", probe).await;
    listing.call_ok("admin-token", "query_echo", highest).await;
}

#[tokio::test]
async fn a_manifest_in_the_list_form_reads_every_field_for_aggregates_only() {
    // Arrange
    let app = echo_granted("datasets = [\"loans\"]\nscope = \"caller\"\n").await;

    // Act
    let by_purpose = app
        .call_ok("admin-token", "query_echo", grouped_by("purpose"))
        .await;
    let by_id = app
        .call_err("admin-token", "query_echo", grouped_by("id"))
        .await;

    // Assert
    assert!(
        !by_purpose["rows"].as_array().unwrap().is_empty(),
        "{by_purpose}"
    );
    assert!(by_id.contains("identifies a loan"), "{by_id}");
}
