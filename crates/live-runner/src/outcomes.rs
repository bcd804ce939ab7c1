//! The outcome scorer of seed 003 for the live runner, off the tick path: the outcomes whose
//! +1h/+4h/+24h marks have passed are scored from Hyperliquid candles of their deployment's bar
//! interval (the closes of the bars at the marks — never the price when this runs), with
//! `tick::score_due_outcomes`, the same scorer a backtest runs in its loop. Run it on any
//! schedule (`live-runner score-outcomes` from cron, every 15 minutes as seed 003 suggests): a
//! late run records the same prices; an outcome is scored in full once and never again.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use db::{OutcomeStore, RegistryStore};
use hyperliquid::InfoClient;
use tick::{ScoreReport, score_due_outcomes};
use tools::Preloaded;
use types::Interval;
use uuid::Uuid;

use crate::runner::RunError;
use crate::runner::market::closed_candles;
use crate::schedule::bar_length;

/// Scores the outcomes due at `now` (at most `limit` per run, oldest first).
///
/// # Errors
/// [`RunError::Db`] when the store cannot be read or written, [`RunError::Skill`] when a
/// deployment's stored skill does not parse, [`RunError::Market`] when candles cannot be
/// fetched (nothing is written then; the next run tries again).
pub async fn score_outcomes<S>(
    store: &S,
    info: &InfoClient,
    now: DateTime<Utc>,
    limit: u32,
) -> Result<ScoreReport, RunError>
where
    S: OutcomeStore + RegistryStore + Sync,
{
    let pending = store.unscored_outcomes(now, limit).await?;
    // Each deployment's bar interval, read from its skill version.
    let mut intervals: BTreeMap<Uuid, Interval> = BTreeMap::new();
    for id in pending
        .iter()
        .map(|o| o.deployment_id)
        .collect::<BTreeSet<_>>()
    {
        let d = store.get_deployment(id).await?;
        let version = store.get_skill_version(d.skill_id, d.skill_version).await?;
        let skill = crate::runner::skills::stored_skill(&version)?;
        intervals.insert(id, skill.context.bars_interval);
    }
    // Candles per symbol and interval, from the oldest pending outcome's tick to `now`.
    let mut since: BTreeMap<(String, Interval), DateTime<Utc>> = BTreeMap::new();
    for o in &pending {
        if let Some(iv) = intervals.get(&o.deployment_id) {
            let e = since.entry((o.symbol.clone(), *iv)).or_insert(o.tick_at);
            *e = (*e).min(o.tick_at);
        }
    }
    let mut market = Preloaded::new();
    for ((symbol, iv), from) in &since {
        let closed = closed_candles(info, symbol, *iv, *from - bar_length(*iv), now).await?;
        market.insert_bars(symbol, *iv, closed);
    }
    let report = score_due_outcomes(store, &market, &intervals, now, limit)
        .await
        .map_err(|tick::ScoreError::Store(e)| RunError::Db(e))?;
    Ok(report)
}
