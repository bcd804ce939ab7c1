//! Offline `builtin/*` models: no network, no key, honest about what they are.
//!
//! - `builtin/scripted` ([`ScriptedModel`]): plays back a given list of responses, the test
//!   double. When the script runs out it fails with a [`ModelError`] saying so.
//! - `builtin/sma-cross:FAST:SLOW` ([`SmaCrossModel`]): a rule-based baseline for backtests.
//!   It reads exactly what an LLM would read: the user message `assemble_context` rendered. From
//!   the execution-timeframe bar table of each symbol (which holds only bars closed at or before
//!   the tick time) it computes the simple moving averages of the last FAST and SLOW closes, now
//!   and one bar earlier. FAST crossing above SLOW proposes to be long (`open_long`, also when
//!   short: the engine and broker handle the flip), crossing below proposes to be short,
//!   anything else is `no_op`. It is stateless, so a restart changes nothing. Symbols are
//!   checked in context order and the first one with a cross is proposed (one proposal per
//!   tick). Size: the largest notional that is still within `maxPositionPct` of the equity
//!   *after* the order (see [`SmaCrossModel::size_for`]): the equity shown in the Portfolio
//!   section less a cent (it is shown rounded to cents), less what the order may cost — up to
//!   [`COST_ALLOWANCE_BPS`] of each leg's notional in fee and slippage, the closing leg of a
//!   flip included (its quantity is read from the Portfolio section, valued at the last close).
//!   Capped at `maxOrderUsd`, rounded down to cents, leverage 1. It emits a `propose_order` tool call, so
//!   it goes through the same tool path and validation as a real model; every reason says it is
//!   a rule-based baseline, not an LLM. It reports zero token usage.

use std::collections::VecDeque;
use std::str::FromStr;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use memchr::memmem::Finder;

use rust_decimal::{Decimal, RoundingStrategy};
use skill_schema::Skill;
use types::Side;

use crate::context::BAR_TABLE_HEADER;
use model::{
    FinishReason, LanguageModel, Message, ModelError, ModelRequest, ModelResponse, ToolCall, Usage,
};

/// The fee and slippage the sma-cross baseline allows for, in basis points of each leg's
/// notional, when it sizes an order to fit `maxPositionPct` of the equity left after it (the
/// prompt does not show the account's costs). Hyperliquid's base taker fee is 4.5 bps and
/// sim-worker's default slippage 1 bp, 5.5 bps a leg in all.
pub const COST_ALLOWANCE_BPS: Decimal = Decimal::from_parts(10, 0, 0, false, 0);

/// The id of [`ScriptedModel`].
pub const SCRIPTED_ID: &str = "builtin/scripted";

/// Plays back scripted responses (or errors), one per call, and remembers every request.
pub struct ScriptedModel {
    id: String,
    script: Mutex<VecDeque<Result<ModelResponse, ModelError>>>,
    requests: Mutex<Vec<ModelRequest>>,
    total: usize,
}

impl ScriptedModel {
    /// A model answering `responses` in order.
    #[must_use]
    pub fn new(responses: Vec<ModelResponse>) -> Self {
        Self::with_results(responses.into_iter().map(Ok).collect())
    }

    /// A model answering `results` in order; an `Err` plays a provider failure.
    #[must_use]
    pub fn with_results(results: Vec<Result<ModelResponse, ModelError>>) -> Self {
        Self {
            id: SCRIPTED_ID.to_owned(),
            total: results.len(),
            script: Mutex::new(results.into()),
            requests: Mutex::new(Vec::new()),
        }
    }

    /// The same script under another model id, so a test can account usage and cost as that
    /// model would (the double still answers only from its script).
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// Every request received so far, in order.
    #[must_use]
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Responses not played yet.
    #[must_use]
    pub fn remaining(&self) -> usize {
        self.script
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[async_trait::async_trait]
impl LanguageModel for ScriptedModel {
    fn id(&self) -> &str {
        &self.id
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.clone());
        self.script
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
            .unwrap_or_else(|| {
                Err(ModelError::Other(format!(
                    "{SCRIPTED_ID} ({}): the script is exhausted: all {} scripted responses were \
                     played and the loop asked for another",
                    self.id, self.total
                )))
            })
    }
}

/// What the sma-cross baseline reads from a rendered user message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedContext {
    /// Closes of each symbol's execution-timeframe table, oldest first, in context order.
    pub closes: Vec<(String, Vec<Decimal>)>,
    /// Equity from the Portfolio section.
    pub equity: Option<Decimal>,
    /// Open positions from the Portfolio section.
    pub positions: Vec<HeldPosition>,
}

/// An open position as the Portfolio section lists it (`- EURUSD short 5365.8295142 @ …`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldPosition {
    /// The symbol.
    pub symbol: String,
    /// Long or short.
    pub side: Side,
    /// The quantity in base units; `None` when the line does not show a readable one.
    pub qty: Option<Decimal>,
}

/// Reads the bar tables and the portfolio back from a message rendered by
/// [`crate::assemble_context`]. Lines that do not fit the format are skipped.
#[must_use]
pub fn parse_context(text: &str) -> ParsedContext {
    parse_context_last(text, usize::MAX)
}

/// As [`parse_context`], keeping only the last `keep` closes of each table: the baseline needs
/// `slow + 1`, and parsing the other rows of a long lookback was most of its cost.
#[must_use]
pub fn parse_context_last(text: &str, keep: usize) -> ParsedContext {
    static MARKET: LazyLock<Finder<'static>> =
        LazyLock::new(|| Finder::new("\n## Market context\n"));
    static PORTFOLIO: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new("\n## Portfolio\n"));
    let mut out = ParsedContext::default();
    let mut rest = text;
    if let Some(body) = heading_end(text, &MARKET).map(|start| &text[start..]) {
        // The Portfolio section follows the market: search only what comes after it (nothing
        // when the market section runs to the end).
        rest = parse_market(body, keep, &mut out);
    }
    if let Some(start) = heading_end(rest, &PORTFOLIO) {
        let body = &rest[start..];
        let end = section_end(body).unwrap_or(body.len());
        parse_portfolio(&body[..end], &mut out);
    }
    out
}

/// Where the body of the section whose heading line `heading` finds (`\n## {heading}\n`; the
/// text may also start with it) begins. Found with a SIMD substring search built once: the
/// other sections are never parsed.
fn heading_end(text: &str, heading: &Finder<'_>) -> Option<usize> {
    let line = &heading.needle()[1..];
    if text.as_bytes().starts_with(line) {
        Some(line.len())
    } else {
        Some(heading.find(text.as_bytes())? + line.len() + 1)
    }
}

/// The index of the `\n` that starts the next `## ` heading of a section's `body` (the end of
/// the section): `None` when it runs to the end of the text.
fn section_end(body: &str) -> Option<usize> {
    static NEXT: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new("\n## "));
    NEXT.find(body.as_bytes())
}

/// The index of the `\n` before the first line of `text` from byte `from` on that starts with
/// `#` (a heading): one `memchr` for a byte only headings hold, not a substring search.
fn next_heading(text: &[u8], mut from: usize) -> Option<usize> {
    while let Some(i) = memchr::memchr(b'#', text.get(from..)?) {
        let at = from + i;
        if at > 0 && text[at - 1] == b'\n' {
            return Some(at - 1);
        }
        from = at + 1;
    }
    None
}

/// The last `keep` closes of each symbol's execution-timeframe table (`### ` headings; the
/// `#### ` higher-timeframe tables are not read) of the market section's `body`, which runs to
/// the next `## ` heading. Rows are `time o h l c v`, one space apart (the close is the fifth
/// of six fields), and a table ends at an empty line or the next heading. Returns the text
/// from the end of the section on (its `\n## ` heading; empty when it runs to the end).
///
/// The headings are found by their `#` alone (only headings hold one), so the rows are
/// scanned once for it and once for an empty line, never split.
fn parse_market<'a>(body: &'a str, keep: usize, out: &mut ParsedContext) -> &'a str {
    static BLANK: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new("\n\n"));
    let bytes = body.as_bytes();
    // The start of the line being looked at: the body's first line, then each heading's.
    let mut line = if body.starts_with('#') {
        Some(0)
    } else {
        next_heading(bytes, 0).map(|nl| nl + 1)
    };
    while let Some(at) = line {
        let heading = &body[at..];
        if at > 0 && heading.starts_with("## ") {
            // The next section: the market's end.
            return &body[at - 1..];
        }
        // The next heading of any level ends the table (the heading line's own `#`s are not
        // searched again).
        let table_start =
            memchr::memchr(b'\n', heading.as_bytes()).map_or(body.len(), |i| at + i + 1);
        let next = next_heading(bytes, table_start);
        line = next.map(|nl| nl + 1);
        if !heading.starts_with("### ") {
            continue;
        }
        // An empty line ends it earlier: one before the heading's `\n` (or the body's end),
        // or one that ends on it.
        let limit = next.map_or(bytes.len(), |nl| nl + 1);
        let table = &bytes[table_start..limit];
        let end = if table.first().is_none_or(|&b| b == b'\n' || b == b'#') {
            0
        } else {
            let heading_at = next.map_or(table.len(), |nl| nl - table_start);
            BLANK.find(table).map_or(heading_at, |b| b.min(heading_at))
        };
        // `EURUSD 1h · regime …`: the symbol is the first word.
        let symbol = heading[4..]
            .split([' ', '\n'])
            .next()
            .unwrap_or_default()
            .to_owned();
        out.closes.push((
            symbol,
            last_closes(&body[table_start..table_start + end], keep),
        ));
    }
    ""
}

/// The closes of the last `keep` rows of a table that have one, oldest first: rows are
/// visited newest first, each found with one backward `memrchr`.
fn last_closes(table: &str, keep: usize) -> Vec<Decimal> {
    let mut closes = Vec::with_capacity(keep.min(256));
    let mut end = table.len();
    while closes.len() < keep {
        let start = memchr::memrchr(b'\n', &table.as_bytes()[..end]).map_or(0, |i| i + 1);
        if let Some(close) = close_of_row(&table[start..end]) {
            closes.push(close);
        }
        if start == 0 {
            break;
        }
        end = start - 1;
    }
    closes.reverse();
    closes
}

/// The close of a `time o h l c v` row; `None` for anything else (the header included). The
/// close is the next-to-last of the fields, one space apart; the time before the four prices
/// is one field (`2017-05-04T10:00`) or, in a blind run, three (`day 12 10:00`).
fn close_of_row(row: &str) -> Option<Decimal> {
    if row == BAR_TABLE_HEADER {
        return None;
    }
    // How many spaces, then the last two found from the end: the close lies between them.
    let bytes = row.as_bytes();
    let spaces = count_spaces(bytes);
    // Three more prices and at least one time field.
    if !(spaces == 5 || spaces == 7) {
        return None;
    }
    let last = memchr::memrchr(b' ', bytes)?;
    let before = memchr::memrchr(b' ', &bytes[..last])?;
    types::parse_plain_decimal(&row[before + 1..last])
}

/// The number of spaces in `bytes`, eight bytes at a time: each word's space bytes become `1`s
/// in their byte lanes (the exact zero-byte test on `word ^ 0x2020…`, no carries between lanes),
/// the lanes are summed across words and folded into one byte once per 31 words (at most 248
/// spaces: the byte holds the sum). A bar row is ≈55 bytes.
fn count_spaces(bytes: &[u8]) -> usize {
    const SPACES: u64 = u64::from_ne_bytes([b' '; 8]);
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    let mut count = 0;
    let mut words = bytes.chunks_exact(8);
    loop {
        let mut lanes = 0_u64;
        let mut taken = 0;
        for chunk in words.by_ref().take(31) {
            let word = u64::from_ne_bytes(chunk.try_into().unwrap_or_default()) ^ SPACES;
            // High bit of each lane set exactly when the lane is zero (was a space).
            let zero = types::zero_bytes(word);
            lanes += zero >> 7;
            taken += 1;
        }
        // The lanes' sum, in the top byte.
        count += (lanes.wrapping_mul(ONES) >> 56) as usize;
        if taken < 31 {
            break;
        }
    }
    count + words.remainder().iter().filter(|&&b| b == b' ').count()
}

fn parse_portfolio(body: &str, out: &mut ParsedContext) {
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("Equity $") {
            let num = rest.split_whitespace().next().unwrap_or_default();
            out.equity = parse_money(num);
        } else if let Some(rest) = line.strip_prefix("- ") {
            let mut parts = rest.split_whitespace();
            let (Some(symbol), Some(side)) = (parts.next(), parts.next()) else {
                continue;
            };
            let side = match side {
                "long" => Side::Long,
                "short" => Side::Short,
                _ => continue,
            };
            let qty = parts
                .next()
                .and_then(types::parse_plain_decimal)
                .filter(|q| *q > Decimal::ZERO);
            out.positions.push(HeldPosition {
                symbol: symbol.to_owned(),
                side,
                qty,
            });
        }
    }
}

/// The amount of a money text as `types::text::push_money` writes it after its `$`
/// (`12,500.00`): thousands separators dropped, then parsed. `None` for anything else.
fn parse_money(text: &str) -> Option<Decimal> {
    // Decimal's text is at most 31 bytes; separators add at most one byte in four.
    let mut buf = [0_u8; 48];
    let mut len = 0;
    for &b in text.as_bytes() {
        if b != b',' {
            *buf.get_mut(len)? = b;
            len += 1;
        }
    }
    Decimal::from_str(std::str::from_utf8(&buf[..len]).ok()?).ok()
}

/// Mean of the last `n` values; `None` when there are fewer (or the sum overflows).
fn sma(values: &[Decimal], n: usize) -> Option<Decimal> {
    if n == 0 || values.len() < n {
        return None;
    }
    tools::checked_mean(values[values.len() - n..].iter().copied())
}

/// A cross of the fast average over the slow one on the last bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cross {
    /// fast ≤ slow one bar ago, fast > slow now.
    Up,
    /// fast ≥ slow one bar ago, fast < slow now.
    Down,
    /// No cross on the last bar (or the averages are equal on both bars).
    None,
}

/// The cross on the last close, with the averages now: `(cross, fast, slow)`. Needs
/// `slow + 1` closes (and `fast + 1`); `None` with fewer.
#[must_use]
pub fn sma_cross(
    closes: &[Decimal],
    fast: usize,
    slow: usize,
) -> Option<(Cross, Decimal, Decimal)> {
    if closes.len() < fast.max(slow) + 1 {
        return None;
    }
    let prev = &closes[..closes.len() - 1];
    let (f0, s0) = (sma(prev, fast)?, sma(prev, slow)?);
    let (f1, s1) = (sma(closes, fast)?, sma(closes, slow)?);
    let cross = if f0 <= s0 && f1 > s1 {
        Cross::Up
    } else if f0 >= s0 && f1 < s1 {
        Cross::Down
    } else {
        Cross::None
    };
    Some((cross, f1, s1))
}

/// [`sma_cross`]'s cross alone (`None` with fewer than `max(fast, slow) + 1` closes, or sums past
/// `Decimal`). When both averages are exact decimals — `fast` and `slow` of the form 2ᵃ·5ᵇ, the
/// last `max(fast, slow) + 1` closes below 2⁵⁰ at a common scale of at most 18 — it compares
/// the windows' sums in integers (`f ≤ s` is `slow·Σf ≤ fast·Σs` exactly), without the four
/// divisions; otherwise it is `sma_cross`'s.
fn cross_of(closes: &[Decimal], fast: usize, slow: usize) -> Option<Cross> {
    if closes.len() < fast.max(slow) + 1 {
        return None;
    }
    exact_cross(closes, fast, slow).or_else(|| sma_cross(closes, fast, slow).map(|(c, ..)| c))
}

/// [`cross_of`]'s integer path; `None` where it does not apply.
fn exact_cross(closes: &[Decimal], fast: usize, slow: usize) -> Option<Cross> {
    // n = 2ᵃ·5ᵇ: x / n is a decimal with at most max(a, b) more places.
    fn terminates(mut n: usize) -> bool {
        while n > 0 && n.is_multiple_of(2) {
            n /= 2;
        }
        while n > 0 && n.is_multiple_of(5) {
            n /= 5;
        }
        n == 1
    }
    if !(terminates(fast) && terminates(slow)) {
        return None;
    }
    let window = &closes[closes.len().checked_sub(fast.max(slow) + 1)?..];
    let scale = window.iter().map(|c| c.scale()).max()?;
    if scale > 18 {
        return None;
    }
    let mut m = Vec::with_capacity(window.len());
    for c in window {
        m.push(i128::from(types::mantissa_at(*c, scale, 1 << 50)?));
    }
    // Σ of the `n` closes ending `back` closes before the last (0: the last included).
    let sum =
        |n: usize, back: usize| -> i128 { m[m.len() - back - n..m.len() - back].iter().sum() };
    let (f, s) = (fast as i128, slow as i128);
    // f ≤ s ⇔ Σf/fast ≤ Σs/slow ⇔ slow·Σf ≤ fast·Σs; both averages exact decimals.
    let cmp = |back: usize| (s * sum(fast, back)).cmp(&(f * sum(slow, back)));
    let (before, now) = (cmp(1), cmp(0));
    Some(if before.is_le() && now.is_gt() {
        Cross::Up
    } else if before.is_ge() && now.is_lt() {
        Cross::Down
    } else {
        Cross::None
    })
}

/// The `builtin/sma-cross:FAST:SLOW` baseline (see the module docs).
#[derive(Debug, Clone)]
pub struct SmaCrossModel {
    id: String,
    /// `Rule-based baseline {id} (not an LLM)`: every reason and text starts with it.
    label: String,
    fast: usize,
    slow: usize,
    max_position_pct: Decimal,
    max_order_usd: Decimal,
    min_order_usd: Decimal,
    /// The reason of the no-op without a cross (most ticks), as [`no_op`] writes it: written
    /// once.
    no_cross: String,
}

impl SmaCrossModel {
    /// A baseline sized from `skill`'s caps. `None` unless `1 ≤ fast < slow ≤ 500`.
    #[must_use]
    pub fn new(fast: usize, slow: usize, skill: &Skill) -> Option<Self> {
        if fast == 0 || fast >= slow || slow > 500 {
            return None;
        }
        let id = format!("builtin/sma-cross:{fast}:{slow}");
        let label = format!("Rule-based baseline {id} (not an LLM)");
        Some(Self {
            no_cross: json_str(no_op_reason(&format!(
                "{label}: no SMA{fast}/SMA{slow} cross on the last closed bar."
            ))),
            label,
            id,
            fast,
            slow,
            max_position_pct: skill.risk.max_position_pct,
            max_order_usd: skill.risk.max_order_usd,
            min_order_usd: skill.risk.min_order_usd,
        })
    }

    /// Parses `builtin/sma-cross:FAST:SLOW`.
    #[must_use]
    pub fn from_id(id: &str, skill: &Skill) -> Option<Self> {
        let rest = id.strip_prefix("builtin/sma-cross:")?;
        let (fast, slow) = rest.split_once(':')?;
        Self::new(fast.parse().ok()?, slow.parse().ok()?, skill)
    }

    /// The size in USD of an order that opens a position when the Portfolio section shows
    /// `equity` and the order first closes `closing` USD of notional (a flip; zero from flat).
    ///
    /// The position must fit `maxPositionPct` (`p`) of the equity *after* the order, which has
    /// paid up to `c` = [`COST_ALLOWANCE_BPS`] of both legs' notional: with `E` the shown equity
    /// less a cent (it is rounded to cents), `size ≤ p · (E − c · closing − c · size)`, so
    /// `size = p · (E − c · closing) / (1 + p · c)`, at most `maxOrderUsd`, rounded down to
    /// cents; zero when nothing fits.
    #[must_use]
    pub fn size_for(&self, equity: Decimal, closing: Decimal) -> Decimal {
        let p = self.max_position_pct / Decimal::ONE_HUNDRED;
        let c = COST_ALLOWANCE_BPS / Decimal::from(10_000);
        // Checked: the figures come from text; out of range sizes to zero (stand aside).
        let size = equity
            .checked_sub(Decimal::new(1, 2))
            .and_then(|e| e.checked_sub(c.checked_mul(closing)?))
            .and_then(|left| p.checked_mul(left))
            .and_then(|top| top.checked_div(Decimal::ONE.checked_add(p.checked_mul(c)?)?))
            .unwrap_or_default();
        size.min(self.max_order_usd)
            .max(Decimal::ZERO)
            .round_dp_with_strategy(2, RoundingStrategy::ToZero)
    }

    /// The `propose_order` arguments for a rendered context.
    #[must_use]
    pub fn decide(&self, context: &str) -> String {
        let parsed = parse_context_last(context, self.slow + 1);
        let label = &self.label;
        let first = parsed
            .closes
            .first()
            .map_or_else(String::new, |(s, _)| s.clone());
        let mut status = Vec::new();
        for (symbol, closes) in &parsed.closes {
            // The cross first (most ticks have none); the averages only for the text of one.
            let Some(cross) = cross_of(closes, self.fast, self.slow) else {
                status.push(format!(
                    "{symbol}: fewer than {} closed bars",
                    self.slow + 1
                ));
                continue;
            };
            let (side, verb, action) = match cross {
                Cross::Up => (Side::Long, "above", "open_long"),
                Cross::Down => (Side::Short, "below", "open_short"),
                Cross::None => continue,
            };
            // Always some: the cross was found over the same closes.
            let Some((_, f, s)) = sma_cross(closes, self.fast, self.slow) else {
                continue;
            };
            let dp = closes.iter().map(|c| shown_scale(*c)).max().unwrap_or(0) + 2;
            let (f, s) = (round(f, dp), round(s, dp));
            let position = parsed.positions.iter().find(|p| &p.symbol == symbol);
            let held = position.map(|p| p.side);
            let what = format!(
                "SMA{} {f} crossed {verb} SMA{} {s} on the last closed bar",
                self.fast, self.slow
            );
            if held == Some(side) {
                return no_op(
                    symbol,
                    &format!("{label}: {what}; already {side}, holding."),
                );
            }
            let Some(equity) = parsed.equity else {
                return no_op(
                    symbol,
                    &format!("{label}: {what}, but no equity figure was shown; standing aside."),
                );
            };
            // A flip's closing leg: the held quantity at the last close (the mark).
            let closing = match position.map(|p| p.qty) {
                None => Decimal::ZERO,
                Some(Some(qty)) => {
                    let last = closes.last().copied().unwrap_or_default();
                    qty.checked_mul(last).unwrap_or(Decimal::MAX)
                }
                Some(None) => {
                    return no_op(
                        symbol,
                        &format!(
                            "{label}: {what}, but the held quantity could not be read; standing aside."
                        ),
                    );
                }
            };
            let size = self.size_for(equity, closing);
            if size < self.min_order_usd || size <= Decimal::ZERO {
                return no_op(
                    symbol,
                    &format!(
                        "{label}: {what}, but the sized order ${size} is below the minimum; standing aside."
                    ),
                );
            }
            let flip = if held.is_some() {
                " (flips the open position)"
            } else {
                ""
            };
            let reason = format!("{label}: {what}; go {side}{flip}.");
            return format!(
                "{{\"action\":\"{action}\",\"symbol\":{},\"size_usd\":{size},\"leverage\":1,\"reason\":{}}}",
                json_str(symbol),
                json_str(&reason)
            );
        }
        if status.is_empty() {
            return no_op_text(&first, &self.no_cross);
        }
        no_op(&first, &format!("{label}: {}.", status.join("; ")))
    }
}

/// The decimals `d` has without trailing zeros (`d.normalize().scale()`), stripped in 64-bit
/// integers when the mantissa fits (a price read from a table always does).
fn shown_scale(d: Decimal) -> u32 {
    let Ok(mut m) = u64::try_from(d.mantissa().unsigned_abs()) else {
        return d.normalize().scale();
    };
    let mut scale = d.scale();
    while scale > 0 && m % 10 == 0 {
        m /= 10;
        scale -= 1;
    }
    // Zero normalises to scale 0 (`m` stays 0 and every digit is a trailing zero).
    scale
}

fn round(d: Decimal, dp: u32) -> Decimal {
    d.round_dp_with_strategy(dp, RoundingStrategy::MidpointAwayFromZero)
        .normalize()
}

fn json_str(s: &str) -> String {
    // `serde_json`'s escaping, without its serializer.
    let mut out = String::new();
    types::push_json_string(&mut out, s);
    out
}

/// `reason` cut at the proposal's bound.
fn no_op_reason(reason: &str) -> &str {
    // No longer than the bound in bytes: no longer in characters either, nothing to count.
    if reason.len() <= tools::MAX_REASON_CHARS {
        reason
    } else {
        types::cut_chars(reason, tools::MAX_REASON_CHARS).0
    }
}

fn no_op(symbol: &str, reason: &str) -> String {
    no_op_text(symbol, &json_str(no_op_reason(reason)))
}

/// A no-op's arguments with its reason already cut and written as a JSON string.
fn no_op_text(symbol: &str, reason_json: &str) -> String {
    let mut out = String::with_capacity(48 + symbol.len() + reason_json.len());
    out.push_str("{\"action\":\"no_op\",\"symbol\":");
    types::push_json_string(&mut out, symbol);
    out.push_str(",\"reason\":");
    out.push_str(reason_json);
    out.push('}');
    out
}

#[async_trait::async_trait]
impl LanguageModel for SmaCrossModel {
    fn id(&self) -> &str {
        &self.id
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        // After the tool answered, close the turn: report what happened, never retry.
        if let Some(Message::Tool { content, .. }) = request.messages.last() {
            // A searcher built once (`str::contains` builds one per call).
            static RECORDED: LazyLock<Finder<'static>> =
                LazyLock::new(|| Finder::new("\"status\":\"recorded\""));
            let text = if RECORDED.find(content.as_bytes()).is_some() {
                format!("{}: proposal recorded.", self.label)
            } else {
                format!(
                    "{}: propose_order refused the proposal: {content}",
                    self.label
                )
            };
            return Ok(ModelResponse {
                text: Some(text),
                tool_calls: Vec::new(),
                finish: FinishReason::Stop,
                usage: Usage::default(),
            });
        }
        let Some(context) = request.messages.iter().rev().find_map(|m| match m {
            Message::User { content } => Some(content.as_str()),
            _ => None,
        }) else {
            return Err(ModelError::Other(format!(
                "{}: the request has no user message to read the market from",
                self.id
            )));
        };
        let arguments = self.decide(context);
        Ok(ModelResponse {
            text: Some(format!("{}: evaluating the SMA cross.", self.label)),
            tool_calls: vec![ToolCall {
                id: "sma-cross-1".to_owned(),
                name: tools::PROPOSE_ORDER.to_owned(),
                arguments,
            }],
            finish: FinishReason::ToolCalls,
            usage: Usage::default(),
        })
    }
}

/// The offline model named `id`, for the binaries: `builtin/sma-cross:FAST:SLOW` sized from
/// `skill`'s caps. `builtin/scripted` needs a script and is built in code with
/// [`ScriptedModel::new`], so it is not offered here. `None` for anything else.
#[must_use]
pub fn builtin_model(id: &str, skill: &Skill) -> Option<Arc<dyn LanguageModel>> {
    SmaCrossModel::from_id(id, skill).map(|m| Arc::new(m) as Arc<dyn LanguageModel>)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The parser before the heading scan (#17): each section's and table's end found by a
    /// substring search over the rest of the text. The one above must read the same.
    fn reference_parse(text: &str, keep: usize) -> ParsedContext {
        fn body<'a>(text: &'a str, heading: &str) -> Option<(&'a str, &'a str)> {
            let line = &heading[1..];
            let start = if text.starts_with(line) {
                line.len()
            } else {
                text.find(heading)? + heading.len()
            };
            let body = &text[start..];
            Some(
                body.find("\n## ")
                    .map_or((body, ""), |end| body.split_at(end)),
            )
        }
        fn table_end(table: &str) -> usize {
            if table.is_empty() || table.starts_with('#') || table.starts_with('\n') {
                return 0;
            }
            match (table.find("\n\n"), table.find("\n#")) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => a.or(b).unwrap_or(table.len()),
            }
        }
        let mut out = ParsedContext::default();
        let mut rest = text;
        if let Some((market, after)) = body(text, "\n## Market context\n") {
            let mut tables = market;
            loop {
                let at = if tables.starts_with("### ") {
                    0
                } else if let Some(i) = tables.find("\n### ") {
                    i + 1
                } else {
                    break;
                };
                let after = &tables[at + 4..];
                let (heading, table) = after.split_once('\n').unwrap_or((after, ""));
                let end = table_end(table);
                tables = &table[end..];
                let symbol = heading.split(' ').next().unwrap_or_default().to_owned();
                out.closes.push((symbol, last_closes(&table[..end], keep)));
            }
            rest = after;
        }
        if let Some((portfolio, _)) = body(rest, "\n## Portfolio\n") {
            parse_portfolio(portfolio, &mut out);
        }
        out
    }

    /// Texts made of the lines the parser treats differently: section and table headings,
    /// rows, empty lines, a portfolio's lines, a `#` that starts no line.
    fn context_text() -> impl Strategy<Value = String> {
        let line = prop::sample::select(vec![
            "## Time",
            "## Market context",
            "## Portfolio",
            "## News (last 6h)",
            "### EURUSD 1h · regime ranging · last 3 bars",
            "### BTC",
            "### ",
            "#### EURUSD 4h · regime ranging (last 20 bars) · last 6 shown",
            "#",
            "##",
            "",
            BAR_TABLE_HEADER,
            "09-27T22:00 1.17444 1.17480 1.17405 1.17420 1173",
            "09-27T23:00 1.17424 1.17511 1.17420 1.17495 963",
            "day 12 10:00 2 3 1 2.5 7",
            "note #1 with 1 2 3 4 5",
            "Equity $8,801.57 · available margin $3,516.89",
            "- EURUSD short 4472.98777846 @ 1.177312257 · mark 1.17316",
            "- BTC long 0.5 @ 60000",
        ]);
        (prop::collection::vec(line, 0..24), any::<bool>()).prop_map(|(lines, newline)| {
            let mut text = lines.join("\n");
            if newline {
                text.push('\n');
            }
            text
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn the_heading_scan_reads_what_the_substring_searches_read(
            text in context_text(),
            keep in prop::sample::select(vec![0, 1, 2, 21, usize::MAX]),
        ) {
            prop_assert_eq!(parse_context_last(&text, keep), reference_parse(&text, keep));
        }
    }

    /// Value, scale and sign: `Decimal`'s `==` ignores the scale.
    fn exact(d: Option<Decimal>) -> Option<(i128, u32, bool)> {
        d.map(|d| (d.mantissa(), d.scale(), d.is_sign_negative()))
    }

    /// The equity is read back from the money style the Portfolio section writes.
    #[test]
    fn money_text_reads_back_as_written() {
        for d in [
            Decimal::ZERO,
            Decimal::new(1_000_000, 2),
            Decimal::new(123_456_789_012, 2),
            Decimal::new(-987_654, 2),
        ] {
            let text = types::text::money(d);
            let amount = text.trim_start_matches('-').trim_start_matches('$');
            let sign = if text.starts_with('-') {
                -Decimal::ONE
            } else {
                Decimal::ONE
            };
            assert_eq!(parse_money(amount).map(|a| a * sign), Some(d), "{text}");
        }
        assert_eq!(parse_money("12,500.00x"), None);
    }

    /// A row gives its close only with exactly six fields; the header and anything else give
    /// nothing.
    #[test]
    fn a_row_gives_its_fifth_field_only_when_it_has_six() {
        let close = |row: &str| exact(close_of_row(row));
        assert_eq!(
            close("05-22T10:00 1.12012 1.12364 1.12012 1.12274 2598"),
            exact(Some(Decimal::new(112_274, 5)))
        );
        assert_eq!(
            close("2017-05-22 1.12032 1.12635 1.11616 1.12376 21697"),
            exact(Some(Decimal::new(112_376, 5)))
        );
        for row in [
            BAR_TABLE_HEADER,
            "05-22T10:00 1.12012 1.12364 1.12012 1.12274",
            "05-22T10:00 1.12012 1.12364 1.12012 1.12274 2598 7",
            "05-22T10:00 1.12012 1.12364 1.12012  2598",
            "05-22T10:00 1.12012 1.12364 1.12012 x 2598",
            "",
            "     ",
        ] {
            assert_eq!(close(row), None, "{row:?}");
        }
    }

    /// A no-op's reason is bounded by characters, whatever their width.
    #[test]
    fn a_no_op_reason_is_cut_at_the_bound_in_characters() {
        let reason = |json: &str| -> String {
            let v: serde_json::Value = serde_json::from_str(json).expect("json");
            v["reason"].as_str().expect("reason").to_owned()
        };
        let short = "é".repeat(tools::MAX_REASON_CHARS / 2);
        assert_eq!(reason(&no_op("X", &short)), short);
        let long = "é".repeat(tools::MAX_REASON_CHARS + 3);
        assert_eq!(
            reason(&no_op("X", &long)),
            "é".repeat(tools::MAX_REASON_CHARS)
        );
        let ascii = "a".repeat(tools::MAX_REASON_CHARS + 1);
        assert_eq!(reason(&no_op("X", &ascii)).len(), tools::MAX_REASON_CHARS);
    }

    proptest! {
        /// The one-pass reading of a row gives what splitting it on spaces gives.
        #[test]
        fn a_rows_close_is_the_field_before_the_last(
            row in "[0-9a-zT:.-]{0,11}( [0-9a-z.]{0,8}){0,9}"
        ) {
            let split = || {
                let fields: Vec<&str> = row.split(' ').collect();
                if row == BAR_TABLE_HEADER || !(fields.len() == 6 || fields.len() == 8) {
                    return None;
                }
                types::parse_plain_decimal(fields[fields.len() - 2])
            };
            prop_assert_eq!(exact(close_of_row(&row)), exact(split()));
        }

        #[test]
        fn spaces_are_counted_as_a_filter_counts_them(
            text in "[ a-z\u{a0}\u{2000}]{0,80}",
            long in 0_usize..3000,
        ) {
            let expect = |t: &str| t.bytes().filter(|&b| b == b' ').count();
            prop_assert_eq!(count_spaces(text.as_bytes()), expect(&text));
            // Past 31 words (248 bytes) the lanes are folded and counted again.
            let padded = " ".repeat(long) + &text;
            prop_assert_eq!(count_spaces(padded.as_bytes()), expect(&padded));
        }

        #[test]
        fn shown_scale_is_the_normalised_scale(m in any::<i64>(), scale in 0_u32..=28, wide in any::<bool>()) {
            // Wide: a mantissa past 64 bits when it fits 96.
            let d = if wide {
                Decimal::try_from_i128_with_scale(i128::from(m) * 1_000_000_000_000, scale)
                    .unwrap_or(Decimal::new(m, scale))
            } else {
                Decimal::new(m, scale)
            };
            prop_assert_eq!(shown_scale(d), d.normalize().scale());
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// The cross from the sums in integers is the one from the `Decimal` averages: walks
        /// that cross (a last jump against the trend), stay flat (ties: equal averages before
        /// and after) or carry prices with dropped trailing zeros, odd scales or huge
        /// mantissas; averages over counts that terminate (2, 4, 5, 10, 20, 25, 40, 50) or not
        /// (3, 6, 7, 30), the fast one shorter or (as `sma_cross` allows) longer.
        #[test]
        fn the_cross_from_sums_is_the_cross_from_averages(
            mut steps in proptest::collection::vec(-3_i64..=3, 0..60),
            jump in -40_i64..=40,
            tens in any::<bool>(),
            odd in proptest::option::weighted(0.15, (0_usize..60, any::<i64>(), 0_u32..=28)),
            (fast, slow) in prop::sample::select(vec![
                (2, 4), (2, 5), (5, 10), (10, 20), (4, 25), (20, 40), (25, 50), (10, 50),
                (2, 3), (3, 6), (5, 7), (10, 30), (20, 10), (5, 2),
            ]),
        ) {
            let unit = if tens { 10 } else { 1 };
            if let Some(last) = steps.last_mut() {
                *last = jump;
            }
            let mut m = 107_000_i64;
            let mut closes: Vec<Decimal> = steps
                .iter()
                .map(|&step| {
                    m += step * unit;
                    // Trailing zeros dropped on some, as a CSV writes them.
                    let d = Decimal::new(m, 5);
                    if m % 3 == 0 { d.normalize() } else { d }
                })
                .collect();
            if let Some((at, mantissa, scale)) = odd
                && let Some(c) = closes.get_mut(at)
            {
                *c = Decimal::new(mantissa, scale);
            }
            prop_assert_eq!(
                cross_of(&closes, fast, slow),
                sma_cross(&closes, fast, slow).map(|(c, ..)| c)
            );
        }
    }

    /// Averages equal before and after (a tie) and equal before then apart (a cross from a
    /// touch) are decided as the `Decimal` averages decide them.
    #[test]
    fn touching_averages_cross_as_in_decimal() {
        let d = |v: &[i64]| -> Vec<Decimal> { v.iter().map(|&m| Decimal::new(m, 1)).collect() };
        for closes in [
            d(&[10, 10, 10, 10, 10, 10]),
            d(&[10, 10, 10, 10, 10, 13]),
            d(&[10, 10, 10, 10, 10, 7]),
            d(&[12, 8, 10, 10, 10, 10]),
        ] {
            assert_eq!(
                cross_of(&closes, 2, 5),
                sma_cross(&closes, 2, 5).map(|(c, ..)| c),
                "{closes:?}"
            );
            assert!(exact_cross(&closes, 2, 5).is_some());
        }
        assert_eq!(
            cross_of(&d(&[10, 10, 10, 10, 10, 13]), 2, 5),
            Some(Cross::Up)
        );
        assert_eq!(
            cross_of(&d(&[10, 10, 10, 10, 10, 7]), 2, 5),
            Some(Cross::Down)
        );
        assert_eq!(cross_of(&d(&[10, 10, 10, 10, 10]), 2, 5), None);
    }
}
