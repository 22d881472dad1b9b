//! Reading one JSON line of an import file into a record, every field checked with a message
//! that names the file, the line and the field.

use serde_json::{Map, Value};

use super::tables::V;
use crate::data::agents::email_key;
use crate::data::history_keys;
use crate::data::values::{
    parse_decimal, parse_instant, parse_uuid, LOAN_STATUSES, LOAN_TYPES, PURPOSES,
};

/// One validated line.
pub(super) enum Record {
    Agent {
        row: Vec<V>,
        id: String,
        roles: Vec<String>,
        managed: Vec<String>,
    },
    Row(Vec<V>),
}

pub(super) fn parse_line(file: &str, line: &str) -> Result<Record, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Object(map) = value else {
        return Err("not a JSON object".into());
    };
    let r = Fields(&map);
    Ok(match file {
        "agents.jsonl" => {
            let id = r.uuid("id")?;
            let email = r.string("email")?;
            if !email.contains('@') {
                return Err(format!("email: `{email}` is not an email address"));
            }
            Record::Agent {
                row: vec![
                    V::T(Some(id.clone())),
                    V::T(Some(email.clone())),
                    V::T(Some(email_key(&email))),
                    V::T(r.opt_string("firstName")?),
                    V::T(r.opt_string("lastName")?),
                    V::T(r.opt_uuid("companyId")?),
                    V::I(Some(r.opt_bool("active")?.unwrap_or(true) as i64)),
                ],
                id,
                roles: r.strings("roles")?,
                managed: r.uuids("managedAgentIds")?,
            }
        }
        "loans.jsonl" => {
            let status = r.string("status")?;
            if !LOAN_STATUSES.contains(&status.as_str()) {
                return Err(format!("status: unknown loan status `{status}`"));
            }
            let loan_type = r.opt_enum("loanType", &LOAN_TYPES)?;
            let purpose = r.opt_enum("purpose", &PURPOSES)?;
            let number = r.opt_string("loanNumber")?;
            let first = r.opt_string("borrowerFirstName")?;
            let last = r.opt_string("borrowerLastName")?;
            let email = r.opt_string("borrowerEmail")?;
            let search = [&number, &first, &last, &email]
                .iter()
                .filter_map(|v| v.as_deref())
                .collect::<Vec<_>>()
                .join(" ")
                .to_lowercase();
            let status_date = r.opt_instant("statusDate")?;
            let closing = r.opt_instant("estimatedClosingDate")?;
            let updated = r.opt_instant("updated")?;
            // Each date's month index (schema v6), as history rows hold theirs.
            let month = |at: Option<i64>| V::I(at.map(history_keys::month_index));
            Record::Row(vec![
                V::T(Some(r.uuid("id")?)),
                V::T(number),
                V::T(first),
                V::T(last),
                V::T(email),
                V::T(Some(search)),
                V::T(Some(status)),
                V::I(status_date),
                V::T(loan_type),
                V::T(purpose),
                V::I(closing),
                V::I(updated),
                V::I(r.opt_decimal("loanAmount")?),
                V::I(r.opt_decimal("lockedCompensation")?),
                V::I(r.opt_decimal("estimatedCompensation")?),
                V::T(r.opt_string("propertyState")?.map(|s| s.to_uppercase())),
                V::T(r.opt_uuid("companyId")?),
                V::T(r.opt_uuid("loanOfficerId")?),
                V::T(r.opt_string("loanOfficerName")?),
                V::T(r.opt_uuid("loanAssistantId")?),
                V::T(r.opt_uuid("processorId")?),
                V::T(r.opt_string("processorName")?),
                V::T(r.opt_uuid("referringAgentId")?),
                V::T(r.opt_string("referringAgentName")?),
                month(status_date),
                month(closing),
                month(updated),
            ])
        }
        "los_status_history.jsonl" => Record::Row(vec![
            V::T(Some(r.uuid("loanId")?)),
            V::T(Some(r.name("status")?)),
            V::I(Some(r.instant("occurredAt")?)),
        ]),
        "dw_loan_milestones.jsonl" => Record::Row(vec![
            V::T(Some(r.uuid("loanId")?)),
            V::T(Some(r.name("milestone")?)),
            V::I(Some(r.instant("occurredAt")?)),
        ]),
        "dw_deals.jsonl" => Record::Row(vec![
            V::T(Some(r.id_string("id")?)),
            V::I(Some(r.instant("createdAt")?)),
            V::T(Some(r.name("stage")?)),
        ]),
        "user_licenses.jsonl" => super::sheets::license(&r)?,
        "pricing.jsonl" => super::sheets::rate(&r)?,
        "loan_applications.jsonl" => super::applications::application(&map)?,
        other => return Err(format!("unknown file {other}")),
    })
}

/// A JSON number as an exact decimal. Numbers written by float-based producers may carry
/// representation noise (`2716709.1999999997`); such a number is taken as the 4-place decimal
/// it stands for when it is within 1e-9 of it. Strings are always strict.
pub(super) fn decimal_number(n: &serde_json::Number) -> Result<i64, String> {
    let text = n.to_string();
    match parse_decimal(&text) {
        Ok(v) => Ok(v),
        Err(e) if e.contains("decimal places") => {
            let x = n.as_f64().ok_or(e.clone())?;
            let scaled = (x * 10_000.0).round();
            if ((scaled / 10_000.0) - x).abs() <= 1e-9 * x.abs().max(1.0) && scaled.abs() < 1e16 {
                Ok(scaled as i64)
            } else {
                Err(e)
            }
        }
        Err(e) => Err(e),
    }
}

/// Typed access to a line's fields; every error names the field.
pub(super) struct Fields<'a>(pub(super) &'a Map<String, Value>);

impl Fields<'_> {
    pub(super) fn get(&self, k: &str) -> Option<&Value> {
        self.0.get(k).filter(|v| !v.is_null())
    }

    pub(super) fn string(&self, k: &str) -> Result<String, String> {
        match self.0.get(k) {
            None => Err(format!("missing field `{k}`")),
            Some(Value::Null) => Err(format!("{k}: must not be null")),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(format!("{k}: expected a string, got {other}")),
        }
    }

    pub(super) fn opt_string(&self, k: &str) -> Result<Option<String>, String> {
        match self.get(k) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!("{k}: expected a string or null, got {other}")),
        }
    }

    /// A non-empty raw name (history status, milestone, stage).
    pub(super) fn name(&self, k: &str) -> Result<String, String> {
        let s = self.string(k)?;
        if s.trim().is_empty() {
            return Err(format!("{k}: must not be empty"));
        }
        Ok(s)
    }

    /// A non-empty identifier (deal ids need not be UUIDs).
    pub(super) fn id_string(&self, k: &str) -> Result<String, String> {
        match self.0.get(k) {
            Some(Value::Number(n)) => Ok(n.to_string()),
            _ => self.name(k),
        }
    }

    pub(super) fn uuid(&self, k: &str) -> Result<String, String> {
        let s = self.string(k)?;
        parse_uuid(&s).ok_or_else(|| format!("{k}: `{s}` is not a UUID"))
    }

    pub(super) fn opt_uuid(&self, k: &str) -> Result<Option<String>, String> {
        match self.opt_string(k)? {
            None => Ok(None),
            Some(s) => parse_uuid(&s)
                .map(Some)
                .ok_or_else(|| format!("{k}: `{s}` is not a UUID")),
        }
    }

    pub(super) fn instant(&self, k: &str) -> Result<i64, String> {
        let s = self.string(k)?;
        parse_instant(&s).ok_or_else(|| format!("{k}: `{s}` is not an ISO 8601 date-time"))
    }

    pub(super) fn opt_instant(&self, k: &str) -> Result<Option<i64>, String> {
        match self.opt_string(k)? {
            None => Ok(None),
            Some(s) => parse_instant(&s)
                .map(Some)
                .ok_or_else(|| format!("{k}: `{s}` is not an ISO 8601 date-time")),
        }
    }

    pub(super) fn opt_decimal(&self, k: &str) -> Result<Option<i64>, String> {
        match self.get(k) {
            None => Ok(None),
            Some(Value::Number(n)) => decimal_number(n).map(Some).map_err(|e| format!("{k}: {e}")),
            Some(Value::String(s)) => parse_decimal(s).map(Some).map_err(|e| format!("{k}: {e}")),
            Some(other) => Err(format!("{k}: expected a decimal number, got {other}")),
        }
    }

    pub(super) fn opt_enum(&self, k: &str, allowed: &[&str]) -> Result<Option<String>, String> {
        match self.opt_string(k)? {
            Some(s) if !allowed.contains(&s.as_str()) => {
                Err(format!("{k}: `{s}` is not one of {}", allowed.join(", ")))
            }
            other => Ok(other),
        }
    }

    pub(super) fn opt_bool(&self, k: &str) -> Result<Option<bool>, String> {
        match self.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(format!("{k}: `{other}` is not true or false")),
        }
    }

    pub(super) fn strings(&self, k: &str) -> Result<Vec<String>, String> {
        match self.get(k) {
            None => Ok(vec![]),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
                    other => Err(format!(
                        "{k}[{i}]: expected a non-empty string, got {other}"
                    )),
                })
                .collect(),
            Some(other) => Err(format!("{k}: expected an array of strings, got {other}")),
        }
    }

    pub(super) fn uuids(&self, k: &str) -> Result<Vec<String>, String> {
        self.strings(k)?
            .into_iter()
            .enumerate()
            .map(|(i, s)| parse_uuid(&s).ok_or_else(|| format!("{k}[{i}]: `{s}` is not a UUID")))
            .collect()
    }
}
