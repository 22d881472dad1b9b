//! `loan:reporting/log`: plugin log lines, tagged with the plugin and call, capped per call.

use crate::plugins::bindings::log::{Host, Level};
use crate::plugins::state::PluginState;

/// Lines one call may write; later lines are dropped (one warning says so).
pub const MAX_LINES_PER_CALL: u32 = 100;
/// Longest line kept, in bytes; longer lines are cut.
pub const MAX_LINE_BYTES: usize = 2048;

impl Host for PluginState {
    async fn write(&mut self, level: Level, message: String) -> wasmtime::Result<()> {
        self.log_lines += 1;
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
        let message = truncate(&message, MAX_LINE_BYTES);
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
