//! The host's order of a statement's groups: the statement groups without an order, a count
//! or a limit, and the host orders, counts and limits the groups as they stream in, and adds
//! up the totals of cut groups. Done in SQL around the grouping, that work cost more than the
//! grouping itself for a person's few hundred loans (docs/decisions/0027).

use super::columns::Out;
use super::intake::Intake;
use super::ir::{Aggregate, Query, QueryError, Value};
use super::order::{adds_up, in_statement_order, limit_of, order_columns, Wrapping};

/// Rows the host holds before it keeps only the best `limit` of them: at least this many, and
/// twice the limit (so each cut is paid for by as many new rows as it keeps).
const CUT_EVERY: usize = 1_024;

/// Orders the rows of a grouped statement (keys, then aggregates, every non-text column as
/// its integer), counts and limits them, adds up their totals, and labels each integer by its
/// kind. Built by the planner, copied fresh for every attempt at the statement.
#[derive(Debug, Clone)]
pub(super) struct HostOrder {
    /// Each column's kind: how its integer becomes the answer's value, after the order.
    pub(super) outs: Vec<Out>,
    /// How many leading columns are the group keys.
    keys: usize,
    /// The columns the rows are ordered by, in turn ([`order_columns`]).
    columns: Vec<(usize, bool)>,
    limit: usize,
    /// Most rows held before a cut to the best `limit`: `max(2 × limit, CUT_EVERY)`.
    pub(super) hold: usize,
    /// The best rows so far, each with its [`Prefix`].
    rows: Vec<(Prefix, Vec<Value>)>,
    /// Groups that arrived.
    total: u64,
    /// The aggregates added up over every group, when the query [`adds_up`] and its totals
    /// are wanted (`Wrapping::totals`), and none is text on PostgreSQL.
    totals: Option<Vec<Total>>,
}

/// One aggregate added up across groups (as the tests' `engine_order` does in SQL): counts and
/// sums by their sum, a minimum by the least, a maximum by the greatest (text by its bytes);
/// NULL while every group's is NULL.
#[derive(Debug, Clone)]
enum Total {
    Sum(Option<i128>),
    Min(Option<Value>),
    Max(Option<Value>),
}

impl HostOrder {
    /// An order for `q`'s result columns of kinds `outs`, with the totals of `how`.
    pub(super) fn new(q: &Query, outs: Vec<Out>, how: Wrapping) -> HostOrder {
        let keys = q.group_by.len();
        // A text minimum's total is the least by its bytes, as SQLite's `BINARY` orders it;
        // PostgreSQL's, in the ungrouped query the totals stand for, is by the database's
        // collation: none is given.
        let text = how.postgres && outs[keys..].iter().any(|o| matches!(o, Out::Text));
        let totals = (how.totals && adds_up(q) && !text).then(|| {
            q.aggregates
                .iter()
                .map(|a| match a {
                    Aggregate::Min(_) => Total::Min(None),
                    Aggregate::Max(_) => Total::Max(None),
                    _ => Total::Sum(None),
                })
                .collect()
        });
        let limit = limit_of(q) as usize;
        HostOrder {
            outs,
            keys,
            columns: order_columns(&q.order_by, keys),
            limit,
            hold: (2 * limit).max(CUT_EVERY),
            rows: Vec::new(),
            total: 0,
            totals,
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

    /// Whether cut groups give their totals.
    #[cfg(test)]
    pub(super) fn gives_totals(&self) -> bool {
        self.totals.is_some()
    }

    /// Whether no row has arrived yet.
    pub(super) fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// One group of the statement.
    pub(super) fn add(&mut self, row: Vec<Value>) {
        self.total += 1;
        if let Some(totals) = &mut self.totals {
            if !add_up(totals, &row[self.keys..]) {
                self.totals = None;
            }
        }
        self.rows.push((prefix(&self.columns, &row), row));
        if self.rows.len() >= self.hold {
            self.cut();
        }
    }

    /// Keeps the best `limit` rows, in no particular order: a row not among the best of some
    /// groups is not among the best of all.
    fn cut(&mut self) {
        if self.rows.len() <= self.limit {
            return;
        }
        let columns = &self.columns;
        if self.limit > 0 {
            self.rows
                .select_nth_unstable_by(self.limit - 1, |a, b| before(columns, a, b));
        }
        self.rows.truncate(self.limit);
    }

    /// The groups, ordered as `statement::finish` orders them (the order-by columns, then the
    /// keys; NULL last; text bytewise, integers by value), limited, each labelled and pushed
    /// into `intake` with the number of groups; then, past the limit, the totals.
    pub(super) fn finish(mut self, intake: &mut Intake) -> Result<(), QueryError> {
        self.cut();
        let columns = &self.columns;
        // Unstable: the keys make the order total.
        self.rows.sort_unstable_by(|a, b| before(columns, a, b));
        let total = self.total as i64;
        let label = |row: Vec<Value>, outs: &[Out]| -> Vec<Value> {
            row.into_iter()
                .zip(outs)
                .map(|(v, out)| match v {
                    Value::Integer(n) => out.of_integer(n),
                    other => other,
                })
                .collect()
        };
        for (_, row) in std::mem::take(&mut self.rows) {
            intake.push(label(row, &self.outs), total)?;
        }
        if let Some(totals) = self.totals.filter(|_| self.total > self.limit as u64) {
            let mut row = vec![Value::Null; self.keys];
            for t in totals {
                row.push(match t {
                    // A sum past 64 bits gives no totals, as in SQL.
                    Total::Sum(Some(n)) => match i64::try_from(n) {
                        Ok(n) => Value::Integer(n),
                        Err(_) => return Ok(()),
                    },
                    Total::Min(Some(v)) | Total::Max(Some(v)) => v,
                    _ => Value::Null,
                });
            }
            intake.totals = Some(label(row, &self.outs));
        }
        Ok(())
    }
}

/// Two held rows in the answer's order, the one compare the cut and the sort share: by their
/// prefixes, then, where those are equal, by their cells ([`in_order`]).
fn before(
    columns: &[(usize, bool)],
    (pa, a): &(Prefix, Vec<Value>),
    (pb, b): &(Prefix, Vec<Value>),
) -> std::cmp::Ordering {
    pa.cmp(pb).then_with(|| in_order(columns, a, b))
}

/// Two of a statement's rows in the answer's order ([`in_statement_order`] by their cells'
/// [`sort_key`]s).
fn in_order(columns: &[(usize, bool)], a: &[Value], b: &[Value]) -> std::cmp::Ordering {
    in_statement_order(columns, |i| sort_key(&a[i]), |i| sort_key(&b[i]))
}

/// The first two of a row's order columns, each as whether it is NULL and 64 bits whose
/// unsigned order is the column's own in its direction: an integer exactly, text by its first
/// eight bytes. Their order agrees with [`in_order`] wherever they differ, so the cut and the
/// sort compare them first ([`before`]; each row's is made once, as it arrives) and reach
/// into the rows' cells (a pointer to each row, one to each text) only where they are equal:
/// an Admin's 5,869 officers are ordered by their counts, of which many are equal, then by
/// their ids, which differ in their first bytes.
type Prefix = [(bool, u64); 2];

/// A row's [`Prefix`]. The second column counts only after an exact first one: after text
/// (eight bytes of it) it is left equal for every row, so rows whose text begins alike are
/// compared whole.
fn prefix(columns: &[(usize, bool)], row: &[Value]) -> Prefix {
    let mut p = [(false, 0); 2];
    for (slot, &(i, descending)) in p.iter_mut().zip(columns) {
        let (bits, exact) = match sort_key(&row[i]) {
            // NULL after every value, in either direction.
            None => {
                *slot = (true, 0);
                continue;
            }
            // The sign bit flipped: two's complement in unsigned order.
            Some(SortKey::Int(n)) => ((n as u64) ^ (1 << 63), true),
            Some(SortKey::Text(t)) => {
                let mut head = [0u8; 8];
                let n = t.len().min(8);
                head[..n].copy_from_slice(&t.as_bytes()[..n]);
                (u64::from_be_bytes(head), false)
            }
        };
        *slot = (false, if descending { !bits } else { bits });
        if !exact {
            break;
        }
    }
    p
}

/// Adds one group's aggregates into `totals` (a sum in 128 bits: 2⁶⁴ groups cannot pass
/// them); false if a sum's cell is not an integer.
fn add_up(totals: &mut [Total], aggregates: &[Value]) -> bool {
    for (t, v) in totals.iter_mut().zip(aggregates) {
        if matches!(v, Value::Null) {
            continue;
        }
        match t {
            Total::Sum(s) => {
                let Value::Integer(n) = v else {
                    return false;
                };
                *s = Some(s.unwrap_or(0) + i128::from(*n));
            }
            Total::Min(m) => {
                if m.as_ref().is_none_or(|m| sort_key(v) < sort_key(m)) {
                    *m = Some(v.clone());
                }
            }
            Total::Max(m) => {
                if m.as_ref().is_none_or(|m| sort_key(v) > sort_key(m)) {
                    *m = Some(v.clone());
                }
            }
        }
    }
    true
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    /// Cells that meet every case of a prefix: integers at the edges and around zero, text
    /// shorter than, as long as and longer than eight bytes with long common beginnings, a
    /// zero byte against the end of a text, NULL.
    fn cells() -> Vec<Value> {
        let ints = [
            i64::MIN,
            i64::MIN + 1,
            -300,
            -1,
            0,
            1,
            2,
            300,
            i64::MAX - 1,
            i64::MAX,
        ];
        let texts = [
            "",
            "a",
            "a\0",
            "ab",
            "abcdefgh",
            "abcdefgh\0",
            "abcdefghA",
            "abcdefghB",
            "abcdefghBB",
            "abcdefgi",
            "b",
            "É",
            "Éa",
            "z",
        ];
        ints.iter()
            .map(|n| Value::Integer(*n))
            .chain(texts.iter().map(|t| Value::Text(t.to_string())))
            .chain([Value::Null])
            .collect()
    }

    #[test]
    fn a_prefix_orders_rows_as_their_cells_do_wherever_it_tells_them_apart() {
        // Arrange: rows of three columns, each column of one kind (integers, or text) with
        // NULLs, ordered by two or three of them in either direction.
        let cells = cells();
        let (ints, texts): (Vec<_>, Vec<_>) =
            cells.iter().partition(|c| matches!(c, Value::Integer(_)));
        let column = |kind: &[&Value]| -> Vec<Value> {
            kind.iter()
                .map(|c| (*c).clone())
                .chain([Value::Null])
                .collect()
        };
        let (ints, texts) = (column(&ints), column(&texts));
        let mut rows: Vec<Vec<Value>> = Vec::new();
        for t in &texts {
            for i in &ints {
                for j in [0, 3, 7] {
                    rows.push(vec![t.clone(), i.clone(), ints[j].clone()]);
                }
            }
        }
        for columns in [
            vec![(1, true), (0, false), (2, false)],
            vec![(1, false), (2, true)],
            vec![(0, false), (1, true)],
            vec![(0, true), (2, false), (1, false)],
            vec![(2, true), (0, true)],
        ] {
            // Act
            let prefixes: Vec<Prefix> = rows.iter().map(|r| prefix(&columns, r)).collect();
            // Assert: where two prefixes differ, their order is the rows' order.
            for (a, pa) in rows.iter().zip(&prefixes) {
                for (b, pb) in rows.iter().zip(&prefixes) {
                    let by_prefix = pa.cmp(pb);
                    if by_prefix != Ordering::Equal {
                        assert_eq!(
                            by_prefix,
                            in_order(&columns, a, b),
                            "{columns:?}: {a:?} {b:?}"
                        );
                    }
                }
            }
        }
    }
}
