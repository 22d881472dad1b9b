//! Plugins of every served WIT version side by side: a 1.0.0 one (`plugins/fixtures/wit-1-0`,
//! built without the SDK), a 1.1.0 one (`plugins/fixtures/wit-1-1`) and a 1.2.0 tool (the
//! shipped Rust `report_loans`, built with the SDK) in one host, the rows of 1.0.0's `data.run`
//! and 1.1.0's `data.run-json` equal to what the 1.2.0 tool reads, and a 1.1.0 result that is
//! not UTF-8 refused while the host keeps serving.

use serde_json::{json, Value};

use crate::data::scaled;
use crate::helpers::{
    fixture_wasm, manifest, on_wit, seed_app, spawn_app_with, tool_manifest, tool_wasm, AppOptions,
    TestApp, DEFAULT_ROLES,
};

async fn every_version() -> TestApp {
    let on = |name: &str, version: &str| {
        on_wit(
            manifest(name, DEFAULT_ROLES, &["loans"], 32, 5000, 65536),
            version,
        )
    };
    spawn_app_with(
        AppOptions::default()
            .plugin("wit_1_0", fixture_wasm("wit-1-0"), on("wit_1_0", "1.0.0"))
            .plugin("wit_1_1", fixture_wasm("wit-1-1"), on("wit_1_1", "1.1.0"))
            .plugin(
                "report_loans",
                tool_wasm("report_loans"),
                tool_manifest("report_loans"),
            ),
    )
    .await
}

#[tokio::test]
async fn plugins_of_1_0_and_1_1_read_the_rows_a_1_2_plugin_reads_beside_them() {
    // Arrange
    let app = every_version().await;
    seed_app(&app, 61, 300).await;

    // Act
    let v11 = app
        .call_ok("admin-token", "wit_1_1", json!({"action": "rows"}))
        .await;
    let v10 = app.call_ok("admin-token", "wit_1_0", json!({})).await;
    let v12 = app
        .call_ok(
            "admin-token",
            "report_loans",
            json!({"groupBy": "Status", "metric": "Sum"}),
        )
        .await;

    // Assert: the kinds of (status, count, sum), the same rows through 1.0.0's `data.run`,
    // and per status the same count and exact sum as the 1.2.0 tool's buckets.
    assert_eq!(v11["kinds"], json!(["text", "integer", "decimal"]), "{v11}");
    let rows = v11["rows"].as_array().unwrap();
    assert!(!rows.is_empty(), "the admin sees loans: {v11}");
    assert_eq!(v11["totalGroups"], rows.len());
    assert_eq!(v10["rows"], v11["rows"], "1.0.0 against 1.1.0");
    let buckets = v12["buckets"].as_array().unwrap();
    assert_eq!(rows.len(), buckets.len());
    for row in rows {
        assert!(
            row[2].is_string() || row[2].is_null(),
            "a decimal is a JSON string: {row}"
        );
        let bucket = buckets
            .iter()
            .find(|b| b["key"] == row[0])
            .unwrap_or_else(|| panic!("no bucket for {row}"));
        assert_eq!(bucket["count"], row[1], "{row} against {bucket}");
        assert_eq!(
            scaled(bucket.get("sum").unwrap_or(&Value::Null)),
            scaled(&row[2]),
            "{row} against {bucket}"
        );
    }
}

#[tokio::test]
async fn a_1_1_result_that_is_not_utf8_is_refused_and_the_host_keeps_serving() {
    // Arrange
    let app = every_version().await;
    seed_app(&app, 62, 50).await;

    // Act
    let refused = app
        .call_err("admin-token", "wit_1_1", json!({"action": "not-utf8"}))
        .await;
    let after = app
        .call_ok("admin-token", "wit_1_1", json!({"action": "rows"}))
        .await;

    // Assert
    assert!(
        refused.starts_with("internal: `wit_1_1` failed unexpectedly"),
        "{refused}"
    );
    assert_eq!(after["kinds"][0], "text", "{after}");
}
