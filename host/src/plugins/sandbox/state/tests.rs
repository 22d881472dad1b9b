//! Unit tests of a call's store state: its totals, and its memory held and charged.

use wasmtime::ResourceLimiter;

use super::{CallLimiter, CallTotals, SharedMemoryBudget, CALLER_SHARE};
use crate::plugins::limits::{MAX_TABLE_ELEMENTS, TABLE_ELEMENT_BYTES};

const MIB: usize = 1024 * 1024;

#[test]
fn totals_answer_their_query_without_keys_only_in_the_scope_they_were_read_in() {
    // Arrange: a company's officers, cut, and their totals.
    use crate::data::catalog::Dataset;
    use crate::data::query::{Aggregate, Key, Query, Value};
    use crate::data::scope::Scope;
    let grouped = Query {
        dataset: Dataset::Loans,
        filter: Some(r#"{"searchText":"a"}"#.into()),
        predicates: vec![],
        group_by: vec![Key::Field("loanOfficerId".into())],
        distinct_on: None,
        aggregates: vec![Aggregate::Count],
        order_by: vec![],
        limit: Some(2),
    };
    let company = |id: &str| {
        Some(Scope {
            company: Some(id.into()),
            ..Default::default()
        })
    };
    let totals = CallTotals {
        query: grouped.clone(),
        scope: company("c1"),
        row: vec![Value::Null, Value::Integer(42)],
    };
    let twin = Query {
        group_by: vec![],
        limit: None,
        ..grouped
    };

    // Act
    let same = totals.answer(&company("c1"), &twin);
    let moved = totals.answer(&company("c2"), &twin);
    let everyone = totals.answer(
        &Some(Scope {
            all: true,
            ..Default::default()
        }),
        &twin,
    );

    // Assert
    assert_eq!(same.map(|r| r.rows), Some(vec![vec![Value::Integer(42)]]));
    assert!(moved.is_none() && everyone.is_none());
}

#[test]
fn every_memory_of_a_store_counts_against_its_limit() {
    let shared = SharedMemoryBudget::new(256);
    let mut limiter = CallLimiter::new(16, shared.clone(), "a".into());
    // A first memory of 10 MiB, then a second one of 10 MiB: each alone is within 16.
    assert!(limiter.memory_growing(0, 10 * MIB, None).unwrap());
    assert!(limiter.memory_growing(0, 10 * MIB, None).is_err());
    assert!(limiter.memory_exceeded);
    assert_eq!(shared.in_use(), 10 * MIB as u64);
    drop(limiter);
    assert_eq!(shared.in_use(), 0, "a dropped store gives its memory back");
}

#[test]
fn the_data_image_is_held_but_only_fresh_memory_is_charged_as_grown() {
    // Arrange: a component whose data image is 12 MiB of the 14 MiB it starts with.
    let shared = SharedMemoryBudget::new(256);
    let mut limiter = CallLimiter::new(64, shared.clone(), "a".into()).with_image(12 * MIB as u64);
    // Act: the instance's memory is created (14 MiB), then grows by 3 MiB.
    assert!(limiter.memory_growing(0, 14 * MIB, None).unwrap());
    assert!(limiter.memory_growing(14 * MIB, 17 * MIB, None).unwrap());
    // Assert: all 17 MiB are held; 2 + 3 MiB were fresh pages, charged.
    assert_eq!(shared.in_use(), 17 * MIB as u64);
    assert_eq!(shared.take_grown("a"), 5 * MIB as u64);
    // A second memory of the same store is not covered by the image already used.
    assert!(limiter.memory_growing(0, MIB, None).unwrap());
    assert_eq!(shared.take_grown("a"), MIB as u64);
}

#[test]
fn table_elements_are_charged_as_memory_to_the_call_and_the_host() {
    // Arrange: a call of 1 MiB.
    let shared = SharedMemoryBudget::new(256);
    let mut limiter = CallLimiter::new(1, shared.clone(), "a".into());
    // Act + Assert: a table of 20,000 elements is 320,000 bytes, held and charged.
    assert!(limiter.table_growing(0, 20_000, None).unwrap());
    assert_eq!(shared.in_use(), 20_000 * TABLE_ELEMENT_BYTES);
    assert_eq!(shared.take_grown("a"), 20_000 * TABLE_ELEMENT_BYTES);
    // Three more such tables pass the call's 1 MiB: refused as memory.
    assert!(limiter.table_growing(0, 20_000, None).unwrap());
    assert!(limiter.table_growing(0, 20_000, None).unwrap());
    assert!(limiter.table_growing(0, 20_000, None).is_err());
    assert!(limiter.memory_exceeded);
    // Beyond the slot's elements, the grow fails as the guest sees it (-1).
    assert!(!limiter
        .table_growing(10, MAX_TABLE_ELEMENTS + 1, None)
        .unwrap());
    drop(limiter);
    assert_eq!(shared.in_use(), 0, "a dropped store gives its tables back");
}

#[test]
fn without_an_image_every_byte_given_is_charged() {
    let shared = SharedMemoryBudget::new(256);
    let mut limiter = CallLimiter::new(64, shared.clone(), "a".into());
    assert!(limiter.memory_growing(0, 2 * MIB, None).unwrap());
    assert!(limiter.memory_growing(2 * MIB, 6 * MIB, None).unwrap());
    assert_eq!(shared.take_grown("a"), 6 * MIB as u64);
}

#[test]
fn one_caller_holds_at_most_a_quarter_of_the_host_budget() {
    let shared = SharedMemoryBudget::new(64);
    let mut a1 = CallLimiter::new(512, shared.clone(), "a".into());
    let mut a2 = CallLimiter::new(512, shared.clone(), "a".into());
    let mut b = CallLimiter::new(512, shared.clone(), "b".into());
    assert!(a1.memory_growing(0, 10 * MIB, None).unwrap());
    assert!(
        a2.memory_growing(0, 7 * MIB, None).is_err(),
        "17 MiB > 64 / 4"
    );
    assert!(a2.host_memory_exhausted);
    assert!(b.memory_growing(0, 16 * MIB, None).unwrap());
    assert_eq!(shared.take_grown("a"), 10 * MIB as u64);
    assert_eq!(shared.take_grown("a"), 0);
}

#[test]
fn an_instance_made_ahead_is_handed_to_its_caller_with_what_it_holds_and_was_charged() {
    // Arrange: an instance made for nobody, 12 MiB of image and 2 MiB fresh.
    let shared = SharedMemoryBudget::new(256);
    let mut limiter =
        CallLimiter::new(64, shared.clone(), "nobody".into()).with_image(12 * MIB as u64);
    assert!(limiter.memory_growing(0, 14 * MIB, None).unwrap());

    // Act
    let handed = limiter.hand_to("a");

    // Assert: held for "a" now (a share of 64 MiB: 51 more do not fit), its 2 MiB fresh
    // charged to "a" and no longer to nobody; the host-wide total unchanged.
    assert!(handed);
    assert_eq!(shared.in_use(), 14 * MIB as u64);
    assert_eq!(shared.take_grown("a"), 2 * MIB as u64);
    assert_eq!(shared.take_grown("nobody"), 0);
    let mut more = CallLimiter::new(64, shared.clone(), "a".into());
    assert!(more.memory_growing(0, 51 * MIB, None).is_err());
    drop((more, limiter));
    assert_eq!(shared.in_use(), 0, "given back under its caller's name");
    let mut theirs = CallLimiter::new(64, shared.clone(), "a".into());
    assert!(
        theirs.memory_growing(0, 64 * MIB, None).unwrap(),
        "a's share is whole again"
    );
}

#[test]
fn an_instance_made_ahead_stays_nobodys_when_its_caller_has_no_share_left() {
    // Arrange: "a" holds its whole share; an instance made ahead holds 14 MiB.
    let shared = SharedMemoryBudget::new(256);
    let mut held = CallLimiter::new(64, shared.clone(), "a".into());
    assert!(held
        .memory_growing(0, (256 / CALLER_SHARE as usize) * MIB, None)
        .unwrap());
    let mut made = CallLimiter::new(64, shared.clone(), "nobody".into());
    assert!(made.memory_growing(0, 14 * MIB, None).unwrap());

    // Act
    let handed = made.hand_to("a");

    // Assert: refused, nothing moved.
    assert!(!handed);
    assert_eq!(shared.take_grown("a"), 64 * MIB as u64);
    assert_eq!(shared.take_grown("nobody"), 14 * MIB as u64);
    drop(held);
    assert_eq!(shared.in_use(), 14 * MIB as u64, "still nobody's");
}

#[test]
fn an_answered_store_frees_its_callers_share_but_not_what_they_were_charged() {
    // Arrange: a call that was given 20 MiB fresh, answered.
    let shared = SharedMemoryBudget::new(256);
    let mut limiter = CallLimiter::new(64, shared.clone(), "a".into());
    assert!(limiter.memory_growing(0, 20 * MIB, None).unwrap());

    // Act
    let aside = limiter.set_aside("answered");

    // Assert: "a" may take its whole share again while the store is not yet dropped, and is
    // still charged the 20 MiB; the host holds them until the store goes.
    assert!(aside);
    let mut next = CallLimiter::new(64, shared.clone(), "a".into());
    assert!(next.memory_growing(0, 64 * MIB, None).unwrap());
    assert_eq!(shared.take_grown("a"), 84 * MIB as u64);
    assert_eq!(shared.in_use(), 84 * MIB as u64);
    drop(limiter);
    assert_eq!(shared.in_use(), 64 * MIB as u64);
}
