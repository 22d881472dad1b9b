//! Indicative prices: the rate sheet's products that fit a loan scenario (schema v19), only for a
//! caller who holds a licence in the scenario's property state that has not expired (the spec's
//! per-user check: the caller's own licences, no Processor branch, no one else's). A scenario
//! names no borrower: a state, an amount, a value or LTV, a score and the product's terms.

use sqlx::Row as _;

use super::import::{CREDIT_SCORES, OCCUPANCIES};
use super::licensing::licenses_of;
use super::store::{number_placeholders, Db, DbError};
use super::values::{parse_decimal, DECIMAL_SCALE, LOAN_TYPES, PURPOSES, US_STATES};

/// Quotes an answer holds at most.
pub const MAX_QUOTES: i64 = 20;

/// A scenario as a plugin passes it (decimals as text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    /// The property's state code.
    pub property_state: String,
    /// The loan amount.
    pub loan_amount: String,
    /// The property's value (`ltv` or this).
    pub property_value: Option<String>,
    /// The loan-to-value ratio in percent (`property_value` or this).
    pub ltv: Option<String>,
    /// The credit score.
    pub credit_score: u32,
    /// The loan type.
    pub loan_type: String,
    /// The purpose.
    pub purpose: String,
    /// The occupancy.
    pub occupancy: String,
    /// The term in months.
    pub term_months: u32,
    /// The lock in days.
    pub lock_days: u32,
}

/// One product's price.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quote {
    /// The product's name.
    pub product: String,
    /// The note rate in percent, scaled by 10^4.
    pub rate: i64,
    /// Points, scaled by 10^4.
    pub points: i64,
    /// The sheet's effective date.
    pub effective_date: String,
}

/// The prices of a scenario, with the LTV they were looked up at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Priced {
    /// The LTV in percent, scaled by 10^4, rounded up to the hundredth.
    pub ltv: i64,
    /// The quotes, lowest rate first.
    pub quotes: Vec<Quote>,
}

/// Why no prices.
#[derive(Debug, thiserror::Error)]
pub enum PricingError {
    /// The scenario is malformed.
    #[error("{0}")]
    Invalid(String),
    /// The caller holds no current licence in the state.
    #[error("{0}")]
    NotLicensed(String),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbError),
}

/// The scenario's values, checked: (state, amount, LTV, score).
fn checked(s: &Scenario) -> Result<(String, i64, i64, i64), PricingError> {
    let bad = |m: String| Err(PricingError::Invalid(m));
    let state = s.property_state.trim().to_ascii_uppercase();
    if !US_STATES.iter().any(|(c, _)| *c == state) {
        return bad(format!(
            "propertyState: `{}` is not a two-letter state code (such as `CA` or `TX`)",
            s.property_state
        ));
    }
    let amount = parse_decimal(&s.loan_amount)
        .map_err(|e| PricingError::Invalid(format!("loanAmount: {e}")))?;
    if amount <= 0 {
        return bad("loanAmount: must be above 0".into());
    }
    let ltv = match (&s.ltv, &s.property_value) {
        (Some(ltv), None) => {
            parse_decimal(ltv).map_err(|e| PricingError::Invalid(format!("ltv: {e}")))?
        }
        (None, Some(value)) => {
            let value = parse_decimal(value)
                .map_err(|e| PricingError::Invalid(format!("propertyValue: {e}")))?;
            if value <= 0 {
                return bad("propertyValue: must be above 0".into());
            }
            // amount / value × 100, scaled by 10^4, rounded up.
            let scaled = i128::from(amount) * 100 * i128::from(DECIMAL_SCALE);
            ((scaled + i128::from(value) - 1) / i128::from(value)) as i64
        }
        _ => return bad("give one of ltv and propertyValue".into()),
    };
    if ltv <= 0 || ltv > 100 * DECIMAL_SCALE {
        return bad("ltv: must be above 0 and at most 100 (percent)".into());
    }
    // Bands are written to the hundredth: an LTV between two is priced in the higher one.
    let ltv = (ltv + 99) / 100 * 100;
    let score = i64::from(s.credit_score);
    if !CREDIT_SCORES.contains(&score) {
        return bad(format!(
            "creditScore: {score} is not from {} to {}",
            CREDIT_SCORES.start(),
            CREDIT_SCORES.end()
        ));
    }
    for (k, v, allowed) in [
        ("loanType", &s.loan_type, &LOAN_TYPES[..]),
        ("purpose", &s.purpose, &PURPOSES[..]),
        ("occupancy", &s.occupancy, &OCCUPANCIES[..]),
    ] {
        if !allowed.contains(&v.as_str()) {
            return bad(format!("{k}: `{v}` is not one of {}", allowed.join(", ")));
        }
    }
    if !(1..=600).contains(&s.term_months) {
        return bad(format!(
            "termMonths: {} is not from 1 to 600",
            s.term_months
        ));
    }
    if !(1..=365).contains(&s.lock_days) {
        return bad(format!("lockDays: {} is not from 1 to 365", s.lock_days));
    }
    Ok((state, amount, ltv, score))
}

/// The prices of `s` for the caller `me` in `year` (today's), or why not.
pub async fn quote(db: &Db, me: &str, year: i32, s: &Scenario) -> Result<Priced, PricingError> {
    let (state, amount, ltv, score) = checked(s)?;
    let licensed = licenses_of(db, me)
        .await?
        .iter()
        .any(|l| l.state == state && l.current_in(year));
    if !licensed {
        return Err(PricingError::NotLicensed(format!(
            "you hold no licence in {state} that has not expired; prices are given only for \
             properties in states where you are licensed (get_user_licenses lists yours)"
        )));
    }
    let sql = "SELECT product, rate, points, effective_date FROM rate_sheet \
               WHERE loan_type = ? AND (purpose IS NULL OR purpose = ?) AND occupancy = ? \
               AND term_months = ? AND lock_days = ? \
               AND min_credit_score <= ? AND max_credit_score >= ? \
               AND min_ltv <= ? AND max_ltv >= ? \
               AND min_loan_amount <= ? AND max_loan_amount >= ? \
               ORDER BY rate, points, product, line LIMIT ?";
    macro_rules! run {
        ($pool:expr, $sql:expr) => {
            sqlx::query($sql)
                .bind(&s.loan_type)
                .bind(&s.purpose)
                .bind(&s.occupancy)
                .bind(i64::from(s.term_months))
                .bind(i64::from(s.lock_days))
                .bind(score)
                .bind(score)
                .bind(ltv)
                .bind(ltv)
                .bind(amount)
                .bind(amount)
                .bind(MAX_QUOTES)
                .fetch_all($pool)
                .await
                .map_err(DbError::from)?
                .iter()
                .map(|r| Quote {
                    product: r.get(0),
                    rate: r.get(1),
                    points: r.get(2),
                    effective_date: r.get(3),
                })
                .collect::<Vec<_>>()
        };
    }
    let quotes = match db {
        Db::Sqlite(p) => run!(p, sql),
        Db::Postgres(p) => run!(p, &number_placeholders(sql)),
    };
    Ok(Priced { ltv, quotes })
}

#[cfg(test)]
mod tests;
