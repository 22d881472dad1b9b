//! The import's licences and rate sheet (schema v19): `user_licenses.jsonl` lines (a user's
//! licence per state; an import's lines for a user replace that user's licences whole) and
//! `pricing.jsonl` lines (the rate sheet's rows; an import with the file replaces the sheet
//! whole), each field checked with a message that names it.

use super::parse::{Fields, Record};
use super::tables::{Stale, V};
use super::tx::Tx;
use super::write::{last_per_id, upsert_tail};
use super::ImportError;
use crate::data::values::{LOAN_TYPES, PURPOSES, US_STATES};

/// Occupancies a rate sheet prices (and `search_pricing` takes).
pub const OCCUPANCIES: [&str; 3] = ["PrimaryResidence", "SecondHome", "Investment"];

/// Credit scores a rate sheet's bands may name, inclusive.
pub const CREDIT_SCORES: std::ops::RangeInclusive<i64> = 300..=850;

/// A `user_licenses.jsonl` line: `userId`, `state`, `stateLicenseNumber`, `expirationYear`.
pub(super) fn license(r: &Fields) -> Result<Record, String> {
    let user = r.uuid("userId")?;
    let state = state(r, "state")?;
    let number = r.opt_string("stateLicenseNumber")?;
    let year = match r.opt_string("expirationYear")? {
        Some(y) if y.len() == 4 && y.bytes().all(|b| b.is_ascii_digit()) => Some(y),
        Some(y) => return Err(format!("expirationYear: `{y}` is not a year (`YYYY`)")),
        None => None,
    };
    Ok(Record::Row(vec![
        V::T(Some(user)),
        V::T(Some(state)),
        V::T(number),
        V::T(year),
    ]))
}

/// A `pricing.jsonl` line: the band a product's price fits and the price.
pub(super) fn rate(r: &Fields) -> Result<Record, String> {
    let product = r.name("product")?;
    let loan_type = r
        .opt_enum("loanType", &LOAN_TYPES)?
        .ok_or("missing field `loanType`")?;
    let purpose = r.opt_enum("purpose", &PURPOSES)?;
    let occupancy = r
        .opt_enum("occupancy", &OCCUPANCIES)?
        .ok_or("missing field `occupancy`")?;
    let term = whole(r, "termMonths", 1..=600)?;
    let lock = whole(r, "lockDays", 1..=365)?;
    let (min_score, max_score) = (
        whole(r, "minCreditScore", CREDIT_SCORES)?,
        whole(r, "maxCreditScore", CREDIT_SCORES)?,
    );
    let percent = |k: &str| -> Result<i64, String> {
        let v = r.opt_decimal(k)?.ok_or(format!("missing field `{k}`"))?;
        match v {
            0..=1_000_000 => Ok(v),
            _ => Err(format!("{k}: must be between 0 and 100 (percent)")),
        }
    };
    let (min_ltv, max_ltv) = (percent("minLtv")?, percent("maxLtv")?);
    let amount = |k: &str| -> Result<i64, String> {
        match r.opt_decimal(k)?.ok_or(format!("missing field `{k}`"))? {
            v if v >= 0 => Ok(v),
            _ => Err(format!("{k}: must not be negative")),
        }
    };
    let (min_amount, max_amount) = (amount("minLoanAmount")?, amount("maxLoanAmount")?);
    for (low, high, what) in [
        (
            min_score,
            max_score,
            "minCreditScore is above maxCreditScore",
        ),
        (min_ltv, max_ltv, "minLtv is above maxLtv"),
        (
            min_amount,
            max_amount,
            "minLoanAmount is above maxLoanAmount",
        ),
    ] {
        if low > high {
            return Err(what.to_string());
        }
    }
    let rate = match r.opt_decimal("rate")?.ok_or("missing field `rate`")? {
        v if v > 0 && v <= 300_000 => v,
        _ => return Err("rate: must be above 0 and at most 30 (percent)".into()),
    };
    let points = match r.opt_decimal("points")?.ok_or("missing field `points`")? {
        v if (-100_000..=100_000).contains(&v) => v,
        _ => return Err("points: must be between -10 and 10".into()),
    };
    let effective = r.string("effectiveDate")?;
    if time::Date::parse(
        &effective,
        &time::format_description::well_known::Iso8601::DATE,
    )
    .is_err()
    {
        return Err(format!(
            "effectiveDate: `{effective}` is not a date (`YYYY-MM-DD`)"
        ));
    }
    Ok(Record::Row(vec![
        V::T(Some(product)),
        V::T(Some(loan_type)),
        V::T(purpose),
        V::T(Some(occupancy)),
        V::I(Some(term)),
        V::I(Some(lock)),
        V::I(Some(min_score)),
        V::I(Some(max_score)),
        V::I(Some(min_ltv)),
        V::I(Some(max_ltv)),
        V::I(Some(min_amount)),
        V::I(Some(max_amount)),
        V::I(Some(rate)),
        V::I(Some(points)),
        V::T(Some(effective)),
    ]))
}

/// A state of the United States (its two-letter code, upper case).
fn state(r: &Fields, k: &str) -> Result<String, String> {
    let s = r.string(k)?;
    let code = s.trim().to_ascii_uppercase();
    match US_STATES.iter().any(|(c, _)| *c == code) {
        true => Ok(code),
        false => Err(format!(
            "{k}: `{s}` is not a two-letter state code (such as `CA` or `TX`)"
        )),
    }
}

/// A whole number within `range`.
fn whole(r: &Fields, k: &str, range: std::ops::RangeInclusive<i64>) -> Result<i64, String> {
    match r.get(k) {
        None => Err(format!("missing field `{k}`")),
        Some(serde_json::Value::Number(n)) => match n.as_i64() {
            Some(v) if range.contains(&v) => Ok(v),
            _ => Err(format!(
                "{k}: `{n}` is not a whole number from {} to {}",
                range.start(),
                range.end()
            )),
        },
        Some(other) => Err(format!("{k}: expected a whole number, got {other}")),
    }
}

/// Licences: a user's first lines of this import replace the licences the user had; later
/// lines for the same (user, state) win.
pub(super) async fn write_licenses(
    tx: &mut Tx,
    rows: Vec<Vec<V>>,
    stale: &mut Stale,
) -> Result<(), ImportError> {
    let users: Vec<String> = rows
        .iter()
        .filter_map(|row| match &row[0] {
            V::T(Some(u)) if !stale.licensed.contains(u) => Some(u.clone()),
            _ => None,
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    for chunk in users.chunks(super::tables::BATCH_PARAMS) {
        let marks = vec!["?"; chunk.len()].join(", ");
        let values: Vec<V> = chunk.iter().map(|u| V::T(Some(u.clone()))).collect();
        tx.exec(
            &format!("DELETE FROM user_licenses WHERE user_id IN ({marks})"),
            &values,
        )
        .await?;
    }
    stale.licensed.extend(users);
    let cols = ["user_id", "state", "license_number", "expiration_year"];
    // One row per (user, state): the key is the first two columns, joined.
    let keyed: Vec<Vec<V>> = rows
        .into_iter()
        .map(|row| {
            let key = match (&row[0], &row[1]) {
                (V::T(Some(u)), V::T(Some(s))) => format!("{u}/{s}"),
                _ => String::new(),
            };
            std::iter::once(V::T(Some(key))).chain(row).collect()
        })
        .collect();
    let rows: Vec<Vec<V>> = last_per_id(keyed)
        .into_iter()
        .map(|row| row.into_iter().skip(1).collect())
        .collect();
    let tail = upsert_tail(&cols).replacen("(user_id)", "(user_id, state)", 1);
    tx.insert_rows("user_licenses", &cols, &tail, &rows).await?;
    Ok(())
}

/// The rate sheet: the file's first batch empties the sheet; every row is kept, numbered by
/// its line.
pub(super) async fn write_rates(
    tx: &mut Tx,
    rows: Vec<Vec<V>>,
    stale: &mut Stale,
) -> Result<(), ImportError> {
    if !stale.sheet_replaced {
        tx.exec("DELETE FROM rate_sheet", &[]).await?;
        stale.sheet_replaced = true;
    }
    let cols = [
        "line",
        "product",
        "loan_type",
        "purpose",
        "occupancy",
        "term_months",
        "lock_days",
        "min_credit_score",
        "max_credit_score",
        "min_ltv",
        "max_ltv",
        "min_loan_amount",
        "max_loan_amount",
        "rate",
        "points",
        "effective_date",
    ];
    let rows: Vec<Vec<V>> = rows
        .into_iter()
        .map(|row| {
            stale.sheet_rows += 1;
            std::iter::once(V::I(Some(stale.sheet_rows)))
                .chain(row)
                .collect()
        })
        .collect();
    tx.insert_rows("rate_sheet", &cols, "", &rows).await?;
    Ok(())
}
