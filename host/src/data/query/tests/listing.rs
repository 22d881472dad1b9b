//! Listing: walking every page of a list gives every row of the caller's scope once, in the
//! order asked (nulls last either way, ties by key), and a page continued on another snapshot
//! is refused.

use super::*;
use crate::data::cursor::Position;

/// 60 loans: officers `me` (every third) and `o`, amounts with ties and nulls, updated
/// instants with ties and nulls.
async fn loans() -> (tempfile::TempDir, Db, ReportStore) {
    let (dir, db, store) = one_sqlite_connection().await;
    let Db::Sqlite(pool) = &db else {
        unreachable!()
    };
    for n in 1..=60i64 {
        let amount = (n % 7 != 0).then_some((n % 5) * 100_000_000);
        let updated = (n % 11 != 0).then_some(1_700_000_000_000 + (n % 4) * 1000);
        let officer = if n % 3 == 0 { "me" } else { "o" };
        sqlx::query("INSERT INTO loan_keys (key, id) VALUES (?1, ?2)")
            .bind(n)
            .bind(format!("id-{n:02}"))
            .execute(pool)
            .await
            .unwrap();
        sqlx::query(
            "INSERT INTO loans (key, id, loan_number, search_key, status, loan_amount, updated, \
             loan_officer_id) VALUES (?1, ?2, ?3, '', 'Loan Open', ?4, ?5, ?6)",
        )
        .bind(n)
        .bind(format!("id-{n:02}"))
        .bind(format!("L-{n:02}"))
        .bind(amount)
        .bind(updated)
        .bind(officer)
        .execute(pool)
        .await
        .unwrap();
    }
    (dir, db, store)
}

fn list_of(order: ListOrder, descending: bool, page_size: u32) -> ListQuery {
    ListQuery {
        dataset: Dataset::Loans,
        filter: None,
        predicates: vec![],
        fields: vec!["id".into(), "loanAmount".into(), "updated".into()],
        order,
        descending,
        page_size,
    }
}

/// Every page of `q` for `scope`, walked to the end: the ids in order.
async fn walk(store: &ReportStore, q: &ListQuery, scope: &Scope) -> Vec<String> {
    let mut ids = Vec::new();
    let mut after = None;
    for _ in 0..100 {
        let page = list(
            store,
            q,
            after,
            Some(scope),
            Readers::default(),
            Allowance::standard(),
        )
        .await
        .unwrap();
        assert!(page.rows.len() <= q.page_size as usize);
        assert_eq!(page.loan_ids.len(), page.rows.len());
        for (row, id) in page.rows.iter().zip(&page.loan_ids) {
            assert_eq!(row[0], Value::Text(id.clone()));
            ids.push(id.clone());
        }
        match page.next {
            Some(p) => after = Some(p),
            None => return ids,
        }
    }
    panic!("the walk did not end in 100 pages");
}

/// The ids `scope` sees in `order`, computed here from the rows as inserted.
fn expected(order: ListOrder, descending: bool, only_mine: bool) -> Vec<String> {
    let mut rows: Vec<(Option<i64>, i64)> = (1..=60i64)
        .filter(|n| !only_mine || n % 3 == 0)
        .map(|n| {
            let value = match order {
                ListOrder::Amount => (n % 7 != 0).then_some((n % 5) * 100_000_000),
                ListOrder::Updated => (n % 11 != 0).then_some(1_700_000_000_000 + (n % 4) * 1000),
                _ => None,
            };
            (value, n)
        })
        .collect();
    rows.sort_by(|a, b| {
        let by = match (a.0, b.0) {
            (Some(x), Some(y)) => x.cmp(&y).then(a.1.cmp(&b.1)),
            (Some(_), None) => return std::cmp::Ordering::Less,
            (None, Some(_)) => return std::cmp::Ordering::Greater,
            (None, None) => a.1.cmp(&b.1),
        };
        if descending {
            by.reverse()
        } else {
            by
        }
    });
    rows.into_iter()
        .map(|(_, n)| format!("id-{n:02}"))
        .collect()
}

#[tokio::test]
async fn walking_every_page_gives_each_row_of_the_scope_once_in_order() {
    // Arrange
    let (_dir, _db, store) = loans().await;
    for order in [
        ListOrder::Amount,
        ListOrder::Updated,
        ListOrder::ClosingDate,
    ] {
        for descending in [false, true] {
            for page_size in [1, 7, 100] {
                for (scope, mine) in [(admin(), false), (agent(), true)] {
                    // Act
                    let ids = walk(&store, &list_of(order, descending, page_size), &scope).await;

                    // Assert
                    assert_eq!(
                        ids,
                        expected(order, descending, mine),
                        "{order:?} desc={descending} page={page_size} mine={mine}"
                    );
                }
            }
        }
    }
}

#[tokio::test]
async fn a_page_continued_on_another_snapshot_is_refused() {
    // Arrange: the first page, then an import's bump of the generation.
    let (_dir, db, store) = loans().await;
    let q = list_of(ListOrder::Amount, false, 10);
    let first = list(
        &store,
        &q,
        None,
        Some(&admin()),
        Readers::default(),
        Allowance::standard(),
    )
    .await
    .unwrap();
    let next = first.next.unwrap();
    let Db::Sqlite(pool) = &db else {
        unreachable!()
    };
    sqlx::query("UPDATE listing_state SET generation = generation + 1")
        .execute(pool)
        .await
        .unwrap();

    // Act
    let continued = list(
        &store,
        &q,
        Some(next),
        Some(&admin()),
        Readers::default(),
        Allowance::standard(),
    )
    .await;
    // A position past every row, on the old snapshot: no row to carry the generation.
    let past = Position {
        value: Some(i64::MAX),
        ..next
    };
    let beyond = list(
        &store,
        &q,
        Some(past),
        Some(&admin()),
        Readers::default(),
        Allowance::standard(),
    )
    .await;
    let fresh = list(
        &store,
        &q,
        None,
        Some(&admin()),
        Readers::default(),
        Allowance::standard(),
    )
    .await
    .unwrap();

    // Assert
    assert_eq!(continued, Err(ListError::Changed));
    assert_eq!(beyond, Err(ListError::Changed));
    assert_eq!(fresh.next.unwrap().generation, next.generation + 1);
}

#[tokio::test]
async fn lists_refuse_other_datasets_page_sizes_out_of_range_and_names_without_the_right() {
    // Arrange
    let (_dir, _db, store) = loans().await;
    let mut names = list_of(ListOrder::Amount, false, 10);
    names.fields.push("loanOfficerName".into());
    let cases = [
        ListQuery {
            dataset: Dataset::DwDeals,
            ..list_of(ListOrder::Amount, false, 10)
        },
        list_of(ListOrder::Amount, false, 0),
        list_of(ListOrder::Amount, false, MAX_PAGE_SIZE + 1),
        ListQuery {
            fields: vec![],
            ..list_of(ListOrder::Amount, false, 10)
        },
        ListQuery {
            fields: vec!["nope".into()],
            ..list_of(ListOrder::Amount, false, 10)
        },
    ];

    // Act / Assert
    for q in &cases {
        let e = list(
            &store,
            q,
            None,
            Some(&admin()),
            Readers {
                names: true,
                borrowers: true,
            },
            Allowance::standard(),
        )
        .await;
        assert!(
            matches!(e, Err(ListError::Query(QueryError::Invalid(_)))),
            "{q:?}: {e:?}"
        );
    }
    let e = list(
        &store,
        &names,
        None,
        Some(&admin()),
        Readers::default(),
        Allowance::standard(),
    )
    .await;
    assert!(
        matches!(e, Err(ListError::Query(QueryError::Denied(_)))),
        "{e:?}"
    );
}

#[tokio::test]
async fn borrowers_names_are_listed_only_for_callers_who_may_read_them_and_never_aggregated() {
    // Arrange
    let (_dir, _db, store) = loans().await;
    let mut named = list_of(ListOrder::Amount, false, 10);
    named.fields.push("borrowerLastName".into());
    let counted = Query {
        aggregates: vec![Aggregate::CountDistinct("borrowerLastName".into())],
        ..q(Dataset::Loans)
    };
    let grouped = Query {
        group_by: vec![Key::Field("borrowerFirstName".into())],
        ..q(Dataset::Loans)
    };
    let reads = |borrowers| Readers {
        names: false,
        borrowers,
    };

    // Act
    let allowed = list(
        &store,
        &named,
        None,
        Some(&admin()),
        reads(true),
        Allowance::standard(),
    )
    .await;
    let refused = list(
        &store,
        &named,
        None,
        Some(&admin()),
        reads(false),
        Allowance::standard(),
    )
    .await;
    let aggregates = [
        run(
            &store,
            &counted,
            Some(&admin()),
            true,
            Allowance::standard(),
        )
        .await,
        run(
            &store,
            &grouped,
            Some(&admin()),
            true,
            Allowance::standard(),
        )
        .await,
    ];

    // Assert
    assert_eq!(allowed.unwrap().rows.len(), 10);
    assert!(
        matches!(&refused, Err(ListError::Query(QueryError::Denied(m))) if m.contains("is a borrower's name")),
        "{refused:?}"
    );
    for a in aggregates {
        assert!(
            matches!(&a, Err(QueryError::Denied(m)) if m.contains("only listed")),
            "{a:?}"
        );
    }
}
