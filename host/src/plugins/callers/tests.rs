//! The budgets of one host, and of a fleet through a ledger kept in memory.

use super::*;

#[tokio::test]
async fn memory_is_charged_as_time() {
    assert_eq!(memory_cost(64 * 1024 * 1024), Duration::from_millis(1280));
    let b = CallerBudgets::new(CallerLimits {
        plugin_seconds_per_minute: 6,
        ..Default::default()
    });
    let mut t = b.admit("a").await.unwrap();
    t.charge_memory(100 * 1024 * 1024);
    drop(t);
    assert_eq!(b.admit("a").await.unwrap_err(), Refusal::Time(6));
}

#[tokio::test]
async fn concurrency_is_per_caller() {
    let b = CallerBudgets::new(CallerLimits {
        max_concurrent: 2,
        ..Default::default()
    });
    let t1 = b.admit("a").await.unwrap();
    let _t2 = b.admit("a").await.unwrap();
    assert_eq!(b.admit("a").await.unwrap_err(), Refusal::Concurrent(2));
    let _other = b.admit("b").await.expect("another caller is not affected");
    drop(t1);
    assert!(b.admit("a").await.is_ok(), "a finished call frees its slot");
}

#[tokio::test]
async fn calls_per_minute_run_out() {
    let b = CallerBudgets::new(CallerLimits {
        calls_per_minute: 18,
        ..Default::default()
    });
    for _ in 0..3 {
        drop(b.admit("a").await.unwrap());
    }
    assert_eq!(b.admit("a").await.unwrap_err(), Refusal::Rate(18));
    assert!(b.admit("b").await.is_ok());
}

#[tokio::test]
async fn a_request_that_is_no_tool_call_spends_calls_and_result_bytes_but_no_slot() {
    let b = CallerBudgets::new(CallerLimits {
        max_concurrent: 1,
        calls_per_minute: 18,
        result_mib_per_minute: 12,
        ..Default::default()
    });
    let _call = b.admit("a").await.unwrap();
    let mut read = b
        .admit_request("a")
        .await
        .expect("a read needs no in-flight slot");
    read.charge_result(3 * 1024 * 1024);
    drop(read);
    assert_eq!(
        b.admit_request("a").await.unwrap_err(),
        Refusal::Results(12)
    );
    let c = CallerBudgets::new(CallerLimits {
        calls_per_minute: 18,
        ..Default::default()
    });
    for _ in 0..3 {
        drop(c.admit_request("a").await.unwrap());
    }
    assert_eq!(c.admit("a").await.unwrap_err(), Refusal::Rate(18));
}

#[tokio::test]
async fn plugin_time_is_charged_when_the_call_ends() {
    let b = CallerBudgets::new(CallerLimits {
        plugin_seconds_per_minute: 6,
        ..Default::default()
    });
    let t = b.admit("a").await.unwrap();
    // Pretend the call ran for two seconds.
    b.release("a", true, Duration::from_secs(2), 0, 0);
    std::mem::forget(t);
    assert_eq!(b.admit("a").await.unwrap_err(), Refusal::Time(6));
}

/// Limits whose buckets do not refill within a test: 6 calls a minute is a burst of one call
/// refilled every ten seconds; the fleet's are the same numbers.
fn fleet_limits(calls_per_minute: u32) -> CallerLimits {
    CallerLimits {
        max_concurrent: 1000,
        calls_per_minute,
        plugin_seconds_per_minute: 60,
        result_mib_per_minute: 60,
    }
}

/// Calls `user` makes on `hosts` in turn until every host refuses one (at most `bound`);
/// how many were admitted.
async fn spend_across(hosts: &[Arc<CallerBudgets>], user: &str, bound: usize) -> usize {
    let mut admitted = 0;
    let mut refused_in_a_row = 0;
    for turn in 0..bound {
        match hosts[turn % hosts.len()].admit(user).await {
            Ok(_) => {
                admitted += 1;
                refused_in_a_row = 0;
            }
            Err(_) => {
                refused_in_a_row += 1;
                if refused_in_a_row == hosts.len() {
                    break;
                }
            }
        }
    }
    admitted
}

#[tokio::test]
async fn a_fleet_admits_a_callers_budget_once_across_its_hosts() {
    // Arrange: two hosts on one ledger, a burst of 100 calls (600 a minute; slices of 10),
    // and two hosts on their own for comparison.
    let limits = fleet_limits(600);
    let ledger = Arc::new(MemoryLedger::new(true));
    let fleet: Vec<_> = (0..2)
        .map(|_| CallerBudgets::with_fleet(limits, Some(Fleet::in_memory(ledger.clone(), 2))))
        .collect();
    let alone: Vec<_> = (0..2).map(|_| CallerBudgets::new(limits)).collect();

    // Act
    let across_fleet = spend_across(&fleet, "a", 1000).await;
    let across_alone = spend_across(&alone, "a", 1000).await;

    // Assert: the fleet's burst once (the refill of a test's milliseconds adds at most one
    // slice), not once per host as hosts on their own admit.
    assert!((100..=110).contains(&across_fleet), "{across_fleet}");
    assert!(across_alone >= 200, "{across_alone}");
    let other = spend_across(&fleet, "b", 1000).await;
    assert!(
        (100..=110).contains(&other),
        "another caller has their own: {other}"
    );
}

#[tokio::test]
async fn a_fleet_is_charged_plugin_time_spent_beyond_the_slices_when_the_call_ends() {
    // Arrange: 60 s of plugin time a minute is a burst of 10 s, leased in slices of 1 s.
    let limits = fleet_limits(600);
    let ledger = Arc::new(MemoryLedger::new(true));
    let a = CallerBudgets::with_fleet(limits, Some(Fleet::in_memory(ledger.clone(), 2)));
    let b = CallerBudgets::with_fleet(limits, Some(Fleet::in_memory(ledger.clone(), 2)));
    let c = CallerBudgets::with_fleet(limits, Some(Fleet::in_memory(ledger.clone(), 2)));
    let nothing = LeaseRequest {
        burst: 10.0,
        per_second: 1.0,
        want: 0.0,
        debt: 0.0,
    };

    // Act: a call on host a runs 6 s (5 s past its slice); one on host b runs 100 s.
    let t = a.admit("u").await.unwrap();
    a.release("u", true, Duration::from_secs(6), 0, 0);
    std::mem::forget(t);
    a.settle("u").await;
    let rest = ledger.lease(
        "u",
        [
            nothing,
            LeaseRequest {
                want: 10.0,
                ..nothing
            },
            nothing,
        ],
    );
    let t = b.admit("u").await;
    let owed = b.release("u", true, Duration::from_secs(100), 0, 0);
    std::mem::forget(t);
    b.settle("u").await;
    let on_c = c.admit("u").await;

    // Assert: what is left of the fleet's 10 s after host a's slice and its 5 s past it
    // (b's slice besides) is 4 s, not 9 s; host b owes the fleet at once, so a third host's
    // call is refused though it spent nothing.
    assert!(rest[1] < 6.0, "{rest:?}");
    assert!(owed);
    assert_eq!(on_c.unwrap_err(), Refusal::Time(60));
}

#[tokio::test]
async fn a_host_that_loses_the_ledger_grants_only_its_share_of_the_refill() {
    // Arrange: a host whose ledger cannot be read, in a fleet of two hosts.
    let limits = fleet_limits(600);
    let lost = CallerBudgets::with_fleet(limits, Some(Fleet::unreachable(2)));

    // Act
    let first = lost.admit("u").await;
    let second = lost.admit("u").await;

    // Assert: its own share starts empty (no burst of its own beside what the fleet leased);
    // the lost ledger is counted once, then the leases from the share.
    assert_eq!(first.unwrap_err(), Refusal::Rate(600));
    assert_eq!(second.unwrap_err(), Refusal::Rate(600));
    let leases = &lost.fleet().unwrap().metrics().fleet_leases;
    let count = |kind: &str| {
        leases
            .get_or_create(&crate::telemetry::Label { kind: kind.into() })
            .get()
    };
    assert_eq!((count("lost"), count("share"), count("ok")), (1, 1, 0));
}

#[test]
fn a_hosts_own_share_is_its_part_of_every_budget() {
    let request = LeaseRequest {
        burst: 100.0,
        per_second: 10.0,
        want: 10.0,
        debt: 2.0,
    };
    let shared = fleet::share([request; 3], 4);
    assert_eq!(
        shared[1],
        LeaseRequest {
            burst: 25.0,
            per_second: 2.5,
            want: 10.0,
            debt: 2.0,
        }
    );
}

#[tokio::test]
async fn a_host_on_its_own_never_waits_for_a_ledger() {
    // Without a fleet nothing is leased: the budgets are this host's, as before.
    let b = CallerBudgets::new(fleet_limits(600));
    assert!(b.fleet().is_none());
    assert_eq!(spend_across(&[b], "u", 1000).await, 100);
}
