//! Exact decimals for report results: values arrive from the host as decimal strings, are
//! summed and averaged as scaled integers, and leave as exact JSON numbers.

use serde_json::Value;

/// A decimal scaled by 10^4 (the host's storage scale).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Decimal(i128);

const SCALE: i128 = 10_000;

impl Decimal {
    /// Parses a plain decimal string (at most 4 decimal places), as the host sends them.
    pub fn parse(s: &str) -> Option<Decimal> {
        let (neg, digits) = match s.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, s),
        };
        let (w, f) = digits.split_once('.').unwrap_or((digits, ""));
        if w.is_empty()
            || f.len() > 4
            || !w.bytes().all(|b| b.is_ascii_digit())
            || !f.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let mut frac: i128 = if f.is_empty() { 0 } else { f.parse().ok()? };
        for _ in f.len()..4 {
            frac *= 10;
        }
        let v = w.parse::<i128>().ok()? * SCALE + frac;
        Some(Decimal(if neg { -v } else { v }))
    }

    /// Zero.
    pub const ZERO: Decimal = Decimal(0);

    /// `self / n` rounded to 2 decimal places, half away from zero.
    pub fn average(self, n: u64) -> Decimal {
        let den = n as i128 * 100; // scaled units per cent
        let num = self.0.abs();
        let mut cents = num / den;
        if 2 * (num % den) >= den {
            cents += 1;
        }
        Decimal(if self.0 < 0 {
            -cents * 100
        } else {
            cents * 100
        })
    }

    /// The plain decimal text, without trailing zeros.
    pub fn to_text(self) -> String {
        let abs = self.0.unsigned_abs();
        let (w, f) = (abs / SCALE as u128, abs % SCALE as u128);
        let mut s = if self.0 < 0 {
            format!("-{w}")
        } else {
            w.to_string()
        };
        if f != 0 {
            s.push('.');
            s.push_str(format!("{f:04}").trim_end_matches('0'));
        }
        s
    }

    /// An exact JSON number.
    pub fn to_json(self) -> Value {
        serde_json::from_str(&self.to_text()).expect("a decimal literal is a JSON number")
    }
}

impl From<Decimal> for loanhost_models::Decimal {
    /// The same exact value, as the models write money.
    fn from(d: Decimal) -> Self {
        loanhost_models::Decimal::parse(&d.to_text()).expect("a decimal literal is a JSON number")
    }
}

impl std::ops::Add for Decimal {
    type Output = Decimal;

    /// The exact sum.
    fn add(self, other: Decimal) -> Decimal {
        Decimal(self.0 + other.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_add_average() {
        let a = Decimal::parse("100.005").unwrap();
        let b = Decimal::parse("0.0050").unwrap();
        assert_eq!((a + b).to_text(), "100.01");
        assert_eq!(Decimal::parse("10").unwrap().average(3).to_text(), "3.33");
        assert_eq!(
            Decimal::parse("0.05").unwrap().average(2).to_text(),
            "0.03",
            "half away from zero"
        );
        assert_eq!(
            Decimal::parse("-0.05").unwrap().average(2).to_text(),
            "-0.03"
        );
        assert_eq!(Decimal::parse("1.23456"), None);
        assert_eq!(
            Decimal::parse("350000.25").unwrap().to_json().to_string(),
            "350000.25"
        );
    }
}
