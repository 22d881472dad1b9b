//! "Today" as the host sees it: the UTC date, or a fixed date (`LOANHOST_TODAY`) for tests
//! and demos.

use time::{Date, OffsetDateTime};

/// The source of today's date.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Clock {
    fixed: Option<Date>,
}

impl Clock {
    /// The real UTC date.
    pub fn system() -> Clock {
        Clock { fixed: None }
    }

    /// Always the given date.
    pub fn fixed(date: Date) -> Clock {
        Clock { fixed: Some(date) }
    }

    /// Today's date in UTC.
    pub fn today(&self) -> Date {
        self.fixed
            .unwrap_or_else(|| OffsetDateTime::now_utc().date())
    }

    /// Today as `YYYY-MM-DD`.
    pub fn today_iso(&self) -> String {
        let d = self.today();
        format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
    }
}
