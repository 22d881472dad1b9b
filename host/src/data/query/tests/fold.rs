//! The host's fold of the period sets: its merges, its order, its limit and its overflow.

use super::*;
use crate::data::query::columns::Out;
use crate::data::query::fold::Merge;
use crate::data::query::fold::Packed;
use crate::data::query::fold::SetFold;
use crate::data::query::intake::Intake;
use crate::data::values::format_instant;

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
    let (out, total) = run(fold(&q(Dataset::LosStatusHistory)), rows);

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
    let mut by_sum = q(Dataset::LosStatusHistory);
    by_sum.order_by = vec![(3, true)];
    by_sum.limit = Some(2);
    let rows = vec![
        set(11, 0b0001, 1, Some(5), "a", 1),
        set(10, 0b0100, 4, None, "a", 1),
        set(10, 0b1000, 4, Some(9), "a", 1),
    ];

    // Act
    let (out, total) = run(fold(&by_sum), rows);

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
    let f = SetFold::new(
        &q(Dataset::LosStatusHistory),
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
    let rows = vec![
        set(10, 0b11),
        set(11, 0b01),
        vec![
            Value::Integer(11),
            Value::Null,
            t("Apple"),
            Value::Integer(2),
        ],
    ];

    // Act
    let (out, _) = run(f, rows);

    // Assert: by label text, then period text (the first key, then the second).
    let keys: Vec<(Value, Value)> = out.iter().map(|r| (r[0].clone(), r[1].clone())).collect();
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
    let mut f = fold(&q(Dataset::LosStatusHistory));
    for r in rows {
        f.add(r).unwrap();
    }
    let mut intake = Intake::new(Allowance::standard());
    assert!(matches!(
        f.finish(&mut intake),
        Err(QueryError::Unavailable(_))
    ));
}

/// A fold of a person's loan rows (schema v15): count, count of amounts, sum of amounts.
fn packed_fold(q: &Query) -> SetFold {
    let periods = [(10, "P10".to_string()), (11, "P11".to_string())];
    let labels = [("A".to_string(), 0b0011_i64), ("B".to_string(), 0b0100)];
    let merges = vec![
        (Merge::Sum, None),
        (Merge::Sum, Some(0)),
        (Merge::Sum, Some(1)),
    ];
    let outs = vec![Out::Int, Out::Int, Out::Decimal];
    let mut f = SetFold::new(q, 0, &periods, &labels, merges, outs);
    f.packed = Some(Packed::new(10, 11, vec![true, false]));
    f
}

fn loan_row(key: i64, sets: &str, amount: Option<i64>) -> Vec<Value> {
    let amount = amount.map_or(Value::Null, Value::Integer);
    vec![Value::Integer(key), t(sets), amount.clone(), amount]
}

#[test]
fn a_persons_loan_rows_fold_their_window_sets_once_per_loan() {
    // Arrange: loan 1 in both periods (and one before the window), loan 2 without an amount
    // in period 11 as PostgreSQL writes JSON, loan 1 again (a second person's row of it).
    let rows = vec![
        loan_row(1, "[[9,4],[10,1],[11,6]]", Some(100)),
        loan_row(2, "[[11, 2], [12, 4]]", None),
        loan_row(1, "[[9,4],[10,1],[11,6]]", Some(100)),
    ];

    // Act
    let (rows, total) = run(packed_fold(&q(Dataset::LosStatusHistory)), rows);

    // Assert: (period, label, loans, loans with an amount, their sum); a loan once per
    // label, the window's periods only.
    assert_eq!(
        rows,
        vec![
            vec![
                t("P10"),
                t("A"),
                Value::Integer(1),
                Value::Integer(1),
                Value::Decimal("0.01".into())
            ],
            vec![
                t("P11"),
                t("A"),
                Value::Integer(2),
                Value::Integer(1),
                Value::Decimal("0.01".into())
            ],
            vec![
                t("P11"),
                t("B"),
                Value::Integer(1),
                Value::Integer(1),
                Value::Decimal("0.01".into())
            ],
        ]
    );
    assert_eq!(total, 3);
}

#[test]
fn a_persons_loan_row_that_is_not_pairs_of_integers_is_an_error() {
    for sets in ["[[10,1],[11]]", "[[10,\"a\"]]", "{\"10\":1}"] {
        let mut f = packed_fold(&q(Dataset::LosStatusHistory));
        let err = f.add(loan_row(1, sets, Some(1))).unwrap_err();
        assert!(matches!(err, QueryError::Unavailable(_)), "{sets}: {err:?}");
    }
}
