//! Typed lessons: a reflection's observations checked against the ledger and rendered.
//!
//! The reflection model answers with a `record_lessons` call ([`record_lessons_tool`]): up to
//! [`MAX_OBSERVATIONS`] observations, each naming a setup of the window (symbol, side, entry
//! regime, any of them, or none for the whole window), a [`Finding`] from a closed set, a
//! [`LessonDirection`] and an optional short note. The system, not the model, then:
//! 1. selects the setup's closed trades of the window ([`scope_of`]) — a setup the window does
//!    not have is dropped;
//! 2. computes the figures ([`Figures::of`]) and tests the finding on them ([`supports`]) — a
//!    finding the figures do not bear out, or a direction that contradicts it (`repeat` a
//!    losing setup, `avoid` a winning one), is dropped and recorded, never shown;
//! 3. renders the bullet ([`render`]) from the observation and the figures, every number
//!    through `types::text`.
//!
//! So every figure of a rendered lesson is the ledger's, and the only text of the model's that
//! can reach the prompt is the note, which the job checks like any plain bullet.

use std::fmt::Write as _;
use std::sync::Arc;

use model::ToolDefinition;
use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;
use serde::Deserialize;
use types::{
    CloseKind, Finding, LessonDirection, LessonSetup, MAX_OBSERVATION_NOTE_CHARS as NOTE_CHARS,
    MAX_OBSERVATIONS, Observation, SetupRegime, Side, TradeRecord, text,
};

use crate::stats::SetupStats;

/// The name of the reflection's answer tool.
pub const RECORD_LESSONS_TOOL: &str = "record_lessons";

/// Below this many trades a setup is a small sample.
pub const SMALL_SAMPLE: usize = 3;

/// The `record_lessons` tool the reflection request offers: its JSON Schema lists every finding
/// and direction with what it means, so the model never has to guess a spelling.
#[must_use]
pub fn record_lessons_tool() -> ToolDefinition {
    let findings: Vec<&str> = Finding::ALL.iter().map(|f| f.as_str()).collect();
    let parameters = serde_json::json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["observations"],
        "properties": {
            "observations": {
                "type": "array",
                "maxItems": MAX_OBSERVATIONS,
                "description": "The setups that matter most, most important first.",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["finding", "direction"],
                    "properties": {
                        "symbol": {"type": "string", "description": "A symbol of the trade table; leave out for every symbol."},
                        "side": {"type": "string", "enum": ["long", "short"], "description": "Leave out for both sides."},
                        "regime": {"type": "string", "enum": ["trending_up", "trending_down", "ranging", "volatile", "unknown", "untagged"], "description": "The entry regime; leave out for every regime."},
                        "finding": {"type": "string", "enum": findings, "description": FINDINGS_DESCRIPTION},
                        "direction": {"type": "string", "enum": ["repeat", "avoid", "caution"], "description": "repeat = worth taking again when the strategy's conditions line up; avoid = stay out until it shows better results; caution = be more selective."},
                        "note": {"type": "string", "maxLength": NOTE_CHARS, "description": "Optional: one short plain-English sentence on what you saw in these trades. No figures needed: the system adds them from the ledger."}
                    }
                }
            }
        }
    });
    ToolDefinition {
        name: RECORD_LESSONS_TOOL.to_owned(),
        description: "Record your lessons as observations about setups of the trade window. \
                      The system computes every figure from the ledger and writes the lesson text."
            .to_owned(),
        parameters: Arc::new(parameters),
    }
}

const FINDINGS_DESCRIPTION: &str = "wins = made money (net above $0, more wins than losses); \
loses = lost money (net below $0, more losses than wins); gives_back_gains = exits came late: \
trades that were in profit closed with less than half of their best open profit (MFE); \
stopped_quickly = losers ended fast (on a stop, or in under half the window's average hold); \
held_too_long = losers were held longer than the window's winners; fees_eat_edge = fees took at \
least half of a positive gross PnL; small_sample = fewer than 3 trades, too few to conclude; \
mixed = neither wins nor losses dominate.";

/// One observation as a model writes it (flat; every field optional but the two required ones,
/// unknown fields refused).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireObservation {
    #[serde(default)]
    symbol: Option<String>,
    #[serde(default)]
    side: Option<String>,
    #[serde(default)]
    regime: Option<String>,
    finding: String,
    direction: String,
    #[serde(default)]
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireAnswer {
    observations: Vec<serde_json::Value>,
}

/// What a `record_lessons` answer held: the observations read, and the items that could not be
/// read (with why, naming the item).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ParsedAnswer {
    /// Observations in the order given, at most [`MAX_OBSERVATIONS`].
    pub observations: Vec<Observation>,
    /// `observations[k]: …` for every item refused, and the items past the cap.
    pub problems: Vec<String>,
}

/// Reads a `record_lessons` argument object (or the same JSON written as the reply's text,
/// optionally in a code fence, or a bare array of observations).
///
/// # Errors
/// A message naming what is wrong when the text is not such a JSON document at all.
pub fn parse_answer(json: &str) -> Result<ParsedAnswer, String> {
    let body = json.trim();
    let body = body
        .strip_prefix("```json")
        .or_else(|| body.strip_prefix("```"))
        .map_or(body, |b| b.trim_end().trim_end_matches("```"))
        .trim();
    let items = match serde_json::from_str::<WireAnswer>(body) {
        Ok(a) => a.observations,
        Err(e) => match serde_json::from_str::<Vec<serde_json::Value>>(body) {
            Ok(items) => items,
            Err(_) => return Err(format!("not a record_lessons answer: {e}")),
        },
    };
    let mut out = ParsedAnswer::default();
    for (k, item) in items.into_iter().enumerate() {
        if k >= MAX_OBSERVATIONS {
            out.problems.push(format!(
                "observations[{k}]: more than {MAX_OBSERVATIONS} observations; the rest are dropped"
            ));
            break;
        }
        match serde_json::from_value::<WireObservation>(item).map_err(|e| e.to_string()) {
            Ok(w) => match to_observation(w) {
                Ok(o) => out.observations.push(o),
                Err(e) => out.problems.push(format!("observations[{k}]: {e}")),
            },
            Err(e) => out.problems.push(format!("observations[{k}]: {e}")),
        }
    }
    Ok(out)
}

fn blank_to_none(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

fn to_observation(w: WireObservation) -> Result<Observation, String> {
    let lower = |s: &str| s.trim().to_ascii_lowercase();
    let side = match blank_to_none(w.side).as_deref().map(lower).as_deref() {
        None | Some("any" | "both") => None,
        Some("long" | "longs") => Some(Side::Long),
        Some("short" | "shorts") => Some(Side::Short),
        Some(other) => return Err(format!("side: expected long or short, got {other:?}")),
    };
    let regime = match blank_to_none(w.regime).as_deref().map(lower).as_deref() {
        None | Some("any" | "all") => None,
        Some(r) => Some(regime_of(r).ok_or_else(|| {
            format!("regime: expected trending_up, trending_down, ranging, volatile, unknown or untagged, got {r:?}")
        })?),
    };
    let finding_text = lower(&w.finding);
    let finding = Finding::parse(&finding_text)
        .ok_or_else(|| format!("finding: not one of the findings, got {finding_text:?}"))?;
    let direction = match lower(&w.direction).as_str() {
        "repeat" => LessonDirection::Repeat,
        "avoid" => LessonDirection::Avoid,
        "caution" => LessonDirection::Caution,
        other => {
            return Err(format!(
                "direction: expected repeat, avoid or caution, got {other:?}"
            ));
        }
    };
    let symbol = blank_to_none(w.symbol).filter(|s| !matches!(lower(s).as_str(), "any" | "all"));
    Ok(Observation {
        setup: LessonSetup {
            symbol,
            side,
            regime,
        },
        finding,
        direction,
        note: blank_to_none(w.note),
    })
}

fn regime_of(s: &str) -> Option<SetupRegime> {
    Some(match s.replace([' ', '-'], "_").as_str() {
        "trending_up" | "uptrend" => SetupRegime::TrendingUp,
        "trending_down" | "downtrend" => SetupRegime::TrendingDown,
        "ranging" | "range" | "range_bound" => SetupRegime::Ranging,
        "volatile" => SetupRegime::Volatile,
        "unknown" => SetupRegime::Unknown,
        "untagged" | "none" => SetupRegime::Untagged,
        _ => return None,
    })
}

/// The window's closed trades the setup names (symbols compared without case).
#[must_use]
pub fn scope_of<'a>(setup: &LessonSetup, trades: &[&'a TradeRecord]) -> Vec<&'a TradeRecord> {
    trades
        .iter()
        .copied()
        .filter(|r| {
            setup
                .symbol
                .as_deref()
                .is_none_or(|s| s.eq_ignore_ascii_case(&r.symbol))
        })
        .filter(|r| setup.side.is_none_or(|s| s == r.side))
        .filter(|r| {
            setup
                .regime
                .is_none_or(|g| g == SetupRegime::of(r.entry_regime_tag))
        })
        .collect()
}

fn net(r: &TradeRecord) -> Decimal {
    r.realized_pnl_usd - r.fees_usd
}

fn avg(sum: Decimal, n: usize) -> Decimal {
    if n == 0 {
        Decimal::ZERO
    } else {
        sum / Decimal::from(n)
    }
}

fn minutes(d: Decimal) -> i64 {
    d.round_dp_with_strategy(0, rust_decimal::RoundingStrategy::MidpointAwayFromZero)
        .to_i64()
        .unwrap_or(i64::MAX)
}

/// Every figure a rendered lesson may state about its scope, computed from the ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Figures {
    /// The scope's aggregates (trades, wins, losses, net, gross, fees, holding).
    pub stats: SetupStats,
    /// Trades of the scope that were ever in profit (MFE above $0).
    pub in_profit: usize,
    /// Of those, the ones that closed with less than half of their MFE (net).
    pub gave_back: usize,
    /// Average MFE of the trades that were ever in profit.
    pub avg_mfe_usd: Decimal,
    /// Losing trades that closed on a stop or a liquidation, or in under half the window's
    /// average hold.
    pub stopped_quickly: usize,
    /// Average MAE of the scope's losing trades.
    pub avg_loser_mae_usd: Decimal,
    /// Half of the window's average holding time, in minutes.
    pub quick_minutes: i64,
    /// Average hold of the scope's losers, in minutes.
    pub loser_hold_minutes: i64,
    /// Average hold of the window's winners, in minutes (`None` without winners).
    pub winner_hold_minutes: Option<i64>,
}

impl Figures {
    /// The figures of `scope` within `window` (the reflection's whole window of closed trades).
    #[must_use]
    pub fn of(scope: &[&TradeRecord], window: &[&TradeRecord]) -> Self {
        let mut stats = SetupStats::default();
        for r in scope {
            stats.add(r);
        }
        let window_hold: Decimal = window.iter().map(|r| crate::stats::hold_minutes(r)).sum();
        let quick = avg(window_hold, window.len()) / Decimal::TWO;
        let profit: Vec<&&TradeRecord> =
            scope.iter().filter(|r| r.mfe_usd > Decimal::ZERO).collect();
        let gave_back = profit
            .iter()
            .filter(|r| net(r) < r.mfe_usd / Decimal::TWO)
            .count();
        let losers: Vec<&&TradeRecord> = scope.iter().filter(|r| net(r) < Decimal::ZERO).collect();
        let stopped = losers
            .iter()
            .filter(|r| {
                matches!(r.close_kind, Some(CloseKind::Stop | CloseKind::Liquidation))
                    || crate::stats::hold_minutes(r) < quick
            })
            .count();
        let winners: Vec<&&TradeRecord> =
            window.iter().filter(|r| net(r) > Decimal::ZERO).collect();
        Figures {
            in_profit: profit.len(),
            gave_back,
            avg_mfe_usd: avg(profit.iter().map(|r| r.mfe_usd).sum(), profit.len()),
            stopped_quickly: stopped,
            avg_loser_mae_usd: avg(losers.iter().map(|r| r.mae_usd).sum(), losers.len()),
            quick_minutes: minutes(quick),
            loser_hold_minutes: minutes(avg(
                losers.iter().map(|r| crate::stats::hold_minutes(r)).sum(),
                losers.len(),
            )),
            winner_hold_minutes: (!winners.is_empty()).then(|| {
                minutes(avg(
                    winners.iter().map(|r| crate::stats::hold_minutes(r)).sum(),
                    winners.len(),
                ))
            }),
            stats,
        }
    }
}

/// Whether the figures bear the observation out: `Err` says why not, with the figure.
///
/// # Errors
/// The finding's test failed on these figures, or the direction contradicts the finding.
pub fn supports(o: &Observation, f: &Figures) -> Result<(), String> {
    let s = &f.stats;
    let finding = o.finding.as_str();
    let net = text::signed_money(s.net_pnl_usd);
    let ok = match o.finding {
        Finding::Wins => s.net_pnl_usd > Decimal::ZERO && s.wins > s.losses,
        Finding::Loses => s.net_pnl_usd < Decimal::ZERO && s.losses > s.wins,
        Finding::GivesBackGains => f.gave_back > 0 && f.gave_back * 2 >= f.in_profit,
        Finding::StoppedQuickly => s.losses > 0 && f.stopped_quickly * 2 >= s.losses,
        Finding::HeldTooLong => {
            s.losses > 0
                && f.winner_hold_minutes
                    .is_some_and(|w| f.loser_hold_minutes > w)
        }
        Finding::FeesEatEdge => {
            s.gross_pnl_usd > Decimal::ZERO && s.fees_usd * Decimal::TWO >= s.gross_pnl_usd
        }
        Finding::SmallSample => s.trades < SMALL_SAMPLE,
        Finding::Mixed => {
            let won = s.net_pnl_usd > Decimal::ZERO && s.wins > s.losses;
            let lost = s.net_pnl_usd < Decimal::ZERO && s.losses > s.wins;
            !won && !lost
        }
    };
    if !ok {
        let why = match o.finding {
            Finding::Wins | Finding::Loses | Finding::Mixed => format!(
                "net {net}, {} win{} and {} loss{} in {} trade{}",
                s.wins,
                plural(s.wins),
                s.losses,
                if s.losses == 1 { "" } else { "es" },
                s.trades,
                plural(s.trades)
            ),
            Finding::GivesBackGains => format!(
                "{} of {} trades in profit gave back more than half",
                f.gave_back, f.in_profit
            ),
            Finding::StoppedQuickly => format!(
                "{} of {} losing trades ended on a stop or quickly",
                f.stopped_quickly, s.losses
            ),
            Finding::HeldTooLong => match f.winner_hold_minutes {
                Some(w) if s.losses > 0 => format!(
                    "losers held {} on average, winners {}",
                    text::duration_minutes(f.loser_hold_minutes),
                    text::duration_minutes(w)
                ),
                Some(_) => "no losing trade".to_owned(),
                None => "no winning trade in the window to compare with".to_owned(),
            },
            Finding::FeesEatEdge => format!(
                "fees {} against gross {}",
                text::money(s.fees_usd),
                text::signed_money(s.gross_pnl_usd)
            ),
            Finding::SmallSample => format!("n={} is not below {SMALL_SAMPLE}", s.trades),
        };
        return Err(format!("{finding}: the ledger does not show it ({why})"));
    }
    let contradicts = match o.finding {
        Finding::Wins => o.direction == LessonDirection::Avoid,
        Finding::SmallSample => false,
        Finding::Mixed => o.direction != LessonDirection::Caution,
        _ => o.direction == LessonDirection::Repeat,
    };
    if contradicts {
        return Err(format!(
            "direction {} contradicts the finding {finding}",
            o.direction.as_str()
        ));
    }
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn side_word(side: Side) -> &'static str {
    match side {
        Side::Long => "long",
        Side::Short => "short",
    }
}

/// `BTC long in ranging regime`, `ETH shorts`, `trades in volatile regime`, `all trades`.
#[must_use]
pub fn setup_label(setup: &LessonSetup) -> String {
    let regime = setup.regime.map(|r| format!(" in {} regime", r.as_str()));
    let regime = regime.as_deref().unwrap_or("");
    match (&setup.symbol, setup.side) {
        (Some(s), Some(side)) if !regime.is_empty() => format!("{s} {}{regime}", side_word(side)),
        (Some(s), Some(side)) => format!("{s} {}s", side_word(side)),
        (Some(s), None) => format!("{s} trades{regime}"),
        (None, Some(side)) => format!("{}s{regime}", side_word(side)),
        (None, None) if !regime.is_empty() => format!("trades{regime}"),
        (None, None) => "all trades of the window".to_owned(),
    }
}

pub(crate) fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The bullet for a supported observation (`- ` and one line), its note left out: the job adds
/// the note after checking it. The setup is spelled as the ledger spells its symbol.
#[must_use]
pub fn render(o: &Observation, f: &Figures, scope: &[&TradeRecord]) -> String {
    let s = &f.stats;
    let mut setup = o.setup.clone();
    if let (Some(sym), Some(r)) = (&setup.symbol, scope.first())
        && sym.eq_ignore_ascii_case(&r.symbol)
    {
        setup.symbol = Some(r.symbol.clone());
    }
    let mut out = String::from("- ");
    out.push_str(&capitalise(&setup_label(&setup)));
    out.push_str(": ");
    let n = s.trades;
    match o.finding {
        Finding::Wins => {
            let _ = write!(
                out,
                "won {} of {n} (n={n}, net {}, average net {})",
                s.wins,
                text::signed_money(s.net_pnl_usd),
                text::signed_money(s.avg_net_usd())
            );
        }
        Finding::Loses => {
            let _ = write!(
                out,
                "lost {} of {n} (n={n}, net {}, average net {})",
                s.losses,
                text::signed_money(s.net_pnl_usd),
                text::signed_money(s.avg_net_usd())
            );
        }
        Finding::GivesBackGains => {
            let _ = write!(
                out,
                "{} of {} trade{} in profit closed with less than half of their best open profit (n={n}, average MFE {}, average net {})",
                f.gave_back,
                f.in_profit,
                plural(f.in_profit),
                text::signed_money(f.avg_mfe_usd),
                text::signed_money(s.avg_net_usd())
            );
        }
        Finding::StoppedQuickly => {
            let _ = write!(
                out,
                "{} of {} losing trade{} ended on a stop or within {} (n={n}, average MAE {}, net {})",
                f.stopped_quickly,
                s.losses,
                plural(s.losses),
                text::duration_minutes(f.quick_minutes),
                text::signed_money(f.avg_loser_mae_usd),
                text::signed_money(s.net_pnl_usd)
            );
        }
        Finding::HeldTooLong => {
            let _ = write!(
                out,
                "losing trades were held {} on average against {} for the window's winners (n={n}, net {})",
                text::duration_minutes(f.loser_hold_minutes),
                text::duration_minutes(f.winner_hold_minutes.unwrap_or(0)),
                text::signed_money(s.net_pnl_usd)
            );
        }
        Finding::FeesEatEdge => {
            let _ = write!(
                out,
                "fees of {} took {} of a gross {} (n={n}, net {})",
                text::money(s.fees_usd),
                text::percent_of(s.fees_usd, s.gross_pnl_usd).unwrap_or_default(),
                text::signed_money(s.gross_pnl_usd),
                text::signed_money(s.net_pnl_usd)
            );
        }
        Finding::Mixed => {
            let _ = write!(
                out,
                "mixed, {} of {n} won and {} lost (n={n}, net {}, average net {})",
                s.wins,
                s.losses,
                text::signed_money(s.net_pnl_usd),
                text::signed_money(s.avg_net_usd())
            );
        }
        Finding::SmallSample => {
            let _ = write!(
                out,
                "only {n} trade{} (n={n}, net {}), too few to conclude anything",
                plural(n),
                text::signed_money(s.net_pnl_usd)
            );
        }
    }
    out.push_str(". ");
    out.push_str(match (o.finding, o.direction) {
        (Finding::SmallSample, _) => "Treat it as an anecdote, not evidence.",
        (Finding::GivesBackGains, _) => {
            "Protect open profit sooner; the strategy's exits still decide."
        }
        (Finding::StoppedQuickly, _) => {
            "Wait for confirmation before entering; the strategy's rules still decide."
        }
        (Finding::HeldTooLong, _) => "Cut losers sooner; the strategy's exits still decide.",
        (_, LessonDirection::Repeat) => {
            "Worth repeating when the strategy's conditions line up again."
        }
        (_, LessonDirection::Avoid) => "Stay out of this setup until it shows better results.",
        (_, LessonDirection::Caution) => "Be more selective before taking it again.",
    });
    out
}

/// Words that name a finding in a plain bullet, the most specific first.
const FINDING_WORDS: &[(Finding, &[&str])] = &[
    (
        Finding::GivesBackGains,
        &[
            "mfe",
            "gave back",
            "give back",
            "gives back",
            "giving back",
            "exits came late",
            "late exit",
            "late exits",
            "left on the table",
            "open profit",
        ],
    ),
    (
        Finding::StoppedQuickly,
        &[
            "stopped out",
            "stopped quickly",
            "stop hit",
            "stops hit",
            "hit the stop",
            "hit their stop",
            "stopped",
        ],
    ),
    (
        Finding::HeldTooLong,
        &[
            "held too long",
            "held longer",
            "held for longer",
            "holding losers",
            "held the losers",
            "held the losing",
        ],
    ),
    (
        Finding::FeesEatEdge,
        &["fee", "fees", "commission", "commissions", "costs"],
    ),
    (
        Finding::SmallSample,
        &[
            "too few",
            "small sample",
            "sample of",
            "anecdote",
            "anecdotal",
            "not enough",
            "noise",
            "tiny",
            "unproven",
            "inconclusive",
            "too small",
            "not a lesson yet",
            "variance",
        ],
    ),
    (Finding::Mixed, &["mixed", "split", "evenly", "no clear"]),
    (
        Finding::Loses,
        &[
            "lost",
            "loss",
            "losses",
            "losing",
            "loser",
            "losers",
            "underperformed",
            "underperform",
            "red",
            "negative",
            "wrong",
        ],
    ),
    (
        Finding::Wins,
        &[
            "won",
            "win",
            "wins",
            "winning",
            "winner",
            "winners",
            "profitable",
            "worked",
            "best",
            "positive",
            "paid",
        ],
    ),
];

/// Words that ask to stay out of a setup, and words that ask to take it again.
const AVOID_WORDS: &[&str] = &[
    "avoid",
    "stay out",
    "staying out",
    "sit out",
    "sit these out",
    "skip",
    "stand aside",
    "stay away",
    "steer clear",
];
const REPEAT_WORDS: &[&str] = &[
    "repeat",
    "repeating",
    "keep taking",
    "keep repeating",
    "worth repeating",
    "keep doing",
    "the one to keep",
];

/// The observation a plain bullet makes, read from its words: the setup it names (a dimension
/// named once; two symbols, sides or regimes named leave that dimension open), the first finding
/// its words name that the ledger supports — else what the ledger shows of that setup (won,
/// lost, mixed, or a small sample) — and its direction (`avoid` / `repeat` words; otherwise, or
/// when the words contradict the finding, `caution`). `None` when it names no setup of the
/// window. The bullet's own words are not kept: what reaches a prompt is rendered.
#[must_use]
pub fn observation_of(bullet: &str, trades: &[&TradeRecord]) -> Option<Observation> {
    let plain = crate::deny::plain_words(bullet);
    let has = |p: &str| plain.contains(&format!(" {p} "));
    let mut symbols: Vec<&str> = trades.iter().map(|r| r.symbol.as_str()).collect();
    symbols.sort_unstable();
    symbols.dedup();
    let named: Vec<&str> = symbols
        .into_iter()
        .filter(|s| has(crate::deny::plain_words(s).trim()))
        .collect();
    let sides: Vec<Side> = [
        (Side::Long, ["long", "longs"]),
        (Side::Short, ["short", "shorts"]),
    ]
    .into_iter()
    .filter(|(_, ws)| ws.iter().any(|w| has(w)))
    .map(|(s, _)| s)
    .collect();
    let norm = crate::normalise::normalise(bullet).text.to_lowercase();
    let regimes = crate::grounding::regimes_named(&norm);
    let whole = ["overall", "all trades", "sample", "the window"]
        .iter()
        .any(|w| has(w));
    if named.is_empty() && sides.is_empty() && regimes.is_empty() && !whole {
        return None;
    }
    let setup = LessonSetup {
        symbol: (named.len() == 1).then(|| named[0].to_owned()),
        side: (sides.len() == 1).then(|| sides[0]),
        regime: (regimes.len() == 1).then(|| SetupRegime::of(regimes[0])),
    };
    let scope = scope_of(&setup, trades);
    if scope.is_empty() {
        return None;
    }
    let figures = Figures::of(&scope, trades);
    let direction = if AVOID_WORDS.iter().any(|w| has(w)) {
        LessonDirection::Avoid
    } else if REPEAT_WORDS.iter().any(|w| has(w)) {
        LessonDirection::Repeat
    } else {
        LessonDirection::Caution
    };
    let try_one = |finding: Finding| {
        [direction, LessonDirection::Caution]
            .into_iter()
            .map(|direction| Observation {
                setup: setup.clone(),
                finding,
                direction,
                note: None,
            })
            .find(|o| supports(o, &figures).is_ok())
    };
    FINDING_WORDS
        .iter()
        .filter(|(_, words)| words.iter().any(|w| has(w)))
        .find_map(|(f, _)| try_one(*f))
        .or_else(|| {
            [
                Finding::SmallSample,
                Finding::Wins,
                Finding::Loses,
                Finding::Mixed,
            ]
            .into_iter()
            .find_map(try_one)
        })
}
