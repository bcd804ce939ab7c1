//! `ChatTurnStore`: one row per chat-coach turn (model, steps, usage, cost).

/// The mode names the `chat_turns_mode` check accepts.
pub(crate) const CHAT_MODES: [&str; 3] = ["authoring", "coach", "ops"];

pub(crate) fn chat_turn_from_row<R: crate::codec::RowExt>(
    r: &R,
) -> Result<crate::ChatTurnRecord, crate::DbError> {
    let steps = r.int("steps")?;
    Ok(crate::ChatTurnRecord {
        id: r.uuid("id")?,
        user_id: r.uuid("user_id")?,
        at: r.ts("at")?,
        mode: r.text("mode")?,
        model: r.text("model")?,
        steps: u32::try_from(steps).map_err(|e| crate::DbError::Decode {
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

macro_rules! impl_chat_turns {
    ($store:ty, $enc:ident) => {
        impl ChatTurnStore for $store {
            async fn record_chat_turn(&self, turn: &ChatTurnRecord) -> Result<(), DbError> {
                if !crate::imp::chat_turns::CHAT_MODES.contains(&turn.mode.as_str()) {
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
                sqlx::query(
                    "INSERT INTO chat_turns (id, user_id, at, mode, model, steps, input_tokens, \
                     output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, error) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
                )
                .bind($enc::id(turn.id))
                .bind($enc::id(turn.user_id))
                .bind($enc::ts(turn.at))
                .bind(&turn.mode)
                .bind(&turn.model)
                .bind(steps)
                .bind(u64_to_i64("input tokens", turn.usage.input)?)
                .bind(u64_to_i64("output tokens", turn.usage.output)?)
                .bind(u64_to_i64("cache read tokens", turn.usage.cache_read)?)
                .bind(u64_to_i64("cache write tokens", turn.usage.cache_write)?)
                .bind($enc::dec(turn.cost_usd))
                .bind(error)
                .execute(&self.pool)
                .await
                .map_err(ctx("inserting chat turn"))?;
                Ok(())
            }

            async fn chat_turns(&self, user_id: Uuid, limit: u32) -> Result<Vec<ChatTurnRecord>, DbError> {
                let limit = check_limit("chat turns limit", limit, 1000)?;
                let rows = sqlx::query(
                    "SELECT * FROM chat_turns WHERE user_id = $1 ORDER BY at DESC, id LIMIT $2",
                )
                .bind($enc::id(user_id))
                .bind(limit)
                .fetch_all(&self.pool)
                .await
                .map_err(ctx("listing chat turns"))?;
                rows.iter().map(crate::imp::chat_turns::chat_turn_from_row).collect()
            }
        }
    };
}

pub(crate) use impl_chat_turns;
