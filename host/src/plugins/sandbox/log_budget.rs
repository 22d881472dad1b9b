//! The host-wide pace of plugin log lines (`LOANHOST_PLUGIN_LOG_LINES_PER_SECOND`), shared by
//! every call's `log` capability. Imports nothing of ours.

use std::sync::Mutex;
use std::time::Instant;

/// Plugin log lines per second for the whole host (a bucket of one second's worth): many
/// cheap calls that each log their 100 lines cannot flood the log.
#[derive(Debug)]
pub struct LogBudget {
    per_second: f64,
    state: Mutex<(f64, Instant, u64)>,
}

impl LogBudget {
    /// A budget of `per_second` lines.
    pub fn new(per_second: u32) -> LogBudget {
        LogBudget {
            per_second: per_second as f64,
            state: Mutex::new((per_second as f64, Instant::now(), 0)),
        }
    }

    /// Takes one line; `Err(dropped)` when the budget is spent (with the lines dropped so far).
    pub(crate) fn take(&self) -> Result<u64, u64> {
        let mut s = self.state.lock().expect("log budget lock");
        let now = Instant::now();
        let refill = now.saturating_duration_since(s.1).as_secs_f64() * self.per_second;
        s.0 = (s.0 + refill).min(self.per_second);
        s.1 = now;
        if s.0 >= 1.0 {
            s.0 -= 1.0;
            Ok(std::mem::take(&mut s.2))
        } else {
            s.2 += 1;
            Err(s.2)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_host_wide_budget_drops_and_counts() {
        let b = super::LogBudget::new(2);
        assert_eq!(b.take(), Ok(0));
        assert_eq!(b.take(), Ok(0));
        assert_eq!(b.take(), Err(1));
        assert_eq!(b.take(), Err(2));
    }
}
