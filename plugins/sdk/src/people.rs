//! The people on the loans of the caller's scope (`loan:reporting@1.2.0` `people`), for a
//! plugin whose manifest declares a listing grant for `people`: the generated types, the
//! refusals as tool errors, and the parts by the names tools give them.
//!
//! ```ignore
//! use loanhost_guest::people::{self, Part, PeopleQuery};
//! let found = people::search(&PeopleQuery {
//!     name_tokens: vec!["olivia".into()],
//!     parts: vec![Part::LoanOfficer],
//!     limit: 10,
//! })?;
//! // found.people: [{id, is_caller, parts, name}, …] (the caller first); found.total
//! ```

pub use crate::bindings::loan::reporting::people::*;

use crate::ToolError;

impl From<PeopleError> for ToolError {
    fn from(e: PeopleError) -> Self {
        match e {
            PeopleError::Denied(m) => ToolError::Forbidden(m),
            PeopleError::InvalidQuery(m) => ToolError::InvalidParams(m),
            PeopleError::Unavailable(m) => ToolError::Internal(m),
        }
    }
}

impl Part {
    /// Every part, in the order the host lists a person's.
    pub const ALL: [Part; 4] = [
        Part::LoanOfficer,
        Part::LoanAssistant,
        Part::Processor,
        Part::ReferringAgent,
    ];

    /// The part's name in a tool's arguments and results (`LoanOfficer`, `LoanAssistant`,
    /// `Processor`, `ReferringAgent`).
    pub const fn name(self) -> &'static str {
        match self {
            Part::LoanOfficer => "LoanOfficer",
            Part::LoanAssistant => "LoanAssistant",
            Part::Processor => "Processor",
            Part::ReferringAgent => "ReferringAgent",
        }
    }

    /// The part named `name` ([`Part::name`]).
    pub fn parse(name: &str) -> Option<Part> {
        Part::ALL.into_iter().find(|p| p.name() == name)
    }
}
