//! [`RenderCache`]: what one deployment's ticks reuse from the previous tick's rendering.

use std::collections::VecDeque;

use tools::{BarsWindow, SeriesOrigin};
use types::{Bar, Interval, RegimeTag, classify_regime};

use super::text::{price_dp, push_bar_row};

/// What one deployment's ticks can reuse from the previous tick's rendering: per symbol and
/// interval, the window of bars it showed with their printed rows (a closed bar never changes,
/// so its row never does), the composed system prompt (it changes only with the lessons), the
/// JSON text of the last tick's model steps (reused for a step that is the same record) and the
/// last "Recent trades" section with the body it was rendered from (reused for the same body).
///
/// Keep one per deployment (`tick::TickState` does): the system prompt memo belongs to one
/// skill. The cache only saves work, so the text is byte-identical with or without it:
/// - a bar table is slid (rows of bars that left the window dropped, rows of new bars appended)
///   only when the bars it keeps are the ones the source serves now: both windows are runs of
///   one series ([`tools::SeriesOrigin`]: a source that changes its bars gives them a new id),
///   or, when the source does not vouch for a series, they compare equal bit for bit; a revised
///   bar, a window that is not a slide of the last one or a change in the decimals printed
///   rebuilds the table.
///
/// Tables not used by a tick are dropped at its end, so the cache holds no row of a bar that
/// left the window and its size is bounded by one tick's bars.
#[derive(Debug, Default, Clone)]
pub struct RenderCache {
    /// Per symbol and interval (a deployment has a handful: a linear search beats hashing).
    pub(super) tables: Vec<BarTable>,
    pub(super) generation: u64,
    /// Length of the last message, to allocate the next one at once.
    pub(super) text_len: usize,
    pub(crate) system_prompt: Option<(Option<prompt_compose::Lessons>, String)>,
    /// The JSON text of the last tick's model steps (a step equal to one of them is not
    /// serialised again).
    pub(crate) steps: crate::run::StepMemo,
    /// The last "Recent trades" body, the section rendered from it and its length in
    /// characters.
    pub(crate) recent_trades: Option<(String, String, usize)>,
    /// The risk caps section's fixed text.
    pub(crate) risk: Option<super::sections::RiskText>,
}

/// One symbol's bars at one interval as the last tick fetched them, with printed rows.
#[derive(Debug, Clone)]
pub(super) struct BarTable {
    symbol: String,
    pub(super) interval: Interval,
    /// The tick (`RenderCache::generation`) that last used it.
    used: u64,
    /// The window the source served (closed bars, oldest first, one per open time).
    pub(super) bars: Vec<Bar>,
    /// Where `bars` sit in the source's series, when it vouches for one.
    origin: Option<SeriesOrigin>,
    /// Decimals each bar of `bars` needs (`price_dp` of that bar alone).
    dps: Vec<u32>,
    /// `classify_regime(&bars)`, once asked for.
    regime: Option<RegimeTag>,
    /// The rows of `bars[rows_from..rows_from + row_lens.len()]` printed with `rows_dp`
    /// decimals, each starting with `\n`. ASCII only.
    rows: String,
    row_lens: VecDeque<usize>,
    rows_from: usize,
    rows_dp: u32,
}

impl BarTable {
    fn new(symbol: &str, interval: Interval) -> Self {
        Self {
            symbol: symbol.to_owned(),
            interval,
            used: 0,
            bars: Vec::new(),
            origin: None,
            dps: Vec::new(),
            regime: None,
            rows: String::new(),
            row_lens: VecDeque::new(),
            rows_from: 0,
            rows_dp: 0,
        }
    }

    /// Makes `bars` equal to `window`: a slide when the bars it keeps are unchanged, else a
    /// rebuild.
    fn sync(&mut self, window: &BarsWindow<'_>) {
        let cached_origin = std::mem::replace(&mut self.origin, window.origin);
        let window = &*window.bars;
        // Where the window starts among the cached bars, and whether both are runs of one
        // series (which agree on every bar number they share: no need to compare them).
        let start = match (cached_origin, self.origin) {
            (Some(old), Some(new)) if old.series == new.series => new
                .start
                .checked_sub(old.start)
                .filter(|&start| start <= self.bars.len())
                .map(|start| (start, true)),
            _ => window.first().and_then(|first| {
                self.bars
                    .binary_search_by(|b| b.time.cmp(&first.time))
                    .ok()
                    .map(|start| (start, false))
            }),
        };
        if let Some((start, one_series)) = start {
            let kept = self.bars.len() - start;
            let same = kept <= window.len()
                && if one_series {
                    // A guard against a source breaking the series contract, not a proof.
                    kept == 0
                        || (self.bars[start].time == window[0].time
                            && self.bars[start + kept - 1].time == window[kept - 1].time)
                } else {
                    same_bars(&self.bars[start..], &window[..kept])
                };
            if same {
                if start == 0 && kept == window.len() {
                    return;
                }
                self.drop_front(start);
                for b in &window[kept..] {
                    self.bars.push(b.clone());
                    self.dps.push(bar_dp(b));
                }
                self.regime = None;
                return;
            }
        }
        // First sight, a revised bar, or not a slide of the last window: start over.
        self.bars.clear();
        self.bars.extend_from_slice(window);
        self.dps.clear();
        self.dps.extend(window.iter().map(bar_dp));
        self.regime = None;
        self.rows.clear();
        self.row_lens.clear();
        self.rows_from = 0;
    }

    /// Drops the first `n` bars and their rows.
    fn drop_front(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        self.bars.drain(..n);
        self.dps.drain(..n);
        let rows = self.row_lens.len();
        let gone = n.saturating_sub(self.rows_from).min(rows);
        if gone == rows {
            self.rows.clear();
            self.row_lens.clear();
            self.rows_from = 0;
        } else {
            let bytes: usize = self.row_lens.drain(..gone).sum();
            self.rows.drain(..bytes);
            self.rows_from = self.rows_from + gone - n;
        }
    }

    pub(super) fn max_dp(&self) -> u32 {
        self.dps.iter().copied().max().unwrap_or(0)
    }

    /// Sets the regime of `bars`, classified by the caller over the same window.
    pub(super) fn set_regime(&mut self, regime: RegimeTag) {
        self.regime = Some(regime);
    }

    pub(super) fn regime(&mut self) -> RegimeTag {
        match self.regime {
            Some(r) => r,
            None => *self.regime.insert(classify_regime(&self.bars)),
        }
    }

    /// The rows of the last `shown` bars printed with `dp` decimals, reusing the rows already
    /// printed with `dp`.
    pub(super) fn rows(&mut self, shown: usize, dp: u32) -> &str {
        let len = self.bars.len();
        let from = len - shown.min(len);
        let end = self.rows_from + self.row_lens.len();
        if self.rows_dp != dp || self.row_lens.is_empty() || self.rows_from > from || end < from {
            self.rows.clear();
            self.row_lens.clear();
            self.rows_from = from;
            self.rows_dp = dp;
        } else {
            let gone = from - self.rows_from;
            let bytes: usize = self.row_lens.drain(..gone).sum();
            self.rows.drain(..bytes);
            self.rows_from = from;
        }
        for b in &self.bars[self.rows_from + self.row_lens.len()..] {
            let before = self.rows.len();
            push_bar_row(&mut self.rows, b, self.interval, dp);
            self.row_lens.push_back(self.rows.len() - before);
        }
        &self.rows
    }
}

/// Decimals one bar's prices need.
fn bar_dp(bar: &Bar) -> u32 {
    price_dp(std::iter::once(bar))
}

/// Whether the two runs of bars are identical bit for bit (a decimal printed the same but
/// stored differently counts as different: the table is then rebuilt, never wrong).
fn same_bars(a: &[Bar], b: &[Bar]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.time == y.time
                && x.open.unpack() == y.open.unpack()
                && x.high.unpack() == y.high.unpack()
                && x.low.unpack() == y.low.unpack()
                && x.close.unpack() == y.close.unpack()
                && x.volume.unpack() == y.volume.unpack()
        })
}

impl RenderCache {
    /// The table of `symbol` at `interval`, synced with `window` and marked used by this tick.
    pub(super) fn sync_table(
        &mut self,
        symbol: &str,
        interval: Interval,
        window: &BarsWindow<'_>,
    ) -> usize {
        let i = match self
            .tables
            .iter()
            .position(|t| t.interval == interval && t.symbol == symbol)
        {
            Some(i) => i,
            None => {
                self.tables.push(BarTable::new(symbol, interval));
                self.tables.len() - 1
            }
        };
        let table = &mut self.tables[i];
        table.used = self.generation;
        table.sync(window);
        i
    }

    pub(super) fn evict_unused(&mut self) {
        let generation = self.generation;
        self.tables.retain(|t| t.used == generation);
    }
}

#[cfg(test)]
mod tests {
    use rust_decimal::Decimal;
    use std::borrow::Cow;

    use super::*;
    use crate::context::test_bar as bar;

    /// Whatever windows a table is synced with — runs of one series, of a series that changed
    /// id, or without an origin — it holds exactly the window and the rows of its last `shown`
    /// bars, as they print fresh: never a row of a bar that left the window.
    #[test]
    fn a_table_holds_the_window_and_only_its_rows() {
        let series: Vec<Bar> = (0..200).map(|h| bar(h, 10_000 + h * 7 % 13)).collect();
        let mut revised = series.clone();
        revised[57].volume += Decimal::ONE;
        /// (source, its series id if it vouches for one, first, last + 1, shown, dp)
        type Step<'a> = (&'a [Bar], Option<u64>, usize, usize, usize, u32);
        let steps: [Step<'_>; 16] = [
            (&series, Some(1), 0, 5, 24, 1),
            (&series, Some(1), 0, 24, 24, 1),
            (&series, Some(1), 1, 25, 24, 1),
            (&series, Some(1), 2, 26, 6, 1),
            (&series, None, 9, 33, 6, 1),
            (&series, None, 9, 33, 24, 1),
            (&series, Some(1), 40, 64, 24, 3),
            (&revised, Some(2), 41, 65, 24, 3),
            (&revised, Some(2), 41, 65, 24, 3),
            (&revised, Some(2), 44, 68, 24, 3),
            (&series, Some(1), 45, 69, 24, 3),
            (&series, None, 46, 70, 24, 3),
            (&revised, None, 47, 71, 24, 3),
            (&series, Some(1), 20, 44, 24, 3),
            (&series, Some(1), 20, 30, 24, 3),
            (&series, Some(1), 100, 100, 24, 3),
        ];
        for mode in 0..2 {
            let mut table = BarTable::new("X", Interval::H1);
            for (i, &(source, id, from, to, shown, dp)) in steps.iter().enumerate() {
                // Second pass: no source vouches for a series, every slide is compared.
                let id = id.filter(|_| mode == 0);
                let window = &source[from..to];
                table.sync(&BarsWindow {
                    bars: Cow::Borrowed(window),
                    origin: id.map(|series| SeriesOrigin {
                        series,
                        start: from,
                    }),
                });
                let rows = table.rows(shown, dp).to_owned();
                assert_eq!(table.bars, window, "step {i}");
                assert_eq!(
                    table.dps,
                    window.iter().map(bar_dp).collect::<Vec<_>>(),
                    "step {i}"
                );
                let shown_bars = &window[window.len() - shown.min(window.len())..];
                let mut fresh = String::new();
                for b in shown_bars {
                    push_bar_row(&mut fresh, b, Interval::H1, dp);
                }
                assert_eq!(rows, fresh, "step {i}");
                assert_eq!(table.row_lens.len(), shown_bars.len(), "step {i}");
                assert_eq!(table.row_lens.iter().sum::<usize>(), rows.len(), "step {i}");
                assert_eq!(table.regime(), classify_regime(window), "step {i}");
            }
        }
    }
}
