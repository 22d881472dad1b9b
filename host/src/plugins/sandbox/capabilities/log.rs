//! `loan:reporting/log`: plugin log lines, tagged with the plugin and call, escaped (a
//! plugin cannot forge a line of its own), capped per call and paced host-wide.

use crate::plugins::sandbox::bindings::log::{Host, Level};
use crate::plugins::sandbox::state::{LimitHit, PluginState};

/// Lines one call may write; later lines are dropped (one warning says so).
pub const MAX_LINES_PER_CALL: u32 = 100;
/// Longest line kept, in bytes; longer lines are cut.
pub const MAX_LINE_BYTES: usize = 2048;
/// A call that writes more lines than this is stopped (a trap).
pub const TRAP_AFTER_LINES: u32 = 10 * MAX_LINES_PER_CALL;

impl Host for PluginState {
    async fn write(&mut self, level: Level, message: String) -> wasmtime::Result<()> {
        if self.profile.is_some() {
            if let Some(stage) = message.strip_prefix(crate::plugins::sandbox::profile::MARK_PREFIX)
            {
                self.mark(stage);
                return Ok(());
            }
        }
        self.log_lines += 1;
        if self.log_lines > TRAP_AFTER_LINES {
            // Each line crosses the boundary as a copy: a guest that keeps writing after its
            // lines are dropped is burning the host's CPU, so it is stopped.
            return Err(wasmtime::Error::new(LimitHit {
                timeout: false,
                message: format!(
                    "wrote more than {TRAP_AFTER_LINES} log lines (only the first {MAX_LINES_PER_CALL} are kept)"
                ),
            }));
        }
        let plugin = self.manifest.name.as_str();
        let call_id = self.call.as_ref().map(|c| c.call_id).unwrap_or(0);
        if self.log_lines > MAX_LINES_PER_CALL {
            if self.log_lines == MAX_LINES_PER_CALL + 1 {
                tracing::warn!(
                    plugin,
                    call_id,
                    "plugin log budget of {MAX_LINES_PER_CALL} lines spent; dropping further lines"
                );
            }
            return Ok(());
        }
        match self.log_budget.take() {
            Ok(0) => {}
            Ok(dropped) => tracing::warn!(
                dropped,
                "plugin log lines were dropped: the host-wide budget was spent"
            ),
            Err(_) => return Ok(()),
        }
        // Escaped: a newline or a control sequence in the text cannot start a forged line.
        let message = truncate(&message, MAX_LINE_BYTES).escape_debug();
        match level {
            Level::Debug => {
                tracing::debug!(target: "loanhost::plugin", plugin, call_id, "{message}")
            }
            Level::Info => tracing::info!(target: "loanhost::plugin", plugin, call_id, "{message}"),
            Level::Warn => tracing::warn!(target: "loanhost::plugin", plugin, call_id, "{message}"),
            Level::Error => {
                tracing::error!(target: "loanhost::plugin", plugin, call_id, "{message}")
            }
        }
        Ok(())
    }
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(super::truncate("héllo", 2), "h");
        assert_eq!(super::truncate("hello", 10), "hello");
    }
}
