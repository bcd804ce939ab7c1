//! The `<trading_memory>` block: recalled from the outcome memory as of the tick (the one
//! section whose data is read on demand, through [`tools::TradeMemory`]) and written by
//! [`outcomes::block`].

use outcomes::block::{
    CONDITION_ROWS, RECENT_ROWS, STATS_DAYS, SymbolMemory, write_trading_memory,
};
use outcomes::{MAX_RECALL_ROWS, RecallQuery};
use skill_schema::Skill;
use tools::ToolContext;
use types::RegimeTag;

use super::ContextError;

/// The block for `ctx.symbols` at `ctx.now`, or `None` when the skill does not ask for it
/// (`context.memory.tradingMemory`). `regimes` holds each symbol's current regime, in
/// `ctx.symbols` order (`None` for a symbol without bars: its "Similar Market Conditions" part
/// is left out).
///
/// Per symbol it reads, as of the tick: its [`RECENT_ROWS`] newest outcomes, its outcomes of the
/// last 30 days, and the newest outcomes of any symbol in its current condition (of which the
/// newest [`CONDITION_ROWS`] graded count; at most [`MAX_RECALL_ROWS`] are read, so a deployment
/// that proposed more often than that in 24 hours sees fewer).
///
/// # Errors
/// [`ContextError`] (section `trading memory`) when the memory cannot be read.
pub async fn trading_memory_block(
    skill: &Skill,
    ctx: &ToolContext,
    regimes: &[Option<RegimeTag>],
) -> Result<Option<String>, ContextError> {
    if !(skill.context.memory.enabled && skill.context.memory.trading_memory) {
        return Ok(None);
    }
    let err = |source| ContextError {
        section: "trading memory",
        source,
    };
    let mut symbols = Vec::with_capacity(ctx.symbols.len());
    for (i, symbol) in ctx.symbols.iter().enumerate() {
        let base = RecallQuery {
            symbol: Some(symbol.clone()),
            ..RecallQuery::new(ctx.now, RECENT_ROWS)
        };
        let memory = &ctx.trade_memory;
        let recent = memory.recall(&base).await.map_err(err)?;
        let window = RecallQuery {
            since: Some(outcomes::window_start(ctx.now, STATS_DAYS)),
            limit: MAX_RECALL_ROWS,
            ..base.clone()
        };
        let last_30_days = memory.recall(&window).await.map_err(err)?;
        let condition = regimes.get(i).copied().flatten();
        let in_condition = match condition {
            Some(c) => {
                let q = RecallQuery {
                    market_condition: Some(c),
                    ..RecallQuery::new(ctx.now, MAX_RECALL_ROWS)
                };
                let mut rows = memory.recall(&q).await.map_err(err)?;
                rows.retain(|r| r.outcome.score.outcome_grade.is_some());
                rows.truncate(CONDITION_ROWS as usize);
                rows
            }
            None => Vec::new(),
        };
        symbols.push(SymbolMemory {
            symbol: symbol.clone(),
            recent,
            last_30_days,
            condition,
            in_condition,
        });
    }
    let mut out = String::with_capacity(1024);
    write_trading_memory(&mut out, &symbols);
    Ok(Some(out))
}
