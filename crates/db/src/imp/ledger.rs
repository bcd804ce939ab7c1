//! `LedgerStore`: the ledger rows (`trade_history`) and the stored fills.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use types::TradeRecord;
use uuid::Uuid;

use super::{Backend, Dialect, query};
use crate::DbError;
use crate::codec::{self, check_limit};
use crate::error::ctx;
use crate::model::StoredFill;
use crate::traits::LedgerStore;

impl<S: Backend<Db = D>, D: Dialect> LedgerStore for S {
    async fn get_trade(&self, id: Uuid) -> Result<TradeRecord, DbError> {
        let row = query("SELECT * FROM trade_history WHERE id = $1")
            .bind(D::id(id))
            .fetch_optional(self.pool())
            .await
            .map_err(ctx("reading trade"))?
            .ok_or_else(|| DbError::not_found("trade", id))?;
        codec::trade_from_row(&row)
    }

    async fn open_trades(&self, deployment_id: Uuid) -> Result<Vec<TradeRecord>, DbError> {
        let rows = query(
            "SELECT * FROM trade_history WHERE deployment_id = $1 AND status = 'open' ORDER BY symbol",
        )
        .bind(D::id(deployment_id))
        .fetch_all(self.pool())
        .await
        .map_err(ctx("reading open trades"))?;
        rows.iter().map(codec::trade_from_row).collect()
    }

    async fn closed_trades_exited_after(
        &self,
        deployment_id: Uuid,
        after: DateTime<Utc>,
        as_of: DateTime<Utc>,
    ) -> Result<Vec<TradeRecord>, DbError> {
        // By `trade_history_closed_exit_idx` (the rows after the note's window are few);
        // `coalesce` keeps the `closed_at` index, which covers every row, out of the
        // choice (see `closed_trades`).
        let rows = query(
            "SELECT * FROM trade_history WHERE deployment_id = $1 AND status = 'closed' \
             AND exit_tick_at > $2 AND coalesce(closed_at, closed_at) <= $3 \
             ORDER BY entry_tick_at, id",
        )
        .bind(D::id(deployment_id))
        .bind(D::ts(after))
        .bind(D::ts(as_of))
        .fetch_all(self.pool())
        .await
        .map_err(ctx("reading the trades closed since the last note"))?;
        rows.iter().map(codec::trade_from_row).collect()
    }

    async fn all_trades(&self, deployment_id: Uuid) -> Result<Vec<TradeRecord>, DbError> {
        let rows = query(
            "SELECT * FROM trade_history WHERE deployment_id = $1 ORDER BY entry_tick_at, id",
        )
        .bind(D::id(deployment_id))
        .fetch_all(self.pool())
        .await
        .map_err(ctx("reading trades"))?;
        rows.iter().map(codec::trade_from_row).collect()
    }

    async fn closed_trades(
        &self,
        deployment_id: Uuid,
        as_of: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<TradeRecord>, DbError> {
        let limit = check_limit("closed trades limit", limit, types::MAX_MEMORY_K)?;
        // Read in `trade_history_closed_entry_idx`'s order and stop after `limit`
        // rows. `coalesce` keeps `closed_at` (never null on a closed row) out of the
        // index choice: without statistics SQLite would pick the `closed_at` index for
        // the range and sort every closed row of the deployment.
        let rows = query(
            "SELECT * FROM trade_history WHERE deployment_id = $1 AND status = 'closed' \
             AND coalesce(closed_at, closed_at) <= $2 \
             ORDER BY entry_tick_at DESC, id DESC LIMIT $3",
        )
        .bind(D::id(deployment_id))
        .bind(D::ts(as_of))
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(ctx("reading closed trades"))?;
        rows.iter().map(codec::trade_from_row).collect()
    }

    async fn closed_trades_for_skill(
        &self,
        skill_id: Uuid,
        skill_version: i32,
        as_of: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<TradeRecord>, DbError> {
        let limit = check_limit("closed trades limit", limit, types::MAX_MEMORY_K)?;
        let rows = query(
            "SELECT * FROM trade_history WHERE skill_id = $1 AND skill_version = $2 \
             AND status = 'closed' AND closed_at <= $3 ORDER BY entry_tick_at DESC, id DESC LIMIT $4",
        )
        .bind(D::id(skill_id))
        .bind(skill_version)
        .bind(D::ts(as_of))
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(ctx("reading closed trades of skill"))?;
        rows.iter().map(codec::trade_from_row).collect()
    }

    async fn count_closed_between(
        &self,
        deployment_id: Uuid,
        after: DateTime<Utc>,
        as_of: DateTime<Utc>,
    ) -> Result<u64, DbError> {
        let row = query(
            "SELECT COUNT(*) AS n FROM trade_history WHERE deployment_id = $1 AND status = 'closed' \
             AND closed_at > $2 AND closed_at <= $3",
        )
        .bind(D::id(deployment_id))
        .bind(D::ts(after))
        .bind(D::ts(as_of))
        .fetch_one(self.pool())
        .await
        .map_err(ctx("counting the closes since a note"))?;
        codec::RowExt::count(&row, "n")
    }

    async fn count_closed_trades(
        &self,
        deployment_id: Uuid,
        as_of: DateTime<Utc>,
    ) -> Result<u64, DbError> {
        let row = query(
            "SELECT COUNT(*) AS n FROM trade_history WHERE deployment_id = $1 AND status = 'closed' \
             AND closed_at <= $2",
        )
        .bind(D::id(deployment_id))
        .bind(D::ts(as_of))
        .fetch_one(self.pool())
        .await
        .map_err(ctx("counting closed trades"))?;
        codec::RowExt::count(&row, "n")
    }

    async fn applied_fill_ids(&self, deployment_id: Uuid) -> Result<BTreeSet<String>, DbError> {
        let rows = query("SELECT broker_fill_id FROM fills WHERE deployment_id = $1")
            .bind(D::id(deployment_id))
            .fetch_all(self.pool())
            .await
            .map_err(ctx("reading applied fill ids"))?;
        rows.iter()
            .map(|r| codec::RowExt::text(r, "broker_fill_id"))
            .collect()
    }

    async fn applied_fill_ids_since(
        &self,
        deployment_id: Uuid,
        since: DateTime<Utc>,
    ) -> Result<BTreeSet<String>, DbError> {
        let rows =
            query("SELECT broker_fill_id FROM fills WHERE deployment_id = $1 AND time >= $2")
                .bind(D::id(deployment_id))
                .bind(D::ts(since))
                .fetch_all(self.pool())
                .await
                .map_err(ctx("reading recent applied fill ids"))?;
        rows.iter()
            .map(|r| codec::RowExt::text(r, "broker_fill_id"))
            .collect()
    }

    async fn list_fills(
        &self,
        deployment_id: Uuid,
        since: Option<DateTime<Utc>>,
    ) -> Result<Vec<StoredFill>, DbError> {
        let rows = query(
            "SELECT * FROM fills WHERE deployment_id = $1 AND ($2 IS NULL OR time >= $2) \
             ORDER BY time, broker_fill_id",
        )
        .bind(D::id(deployment_id))
        .bind(D::ots(since))
        .fetch_all(self.pool())
        .await
        .map_err(ctx("listing fills"))?;
        rows.iter().map(codec::fill_from_row).collect()
    }
}
