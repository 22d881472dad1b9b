//! The keys a LOS history row carries for the organisation-wide milestone report (schema v4,
//! `docs/decisions/0008-period-sets-and-the-hosts-fold.md`): the calendar month and ISO week of `occurred_at` as integers, and the
//! row's status as one bit of a frozen table. The import computes them here (migration 0005
//! computes the same in SQL for rows imported before), and the period sets
//! (`los_history_months`, `los_history_weeks`) hold, per (period, loan), the union of the bits.

/// The statuses with a bit of their own, in bit order. **Frozen**: the bits are stored in every
/// history row (migration 0005 writes the same table), so entries may be appended (up to 62),
/// never moved or removed. It is the spec's 45 loan statuses in the spec's order, then the raw
/// LOS milestone the funnel of docs/design.md §7.3 names that is not a loan status (`Rate Locked`).
pub const STATUS_BITS: [&str; 46] = [
    "App Started",
    "Loan Officer Review",
    "Loan Open",
    "Loan Prequal",
    "Loan Preapproval",
    "Loan Submitted",
    "Loan Approved",
    "Loan Docs",
    "Loan Funded",
    "Loan On Hold",
    "Loan Suspended",
    "Loan Canceled",
    "Loan Denied",
    "Loan Closed",
    "Loan Underwriting",
    "Loan Other",
    "Loan Recorded",
    "Loan Clear To Close",
    "Loan Processing",
    "Loan Final Underwriting",
    "Loan Docs Back",
    "Loan Funding Conditions",
    "Loan Final Docs",
    "Loan Sold",
    "Loan Pre-Processing",
    "Loan Document Check",
    "Loan Document Check Failed",
    "Loan Pre-Underwriting",
    "Loan Condition Review",
    "Loan Pre-Doc QC",
    "Loan Docs Ordered",
    "Loan Docs Drawn",
    "Loan Investor Conditions",
    "Loan Investor Conditions Sent",
    "Loan Ready For Sale",
    "Loan Submitted For Purchase Review",
    "Loan In Purchase Review",
    "Loan Pre-Purchase Conditions",
    "Loan Submitted For Final Purchase Review",
    "Loan In Final Purchase Review",
    "Loan Clear To Purchase",
    "Loan Purchased",
    "Loan Counter Offer",
    "Loan Withdrawn",
    "Loan Archived",
    "Rate Locked",
];

/// The bit every status outside [`STATUS_BITS`] shares (history statuses are free text).
pub const UNLISTED_BIT: i64 = 1 << 62;

/// The bit a history row with this status carries.
pub fn status_bit(status: &str) -> i64 {
    listed_bit(status).unwrap_or(UNLISTED_BIT)
}

/// The bit of a status of [`STATUS_BITS`]; `None` for any other text.
pub fn listed_bit(status: &str) -> Option<i64> {
    STATUS_BITS
        .iter()
        .position(|s| *s == status)
        .map(|i| 1_i64 << i)
}

const DAY_MS: i64 = 86_400_000;

/// Days since 1970-01-01 (UTC) of an instant in epoch milliseconds.
fn day(ms: i64) -> i64 {
    ms.div_euclid(DAY_MS)
}

/// The ISO week (Monday start, UTC) of an instant as a number: weeks since the one that starts
/// on Monday 1969-12-29. Consecutive weeks have consecutive numbers.
pub fn week_index(ms: i64) -> i64 {
    (day(ms) + 3).div_euclid(7)
}

/// The first instant (epoch ms, UTC) of week `index` of [`week_index`]: its Monday.
pub fn week_start(index: i64) -> i64 {
    (index * 7 - 3) * DAY_MS
}

/// The ISO 8601 label of week `index` of [`week_index`] (`2026-W09`), as PostgreSQL's
/// `IYYY-"W"IW` and SQLite's `%G-W%V` write it: the year and week of the week's Thursday
/// (week 1 holds a year's first Thursday).
pub fn week_label(index: i64) -> String {
    let thursday = index * 7;
    let year = month_index(thursday * DAY_MS).div_euclid(12);
    let week = (thursday - month_start(year * 12) / DAY_MS) / 7 + 1;
    format!("{year:04}-W{week:02}")
}

/// The first instant (epoch ms, UTC) of month `index` of [`month_index`].
pub fn month_start(index: i64) -> i64 {
    // Civil date to days (H. Hinnant's algorithm), the inverse of `month_index`'s.
    let (year, month) = (index.div_euclid(12), index.rem_euclid(12) + 1);
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe - 719_468) * DAY_MS
}

/// The calendar month (UTC) of an instant as a number: `year × 12 + month − 1`.
pub fn month_index(ms: i64) -> i64 {
    // Days to civil date (H. Hinnant's algorithm), exact for every i64 day in range.
    let z = day(ms) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    year * 12 + month - 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn ms(t: time::OffsetDateTime) -> i64 {
        (t.unix_timestamp_nanos() / 1_000_000) as i64
    }

    #[test]
    fn week_labels_are_iso_weeks() {
        // Every week of years 1-9999, against the calendar's own ISO week date.
        let first = week_index(ms(datetime!(0001-01-04 0:00 UTC)));
        let last = week_index(ms(datetime!(9999-12-27 0:00 UTC)));
        for index in first..=last {
            let monday = time::OffsetDateTime::from_unix_timestamp(week_start(index) / 1000)
                .unwrap()
                .date();
            let (y, w, _) = monday.to_iso_week_date();
            assert_eq!(week_label(index), format!("{y:04}-W{w:02}"), "week {index}");
        }
        assert_eq!(
            week_label(week_index(ms(datetime!(2026-12-31 0:00 UTC)))),
            "2026-W53"
        );
        assert_eq!(
            week_label(week_index(ms(datetime!(2027-01-03 0:00 UTC)))),
            "2026-W53"
        );
        assert_eq!(
            week_label(week_index(ms(datetime!(2027-01-04 0:00 UTC)))),
            "2027-W01"
        );
    }

    #[test]
    fn months_are_calendar_months_in_utc() {
        assert_eq!(month_index(0), 1970 * 12);
        assert_eq!(month_index(-1), 1969 * 12 + 11);
        assert_eq!(
            month_index(ms(datetime!(2026-08-01 0:00 UTC))),
            2026 * 12 + 7
        );
        assert_eq!(
            month_index(ms(datetime!(2026-07-31 23:59:59.999 UTC))),
            2026 * 12 + 6
        );
        assert_eq!(
            month_index(ms(datetime!(2024-02-29 12:00 UTC))),
            2024 * 12 + 1
        );
        assert_eq!(
            month_index(ms(datetime!(2000-03-01 0:00 UTC))),
            2000 * 12 + 2
        );
        assert_eq!(month_index(ms(datetime!(1900-01-01 0:00 UTC))), 1900 * 12);
        // Every day of four years, against the calendar.
        let mut t = datetime!(2023-01-01 0:00 UTC);
        while t < datetime!(2027-01-01 0:00 UTC) {
            let expected = i64::from(t.year()) * 12 + i64::from(u8::from(t.month())) - 1;
            assert_eq!(month_index(ms(t)), expected, "{t}");
            assert_eq!(month_index(ms(t) + DAY_MS - 1), expected, "{t}");
            t += time::Duration::days(1);
        }
    }

    #[test]
    fn weeks_start_on_monday_and_are_consecutive() {
        // 1969-12-29 was a Monday: week 0 runs to Sunday 1970-01-04.
        assert_eq!(week_index(ms(datetime!(1969-12-29 0:00 UTC))), 0);
        assert_eq!(week_index(ms(datetime!(1970-01-04 23:59:59.999 UTC))), 0);
        assert_eq!(week_index(ms(datetime!(1970-01-05 0:00 UTC))), 1);
        assert_eq!(week_index(ms(datetime!(1969-12-28 23:59 UTC))), -1);
        let mut t = datetime!(2020-12-28 0:00 UTC); // a Monday (ISO 2020-W53)
        let mut w = week_index(ms(t));
        while t < datetime!(2027-01-04 0:00 UTC) {
            for d in 0..7 {
                let at = t + time::Duration::days(d) + time::Duration::hours(23);
                assert_eq!(week_index(ms(at)), w, "{at}");
                assert_eq!(at.date().weekday(), t.date().weekday().nth_next(d as u8));
            }
            t += time::Duration::days(7);
            w += 1;
        }
    }

    #[test]
    fn every_listed_status_has_its_own_bit_and_others_share_one() {
        let mut seen = 0_i64;
        for s in crate::data::values::LOAN_STATUSES {
            let bit = listed_bit(s).expect("every loan status is listed");
            assert_eq!(bit.count_ones(), 1);
            assert_eq!(seen & bit, 0, "{s} shares a bit");
            seen |= bit;
        }
        assert_eq!(seen & UNLISTED_BIT, 0);
        assert_eq!(status_bit("Submitted to investor"), UNLISTED_BIT);
        assert!(STATUS_BITS.len() <= 62);
    }

    #[test]
    fn period_starts_invert_the_indexes() {
        // Every month of years 0-9999 and weeks around 1970 and far from it: the start is in
        // its period, the instant before it in the previous one.
        for index in (0..10_000 * 12).chain([-1, -12, -13]) {
            let start = month_start(index);
            assert_eq!(month_index(start), index, "month {index}");
            assert_eq!(month_index(start - 1), index - 1, "before month {index}");
        }
        for index in (-300..3_000).chain([-100_000, 500_000]) {
            let start = week_start(index);
            assert_eq!(week_index(start), index, "week {index}");
            assert_eq!(week_index(start - 1), index - 1, "before week {index}");
        }
        assert_eq!(month_start(2026 * 12 + 1), 1_769_904_000_000, "2026-02-01");
        assert_eq!(week_start(0), -3 * DAY_MS, "Monday 1969-12-29");
    }

    /// The migration computes the same bits for rows imported before it.
    #[test]
    fn the_migrations_give_the_same_bits() {
        for (engine, sql) in [
            (
                "sqlite",
                include_str!("../../migrations/sqlite/0005_history_periods.sql"),
            ),
            (
                "postgres",
                include_str!("../../migrations/postgres/0005_history_periods.sql"),
            ),
        ] {
            for s in STATUS_BITS {
                let when = format!("WHEN '{s}' THEN {}", status_bit(s));
                assert!(sql.contains(&when), "{engine}: no `{when}`");
            }
            assert!(
                sql.contains(&format!("ELSE {UNLISTED_BIT} END")),
                "{engine}"
            );
        }
    }
}
