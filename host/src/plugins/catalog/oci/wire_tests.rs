//! Unit tests of the wire client: challenges and realms.

use super::{bearer_challenge, Challenge, Wire};
use crate::plugins::catalog::oci::RegistryOptions;

#[test]
fn a_bearer_challenge_is_read_with_its_quoted_commas() {
    // Arrange
    let header = r#"Bearer realm="https://auth.example.com/token?a=1,b=2",service="registry.example.com",scope="repository:team/x:pull""#;

    // Act / Assert
    assert_eq!(
        bearer_challenge(header),
        Some(Challenge {
            realm: "https://auth.example.com/token?a=1,b=2".into(),
            service: Some("registry.example.com".into()),
        })
    );
    assert_eq!(bearer_challenge("Basic realm=\"x\""), None);
    assert_eq!(bearer_challenge("Bearer service=\"x\""), None);
}

#[test]
fn credentials_go_only_to_an_https_realm_or_a_listed_loopback_origin() {
    // Arrange
    let wire = Wire::new(&RegistryOptions {
        plain_http: vec!["127.0.0.1:5000".into()],
        ..Default::default()
    })
    .unwrap();
    let check = |realm: &str| wire.checked_realm("oci://r/x:1", realm);

    // Act / Assert
    assert!(check("https://auth.example.com/token").is_ok());
    assert!(check("http://127.0.0.1:5000/token").is_ok());
    let with_token_service = Wire::new(&RegistryOptions {
        plain_http: vec!["127.0.0.1:5000".into(), "127.0.0.1:5001".into()],
        ..Default::default()
    })
    .unwrap();
    assert!(with_token_service
        .checked_realm("oci://r/x:1", "http://127.0.0.1:5001/token")
        .is_ok());
    for hostile in [
        "http://127.0.0.1:5001/token",
        "http://auth.example.com/token",
        "http://localhost:5000/token",
        "ftp://auth.example.com/token",
        "https://user:pw@auth.example.com/token",
        "not a url",
    ] {
        let why = check(hostile).unwrap_err().to_string();
        assert!(why.contains("credentials go only to"), "{hostile}: {why}");
    }
    let https_registry = Wire::new(&RegistryOptions::default()).unwrap();
    assert!(https_registry
        .checked_realm("oci://r/x:1", "http://127.0.0.1:5000/token")
        .is_err());
}
