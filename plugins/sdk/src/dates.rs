//! Calendar arithmetic for report windows, in UTC: `YYYY-MM-DD` dates, days since the epoch,
//! ISO weeks (Monday start), month steps, and RFC 3339 bounds for queries.

/// A calendar date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date {
    /// Year.
    pub year: i32,
    /// Month, 1-12.
    pub month: u32,
    /// Day, 1-31.
    pub day: u32,
}

impl Date {
    /// Parses `YYYY-MM-DD` (a real calendar date).
    pub fn parse(s: &str) -> Option<Date> {
        let b = s.as_bytes();
        if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
            return None;
        }
        let year: i32 = s[0..4].parse().ok()?;
        let month: u32 = s[5..7].parse().ok()?;
        let day: u32 = s[8..10].parse().ok()?;
        let d = Date { year, month, day };
        ((1..=12).contains(&month) && day >= 1 && day <= days_in_month(year, month)).then_some(d)
    }

    /// Days since 1970-01-01.
    pub fn days(self) -> i64 {
        let (y, m, d) = (
            self.year as i64 - if self.month <= 2 { 1 } else { 0 },
            self.month as i64,
            self.day as i64,
        );
        let era = if y >= 0 { y } else { y - 399 } / 400;
        let yoe = y - era * 400;
        let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        era * 146_097 + doe - 719_468
    }

    /// The date `days` days since 1970-01-01.
    pub fn from_days(days: i64) -> Date {
        let z = days + 719_468;
        let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let year = (yoe + era * 400 + if month <= 2 { 1 } else { 0 }) as i32;
        Date { year, month, day }
    }

    /// This date plus `n` days.
    pub fn plus_days(self, n: i64) -> Date {
        Date::from_days(self.days() + n)
    }

    /// Monday of this date's ISO week.
    pub fn week_start(self) -> Date {
        // 1970-01-01 was a Thursday: (days + 3) mod 7 is 0 on Mondays.
        let wd = (self.days() + 3).rem_euclid(7);
        self.plus_days(-wd)
    }

    /// The first day of this date's month.
    pub fn month_start(self) -> Date {
        Date { day: 1, ..self }
    }

    /// The first day of the month `n` months after this date's month (n may be negative).
    pub fn plus_months(self, n: i32) -> Date {
        let total = self.year * 12 + (self.month as i32 - 1) + n;
        Date {
            year: total.div_euclid(12),
            month: total.rem_euclid(12) as u32 + 1,
            day: 1,
        }
    }

    /// `YYYY-MM`.
    pub fn month_label(self) -> String {
        format!("{:04}-{:02}", self.year, self.month)
    }

    /// Midnight UTC as RFC 3339.
    pub fn midnight(self) -> String {
        format!("{self}T00:00:00Z")
    }
}

impl std::fmt::Display for Date {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }
}

fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

/// Today, as the host sees it.
pub fn today() -> Date {
    Date::parse(&crate::clock::today()).expect("the host sends YYYY-MM-DD")
}

/// The period bucket of the warehouse reports: `Month` (`YYYY-MM`, the default) or `Week`
/// (`YYYY-Wnn`, ISO week). Deserializes from exactly those names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
pub enum Bucket {
    /// `YYYY-MM`.
    #[default]
    Month,
    /// `YYYY-Wnn`.
    Week,
}

impl Bucket {
    /// The host's period unit for this bucket.
    pub fn unit(self) -> crate::data::PeriodUnit {
        match self {
            Bucket::Month => crate::data::PeriodUnit::Month,
            Bucket::Week => crate::data::PeriodUnit::Week,
        }
    }
}

/// Parses an optional `YYYY-MM-DD` argument, naming it in the error.
pub fn date_arg(name: &str, value: Option<&str>) -> Result<Option<Date>, crate::ToolError> {
    match value {
        None => Ok(None),
        Some(s) => Date::parse(s).map(Some).ok_or_else(|| {
            crate::ToolError::invalid_params(format!(
                "{name}: `{s}` is not a date like 2026-01-31 (YYYY-MM-DD)"
            ))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_weeks() {
        let d = Date::parse("2026-03-15").unwrap();
        assert_eq!(Date::from_days(d.days()), d);
        assert_eq!(Date::parse("1970-01-01").unwrap().days(), 0);
        assert_eq!(
            d.week_start().to_string(),
            "2026-03-09",
            "2026-03-15 is a Sunday"
        );
        assert_eq!(
            Date::parse("2026-03-09").unwrap().week_start().to_string(),
            "2026-03-09"
        );
        assert_eq!(d.plus_months(-3).to_string(), "2025-12-01");
        assert_eq!(d.plus_months(1).to_string(), "2026-04-01");
        assert_eq!(Date::parse("2026-02-29"), None);
        assert_eq!(
            Date::parse("2024-02-29").unwrap().plus_days(1).to_string(),
            "2024-03-01"
        );
    }
}
