//! The spec's string and number formats that have no ready-made Rust type here: `date-time`,
//! `date` and exact decimals. Each keeps its text exactly as received (so a document
//! round-trips unchanged) and refuses text that is not of its format.

use std::borrow::Cow;
use std::fmt;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use time::format_description::well_known::Rfc3339;

/// An ISO 8601 instant (`date-time`, RFC 3339 profile), kept as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DateTime(String);

impl DateTime {
    /// Checks `text` is an RFC 3339 date-time (`2026-03-01T10:00:00Z`, offsets and fractions
    /// allowed).
    pub fn parse(text: &str) -> Result<DateTime, String> {
        time::OffsetDateTime::parse(text, &Rfc3339)
            .map(|_| DateTime(text.to_string()))
            .map_err(|e| format!("`{text}` is not an ISO 8601 date-time: {e}"))
    }

    /// The instant, as `time` reads it.
    pub fn to_offset_date_time(&self) -> time::OffsetDateTime {
        time::OffsetDateTime::parse(&self.0, &Rfc3339).expect("checked when built")
    }

    /// The text as received.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An ISO 8601 calendar date (`date`, `YYYY-MM-DD`), kept as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Date(String);

impl Date {
    /// Checks `text` is a `YYYY-MM-DD` calendar date that exists.
    pub fn parse(text: &str) -> Result<Date, String> {
        const FORMAT: &[time::format_description::BorrowedFormatItem<'_>] =
            time::macros::format_description!("[year]-[month]-[day]");
        time::Date::parse(text, FORMAT)
            .map(|_| Date(text.to_string()))
            .map_err(|e| format!("`{text}` is not an ISO 8601 date (YYYY-MM-DD): {e}"))
    }

    /// The text as received.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An exact decimal (money): a JSON number written with as many digits as it has. Plugins
/// build it from the decimal text the host sends, so nothing passes through a binary float
/// (with `serde_json`'s `arbitrary_precision`, which the plugin workspace enables, the digits
/// are kept verbatim end to end).
#[derive(Debug, Clone, PartialEq)]
pub struct Decimal(serde_json::Number);

impl Decimal {
    /// Reads a plain decimal literal such as `350000.25` or `-3`.
    pub fn parse(text: &str) -> Result<Decimal, String> {
        // The number's own parser (a report writes a few per bucket; going through a `Value`
        // cost a whole JSON document's parse each).
        text.parse::<serde_json::Number>()
            .map(Decimal)
            .map_err(|_| format!("`{text}` is not a decimal number"))
    }

    /// The JSON number.
    pub fn as_number(&self) -> &serde_json::Number {
        &self.0
    }
}

impl From<u64> for Decimal {
    fn from(n: u64) -> Decimal {
        Decimal(n.into())
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Units of 10⁻⁴ in a whole: the decimals' scale.
const DECIMAL_SCALE: u64 = 10_000;

/// The plain decimal text (no exponent, no trailing zeros: `350000.25`, `-1.5`, `7`) of a
/// decimal held as whole units of 10⁻⁴, the scale the host stores and plugins add up in. The
/// host writes its decimal cells with it and the guest SDK its sums and averages, so a value
/// reads the same on both sides.
pub fn decimal_text(scaled: i128) -> String {
    use std::fmt::Write as _;
    let abs = scaled.unsigned_abs();
    let scale = DECIMAL_SCALE as u128;
    // Written piece by piece: through `format!` this cost a result row more than the rest
    // of its decoding (a report's amounts are most of its cells).
    let mut out = String::with_capacity(24);
    if scaled < 0 {
        out.push('-');
    }
    // 64-bit arithmetic when the value fits (every amount does); 128-bit division is slow.
    let frac = match u64::try_from(abs) {
        Ok(small) => {
            let scale = DECIMAL_SCALE;
            write!(out, "{}", small / scale).expect("writing to a String cannot fail");
            (small % scale) as u32
        }
        Err(_) => {
            write!(out, "{}", abs / scale).expect("writing to a String cannot fail");
            (abs % scale) as u32
        }
    };
    if frac != 0 {
        out.push('.');
        let mut digits = [b'0'; 4];
        let mut f = frac;
        for d in digits.iter_mut().rev() {
            *d = b'0' + (f % 10) as u8;
            f /= 10;
        }
        let len = 4 - digits.iter().rev().take_while(|d| **d == b'0').count();
        for d in &digits[..len] {
            out.push(char::from(*d));
        }
    }
    out
}

macro_rules! text_format {
    ($ty:ident, $format:literal) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = Cow::<str>::deserialize(d)?;
                $ty::parse(&text).map_err(de::Error::custom)
            }
        }

        impl JsonSchema for $ty {
            fn schema_name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($ty))
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({"type": "string", "format": $format})
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

text_format!(DateTime, "date-time");
text_format!(Date, "date");

impl Serialize for Decimal {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Decimal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde_json::Number::deserialize(d).map(Decimal)
    }
}

impl JsonSchema for Decimal {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("Decimal")
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "number", "description": "An exact decimal (USD for money)."})
    }
}

/// Serde helper for a field that may be absent but is never `null` (the spec does not mark it
/// nullable): the recursive `Borrower.coBorrower`, whose chain has to end somewhere.
pub(crate) mod absent_not_null {
    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        T::deserialize(d).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_keep_their_text_and_refuse_other_text() {
        for ok in ["2026-03-01T10:00:00Z", "2026-03-01T10:00:00.1234567+02:00"] {
            assert_eq!(DateTime::parse(ok).unwrap().as_str(), ok);
        }
        for bad in ["2026-03-01", "2026-02-30T00:00:00Z", "yesterday"] {
            assert!(DateTime::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Date::parse("2024-02-29").unwrap().to_string(), "2024-02-29");
        for bad in ["2026-02-29", "2026-3-1", "2026-03-01T00:00:00Z"] {
            assert!(Date::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Decimal::parse("350000.25").unwrap().to_string(),
            "350000.25"
        );
        assert!(Decimal::parse("\"1\"").is_err());
    }

    /// What `decimal_text` writes, by `core::fmt` and integer arithmetic alone.
    fn written_plainly(scaled: i128) -> String {
        let abs = scaled.unsigned_abs();
        let (whole, frac) = (abs / 10_000, abs % 10_000);
        let sign = if scaled < 0 { "-" } else { "" };
        let places = format!("{frac:04}");
        match places.trim_end_matches('0') {
            "" => format!("{sign}{whole}"),
            p => format!("{sign}{whole}.{p}"),
        }
    }

    #[test]
    fn decimal_text_writes_what_plain_formatting_writes() {
        // Every fraction, around every power of ten, both signs, the 64-bit and 128-bit edges.
        let mut values: Vec<i128> = (-20_000..=20_000).collect();
        for p in 0..39 {
            let t = 10_i128.pow(p);
            values.extend([t - 1, t, t + 1, t.saturating_mul(7).saturating_add(4_321)]);
        }
        values.extend([
            i128::from(i64::MAX),
            i128::from(i64::MIN),
            i128::from(u64::MAX),
            i128::from(u64::MAX) + 1,
            i128::from(u64::MAX) * 10_000 + 9_999,
            i128::MAX,
            i128::MIN,
            i128::MIN + 1,
        ]);
        // A fixed multiply-rotate walk over the rest of the range.
        let mut x: u128 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x = x.wrapping_mul(0x2545_f491_4f6c_dd1d).rotate_left(17) ^ 0x5851_f42d;
            values.push((x >> (x % 100)) as i128);
        }
        for v in values {
            for n in [v, v.wrapping_neg()] {
                assert_eq!(decimal_text(n), written_plainly(n), "{n}");
            }
        }
    }
}
