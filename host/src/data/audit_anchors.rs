//! Anchors of the hosts' audit chains on PostgreSQL (schema v23): a chain's last line, its
//! number and seal, recorded every few seconds outside the log's folder, and read back by
//! `loanhost audit verify --anchors`.

use sqlx::PgPool;

use super::{Db, DbError};

/// Where anchors are kept: the fleet's database.
#[derive(Debug, Clone)]
pub struct AnchorStore {
    pool: PgPool,
}

impl AnchorStore {
    /// The store on `db`, when it is PostgreSQL.
    pub fn of(db: &Db) -> Option<AnchorStore> {
        match db {
            Db::Postgres(pool) => Some(AnchorStore { pool: pool.clone() }),
            Db::Sqlite(_) => None,
        }
    }

    /// Records that line `seq` of `chain` has `seal` (again: nothing changes).
    pub async fn record(&self, chain: &str, seq: u64, seal: &str) -> Result<(), DbError> {
        sqlx::query(
            "INSERT INTO audit_anchors (chain, seq, seal) VALUES ($1, $2, $3) \
             ON CONFLICT (chain, seq) DO NOTHING",
        )
        .bind(chain)
        .bind(seq as i64)
        .bind(seal)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The anchors of `chain`, per `seq`: its seal and when it was anchored (RFC 3339, UTC).
    pub async fn read(
        &self,
        chain: &str,
    ) -> Result<std::collections::BTreeMap<u64, (String, String)>, DbError> {
        let rows: Vec<(i64, String, String)> = sqlx::query_as(
            "SELECT seq, seal, to_char(anchored AT TIME ZONE 'UTC', \
                    'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') \
             FROM audit_anchors WHERE chain = $1 ORDER BY seq",
        )
        .bind(chain)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(seq, seal, at)| (seq as u64, (seal, at)))
            .collect())
    }
}
