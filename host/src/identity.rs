//! The caller's identity after token validation and agent resolution: platform user id,
//! role codes and the claims the spec names. Plugins see only the user id and roles. A leaf
//! module: it imports nothing of ours, so every layer (`auth`, `data`, `plugins`, `mcp`) can
//! use it without pointing up.

use std::fmt;

/// A platform role code. Parsing once here means the rest of the host never compares
/// role strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RoleCode {
    /// All loans.
    Admin,
    /// Loans of the caller's company (for aggregate and reporting tools).
    Processor,
    /// Loans of managed agents.
    ConciergeKey,
    /// Loans the caller originates, assists or referred.
    Agent,
    /// As `Agent`.
    DualLicensedAgent,
    /// Held with `Agent`: referred loans only.
    PreLicensed,
    /// The company-bounded loan path.
    CompanyAdmin,
    /// The baseline role every resolved agent gets.
    User,
}

impl RoleCode {
    /// Every role code, in a stable order.
    pub const ALL: [RoleCode; 8] = [
        RoleCode::Admin,
        RoleCode::Processor,
        RoleCode::ConciergeKey,
        RoleCode::Agent,
        RoleCode::DualLicensedAgent,
        RoleCode::PreLicensed,
        RoleCode::CompanyAdmin,
        RoleCode::User,
    ];

    /// The code as the platform writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            RoleCode::Admin => "Admin",
            RoleCode::Processor => "Processor",
            RoleCode::ConciergeKey => "ConciergeKey",
            RoleCode::Agent => "Agent",
            RoleCode::DualLicensedAgent => "DualLicensedAgent",
            RoleCode::PreLicensed => "PreLicensed",
            RoleCode::CompanyAdmin => "CompanyAdmin",
            RoleCode::User => "User",
        }
    }

    /// Parses an exact role code.
    pub fn parse(s: &str) -> Option<RoleCode> {
        RoleCode::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

impl fmt::Display for RoleCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The roles that may read officer, processor and referrer names.
pub const NAME_READER_ROLES: [RoleCode; 3] =
    [RoleCode::Admin, RoleCode::Processor, RoleCode::ConciergeKey];

/// The roles that may read the names of the borrowers on their loans (unless they also hold
/// `PreLicensed`).
pub const BORROWER_READER_ROLES: [RoleCode; 5] = [
    RoleCode::Admin,
    RoleCode::Processor,
    RoleCode::ConciergeKey,
    RoleCode::Agent,
    RoleCode::DualLicensedAgent,
];

/// A resolved caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The platform user id (the `{claims_namespace}/user_id` claim).
    pub user_id: String,
    /// Role codes from the platform, plus the baseline `User`; sorted, no duplicates.
    pub roles: Vec<RoleCode>,
    /// What caller scope needs besides the roles (company, managed agents), when it was
    /// resolved with the identity on this request (the agent directory); `None`: scope reads
    /// them from the database.
    pub scope_facts: Option<std::sync::Arc<ScopeFacts>>,
}

/// What caller scope needs of an agent besides its roles.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScopeFacts {
    /// The agent's company (a Processor sees its loans).
    pub company_id: Option<String>,
    /// The agents a ConciergeKey manages, sorted.
    pub managed_agent_ids: Vec<String>,
}

impl Identity {
    /// An identity with the baseline `User` role added.
    pub fn new(user_id: impl Into<String>, roles: impl IntoIterator<Item = RoleCode>) -> Self {
        let mut roles: Vec<RoleCode> = roles.into_iter().chain([RoleCode::User]).collect();
        roles.sort();
        roles.dedup();
        Identity {
            user_id: user_id.into(),
            roles,
            scope_facts: None,
        }
    }

    /// The same identity with its scope facts resolved.
    pub fn with_scope_facts(mut self, facts: std::sync::Arc<ScopeFacts>) -> Self {
        self.scope_facts = Some(facts);
        self
    }

    /// Whether the caller holds `role`.
    pub fn has(&self, role: RoleCode) -> bool {
        self.roles.contains(&role)
    }

    /// Whether the caller holds any of the roles.
    pub fn has_any(&self, roles: &[RoleCode]) -> bool {
        roles.iter().any(|r| self.has(*r))
    }

    /// Whether the caller may read name fields.
    pub fn can_read_names(&self) -> bool {
        self.has_any(&NAME_READER_ROLES)
    }

    /// Whether the caller may read the names of the borrowers on the loans of their scope
    /// (in a list only, docs/design.md §5): the roles that work a loan (Admin, Processor,
    /// ConciergeKey, Agent, DualLicensedAgent), never a pre-licensed agent, who sees the loans
    /// they referred and is not licensed to originate.
    pub fn can_read_borrower_names(&self) -> bool {
        !self.has(RoleCode::PreLicensed) && self.has_any(&BORROWER_READER_ROLES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baseline_user_is_added_once() {
        let id = Identity::new("u", [RoleCode::Agent, RoleCode::User, RoleCode::Agent]);
        assert_eq!(id.roles, vec![RoleCode::Agent, RoleCode::User]);
    }

    #[test]
    fn name_readers() {
        assert!(Identity::new("u", [RoleCode::Processor]).can_read_names());
        assert!(!Identity::new("u", [RoleCode::Agent]).can_read_names());
        assert!(Identity::new("u", [RoleCode::Agent]).can_read_borrower_names());
        assert!(
            !Identity::new("u", [RoleCode::Agent, RoleCode::PreLicensed]).can_read_borrower_names()
        );
        assert!(!Identity::new("u", [RoleCode::User]).can_read_borrower_names());
    }

    #[test]
    fn role_codes_round_trip() {
        for r in RoleCode::ALL {
            assert_eq!(RoleCode::parse(r.as_str()), Some(r));
        }
        assert_eq!(RoleCode::parse("admin"), None);
    }
}
