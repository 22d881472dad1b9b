//! The REST API description: served unauthenticated at `{api_prefix}/openapi.json`, valid
//! OpenAPI 3.1 for an independent validator (`openapi-spec-validator`), version `v1.2`, with
//! every model the spec names and the spec's field names (as transcribed by hand in
//! `models/tests/examples.json`, not as generated).

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::helpers::{python, root, spawn_app};

/// Runs `openapi-spec-validator` on `doc`; `Err` carries what it said.
async fn validate(doc: &Value) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("openapi.json");
    std::fs::write(&path, doc.to_string()).unwrap();
    let out = tokio::process::Command::new(python())
        .args([
            "-c",
            "import sys, json\n\
             from openapi_spec_validator import validate\n\
             validate(json.load(open(sys.argv[1])))\n\
             print('valid')",
        ])
        .arg(&path)
        .output()
        .await
        .expect("running .venv's python (make test creates it)");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

async fn served(app: &crate::helpers::TestApp) -> Value {
    let resp = app
        .client
        .get(format!("{}/api/openapi.json", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200, "served without a token");
    assert_eq!(resp.headers()["content-type"], "application/json");
    resp.json().await.unwrap()
}

#[tokio::test]
async fn the_description_is_served_unauthenticated_and_is_valid_openapi_3_1() {
    // Arrange
    let app = spawn_app().await;

    // Act
    let doc = served(&app).await;

    // Assert
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["version"], "v1.2");
    assert_eq!(doc["servers"][0]["url"], json!(app.base));
    assert_eq!(
        doc,
        loanhost::http::openapi::document(&app.base, "/api"),
        "the served document is the one `loanhost openapi` prints"
    );
    validate(&doc).await.unwrap();
    // The validator is not a rubber stamp: a dangling reference is refused.
    let mut broken = doc.clone();
    broken["components"]["schemas"]
        .as_object_mut()
        .unwrap()
        .remove("ProblemDetails");
    assert!(validate(&broken).await.is_err());
}

#[tokio::test]
async fn the_token_endpoint_is_described_with_its_body_and_problem_answers() {
    // Arrange
    let app = spawn_app().await;

    // Act
    let doc = served(&app).await;

    // Assert
    let post = &doc["paths"]["/api/oauth/token"]["post"];
    assert_eq!(post["security"], json!([{"bearer": []}]));
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    assert_eq!(post["requestBody"]["required"], false);
    let media: BTreeSet<&str> = post["requestBody"]["content"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert!(media.contains("application/json"));
    assert!(media.iter().any(|m| m.contains("odata.metadata")));
    let body = &doc["components"]["schemas"]["OAuthTokenRequest"];
    assert_eq!(
        body["properties"]["client_id"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(
        body["properties"]["client_secret"]["type"],
        json!(["string", "null"])
    );
    assert!(body.get("required").is_none() && body["additionalProperties"] != json!(false));
    assert_eq!(post["responses"]["200"], json!({"description": "Success"}));
    let problem = |code: &str| {
        post["responses"][code]["content"]["application/problem+json"]["schema"]["$ref"].clone()
    };
    assert_eq!(
        problem("400"),
        "#/components/schemas/ValidationProblemDetails"
    );
    for code in ["401", "415", "503"] {
        assert_eq!(
            problem(code),
            "#/components/schemas/ProblemDetails",
            "{code}"
        );
    }
}

#[tokio::test]
async fn every_model_the_spec_names_is_described_with_the_spec_field_names() {
    // Arrange
    let app = spawn_app().await;
    let spec: serde_json::Map<String, Value> = serde_json::from_str(
        &std::fs::read_to_string(root().join("models/tests/examples.json")).unwrap(),
    )
    .unwrap();

    // Act
    let doc = served(&app).await;

    // Assert
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let mut described = 0;
    for (name, model) in spec.iter().filter(|(n, _)| !n.starts_with('_')) {
        let schema = schemas
            .get(name)
            .unwrap_or_else(|| panic!("{name} is not in components.schemas"));
        if let Some(values) = model.get("enum") {
            assert_eq!(&schema["enum"], values, "{name}");
            described += 1;
            continue;
        }
        let fields: BTreeSet<&str> = model["example"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let properties: BTreeSet<&str> = schema["properties"]
            .as_object()
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        if model["closed"] == json!(true) {
            assert_eq!(properties, fields, "{name}");
            assert_eq!(schema["additionalProperties"], false, "{name} is closed");
        } else {
            // Open models: the spec's fields are described; the example's extras are not.
            assert!(properties.is_subset(&fields), "{name}: {properties:?}");
            assert_ne!(schema["additionalProperties"], false, "{name} is open");
        }
        described += 1;
    }
    assert_eq!(described, 59, "every model of the spec's list");
    for record in [
        "LoanAggregationResponse",
        "LoanPipelineReportResponse",
        "LoanMilestoneReportResponse",
        "MloPipelineReportResponse",
        "DwLoanMilestoneReportResponse",
        "LoanReportingMetadataResponse",
    ] {
        assert!(schemas.contains_key(record), "{record}");
    }
}
