//! Listing: a page of rows of the loan snapshot, or of the loan applications joined to their
//! loans (the listing capability of `loan:reporting@1.2.0`), the caller's scope AND-ed in by `scoped::where_clause` as for every
//! report, ordered by one of the spec's `orderByOptions` with the loan's key breaking ties,
//! and paged by keyset: a page starts after the position the last one ended at, never at an
//! offset. Rows whose order value is null come last in either direction (their own statement,
//! by key), so each statement reads an index in order. Every row carries the snapshot's
//! generation (schema v17): a page is refused when its rows come from another snapshot than
//! the position it continues, so a walk never skips or repeats a row.

use super::columns::{out_of, Out, P};
use super::compiled::Compiled;
use super::compiler::Compiler;
use super::intake::Allowance;
use super::ir::{Condition, Query, QueryError, Value};
use super::plan::filter_first;
use super::scoped::where_clause;
use super::spawn_execute;
use crate::data::catalog::Dataset;
use crate::data::cursor::Position;
use crate::data::report_store::{Plans, ReportStore};
use crate::data::scope::Scope;

/// Rows a page holds at most.
pub const MAX_PAGE_SIZE: u32 = 100;
/// Fields a list may name at most.
pub const MAX_LIST_FIELDS: usize = 32;

/// The orders a list may take: the spec's `orderByOptions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListOrder {
    /// `updated`: when the loan last changed.
    Updated,
    /// `statusDate`: when the loan entered its status.
    StatusDate,
    /// `amount`: the loan amount.
    Amount,
    /// `closingDate`: the estimated closing date.
    ClosingDate,
    /// `commission`: the locked compensation (the filter's `commissionMin`/`commissionMax`).
    Commission,
}

impl ListOrder {
    /// Every order, as the spec lists them.
    pub const ALL: [ListOrder; 5] = [
        ListOrder::Updated,
        ListOrder::StatusDate,
        ListOrder::Amount,
        ListOrder::ClosingDate,
        ListOrder::Commission,
    ];

    /// The spec's name (`orderByOptions`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ListOrder::Updated => "updated",
            ListOrder::StatusDate => "statusDate",
            ListOrder::Amount => "amount",
            ListOrder::ClosingDate => "closingDate",
            ListOrder::Commission => "commission",
        }
    }

    /// The order of a spec name.
    pub fn parse(name: &str) -> Option<ListOrder> {
        ListOrder::ALL.into_iter().find(|o| o.as_str() == name)
    }

    /// The catalog field it orders by (which a list's grant must name).
    pub const fn field(self) -> &'static str {
        match self {
            ListOrder::Updated => "updated",
            ListOrder::StatusDate => "statusDate",
            ListOrder::Amount => "loanAmount",
            ListOrder::ClosingDate => "estimatedClosingDate",
            ListOrder::Commission => "lockedCompensation",
        }
    }

    /// The snapshot's column it orders by (stored as an integer: epoch ms, or ×10⁴).
    const fn column(self) -> &'static str {
        match self {
            ListOrder::Updated => "l.updated",
            ListOrder::StatusDate => "l.status_date",
            ListOrder::Amount => "l.loan_amount",
            ListOrder::ClosingDate => "l.estimated_closing_date",
            ListOrder::Commission => "l.locked_compensation",
        }
    }
}

/// A list a plugin asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct ListQuery {
    /// The dataset: `loans` or `loan-applications` (the two the listing capability pages).
    pub dataset: Dataset,
    /// The spec's `filter` object, as text.
    pub filter: Option<String>,
    /// Further predicates, AND-ed with the filter and the scope.
    pub predicates: Vec<(String, Condition)>,
    /// The fields of each row, in order.
    pub fields: Vec<String>,
    /// The order.
    pub order: ListOrder,
    /// Highest first (null values still last).
    pub descending: bool,
    /// Rows of this page, 1 to [`MAX_PAGE_SIZE`].
    pub page_size: u32,
}

impl ListQuery {
    /// The query's predicates and filter as an aggregate query's (what the grant and the
    /// `WHERE` builder read).
    pub fn as_query(&self) -> Query {
        Query {
            dataset: self.dataset,
            filter: self.filter.clone(),
            predicates: self.predicates.clone(),
            group_by: vec![],
            distinct_on: None,
            aggregates: vec![],
            order_by: vec![],
            limit: None,
        }
    }
}

/// A page.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// The fields, as asked.
    pub columns: Vec<String>,
    /// The rows, one value per field.
    pub rows: Vec<Vec<Value>>,
    /// Where the next page starts, when there is one.
    pub next: Option<Position>,
    /// The id of each row's loan (for the audit line; the rows hold only the fields asked).
    pub loan_ids: Vec<String>,
    /// Decoded bytes of the rows (counted against the call's budget).
    pub bytes: u64,
}

/// Which of the fields that name a person the caller may read in a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Readers {
    /// Officer, processor and referrer names (Admin, Processor, ConciergeKey).
    pub names: bool,
    /// Borrowers' names ([`crate::identity::Identity::can_read_borrower_names`]).
    pub borrowers: bool,
}

impl Readers {
    /// What `caller` may read.
    pub fn of(caller: &crate::identity::Identity) -> Readers {
        Readers {
            names: caller.can_read_names(),
            borrowers: caller.can_read_borrower_names(),
        }
    }
}

/// Why a page was not given.
#[derive(Debug, Clone, PartialEq)]
pub enum ListError {
    /// As a query is refused.
    Query(QueryError),
    /// The snapshot changed since the page the position comes from: the list must start again.
    Changed,
}

impl From<QueryError> for ListError {
    fn from(e: QueryError) -> Self {
        ListError::Query(e)
    }
}

/// Which rows a statement reads: those with an order value, or the null ones.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Values,
    Nulls,
}

/// A page of `q` for a caller, after `after` (the first page without one).
pub async fn list(
    store: &ReportStore,
    q: &ListQuery,
    after: Option<Position>,
    scope: Option<&Scope>,
    readers: Readers,
    allowance: Allowance,
) -> Result<Listed, ListError> {
    check(q)?;
    let postgres = matches!(store, ReportStore::Postgres(_));
    let want = q.page_size as usize + 1;
    let mut rows: Vec<(Vec<Value>, Option<i64>, String, i64)> = Vec::with_capacity(want);
    let mut generation = after.map(|p| p.generation);
    let mut bytes = 0;
    let phases: &[Phase] = match after {
        Some(p) if p.nulls => &[Phase::Nulls],
        _ => &[Phase::Values, Phase::Nulls],
    };
    for &phase in phases {
        let start = after.filter(|p| p.nulls == (phase == Phase::Nulls));
        let compiled = compile(q, phase, start, want - rows.len(), scope, readers, postgres)?;
        let fetched = spawn_execute(store, compiled, allowance).await?;
        if !fetched.rows.is_empty() {
            let read = fetched.total as i64;
            if generation.is_some_and(|g| g != read) {
                return Err(ListError::Changed);
            }
            generation = Some(read);
        }
        bytes += fetched.bytes;
        for mut row in fetched.rows {
            let (Some(Value::Integer(key)), Some(Value::Text(id))) = (row.pop(), row.pop()) else {
                return Err(QueryError::Unavailable("a listed row has no key".into()).into());
            };
            let value = match row.pop() {
                Some(Value::Integer(v)) => Some(v),
                _ => None,
            };
            rows.push((row, value, id, key));
        }
        if rows.len() >= want {
            break;
        }
    }
    // A continued list that read nothing: the end, or another snapshot without those rows.
    if let (Some(p), true) = (after, rows.is_empty()) {
        if current_generation(store, allowance).await? != p.generation {
            return Err(ListError::Changed);
        }
    }
    let more = rows.len() > q.page_size as usize;
    rows.truncate(q.page_size as usize);
    let next = match (more, rows.last(), generation) {
        (true, Some((_, value, _, key)), Some(generation)) => Some(Position {
            generation,
            nulls: value.is_none(),
            value: *value,
            key: *key,
        }),
        _ => None,
    };
    let (rows, loan_ids) = rows.into_iter().map(|(row, _, id, _)| (row, id)).unzip();
    Ok(Listed {
        columns: q.fields.clone(),
        rows,
        next,
        loan_ids,
        bytes,
    })
}

/// The column a list is ordered by: the loan's, or for applications their own `updated` (the
/// one order they take).
fn order_column(q: &ListQuery) -> Result<&'static str, QueryError> {
    match (q.dataset, q.order) {
        (Dataset::LoanApplications, ListOrder::Updated) => Ok("a.updated"),
        (Dataset::LoanApplications, other) => Err(QueryError::Invalid(format!(
            "a list of `loan-applications` is ordered by `updated` only, not `{}`",
            other.as_str()
        ))),
        (_, order) => Ok(order.column()),
    }
}

/// The shape rules of a list, before any SQL.
fn check(q: &ListQuery) -> Result<(), QueryError> {
    if !matches!(q.dataset, Dataset::Loans | Dataset::LoanApplications) {
        return Err(QueryError::Invalid(format!(
            "dataset `{}` cannot be listed; only `loans` and `loan-applications` are",
            q.dataset.as_str()
        )));
    }
    order_column(q)?;
    if q.page_size == 0 || q.page_size > MAX_PAGE_SIZE {
        return Err(QueryError::Invalid(format!(
            "a page holds 1 to {MAX_PAGE_SIZE} rows; {} were asked for",
            q.page_size
        )));
    }
    if q.fields.is_empty() || q.fields.len() > MAX_LIST_FIELDS {
        return Err(QueryError::Invalid(format!(
            "a list names 1 to {MAX_LIST_FIELDS} fields; {} were named",
            q.fields.len()
        )));
    }
    Ok(())
}

/// One phase's statement: the fields, then the order value, the loan's id and key, then (as
/// the executors read a statement's count of groups) the snapshot's generation.
fn compile(
    q: &ListQuery,
    phase: Phase,
    start: Option<Position>,
    limit: usize,
    scope: Option<&Scope>,
    readers: Readers,
    postgres: bool,
) -> Result<Compiled, QueryError> {
    let base = q.as_query();
    let mut c = Compiler {
        dataset: q.dataset,
        can_read_names: readers.names,
        lists_borrowers: readers.borrowers,
        postgres,
        params: vec![],
        history_only: false,
        covered_group: false,
        scope_first: scope.is_some_and(|s| !s.all),
        personal: scope.is_some_and(Scope::is_personal),
        scope_order: None,
        bounds: Default::default(),
    };
    let mut select = Vec::with_capacity(q.fields.len() + 3);
    let mut outs = Vec::with_capacity(q.fields.len() + 2);
    for name in &q.fields {
        let f = c.field(name)?;
        select.push(f.column.to_string());
        outs.push(out_of(f.ty));
    }
    // A person's few hundred loans, on PostgreSQL: the order as an expression, which no index
    // holds, so the scope's indexes find the loans and a top-N sort orders them. A generic plan
    // (a session's sixth run of the statement) otherwise walks the order's index backwards
    // through the whole snapshot looking for the person's loans: 15 ms against 0.4 ms at 50,000
    // loans (`make bench`'s `listing`).
    let column = match postgres && scope.is_some_and(Scope::is_personal) {
        true => format!("(+{})", order_column(q)?),
        false => order_column(q)?.to_string(),
    };
    select.push(column.clone());
    select.push("l.id".into());
    select.push("l.key".into());
    outs.extend([Out::Int, Out::Text, Out::Int]);
    select.push("(SELECT s.generation FROM listing_state s WHERE s.id = 1)".into());
    let (filter_sql, filter_params) = filter_first(&mut c, &base)?;
    let (mut where_sql, mut params) =
        where_clause(&mut c, &base, scope, filter_sql, filter_params)?;
    let (cmp, dir) = if q.descending {
        ("<", "DESC")
    } else {
        (">", "ASC")
    };
    let mut more = Vec::with_capacity(2);
    match (phase, start) {
        (Phase::Values, None) => more.push(format!("{column} IS NOT NULL")),
        (Phase::Values, Some(p)) => {
            more.push(format!("{column} IS NOT NULL"));
            more.push(format!("({column}, l.key) {cmp} (?, ?)"));
            params.push(P::I(p.value.unwrap_or_default()));
            params.push(P::I(p.key));
        }
        (Phase::Nulls, None) => more.push(format!("{column} IS NULL")),
        (Phase::Nulls, Some(p)) => {
            more.push(format!("{column} IS NULL"));
            more.push(format!("l.key {cmp} ?"));
            params.push(P::I(p.key));
        }
    }
    let joined = more.join(" AND ");
    if where_sql.is_empty() {
        where_sql = format!(" WHERE {joined}");
    } else {
        where_sql.push_str(&format!(" AND {joined}"));
    }
    let order = match phase {
        Phase::Values => format!("{column} {dir}, l.key {dir}"),
        Phase::Nulls => format!("l.key {dir}"),
    };
    let sql = format!(
        "SELECT {} FROM {}{where_sql} ORDER BY {order} LIMIT {limit}",
        select.join(", "),
        c.tables()
    );
    Ok(Compiled {
        sql,
        params,
        outs,
        columns: q.fields.clone(),
        limit: limit as u32,
        fold: None,
        order: None,
        full: None,
        plans: Plans::PerCall,
    })
}

/// The snapshot's generation now.
async fn current_generation(store: &ReportStore, allowance: Allowance) -> Result<i64, ListError> {
    let compiled = Compiled {
        sql: "SELECT s.generation, s.generation FROM listing_state s WHERE s.id = 1".into(),
        params: vec![],
        outs: vec![Out::Int],
        columns: vec!["generation".into()],
        limit: 1,
        fold: None,
        order: None,
        full: None,
        plans: Plans::PerCall,
    };
    Ok(spawn_execute(store, compiled, allowance).await?.total as i64)
}
