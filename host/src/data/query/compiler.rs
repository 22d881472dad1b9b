//! Compiling fields, predicates and group keys to SQL with bound parameters: every field goes
//! through the dataset's whitelist and the name-reading right here (`Compiler::lookup`),
//! whatever form reads it; value→label maps are checked here too.

use super::columns::{out_of, Out, P};
use super::ir::{Condition, Key, PeriodUnit, QueryError, Value};
use super::limits::{MAX_LABEL_BYTES, MAX_LIST_VALUES, MAX_MAP_ENTRIES, MAX_VALUE_BYTES};
use super::periods::{month_predicate, periods_between};
use crate::data::catalog::{Dataset, Field, FieldType};
use crate::data::values::{parse_decimal, parse_instant};

pub(super) struct Compiler {
    pub(super) dataset: Dataset,
    pub(super) can_read_names: bool,
    /// A list (never an aggregate) for a caller who may read borrowers' names: the only
    /// statement that reads them.
    pub(super) lists_borrowers: bool,
    pub(super) postgres: bool,
    pub(super) params: Vec<P>,
    /// History read on its own: `loan.*` fields the rows carry come from the rows.
    pub(super) history_only: bool,
    /// A group-by a covering index serves in key order (the whole snapshot's, or one
    /// company's status months after the company, schema v9): the key is read as is (SQLite
    /// would otherwise be kept off indexes on group keys), a date's whole-month bounds as
    /// bounds on its month index.
    pub(super) covered_group: bool,
    /// A caller with a scope: the scope's index leads, so the filter's columns are written
    /// `+col` where an engine could start from their index instead: on SQLite its lists and
    /// ranges (without statistics it cannot tell a few loans from a million), on PostgreSQL
    /// its numeric ranges (a generic plan prices any range at 0.5 % of the rows and would
    /// intersect it with the scope's few loans). Decision record 0026.
    pub(super) scope_first: bool,
    /// A person's scope (an Agent's, a referrer's, a ConciergeKey's officers'): on
    /// PostgreSQL a null check of a number or an instant is written `+col` as its ranges are,
    /// so that the statement can keep one generic plan (`plans_for`) that never ANDs a
    /// column's whole index with the person's few loans.
    pub(super) personal: bool,
    /// SQLite: the column the scope's own index holds in order after its equality, which a
    /// group key may read as is (`loans_company (company_id, status)`: a company's loans by
    /// status). Only a scope of one equality has one.
    pub(super) scope_order: Option<&'static str>,
    /// The bounds the predicates put on date-time fields (epoch ms, both ends inclusive).
    pub(super) bounds: std::collections::HashMap<String, (i64, i64)>,
}

impl Compiler {
    /// The `FROM` clause: history alone when it is read alone, else the dataset's.
    pub(super) fn tables(&self) -> &'static str {
        if self.history_only {
            Dataset::HISTORY_ONLY_FROM
        } else {
            self.dataset.from_clause()
        }
    }

    pub(super) fn field(&self, name: &str) -> Result<Field, QueryError> {
        let mut f = self.lookup(name)?;
        if self.history_only {
            if let Some((_, column)) = Dataset::HISTORY_CARRIED.iter().find(|(n, _)| *n == name) {
                f.column = column;
            }
        }
        Ok(f)
    }

    pub(super) fn lookup(&self, name: &str) -> Result<Field, QueryError> {
        let f = self.dataset.field(name).ok_or_else(|| {
            QueryError::Invalid(format!(
                "unknown field `{name}` of dataset `{}`; fields: {}",
                self.dataset.as_str(),
                self.dataset.field_names().join(", ")
            ))
        })?;
        if f.restricted() && !self.can_read_names {
            return Err(QueryError::Denied(format!(
                "field `{name}` is readable only by callers with Admin, Processor or ConciergeKey"
            )));
        }
        if f.borrower() && !self.lists_borrowers {
            return Err(QueryError::Denied(format!(
                "field `{name}` is a borrower's name: it is only listed (the listing capability), \
                 for callers with Admin, Processor, ConciergeKey, Agent or DualLicensedAgent and \
                 without PreLicensed"
            )));
        }
        Ok(f)
    }

    /// Binds a value compared with `field`, converting it to the stored form.
    pub(super) fn bind(&mut self, field: &Field, v: &Value) -> Result<(), QueryError> {
        let bad = |what: &str| QueryError::Invalid(format!("field `{}`: {what}", field.name));
        let p = match (field.ty, v) {
            (_, Value::Text(s) | Value::Decimal(s) | Value::Timestamp(s))
                if s.len() > MAX_VALUE_BYTES =>
            {
                return Err(bad(&format!(
                    "a value of {} bytes is longer than the {MAX_VALUE_BYTES} allowed",
                    s.len()
                )))
            }
            (FieldType::Text, Value::Text(s)) => P::T(s.clone()),
            (FieldType::Instant, Value::Timestamp(s) | Value::Text(s)) => P::I(
                parse_instant(s)
                    .ok_or_else(|| bad(&format!("`{s}` is not an ISO 8601 date-time")))?,
            ),
            (FieldType::Decimal, Value::Decimal(s) | Value::Text(s)) => {
                P::I(parse_decimal(s).map_err(|e| bad(&e))?)
            }
            (FieldType::Decimal, Value::Integer(i)) => P::I(
                i.checked_mul(10_000)
                    .ok_or_else(|| bad("value too large"))?,
            ),
            (_, Value::Null) => return Err(bad("compare with null using is-null / is-not-null")),
            (ty, other) => {
                return Err(bad(&format!(
                    "a {ty:?} field cannot be compared with {other:?}"
                )))
            }
        };
        self.params.push(p);
        Ok(())
    }

    pub(super) fn predicate(&mut self, name: &str, c: &Condition) -> Result<String, QueryError> {
        let f = self.field(name)?;
        // A month group-by over a covering index (the whole snapshot's or one company's): the
        // field's bounds as the same bounds on its month index, which that index holds in
        // order (`covered_month`).
        if let (true, Some(month)) = (self.covered_group, f.month) {
            if let Some(sql) = month_predicate(month, c, &mut self.params) {
                return Ok(sql);
            }
        }
        // PostgreSQL, a scoped caller: a range of a number yields to the scope's index, as
        // the filter's ranges do (`scope_first`); for a person, its null checks too.
        let null_check = matches!(c, Condition::IsNull | Condition::IsNotNull);
        let ranged = self.postgres
            && f.ty != FieldType::Text
            && (matches!(
                c,
                Condition::Lt(_) | Condition::Le(_) | Condition::Gt(_) | Condition::Ge(_)
            ) || (self.personal && null_check));
        let col = if ranged {
            self.filter_column(f.column, true)
        } else {
            f.column.to_string()
        };
        Ok(match c {
            Condition::IsNull => format!("{col} IS NULL"),
            Condition::IsNotNull => format!("{col} IS NOT NULL"),
            Condition::AnyOf(vs) if vs.len() > MAX_LIST_VALUES => {
                return Err(QueryError::Invalid(format!(
                    "field `{name}`: any-of has {} values; at most {MAX_LIST_VALUES} are allowed",
                    vs.len()
                )))
            }
            Condition::AnyOf(vs) if vs.is_empty() => "1 = 0".into(),
            Condition::AnyOf(vs) => {
                for v in vs {
                    self.bind(&f, v)?;
                }
                format!("{col} IN ({})", vec!["?"; vs.len()].join(", "))
            }
            Condition::Eq(v)
            | Condition::Ne(v)
            | Condition::Lt(v)
            | Condition::Le(v)
            | Condition::Gt(v)
            | Condition::Ge(v) => {
                self.bind(&f, v)?;
                let op = match c {
                    Condition::Eq(_) => "=",
                    Condition::Ne(_) => "<>",
                    Condition::Lt(_) => "<",
                    Condition::Le(_) => "<=",
                    Condition::Gt(_) => ">",
                    _ => ">=",
                };
                format!("{col} {op} ?")
            }
        })
    }

    pub(super) fn period(&self, col: &str, unit: PeriodUnit) -> String {
        if self.postgres {
            let ts = format!("(to_timestamp({col} / 1000.0) AT TIME ZONE 'UTC')");
            let fmt = match unit {
                PeriodUnit::Week => "IYYY-\"W\"IW",
                PeriodUnit::Month => "YYYY-MM",
                PeriodUnit::Quarter => "YYYY-\"Q\"Q",
                PeriodUnit::Year => "YYYY",
            };
            format!("CASE WHEN {col} IS NULL THEN NULL ELSE to_char({ts}, '{fmt}') END")
        } else {
            // `/ 1000.0`: an integer division truncates toward zero, which put the last
            // second before 1970 (1969-12-31T23:59:59.999) in 1970-01.
            let t = format!("{col} / 1000.0, 'unixepoch'");
            match unit {
                PeriodUnit::Week => format!("strftime('%G-W%V', {t})"),
                PeriodUnit::Month => format!("strftime('%Y-%m', {t})"),
                PeriodUnit::Year => format!("strftime('%Y', {t})"),
                PeriodUnit::Quarter => format!(
                    "CASE WHEN {col} IS NULL THEN NULL ELSE strftime('%Y', {t}) || '-Q' || ((CAST(strftime('%m', {t}) AS INTEGER) + 2) / 3) END"
                ),
            }
        }
    }

    /// The label of a month index (`year × 12 + month − 1`) as [`Compiler::period`] formats
    /// the date it stands for: `2026-02`, `2026-Q1`, `2026`. Import dates have years 0000 to
    /// 9999, so the index is not negative and the year has at most four digits.
    pub(super) fn month_label(&self, month: &str, unit: PeriodUnit) -> String {
        if self.postgres {
            let year = format!("to_char({month} / 12, 'FM0000')");
            match unit {
                PeriodUnit::Quarter => format!("{year} || '-Q' || ({month} % 12 / 3 + 1)"),
                PeriodUnit::Year => year,
                _ => format!("{year} || '-' || to_char({month} % 12 + 1, 'FM00')"),
            }
        } else {
            let label = match unit {
                PeriodUnit::Quarter => {
                    format!("printf('%04d-Q%d', {month} / 12, {month} % 12 / 3 + 1)")
                }
                PeriodUnit::Year => format!("printf('%04d', {month} / 12)"),
                _ => format!("printf('%04d-%02d', {month} / 12, {month} % 12 + 1)"),
            };
            format!("CASE WHEN {month} IS NULL THEN NULL ELSE {label} END")
        }
    }

    /// What a search's `LIKE` reads. On PostgreSQL a person's search is written as an
    /// expression (`l.search_key || ''`), which the trigram index (schema v14) cannot serve:
    /// testing a person's hundred-odd loans costs less than building the bitmap of a common
    /// token's trigrams. A company's or an organisation's search uses the index (record 0029).
    pub(super) fn search_column(&self) -> &'static str {
        if self.postgres && self.personal {
            "(l.search_key || '')"
        } else {
            "l.search_key"
        }
    }

    /// A column as a filter's list or range compares it: `+col` when the scope goes first
    /// (on PostgreSQL only a `numeric` one: text has no unary `+` there, and a list of text
    /// values is estimated as such in a generic plan too), except the column the scope's own
    /// index holds right after its equality (`loans_company (company_id, status)`): a
    /// company's list of statuses narrows that index to the statuses' ranges instead of
    /// reading every loan of the company.
    pub(super) fn filter_column(&self, col: &str, numeric: bool) -> String {
        if self.scope_first && (numeric || !self.postgres) && self.scope_order != Some(col) {
            format!("+{col}")
        } else {
            col.to_string()
        }
    }

    /// The column a group key reads, as the inner select reads it. On SQLite, `+col` keeps
    /// the planner from walking an index on the group key (a random table lookup per row,
    /// ~4x slower than a scan over 1M loans) unless a covering index serves the whole query
    /// or the scope's own index holds the key in order after its equality (a company's loans
    /// by status, or its status months, schema v9, are then read in order without a sort);
    /// the scope and filter predicates still use their indexes.
    pub(super) fn raw_key(&self, f: &Field) -> String {
        self.raw_column(f.column)
    }

    /// [`Compiler::raw_key`] for a column of its own (a stored month index).
    pub(super) fn raw_column(&self, column: &str) -> String {
        if self.postgres || self.covered_group || self.scope_order == Some(column) {
            column.to_string()
        } else {
            format!("+{column}")
        }
    }

    /// A group key's SQL and how it decodes. `over`: the key applies to this column of a
    /// pre-aggregated inner select (its raw value) instead of the row's own column.
    pub(super) fn key(&mut self, k: &Key, over: Option<&str>) -> Result<(String, Out), QueryError> {
        Ok(match k {
            Key::Field(name) => {
                let f = self.field(name)?;
                let col = over.map_or_else(|| self.raw_key(&f), str::to_string);
                (col, out_of(f.ty))
            }
            Key::Period(name, unit) => {
                let f = self.field(name)?;
                if f.ty != FieldType::Instant {
                    return Err(QueryError::Invalid(format!(
                        "field `{name}` is not a date-time; it has no period"
                    )));
                }
                // Weeks: the integer week, labelled by the executor as it decodes the groups
                // (`Out::Week`): formatting an ISO week per row cost 1.5-5x the grouping
                // itself, and the engines' formatting per group more than the host's.
                if *unit == PeriodUnit::Week {
                    return Ok((week_index(f.column), Out::Week));
                }
                let generic = self.period(f.column, *unit);
                let bounded = self
                    .bounds
                    .get(name.as_str())
                    .and_then(|(lo, hi)| periods_between(*lo, *hi, *unit));
                let sql = match bounded {
                    // A bounded window: labels by comparing with the window's period
                    // boundaries (a few integer comparisons a row instead of formatting a
                    // date); rows outside the boundaries, which the predicates exclude
                    // anyway, still get the formatted label.
                    Some(periods) => {
                        let col = f.column;
                        let mut sql = format!(
                            "CASE WHEN {col} IS NULL THEN NULL WHEN {col} < ? THEN {generic}"
                        );
                        self.params.push(P::I(periods.start));
                        for (end, label) in periods.ends {
                            sql.push_str(&format!(" WHEN {col} < ? THEN CAST(? AS TEXT)"));
                            self.params.push(P::I(end));
                            self.params.push(P::T(label));
                        }
                        sql.push_str(&format!(" ELSE {generic} END"));
                        sql
                    }
                    None => generic,
                };
                (sql, Out::Text)
            }
            Key::Mapped(name, pairs, otherwise) => {
                let f = self.field(name)?;
                if f.ty != FieldType::Text {
                    return Err(QueryError::Invalid(format!(
                        "field `{name}` is not text; it cannot be mapped"
                    )));
                }
                check_map(name, pairs, otherwise.as_deref())?;
                let column = over.unwrap_or(f.column);
                let mut whens = String::new();
                let mut seen = std::collections::HashSet::new();
                for (value, label) in pairs {
                    if seen.insert(value.as_str()) {
                        whens.push_str(" WHEN ? THEN ?");
                        self.params.push(P::T(value.clone()));
                        self.params.push(P::T(label.clone()));
                    }
                }
                let sql = match (whens.is_empty(), otherwise) {
                    // No entries: every row gets the fallback (a CASE needs a WHEN).
                    (true, Some(o)) => {
                        self.params.push(P::T(o.clone()));
                        "CAST(? AS TEXT)".to_string()
                    }
                    (true, None) => column.to_string(),
                    (false, Some(o)) => {
                        self.params.push(P::T(o.clone()));
                        format!("CASE {column}{whens} ELSE ? END")
                    }
                    (false, None) => format!("CASE {column}{whens} ELSE {column} END"),
                };
                (sql, Out::Text)
            }
        })
    }
}

/// The ISO week (Monday start, UTC) of an epoch-millisecond column as weeks since Monday
/// 1969-12-29 (`history_keys::week_index`), in integer arithmetic on both engines: the floor
/// of (ms + 3 days) / 7 days, where `/` truncates toward zero, so instants before that Monday
/// take the other branch. One division a row: the floor as two modulos cost PostgreSQL twice
/// the hand-written statement on the warehouse's deals.
pub(super) fn week_index(col: &str) -> String {
    let x = format!("({col} + 259200000)");
    format!("CASE WHEN {x} >= 0 THEN {x} / 604800000 ELSE ({x} - 604799999) / 604800000 END")
}

/// Refuses a value→label map past its caps: labels are copied into every result row, so
/// their size is bounded before the statement runs.
pub(super) fn check_map(
    field: &str,
    pairs: &[(String, String)],
    otherwise: Option<&str>,
) -> Result<(), QueryError> {
    if pairs.len() > MAX_MAP_ENTRIES {
        return Err(QueryError::Invalid(format!(
            "mapping of `{field}` has {} entries; at most {MAX_MAP_ENTRIES} are allowed",
            pairs.len()
        )));
    }
    let labels = pairs.iter().map(|(_, l)| l.as_str()).chain(otherwise);
    for label in labels {
        if label.len() > MAX_LABEL_BYTES {
            return Err(QueryError::Invalid(format!(
                "mapping of `{field}`: a label of {} bytes is longer than the {MAX_LABEL_BYTES} allowed",
                label.len()
            )));
        }
    }
    if let Some((v, _)) = pairs.iter().find(|(v, _)| v.len() > MAX_VALUE_BYTES) {
        return Err(QueryError::Invalid(format!(
            "mapping of `{field}`: a value of {} bytes is longer than the {MAX_VALUE_BYTES} allowed",
            v.len()
        )));
    }
    Ok(())
}
