//! The penalty box: a bearer token whose caller was just refused for their budget (`429`) is
//! refused again, until its `Retry-After` passes, before anything else is done for it (no
//! token validation, no agent lookup, no body read). A flood of refused requests then costs
//! a hash and a map lookup each, not a request's work.

use std::time::{Duration, Instant};

use crate::expiring::ExpiringMap;

/// Tokens remembered at most (expired entries go first, then all).
const MAX_ENTRIES: usize = 10_000;
/// How long a token refused as not valid is remembered.
pub const REFUSED_FOR: Duration = Duration::from_secs(60);

/// Recently refused tokens, by [`crate::auth::token_key`]: over their caller's budget (`429`), or not
/// valid at all (`401`, when presented again).
#[derive(Debug)]
pub struct PenaltyBox {
    held: ExpiringMap<[u8; 32], ()>,
    refused: ExpiringMap<[u8; 32], ()>,
}

impl Default for PenaltyBox {
    fn default() -> Self {
        PenaltyBox {
            held: ExpiringMap::new(MAX_ENTRIES),
            refused: ExpiringMap::new(MAX_ENTRIES),
        }
    }
}

impl PenaltyBox {
    /// Seconds (at least 1) until `key` may be served again, if it is in the box.
    pub fn remaining(&self, key: &[u8; 32]) -> Option<u64> {
        let (_, until) = self.held.get(key)?;
        let left = until.checked_duration_since(Instant::now())?;
        Some(left.as_secs_f64().ceil().max(1.0) as u64)
    }

    /// Refuses `key` for `secs` seconds.
    pub fn hold(&self, key: [u8; 32], secs: u64) {
        self.held.insert(key, (), Duration::from_secs(secs));
    }

    /// Remembers that `key` was refused as not valid, for [`REFUSED_FOR`].
    pub fn mark_refused(&self, key: [u8; 32]) {
        self.refused.insert(key, (), REFUSED_FOR);
    }

    /// Whether `key` was refused as not valid recently (a client presenting it again).
    pub fn refused_recently(&self, key: &[u8; 32]) -> bool {
        self.refused.get(key).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::token_key;

    #[test]
    fn a_held_token_is_refused_until_its_time_passes() {
        let b = PenaltyBox::default();
        let k = token_key("t");
        assert_eq!(b.remaining(&k), None);
        b.hold(k, 2);
        assert_eq!(b.remaining(&k), Some(2));
        assert_eq!(b.remaining(&token_key("other")), None);
        b.hold(k, 0);
        assert_eq!(b.remaining(&k), None);
    }

    #[test]
    fn a_refused_token_is_known_the_second_time() {
        let b = PenaltyBox::default();
        assert!(!b.refused_recently(&token_key("bad")));
        b.mark_refused(token_key("bad"));
        assert!(b.refused_recently(&token_key("bad")));
        assert!(!b.refused_recently(&token_key("other")));
    }
}
