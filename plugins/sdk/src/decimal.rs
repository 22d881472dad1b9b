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
        // Whole and fraction as one integer of scaled units. Up to 19 digits fit a u64, the
        // guest's native width (wasm32 has no 128-bit arithmetic: each i128 multiply is a
        // library call); longer ones take the 128-bit path, `None` past it.
        let mut digits = w.bytes().chain(f.bytes()).map(|b| b - b'0');
        let places = 4 - f.len() as u32;
        let v: i128 = if w.len() + 4 <= 19 {
            let units = digits.fold(0u64, |n, d| n * 10 + u64::from(d));
            i128::from(units * 10u64.pow(places))
        } else {
            let units =
                digits.try_fold(0i128, |n, d| n.checked_mul(10)?.checked_add(i128::from(d)))?;
            units.checked_mul(10i128.pow(places))?
        };
        Some(Decimal(if neg { -v } else { v }))
    }

    /// Zero.
    pub const ZERO: Decimal = Decimal(0);

    /// `self / n` rounded to 2 decimal places, half away from zero.
    pub fn average(self, n: u64) -> Decimal {
        let den = n as i128 * 100; // scaled units per cent
        let num = self.0.abs();
        // In 64 bits when both fit (a sum of amounts does), as `parse` does.
        let cents = match (u64::try_from(num), u64::try_from(den)) {
            (Ok(num), Ok(den)) if num <= u64::MAX / 2 => {
                i128::from(num / den + u64::from(2 * (num % den) >= den))
            }
            _ => num / den + i128::from(2 * (num % den) >= den),
        };
        Decimal(if self.0 < 0 {
            -cents * 100
        } else {
            cents * 100
        })
    }

    /// The plain decimal text, without trailing zeros, written as the host writes its
    /// decimals ([`loanhost_models::decimal_text`]).
    pub fn to_text(self) -> String {
        loanhost_models::decimal_text(self.0)
    }

    /// An exact JSON number.
    pub fn to_json(self) -> Value {
        serde_json::from_str(&self.to_text()).expect("a decimal literal is a JSON number")
    }
}

impl From<Decimal> for loanhost_models::Decimal {
    /// The same exact value, as the models write money.
    fn from(d: Decimal) -> Self {
        // A whole number of at least zero is built as one (no text to parse back); anything
        // else through its text.
        if let Ok(units) = u64::try_from(d.0) {
            if units % SCALE as u64 == 0 {
                return (units / SCALE as u64).into();
            }
        }
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

    #[test]
    fn the_64_bit_paths_agree_with_the_128_bit_ones_at_their_edges() {
        // 15 whole digits + 4 places = 19 digits (a u64); 16 + 4 take the 128-bit path.
        for text in [
            "999999999999999.9999",
            "-999999999999999.9999",
            "1000000000000000",
            "9999999999999999.0001",
            "123456789012345678901234567.5",
            "0.0001",
            "-0",
            "007.50",
        ] {
            let d = Decimal::parse(text).unwrap();
            let (neg, digits) = text.strip_prefix('-').map_or((false, text), |r| (true, r));
            let (w, f) = digits.split_once('.').unwrap_or((digits, ""));
            let units =
                w.parse::<i128>().unwrap() * SCALE + format!("{f:0<4}").parse::<i128>().unwrap();
            assert_eq!(d, Decimal(if neg { -units } else { units }), "{text}");
            assert_eq!(Decimal::parse(&d.to_text()), Some(d), "{text} reads back");
        }
        assert_eq!(Decimal::parse("007.50").unwrap().to_text(), "7.5");
        assert_eq!(
            Decimal(i128::from(u64::MAX) + 1).to_text(),
            "1844674407370955.1616"
        );
        assert_eq!(
            Decimal(-(i128::from(u64::MAX) + 1)).to_text(),
            "-1844674407370955.1616"
        );
        assert_eq!(
            Decimal::parse("99999999999999999999999999999999999999"),
            None,
            "beyond 128 bits once scaled"
        );
        // An average whose sum passes 64 bits, and its 64-bit twin.
        let in_128 = |units: i128, n: i128| {
            let (num, den) = (units.abs(), n * 100);
            units.signum() * (num / den + i128::from(2 * (num % den) >= den)) * 100
        };
        for units in [i128::from(u64::MAX) * 4 + 2, i128::from(u64::MAX) * 4 + 202] {
            assert_eq!(Decimal(units).average(4).0, in_128(units, 4), "{units}");
            assert_eq!(Decimal(-units).average(4).0, in_128(-units, 4), "-{units}");
        }
        // Exactly half a cent past 64 bits, and within them: rounded away from zero.
        let past = 400 * i128::from(u64::MAX / 100) + 200;
        assert_eq!(Decimal(past).average(4).0, (past / 400 + 1) * 100);
        assert_eq!(Decimal(-past).average(4).0, -(past / 400 + 1) * 100);
        assert_eq!(
            Decimal(600).average(4).0,
            200,
            "0.015 a loan rounds to 0.02"
        );
        let half = i128::from(u64::MAX / 2);
        assert_eq!(
            Decimal(half + 1).average(3).0,
            in_128(half + 1, 3),
            "past the guard"
        );
        assert_eq!(Decimal(half).average(3).0, in_128(half, 3), "at the guard");
        assert_eq!(Decimal(150).average(1).0, 200, "0.015 rounds up to 0.02");
        assert_eq!(Decimal(-150).average(1).0, -200);
        assert_eq!(Decimal(149).average(1).0, 100);
    }

    #[test]
    fn models_decimals_are_the_same_numbers() {
        for text in [
            "350000",
            "-12",
            "350000.25",
            "-0.0001",
            "0",
            "1844674407370955.1616",
        ] {
            let m: loanhost_models::Decimal = Decimal::parse(text).unwrap().into();
            assert_eq!(m.to_string(), text);
        }
        let huge = Decimal(i128::from(i64::MAX) * SCALE * 10);
        let m: loanhost_models::Decimal = huge.into();
        assert_eq!(m.to_string(), huge.to_text(), "a whole number past 64 bits");
    }
}
