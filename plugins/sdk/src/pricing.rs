//! Indicative prices (`loan:reporting@1.2.0` `pricing`), for a plugin whose manifest grants
//! `rate-sheet`: the generated types and the refusals as tool errors. The host refuses a
//! scenario unless the caller holds a licence in its property state that has not expired
//! (`not-licensed`, given to the caller as `forbidden`).

pub use crate::bindings::loan::reporting::pricing::*;

use crate::ToolError;

impl From<PricingError> for ToolError {
    fn from(e: PricingError) -> Self {
        match e {
            PricingError::Denied(m) => ToolError::Forbidden(m),
            PricingError::NotLicensed(m) => ToolError::Forbidden(m),
            PricingError::InvalidQuery(m) => ToolError::InvalidParams(m),
            PricingError::Unavailable(m) => ToolError::Internal(m),
        }
    }
}
