//! Stage marks of a profiled call: where one call's time goes, for `make bench`'s `languages`
//! profile (docs/benchmarks.md). The host marks what it sees (the instance made, the `data`
//! capability entered and left, the export returned); a plugin built with its SDK's
//! profile switch (see `scripts/build-plugin.sh`) marks its own stages by writing
//! a log line that starts with [`MARK_PREFIX`], which a profiling host records instead of
//! logging. A host that does not profile (every server) treats such a line as any other.

use std::time::{Duration, Instant};

/// How a guest's stage mark starts (the rest of the line is the stage's name).
pub const MARK_PREFIX: &str = "loanhost-profile:";

/// Longest stage name kept; marks past [`MAX_MARKS`] are dropped.
const MAX_NAME: usize = 32;
/// Marks one call records at most.
const MAX_MARKS: usize = 64;

/// One stage mark: its name and when it was reached, from the call's start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    /// The stage reached (`instantiated`, `data-entered`, a guest's own name, `returned`).
    pub stage: String,
    /// Time since the call started.
    pub at: Duration,
}

/// The marks of one call in progress.
#[derive(Debug)]
pub struct CallProfile {
    started: Instant,
    marks: Vec<Mark>,
}

impl CallProfile {
    /// A profile whose clock started at `started`.
    pub fn new(started: Instant) -> CallProfile {
        CallProfile {
            started,
            marks: Vec::with_capacity(12),
        }
    }

    /// Records that `stage` was reached now.
    pub fn mark(&mut self, stage: &str) {
        if self.marks.len() < MAX_MARKS {
            let mut end = stage.len().min(MAX_NAME);
            while !stage.is_char_boundary(end) {
                end -= 1;
            }
            self.marks.push(Mark {
                stage: stage[..end].to_string(),
                at: self.started.elapsed(),
            });
        }
    }

    /// The marks recorded, in order.
    pub fn into_marks(self) -> Vec<Mark> {
        self.marks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_ordered_bounded_and_cut_at_a_char_boundary() {
        // Arrange
        let mut p = CallProfile::new(Instant::now());

        // Act
        for _ in 0..100 {
            p.mark("stage");
        }
        let mut q = CallProfile::new(Instant::now());
        q.mark(&"é".repeat(40));

        // Assert
        let marks = p.into_marks();
        assert_eq!(marks.len(), MAX_MARKS);
        assert!(marks.windows(2).all(|w| w[0].at <= w[1].at));
        assert_eq!(q.into_marks()[0].stage, "é".repeat(16));
    }
}
