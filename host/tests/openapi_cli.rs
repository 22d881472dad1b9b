//! `loanhost openapi` prints the REST API description for the configured base URL and API
//! prefix: the document the server serves at `{api_prefix}/openapi.json`.

use std::process::Command;

#[test]
fn loanhost_openapi_prints_the_description_for_the_configuration() {
    // Arrange
    let dir = tempfile::tempdir().unwrap();

    // Act
    let out = Command::new(env!("CARGO_BIN_EXE_loanhost"))
        .arg("openapi")
        .current_dir(dir.path())
        .env("LOANHOST_BASE_URL", "https://loans.example.com")
        .env("LOANHOST_API_PREFIX", "/v1")
        .output()
        .unwrap();

    // Assert
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        printed,
        loanhost::http::openapi::document("https://loans.example.com", "/v1")
    );
    assert!(printed["paths"].get("/v1/oauth/token").is_some());
    assert!(printed["paths"].get("/v1/openapi.json").is_some());
    assert_eq!(printed["info"]["version"], "v1.2");
}
