//! [`TickView`]: what a tick read, once, for the context to render from.

use std::borrow::Cow;

use skill_schema::Skill;
use tools::{BarsWindow, OpenOrder, ToolContext};
use types::{Interval, PortfolioSnapshot, RegimeTag, classify_regime};

use super::bars::closed_bars_window;
use super::{ContextError, HTF_FETCH_BARS, data_err};

/// What a tick knows, read once: the context renders from it (no second read through the
/// [`ToolContext`] traits, no second regime), while the [`ToolContext`] serves the model's tool
/// calls. News and events are read by the rendering itself (nothing else reads them).
#[derive(Debug, Clone)]
pub struct TickView<'a> {
    /// The account, checked with [`tools::check_portfolio`].
    pub portfolio: Cow<'a, PortfolioSnapshot>,
    /// Orders resting on the book.
    pub open_orders: Vec<OpenOrder>,
    /// One per symbol of `ctx.symbols`, in that order.
    pub symbols: Vec<SymbolBars<'a>>,
    /// The "Recent trades" body (memory dial on), as the ledger rendered it.
    pub recent_trades: Option<Cow<'a, str>>,
    /// The "Open positions (memory view)" body (memory dial and open positions on).
    pub open_positions: Option<Cow<'a, str>>,
    /// The `<trading_memory>` block, whole (`context.memory.tradingMemory` on): recalled from
    /// the outcome memory by [`crate::trading_memory_block`], which the tick awaits before it
    /// renders; [`TickView::read`] (synchronous) leaves it out.
    pub trading_memory: Option<Cow<'a, str>>,
}

/// One symbol's closed bars at the skill's interval and at each higher timeframe.
#[derive(Debug, Clone)]
pub struct SymbolBars<'a> {
    /// The last `bars_lookback` closed bars (borrowed when the source lends them).
    pub bars: BarsWindow<'a>,
    /// `classify_regime` of `bars`, computed once (`None` without bars).
    pub regime: Option<RegimeTag>,
    /// Per higher timeframe of the skill, in order: the last [`HTF_FETCH_BARS`] closed bars.
    pub higher: Vec<(Interval, BarsWindow<'a>)>,
}

impl<'a> SymbolBars<'a> {
    /// Reads `symbol`'s windows as of `ctx.now` and classifies the regime of the base window.
    ///
    /// # Errors
    /// [`ContextError`] (section `market`) when the market-data source fails.
    pub fn read(skill: &Skill, ctx: &'a ToolContext, symbol: &str) -> Result<Self, ContextError> {
        let cfg = &skill.context;
        let bars = closed_bars_window(ctx, symbol, cfg.bars_interval, cfg.bars_lookback as usize)
            .map_err(data_err("market"))?;
        let regime = (!bars.bars.is_empty()).then(|| classify_regime(&bars.bars));
        Ok(Self {
            bars,
            regime,
            higher: Self::read_higher(skill, ctx, symbol)?,
        })
    }

    /// `symbol`'s windows at the skill's higher timeframes as of `ctx.now`, in order.
    ///
    /// # Errors
    /// [`ContextError`] (section `market`) when the market-data source fails.
    pub fn read_higher(
        skill: &Skill,
        ctx: &'a ToolContext,
        symbol: &str,
    ) -> Result<Vec<(Interval, BarsWindow<'a>)>, ContextError> {
        skill
            .context
            .effective_higher_timeframes()
            .into_iter()
            .map(|h| {
                closed_bars_window(ctx, symbol, h, HTF_FETCH_BARS)
                    .map(|w| (h, w))
                    .map_err(data_err("market"))
            })
            .collect()
    }
}

impl<'a> TickView<'a> {
    /// Reads everything the context shows, except news and events, through `ctx`'s sources.
    ///
    /// # Errors
    /// [`ContextError`] naming the section whose data source failed.
    pub fn read(skill: &Skill, ctx: &'a ToolContext) -> Result<Self, ContextError> {
        let symbols = ctx
            .symbols
            .iter()
            .map(|s| SymbolBars::read(skill, ctx, s))
            .collect::<Result<_, _>>()?;
        let portfolio = ctx
            .portfolio
            .portfolio()
            .and_then(|p| tools::check_portfolio(&p).map(|()| p))
            .map_err(data_err("portfolio"))?;
        let open_orders = ctx
            .portfolio
            .open_orders()
            .map_err(data_err("open orders"))?;
        let memory = &skill.context.memory;
        let (mut recent_trades, mut open_positions) = (None, None);
        if memory.enabled {
            let k = memory.recent_trades_k.min(types::MAX_MEMORY_K);
            recent_trades = Some(Cow::Owned(
                ctx.memory
                    .recent_trades(k, ctx.now)
                    .map_err(data_err("recent trades"))?,
            ));
            if memory.include_open_positions {
                open_positions = Some(Cow::Owned(
                    ctx.memory
                        .open_positions(ctx.now)
                        .map_err(data_err("open positions"))?,
                ));
            }
        }
        Ok(Self {
            portfolio: Cow::Owned(portfolio),
            open_orders,
            symbols,
            recent_trades,
            open_positions,
            trading_memory: None,
        })
    }
}
