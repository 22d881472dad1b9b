//! The spec's `filter` object compiled to SQL predicates on the loan snapshot: every value
//! checked against its vocabulary or form, and bound.

use serde_json::Value as Json;

use super::columns::P;
use super::compiler::Compiler;
use super::ir::QueryError;
use super::limits::{
    MAX_FILTER_BYTES, MAX_LIST_VALUES, MAX_SEARCH_CHARS, MAX_SEARCH_WORDS, MAX_VALUE_BYTES,
};
use crate::data::values::{
    closest, parse_decimal, parse_instant, parse_uuid, LOAN_STATUSES, LOAN_TYPES, PURPOSES,
    US_STATES,
};

/// The spec's `filter` object, validated and compiled into predicates over alias `l`.
pub(super) fn compile_filter(c: &mut Compiler, text: &str) -> Result<Vec<String>, QueryError> {
    if text.len() > MAX_FILTER_BYTES {
        return Err(bad(format!(
            "{} bytes is larger than the {MAX_FILTER_BYTES} allowed",
            text.len()
        )));
    }
    let json: Json = serde_json::from_str(text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
    let obj = match json {
        Json::Null => return Ok(vec![]),
        Json::Object(o) => o,
        _ => return Err(bad("must be an object".into())),
    };
    let mut out = Vec::new();
    for (key, v) in &obj {
        if v.is_null() {
            continue;
        }
        let f = FilterField { key };
        match key.as_str() {
            "searchText" => search_text(c, &f.string(v)?, &mut out)?,
            "statuses" | "loanTypes" | "purposes" => {
                let (col, accepted, what) = match key.as_str() {
                    "statuses" => ("l.status", &LOAN_STATUSES[..], "loan status"),
                    "loanTypes" => ("l.loan_type", &LOAN_TYPES[..], "loan type"),
                    _ => ("l.purpose", &PURPOSES[..], "loan purpose"),
                };
                let values = f.strings(v)?;
                if let Some(unknown) = values.iter().find(|s| !accepted.contains(&s.as_str())) {
                    return Err(bad(format!(
                        "`{key}`: `{unknown}` is not a {what}; closest: {} (get_loan_reporting_metadata lists them all)",
                        closest(unknown, accepted, 3).join(", ")
                    )));
                }
                // An empty list is unconstrained, like an omitted field.
                if !values.is_empty() {
                    let col = c.filter_column(col, false);
                    out.push(any_of(c, &col, values));
                }
            }
            "statusDateFrom" => out.push(bound(c, "l.status_date", ">=", P::I(f.instant(v, false)?))),
            "statusDateTo" => out.push(bound(c, "l.status_date", "<=", P::I(f.instant(v, true)?))),
            "closingDateFrom" => out.push(bound(c, "l.estimated_closing_date", ">=", P::I(f.instant(v, false)?))),
            "closingDateTo" => out.push(bound(c, "l.estimated_closing_date", "<=", P::I(f.instant(v, true)?))),
            "updatedFrom" => out.push(bound(c, "l.updated", ">=", P::I(f.instant(v, false)?))),
            "updatedTo" => out.push(bound(c, "l.updated", "<=", P::I(f.instant(v, true)?))),
            "loanOfficerIds" => {
                let ids = f.strings(v)?.iter().map(|s| f.uuid(s)).collect::<Result<Vec<_>, _>>()?;
                if !ids.is_empty() {
                    out.push(any_of(c, "l.loan_officer_id", ids));
                }
            }
            "referringAgentId" => out.push(bound(c, "l.referring_agent_id", "=", P::T(f.uuid(&f.string(v)?)?))),
            "processorId" => out.push(bound(c, "l.processor_id", "=", P::T(f.uuid(&f.string(v)?)?))),
            "loanAmountMin" => out.push(bound(c, "l.loan_amount", ">=", P::I(f.decimal(v)?))),
            "loanAmountMax" => out.push(bound(c, "l.loan_amount", "<=", P::I(f.decimal(v)?))),
            "commissionMin" => out.push(bound(c, "l.locked_compensation", ">=", P::I(f.decimal(v)?))),
            "commissionMax" => out.push(bound(c, "l.locked_compensation", "<=", P::I(f.decimal(v)?))),
            "propertyState" => {
                let state = f.string(v)?;
                let code = state_code(&state).map_err(|e| bad(format!("`propertyState`: {e}")))?;
                out.push(bound(c, "l.property_state", "=", P::T(code)));
            }
            other => {
                return Err(bad(format!(
                    "unknown field `{other}`; fields: searchText, statuses, loanTypes, purposes, statusDateFrom, statusDateTo, \
                     closingDateFrom, closingDateTo, updatedFrom, updatedTo, loanOfficerIds, referringAgentId, processorId, \
                     loanAmountMin, loanAmountMax, commissionMin, commissionMax, propertyState"
                )))
            }
        }
    }
    Ok(out)
}

/// A refusal of the filter.
fn bad(m: String) -> QueryError {
    QueryError::Invalid(format!("filter: {m}"))
}

/// One field of the filter, read as the type its name asks for.
struct FilterField<'a> {
    key: &'a str,
}

impl FilterField<'_> {
    fn long(&self, s: &str) -> QueryError {
        bad(format!(
            "`{}`: a value of {} bytes is longer than the {MAX_VALUE_BYTES} allowed",
            self.key,
            s.len()
        ))
    }

    /// A string (of at most [`MAX_VALUE_BYTES`], but `searchText`, which has its own caps).
    fn string(&self, v: &Json) -> Result<String, QueryError> {
        let key = self.key;
        let s = v
            .as_str()
            .ok_or_else(|| bad(format!("`{key}` must be a string")))?;
        if s.len() > MAX_VALUE_BYTES && key != "searchText" {
            return Err(self.long(s));
        }
        Ok(s.to_string())
    }

    /// At most [`MAX_LIST_VALUES`] strings of at most [`MAX_VALUE_BYTES`] each.
    fn strings(&self, v: &Json) -> Result<Vec<String>, QueryError> {
        let key = self.key;
        let items = v
            .as_array()
            .ok_or_else(|| bad(format!("`{key}` must be an array of strings")))?;
        if items.len() > MAX_LIST_VALUES {
            return Err(bad(format!(
                "`{key}` has {} values; at most {MAX_LIST_VALUES} are allowed",
                items.len()
            )));
        }
        items
            .iter()
            .map(|x| {
                let s = x
                    .as_str()
                    .ok_or_else(|| bad(format!("`{key}` must be an array of strings")))?;
                if s.len() > MAX_VALUE_BYTES {
                    return Err(self.long(s));
                }
                Ok(s.to_string())
            })
            .collect()
    }

    /// An ISO 8601 instant in milliseconds; a bare date as an upper bound (`end_of_day`)
    /// includes that whole day.
    fn instant(&self, v: &Json, end_of_day: bool) -> Result<i64, QueryError> {
        let s = self.string(v)?;
        let ms = parse_instant(&s).ok_or_else(|| {
            bad(format!(
                "`{}`: `{s}` is not an ISO 8601 date-time",
                self.key
            ))
        })?;
        Ok(if end_of_day && s.trim().len() == 10 {
            ms + 86_400_000 - 1
        } else {
            ms
        })
    }

    /// A decimal (a number or its text) in cents.
    fn decimal(&self, v: &Json) -> Result<i64, QueryError> {
        let key = self.key;
        let s = match v {
            Json::Number(n) => n.to_string(),
            Json::String(s) => s.clone(),
            _ => return Err(bad(format!("`{key}` must be a number"))),
        };
        parse_decimal(&s).map_err(|e| bad(format!("`{key}`: {e}")))
    }

    /// A GUID, in its canonical form.
    fn uuid(&self, s: &str) -> Result<String, QueryError> {
        parse_uuid(s).ok_or_else(|| bad(format!("`{}`: `{s}` is not a GUID", self.key)))
    }
}

/// `searchText`: at most [`MAX_SEARCH_CHARS`] characters and [`MAX_SEARCH_WORDS`] words,
/// each word a case-insensitive substring of the search column (its `LIKE` wildcards
/// escaped).
fn search_text(c: &mut Compiler, text: &str, out: &mut Vec<String>) -> Result<(), QueryError> {
    if text.chars().count() > MAX_SEARCH_CHARS {
        return Err(bad(format!(
            "`searchText` has {} characters; at most {MAX_SEARCH_CHARS} are allowed",
            text.chars().count()
        )));
    }
    let words = text.split_whitespace().count();
    if words > MAX_SEARCH_WORDS {
        return Err(bad(format!(
            "`searchText` has {words} words; at most {MAX_SEARCH_WORDS} are allowed"
        )));
    }
    let column = c.search_column();
    for token in text.split_whitespace() {
        let escaped = token
            .to_lowercase()
            .replace('\\', "\\\\")
            .replace('%', "\\%")
            .replace('_', "\\_");
        out.push(bound(c, column, "LIKE", P::T(format!("%{escaped}%"))) + " ESCAPE '\\'");
    }
    Ok(())
}

/// `col` is one of `values` (none: nothing is).
fn any_of(c: &mut Compiler, col: &str, values: Vec<String>) -> String {
    if values.is_empty() {
        return "1 = 0".to_string();
    }
    let n = values.len();
    c.params.extend(values.into_iter().map(P::T));
    format!("{col} IN ({})", vec!["?"; n].join(", "))
}

/// `col op ?` with `p`. Equalities on an id stay on their index; lists and ranges yield to
/// the scope's.
fn bound(c: &mut Compiler, col: &str, op: &str, p: P) -> String {
    let numeric = matches!(p, P::I(_));
    c.params.push(p);
    let col = if op == "=" {
        col.to_string()
    } else {
        c.filter_column(col, numeric)
    };
    format!("{col} {op} ?")
}

/// `filter.propertyState` as stored: a two-letter code, any case (`ca` is `CA`). A state's name
/// is refused with its code named, anything else with the form expected: a value that could
/// never match is an error, not an empty answer.
pub(super) fn state_code(value: &str) -> Result<String, String> {
    let trimmed = value.trim();
    if trimmed.len() == 2 && trimmed.chars().all(|c| c.is_ascii_alphabetic()) {
        return Ok(trimmed.to_ascii_uppercase());
    }
    match US_STATES
        .iter()
        .find(|(_, name)| name.eq_ignore_ascii_case(trimmed))
    {
        Some((code, name)) => Err(format!(
            "`{trimmed}` is not a state code; use the two-letter code: `{code}` for {name}"
        )),
        None => Err(format!(
            "`{trimmed}` is not a two-letter state code (such as `CA` or `TX`)"
        )),
    }
}
