//! The period sets against the history read row by row: random Admin queries on both engines,
//! whole periods or not, filtered or not, after a loans import over existing history.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Value};

use super::periods::{epoch_ms, iso, label, period_start};
use super::world::{engine, scaled, visible, world};

/// A count of distinct loans per (whole months or weeks, mapped or raw status) takes the period
/// sets (schema v4), alone organisation-wide or joined to the loans a filter keeps. Random maps,
/// windows (whole periods or not), filters and aggregates must equal the history read here
/// row by row, on both engines, with rows the sets must leave out or label by the fallback: a
/// loan that is not in the snapshot, and statuses outside the spec's list.
#[tokio::test]
async fn period_sets_equal_the_history_read_row_by_row() {
    use rand::seq::SliceRandom;
    use rand::{Rng, SeedableRng};
    use time::format_description::well_known::Rfc3339;
    use time::OffsetDateTime;
    for (seed, postgres) in [(31u64, false), (32, true)] {
        // Arrange: a seeded world, then history rows of a loan the snapshot does not have and
        // rows with unlisted statuses on loans it has.
        let mut w = world(seed, 300, postgres).await;
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let ghost = "0f0e0d0c-0000-4000-8000-00000000ffff";
        let mut extra = Vec::new();
        for (i, loan) in w.loans.iter().take(40).enumerate() {
            // Two loans the snapshot does not have: the first comes with the loans below; the
            // second never does, and has a status without a bit of its own (read per loan from
            // its sets when the raw status is the key).
            let (id, status) = if i % 4 == 0 {
                [
                    (ghost, "Loan Funded"),
                    (
                        "0f0e0d0c-0000-4000-8000-00000000fffe",
                        "Submitted to investor",
                    ),
                ][i / 4 % 2]
            } else {
                (
                    loan["id"].as_str().unwrap(),
                    ["Submitted to investor", "Loan Re-Opened"][i % 2],
                )
            };
            let at = epoch_ms("2026-03-15T12:00:00Z") - rng.gen_range(0..200i64) * 86_400_000;
            let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(at) * 1_000_000).unwrap();
            extra.push(
                json!({"loanId": id, "status": status, "occurredAt": at.format(&Rfc3339).unwrap()}),
            );
        }
        // And loans with two listed statuses in one period (a label holding both counts the
        // loan once there), on dates spread over the windows below.
        for (k, loan) in w.loans.iter().skip(40).take(20).enumerate() {
            let day = epoch_ms("2026-03-14T10:00:00Z") - k as i64 * 9 * 86_400_000;
            for (status, hour) in [("Loan Approved", 0), ("Loan Clear To Close", 3)] {
                extra.push(json!({"loanId": loan["id"], "status": status, "occurredAt": iso(day + hour * 3_600_000)}));
            }
        }
        let lines: Vec<String> = extra.iter().map(Value::to_string).collect();
        crate::helpers::import_lines(&w.app, "los_status_history.jsonl", &lines).await;
        w.history.extend(extra);
        // Then loans over that history: the ghost becomes a loan of the snapshot, and one
        // loan's amount changes (the import counts their periods' sets again, schema v7).
        let mut ghost_loan = w.loans[0].clone();
        ghost_loan["id"] = json!(ghost);
        ghost_loan["loanAmount"] = json!("250000.25");
        let mut changed = w.loans[1].clone();
        changed["loanAmount"] = json!("1234567.5");
        let lines = [ghost_loan.to_string(), changed.to_string()];
        crate::helpers::import_lines(&w.app, "loans.jsonl", &lines).await;
        w.loans[1] = changed;
        w.loans.push(ghost_loan);
        let admin = w.app.token_for("admin@demo.loanhost.local");
        let amounts: HashMap<&str, Option<i128>> = w
            .loans
            .iter()
            .map(|l| (l["id"].as_str().unwrap(), scaled(&l["loanAmount"])))
            .collect();
        let statuses: Vec<&str> = {
            let mut s: Vec<&str> = w
                .history
                .iter()
                .map(|h| h["status"].as_str().unwrap())
                .collect();
            s.sort();
            s.dedup();
            s.retain(|s| loanhost::data::history_keys::listed_bit(s).is_some());
            s
        };

        let unlisted_loans: std::collections::HashSet<&str> = w
            .history
            .iter()
            .filter(|h| {
                loanhost::data::history_keys::listed_bit(h["status"].as_str().unwrap()).is_none()
            })
            .map(|h| h["loanId"].as_str().unwrap())
            .collect();
        let mut non_empty = 0;
        let mut unlisted_seen = 0;
        let mut agent_raw = [0; 2];
        for round in 0..16 {
            // A third of the rounds key on the raw status instead (each listed status from the
            // sets, the unlisted ones from their history rows): over whole periods that hold
            // the unlisted rows, so that they take the sets.
            let raw = round % 3 == 2;
            // A window: whole periods or not, each bound inclusive or not. Raw rounds and
            // another third are whole periods, so that label maps take the sets too (with each
            // shape left to chance, whole periods came one round in eight, none in some runs).
            let whole = raw || round % 3 == 0;
            let week = rng.gen_bool(0.5);
            let day = 86_400_000_i64;
            let mut from = epoch_ms("2026-03-15T00:00:00Z") - rng.gen_range(0..420) * day;
            let mut to = from + rng.gen_range(1..240) * day;
            if raw {
                from = epoch_ms("2026-03-15T00:00:00Z") - rng.gen_range(200..420) * day;
                to = epoch_ms("2026-03-16T00:00:00Z") + rng.gen_range(0..60) * day;
            }
            // The raw round 14 (an Agent's without unlisted statuses, below) is one month.
            if round == 14 {
                from = epoch_ms("2026-02-01T00:00:00Z");
                to = epoch_ms("2026-03-01T00:00:00Z");
            }
            if whole || rng.gen_bool(0.5) {
                (from, to) = (period_start(from, week), period_start(to, week));
            } else {
                from += rng.gen_range(0..day);
                to += rng.gen_range(0..day);
            }
            let (low_op, lo) = if whole || rng.gen_bool(0.5) {
                ("ge", from)
            } else {
                ("gt", from + 1)
            };
            let (high_op, hi) = if whole || rng.gen_bool(0.5) {
                ("lt", to - 1)
            } else {
                ("le", to)
            };
            // A map: a few listed statuses (one of them twice), to labels that may repeat the
            // fallback's.
            let n = rng.gen_range(1..6).min(statuses.len());
            let mut pairs: Vec<(String, String)> = statuses
                .choose_multiple(&mut rng, n)
                .map(|s| {
                    (
                        s.to_string(),
                        ["A", "B", "Other"][rng.gen_range(0..3)].to_string(),
                    )
                })
                .collect();
            pairs.push((pairs[0].0.clone(), "B-second".into()));
            let otherwise = ["Other", "A"][rng.gen_range(0..2)];
            let status_key = if raw {
                json!({"field": "milestone"})
            } else {
                json!({"mapped": ["milestone", pairs, otherwise]})
            };
            // Half the rounds filter the loans: the sets are then joined to the loans kept.
            let officers: Option<Vec<String>> = rng.gen_bool(0.5).then(|| {
                w.loans
                    .choose_multiple(&mut rng, 60)
                    .filter_map(|l| l["loanOfficerId"].as_str().map(str::to_string))
                    .collect()
            });
            // The raw rounds 11 and 14 are an Agent's, unfiltered: the sets of the Agent's
            // loans are counted alone first; in round 11 some hold an unlisted status in the
            // window (its rows' statement answers), in round 14 none does (the sets do).
            let unlisted_here = |id: &str| {
                unlisted_loans.contains(id)
                    && w.history.iter().any(|h| {
                        h["loanId"] == id
                            && loanhost::data::history_keys::listed_bit(
                                h["status"].as_str().unwrap(),
                            )
                            .is_none()
                            && (lo..=hi).contains(&epoch_ms(h["occurredAt"].as_str().unwrap()))
                    })
            };
            let in_window = |id: &str| {
                w.history.iter().any(|h| {
                    h["loanId"] == id
                        && (lo..=hi).contains(&epoch_ms(h["occurredAt"].as_str().unwrap()))
                })
            };
            let agent_caller: Option<&Value> = (raw && (round == 11 || round == 14)).then(|| {
                let mut agents: Vec<&Value> = w
                    .agents
                    .values()
                    .filter(|a| {
                        let roles = a["roles"].as_array().unwrap();
                        let has = |r: &str| roles.iter().any(|x| x == r);
                        has("Agent") && !has("Admin") && !has("Processor")
                    })
                    .collect();
                agents.sort_by_key(|a| a["id"].as_str().unwrap().to_string());
                *agents
                    .iter()
                    .find(|a| {
                        let mine: Vec<&str> = w
                            .loans
                            .iter()
                            .filter(|l| visible(a, &w.agents, l))
                            .map(|l| l["id"].as_str().unwrap())
                            .collect();
                        let with_unlisted = mine.iter().any(|id| unlisted_here(id));
                        mine.iter().any(|id| in_window(id)) && with_unlisted == (round == 11)
                    })
                    .expect("an Agent with (round 11) or without (14) unlisted statuses")
            });
            let officers = officers.filter(|_| agent_caller.is_none());
            let filter = officers
                .as_ref()
                .map_or(json!(null), |o| json!({"loanOfficerIds": o}));
            let kept = |id: &str| {
                if let Some(a) = agent_caller {
                    return w
                        .loans
                        .iter()
                        .any(|l| l["id"] == id && visible(a, &w.agents, l));
                }
                officers.as_ref().is_none_or(|o| {
                    w.loans.iter().any(|l| {
                        l["id"] == id
                            && l["loanOfficerId"]
                                .as_str()
                                .is_some_and(|x| o.iter().any(|y| y == x))
                    })
                })
            };

            // Act
            let token = agent_caller.map_or(admin.clone(), |a| {
                w.app.token_for(a["email"].as_str().unwrap())
            });
            let r = w
                .app
                .call_ok(
                    &token,
                    "query_echo",
                    json!({
                        "dataset": "los-status-history",
                        "filter": filter,
                        "predicates": [["occurredAt", low_op, iso(from)], ["occurredAt", high_op, iso(to)]],
                        "groupBy": [{"period": ["occurredAt", if week { "week" } else { "month" }]}, status_key],
                        "distinctOn": "loanId",
                        "aggregates": [["count", null], ["sum", "loan.loanAmount"], ["min", "loan.loanAmount"], ["max", "loan.loanAmount"], ["countOf", "loan.loanAmount"]],
                        "limit": 5000
                    }),
                )
                .await;

            // Assert
            let mut cells: BTreeMap<(String, String), std::collections::BTreeSet<&str>> =
                BTreeMap::new();
            for h in &w.history {
                let id = h["loanId"].as_str().unwrap();
                let at_ms = epoch_ms(h["occurredAt"].as_str().unwrap());
                if !amounts.contains_key(id) || at_ms < lo || at_ms > hi || !kept(id) {
                    continue;
                }
                let period = label(at_ms, if week { "week" } else { "month" });
                let status = h["status"].as_str().unwrap();
                let label = if raw {
                    status
                } else {
                    pairs
                        .iter()
                        .find(|(v, _)| v == status)
                        .map_or(otherwise, |(_, l)| l.as_str())
                };
                cells
                    .entry((period, label.to_string()))
                    .or_default()
                    .insert(id);
            }
            type Row = (
                String,
                String,
                i64,
                Option<i128>,
                Option<i128>,
                Option<i128>,
                i64,
            );
            let want: Vec<Row> = cells
                .iter()
                .map(|((period, label), ids)| {
                    let known: Vec<i128> = ids.iter().filter_map(|id| amounts[id]).collect();
                    (
                        period.clone(),
                        label.clone(),
                        ids.len() as i64,
                        known.iter().copied().reduce(|a, b| a + b),
                        known.iter().copied().min(),
                        known.iter().copied().max(),
                        known.len() as i64,
                    )
                })
                .collect();
            let mut got: Vec<Row> = r["rows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|row| {
                    (
                        row[0].as_str().unwrap().to_string(),
                        row[1].as_str().unwrap().to_string(),
                        row[2].as_i64().unwrap(),
                        scaled(&row[3]),
                        scaled(&row[4]),
                        scaled(&row[5]),
                        row[6].as_i64().unwrap(),
                    )
                })
                .collect();
            got.sort();
            non_empty += usize::from(!want.is_empty());
            let unlisted = raw
                && want
                    .iter()
                    .any(|r| loanhost::data::history_keys::listed_bit(&r.1).is_none());
            unlisted_seen += usize::from(unlisted);
            // An Agent's raw status first reads the sets of the Agent's loans alone; the
            // unlisted rows' statement answers when a set holds one.
            if agent_caller.is_some() && !want.is_empty() {
                agent_raw[usize::from(unlisted)] += 1;
            }
            assert_eq!(
                got,
                want,
                "{} round {round}: {pairs:?} / {otherwise}",
                engine(postgres)
            );
        }
        assert!(
            unlisted_seen >= 4,
            "{}: the raw status met unlisted statuses in only {unlisted_seen} rounds",
            engine(postgres)
        );
        assert!(
            agent_raw == [1, 1],
            "{}: an Agent's raw rounds without and with unlisted statuses: {agent_raw:?}",
            engine(postgres)
        );
        assert!(
            non_empty >= 12,
            "{}: only {non_empty} windows held rows",
            engine(postgres)
        );
    }
}
