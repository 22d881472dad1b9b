//! The host's order of a person's groups: the statement groups without an order, a total or a
//! limit, and the host orders, counts and limits its few groups as `statement::finish` does
//! in SQL. For a caller whose scope is a person's few hundred loans the wrapping cost more
//! than the grouping (a ConciergeKey's 455 loans by referrer, 171 groups, on PostgreSQL:
//! the materialised groups, their count and their sort 0.3-0.5 ms of a 1.0-1.2 ms statement).

use super::*;

/// Most groups the host orders itself; a statement with more asks for its `full` one, which
/// orders, counts and limits in SQL ([`HostOrder::needs_full`]).
pub(super) const HOST_ORDER_GROUPS: usize = ROW_CAP as usize;

/// Orders the rows of a grouped statement (keys, then aggregates, every non-text column as
/// its integer), counts and limits them, and labels each integer by its kind. Built by the
/// planner, copied fresh for every attempt at the statement.
#[derive(Debug, Clone)]
pub(super) struct HostOrder {
    /// Each column's kind: how its integer becomes the answer's value, after the order.
    outs: Vec<Out>,
    /// How many leading columns are the group keys.
    keys: usize,
    order_by: Vec<(u32, bool)>,
    limit: u32,
    /// Most groups it orders ([`HOST_ORDER_GROUPS`]; the statement stops one group past it).
    pub(super) cap: usize,
    rows: Vec<Vec<Value>>,
    /// More than `cap` groups arrived.
    over: bool,
}

impl HostOrder {
    /// An order for `q`'s result columns of kinds `outs`.
    pub(super) fn new(q: &Query, outs: Vec<Out>) -> HostOrder {
        HostOrder {
            outs,
            keys: q.group_by.len(),
            order_by: q.order_by.clone(),
            limit: limit_of(q),
            cap: HOST_ORDER_GROUPS,
            rows: Vec::new(),
            over: false,
        }
    }

    /// The kinds the statement's columns are decoded as: text as text, every other column as
    /// its integer (an instant's, a decimal's or a week's order is its integer's).
    pub(super) fn raw_outs(outs: &[Out]) -> Vec<Out> {
        outs.iter()
            .map(|o| match o {
                Out::Text => Out::Text,
                _ => Out::Int,
            })
            .collect()
    }

    /// Whether no row has arrived yet.
    pub(super) fn is_empty(&self) -> bool {
        self.rows.is_empty() && !self.over
    }

    /// Whether the rows are not the answer: more groups than the host orders arrived.
    pub(super) fn needs_full(&self) -> bool {
        self.over
    }

    /// One group of the statement.
    pub(super) fn add(&mut self, row: Vec<Value>) {
        if self.over {
            return;
        }
        if self.rows.len() == self.cap {
            self.over = true;
            self.rows = Vec::new();
            return;
        }
        self.rows.push(row);
    }

    /// The groups, ordered as `statement::finish` orders them (the order-by columns, then the
    /// keys; NULL last; text bytewise, integers by value), limited, each labelled and pushed
    /// into `intake` with the number of groups.
    pub(super) fn finish(mut self, intake: &mut Intake) -> Result<(), QueryError> {
        let total = self.rows.len() as i64;
        let columns = order_columns(&self.order_by, self.keys);
        // Unstable: the keys make the order total.
        self.rows.sort_unstable_by(|a, b| {
            in_statement_order(&columns, |i| sort_key(&a[i]), |i| sort_key(&b[i]))
        });
        for row in self.rows.into_iter().take(self.limit as usize) {
            let values = row
                .into_iter()
                .zip(&self.outs)
                .map(|(v, out)| match v {
                    Value::Integer(n) => out.of_integer(n),
                    other => other,
                })
                .collect();
            intake.push(values, total)?;
        }
        Ok(())
    }
}

/// A cell as the statement orders it: integers by value, text by its bytes (`COLLATE "C"`,
/// SQLite's `BINARY`; `str` compares bytewise).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum SortKey<'a> {
    Int(i64),
    Text(&'a str),
}

/// A cell's sort key; NULL is `None` (the executors decode every column as text or integer,
/// [`HostOrder::raw_outs`]).
fn sort_key(v: &Value) -> Option<SortKey<'_>> {
    match v {
        Value::Integer(n) => Some(SortKey::Int(*n)),
        Value::Text(t) => Some(SortKey::Text(t)),
        _ => None,
    }
}
