//! The host's half of the period-set plan: the statement counts loans per (period, set of
//! status bits) and the host folds those sets into (period, label) groups, each label taking
//! the sets that hold one of its bits, then orders, counts and limits the groups as
//! `statement::finish` does in SQL. A set's labels are a few bit tests here; in SQL they were
//! a join of every set with every label (225k sets x 47 labels for a year of months).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::*;
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

    /// Folds one statement row into the groups of its labels.
    pub(super) fn add(&mut self, row: Vec<Value>) -> Result<(), QueryError> {
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
            keyed.sort_by(|(a, _), (b, _)| {
                let nulls_last = |i: usize, desc: bool| match (&a[i], &b[i]) {
                    (None, None) => std::cmp::Ordering::Equal,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (Some(x), Some(y)) if desc => y.cmp(x),
                    (Some(x), Some(y)) => x.cmp(y),
                };
                self.order_by
                    .iter()
                    .map(|(col, desc)| (*col as usize, *desc))
                    .chain([(0, false), (1, false)])
                    .map(|(i, desc)| nulls_last(i, desc))
                    .find(|o| o.is_ne())
                    .unwrap_or(std::cmp::Ordering::Equal)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(q: &Query) -> SetFold {
        let periods = [(10, "P10".to_string()), (11, "P11".to_string())];
        let labels = [
            ("A".to_string(), 0b0011_i64),
            ("B".to_string(), 0b0100),
            ("Other".to_string(), 0b1000 | (1 << 62)),
        ];
        let merges = vec![
            (Merge::Sum, None),
            (Merge::Sum, Some(0)),
            (Merge::Min, Some(1)),
            (Merge::Max, Some(2)),
        ];
        let outs = vec![Out::Int, Out::Decimal, Out::Text, Out::Instant];
        SetFold::new(q, 0, &periods, &labels, merges, outs)
    }

    fn set(pi: i64, bits: i64, c: i64, sum: Option<i64>, min: &str, max: i64) -> Vec<Value> {
        vec![
            Value::Integer(pi),
            Value::Integer(bits),
            Value::Null,
            Value::Integer(c),
            sum.map_or(Value::Null, Value::Integer),
            Value::Text(min.into()),
            Value::Integer(max),
        ]
    }

    fn query() -> Query {
        Query {
            dataset: Dataset::LosStatusHistory,
            filter: None,
            predicates: vec![],
            group_by: vec![],
            distinct_on: None,
            aggregates: vec![],
            order_by: vec![],
            limit: None,
        }
    }

    fn run(f: SetFold, rows: Vec<Vec<Value>>) -> (Vec<Vec<Value>>, u64) {
        let mut f = f;
        for r in rows {
            f.add(r).unwrap();
        }
        let mut intake = Intake::new(Allowance::standard());
        f.finish(&mut intake).unwrap();
        let fetched = intake.finish();
        (fetched.rows, fetched.total)
    }

    fn t(s: &str) -> Value {
        Value::Text(s.into())
    }

    #[test]
    fn a_set_counts_once_per_label_it_holds_a_bit_of() {
        // Arrange: a set with both of A's bits and B's; one with A's first bit only; an
        // unlisted status's own row; a set whose only bit is no label's.
        let rows = vec![
            set(10, 0b0111, 3, Some(30_000), "m", 5),
            set(10, 0b0001, 2, None, "k", 9),
            vec![
                Value::Integer(10),
                Value::Null,
                t("Sold"),
                Value::Integer(1),
                Value::Integer(7),
                t("a"),
                Value::Integer(1),
            ],
            set(11, 0b1_0000, 4, Some(1), "z", 1),
        ];

        // Act
        let (out, total) = run(fold(&query()), rows);

        // Assert: A has both sets once each (3 + 2 loans), their sum skips the NULL, the min
        // is bytewise, the max numeric; B only the first; the unlisted row its own label.
        assert_eq!(total, 3);
        assert_eq!(
            out,
            vec![
                vec![
                    t("P10"),
                    t("A"),
                    Value::Integer(5),
                    Value::Decimal("3".into()),
                    t("k"),
                    Value::Timestamp(format_instant(9)),
                ],
                vec![
                    t("P10"),
                    t("B"),
                    Value::Integer(3),
                    Value::Decimal("3".into()),
                    t("m"),
                    Value::Timestamp(format_instant(5)),
                ],
                vec![
                    t("P10"),
                    t("Sold"),
                    Value::Integer(1),
                    Value::Decimal("0.0007".into()),
                    t("a"),
                    Value::Timestamp(format_instant(1)),
                ],
            ]
        );
    }

    #[test]
    fn groups_order_by_the_requested_columns_then_the_keys_nulls_last_and_limit() {
        // Arrange: counts 1, 4, 4 and a NULL sum; ordered by the sum descending, limited to 2.
        let mut q = query();
        q.order_by = vec![(3, true)];
        q.limit = Some(2);
        let rows = vec![
            set(11, 0b0001, 1, Some(5), "a", 1),
            set(10, 0b0100, 4, None, "a", 1),
            set(10, 0b1000, 4, Some(9), "a", 1),
        ];

        // Act
        let (out, total) = run(fold(&q), rows);

        // Assert: the largest sum first, then the smaller; the NULL sum (last) is cut; the
        // total counts every group.
        assert_eq!(total, 3);
        let keys: Vec<(Value, Value)> = out.iter().map(|r| (r[0].clone(), r[1].clone())).collect();
        assert_eq!(keys, vec![(t("P10"), t("Other")), (t("P11"), t("A"))]);
    }

    #[test]
    fn groups_without_an_order_are_in_the_order_of_their_key_texts() {
        // Arrange: the label key first; period indexes whose labels sort the other way
        // round; labels out of their texts' order, and an unlisted status's label ("Apple")
        // numbered after every other but first by its text.
        let periods = [(10, "2026-02".to_string()), (11, "2026-01".to_string())];
        let labels = [("B".to_string(), 0b01_i64), ("A".to_string(), 0b10)];
        let mut f = SetFold::new(
            &query(),
            1,
            &periods,
            &labels,
            vec![(Merge::Sum, None)],
            vec![Out::Int],
        );
        let set = |pi: i64, bits: i64| {
            vec![
                Value::Integer(pi),
                Value::Integer(bits),
                Value::Null,
                Value::Integer(1),
            ]
        };
        for row in [
            set(10, 0b11),
            set(11, 0b01),
            vec![
                Value::Integer(11),
                Value::Null,
                t("Apple"),
                Value::Integer(2),
            ],
        ] {
            f.add(row).unwrap();
        }

        // Act
        let mut intake = Intake::new(Allowance::standard());
        f.finish(&mut intake).unwrap();

        // Assert: by label text, then period text (the first key, then the second).
        let keys: Vec<(Value, Value)> = intake
            .rows
            .iter()
            .map(|r| (r[0].clone(), r[1].clone()))
            .collect();
        assert_eq!(
            keys,
            vec![
                (t("A"), t("2026-02")),
                (t("Apple"), t("2026-01")),
                (t("B"), t("2026-01")),
                (t("B"), t("2026-02")),
            ]
        );
    }

    #[test]
    fn a_sum_past_64_bits_fails_like_the_engines_cast() {
        let rows = vec![
            set(10, 0b0001, 1, Some(i64::MAX), "a", 1),
            set(10, 0b0010, 1, Some(1), "a", 1),
        ];
        let mut f = fold(&query());
        for r in rows {
            f.add(r).unwrap();
        }
        let mut intake = Intake::new(Allowance::standard());
        assert!(matches!(
            f.finish(&mut intake),
            Err(QueryError::Unavailable(_))
        ));
    }
}
