//! Window arithmetic: the UTC period boundaries of a bounded window (labels compared as
//! integers instead of formatted per row), and the bounds the predicates put on date-time
//! fields.

use super::columns::P;
use super::ir::{Condition, PeriodUnit, Query, Value};
use crate::data::catalog::FieldType;
use crate::data::values::parse_instant;

/// The periods of a window: where the first starts, and each one's end (exclusive) and label.
pub(super) struct Periods {
    pub(super) start: i64,
    pub(super) ends: Vec<(i64, String)>,
}

/// Most periods a window is labelled by comparisons; a longer one is formatted row by row.
pub(super) const MAX_WINDOW_PERIODS: usize = 64;

/// The periods from the one holding `lo` to the one holding `hi` (epoch ms), labelled as the
/// SQL formats label them (`2026-W05`, `2026-02`, `2026-Q1`, `2026`, UTC).
pub(super) fn periods_between(lo: i64, hi: i64, unit: PeriodUnit) -> Option<Periods> {
    use time::{Date, Duration, Month, OffsetDateTime, Time};
    let date_of = |ms: i64| {
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
            .ok()
            .map(|t| t.date())
    };
    let ms_of = |d: Date| {
        let t = d.with_time(Time::MIDNIGHT).assume_utc();
        i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
    };
    let first_of_month = |d: Date, month: u8| {
        Date::from_calendar_date(d.year(), Month::try_from(month).ok()?, 1).ok()
    };
    let start_of = |d: Date| -> Option<Date> {
        match unit {
            PeriodUnit::Week => d.checked_sub(Duration::days(i64::from(
                d.weekday().number_days_from_monday(),
            ))),
            PeriodUnit::Month => first_of_month(d, u8::from(d.month())),
            PeriodUnit::Quarter => first_of_month(d, (u8::from(d.month()) - 1) / 3 * 3 + 1),
            PeriodUnit::Year => first_of_month(d, 1),
        }
    };
    let next = |d: Date| -> Option<Date> {
        match unit {
            PeriodUnit::Week => d.checked_add(Duration::days(7)),
            PeriodUnit::Month | PeriodUnit::Quarter => {
                let step = if unit == PeriodUnit::Month { 1 } else { 3 };
                let m = u8::from(d.month()) + step;
                let (year, month) = if m > 12 {
                    (d.year() + 1, m - 12)
                } else {
                    (d.year(), m)
                };
                Date::from_calendar_date(year, Month::try_from(month).ok()?, 1).ok()
            }
            PeriodUnit::Year => Date::from_calendar_date(d.year() + 1, Month::January, 1).ok(),
        }
    };
    let label = |d: Date| match unit {
        PeriodUnit::Week => {
            let (year, week, _) = d.to_iso_week_date();
            format!("{year:04}-W{week:02}")
        }
        PeriodUnit::Month => format!("{:04}-{:02}", d.year(), u8::from(d.month())),
        PeriodUnit::Quarter => format!("{:04}-Q{}", d.year(), (u8::from(d.month()) - 1) / 3 + 1),
        PeriodUnit::Year => format!("{:04}", d.year()),
    };
    if lo > hi {
        return None;
    }
    let mut start = start_of(date_of(lo)?)?;
    let last = date_of(hi)?;
    if !(0..=9999).contains(&start.year()) || !(0..=9999).contains(&last.year()) {
        return None;
    }
    let first = ms_of(start)?;
    let mut ends = Vec::new();
    while start <= last {
        if ends.len() == MAX_WINDOW_PERIODS {
            return None;
        }
        let end = next(start)?;
        ends.push((ms_of(end)?, label(start)));
        start = end;
    }
    Some(Periods { start: first, ends })
}

/// Whether the query's predicates are all bounds (`>=`, `>`, `<=`, `<`) on `field`.
pub(super) fn bounds_only(q: &Query, field: &str) -> bool {
    q.predicates.iter().all(|(f, cond)| {
        f == field
            && matches!(
                cond,
                Condition::Ge(_) | Condition::Gt(_) | Condition::Le(_) | Condition::Lt(_)
            )
    })
}

/// The bounds a predicate puts on a date-time field (both ends inclusive, `None` for an open
/// end), when it compares the field with an instant (a timestamp, or text, as the compiler
/// binds both).
pub(super) fn instant_bound(condition: &Condition) -> Option<(Option<i64>, Option<i64>)> {
    let ms = |v: &Value| match v {
        Value::Timestamp(s) | Value::Text(s) => parse_instant(s),
        _ => None,
    };
    Some(match condition {
        Condition::Ge(v) => (Some(ms(v)?), None),
        Condition::Gt(v) => (Some(ms(v)?.saturating_add(1)), None),
        Condition::Le(v) => (None, Some(ms(v)?)),
        Condition::Lt(v) => (None, Some(ms(v)?.saturating_sub(1))),
        Condition::Eq(v) => (Some(ms(v)?), Some(ms(v)?)),
        _ => return None,
    })
}

/// The bounds the query's predicates put on each date-time field (both ends inclusive), for
/// fields bounded on both sides.
pub(super) fn instant_bounds(q: &Query) -> std::collections::HashMap<String, (i64, i64)> {
    let mut bounds: std::collections::HashMap<String, (i64, i64)> = Default::default();
    for (field, condition) in &q.predicates {
        let is_instant = q
            .dataset
            .field(field)
            .is_some_and(|f| f.ty == FieldType::Instant);
        let Some((lo, hi)) = instant_bound(condition).filter(|_| is_instant) else {
            continue;
        };
        let entry = bounds.entry(field.clone()).or_insert((i64::MIN, i64::MAX));
        if let Some(lo) = lo {
            entry.0 = entry.0.max(lo);
        }
        if let Some(hi) = hi {
            entry.1 = entry.1.min(hi);
        }
    }
    bounds.retain(|_, (lo, hi)| *lo != i64::MIN && *hi != i64::MAX);
    bounds
}

/// A predicate on a date-time field as the same condition on its month index, where one is
/// exactly the other: a null check, or `>=` / `<` the first instant of a month (a date is on
/// or after the first of month M exactly when its month index is M or more).
pub(super) fn month_condition(c: &Condition) -> Option<(&'static str, Option<i64>)> {
    use crate::data::history_keys::month_index;
    let month_start = |v: &Value| {
        let ms = match v {
            Value::Timestamp(s) | Value::Text(s) => parse_instant(s)?,
            _ => return None,
        };
        let m = month_index(ms);
        (month_index(ms.checked_sub(1)?) != m).then_some(m)
    };
    match c {
        Condition::IsNull => Some(("IS NULL", None)),
        Condition::IsNotNull => Some(("IS NOT NULL", None)),
        Condition::Ge(v) => Some((">=", Some(month_start(v)?))),
        Condition::Lt(v) => Some(("<", Some(month_start(v)?))),
        _ => None,
    }
}

/// A predicate on a date-time field as the same condition on its month index `column`, when
/// [`month_condition`] finds one, its bound pushed to `params`.
pub(super) fn month_predicate(column: &str, c: &Condition, params: &mut Vec<P>) -> Option<String> {
    let (op, bound) = month_condition(c)?;
    Some(match bound {
        None => format!("{column} {op}"),
        Some(m) => {
            params.push(P::I(m));
            format!("{column} {op} ?")
        }
    })
}
