//! Values as the reports print them (instants, periods, months, money rounded half away from
//! zero), a caller's roles and rights, and the filter read from its JSON.

use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::{Date, OffsetDateTime};

use crate::data::scaled;

// ---- values --------------------------------------------------------------------------------

pub(super) fn at(s: &str) -> OffsetDateTime {
    OffsetDateTime::parse(s, &Rfc3339).unwrap()
}

pub(super) fn midnight(d: Date) -> OffsetDateTime {
    d.midnight().assume_utc()
}

pub(super) fn month_label(t: Date) -> String {
    format!("{:04}-{:02}", t.year(), u8::from(t.month()))
}

pub(super) fn period(t: OffsetDateTime, unit: &str) -> String {
    let d = t.date();
    match unit {
        "Week" => {
            let (y, w, _) = d.to_iso_week_date();
            format!("{y:04}-W{w:02}")
        }
        "Quarter" => format!("{:04}-Q{}", d.year(), (u8::from(d.month()) - 1) / 3 + 1),
        "Year" => format!("{:04}", d.year()),
        _ => month_label(d),
    }
}

/// The first day of the month `k` months after `d`'s month.
pub(super) fn months_after(d: Date, k: i32) -> Date {
    let index = d.year() * 12 + i32::from(u8::from(d.month())) - 1 + k;
    Date::from_calendar_date(
        index.div_euclid(12),
        time::Month::try_from((index.rem_euclid(12) + 1) as u8).unwrap(),
        1,
    )
    .unwrap()
}

/// A scaled (×10⁴) decimal as the JSON number the reports write.
pub(super) fn money(v: i128) -> Value {
    let sign = if v < 0 { "-" } else { "" };
    let (whole, frac) = (v.abs() / 10_000, v.abs() % 10_000);
    let text = if frac == 0 {
        format!("{sign}{whole}")
    } else {
        format!("{sign}{whole}.{frac:04}")
            .trim_end_matches('0')
            .to_string()
    };
    serde_json::from_str(&text).unwrap()
}

/// `num / den` rounded half away from zero (`den` > 0).
pub(super) fn round_half_away(num: i128, den: i128) -> i128 {
    let (q, r) = (num / den, num % den);
    if 2 * r.abs() >= den {
        q + num.signum()
    } else {
        q
    }
}

pub(super) fn roles_of(caller: &Value) -> Vec<&str> {
    caller["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect()
}

pub(super) fn reads_names(caller: &Value) -> bool {
    roles_of(caller)
        .iter()
        .any(|r| ["Admin", "Processor", "ConciergeKey"].contains(r))
}

// ---- the filter, read from its JSON ---------------------------------------------------------

/// Whether `loan` passes `filter` (the spec's filter table, applied naively).
pub(super) fn passes(filter: &Value, loan: &Value) -> bool {
    let Some(f) = filter.as_object() else {
        return true;
    };
    let text = |k: &str| loan[k].as_str();
    let same = |a: Option<&str>, b: &Value| {
        a.zip(b.as_str())
            .is_some_and(|(a, b)| a.eq_ignore_ascii_case(b))
    };
    f.iter().all(|(key, want)| match key.as_str() {
        "statuses" | "loanTypes" | "purposes" => {
            let field = match key.as_str() {
                "statuses" => "status",
                "loanTypes" => "loanType",
                _ => "purpose",
            };
            let list = want.as_array().unwrap();
            list.is_empty() || list.iter().any(|w| text(field) == w.as_str())
        }
        "statusDateFrom" | "closingDateFrom" | "updatedFrom" | "statusDateTo" | "closingDateTo"
        | "updatedTo" => {
            let field = match &key[..key.len() - if key.ends_with("From") { 4 } else { 2 }] {
                "statusDate" => "statusDate",
                "closingDate" => "estimatedClosingDate",
                _ => "updated",
            };
            let bound = at(want.as_str().unwrap());
            text(field).is_some_and(|v| {
                if key.ends_with("From") {
                    at(v) >= bound
                } else {
                    at(v) <= bound
                }
            })
        }
        "loanAmountMin" | "loanAmountMax" | "commissionMin" | "commissionMax" => {
            let field = if key.starts_with("loan") {
                "loanAmount"
            } else {
                "lockedCompensation"
            };
            let bound = scaled(want).unwrap();
            scaled(&loan[field]).is_some_and(|v| {
                if key.ends_with("Min") {
                    v >= bound
                } else {
                    v <= bound
                }
            })
        }
        "loanOfficerIds" => {
            let list = want.as_array().unwrap();
            list.is_empty() || list.iter().any(|w| same(text("loanOfficerId"), w))
        }
        "referringAgentId" => same(text("referringAgentId"), want),
        "processorId" => same(text("processorId"), want),
        "propertyState" => same(text("propertyState"), want),
        "searchText" => {
            let hay: Vec<String> = [
                "loanNumber",
                "borrowerFirstName",
                "borrowerLastName",
                "borrowerEmail",
            ]
            .iter()
            .filter_map(|k| text(k).map(str::to_lowercase))
            .collect();
            want.as_str()
                .unwrap()
                .split_whitespace()
                .all(|t| hay.iter().any(|h| h.contains(&t.to_lowercase())))
        }
        other => panic!("the oracle does not know filter field {other}"),
    })
}
