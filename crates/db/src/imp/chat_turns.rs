//! `ChatTurnStore`: one row per chat-coach turn (model, steps, usage, cost).

use uuid::Uuid;

use super::{Backend, Dialect, query};
use crate::DbError;
use crate::codec::{self, RowExt, check_len, check_limit, u64_to_i64};
use crate::error::ctx;
use crate::model::{ChatTurnRecord, MAX_CHAT_TURN_ERROR_CHARS};
use crate::traits::ChatTurnStore;

/// The mode names the `chat_turns_mode` check accepts.
const CHAT_MODES: [&str; 3] = ["authoring", "coach", "ops"];

fn chat_turn_from_row<R: RowExt>(r: &R) -> Result<ChatTurnRecord, DbError> {
    let steps = r.int("steps")?;
    Ok(ChatTurnRecord {
        id: r.uuid("id")?,
        user_id: r.uuid("user_id")?,
        at: r.ts("at")?,
        mode: r.text("mode")?,
        model: r.text("model")?,
        steps: u32::try_from(steps).map_err(|e| DbError::Decode {
            column: "steps".to_owned(),
            detail: e.to_string(),
        })?,
        usage: types::Usage {
            input: r.count("input_tokens")?,
            output: r.count("output_tokens")?,
            cache_read: r.count("cache_read_tokens")?,
            cache_write: r.count("cache_write_tokens")?,
        },
        cost_usd: r.dec("cost_usd")?,
        error: r.opt_text("error")?,
    })
}

impl<S: Backend<Db = D>, D: Dialect> ChatTurnStore for S {
    async fn record_chat_turn(&self, turn: &ChatTurnRecord) -> Result<(), DbError> {
        if !CHAT_MODES.contains(&turn.mode.as_str()) {
            return Err(DbError::Invalid {
                what: "chat turn mode",
                detail: format!("{:?} is not one of authoring, coach, ops", turn.mode),
            });
        }
        check_len("chat turn model", &turn.model, 1, 200)?;
        if turn.cost_usd.is_sign_negative() && !turn.cost_usd.is_zero() {
            return Err(DbError::Invalid {
                what: "chat turn cost",
                detail: format!("{} is negative", turn.cost_usd),
            });
        }
        let steps = i32::try_from(turn.steps).map_err(|_| DbError::Invalid {
            what: "chat turn steps",
            detail: format!("{} does not fit a 32-bit column", turn.steps),
        })?;
        let error = turn
            .error
            .as_deref()
            .map(|e| codec::truncate_chars(e, MAX_CHAT_TURN_ERROR_CHARS));
        query(
            "INSERT INTO chat_turns (id, user_id, at, mode, model, steps, input_tokens, \
             output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, error) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .bind(D::id(turn.id))
        .bind(D::id(turn.user_id))
        .bind(D::ts(turn.at))
        .bind(&turn.mode)
        .bind(&turn.model)
        .bind(steps)
        .bind(u64_to_i64("input tokens", turn.usage.input)?)
        .bind(u64_to_i64("output tokens", turn.usage.output)?)
        .bind(u64_to_i64("cache read tokens", turn.usage.cache_read)?)
        .bind(u64_to_i64("cache write tokens", turn.usage.cache_write)?)
        .bind(D::dec(turn.cost_usd))
        .bind(error)
        .execute(self.pool())
        .await
        .map_err(ctx("inserting chat turn"))?;
        Ok(())
    }

    async fn chat_turns(&self, user_id: Uuid, limit: u32) -> Result<Vec<ChatTurnRecord>, DbError> {
        let limit = check_limit("chat turns limit", limit, 1000)?;
        let rows =
            query("SELECT * FROM chat_turns WHERE user_id = $1 ORDER BY at DESC, id LIMIT $2")
                .bind(D::id(user_id))
                .bind(limit)
                .fetch_all(self.pool())
                .await
                .map_err(ctx("listing chat turns"))?;
        rows.iter().map(chat_turn_from_row).collect()
    }
}
