//! The structured-query compiler: a plugin's query (dataset, filter, predicates, group-by
//! keys, aggregates, order, limit) becomes one parameterized SQL statement for SQLite or
//! PostgreSQL, with the caller's scope always AND-ed in for caller-scoped datasets. Field
//! names map through the dataset's whitelist to fixed column expressions; every value from a
//! plugin or a caller is a bound parameter, never SQL text. Aggregation runs in the database.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value as Json;
use sqlx::Row;

use super::catalog::{Dataset, Field, FieldType};
use super::report_store::{session_timeout_ms, PgReads, ReadError, ReportStore, SqliteReads};
use super::scope::Scope;
use super::store::number_placeholders;
use super::values::{
    closest, format_decimal, format_instant, parse_decimal, parse_instant, parse_uuid,
    LOAN_STATUSES, LOAN_TYPES, PURPOSES,
};

/// Most rows a query returns, whatever its limit.
pub const ROW_CAP: u32 = 10_000;
/// Longest a statement may run.
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest `filter.searchText`, in characters.
pub const MAX_SEARCH_CHARS: usize = 200;
/// Most words in `filter.searchText` (each is one `LIKE`).
pub const MAX_SEARCH_WORDS: usize = 8;
/// Most values in a filter array or an any-of predicate.
pub const MAX_LIST_VALUES: usize = 200;
/// Longest text value in a filter or predicate, in bytes.
pub const MAX_VALUE_BYTES: usize = 256;
/// Longest filter (JSON text), in bytes.
pub const MAX_FILTER_BYTES: usize = 16 * 1024;
/// Most entries of a value→label map.
pub const MAX_MAP_ENTRIES: usize = 256;
/// Longest label of a value→label map, in bytes: labels are copied into every result row.
pub const MAX_LABEL_BYTES: usize = 64;

/// A typed value, in predicates and in result rows.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// NULL.
    Null,
    /// A boolean.
    Boolean(bool),
    /// A whole number.
    Integer(i64),
    /// An exact decimal (plain string).
    Decimal(String),
    /// Text.
    Text(String),
    /// An RFC 3339 instant.
    Timestamp(String),
}

/// A comparison.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// `=`.
    Eq(Value),
    /// `<>`.
    Ne(Value),
    /// `<`.
    Lt(Value),
    /// `<=`.
    Le(Value),
    /// `>`.
    Gt(Value),
    /// `>=`.
    Ge(Value),
    /// `IN (…)`.
    AnyOf(Vec<Value>),
    /// `IS NULL`.
    IsNull,
    /// `IS NOT NULL`.
    IsNotNull,
}

/// A date truncation unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeriodUnit {
    /// `YYYY-Wnn` (ISO week).
    Week,
    /// `YYYY-MM`.
    Month,
    /// `YYYY-Qn`.
    Quarter,
    /// `YYYY`.
    Year,
}

/// A group-by key.
#[derive(Debug, Clone, PartialEq)]
pub enum Key {
    /// A field as is.
    Field(String),
    /// The UTC period of a date-time field.
    Period(String, PeriodUnit),
    /// A value→label mapping of a field: (field, pairs, otherwise).
    Mapped(String, Vec<(String, String)>, Option<String>),
}

/// An aggregate.
#[derive(Debug, Clone, PartialEq)]
pub enum Aggregate {
    /// Rows.
    Count,
    /// Non-null values.
    CountOf(String),
    /// Distinct non-null values.
    CountDistinct(String),
    /// Exact sum.
    Sum(String),
    /// Minimum.
    Min(String),
    /// Maximum.
    Max(String),
}

impl Aggregate {
    /// The field the aggregate reads (`None` for a row count).
    pub fn field(&self) -> Option<&str> {
        match self {
            Aggregate::Count => None,
            Aggregate::CountOf(f)
            | Aggregate::CountDistinct(f)
            | Aggregate::Sum(f)
            | Aggregate::Min(f)
            | Aggregate::Max(f) => Some(f),
        }
    }
}

/// A structured query.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The dataset.
    pub dataset: Dataset,
    /// The spec's filter object (JSON text).
    pub filter: Option<String>,
    /// AND-ed predicates.
    pub predicates: Vec<(String, Condition)>,
    /// Group-by keys.
    pub group_by: Vec<Key>,
    /// Distinct-on field.
    pub distinct_on: Option<String>,
    /// Aggregates.
    pub aggregates: Vec<Aggregate>,
    /// (output column, descending).
    pub order_by: Vec<(u32, bool)>,
    /// Row limit.
    pub limit: Option<u32>,
}

/// Query results.
#[derive(Debug, Clone, PartialEq)]
pub struct Rows {
    /// Output column names.
    pub columns: Vec<String>,
    /// Rows.
    pub rows: Vec<Vec<Value>>,
    /// Cut by the limit or cap.
    pub truncated: bool,
    /// Groups before the limit.
    pub total_groups: u64,
    /// Bytes of decoded values delivered.
    pub bytes: u64,
}

/// Why a query was not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// A field the caller may not read.
    #[error("{0}")]
    Denied(String),
    /// A malformed query or filter.
    #[error("{0}")]
    Invalid(String),
    /// The store failed.
    #[error("{0}")]
    Unavailable(String),
    /// The statement was stopped at its deadline.
    #[error("{0}")]
    Timeout(String),
    /// The result exceeded the rows or bytes the caller allowed.
    #[error("{0}")]
    TooLarge(String),
}

/// A bound parameter.
#[derive(Debug, Clone)]
enum P {
    T(String),
    I(i64),
}

impl rusqlite::ToSql for P {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match self {
            P::T(s) => s.to_sql(),
            P::I(i) => i.to_sql(),
        }
    }
}

/// How an output column is decoded.
#[derive(Debug, Clone, Copy)]
enum Out {
    Text,
    Int,
    Instant,
    Decimal,
}

impl Out {
    /// The value of an integer in a column of this kind (epoch ms, scaled decimal, integer).
    fn of_integer(self, n: i64) -> Value {
        match self {
            Out::Instant => Value::Timestamp(format_instant(n)),
            Out::Decimal => Value::Decimal(format_decimal(i128::from(n))),
            Out::Int | Out::Text => Value::Integer(n),
        }
    }
}

/// A result column the engine returned in a form its kind does not allow.
fn undecodable(column: usize, what: &dyn std::fmt::Display) -> QueryError {
    tracing::error!(column, %what, "cannot decode a result column");
    QueryError::Unavailable("the data store returned an unexpected value".into())
}

fn out_of(ty: FieldType) -> Out {
    match ty {
        FieldType::Text => Out::Text,
        FieldType::Instant => Out::Instant,
        FieldType::Decimal => Out::Decimal,
    }
}

struct Compiler {
    dataset: Dataset,
    can_read_names: bool,
    postgres: bool,
    params: Vec<P>,
    /// History read on its own: `loan.*` fields the rows carry come from the rows.
    history_only: bool,
    /// A whole-snapshot group-by a covering index serves in key order: the key is read as
    /// is (SQLite would otherwise be kept off indexes on group keys).
    covered_group: bool,
    /// The bounds the predicates put on date-time fields (epoch ms, both ends inclusive).
    bounds: std::collections::HashMap<String, (i64, i64)>,
}

impl Compiler {
    /// The `FROM` clause: history alone when it is read alone, else the dataset's.
    fn tables(&self) -> &'static str {
        if self.history_only {
            Dataset::HISTORY_ONLY_FROM
        } else {
            self.dataset.from_clause()
        }
    }

    fn field(&self, name: &str) -> Result<Field, QueryError> {
        let mut f = self.lookup(name)?;
        if self.history_only {
            if let Some((_, column)) = Dataset::HISTORY_CARRIED.iter().find(|(n, _)| *n == name) {
                f.column = column;
            }
        }
        Ok(f)
    }

    fn lookup(&self, name: &str) -> Result<Field, QueryError> {
        let f = self.dataset.field(name).ok_or_else(|| {
            QueryError::Invalid(format!(
                "unknown field `{name}` of dataset `{}`; fields: {}",
                self.dataset.as_str(),
                self.dataset.field_names().join(", ")
            ))
        })?;
        if f.restricted && !self.can_read_names {
            return Err(QueryError::Denied(format!(
                "field `{name}` is readable only by callers with Admin, Processor or ConciergeKey"
            )));
        }
        Ok(f)
    }

    /// Binds a value compared with `field`, converting it to the stored form.
    fn bind(&mut self, field: &Field, v: &Value) -> Result<(), QueryError> {
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

    fn predicate(&mut self, name: &str, c: &Condition) -> Result<String, QueryError> {
        let f = self.field(name)?;
        let col = f.column;
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

    fn period(&self, col: &str, unit: PeriodUnit) -> String {
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
            let t = format!("{col} / 1000, 'unixepoch'");
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

    /// The column a group key reads, as the inner select reads it. On SQLite, `+col` keeps
    /// the planner from walking an index on the group key (a random table lookup per row,
    /// ~4x slower than a scan over 1M loans) unless a covering index serves the whole query;
    /// the scope and filter predicates still use their indexes.
    fn raw_key(&self, f: &Field) -> String {
        if self.postgres || self.covered_group {
            f.column.to_string()
        } else {
            format!("+{}", f.column)
        }
    }

    /// A group key's SQL and how it decodes. `over`: the key applies to this column of a
    /// pre-aggregated inner select (its raw value) instead of the row's own column.
    fn key(&mut self, k: &Key, over: Option<&str>) -> Result<(String, Out), QueryError> {
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

/// The periods of a window: where the first starts, and each one's end (exclusive) and label.
struct Periods {
    start: i64,
    ends: Vec<(i64, String)>,
}

/// Most periods a window is labelled by comparisons; a longer one is formatted row by row.
const MAX_WINDOW_PERIODS: usize = 64;

/// The periods from the one holding `lo` to the one holding `hi` (epoch ms), labelled as the
/// SQL formats label them (`2026-W05`, `2026-02`, `2026-Q1`, `2026`, UTC).
fn periods_between(lo: i64, hi: i64, unit: PeriodUnit) -> Option<Periods> {
    use time::{Date, Duration, Month, OffsetDateTime, Time};
    let date_of = |ms: i64| {
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
            .ok()
            .map(|t| t.date())
    };
    let ms_of = |d: Date| {
        let t = d.with_time(Time::MIDNIGHT).assume_utc();
        i64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
    };
    let first_of_month = |d: Date, month: u8| {
        Date::from_calendar_date(d.year(), Month::try_from(month).ok()?, 1).ok()
    };
    let start_of = |d: Date| -> Option<Date> {
        match unit {
            PeriodUnit::Week => d.checked_sub(Duration::days(i64::from(
                d.weekday().number_days_from_monday(),
            ))),
            PeriodUnit::Month => first_of_month(d, u8::from(d.month())),
            PeriodUnit::Quarter => first_of_month(d, (u8::from(d.month()) - 1) / 3 * 3 + 1),
            PeriodUnit::Year => first_of_month(d, 1),
        }
    };
    let next = |d: Date| -> Option<Date> {
        match unit {
            PeriodUnit::Week => d.checked_add(Duration::days(7)),
            PeriodUnit::Month | PeriodUnit::Quarter => {
                let step = if unit == PeriodUnit::Month { 1 } else { 3 };
                let m = u8::from(d.month()) + step;
                let (year, month) = if m > 12 {
                    (d.year() + 1, m - 12)
                } else {
                    (d.year(), m)
                };
                Date::from_calendar_date(year, Month::try_from(month).ok()?, 1).ok()
            }
            PeriodUnit::Year => Date::from_calendar_date(d.year() + 1, Month::January, 1).ok(),
        }
    };
    let label = |d: Date| match unit {
        PeriodUnit::Week => {
            let (year, week, _) = d.to_iso_week_date();
            format!("{year:04}-W{week:02}")
        }
        PeriodUnit::Month => format!("{:04}-{:02}", d.year(), u8::from(d.month())),
        PeriodUnit::Quarter => format!("{:04}-Q{}", d.year(), (u8::from(d.month()) - 1) / 3 + 1),
        PeriodUnit::Year => format!("{:04}", d.year()),
    };
    if lo > hi {
        return None;
    }
    let mut start = start_of(date_of(lo)?)?;
    let last = date_of(hi)?;
    if !(0..=9999).contains(&start.year()) || !(0..=9999).contains(&last.year()) {
        return None;
    }
    let first = ms_of(start)?;
    let mut ends = Vec::new();
    while start <= last {
        if ends.len() == MAX_WINDOW_PERIODS {
            return None;
        }
        let end = next(start)?;
        ends.push((ms_of(end)?, label(start)));
        start = end;
    }
    Some(Periods { start: first, ends })
}

/// The bounds the query's predicates put on each date-time field (both ends inclusive), for
/// fields bounded on both sides.
fn instant_bounds(q: &Query) -> std::collections::HashMap<String, (i64, i64)> {
    let mut bounds: std::collections::HashMap<String, (i64, i64)> = Default::default();
    for (field, condition) in &q.predicates {
        let is_instant = q
            .dataset
            .field(field)
            .is_some_and(|f| f.ty == FieldType::Instant);
        let ms = |v: &Value| match v {
            Value::Timestamp(s) | Value::Text(s) => parse_instant(s),
            _ => None,
        };
        let (lo, hi) = match condition {
            Condition::Ge(v) => (ms(v), None),
            Condition::Gt(v) => (ms(v).map(|m| m.saturating_add(1)), None),
            Condition::Le(v) => (None, ms(v)),
            Condition::Lt(v) => (None, ms(v).map(|m| m.saturating_sub(1))),
            Condition::Eq(v) => (ms(v), ms(v)),
            _ => (None, None),
        };
        if !is_instant || (lo.is_none() && hi.is_none()) {
            continue;
        }
        let entry = bounds.entry(field.clone()).or_insert((i64::MIN, i64::MAX));
        if let Some(lo) = lo {
            entry.0 = entry.0.max(lo);
        }
        if let Some(hi) = hi {
            entry.1 = entry.1.min(hi);
        }
    }
    bounds.retain(|_, (lo, hi)| *lo != i64::MIN && *hi != i64::MAX);
    bounds
}

/// Refuses a value→label map past its caps: labels are copied into every result row, so
/// their size is bounded before the statement runs.
fn check_map(
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

/// The spec's `filter` object, validated and compiled into predicates over alias `l`.
fn compile_filter(c: &mut Compiler, text: &str) -> Result<Vec<String>, QueryError> {
    let bad = |m: String| QueryError::Invalid(format!("filter: {m}"));
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
        let long = |s: &str| {
            bad(format!(
                "`{key}`: a value of {} bytes is longer than the {MAX_VALUE_BYTES} allowed",
                s.len()
            ))
        };
        let string = |v: &Json| {
            let s = v
                .as_str()
                .ok_or_else(|| bad(format!("`{key}` must be a string")))?;
            if s.len() > MAX_VALUE_BYTES && key != "searchText" {
                return Err(long(s));
            }
            Ok(s.to_string())
        };
        let strings = |v: &Json| -> Result<Vec<String>, QueryError> {
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
                        return Err(long(s));
                    }
                    Ok(s.to_string())
                })
                .collect()
        };
        let instant = |v: &Json, end_of_day: bool| -> Result<i64, QueryError> {
            let s = string(v)?;
            let ms = parse_instant(&s)
                .ok_or_else(|| bad(format!("`{key}`: `{s}` is not an ISO 8601 date-time")))?;
            // A bare date as an upper bound includes that whole day.
            Ok(if end_of_day && s.trim().len() == 10 {
                ms + 86_400_000 - 1
            } else {
                ms
            })
        };
        let decimal = |v: &Json| -> Result<i64, QueryError> {
            let s = match v {
                Json::Number(n) => n.to_string(),
                Json::String(s) => s.clone(),
                _ => return Err(bad(format!("`{key}` must be a number"))),
            };
            parse_decimal(&s).map_err(|e| bad(format!("`{key}`: {e}")))
        };
        let uuid =
            |s: &str| parse_uuid(s).ok_or_else(|| bad(format!("`{key}`: `{s}` is not a GUID")));
        let any_of = |c: &mut Compiler, col: &str, values: Vec<String>| {
            if values.is_empty() {
                return "1 = 0".to_string();
            }
            let n = values.len();
            c.params.extend(values.into_iter().map(P::T));
            format!("{col} IN ({})", vec!["?"; n].join(", "))
        };
        let bound = |c: &mut Compiler, col: &str, op: &str, p: P| {
            c.params.push(p);
            format!("{col} {op} ?")
        };
        match key.as_str() {
            "searchText" => {
                let text = string(v)?;
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
                for token in text.split_whitespace() {
                    let escaped = token.to_lowercase().replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
                    out.push(bound(c, "l.search_key", "LIKE", P::T(format!("%{escaped}%"))) + " ESCAPE '\\'");
                }
            }
            "statuses" | "loanTypes" | "purposes" => {
                let (col, accepted, what) = match key.as_str() {
                    "statuses" => ("l.status", &LOAN_STATUSES[..], "loan status"),
                    "loanTypes" => ("l.loan_type", &LOAN_TYPES[..], "loan type"),
                    _ => ("l.purpose", &PURPOSES[..], "loan purpose"),
                };
                let values = strings(v)?;
                if let Some(unknown) = values.iter().find(|s| !accepted.contains(&s.as_str())) {
                    return Err(bad(format!(
                        "`{key}`: `{unknown}` is not a {what}; closest: {} (get_loan_reporting_metadata lists them all)",
                        closest(unknown, accepted, 3).join(", ")
                    )));
                }
                // An empty list is unconstrained, like an omitted field.
                if !values.is_empty() {
                    out.push(any_of(c, col, values));
                }
            }
            "statusDateFrom" => out.push(bound(c, "l.status_date", ">=", P::I(instant(v, false)?))),
            "statusDateTo" => out.push(bound(c, "l.status_date", "<=", P::I(instant(v, true)?))),
            "closingDateFrom" => out.push(bound(c, "l.estimated_closing_date", ">=", P::I(instant(v, false)?))),
            "closingDateTo" => out.push(bound(c, "l.estimated_closing_date", "<=", P::I(instant(v, true)?))),
            "updatedFrom" => out.push(bound(c, "l.updated", ">=", P::I(instant(v, false)?))),
            "updatedTo" => out.push(bound(c, "l.updated", "<=", P::I(instant(v, true)?))),
            "loanOfficerIds" => {
                let ids = strings(v)?.iter().map(|s| uuid(s)).collect::<Result<Vec<_>, _>>()?;
                if !ids.is_empty() {
                    out.push(any_of(c, "l.loan_officer_id", ids));
                }
            }
            "referringAgentId" => out.push(bound(c, "l.referring_agent_id", "=", P::T(uuid(&string(v)?)?))),
            "processorId" => out.push(bound(c, "l.processor_id", "=", P::T(uuid(&string(v)?)?))),
            "loanAmountMin" => out.push(bound(c, "l.loan_amount", ">=", P::I(decimal(v)?))),
            "loanAmountMax" => out.push(bound(c, "l.loan_amount", "<=", P::I(decimal(v)?))),
            "commissionMin" => out.push(bound(c, "l.locked_compensation", ">=", P::I(decimal(v)?))),
            "commissionMax" => out.push(bound(c, "l.locked_compensation", "<=", P::I(decimal(v)?))),
            "propertyState" => {
                let state = string(v)?;
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

/// The states, districts and territories of the United States with their two-letter codes.
const US_STATES: &[(&str, &str)] = &[
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

/// `filter.propertyState` as stored: a two-letter code, any case (`ca` is `CA`). A state's name
/// is refused with its code named, anything else with the form expected: a value that could
/// never match is an error, not an empty answer.
fn state_code(value: &str) -> Result<String, String> {
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

/// Whether the query groups by one key (as is, or mapped to labels) that a covering index
/// leads with, and reads nothing else but fields of that index.
fn covered_group(q: &Query) -> bool {
    let [Key::Field(key) | Key::Mapped(key, _, _)] = q.group_by.as_slice() else {
        return false;
    };
    let Some((_, held)) = Dataset::COVERED_GROUPS.iter().find(|(k, _)| k == key) else {
        return false;
    };
    q.distinct_on.is_none()
        && q.aggregates
            .iter()
            .filter_map(Aggregate::field)
            .all(|n| n == key || held.contains(&n))
}

/// Whether every `loan.*` field the query reads is one history rows carry.
fn reads_only_carried(q: &Query) -> bool {
    let keys = q.group_by.iter().map(|k| match k {
        Key::Field(n) | Key::Period(n, _) | Key::Mapped(n, _, _) => n.as_str(),
    });
    let mut names = keys
        .chain(q.aggregates.iter().filter_map(Aggregate::field))
        .chain(q.distinct_on.as_deref())
        .chain(q.predicates.iter().map(|(n, _)| n.as_str()));
    names.all(|n| !n.starts_with("loan.") || Dataset::HISTORY_CARRIED.iter().any(|(c, _)| *c == n))
}

/// A compiled statement.
#[derive(Clone)]
struct Compiled {
    sql: String,
    params: Vec<P>,
    outs: Vec<Out>,
    columns: Vec<String>,
    limit: u32,
}

fn compile(
    q: &Query,
    scope: Option<&Scope>,
    can_read_names: bool,
    postgres: bool,
) -> Result<Compiled, QueryError> {
    let mut c = Compiler {
        dataset: q.dataset,
        can_read_names,
        postgres,
        params: vec![],
        history_only: false,
        covered_group: false,
        bounds: instant_bounds(q),
    };
    if q.aggregates.is_empty() {
        return Err(QueryError::Invalid(
            "a query needs at least one aggregate (plugins read aggregates, not rows)".into(),
        ));
    }
    if q.group_by.len() > 8 || q.aggregates.len() > 16 {
        return Err(QueryError::Invalid(
            "at most 8 group-by keys and 16 aggregates".into(),
        ));
    }
    // The filter first (on its own parameters): whether it constrains anything decides
    // whether history rows must be joined to their loans.
    let (filter_sql, filter_params) = match &q.filter {
        None => (vec![], vec![]),
        Some(_) if !q.dataset.has_loans() => {
            return Err(QueryError::Invalid(format!(
                "dataset `{}` takes no loan filter",
                q.dataset.as_str()
            )))
        }
        Some(f) => {
            let sql = compile_filter(&mut c, f)?;
            (sql, std::mem::take(&mut c.params))
        }
    };
    c.history_only = q.dataset == Dataset::LosStatusHistory
        && filter_sql.is_empty()
        && scope.is_some_and(|s| s.all)
        && reads_only_carried(q);
    c.covered_group = q.dataset == Dataset::Loans
        && filter_sql.is_empty()
        && q.predicates.is_empty()
        && scope.is_some_and(|s| s.all)
        && covered_group(q);
    // A value→label key over many rows: aggregate by the raw values first (few groups, read
    // in index order where an index serves them), then map and merge those few rows.
    let preaggregate = q.distinct_on.is_none()
        && q.group_by.iter().any(|k| matches!(k, Key::Mapped(..)))
        && q.group_by.iter().all(|k| !matches!(k, Key::Period(..)))
        && q.aggregates
            .iter()
            .all(|a| !matches!(a, Aggregate::CountDistinct(_)));
    if preaggregate {
        return compile_preaggregated(c, q, scope, filter_sql, filter_params);
    }
    if let Some(plan) = period_sets(&c, q) {
        return compile_period_sets(c, q, plan, scope, filter_sql, filter_params);
    }
    // Inner select list: keys (k0…), the distinct field (dd), aggregate sources (s0…).
    let mut inner = Vec::new();
    let mut outs = Vec::new();
    let mut columns = Vec::new();
    for (i, k) in q.group_by.iter().enumerate() {
        let (sql, out) = c.key(k, None)?;
        inner.push(format!("{sql} AS k{i}"));
        outs.push(out);
        columns.push(format!("key{i}"));
    }
    let key_params = std::mem::take(&mut c.params);
    if let Some(d) = &q.distinct_on {
        let f = c.field(d)?;
        inner.push(format!("{} AS dd", f.identity()));
    }
    let mut outer_aggs = Vec::new();
    for (i, a) in q.aggregates.iter().enumerate() {
        let (func, field) = match a {
            Aggregate::Count => ("COUNT(*)", None),
            Aggregate::CountOf(f) => ("COUNT", Some(f)),
            Aggregate::CountDistinct(f) => ("COUNT(DISTINCT", Some(f)),
            Aggregate::Sum(f) => ("SUM", Some(f)),
            Aggregate::Min(f) => ("MIN", Some(f)),
            Aggregate::Max(f) => ("MAX", Some(f)),
        };
        let expr = match field {
            None => "COUNT(*)".to_string(),
            Some(name) => {
                let f = c.field(name)?;
                let source = match a {
                    Aggregate::CountDistinct(_) => f.identity(),
                    _ => f.column,
                };
                inner.push(format!("{source} AS s{i}"));
                let bigint = if postgres { "BIGINT" } else { "INTEGER" };
                match a {
                    Aggregate::CountDistinct(_) => format!("COUNT(DISTINCT s{i})"),
                    Aggregate::Sum(_) if f.ty == FieldType::Text => {
                        return Err(QueryError::Invalid(format!(
                            "field `{name}` is text; it cannot be summed"
                        )))
                    }
                    Aggregate::Sum(_) => format!("CAST(SUM(s{i}) AS {bigint})"),
                    _ => format!("{func}(s{i})"),
                }
            }
        };
        outs.push(match (a, field.and_then(|n| q.dataset.field(n))) {
            (Aggregate::Count | Aggregate::CountOf(_) | Aggregate::CountDistinct(_), _) => Out::Int,
            (_, Some(f)) => out_of(f.ty),
            (_, None) => Out::Int,
        });
        outer_aggs.push(format!("{expr} AS a{i}"));
        columns.push(format!("agg{i}"));
    }

    let (where_sql, where_params) = where_clause(&mut c, q, scope, filter_sql, filter_params)?;

    let distinct = if q.distinct_on.is_some() {
        "DISTINCT "
    } else {
        ""
    };
    let inner_list = if inner.is_empty() {
        "1 AS one".to_string()
    } else {
        inner.join(", ")
    };
    let from = c.tables();
    let inner_sql = format!("SELECT {distinct}{inner_list} FROM {from}{where_sql}");
    let keys: Vec<String> = (0..q.group_by.len()).map(|i| format!("k{i}")).collect();
    let group = if keys.is_empty() {
        String::new()
    } else {
        format!(" GROUP BY {}", keys.join(", "))
    };
    let mut select = keys.clone();
    select.extend(outer_aggs);
    let grouped = format!("SELECT {} FROM ({inner_sql}) i{group}", select.join(", "));

    finish(q, grouped, key_params, where_params, outs, columns)
}

/// The caller's scope as a condition over the loan alias `l`, with its parameters.
fn scope_condition(scope: Option<&Scope>) -> Result<(String, Vec<P>), QueryError> {
    let scope = scope.ok_or_else(|| {
        QueryError::Unavailable("no caller scope for a caller-scoped dataset".into())
    })?;
    let (sql, params) = scope.predicate();
    Ok((sql, params.into_iter().map(P::T).collect()))
}

/// The `WHERE` clause (scope, filter, predicates) and its parameters, in that order.
fn where_clause(
    c: &mut Compiler,
    q: &Query,
    scope: Option<&Scope>,
    filter_sql: Vec<String>,
    filter_params: Vec<P>,
) -> Result<(String, Vec<P>), QueryError> {
    let mut wheres = Vec::new();
    let mut where_params = Vec::new();
    if c.history_only {
        wheres.push(Dataset::HISTORY_ONLY_WHERE.to_string());
    } else if q.dataset.has_loans() {
        let (sql, params) = scope_condition(scope)?;
        wheres.push(sql);
        where_params.extend(params);
    }
    wheres.extend(filter_sql);
    where_params.extend(filter_params);
    for (field, cond) in &q.predicates {
        wheres.push(c.predicate(field, cond)?);
    }
    where_params.extend(std::mem::take(&mut c.params));
    let where_sql = if wheres.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", wheres.join(" AND "))
    };
    Ok((where_sql, where_params))
}

/// Wraps a grouped statement: deterministic order (nulls last on both engines), the total
/// number of groups, the limit.
fn finish(
    q: &Query,
    grouped: String,
    key_params: Vec<P>,
    where_params: Vec<P>,
    outs: Vec<Out>,
    columns: Vec<String>,
) -> Result<Compiled, QueryError> {
    let keys: Vec<String> = (0..q.group_by.len()).map(|i| format!("k{i}")).collect();
    let names: Vec<String> = keys
        .iter()
        .cloned()
        .chain((0..q.aggregates.len()).map(|i| format!("a{i}")))
        .collect();
    let mut order = Vec::new();
    if q.order_by.is_empty() {
        for k in &keys {
            order.push(format!("({k} IS NULL), {k}"));
        }
    } else {
        for (col, desc) in &q.order_by {
            let name = names.get(*col as usize).ok_or_else(|| {
                QueryError::Invalid(format!(
                    "order-by column {col} does not exist ({} columns)",
                    names.len()
                ))
            })?;
            order.push(format!(
                "({name} IS NULL), {name}{}",
                if *desc { " DESC" } else { "" }
            ));
        }
        for k in &keys {
            order.push(format!("({k} IS NULL), {k}"));
        }
    }
    let limit = q.limit.unwrap_or(ROW_CAP).min(ROW_CAP);
    let order_sql = if order.is_empty() {
        String::new()
    } else {
        format!(" ORDER BY {}", order.join(", "))
    };
    let sql = format!(
        "SELECT g.*, COUNT(*) OVER () AS total_groups FROM ({grouped}) g{order_sql} LIMIT {limit}"
    );
    let mut params = key_params;
    params.extend(where_params);
    Ok(Compiled {
        sql,
        params,
        outs,
        columns,
        limit,
    })
}

/// [`compile`] for value→label keys without a period or a distinct count: the inner select
/// aggregates by the keys' raw values (`r0…`, partial aggregates `p0…`), the grouped select
/// maps them and merges the partials. The same answer as mapping every row, with few rows
/// mapped and, where an index leads with the raw key, nothing sorted.
fn compile_preaggregated(
    mut c: Compiler,
    q: &Query,
    scope: Option<&Scope>,
    filter_sql: Vec<String>,
    filter_params: Vec<P>,
) -> Result<Compiled, QueryError> {
    let bigint = if c.postgres { "BIGINT" } else { "INTEGER" };
    let mut inner = Vec::new();
    let mut select = Vec::new();
    let mut outs = Vec::new();
    let mut columns = Vec::new();
    for (i, k) in q.group_by.iter().enumerate() {
        let (Key::Field(name) | Key::Mapped(name, _, _)) = k else {
            unreachable!("no period keys here");
        };
        let f = c.field(name)?;
        inner.push(format!("{} AS r{i}", c.raw_key(&f)));
        let (sql, out) = c.key(k, Some(&format!("r{i}")))?;
        select.push(format!("{sql} AS k{i}"));
        outs.push(out);
        columns.push(format!("key{i}"));
    }
    let key_params = std::mem::take(&mut c.params);
    for (i, a) in q.aggregates.iter().enumerate() {
        let (partial, merged, out) = match a {
            Aggregate::Count => (
                "COUNT(*)".to_string(),
                format!("CAST(SUM(p{i}) AS {bigint})"),
                Out::Int,
            ),
            Aggregate::CountOf(name) => {
                let f = c.field(name)?;
                (
                    format!("COUNT({})", f.column),
                    format!("CAST(SUM(p{i}) AS {bigint})"),
                    Out::Int,
                )
            }
            Aggregate::Sum(name) => {
                let f = c.field(name)?;
                if f.ty == FieldType::Text {
                    return Err(QueryError::Invalid(format!(
                        "field `{name}` is text; it cannot be summed"
                    )));
                }
                (
                    format!("SUM({})", f.column),
                    format!("CAST(SUM(p{i}) AS {bigint})"),
                    out_of(f.ty),
                )
            }
            Aggregate::Min(name) | Aggregate::Max(name) => {
                let f = c.field(name)?;
                let func = if matches!(a, Aggregate::Min(_)) {
                    "MIN"
                } else {
                    "MAX"
                };
                (
                    format!("{func}({})", f.column),
                    format!("{func}(p{i})"),
                    out_of(f.ty),
                )
            }
            Aggregate::CountDistinct(_) => unreachable!("no distinct counts here"),
        };
        inner.push(format!("{partial} AS p{i}"));
        select.push(format!("{merged} AS a{i}"));
        outs.push(out);
        columns.push(format!("agg{i}"));
    }
    let (where_sql, where_params) = where_clause(&mut c, q, scope, filter_sql, filter_params)?;
    let from = c.tables();
    let raw: Vec<String> = (0..q.group_by.len()).map(|i| format!("r{i}")).collect();
    let keys: Vec<String> = (0..q.group_by.len()).map(|i| format!("k{i}")).collect();
    let grouped = format!(
        "SELECT {} FROM (SELECT {} FROM {from}{where_sql} GROUP BY {}) i GROUP BY {}",
        select.join(", "),
        inner.join(", "),
        raw.join(", "),
        keys.join(", ")
    );
    finish(q, grouped, key_params, where_params, outs, columns)
}

/// A query [`compile_period_sets`] answers: which key is the period, the table of its unit,
/// the window's period indexes with their labels, and each label's status bits.
struct PeriodSets {
    period_key: usize,
    table: &'static str,
    periods: Vec<(i64, String)>,
    labels: Vec<(String, i64)>,
}

/// Whether `q` counts distinct loans of history per (whole months or weeks, status mapped to
/// labels), reading only fields of the loan (constant per loan): then the period sets
/// (schema v4) answer it, alone when history is read alone (organisation-wide: the loan fields
/// the sets carry), else joined to the caller's loans. Every mapped status must have a bit of
/// its own (`history_keys::STATUS_BITS`) and the map a fallback label, so that every label is
/// exactly a set of bits; the predicates must be bounds that select whole periods.
fn period_sets(c: &Compiler, q: &Query) -> Option<PeriodSets> {
    use super::history_keys::{listed_bit, month_index, week_index, STATUS_BITS, UNLISTED_BIT};
    let sets = Dataset::HISTORY_SETS;
    if q.dataset != Dataset::LosStatusHistory
        || q.distinct_on.as_deref() != Some(sets.loan)
        || q.group_by.len() != 2
    {
        return None;
    }
    let of_the_loan = |name: &str| {
        if c.history_only {
            sets.carried.iter().any(|(n, _)| *n == name)
        } else {
            name.starts_with("loan.")
        }
    };
    let aggregates_fit = q.aggregates.iter().all(|a| match a {
        Aggregate::Count => true,
        Aggregate::CountDistinct(_) => false,
        other => other.field().is_some_and(of_the_loan),
    });
    if !aggregates_fit {
        return None;
    }
    let period_key = q.group_by.iter().position(
        |k| matches!(k, Key::Period(f, PeriodUnit::Month | PeriodUnit::Week) if f == sets.instant),
    )?;
    let Key::Period(_, unit) = &q.group_by[period_key] else {
        return None;
    };
    let Key::Mapped(status, pairs, Some(otherwise)) = &q.group_by[1 - period_key] else {
        return None;
    };
    if status != sets.status || check_map(status, pairs, Some(otherwise)).is_err() {
        return None;
    }
    // The window: bounds on the period's field only, at period boundaries.
    let only_bounds = q.predicates.iter().all(|(field, cond)| {
        field == sets.instant
            && matches!(
                cond,
                Condition::Ge(_) | Condition::Gt(_) | Condition::Le(_) | Condition::Lt(_)
            )
    });
    let (lo, hi) = *c.bounds.get(sets.instant)?;
    let window = periods_between(lo, hi, *unit)?;
    let whole = lo == window.start
        && window
            .ends
            .last()
            .is_some_and(|(end, _)| hi.checked_add(1) == Some(*end));
    if !only_bounds || !whole {
        return None;
    }
    // Each label's bits; a value mapped twice keeps its first label, as in `Compiler::key`.
    let mut labels: Vec<(String, i64)> = Vec::new();
    let mut add = |label: &str, bits: i64| match labels.iter_mut().find(|(l, _)| l == label) {
        Some((_, b)) => *b |= bits,
        None => labels.push((label.to_string(), bits)),
    };
    let mut mapped = 0_i64;
    for (value, label) in pairs {
        let bit = listed_bit(value)?;
        if mapped & bit == 0 {
            mapped |= bit;
            add(label, bit);
        }
    }
    let every = ((1_i64 << STATUS_BITS.len()) - 1) | UNLISTED_BIT;
    add(otherwise, every & !mapped);
    let (table, index): (_, fn(i64) -> i64) = match unit {
        PeriodUnit::Month => (sets.months, month_index),
        _ => (sets.weeks, week_index),
    };
    let mut start = window.start;
    let mut periods = Vec::with_capacity(window.ends.len());
    for (end, label) in window.ends {
        periods.push((index(start), label));
        start = end;
    }
    Some(PeriodSets {
        period_key,
        table,
        periods,
        labels,
    })
}

/// [`compile`] for the queries [`period_sets`] accepts. The period sets hold one row per
/// (period, loan) with the union of its statuses' bits, so no history row is read and nothing
/// is de-duplicated: the loans are counted per (period, set of bits), a few hundred to a few
/// thousand groups, and each label takes the sets that hold one of its bits. A loan counts once
/// per (period, label) however many of its statuses the label has, exactly as `DISTINCT` would.
fn compile_period_sets(
    c: Compiler,
    q: &Query,
    plan: PeriodSets,
    scope: Option<&Scope>,
    filter_sql: Vec<String>,
    filter_params: Vec<P>,
) -> Result<Compiled, QueryError> {
    let sets = Dataset::HISTORY_SETS;
    let bigint = if c.postgres { "BIGINT" } else { "INTEGER" };
    let mut per_set = vec![
        "r.period_index AS pi".to_string(),
        "r.status_bits AS m".to_string(),
        "COUNT(*) AS c".to_string(),
    ];
    let mut merged = Vec::new();
    let mut outs = Vec::new();
    for (i, a) in q.aggregates.iter().enumerate() {
        let Some(name) = a.field() else {
            merged.push(format!("CAST(SUM(x.c) AS {bigint}) AS a{i}"));
            outs.push(Out::Int);
            continue;
        };
        let f = c.field(name)?;
        // Alone, the sets' own column; joined, the loan's (`l.…`).
        let column = if c.history_only {
            sets.carried
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, col)| *col)
                .ok_or_else(|| QueryError::Invalid(format!("field `{name}` is not carried")))?
        } else {
            f.column
        };
        if f.ty == FieldType::Text && matches!(a, Aggregate::Sum(_)) {
            return Err(QueryError::Invalid(format!(
                "field `{name}` is text; it cannot be summed"
            )));
        }
        let (partial, merge, out) = match a {
            Aggregate::CountOf(_) => ("COUNT", "SUM", Out::Int),
            Aggregate::Sum(_) => ("SUM", "SUM", out_of(f.ty)),
            Aggregate::Min(_) => ("MIN", "MIN", out_of(f.ty)),
            _ => ("MAX", "MAX", out_of(f.ty)),
        };
        per_set.push(format!("{partial}({column}) AS p{i}"));
        merged.push(if merge == "SUM" {
            format!("CAST(SUM(x.p{i}) AS {bigint}) AS a{i}")
        } else {
            format!("{merge}(x.p{i}) AS a{i}")
        });
        outs.push(out);
    }
    // Which sets: organisation-wide, those of loans in the snapshot; else those of the loans
    // the caller's scope and filter keep (joined, by key). Then the window's periods (the
    // key's range). Period indexes and label bits are integers the host computed; every text
    // is a parameter.
    let (first, last) = (plan.periods[0].0, plan.periods[plan.periods.len() - 1].0);
    let mut params = Vec::new();
    let mut wheres = Vec::new();
    let from = if c.history_only {
        wheres.push("r.in_snapshot = 1".to_string());
        plan.table.to_string()
    } else {
        let (sql, scope_params) = scope_condition(scope)?;
        wheres.push(sql);
        params.extend(scope_params);
        wheres.extend(filter_sql);
        params.extend(filter_params);
        format!("{} JOIN loans l ON l.key = r.loan_key", plan.table)
    };
    wheres.push(format!(
        "r.period_index >= {first} AND r.period_index <= {last}"
    ));
    let mut keys = Vec::new();
    for i in 0..2 {
        if i == plan.period_key {
            let mut case = "CASE x.pi".to_string();
            for (index, label) in &plan.periods {
                case.push_str(&format!(" WHEN {index} THEN CAST(? AS TEXT)"));
                params.push(P::T(label.clone()));
            }
            keys.push(format!("{case} END AS k{i}"));
        } else {
            keys.push(format!("b.label AS k{i}"));
        }
    }
    let mut labels = Vec::new();
    for (label, bits) in &plan.labels {
        labels.push(format!(
            "SELECT CAST(? AS TEXT) AS label, CAST({bits} AS {bigint}) AS bits"
        ));
        params.push(P::T(label.clone()));
    }
    // The sets are counted once (`MATERIALIZED`), then joined to the few labels: joined
    // directly, SQLite ran the count once per label and PostgreSQL once per parallel worker.
    let grouped = format!(
        "WITH x AS MATERIALIZED (\
            SELECT {per_set} FROM {from} WHERE {wheres} GROUP BY r.period_index, r.status_bits\
         ) SELECT {keys}, {merged} FROM x CROSS JOIN ({labels}) b \
         WHERE (x.m & b.bits) <> 0 GROUP BY k0, k1",
        per_set = per_set.join(", "),
        wheres = wheres.join(" AND "),
        keys = keys.join(", "),
        merged = merged.join(", "),
        labels = labels.join(" UNION ALL "),
    );
    let mut outs_all = vec![Out::Text, Out::Text];
    outs_all.extend(outs);
    let columns = (0..2)
        .map(|i| format!("key{i}"))
        .chain((0..q.aggregates.len()).map(|i| format!("agg{i}")))
        .collect();
    finish(q, grouped, params, Vec::new(), outs_all, columns)
}

/// What one statement may spend: the instant it must have finished by, and the rows and
/// bytes (decoded, as the guest will receive them) it may deliver. The caller derives these
/// from what is left of the plugin call's budgets.
#[derive(Debug, Clone, Copy)]
pub struct Allowance {
    /// The statement is stopped inside the engine at this instant.
    pub deadline: Instant,
    /// Rows the statement may return.
    pub max_rows: u64,
    /// Bytes of decoded values the statement may return.
    pub max_bytes: u64,
}

impl Allowance {
    /// The default for one statement on its own: [`STATEMENT_TIMEOUT`], [`ROW_CAP`] rows,
    /// [`DEFAULT_MAX_BYTES`].
    pub fn standard() -> Allowance {
        Allowance {
            deadline: Instant::now() + STATEMENT_TIMEOUT,
            max_rows: ROW_CAP as u64,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// Bytes one statement may deliver unless the caller says otherwise.
pub const DEFAULT_MAX_BYTES: u64 = 8 * 1024 * 1024;

/// Runs a query for a caller (`scope` is required for caller-scoped datasets), within
/// `allowance`. The statement runs on its own task: if the caller goes away, it still ends
/// at its deadline (SQLite: a progress handler; PostgreSQL: `statement_timeout`), and its
/// connection goes back to the pool at once.
pub async fn run(
    store: &ReportStore,
    q: &Query,
    scope: Option<&Scope>,
    can_read_names: bool,
    allowance: Allowance,
) -> Result<Rows, QueryError> {
    let postgres = matches!(store, ReportStore::Postgres(_));
    let compiled = compile(q, scope, can_read_names, postgres)?;
    let columns = compiled.columns.clone();
    let limit = compiled.limit;
    let fetched = spawn_execute(store, compiled, allowance).await?;
    let total_groups = fetched.total;
    Ok(Rows {
        truncated: total_groups > fetched.rows.len() as u64,
        columns,
        rows: fetched.rows,
        total_groups: if limit == 0 { 0 } else { total_groups },
        bytes: fetched.bytes,
    })
}

/// Runs a statement on a thread or task of its own, so that it ends at its deadline (and
/// gives its connection back) even when the caller's future is dropped first.
async fn spawn_execute(
    store: &ReportStore,
    compiled: Compiled,
    allowance: Allowance,
) -> Result<Fetched, QueryError> {
    match store {
        ReportStore::Sqlite(reads) => execute_sqlite(reads, compiled, allowance).await,
        ReportStore::Postgres(reads) => {
            let reads = reads.clone();
            tokio::spawn(async move { execute_postgres(&reads, &compiled, allowance).await })
                .await
                .map_err(|e| unavailable(&e))?
        }
    }
}

/// What a statement delivered.
struct Fetched {
    rows: Vec<Vec<Value>>,
    total: u64,
    bytes: u64,
}

/// Decoded size of a value, as counted against the bytes allowance.
fn value_bytes(v: &Value) -> u64 {
    match v {
        Value::Null | Value::Boolean(_) => 1,
        Value::Integer(_) => 8,
        Value::Decimal(s) | Value::Text(s) | Value::Timestamp(s) => s.len() as u64 + 8,
    }
}

fn timed_out(allowance: &Allowance) -> QueryError {
    QueryError::Timeout(format!(
        "the query was stopped at its deadline ({} ms of database time were left)",
        allowance
            .deadline
            .saturating_duration_since(Instant::now())
            .as_millis()
    ))
}

/// Rows and bytes delivered so far, checked against the allowance as each row is decoded.
struct Intake {
    rows: Vec<Vec<Value>>,
    total: u64,
    bytes: u64,
    allowance: Allowance,
}

impl Intake {
    fn new(allowance: Allowance) -> Intake {
        Intake {
            rows: Vec::new(),
            total: 0,
            bytes: 0,
            allowance,
        }
    }

    /// What the statement delivered.
    fn finish(self) -> Fetched {
        Fetched {
            rows: self.rows,
            total: self.total,
            bytes: self.bytes,
        }
    }

    fn push(&mut self, values: Vec<Value>, total: i64) -> Result<(), QueryError> {
        let bytes: u64 = values.iter().map(value_bytes).sum();
        self.bytes += bytes;
        if self.rows.len() as u64 >= self.allowance.max_rows {
            return Err(QueryError::TooLarge(format!(
                "the query returned more than the {} rows left in this call's budget",
                self.allowance.max_rows
            )));
        }
        if self.bytes > self.allowance.max_bytes {
            return Err(QueryError::TooLarge(format!(
                "the query returned more than the {} bytes left in this call's budget",
                self.allowance.max_bytes
            )));
        }
        self.total = total.max(0) as u64;
        self.rows.push(values);
        Ok(())
    }
}

/// How one attempt at a statement ended, when it did not deliver.
enum Failed {
    /// The statement's own outcome (deadline, limits, a database error): final.
    Final(QueryError),
    /// The connection turned out broken before a row arrived (the database restarted since
    /// the pool last used it): the statement may run again on another connection.
    Broken(sqlx::Error),
}

impl From<QueryError> for Failed {
    fn from(e: QueryError) -> Self {
        Failed::Final(e)
    }
}

/// Errors of the connection rather than of the statement: the socket or the driver failed, or
/// PostgreSQL said why it dropped the session (SQLSTATE class 08, or 57P01–57P03: the backend
/// was terminated, crashed or is restarting) before closing it.
fn is_broken(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Io(_) | sqlx::Error::Protocol(_) | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(d) => d
            .code()
            .is_some_and(|c| c.starts_with("08") || matches!(&*c, "57P01" | "57P02" | "57P03")),
        _ => false,
    }
}

/// Attempts at a statement whose connections turn out broken (the pool hands connections out
/// untested; a report statement only reads, so running it again is safe).
const ATTEMPTS: u32 = 3;

fn unavailable(e: &dyn std::fmt::Display) -> QueryError {
    tracing::error!(error = %e, "query failed");
    QueryError::Unavailable("the data store could not run the query".into())
}

/// The result column `i` of a SQLite row as the compiler typed it.
fn sqlite_value(row: &rusqlite::Row<'_>, i: usize, out: Out) -> Result<Value, QueryError> {
    use rusqlite::types::ValueRef;
    let v = row.get_ref(i).map_err(|e| unavailable(&e))?;
    Ok(match (out, v) {
        (_, ValueRef::Null) => Value::Null,
        (Out::Text, ValueRef::Text(t)) => Value::Text(String::from_utf8_lossy(t).into_owned()),
        (Out::Int | Out::Instant | Out::Decimal, ValueRef::Integer(n)) => out.of_integer(n),
        (out, v) => {
            return Err(undecodable(
                i,
                &format!("{:?} where {out:?} was expected", v.data_type()),
            ))
        }
    })
}

/// A statement on SQLite: stepped to its end on a blocking thread, stopped by the engine at
/// the deadline (report_store.rs).
async fn execute_sqlite(
    reads: &Arc<SqliteReads>,
    c: Compiled,
    allowance: Allowance,
) -> Result<Fetched, QueryError> {
    let deadline = allowance.deadline;
    let outcome = reads
        .run(deadline, move |conn| {
            let mut intake = Intake::new(allowance);
            let failed = |e: rusqlite::Error| {
                if Instant::now() >= deadline
                    || e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted)
                {
                    timed_out(&allowance)
                } else {
                    unavailable(&e)
                }
            };
            let mut statement = conn.prepare_cached(&c.sql).map_err(failed)?;
            let mut rows = statement
                .query(rusqlite::params_from_iter(&c.params))
                .map_err(failed)?;
            while let Some(row) = rows.next().map_err(failed)? {
                let values = c
                    .outs
                    .iter()
                    .enumerate()
                    .map(|(i, o)| sqlite_value(row, i, *o))
                    .collect::<Result<Vec<_>, _>>()?;
                let total = row.get::<_, Option<i64>>(c.outs.len()).ok().flatten();
                intake.push(values, total.unwrap_or(0))?;
            }
            Ok(intake.finish())
        })
        .await;
    match outcome {
        Ok(fetched) => fetched,
        Err(ReadError::Busy) => Err(timed_out(&allowance)),
        Err(e @ ReadError::Unavailable(_)) => Err(unavailable(&e)),
    }
}

/// A statement on PostgreSQL, run again on another connection when its pooled one turns out
/// broken before the first row.
async fn execute_postgres(
    reads: &Arc<PgReads>,
    c: &Compiled,
    allowance: Allowance,
) -> Result<Fetched, QueryError> {
    let mut attempt = 1;
    loop {
        match execute_postgres_once(reads, c, allowance).await {
            Ok(fetched) => return Ok(fetched),
            Err(Failed::Final(e)) => return Err(e),
            Err(Failed::Broken(e)) if attempt < ATTEMPTS && Instant::now() < allowance.deadline => {
                tracing::warn!(error = %e, attempt, "a pooled connection was broken; retrying the statement on another");
                // What broke one idle session (a restart, a proxy's idle timeout) most likely
                // broke the others too: the retry opens a fresh one.
                reads.forget_idle();
                attempt += 1;
            }
            Err(Failed::Broken(e)) => return Err(unavailable(&e)),
        }
    }
}

async fn execute_postgres_once(
    reads: &Arc<PgReads>,
    c: &Compiled,
    allowance: Allowance,
) -> Result<Fetched, Failed> {
    use futures_util::TryStreamExt as _;
    let mut intake = Intake::new(allowance);
    let left = || allowance.deadline.saturating_duration_since(Instant::now());
    let mut lease = match tokio::time::timeout(left(), reads.acquire()).await {
        Err(_) => return Err(timed_out(&allowance).into()),
        Ok(Err(e)) if is_broken(&e) => return Err(Failed::Broken(e)),
        Ok(Err(e)) => return Err(unavailable(&e).into()),
        Ok(Ok(lease)) => lease,
    };
    // The server stops the statement itself, at the session's `statement_timeout`; the
    // session keeps it for the next statement (report_store.rs), and serves nothing else.
    match lease.statement_timeout(session_timeout_ms(left())).await {
        Err(e) if is_broken(&e) => return Err(Failed::Broken(e)),
        Err(e) => return Err(unavailable(&e).into()),
        Ok(()) => {}
    }
    let numbered = number_placeholders(&c.sql);
    let mut query = sqlx::query(&numbered);
    for p in &c.params {
        query = match p {
            P::T(s) => query.bind(s.clone()),
            P::I(i) => query.bind(*i),
        };
    }
    let mut stream = query.fetch(lease.conn());
    loop {
        let row = match stream.try_next().await {
            Ok(Some(row)) => row,
            Ok(None) => break,
            Err(e) if is_pg_cancel(&e) => {
                // Stopped by the server: the session itself is sound.
                drop(stream);
                lease.release();
                return Err(timed_out(&allowance).into());
            }
            // A broken connection shows itself on the first exchange, before any row.
            Err(e) if is_broken(&e) && intake.rows.is_empty() => return Err(Failed::Broken(e)),
            Err(e) => return Err(unavailable(&e).into()),
        };
        let mut values = Vec::with_capacity(c.outs.len());
        for (i, o) in c.outs.iter().enumerate() {
            let v = match o {
                Out::Text => row
                    .try_get::<Option<String>, _>(i)
                    .map(|v| v.map(Value::Text)),
                Out::Int | Out::Instant | Out::Decimal => row
                    .try_get::<Option<i64>, _>(i)
                    .map(|v| v.map(|n| o.of_integer(n))),
            }
            .map_err(|e| undecodable(i, &e))?;
            values.push(v.unwrap_or(Value::Null));
        }
        let total: i64 = row.try_get(c.outs.len()).unwrap_or(0);
        intake.push(values, total)?;
    }
    drop(stream);
    lease.release();
    Ok(intake.finish())
}

/// PostgreSQL's `query_canceled` (57014), raised by `statement_timeout`.
fn is_pg_cancel(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.code().as_deref() == Some("57014"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Db;

    fn q(dataset: Dataset) -> Query {
        Query {
            dataset,
            filter: None,
            predicates: vec![],
            group_by: vec![],
            distinct_on: None,
            aggregates: vec![Aggregate::Count],
            order_by: vec![],
            limit: None,
        }
    }

    #[test]
    fn a_property_state_is_a_two_letter_code() {
        assert_eq!(state_code("ca").unwrap(), "CA");
        assert_eq!(state_code(" TX ").unwrap(), "TX");
        assert_eq!(
            state_code("California").unwrap_err(),
            "`California` is not a state code; use the two-letter code: `CA` for California"
        );
        assert_eq!(
            state_code("Calif.").unwrap_err(),
            "`Calif.` is not a two-letter state code (such as `CA` or `TX`)"
        );
        assert!(state_code("C1").is_err());
    }

    /// Every way a query can read a field checks the name-reading right, on both engines and
    /// under a caller's scope as well as organisation-wide: losing one (a predicate, say)
    /// would give a caller without the right a yes/no oracle on officer names.
    #[test]
    fn name_fields_are_refused_in_every_form_without_the_right() {
        let text = |s: &str| Value::Text(s.into());
        let on = |dataset: Dataset, edit: &dyn Fn(&mut Query)| {
            let mut query = q(dataset);
            edit(&mut query);
            query
        };
        let forms: Vec<(&str, Query)> = vec![
            (
                "predicate eq",
                on(Dataset::Loans, &|q| {
                    q.predicates = vec![("loanOfficerName".into(), Condition::Eq(text("Ann")))]
                }),
            ),
            (
                "predicate anyOf",
                on(Dataset::Loans, &|q| {
                    q.predicates =
                        vec![("processorName".into(), Condition::AnyOf(vec![text("Ann")]))]
                }),
            ),
            (
                "predicate isNotNull",
                on(Dataset::Loans, &|q| {
                    q.predicates = vec![("referringAgentName".into(), Condition::IsNotNull)]
                }),
            ),
            (
                "group-by",
                on(Dataset::Loans, &|q| {
                    q.group_by = vec![Key::Field("loanOfficerName".into())]
                }),
            ),
            (
                "mapped key",
                on(Dataset::Loans, &|q| {
                    q.group_by = vec![Key::Mapped(
                        "referringAgentName".into(),
                        vec![("Ann".into(), "A".into())],
                        Some("Other".into()),
                    )]
                }),
            ),
            (
                "min",
                on(Dataset::Loans, &|q| {
                    q.aggregates = vec![Aggregate::Min("loanOfficerName".into())]
                }),
            ),
            (
                "max",
                on(Dataset::Loans, &|q| {
                    q.aggregates = vec![Aggregate::Max("processorName".into())]
                }),
            ),
            (
                "count-distinct",
                on(Dataset::Loans, &|q| {
                    q.aggregates = vec![Aggregate::CountDistinct("loanOfficerName".into())]
                }),
            ),
            (
                "count-of",
                on(Dataset::Loans, &|q| {
                    q.aggregates = vec![Aggregate::CountOf("processorName".into())]
                }),
            ),
            (
                "distinctOn",
                on(Dataset::Loans, &|q| {
                    q.distinct_on = Some("loanOfficerName".into())
                }),
            ),
            (
                "loan. path group-by",
                on(Dataset::LosStatusHistory, &|q| {
                    q.group_by = vec![Key::Field("loan.loanOfficerName".into())]
                }),
            ),
            (
                "loan. path predicate",
                on(Dataset::LosStatusHistory, &|q| {
                    q.predicates = vec![("loan.processorName".into(), Condition::Eq(text("Ann")))]
                }),
            ),
            (
                "loan. path mapped, distinct loans per month",
                on(Dataset::LosStatusHistory, &|q| {
                    q.group_by = vec![
                        Key::Period("occurredAt".into(), PeriodUnit::Month),
                        Key::Mapped(
                            "loan.loanOfficerName".into(),
                            vec![("Ann".into(), "A".into())],
                            Some("Other".into()),
                        ),
                    ];
                    q.distinct_on = Some("loanId".into());
                }),
            ),
        ];
        let mine = Scope {
            originated_by: Some("me".into()),
            ..Default::default()
        };
        for (form, query) in &forms {
            for postgres in [false, true] {
                for scope in [&mine, &admin()] {
                    let refused = compile(query, Some(scope), false, postgres);
                    assert!(
                        matches!(&refused, Err(QueryError::Denied(m)) if m.ends_with("is readable only by callers with Admin, Processor or ConciergeKey")),
                        "{form} (postgres {postgres}, all {}): {:?}",
                        scope.all,
                        refused.map(|c| c.sql)
                    );
                    let allowed = compile(query, Some(scope), true, postgres);
                    assert!(
                        allowed.is_ok(),
                        "{form} with the right: {:?}",
                        allowed.err()
                    );
                }
            }
        }
    }

    #[test]
    fn scope_is_always_anded_for_loans() {
        let scope = Scope {
            originated_by: Some("me".into()),
            ..Default::default()
        };
        let c = compile(&q(Dataset::Loans), Some(&scope), false, false).unwrap();
        assert!(c.sql.contains("WHERE ((l.loan_officer_id = ? OR l.loan_assistant_id = ? OR l.referring_agent_id = ?))"), "{}", c.sql);
        assert!(
            compile(&q(Dataset::Loans), None, false, false).is_err(),
            "no scope, no query"
        );
    }

    fn admin() -> Scope {
        Scope {
            all: true,
            ..Default::default()
        }
    }

    fn agent() -> Scope {
        Scope {
            originated_by: Some("me".into()),
            ..Default::default()
        }
    }

    /// The milestone report's shape: window, period and mapped status, distinct loans, the
    /// loan's amount.
    fn milestones() -> Query {
        Query {
            predicates: vec![(
                "occurredAt".into(),
                Condition::Ge(Value::Timestamp("2026-01-01T00:00:00Z".into())),
            )],
            group_by: vec![
                Key::Period("occurredAt".into(), PeriodUnit::Month),
                Key::Mapped(
                    "milestone".into(),
                    vec![("Loan Open".into(), "1. Opened".into())],
                    Some("Other".into()),
                ),
            ],
            distinct_on: Some("loanId".into()),
            aggregates: vec![Aggregate::Count, Aggregate::Sum("loan.loanAmount".into())],
            ..q(Dataset::LosStatusHistory)
        }
    }

    #[test]
    fn history_is_read_alone_only_for_an_unfiltered_organisation_wide_query() {
        for postgres in [false, true] {
            // Admin, no filter: history rows alone, their carried amount, integer loan keys.
            let c = compile(&milestones(), Some(&admin()), true, postgres).unwrap();
            assert!(
                c.sql
                    .contains("FROM los_status_history h WHERE h.in_snapshot = 1 AND"),
                "{}",
                c.sql
            );
            assert!(
                c.sql.contains("h.loan_key AS dd") && c.sql.contains("h.loan_amount AS s1"),
                "{}",
                c.sql
            );
            assert!(!c.sql.contains("JOIN loans"), "{}", c.sql);

            // An Agent: joined, scoped on the loan.
            let c = compile(&milestones(), Some(&agent()), false, postgres).unwrap();
            assert!(
                c.sql
                    .contains("JOIN loans l ON l.key = h.loan_key WHERE ((l.loan_officer_id"),
                "{}",
                c.sql
            );
            assert!(
                c.sql.contains("l.loan_amount AS s1") && !c.sql.contains("in_snapshot"),
                "{}",
                c.sql
            );

            // An Admin with a filter, or reading another loan field: joined.
            let mut filtered = milestones();
            filtered.filter = Some(r#"{"statuses": ["Loan Open"]}"#.into());
            let c = compile(&filtered, Some(&admin()), true, postgres).unwrap();
            assert!(
                c.sql.contains("JOIN loans l") && c.sql.contains("l.status IN (?)"),
                "{}",
                c.sql
            );
            let mut other = milestones();
            other.aggregates.push(Aggregate::Max("loan.updated".into()));
            let c = compile(&other, Some(&admin()), true, postgres).unwrap();
            assert!(c.sql.contains("JOIN loans l"), "{}", c.sql);

            // An empty filter constrains nothing: still alone.
            let mut empty = milestones();
            empty.filter = Some(r#"{"statuses": [], "searchText": null}"#.into());
            let c = compile(&empty, Some(&admin()), true, postgres).unwrap();
            assert!(!c.sql.contains("JOIN loans"), "{}", c.sql);
        }
    }

    /// A bounded window of [`milestones`] (`to` exclusive).
    fn milestones_between(unit: PeriodUnit, from: &str, to: &str) -> Query {
        let mut q = milestones();
        q.group_by[0] = Key::Period("occurredAt".into(), unit);
        q.predicates = vec![
            (
                "occurredAt".into(),
                Condition::Ge(Value::Timestamp(from.into())),
            ),
            (
                "occurredAt".into(),
                Condition::Lt(Value::Timestamp(to.into())),
            ),
        ];
        q
    }

    #[test]
    fn whole_periods_count_the_period_sets() {
        use crate::data::history_keys::{month_index, week_index, STATUS_BITS};
        let ms = |s: &str| parse_instant(s).unwrap();
        for postgres in [false, true] {
            // Whole months: the months' sets, no history row, the stage bits.
            let q = milestones_between(
                PeriodUnit::Month,
                "2026-01-01T00:00:00Z",
                "2026-04-01T00:00:00Z",
            );
            let c = compile(&q, Some(&admin()), true, postgres).unwrap();
            let (jan, mar) = (month_index(ms("2026-01-15")), month_index(ms("2026-03-15")));
            assert!(
                c.sql.contains(&format!(
                    "FROM los_history_months r WHERE r.in_snapshot = 1 AND r.period_index >= {jan} AND r.period_index <= {mar}"
                )) && !c.sql.contains("los_status_history")
                    && !c.sql.contains("DISTINCT"),
                "{}",
                c.sql
            );
            let texts: Vec<&str> = c
                .params
                .iter()
                .filter_map(|p| match p {
                    P::T(t) => Some(t.as_str()),
                    P::I(_) => None,
                })
                .collect();
            assert_eq!(
                texts,
                ["2026-01", "2026-02", "2026-03", "1. Opened", "Other"]
            );
            // "Loan Open" is bit 2; "Other" is every other bit, the unlisted one included.
            assert!(c.sql.contains("CAST(4 AS"), "{}", c.sql);
            let other = (((1_i64 << STATUS_BITS.len()) - 1) & !4) | (1 << 62);
            assert!(c.sql.contains(&format!("CAST({other} AS")), "{}", c.sql);

            // Whole weeks, the bounds written as Gt/Le: the weeks' sets.
            let mut q = milestones_between(
                PeriodUnit::Week,
                "2026-01-05T00:00:00Z",
                "2026-01-26T00:00:00Z",
            );
            q.predicates[0].1 = Condition::Gt(Value::Timestamp("2026-01-04T23:59:59.999Z".into()));
            q.predicates[1].1 = Condition::Le(Value::Timestamp("2026-01-25T23:59:59.999Z".into()));
            let c = compile(&q, Some(&admin()), true, postgres).unwrap();
            let (first, last) = (week_index(ms("2026-01-05")), week_index(ms("2026-01-25")));
            assert_eq!(last - first, 2);
            assert!(
                c.sql.contains(&format!(
                    "FROM los_history_weeks r WHERE r.in_snapshot = 1 AND r.period_index >= {first} AND r.period_index <= {last}"
                )),
                "{}",
                c.sql
            );

            // Not these: an unlisted status in the map, no fallback label, quarters, a
            // distinct count, an unbounded window, part of a period, another predicate, a
            // field of the history row. They de-duplicate history rows.
            let whole = || milestones_between(PeriodUnit::Month, "2026-01-01", "2026-04-01");
            let generic = |q: &Query, scope: &Scope| {
                let c = compile(q, Some(scope), true, postgres).unwrap();
                !c.sql.contains("los_history_") && c.sql.contains("SELECT DISTINCT")
            };
            // The funnel of DESIGN.md §7.3, whose `Rate Locked` is a raw milestone, not a
            // loan status: still the plan.
            let mut funnel = whole();
            let stage = |v: &str, l: &str| (v.to_string(), l.to_string());
            funnel.group_by[1] = Key::Mapped(
                "milestone".into(),
                vec![
                    stage("Loan Open", "1. Opened"),
                    stage("Loan Preapproval", "2. Pre-Approved"),
                    stage("Rate Locked", "3. Rate Locked"),
                    stage("Loan Approved", "4. Approved"),
                    stage("Loan Clear To Close", "4. Approved"),
                    stage("Loan Closed", "5. Closed & Funded"),
                    stage("Loan Funded", "5. Closed & Funded"),
                ],
                Some("Other".into()),
            );
            assert!(!generic(&funnel, &admin()));
            // An Agent: the sets of the Agent's loans, joined by key; the loan's own amount.
            let c = compile(&whole(), Some(&agent()), false, postgres).unwrap();
            assert!(
                c.sql.contains(
                    "FROM los_history_months r JOIN loans l ON l.key = r.loan_key WHERE ((l.loan_officer_id"
                ) && c.sql.contains("SUM(l.loan_amount) AS p1")
                    && !c.sql.contains("los_status_history")
                    && !c.sql.contains("in_snapshot"),
                "{}",
                c.sql
            );
            let mut unlisted = whole();
            unlisted.group_by[1] = Key::Mapped(
                "milestone".into(),
                vec![("Submitted to investor".into(), "Sold".into())],
                Some("Other".into()),
            );
            assert!(generic(&unlisted, &admin()));
            let mut no_fallback = whole();
            no_fallback.group_by[1] = Key::Mapped(
                "milestone".into(),
                vec![("Loan Open".into(), "1. Opened".into())],
                None,
            );
            assert!(generic(&no_fallback, &admin()));
            let mut quarters = whole();
            quarters.group_by[0] = Key::Period("occurredAt".into(), PeriodUnit::Quarter);
            assert!(generic(&quarters, &admin()));
            let mut distinct = whole();
            distinct
                .aggregates
                .push(Aggregate::CountDistinct("loan.loanAmount".into()));
            assert!(generic(&distinct, &admin()));
            let mut row_field = whole();
            row_field
                .aggregates
                .push(Aggregate::Max("occurredAt".into()));
            assert!(generic(&row_field, &agent()));
            assert!(generic(&milestones(), &admin()));
            let part = milestones_between(PeriodUnit::Week, "2026-01-07", "2026-01-19");
            assert!(generic(&part, &admin()));
            let mut other = whole();
            other.predicates.push((
                "milestone".into(),
                Condition::Ne(Value::Text("Loan Open".into())),
            ));
            assert!(generic(&other, &admin()));
        }
    }

    #[test]
    fn a_loan_id_reads_back_as_its_uuid_and_counts_distinct_on_its_key() {
        let query = Query {
            group_by: vec![Key::Field("loanId".into())],
            aggregates: vec![Aggregate::CountDistinct("loanId".into())],
            ..q(Dataset::DwLoanMilestones)
        };
        let c = compile(&query, None, true, false).unwrap();
        assert!(
            c.sql
                .contains("(SELECT lk.id FROM loan_keys lk WHERE lk.key = m.loan_key) AS k0"),
            "{}",
            c.sql
        );
        assert!(
            c.sql.contains("m.loan_key AS s0") && c.sql.contains("COUNT(DISTINCT s0)"),
            "{}",
            c.sql
        );
    }

    #[test]
    fn a_whole_snapshot_group_by_on_a_covered_key_reads_the_index_in_order() {
        let by_status = Query {
            group_by: vec![Key::Field("status".into())],
            aggregates: vec![Aggregate::Count, Aggregate::Sum("loanAmount".into())],
            ..q(Dataset::Loans)
        };
        // SQLite, Admin: the key as is (the covering index serves it in order).
        let c = compile(&by_status, Some(&admin()), true, false).unwrap();
        assert!(c.sql.contains("SELECT l.status AS k0"), "{}", c.sql);
        // An Agent (scope predicate), or a field the index does not hold: kept off the index.
        let c = compile(&by_status, Some(&agent()), false, false).unwrap();
        assert!(c.sql.contains("SELECT +l.status AS k0"), "{}", c.sql);
        let mut by_state = by_status.clone();
        by_state
            .aggregates
            .push(Aggregate::Max("propertyState".into()));
        let c = compile(&by_state, Some(&admin()), true, false).unwrap();
        assert!(c.sql.contains("+l.status AS k0"), "{}", c.sql);
    }

    #[test]
    fn a_mapped_key_aggregates_raw_values_first_and_merges_the_partials() {
        let stages = Query {
            group_by: vec![Key::Mapped(
                "status".into(),
                vec![
                    ("Loan Open".into(), "Open".into()),
                    ("Loan Funded".into(), "Done".into()),
                ],
                Some("Other".into()),
            )],
            aggregates: vec![
                Aggregate::Count,
                Aggregate::CountOf("loanAmount".into()),
                Aggregate::Sum("loanAmount".into()),
                Aggregate::Min("loanAmount".into()),
                Aggregate::Max("loanAmount".into()),
            ],
            ..q(Dataset::Loans)
        };
        let c = compile(&stages, Some(&admin()), true, true).unwrap();
        assert!(
            c.sql.contains("SELECT CASE r0 WHEN ? THEN ? WHEN ? THEN ? ELSE ? END AS k0, CAST(SUM(p0) AS BIGINT) AS a0, CAST(SUM(p1) AS BIGINT) AS a1, CAST(SUM(p2) AS BIGINT) AS a2, MIN(p3) AS a3, MAX(p4) AS a4 FROM (SELECT l.status AS r0, COUNT(*) AS p0, COUNT(l.loan_amount) AS p1, SUM(l.loan_amount) AS p2, MIN(l.loan_amount) AS p3, MAX(l.loan_amount) AS p4 FROM loans l WHERE 1 = 1 GROUP BY r0) i GROUP BY k0"),
            "{}",
            c.sql
        );
        // The labels' parameters come first, as the statement's text has them.
        assert!(matches!(&c.params[0], P::T(v) if v == "Loan Open"));
        // A distinct count cannot be merged from partials: mapped row by row.
        let mut distinct = stages.clone();
        distinct
            .aggregates
            .push(Aggregate::CountDistinct("id".into()));
        let c = compile(&distinct, Some(&admin()), true, true).unwrap();
        assert!(c.sql.contains("CASE l.status WHEN"), "{}", c.sql);
    }

    /// A migrated SQLite database in a scratch file (report statements read files).
    async fn scratch_sqlite() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&format!("sqlite://{}", dir.path().join("t.db").display()))
            .await
            .unwrap();
        (dir, db)
    }

    #[tokio::test]
    async fn pre_aggregated_and_row_by_row_mapping_give_the_same_rows() {
        // Arrange: a few loans, two statuses to one label, nulls among the amounts.
        let (_dir, db) = scratch_sqlite().await;
        let Db::Sqlite(pool) = &db else {
            unreachable!()
        };
        for (n, status, amount) in [
            (1, "Loan Open", Some(10_000i64)),
            (2, "Loan Open", None),
            (3, "Loan Funded", Some(25_000)),
            (4, "Loan Closed", Some(7_000)),
            (5, "Loan Approved", Some(1_000)),
        ] {
            sqlx::query("INSERT INTO loan_keys (key, id) VALUES (?1, ?2)")
                .bind(n)
                .bind(format!("id-{n}"))
                .execute(pool)
                .await
                .unwrap();
            sqlx::query("INSERT INTO loans (key, id, search_key, status, loan_amount) VALUES (?1, ?2, '', ?3, ?4)")
                .bind(n)
                .bind(format!("id-{n}"))
                .bind(status)
                .bind(amount)
                .execute(pool)
                .await
                .unwrap();
        }
        let map = vec![
            ("Loan Funded".to_string(), "Done".to_string()),
            ("Loan Closed".to_string(), "Done".to_string()),
            ("Loan Open".to_string(), "Open".to_string()),
        ];
        let aggregates = vec![
            Aggregate::Count,
            Aggregate::CountOf("loanAmount".into()),
            Aggregate::Sum("loanAmount".into()),
            Aggregate::Min("loanAmount".into()),
            Aggregate::Max("loanAmount".into()),
        ];
        let merged = Query {
            group_by: vec![Key::Mapped(
                "status".into(),
                map.clone(),
                Some("Other".into()),
            )],
            aggregates: aggregates.clone(),
            ..q(Dataset::Loans)
        };
        // The same query with a distinct-on (each loan is its own row) is mapped row by row.
        let row_by_row = Query {
            distinct_on: Some("id".into()),
            ..merged.clone()
        };

        // Act
        let store = ReportStore::of(&db);
        let a = run(&store, &merged, Some(&admin()), true, Allowance::standard())
            .await
            .unwrap();
        let b = run(
            &store,
            &row_by_row,
            Some(&admin()),
            true,
            Allowance::standard(),
        )
        .await
        .unwrap();

        // Assert
        assert_eq!(a.rows, b.rows);
        assert_eq!(
            a.rows[0],
            vec![
                Value::Text("Done".into()),
                Value::Integer(2),
                Value::Integer(2),
                Value::Decimal("3.2".into()),
                Value::Decimal("0.7".into()),
                Value::Decimal("2.5".into()),
            ]
        );
        assert_eq!(a.rows[1][0], Value::Text("Open".into()));
        assert_eq!(
            a.rows[1][1..4],
            [
                Value::Integer(2),
                Value::Integer(1),
                Value::Decimal("1".into())
            ]
        );
    }

    #[tokio::test]
    async fn window_labels_equal_the_engines_own_formatting() {
        // Arrange: instants around year ends (ISO week 53 of 2026, week 1 of 2025 starting in
        // December 2024), quarter and month boundaries, a leap day.
        let (_dir, db) = scratch_sqlite().await;
        let Db::Sqlite(pool) = &db else {
            unreachable!()
        };
        let url = std::env::var("TEST_POSTGRES_URL")
            .expect("TEST_POSTGRES_URL is not set: run `make test` (scripts/postgres.sh)");
        let pg = sqlx::PgPool::connect(&url).await.unwrap();
        let instants: Vec<i64> = [
            "2024-12-29T23:59:59.999Z",
            "2024-12-30T00:00:00Z",
            "2025-01-01T12:00:00Z",
            "2025-03-31T23:59:59.999Z",
            "2025-04-01T00:00:00Z",
            "2026-12-28T00:00:00Z",
            "2027-01-03T23:59:59Z",
            "2027-01-04T00:00:00Z",
            "2028-02-29T12:00:00Z",
        ]
        .iter()
        .map(|s| parse_instant(s).unwrap())
        .collect();
        let (lo, hi) = (instants[0], *instants.last().unwrap());
        for unit in [
            PeriodUnit::Week,
            PeriodUnit::Month,
            PeriodUnit::Quarter,
            PeriodUnit::Year,
        ] {
            // Act
            let periods = periods_between(lo, hi, unit).unwrap_or_else(|| {
                assert_eq!(
                    unit,
                    PeriodUnit::Week,
                    "only weeks exceed the window cap here"
                );
                periods_between(lo, lo + 30 * 86_400_000, unit).unwrap()
            });
            let compiler = |postgres| Compiler {
                dataset: Dataset::Loans,
                can_read_names: true,
                postgres,
                params: vec![],
                history_only: false,
                covered_group: false,
                bounds: Default::default(),
            };
            let sqlite_sql = format!("SELECT {}", compiler(false).period("?1", unit));
            let postgres_sql = format!("SELECT {}", compiler(true).period("$1::bigint", unit));
            for ms in instants
                .iter()
                .copied()
                .filter(|ms| *ms < periods.ends.last().unwrap().0)
            {
                let sqlite: String = sqlx::query_scalar(&sqlite_sql)
                    .bind(ms)
                    .fetch_one(pool)
                    .await
                    .unwrap();
                let postgres: String = sqlx::query_scalar(&postgres_sql)
                    .bind(ms)
                    .fetch_one(&pg)
                    .await
                    .unwrap();
                // Assert: the period whose end first exceeds the instant has each engine's
                // label (which is what rows outside a window, or in an unbounded one, get).
                assert!(ms >= periods.start);
                let label = &periods.ends.iter().find(|(end, _)| ms < *end).unwrap().1;
                assert_eq!(label, &sqlite, "SQLite: {unit:?} at {ms}");
                assert_eq!(label, &postgres, "PostgreSQL: {unit:?} at {ms}");
            }
        }
        // A window of more than 64 periods is formatted row by row.
        assert!(periods_between(lo, hi, PeriodUnit::Week).is_none());
    }

    #[test]
    fn strings_never_reach_sql_text() {
        // Arrange: a different hostile text in every place a string can enter.
        // (searchText is split at whitespace into tokens: its text is one token.)
        let evil = |n: u32| match n {
            1 => "x1');drop--table".to_string(),
            _ => format!("x{n}'); drop table loans; --"),
        };
        let mut query = q(Dataset::Loans);
        // (The filter's propertyState takes two letters only; a predicate takes any text.)
        query.filter = Some(serde_json::json!({"searchText": evil(1)}).to_string());
        query
            .predicates
            .push(("propertyState".into(), Condition::Eq(Value::Text(evil(3)))));
        query
            .predicates
            .push(("loanNumber".into(), Condition::Eq(Value::Text(evil(4)))));
        query
            .predicates
            .push(("status".into(), Condition::Ne(Value::Text(evil(2)))));
        query.group_by.push(Key::Mapped(
            "status".into(),
            vec![(evil(5), evil(6))],
            Some(evil(7)),
        ));
        for postgres in [false, true] {
            // Act
            let c = compile(
                &query,
                Some(&Scope {
                    all: true,
                    ..Default::default()
                }),
                true,
                postgres,
            )
            .unwrap();

            // Assert: no input text in the SQL, every input in a bound parameter, and as many
            // placeholders as parameters.
            let texts: Vec<&str> = c
                .params
                .iter()
                .filter_map(|p| match p {
                    P::T(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect();
            for n in 1..=7 {
                let e = evil(n);
                assert!(
                    !c.sql.to_lowercase().contains(&format!("x{n}'")),
                    "{}",
                    c.sql
                );
                assert!(
                    texts
                        .iter()
                        .any(|t| t.to_lowercase().contains(&e.to_lowercase())),
                    "input {n} is not a parameter: {texts:?}"
                );
            }
            assert!(!c.sql.contains("--") && !c.sql.contains(';'), "{}", c.sql);
            // (`?` is numbered `$n` for PostgreSQL when the statement is bound.)
            let placeholders = c.sql.matches('?').count();
            assert_eq!(placeholders, c.params.len(), "{}", c.sql);
        }
    }

    #[test]
    fn unknown_fields_and_restricted_names() {
        let mut query = q(Dataset::Loans);
        query.group_by.push(Key::Field("borrowerSsn".into()));
        let all = Scope {
            all: true,
            ..Default::default()
        };
        assert!(
            matches!(compile(&query, Some(&all), true, false), Err(QueryError::Invalid(m)) if m.starts_with("unknown field `borrowerSsn`"))
        );
        let mut query = q(Dataset::Loans);
        query.group_by.push(Key::Field("loanOfficerName".into()));
        assert!(matches!(
            compile(&query, Some(&all), false, false),
            Err(QueryError::Denied(_))
        ));
        assert!(compile(&query, Some(&all), true, false).is_ok());
    }

    /// A statement that never ends on its own, and one that ends at once.
    fn endless_and_quick(postgres: bool) -> (Compiled, Compiled) {
        let endless = if postgres {
            "SELECT COUNT(*), 0 FROM generate_series(1, 1000000000000) g"
        } else {
            // 20M rows: seconds even in an optimized build, far past the 300 ms deadline, yet
            // finite, so that a test failing because it was not stopped still ends (the
            // runtime waits for its blocking thread on the way out).
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000000) SELECT COUNT(*), 0 FROM c"
        };
        let c = |sql: &str| Compiled {
            sql: sql.into(),
            params: vec![],
            outs: vec![Out::Int],
            columns: vec!["agg0".into()],
            limit: 1,
        };
        (c(endless), c("SELECT CAST(1 AS BIGINT), CAST(1 AS BIGINT)"))
    }

    /// Runs the endless statement with a 300 ms deadline, abandoning its future after 50 ms
    /// as a timed-out caller would; then the pool's only connection must be free at once.
    async fn stops_at_deadline_and_frees_the_connection(db: ReportStore, postgres: bool) {
        let (endless, quick) = endless_and_quick(postgres);
        let allowance = Allowance {
            deadline: Instant::now() + Duration::from_millis(300),
            max_rows: 10,
            max_bytes: 1000,
        };
        let started = Instant::now();
        let r = tokio::time::timeout(
            Duration::from_secs(5),
            spawn_execute(&db, endless.clone(), allowance),
        )
        .await
        .expect("the engine did not stop the statement at its deadline");
        assert!(matches!(r, Err(QueryError::Timeout(_))), "{:?}", r.err());
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );

        let allowance = Allowance {
            deadline: Instant::now() + Duration::from_millis(300),
            ..allowance
        };
        let abandoned = tokio::time::timeout(
            Duration::from_millis(50),
            spawn_execute(&db, endless, allowance),
        )
        .await;
        assert!(abandoned.is_err(), "the endless statement ended early");
        let quick_run = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            spawn_execute(&db, quick, Allowance::standard()).await
        };
        let r = tokio::time::timeout(Duration::from_secs(2), quick_run)
            .await
            .expect("the connection was not given back after the deadline");
        assert_eq!(r.unwrap().rows, vec![vec![Value::Integer(1)]]);
    }

    #[tokio::test]
    async fn a_sqlite_statement_stops_at_its_deadline() {
        let (dir, _db) = scratch_sqlite().await;
        let one = SqliteReads::with_connections(&dir.path().join("t.db"), 1);
        stops_at_deadline_and_frees_the_connection(ReportStore::Sqlite(Arc::new(one)), false).await;
    }

    #[tokio::test]
    async fn a_postgres_statement_stops_at_its_deadline() {
        let url = std::env::var("TEST_POSTGRES_URL")
            .expect("TEST_POSTGRES_URL is not set: run `make test` (scripts/postgres.sh)");
        let one = PgReads::new(url.parse().unwrap(), 1);
        stops_at_deadline_and_frees_the_connection(ReportStore::Postgres(Arc::new(one)), true)
            .await;
    }

    #[test]
    fn input_caps_name_the_limit() {
        let all = Scope {
            all: true,
            ..Default::default()
        };
        let mut query = q(Dataset::Loans);
        query.filter = Some(json_filter("searchText", "a b c d e f g h i"));
        assert_eq!(
            compile(&query, Some(&all), true, false).err(),
            Some(QueryError::Invalid(
                "filter: `searchText` has 9 words; at most 8 are allowed".into()
            ))
        );
        let mut query = q(Dataset::Loans);
        query
            .group_by
            .push(Key::Mapped("status".into(), vec![], Some("x".repeat(65))));
        assert_eq!(
            compile(&query, Some(&all), true, false).err(),
            Some(QueryError::Invalid(
                "mapping of `status`: a label of 65 bytes is longer than the 64 allowed".into()
            ))
        );
        let mut query = q(Dataset::Loans);
        query.predicates.push((
            "status".into(),
            Condition::AnyOf(vec![Value::Text("Closed".into()); 201]),
        ));
        assert_eq!(
            compile(&query, Some(&all), true, false).err(),
            Some(QueryError::Invalid(
                "field `status`: any-of has 201 values; at most 200 are allowed".into()
            ))
        );
    }

    #[test]
    fn a_map_without_entries_is_its_fallback() {
        let all = Scope {
            all: true,
            ..Default::default()
        };
        let mut query = q(Dataset::Loans);
        query
            .group_by
            .push(Key::Mapped("status".into(), vec![], Some("Other".into())));
        let c = compile(&query, Some(&all), true, false).unwrap();
        assert!(c.sql.contains("CAST(? AS TEXT) AS k0"), "{}", c.sql);
        assert!(!c.sql.contains("CASE"), "{}", c.sql);
    }

    fn json_filter(key: &str, value: &str) -> String {
        serde_json::json!({ key: value }).to_string()
    }

    #[test]
    fn filter_errors_name_the_field() {
        let mut query = q(Dataset::Loans);
        query.filter = Some(r#"{"loanAmountMin": "lots"}"#.into());
        let all = Scope {
            all: true,
            ..Default::default()
        };
        assert_eq!(
            compile(&query, Some(&all), true, false).err(),
            Some(QueryError::Invalid(
                "filter: `loanAmountMin`: `lots` is not a decimal number".into()
            ))
        );
        query.filter = Some(r#"{"officer": 1}"#.into());
        assert!(
            matches!(compile(&query, Some(&all), true, false), Err(QueryError::Invalid(m)) if m.starts_with("filter: unknown field `officer`"))
        );
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        const FILTER_KEYS: [&str; 19] = [
            "searchText",
            "statuses",
            "loanTypes",
            "purposes",
            "statusDateFrom",
            "statusDateTo",
            "closingDateFrom",
            "closingDateTo",
            "updatedFrom",
            "updatedTo",
            "loanOfficerIds",
            "referringAgentId",
            "processorId",
            "loanAmountMin",
            "loanAmountMax",
            "commissionMin",
            "commissionMax",
            "propertyState",
            "officer",
        ];

        /// Hostile text: quotes, comment markers, placeholders, wildcards, unicode.
        fn text() -> impl Strategy<Value = String> {
            prop_oneof![
                "[a-zA-Z0-9 '\"%_\\\\;?$-]{0,24}",
                Just("x'); DROP TABLE loans; --".to_string()),
                Just("2026-01-31".to_string()),
                Just("00000000-0000-0000-0000-0000000000b2".to_string()),
                Just("12.5".to_string()),
                ".{0,8}",
            ]
        }

        fn filter_value() -> impl Strategy<Value = serde_json::Value> {
            prop_oneof![
                text().prop_map(serde_json::Value::String),
                prop::collection::vec(text(), 0..4).prop_map(|v| serde_json::json!(v)),
                any::<i32>().prop_map(|i| serde_json::json!(i)),
                Just(serde_json::Value::Null),
                Just(serde_json::json!({"nested": true})),
            ]
        }

        fn filter() -> impl Strategy<Value = String> {
            prop::collection::vec(
                (prop::sample::select(FILTER_KEYS.to_vec()), filter_value()),
                0..6,
            )
            .prop_map(|kv| {
                serde_json::Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
                    .to_string()
            })
        }

        fn key() -> impl Strategy<Value = Key> {
            let field = prop::sample::select(vec![
                "status",
                "loanType",
                "statusDate",
                "loanOfficerName",
                "nope",
                "loanAmount",
            ]);
            prop_oneof![
                field.clone().prop_map(|f| Key::Field(f.to_string())),
                field
                    .clone()
                    .prop_map(|f| Key::Period(f.to_string(), PeriodUnit::Week)),
                (
                    field,
                    prop::collection::vec((text(), text()), 0..3),
                    prop::option::of(text())
                )
                    .prop_map(|(f, e, o)| Key::Mapped(f.to_string(), e, o)),
            ]
        }

        proptest! {
            #[test]
            fn fuzz_compiled_sql_holds_no_input_text(
                filter in prop::option::of(filter()),
                keys in prop::collection::vec(key(), 0..3),
                value in text(),
                postgres in any::<bool>(),
                names in any::<bool>(),
            ) {
                let mut query = q(Dataset::Loans);
                query.filter = filter;
                query.group_by = keys;
                query.predicates.push(("loanNumber".into(), Condition::Eq(Value::Text(value))));
                let scope = Scope { originated_by: Some("00000000-0000-0000-0000-0000000000b2".into()), ..Default::default() };
                match compile(&query, Some(&scope), names, postgres) {
                    Ok(c) => {
                        // Every value is a bound parameter: as many `?` as parameters, and no
                        // parameter's text in the SQL.
                        prop_assert_eq!(c.sql.matches('?').count(), c.params.len());
                        for p in &c.params {
                            if let P::T(t) = p {
                                let t = t.trim_matches('%');
                                if t.len() >= 4 && t.chars().any(|ch| !ch.is_ascii_alphanumeric() || ch.is_ascii_uppercase()) {
                                    prop_assert!(!c.sql.contains(t), "{} in {}", t, c.sql);
                                }
                            }
                        }
                        prop_assert!(c.sql.contains("l.loan_officer_id = ?"), "scope missing: {}", c.sql);
                    }
                    Err(QueryError::Invalid(m) | QueryError::Denied(m)) => prop_assert!(!m.is_empty()),
                    Err(e) => prop_assert!(false, "unexpected error {e:?}"),
                }
            }
        }
    }
}
