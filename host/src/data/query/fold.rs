//! The host's half of the period-set plan: the statement counts loans per (period, set of
//! status bits) and the host folds those sets into (period, label) groups, each label taking
//! the sets that hold one of its bits, then orders, counts and limits the groups as
//! `statement::finish` does in SQL. A set's labels are a few bit tests here; in SQL they were
//! a join of every set with every label (225k sets x 47 labels for a year of months).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::columns::{undecodable, Out};
use super::intake::{unavailable, Intake};
use super::ir::{Query, QueryError, Value};
use super::order::{in_statement_order, limit_of, order_columns};
use crate::data::history_keys::UNLISTED_BIT;

/// How a partial merges across the sets of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Merge {
    Sum,
    Min,
    Max,
}

/// Where the statement's columns are: the period index, the set's bits (NULL on a row of an
/// unlisted status), that status (NULL on a set), the set's loan count, then the partials.
const PERIOD: usize = 0;
const BITS: usize = 1;
const STATUS: usize = 2;
const COUNT: usize = 3;
const PARTIALS: usize = 4;

/// Folds the period-set statement's rows into the query's result rows. Built by the planner,
/// copied fresh for every attempt at the statement.
#[derive(Debug, Clone)]
pub(super) struct SetFold {
    /// Which key is the period (the other is the label).
    pub(super) period_key: usize,
    /// Each period index of the window with its label.
    pub(super) periods: HashMap<i64, String>,
    /// The labels, in the planner's order; a status read from history rows (unlisted) adds
    /// its own after them.
    pub(super) labels: Vec<String>,
    /// For each status bit, the labels (bit `i` of the mask: `labels[i]`) that hold it.
    pub(super) bit_labels: [u64; 64],
    /// Each aggregate: how it merges, and its partial's column among the partials (`None`:
    /// the set's loan count).
    pub(super) merges: Vec<(Merge, Option<usize>)>,
    /// Each aggregate's output kind.
    pub(super) outs: Vec<Out>,
    pub(super) order_by: Vec<(u32, bool)>,
    pub(super) limit: u32,
    /// The statement counts the sets alone (the raw status over a person's loans) and reads
    /// no unlisted status's rows: a set with the unlisted bit then cannot be labelled, and
    /// the fold asks for the statement that reads them ([`SetFold::needs_full`]).
    pub(super) sets_only: bool,
    /// The statement reads a person's loan rows (schema v15), not counted sets: each row's
    /// sets in the window are folded as sets of one loan.
    pub(super) packed: Option<Packed>,
    /// A set with the unlisted bit arrived while `sets_only`.
    unlabelled: bool,
    groups: HashMap<(i64, u32), Vec<Acc>, BuildHasherDefault<KeyHasher>>,
    seen: u64,
}

/// A group key's hash: a multiply-rotate of its integers (the keys are the host's own
/// period indexes and label numbers, not a caller's input; SipHash cost the fold most of its
/// time).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
}

/// A group: its (period index, label number) and its running values.
type Group = ((i64, u32), Vec<Acc>);

/// A group's running value of one aggregate.
#[derive(Debug, Clone)]
enum Acc {
    Int(Option<i128>),
    Text(Option<String>),
}

/// A result cell as it orders: integers by value (instants and decimals are their integers),
/// text bytewise, NULL after everything.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Cell {
    Int(i128),
    Text(String),
}

impl SetFold {
    /// A fold for `labels` (each with its bits) over `periods`; `merges` and `outs` per
    /// aggregate. At most 64 labels fit a set's mask: the planner folds no more
    /// (`period_sets`).
    pub(super) fn new(
        q: &Query,
        period_key: usize,
        periods: &[(i64, String)],
        labels: &[(String, i64)],
        merges: Vec<(Merge, Option<usize>)>,
        outs: Vec<Out>,
    ) -> SetFold {
        assert!(labels.len() <= 64, "a set's labels are a 64-bit mask");
        let mut bit_labels = [0_u64; 64];
        for (i, (_, bits)) in labels.iter().enumerate() {
            for (b, mask) in bit_labels.iter_mut().enumerate() {
                if bits & (1_i64 << b) != 0 {
                    *mask |= 1 << i;
                }
            }
        }
        SetFold {
            period_key,
            periods: periods.iter().cloned().collect(),
            labels: labels.iter().map(|(l, _)| l.clone()).collect(),
            bit_labels,
            merges,
            outs,
            order_by: q.order_by.clone(),
            limit: limit_of(q),
            sets_only: false,
            packed: None,
            unlabelled: false,
            groups: HashMap::default(),
            seen: 0,
        }
    }

    /// Whether no row has been folded yet.
    pub(super) fn is_empty(&self) -> bool {
        self.seen == 0
    }

    /// Whether the groups are not the answer: a set held a status without a bit of its own,
    /// which a statement of the sets alone cannot name (`Compiled::full` can).
    pub(super) fn needs_full(&self) -> bool {
        self.unlabelled
    }

    /// Folds one statement row into the groups of its labels: a set counted by the
    /// statement, or a person's loan row (its sets in the window, each a set of one loan).
    pub(super) fn add(&mut self, row: Vec<Value>) -> Result<(), QueryError> {
        let sets = match self.packed.as_mut() {
            Some(packed) => packed.sets(&row),
            None => return self.add_set(&row),
        };
        self.seen += 1;
        for set in sets? {
            self.add_set(&set)?;
        }
        Ok(())
    }

    /// Folds one set (the statement's columns: period, bits, status, count, partials) into
    /// the groups of its labels.
    fn add_set(&mut self, row: &[Value]) -> Result<(), QueryError> {
        self.seen += 1;
        let int = |i: usize| match row.get(i) {
            Some(Value::Integer(n)) => Ok(Some(*n)),
            Some(Value::Null) => Ok(None),
            other => Err(undecodable(i, &format!("{other:?}"))),
        };
        let period = int(PERIOD)?.ok_or_else(|| undecodable(PERIOD, &"NULL"))?;
        let mut targets = Vec::new();
        match (&row[STATUS], int(BITS)?) {
            // An unlisted status's own row: its label is its text.
            (Value::Text(status), _) => {
                let id = match self.labels.iter().position(|l| l == status) {
                    Some(i) => i,
                    None => {
                        self.labels.push(status.clone());
                        self.labels.len() - 1
                    }
                };
                targets.push(id as u32);
            }
            (_, Some(bits)) if self.sets_only && bits & UNLISTED_BIT != 0 => {
                self.unlabelled = true;
                return Ok(());
            }
            (_, Some(bits)) => {
                let mut hit = 0_u64;
                let mut rest = bits as u64;
                while rest != 0 {
                    hit |= self.bit_labels[rest.trailing_zeros() as usize];
                    rest &= rest - 1;
                }
                while hit != 0 {
                    targets.push(hit.trailing_zeros());
                    hit &= hit - 1;
                }
            }
            _ => return Err(undecodable(BITS, &"NULL")),
        }
        for label in targets {
            let accs = self.groups.entry((period, label)).or_insert_with(|| {
                self.outs
                    .iter()
                    .map(|o| match o {
                        Out::Text => Acc::Text(None),
                        _ => Acc::Int(None),
                    })
                    .collect()
            });
            for ((merge, partial), acc) in self.merges.iter().zip(accs.iter_mut()) {
                let column = partial.map_or(COUNT, |p| PARTIALS + p);
                match (acc, &row[column]) {
                    (_, Value::Null) => {}
                    (Acc::Int(a), Value::Integer(n)) => {
                        let n = i128::from(*n);
                        *a = Some(match (*a, merge) {
                            (None, _) => n,
                            (Some(a), Merge::Sum) => a + n,
                            (Some(a), Merge::Min) => a.min(n),
                            (Some(a), Merge::Max) => a.max(n),
                        });
                    }
                    (Acc::Text(a), Value::Text(t)) => {
                        let keep = match (a.as_deref(), merge) {
                            (None, _) => true,
                            (Some(a), Merge::Min) => t.as_str() < a,
                            (Some(a), _) => t.as_str() > a,
                        };
                        if keep {
                            *a = Some(t.clone());
                        }
                    }
                    (_, other) => return Err(undecodable(column, &format!("{other:?}"))),
                }
            }
        }
        Ok(())
    }

    /// The groups as result rows (keys, then aggregates), ordered as `statement::finish`
    /// orders them (the order-by columns, then the keys; NULL last), limited, each pushed into
    /// `intake` with the number of groups.
    pub(super) fn finish(self, intake: &mut Intake) -> Result<(), QueryError> {
        let total = self.groups.len() as i64;
        let mut groups: Vec<Group> = self.groups.into_iter().collect();
        if self.order_by.is_empty() {
            // Ordered by the keys alone: each key text's rank among the texts it can take
            // (bytewise, as `Cell` orders them), so that the sort compares integers. A
            // period outside the window has no label: NULL, last.
            let mut period_texts: Vec<(&str, i64)> =
                self.periods.iter().map(|(i, l)| (l.as_str(), *i)).collect();
            period_texts.sort_unstable();
            let period_rank: HashMap<i64, u32> = period_texts
                .iter()
                .enumerate()
                .map(|(r, (_, i))| (*i, r as u32))
                .collect();
            let mut label_texts: Vec<(&str, u32)> = self
                .labels
                .iter()
                .enumerate()
                .map(|(i, l)| (l.as_str(), i as u32))
                .collect();
            label_texts.sort_unstable();
            let mut label_rank = vec![0_u32; self.labels.len()];
            for (r, (_, i)) in label_texts.iter().enumerate() {
                label_rank[*i as usize] = r as u32;
            }
            let rank = |(period, label): (i64, u32)| {
                let p = period_rank.get(&period).copied().unwrap_or(u32::MAX);
                let l = label_rank[label as usize];
                if self.period_key == 0 {
                    (p, l)
                } else {
                    (l, p)
                }
            };
            let mut ranked: Vec<((u32, u32), Group)> =
                groups.into_iter().map(|g| (rank(g.0), g)).collect();
            ranked.sort_unstable_by_key(|(r, _)| *r);
            groups = ranked.into_iter().map(|(_, g)| g).collect();
        } else {
            let cells = |(period, label): (i64, u32), accs: &[Acc]| {
                let mut keys = vec![None, None];
                keys[self.period_key] = self.periods.get(&period).cloned().map(Cell::Text);
                keys[1 - self.period_key] = Some(Cell::Text(self.labels[label as usize].clone()));
                keys.extend(accs.iter().map(|acc| match acc {
                    Acc::Int(n) => n.map(Cell::Int),
                    Acc::Text(t) => t.clone().map(Cell::Text),
                }));
                keys
            };
            let mut keyed: Vec<(Vec<Option<Cell>>, Group)> = groups
                .into_iter()
                .map(|(key, accs)| (cells(key, &accs), (key, accs)))
                .collect();
            let columns = order_columns(&self.order_by, 2);
            keyed.sort_by(|(a, _), (b, _)| {
                in_statement_order(&columns, |i| a[i].as_ref(), |i| b[i].as_ref())
            });
            groups = keyed.into_iter().map(|(_, g)| g).collect();
        }
        for ((period, label), accs) in groups.into_iter().take(self.limit as usize) {
            let mut values = vec![Value::Null, Value::Null];
            if let Some(p) = self.periods.get(&period) {
                values[self.period_key] = Value::Text(p.clone());
            }
            values[1 - self.period_key] = Value::Text(self.labels[label as usize].clone());
            for (i, acc) in accs.into_iter().enumerate() {
                values.push(match acc {
                    Acc::Int(None) | Acc::Text(None) => Value::Null,
                    Acc::Text(Some(t)) => Value::Text(t),
                    // The engines' `CAST(SUM(…) AS BIGINT)` fails past 64 bits; so does this.
                    Acc::Int(Some(n)) => self.outs[i].of_integer(
                        i64::try_from(n)
                            .map_err(|_| unavailable(&format!("aggregate {i} is out of range")))?,
                    ),
                });
            }
            intake.push(values, total)?;
        }
        Ok(())
    }
}

/// How a person's loan rows (schema v15: key, sets as JSON pairs, then the carried field of
/// each partial) become sets of one loan: the window's periods, and for each partial whether
/// it counts the field (`COUNT(column)`: 1 or 0) or is the value itself (`SUM`, `MIN`, `MAX`).
#[derive(Debug, Clone)]
pub(super) struct Packed {
    first: i64,
    last: i64,
    counts: Vec<bool>,
    /// The loans folded: a loan two parts of a scope reach has a row for each person.
    loans: std::collections::HashSet<i64>,
}

impl Packed {
    pub(super) fn new(first: i64, last: i64, counts: Vec<bool>) -> Packed {
        Packed {
            first,
            last,
            counts,
            loans: Default::default(),
        }
    }

    /// The sets of `row`'s loan in the window, as rows of the counted sets' statement; none
    /// for a loan already folded.
    fn sets(&mut self, row: &[Value]) -> Result<Vec<Vec<Value>>, QueryError> {
        let Some(Value::Integer(loan)) = row.first() else {
            return Err(undecodable(0, &format!("{:?}", row.first())));
        };
        if !self.loans.insert(*loan) {
            return Ok(Vec::new());
        }
        let Some(Value::Text(pairs)) = row.get(1) else {
            return Err(undecodable(1, &format!("{:?}", row.get(1))));
        };
        let pairs: Vec<(i64, i64)> =
            serde_json::from_str(pairs).map_err(|e| undecodable(1, &format!("{e}: {pairs}")))?;
        let partials: Vec<Value> = self
            .counts
            .iter()
            .enumerate()
            .map(|(i, count)| match row.get(2 + i) {
                Some(v) if *count => Value::Integer(i64::from(!matches!(v, Value::Null))),
                Some(v) => v.clone(),
                None => Value::Null,
            })
            .collect();
        let mut sets = Vec::new();
        for (period, bits) in pairs {
            if period < self.first || period > self.last {
                continue;
            }
            let mut set = Vec::with_capacity(PARTIALS + partials.len());
            set.extend([
                Value::Integer(period),
                Value::Integer(bits),
                Value::Null,
                Value::Integer(1),
            ]);
            set.extend(partials.iter().cloned());
            sets.push(set);
        }
        Ok(sets)
    }
}
