//! `searchText` and the trigram index (schema v14): an organisation's or a company's search
//! reads it on PostgreSQL; a person's is written so that it cannot.

use super::*;
use crate::data::query::columns::P;
use crate::data::store::number_placeholders;

/// A count of loans under a search, for `scope`.
fn search(scope: &Scope, postgres: bool) -> Compiled {
    let q = Query {
        filter: Some(r#"{"searchText": "Smith 10%"}"#.into()),
        group_by: vec![Key::Field("status".into())],
        ..q(Dataset::Loans)
    };
    compile(&q, Some(scope), true, postgres).unwrap()
}

#[test]
fn a_persons_search_is_an_expression_on_postgresql_and_everyone_elses_the_column() {
    for postgres in [false, true] {
        for (who, scope) in [
            ("admin", admin()),
            ("company", company()),
            ("agent", agent()),
            ("concierge", concierge()),
        ] {
            // Act
            let c = search(&scope, postgres);

            // Assert: one LIKE per token, lowercased and escaped, on the column or (a person on
            // PostgreSQL) on an expression of it.
            let person = postgres && matches!(who, "agent" | "concierge");
            let column = match (person, postgres, who) {
                (true, _, _) => "(l.search_key || '')",
                (false, false, "admin") => "l.search_key",
                (false, false, _) => "+l.search_key",
                (false, true, _) => "l.search_key",
            };
            assert_eq!(
                c.sql
                    .matches(&format!("{column} LIKE ? ESCAPE '\\'"))
                    .count(),
                2,
                "{who} {postgres}: {}",
                c.sql
            );
            assert_eq!(
                c.sql.contains("|| '')"),
                person,
                "{who} {postgres}: {}",
                c.sql
            );
            let likes: Vec<&str> = c
                .params
                .iter()
                .filter_map(|p| match p {
                    P::T(t) if t.starts_with('%') => Some(t.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(likes, ["%smith%", "%10\\%%"], "{who} {postgres}");
        }
    }
}

/// The plan PostgreSQL makes for `c` with only bitmap scans left at their price (an empty
/// table is otherwise read whole, or in a group key's index order), as one line.
async fn forced_plan(pool: &sqlx::PgPool, c: &Compiled) -> String {
    let mut conn = pool.acquire().await.unwrap();
    for off in ["enable_seqscan", "enable_indexscan", "enable_indexonlyscan"] {
        sqlx::query(&format!("SET {off} = off"))
            .execute(&mut *conn)
            .await
            .unwrap();
    }
    let sql = format!("EXPLAIN (COSTS OFF) {}", number_placeholders(&c.sql));
    let mut q = sqlx::query_scalar::<_, String>(&sql);
    for p in &c.params {
        q = match p {
            P::T(s) => q.bind(s.clone()),
            P::I(i) => q.bind(*i),
        };
    }
    q.fetch_all(&mut *conn).await.unwrap().join(" | ")
}

#[tokio::test]
async fn the_trigram_index_serves_an_organisations_search_and_not_a_persons() {
    // Arrange: a fresh database of the current schema.
    let admin_url = test_postgres_url();
    let server = sqlx::PgPool::connect(&admin_url).await.unwrap();
    let name = format!("loanhost_search_{}", std::process::id());
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&server)
        .await
        .unwrap();
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&server)
        .await
        .unwrap();
    let url = format!("{}/{name}", admin_url.rsplit_once('/').unwrap().0);
    let db = Db::open(&url).await.unwrap();
    let Db::Postgres(pool) = &db else {
        unreachable!()
    };

    // Act
    let lacks = db.lacks_search_index().await.unwrap();
    let organisation = forced_plan(pool, &search(&admin(), true)).await;
    let person = forced_plan(pool, &search(&agent(), true)).await;
    sqlx::query("DROP INDEX loans_search_trigrams")
        .execute(pool)
        .await
        .unwrap();
    let lacks_once_dropped = db.lacks_search_index().await.unwrap();
    drop(db);

    // Assert: the migration built the index; the organisation's search reads it (a
    // company's is written the same: whether its index alone is cheaper is the planner's
    // call on its data), the person's can not.
    assert!(!lacks);
    assert!(lacks_once_dropped, "the host's warning at start reads this");
    assert!(
        organisation.contains("loans_search_trigrams"),
        "{organisation}"
    );
    assert!(!person.contains("loans_search_trigrams"), "{person}");
    sqlx::query(&format!("DROP DATABASE {name} WITH (FORCE)"))
        .execute(&server)
        .await
        .unwrap();
}
