//! Users' state licences (`loan:reporting@1.2.0` `licensing`), for a plugin whose manifest
//! grants `user-licenses`: the generated types and the refusals as tool errors. The host applies
//! the per-user access check: `user_licenses(None)` is the caller's; another user's is `None`
//! unless the caller may read it (Admin; a ConciergeKey for the agents they manage), exactly as
//! for a user who does not exist.

pub use crate::bindings::loan::reporting::licensing::*;

use crate::ToolError;

impl From<LicensingError> for ToolError {
    fn from(e: LicensingError) -> Self {
        match e {
            LicensingError::Denied(m) => ToolError::Forbidden(m),
            LicensingError::InvalidQuery(m) => ToolError::InvalidParams(m),
            LicensingError::Unavailable(m) => ToolError::Internal(m),
        }
    }
}
