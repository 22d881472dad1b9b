//! Instants and periods as the reports label them: ISO text, a period's label and start, epoch
//! milliseconds.

/// An instant (epoch ms) as RFC 3339 text, UTC.
pub fn iso(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

/// The label the spec's periods give an instant (UTC), computed here without the host.
pub fn label(ms: i64, unit: &str) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000).unwrap();
    let (y, m) = (t.year(), u8::from(t.month()));
    match unit {
        "week" => {
            let (y, w, _) = t.date().to_iso_week_date();
            format!("{y:04}-W{w:02}")
        }
        "quarter" => format!("{y:04}-Q{}", (m - 1) / 3 + 1),
        "year" => format!("{y:04}"),
        _ => format!("{y:04}-{m:02}"),
    }
}

/// The first instant (epoch ms, UTC) of the month, or the ISO week, that holds `ms`.
pub fn period_start(ms: i64, week: bool) -> i64 {
    let d = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap()
        .date();
    let d = if week {
        d - time::Duration::days(i64::from(d.weekday().number_days_from_monday()))
    } else {
        d.replace_day(1).unwrap()
    };
    (d.midnight().assume_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

pub fn epoch_ms(s: &str) -> i64 {
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).unwrap();
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}
