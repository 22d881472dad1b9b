//! Unit tests of the configuration: defaults, every refusal naming its variable.

use super::*;

fn with(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
    Config::from_map(
        &pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

#[test]
fn defaults() {
    let c = Config::default();
    assert_eq!(c.listen.to_string(), "127.0.0.1:8080");
    assert_eq!(c.idp.issuer, "http://127.0.0.1:8080/dev-idp");
    assert_eq!(c.api_prefix, "/api");
    assert!(!c.dev_idp && !c.require_signed_plugins);
    // The limits the threat model states.
    assert_eq!(c.token_leeway, std::time::Duration::from_secs(30));
    assert_eq!(c.limits.body_timeout, std::time::Duration::from_secs(10));
    assert_eq!(c.limits.max_requests_per_address, 16);
    assert_eq!(c.limits.max_token_forwards, 32);
}

#[test]
fn tools_are_listed_to_every_caller_unless_only_the_callable_are_asked_for() {
    assert_eq!(Config::default().tools_list, ToolsList::All);
    let callable = with(&[("LOANHOST_TOOLS_LIST", " callable ")]).unwrap();
    assert_eq!(callable.tools_list, ToolsList::Callable);
    assert_eq!(
        with(&[("LOANHOST_TOOLS_LIST", "mine")])
            .unwrap_err()
            .to_string(),
        "LOANHOST_TOOLS_LIST: `mine` is not `all` or `callable`"
    );
}

#[test]
fn budgets_are_the_fleets_unless_each_hosts_own_are_asked_for() {
    assert_eq!(Config::default().caller_budgets, BudgetScope::Fleet);
    let host = with(&[("LOANHOST_CALLER_BUDGETS", "host")]).unwrap();
    assert_eq!(host.caller_budgets, BudgetScope::Host);
    assert_eq!(
        with(&[("LOANHOST_CALLER_BUDGETS", "cluster")])
            .unwrap_err()
            .to_string(),
        "LOANHOST_CALLER_BUDGETS: `cluster` is not `fleet` or `host`"
    );
}

#[test]
fn unknown_variable_is_named() {
    // A misspelt name (built here, so that the name itself appears nowhere in the sources).
    let misspelt = format!("LOANHOST_{}", "LISTN");
    let e = with(&[(misspelt.as_str(), "x")]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{misspelt}: unknown configuration variable")
    );
}

#[test]
fn malformed_values_are_named() {
    assert_eq!(
        with(&[("LOANHOST_TODAY", "2026-13-01")])
            .unwrap_err()
            .to_string(),
        "LOANHOST_TODAY: `2026-13-01` is not a date like 2026-01-31"
    );
    assert_eq!(
        with(&[("LOANHOST_DEV_IDP", "maybe")]).unwrap_err().variable,
        "LOANHOST_DEV_IDP"
    );
    assert_eq!(
        with(&[("LOANHOST_BASE_URL", "ftp://x")])
            .unwrap_err()
            .variable,
        "LOANHOST_BASE_URL"
    );
    assert_eq!(
        with(&[("LOANHOST_INTERNAL_ISSUER", "https://i")])
            .unwrap_err()
            .variable,
        "LOANHOST_INTERNAL_JWKS_URL"
    );
    let behind_https = |var: &'static str| {
        let mut pairs = vec![
            ("LOANHOST_BASE_URL", "https://loans.example.com"),
            ("LOANHOST_IDP_ISSUER", "https://idp.example.com/"),
            (
                "LOANHOST_IDP_AUTHORIZE_URL",
                "https://idp.example.com/authorize",
            ),
            ("LOANHOST_IDP_TOKEN_URL", "https://idp.example.com/token"),
            ("LOANHOST_IDP_JWKS_URL", "https://idp.example.com/jwks"),
        ];
        for p in pairs.iter_mut().filter(|p| p.0 == var) {
            p.1 = "http://idp.example.com/x";
        }
        with(&pairs)
    };
    assert!(behind_https("none").is_ok());
    for var in [
        "LOANHOST_IDP_AUTHORIZE_URL",
        "LOANHOST_IDP_TOKEN_URL",
        "LOANHOST_IDP_JWKS_URL",
    ] {
        assert_eq!(
            behind_https(var).unwrap_err().to_string(),
            format!(
                "{var}: `http://idp.example.com/x` is not https:// although LOANHOST_BASE_URL is"
            )
        );
    }
    assert_eq!(
        with(&[("LOANHOST_TOKEN_LEEWAY_SECS", "301")])
            .unwrap_err()
            .to_string(),
        "LOANHOST_TOKEN_LEEWAY_SECS: `301` is not a whole number in 0..=300"
    );
    assert_eq!(
        with(&[("LOANHOST_OTLP_ENDPOINT", "127.0.0.1:4318")])
            .unwrap_err()
            .variable,
        "LOANHOST_OTLP_ENDPOINT"
    );
    assert_eq!(
        with(&[("LOANHOST_METRICS_LISTEN", "anywhere")])
            .unwrap_err()
            .variable,
        "LOANHOST_METRICS_LISTEN"
    );
    assert_eq!(
        with(&[("LOANHOST_TOKEN_LEEWAY_SECS", "0")])
            .unwrap()
            .token_leeway,
        std::time::Duration::ZERO
    );
}

#[test]
fn lists_and_dates() {
    let c = with(&[
        ("LOANHOST_TRUSTED_KEYS", " a, b ,"),
        ("LOANHOST_TODAY", "2026-02-28"),
    ])
    .unwrap();
    assert_eq!(c.trusted_keys, vec!["a", "b"]);
    assert_eq!(c.today.unwrap().to_string(), "2026-02-28");
}

#[test]
fn the_authorize_callback_is_off_by_default_and_its_redirect_uris_are_checked() {
    assert_eq!(with(&[]).unwrap().authorize_callback, None);
    let on = with(&[
        ("LOANHOST_AUTHORIZE_CALLBACK", "true"),
        (
            "LOANHOST_AUTHORIZE_REDIRECT_URIS",
            "claude=https://claude.ai/api/mcp/auth_callback, https://app.example/cb?a=b",
        ),
    ])
    .unwrap()
    .authorize_callback
    .expect("on");
    assert_eq!(
        on.redirect_uris,
        [
            AllowedRedirect {
                client_id: Some("claude".into()),
                uri: "https://claude.ai/api/mcp/auth_callback".into()
            },
            AllowedRedirect {
                client_id: None,
                uri: "https://app.example/cb?a=b".into()
            }
        ]
    );
    assert_eq!(on.key_file, std::path::PathBuf::from("data/authorize.key"));
    for bad in [
        "app.example/cb",
        "https://app.example/cb#x",
        "ftp://x/cb",
        "c=https://u:p@app.example/cb",
    ] {
        let e = with(&[
            ("LOANHOST_AUTHORIZE_CALLBACK", "true"),
            ("LOANHOST_AUTHORIZE_REDIRECT_URIS", bad),
        ])
        .unwrap_err();
        assert_eq!(e.variable, "LOANHOST_AUTHORIZE_REDIRECT_URIS", "{bad}");
        assert!(e.message.contains(bad), "{e}");
    }
}

#[test]
fn the_configuration_page_is_the_settings_reference_and_names_every_setting() {
    // Arrange
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap();
    let page_path = root.join("docs/configuration.md");
    let generated = reference::markdown();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(&page_path, &generated).unwrap();
    }
    let page = std::fs::read_to_string(&page_path).unwrap_or_default();
    // Every `LOANHOST_…` name anywhere in the host's sources.
    let mut names = std::collections::BTreeSet::new();
    let mut stack = vec![root.join("host/src")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                for (i, _) in text.match_indices("LOANHOST_") {
                    let name: String = text[i..]
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || *c == '_' || c.is_ascii_digit())
                        .collect();
                    if name.len() > "LOANHOST_".len() && !name.ends_with('_') {
                        names.insert(name);
                    }
                }
            }
        }
    }

    // Assert: the page is the generated one; every name is a setting with a default shown.
    assert!(
        page == generated,
        "docs/configuration.md is not the settings reference: run `UPDATE_DOCS=1 cargo test -p loanhost --lib config::tests::the_configuration_page`"
    );
    for name in &names {
        assert!(
            reference::SETTINGS.iter().any(|s| s.name == name),
            "{name} appears in host/src but is no setting of host/src/config/reference.rs"
        );
        assert!(
            page.lines()
                .any(|l| l.starts_with(&format!("| `{name}` | "))),
            "{name} is not in docs/configuration.md"
        );
    }
    assert!(names.len() >= 45, "{names:?}");
}

#[test]
fn the_dev_idp_behind_a_public_url_asks_for_a_password() {
    // Arrange: the dev IdP behind a tunnel's https:// URL, its listener on loopback.
    let public = |extra: &[(&'static str, &'static str)]| {
        let mut pairs = vec![
            ("LOANHOST_DEV_IDP", "true"),
            ("LOANHOST_BASE_URL", "https://demo.example.com"),
        ];
        pairs.extend_from_slice(extra);
        with(&pairs)
    };

    // Act / Assert: refused without a password, and with a short one; served with one.
    let e = public(&[]).unwrap_err();
    assert_eq!(e.variable, "LOANHOST_DEV_IDP");
    assert!(e.message.contains("LOANHOST_DEV_IDP_PASSWORD"), "{e}");
    assert_eq!(
        public(&[("LOANHOST_DEV_IDP_PASSWORD", "short")])
            .unwrap_err()
            .to_string(),
        "LOANHOST_DEV_IDP_PASSWORD: a sign-in password must have at least 12 characters"
    );
    for base in [
        "http://demo.example.com",
        "http://tunnel.example.com:8080",
        "http://10.0.0.5:8080",
        "http://[2001:db8::1]:8080",
    ] {
        let plain = with(&[("LOANHOST_DEV_IDP", "true"), ("LOANHOST_BASE_URL", base)]);
        let e = plain.unwrap_err();
        assert!(
            e.message.contains("LOANHOST_DEV_IDP_PASSWORD"),
            "{base}: {e}"
        );
    }
    for base in [
        "http://127.0.0.1:8080",
        "http://localhost:8080",
        "http://[::1]:8080",
    ] {
        let local = with(&[("LOANHOST_DEV_IDP", "true"), ("LOANHOST_BASE_URL", base)]);
        assert!(local.unwrap().dev_idp, "{base}");
    }
    let c = public(&[("LOANHOST_DEV_IDP_PASSWORD", "correct horse battery")]).unwrap();
    assert!(c.dev_idp);
    let password = c.dev_idp_password.expect("kept");
    assert!(password.matches("correct horse battery") && !password.matches("correct horse"));
    assert_eq!(format!("{password:?}"), "Password(..)");
}

#[test]
fn entra_is_a_profile_for_one_tenants_issuer() {
    let tenant = "https://login.microsoftonline.com/7d3c1a9e-0b4f-4c2d-8e6a-5f9b1c2d3e4f/v2.0";
    let ok = with(&[
        ("LOANHOST_IDP_PROFILE", "entra"),
        ("LOANHOST_IDP_ISSUER", tenant),
    ])
    .unwrap();
    assert_eq!(ok.idp.profile, IdpProfile::Entra);
    for multi in ["common", "Organizations", "consumers"] {
        let issuer = format!("https://login.microsoftonline.com/{multi}/v2.0");
        let e = with(&[
            ("LOANHOST_IDP_PROFILE", "entra"),
            ("LOANHOST_IDP_ISSUER", &issuer),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with(&format!(
                "LOANHOST_IDP_ISSUER: `{issuer}` is Entra ID's multi-tenant authority"
            )),
            "{e}"
        );
    }
    let e = with(&[
        ("LOANHOST_IDP_PROFILE", "entra"),
        (
            "LOANHOST_IDP_ISSUER",
            "https://login.microsoftonline.com/{tenantid}/v2.0",
        ),
    ])
    .unwrap_err()
    .to_string();
    assert!(e.contains("holds a placeholder"), "{e}");
    // The same issuer under another profile is the operator's to choose.
    let oidc = with(&[
        ("LOANHOST_IDP_PROFILE", "oidc"),
        (
            "LOANHOST_IDP_ISSUER",
            "https://login.microsoftonline.com/common/v2.0",
        ),
    ]);
    assert!(oidc.is_ok());
    assert_eq!(
        with(&[("LOANHOST_IDP_PROFILE", "ping")])
            .unwrap_err()
            .to_string(),
        "LOANHOST_IDP_PROFILE: `ping` is none of auth0 (the default), oidc, entra and okta"
    );
}

#[test]
fn okta_is_a_profile_for_a_custom_authorization_servers_issuer() {
    for issuer in [
        "https://acme.okta.com/oauth2/default",
        "https://id.acme.com/oauth2/aus1a2b3c4d5e6f7g8h9/",
    ] {
        let ok = with(&[
            ("LOANHOST_IDP_PROFILE", "okta"),
            ("LOANHOST_IDP_ISSUER", issuer),
        ])
        .unwrap();
        assert_eq!(ok.idp.profile, IdpProfile::Okta);
    }
    for not_one in [
        "https://acme.okta.com",
        "https://acme.okta.com/",
        "https://acme.okta.com/oauth2",
        "https://acme.okta.com/oauth2/{authServerId}",
        "https://acme.okta.com/oauth2/default/v1",
        "not a url",
    ] {
        let e = with(&[
            ("LOANHOST_IDP_PROFILE", "okta"),
            ("LOANHOST_IDP_ISSUER", not_one),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with(&format!(
                "LOANHOST_IDP_ISSUER: `{not_one}` is not an Okta custom authorization server's"
            )),
            "{e}"
        );
    }
}
