//! The host's order of a person's groups: the statement groups without an order, a total or a
//! limit, and the host orders, counts and limits its few groups as `statement::finish` does
//! in SQL. For a caller whose scope is a person's few hundred loans the wrapping cost more
//! than the grouping (a ConciergeKey's 455 loans by referrer, 171 groups, on PostgreSQL:
//! the materialised groups, their count and their sort 0.3-0.5 ms of a 1.0-1.2 ms statement).

use std::cmp::Ordering;

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
    pub(super) outs: Vec<Out>,
    /// How many leading columns are the group keys.
    pub(super) keys: usize,
    pub(super) order_by: Vec<(u32, bool)>,
    pub(super) limit: u32,
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
        let columns: Vec<(usize, bool)> = self
            .order_by
            .iter()
            .map(|(col, desc)| (*col as usize, *desc))
            .chain((0..self.keys).map(|i| (i, false)))
            .collect();
        self.rows.sort_by(|a, b| {
            columns
                .iter()
                .map(|&(i, desc)| nulls_last(&a[i], &b[i], desc))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
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

/// Two cells of one column in the statement's order: NULL after every value in either
/// direction (`NULLS LAST`), integers by value, text by its bytes (`COLLATE "C"`, SQLite's
/// `BINARY`).
fn nulls_last(a: &Value, b: &Value, desc: bool) -> Ordering {
    let by_value = match (a, b) {
        (Value::Null, Value::Null) => return Ordering::Equal,
        (Value::Null, _) => return Ordering::Greater,
        (_, Value::Null) => return Ordering::Less,
        (Value::Integer(x), Value::Integer(y)) => x.cmp(y),
        (Value::Text(x), Value::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
        // One column holds one kind; the executors decode it as the statement typed it.
        _ => Ordering::Equal,
    };
    if desc {
        by_value.reverse()
    } else {
        by_value
    }
}
