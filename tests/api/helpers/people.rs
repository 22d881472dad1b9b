//! The callers of a test application: its users with their roles, and the dev IdP's key
//! that signs their tokens.

use std::sync::OnceLock;

use loanhost::data::NewAgent;
use loanhost::oauth::devidp::SigningKey;

/// The roles every reporting tool accepts.
pub const DEFAULT_ROLES: &[&str] = &[
    "Admin",
    "Processor",
    "DualLicensedAgent",
    "ConciergeKey",
    "Agent",
];

/// A test caller: the name tests use for its token, and the platform agent behind it.
pub struct User {
    pub token: &'static str,
    pub agent: NewAgent,
}

fn agent(id: &str, email: &str, roles: &[&str]) -> NewAgent {
    NewAgent {
        id: id.into(),
        email: email.into(),
        first_name: Some("Test".into()),
        last_name: Some(roles.join("")),
        company_id: Some("00000000-0000-0000-0000-00000000c0c0".into()),
        roles: roles.iter().map(|r| r.to_string()).collect(),
        managed_agent_ids: vec![],
        inactive: false,
    }
}

/// The callers every test app knows (as platform agents in its database).
pub fn users() -> Vec<User> {
    vec![
        User {
            token: "admin-token",
            agent: agent(
                "00000000-0000-0000-0000-0000000000a1",
                "admin@example.com",
                &["Admin"],
            ),
        },
        User {
            token: "agent-token",
            agent: agent(
                "00000000-0000-0000-0000-0000000000b2",
                "Agent@Example.com",
                &["Agent"],
            ),
        },
        User {
            token: "prelicensed-token",
            agent: agent(
                "00000000-0000-0000-0000-0000000000c3",
                "prelicensed@example.com",
                &["PreLicensed"],
            ),
        },
    ]
}

/// The dev IdP key of every test app (an RSA key generated once per run).
pub fn signing_pem() -> &'static str {
    static PEM: OnceLock<String> = OnceLock::new();
    PEM.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.pem");
        SigningKey::load_or_create(&path).unwrap();
        std::fs::read_to_string(path).unwrap()
    })
}
