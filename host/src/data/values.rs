//! Domain values as the data layer stores them: UUIDs (lower-case hyphenated), instants (UTC
//! epoch milliseconds), exact decimals (scaled by 10^4), and the platform's fixed vocabularies.

use time::format_description::well_known::Rfc3339;
use time::{Date, OffsetDateTime, PrimitiveDateTime, Time};

/// Decimal scale: stored value = decimal × 10^4.
pub const DECIMAL_SCALE: i64 = 10_000;
const DECIMAL_PLACES: usize = 4;

/// The platform's vocabulary: the guest SDK's `vocab.rs`, the one source that plugins' schemas
/// and the metadata tool are built from.
#[path = "../../../plugins/sdk/src/vocab.rs"]
mod vocab;
pub use vocab::{
    closest, DATE_FIELDS, GROUP_BY_DIMENSIONS, LOAN_STATUSES, LOAN_TYPES, METRIC_FIELDS,
    METRIC_FUNCTIONS, PURPOSES,
};

/// Parses a UUID into its lower-case hyphenated form.
pub fn parse_uuid(s: &str) -> Option<String> {
    uuid::Uuid::parse_str(s.trim())
        .ok()
        .map(|u| u.hyphenated().to_string())
}

/// Parses an ISO 8601 date-time into UTC epoch milliseconds. Accepted: RFC 3339 (`Z` or an
/// offset), a date-time without offset (taken as UTC), or a bare date (midnight UTC).
pub fn parse_instant(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Ok(t) = OffsetDateTime::parse(s, &Rfc3339) {
        return Some(millis(t));
    }
    let no_offset = time::macros::format_description!(
        version = 2,
        "[year]-[month]-[day]T[hour]:[minute]:[second][optional [.[subsecond]]]"
    );
    if let Ok(t) = PrimitiveDateTime::parse(s, &no_offset) {
        return Some(millis(t.assume_utc()));
    }
    let date = time::macros::format_description!("[year]-[month]-[day]");
    if let Ok(d) = Date::parse(s, &date) {
        return Some(millis(
            PrimitiveDateTime::new(d, Time::MIDNIGHT).assume_utc(),
        ));
    }
    None
}

fn millis(t: OffsetDateTime) -> i64 {
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

/// Formats epoch milliseconds as RFC 3339 UTC.
pub fn format_instant(ms: i64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}

/// Parses an exact decimal (at most 4 decimal places) into its scaled integer.
pub fn parse_decimal(s: &str) -> Result<i64, String> {
    let s = s.trim();
    let (negative, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (whole, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |p: &str| p.chars().all(|c| c.is_ascii_digit());
    if whole.is_empty()
        || !all_digits(whole)
        || !all_digits(frac)
        || (digits.contains('.') && frac.is_empty())
    {
        return Err(format!("`{s}` is not a decimal number"));
    }
    if frac.len() > DECIMAL_PLACES {
        return Err(format!(
            "`{s}` has more than {DECIMAL_PLACES} decimal places"
        ));
    }
    let whole: i64 = whole.parse().map_err(|_| format!("`{s}` is too large"))?;
    let mut frac_value: i64 = if frac.is_empty() {
        0
    } else {
        frac.parse()
            .map_err(|_| format!("`{s}` is not a decimal number"))?
    };
    for _ in frac.len()..DECIMAL_PLACES {
        frac_value *= 10;
    }
    let scaled = whole
        .checked_mul(DECIMAL_SCALE)
        .and_then(|w| w.checked_add(frac_value))
        .filter(|v| *v <= 1_000_000_000_000 * DECIMAL_SCALE)
        .ok_or_else(|| format!("`{s}` is too large"))?;
    Ok(if negative { -scaled } else { scaled })
}

/// Formats a scaled decimal as a plain decimal string without trailing zeros (the models'
/// [`loanhost_models::decimal_text`], which the guest SDK writes with too).
pub use loanhost_models::decimal_text as format_decimal;

/// The states, districts and territories of the United States with their two-letter codes.
pub const US_STATES: &[(&str, &str)] = &[
    ("AL", "Alabama"),
    ("AK", "Alaska"),
    ("AZ", "Arizona"),
    ("AR", "Arkansas"),
    ("CA", "California"),
    ("CO", "Colorado"),
    ("CT", "Connecticut"),
    ("DE", "Delaware"),
    ("DC", "District of Columbia"),
    ("FL", "Florida"),
    ("GA", "Georgia"),
    ("HI", "Hawaii"),
    ("ID", "Idaho"),
    ("IL", "Illinois"),
    ("IN", "Indiana"),
    ("IA", "Iowa"),
    ("KS", "Kansas"),
    ("KY", "Kentucky"),
    ("LA", "Louisiana"),
    ("ME", "Maine"),
    ("MD", "Maryland"),
    ("MA", "Massachusetts"),
    ("MI", "Michigan"),
    ("MN", "Minnesota"),
    ("MS", "Mississippi"),
    ("MO", "Missouri"),
    ("MT", "Montana"),
    ("NE", "Nebraska"),
    ("NV", "Nevada"),
    ("NH", "New Hampshire"),
    ("NJ", "New Jersey"),
    ("NM", "New Mexico"),
    ("NY", "New York"),
    ("NC", "North Carolina"),
    ("ND", "North Dakota"),
    ("OH", "Ohio"),
    ("OK", "Oklahoma"),
    ("OR", "Oregon"),
    ("PA", "Pennsylvania"),
    ("RI", "Rhode Island"),
    ("SC", "South Carolina"),
    ("SD", "South Dakota"),
    ("TN", "Tennessee"),
    ("TX", "Texas"),
    ("UT", "Utah"),
    ("VT", "Vermont"),
    ("VA", "Virginia"),
    ("WA", "Washington"),
    ("WV", "West Virginia"),
    ("WI", "Wisconsin"),
    ("WY", "Wyoming"),
    ("PR", "Puerto Rico"),
    ("GU", "Guam"),
    ("VI", "U.S. Virgin Islands"),
    ("AS", "American Samoa"),
    ("MP", "Northern Mariana Islands"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_exact() {
        assert_eq!(parse_decimal("350000.25"), Ok(3_500_002_500));
        assert_eq!(parse_decimal("-1.5"), Ok(-15_000));
        assert_eq!(parse_decimal("7"), Ok(70_000));
        assert!(parse_decimal("1.23456")
            .unwrap_err()
            .contains("more than 4 decimal places"));
        assert!(parse_decimal("1e5").is_err());
        assert!(parse_decimal("1.").is_err());
        assert!(parse_decimal("").is_err());
        assert_eq!(format_decimal(3_500_002_500), "350000.25");
        assert_eq!(format_decimal(-15_000), "-1.5");
        assert_eq!(format_decimal(70_000), "7");
        // Every place of the fraction, zero, the sign of a fraction alone, past 64 bits.
        assert_eq!(format_decimal(0), "0");
        assert_eq!(format_decimal(1), "0.0001");
        assert_eq!(format_decimal(-10), "-0.001");
        assert_eq!(format_decimal(12_345), "1.2345");
        assert_eq!(format_decimal(1_002_300), "100.23");
        assert_eq!(
            format_decimal(i128::from(i64::MAX) * 3 + 5),
            "2767011611056432.7426"
        );
        assert_eq!(format_decimal(i128::MIN + 1).len(), 41);
        // Every value round-trips through the parser it answers.
        for n in [-99_999_i128, -1, 7, 10_001, 123_456_789] {
            assert_eq!(parse_decimal(&format_decimal(n)).map(i128::from), Ok(n));
        }
    }

    #[test]
    fn instants() {
        assert_eq!(parse_instant("1970-01-01T00:00:01Z"), Some(1000));
        assert_eq!(parse_instant("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(parse_instant("1970-01-01T00:00:00.250"), Some(250));
        assert_eq!(parse_instant("1970-01-02"), Some(86_400_000));
        assert_eq!(parse_instant("yesterday"), None);
        assert_eq!(format_instant(1000), "1970-01-01T00:00:01Z");
    }

    #[test]
    fn uuids_are_normalized() {
        assert_eq!(
            parse_uuid("6F1C2D3E-0000-4000-8000-00000000000A").as_deref(),
            Some("6f1c2d3e-0000-4000-8000-00000000000a")
        );
        assert_eq!(parse_uuid("nope"), None);
    }
}
