//! The grounding check: a lesson bullet is kept only when it is **clearly grounded in the
//! ledger** the reflection read. Everything else goes to pending review with the note.
//!
//! The check is deterministic (same text and trades, same verdict) and reads the
//! [normalised](crate::normalise) text. A bullet is grounded when all of these hold:
//!
//! 1. **Nothing hidden**: the raw bullet carried no invisible, format, bidi or tag character.
//! 2. **Plain alphabet**: after normalisation every letter is ASCII (other scripts and accented
//!    letters are not refused as wrong, only as not checkable: the vocabulary is English).
//! 3. **No markup**: none of `< > # ` { } [ ] | \ ~ ^ @ *` (prompt-format tags, headings,
//!    code, emphasis).
//! 4. **Closed vocabulary**: every word is an English word (`english.txt`: SCOWL's common
//!    American and British words, lower case) or a lesson word (`vocabulary.txt`: trading terms
//!    such as `mfe`, `fomc`, `pnl`), a symbol of the window, or a duration (`45m`, `1h`, `2d`):
//!    other languages, encodings and made-up words are held; what English words may not say is
//!    the deny layer's to find. Words for what binds the agent — `strategy`, `rules`, `caps`,
//!    `limits`, `leverage`, `prompt`, `instructions`, `system` — are refused except inside the
//!    fixed deferrals rendered lessons carry ("the strategy's rules still decide", "when the
//!    strategy's conditions line up again"). A lesson reports what the ledger shows; it never
//!    discusses what binds the agent.
//! 5. **A setup the ledger has**: the bullet names a symbol, a side (`long`/`short`) or an
//!    entry regime (`trending_up`, `trending down`, `ranging`, `volatile`, `unknown regime`,
//!    `untagged`), and the window holds at least one closed trade matching every dimension
//!    named (any of the symbols named, any of the sides, any of the regimes); or it speaks about
//!    the whole window (`overall`, `sample`, `setup`, `setups`).
//! 6. **Figures that match**: the scope is the trades of 5 (the whole window when only a
//!    whole-window word is named). Every figure is checked against the scope's aggregates: the
//!    scope together, each of its setups (symbol × side × regime), its groups by symbol, side,
//!    regime and symbol × side, and, for the whole window, each run of its last setups in key
//!    order (the "N more setups not listed" line):
//!    - `$` amounts match a total or average net, gross or fee of an aggregate, or one trade's
//!      net, gross or fee (or `$0`); a signed amount (`+$`, `-$`) must match with its sign;
//!    - percentages match a win rate (after `win`/`won`…), a loss rate (after `lost`/`loss`…),
//!      or either when the words do not say;
//!    - counts: `n=K` is an aggregate's number of trades; `K of M` / `K/M` needs an aggregate of
//!      `M` trades with `K` wins (words around say won), `K` losses (lost), or either; `K wins`,
//!      `K losses`, `K trades` (up to two words between the number and its noun) match an
//!      aggregate's wins, losses or trades; `K setups` is at most the scope's number of setups;
//!      `n≥K` is a threshold at most the scope's number of trades;
//!    - "within rounding" means within half a unit of the last digit stated (`$4.5` ± 0.05,
//!      `33.3%` ± 0.05, `33%` ± 0.5);
//!    - a number followed by a time noun (`1-hour close`, `last 3 bars`, `2 days`) is a
//!      timeframe, not checked; so are durations (`45m`, `1h`, `2d`);
//!    - any other number (a bare `3`, `0.5`, `3x`) is a figure the ledger cannot confirm.
//!
//! What it cannot weigh: advice in plain lesson words about a real setup with true figures
//! ("ETH short in trending_down regime won 2 of 2: hold them longer next time"). That is the
//! [judge call](crate::judge_request)'s job, for real models.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use rust_decimal::Decimal;
use types::{RegimeTag, Side, TradeRecord};

use crate::normalise::{is_hidden, normalise};
use crate::stats::{LedgerStats, SetupStats};

/// Phrases `builtin/stats-reflection` writes to defer to the strategy: the only places a
/// grounded bullet may name it.
pub const SANCTIONED_DEFERRALS: &[&str] = &[
    "the strategy's rules still decide",
    "when the strategy's conditions line up again",
];

/// Words that speak about what binds the agent; never in a grounded bullet (outside
/// [`SANCTIONED_DEFERRALS`]). Named in the reason so a reviewer sees why.
pub(crate) const AUTHORITY_WORDS: &[&str] = &[
    "rules",
    "limit",
    "limits",
    "leverage",
    "leveraged",
    "prompt",
    "prompts",
    "instruction",
    "instructions",
    "system",
    "guideline",
    "guidelines",
    "constraint",
    "constraints",
    "guardrail",
    "guardrails",
    "engine",
    "ignore",
    "ignoring",
    "disregard",
    "override",
    "bypass",
    "forget",
    "suggestion",
    "suggestions",
    "optional",
    "mandatory",
    "assistant",
    "user",
    "model",
    "policy",
    "policies",
    "allowed",
    "permitted",
    "forbidden",
    "approved",
    "authority",
    "restriction",
    "restrictions",
    "ceiling",
    "ceilings",
];

/// Characters that are prompt markup, never part of a plain lesson.
const MARKUP: &[char] = &[
    '<', '>', '#', '`', '{', '}', '[', ']', '|', '\\', '~', '^', '@', '*',
];

/// Words that make a bullet speak about the whole window.
const WHOLE_WINDOW: &[&str] = &["overall", "sample", "setup", "setups"];

/// Duration units a number may carry (`45m`, `1h`, `2d`, `1w`, ordinals `2nd`).
const UNITS: &[&str] = &[
    "m", "h", "d", "w", "min", "mins", "hr", "hrs", "st", "nd", "rd", "th",
];

/// Nouns that make a preceding number a timeframe (`1-hour close`, `last 3 bars`), which the
/// ledger does not state and the check does not verify.
const TIME_NOUNS: &[&str] = &[
    "hour", "hours", "minute", "minutes", "day", "days", "week", "weeks", "bar", "bars", "candle",
    "candles", "session", "sessions",
];

/// Nouns that make a preceding number a count.
const COUNT_NOUNS: &[&str] = &[
    "trade", "trades", "win", "wins", "winner", "winners", "loss", "losses", "loser", "losers",
    "round",
];

pub(crate) fn vocabulary() -> &'static BTreeSet<&'static str> {
    static VOCAB: OnceLock<BTreeSet<&'static str>> = OnceLock::new();
    VOCAB.get_or_init(|| {
        include_str!("vocabulary.txt")
            .lines()
            .chain(include_str!("english.txt").lines())
            .map(|l| l.split('#').next().unwrap_or(""))
            .flat_map(str::split_whitespace)
            .collect()
    })
}

/// The grounding verdict on one bullet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BulletGrounding {
    /// 1-based bullet number (non-blank lines, in order).
    pub bullet: usize,
    /// Why the bullet is not clearly grounded; empty when it is.
    pub problems: Vec<String>,
}

impl BulletGrounding {
    /// Whether the bullet is clearly grounded.
    #[must_use]
    pub fn grounded(&self) -> bool {
        self.problems.is_empty()
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Num {
        value: Decimal,
        dp: u32,
    },
    Percent {
        value: Decimal,
        dp: u32,
    },
    Money {
        value: Decimal,
        dp: u32,
        sign: Option<bool>,
    },
    Duration,
    Punct(char),
}

/// Parses `[0-9][0-9,]*(\.[0-9]+)?` at `chars[i..]`: value, decimals, next index.
fn number(chars: &[char], mut i: usize) -> Option<(Decimal, u32, usize)> {
    let mut digits = String::new();
    let mut dp = 0u32;
    let mut seen_point = false;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_digit() {
            digits.push(c);
            if seen_point {
                dp += 1;
            }
        } else if c == ',' && !seen_point && chars.get(i + 1).is_some_and(char::is_ascii_digit) {
            // thousands separator
        } else if c == '.' && !seen_point && chars.get(i + 1).is_some_and(char::is_ascii_digit) {
            seen_point = true;
            digits.push('.');
        } else {
            break;
        }
        i += 1;
    }
    let value: Decimal = digits.parse().ok()?;
    Some((value, dp, i))
}

/// Tokenises a normalised, lower-cased bullet. Letters outside ASCII and markup characters are
/// reported through `problems`.
fn tokens(text: &str, problems: &mut Vec<String>) -> Vec<Tok> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut foreign = BTreeSet::new();
    let mut markup = BTreeSet::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphabetic() {
            let start = i;
            while i < chars.len() && chars[i].is_ascii_alphabetic() {
                i += 1;
            }
            out.push(Tok::Word(chars[start..i].iter().collect()));
            continue;
        }
        let signed = (c == '+' || c == '-' || c == '−')
            && chars.get(i + 1) == Some(&'$')
            && chars.get(i + 2).is_some_and(char::is_ascii_digit);
        if c == '$' || signed {
            let sign = signed.then_some(c == '+');
            let at = if signed { i + 2 } else { i + 1 };
            if let Some((value, dp, next)) = number(&chars, at) {
                out.push(Tok::Money { value, dp, sign });
                i = next;
                continue;
            }
            out.push(Tok::Punct(c));
            i += 1;
            continue;
        }
        if c.is_ascii_digit()
            && let Some((value, dp, next)) = number(&chars, i)
        {
            i = next;
            if chars.get(i) == Some(&'%') {
                out.push(Tok::Percent { value, dp });
                i += 1;
                continue;
            }
            if chars.get(i).is_some_and(char::is_ascii_alphabetic) {
                let start = i;
                while i < chars.len() && chars[i].is_ascii_alphabetic() {
                    i += 1;
                }
                let unit: String = chars[start..i].iter().collect();
                if UNITS.contains(&unit.as_str()) {
                    out.push(Tok::Duration);
                } else {
                    // `3x`, `20bar`: a figure with a unit the ledger does not state.
                    out.push(Tok::Num { value, dp });
                    out.push(Tok::Word(unit));
                }
                continue;
            }
            out.push(Tok::Num { value, dp });
            continue;
        }
        if c.is_alphabetic() {
            foreign.insert(c);
        } else if MARKUP.contains(&c) {
            markup.insert(c);
        } else if !c.is_whitespace() {
            out.push(Tok::Punct(c));
        }
        i += 1;
    }
    if !foreign.is_empty() {
        let list: String = foreign.iter().take(8).collect();
        problems.push(format!(
            "letters outside the plain Latin alphabet (\"{list}\"): not checkable"
        ));
    }
    if !markup.is_empty() {
        let list: String = markup.iter().collect();
        problems.push(format!("prompt markup characters (\"{list}\")"));
    }
    out
}

/// Replaces every word-bounded occurrence of `needle` in `hay` with a space; whether any was
/// found.
pub(crate) fn remove_bounded(hay: &mut String, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    let mut found = false;
    let mut from = 0;
    while let Some(pos) = hay[from..].find(needle).map(|p| p + from) {
        let end = pos + needle.len();
        let before = hay[..pos].chars().next_back();
        let after = hay[end..].chars().next();
        let bounded = |c: Option<char>| c.is_none_or(|c| !c.is_ascii_alphanumeric());
        if bounded(before) && bounded(after) {
            hay.replace_range(pos..end, " ");
            found = true;
            from = pos + 1;
        } else {
            from = end;
        }
        if from >= hay.len() {
            break;
        }
    }
    found
}

/// Counts of one aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Agg {
    trades: usize,
    wins: usize,
    losses: usize,
}

/// What a scope's aggregates allow a bullet to state.
#[derive(Debug, Default)]
struct Allowed {
    aggs: Vec<Agg>,
    trades: usize,
    setups: usize,
    money: Vec<Decimal>,
    win_rates: Vec<Decimal>,
    loss_rates: Vec<Decimal>,
    /// Net, gross and fee percentages of entry notional (per trade and per aggregate), sign
    /// dropped: a percentage that is not a rate may be one of these.
    pcts: Vec<Decimal>,
}

impl Allowed {
    fn add_stats(&mut self, s: &SetupStats) {
        self.aggs.push(Agg {
            trades: s.trades,
            wins: s.wins,
            losses: s.losses,
        });
        let n = Decimal::from(s.trades.max(1));
        self.money.extend([
            s.net_pnl_usd,
            s.gross_pnl_usd,
            s.fees_usd,
            s.net_pnl_usd / n,
            s.gross_pnl_usd / n,
            s.fees_usd / n,
        ]);
        self.win_rates.push(s.win_rate_pct());
        self.loss_rates
            .push(Decimal::from(s.losses) * Decimal::ONE_HUNDRED / n);
    }

    /// The scope together, each of its setups, and its groups by symbol, side, regime and
    /// symbol × side; for the whole window also every run of its last setups in key order.
    fn of(scope: &[&TradeRecord], whole_window: bool) -> Self {
        let stats = LedgerStats::of(scope.iter().copied());
        let mut a = Allowed {
            trades: stats.overall.trades,
            setups: stats.setups.len(),
            ..Allowed::default()
        };
        a.money.push(Decimal::ZERO);
        a.add_stats(&stats.overall);
        for s in stats.setups.values() {
            a.add_stats(s);
        }
        let mut groups: std::collections::BTreeMap<(u8, String), SetupStats> =
            std::collections::BTreeMap::new();
        for r in scope {
            let side = format!("{:?}", r.side);
            let regime = format!("{:?}", r.entry_regime_tag);
            // The trade's own figures, once for its four groups.
            let one = LedgerStats::of([*r]).overall;
            for key in [
                (0, r.symbol.clone()),
                (1, side.clone()),
                (2, regime),
                (3, format!("{} {side}", r.symbol)),
            ] {
                let g = groups.entry(key).or_default();
                merge(g, &one);
            }
        }
        for g in groups.values() {
            a.add_stats(g);
        }
        if whole_window {
            // The "N more setups not listed, n=X trades" line: runs of the last setups.
            let setups: Vec<&SetupStats> = stats.setups.values().collect();
            for k in 1..=setups.len() {
                let tail = &setups[setups.len() - k..];
                let mut sum = SetupStats::default();
                for s in tail {
                    merge(&mut sum, s);
                }
                a.aggs.push(Agg {
                    trades: sum.trades,
                    wins: sum.wins,
                    losses: sum.losses,
                });
            }
        }
        let mut notional = Decimal::ZERO;
        let (mut mfe, mut mae) = (Decimal::ZERO, Decimal::ZERO);
        for r in scope {
            let net = r.realized_pnl_usd - r.fees_usd;
            a.money
                .extend([net, r.realized_pnl_usd, r.fees_usd, r.mfe_usd, r.mae_usd]);
            a.push_pcts(&[net, r.realized_pnl_usd, r.fees_usd], r.entry_size_usd);
            notional += r.entry_size_usd;
            mfe += r.mfe_usd;
            mae += r.mae_usd;
        }
        let n = Decimal::from(scope.len().max(1));
        a.money.extend([mfe, mae, mfe / n, mae / n]);
        let o = &stats.overall;
        a.push_pcts(&[o.net_pnl_usd, o.gross_pnl_usd, o.fees_usd], notional);
        a.push_pcts(
            &[o.net_pnl_usd / n, o.gross_pnl_usd / n, o.fees_usd / n],
            notional / n,
        );
        a
    }

    /// `parts` as percentages of `whole` (nothing when `whole` is zero), sign dropped.
    fn push_pcts(&mut self, parts: &[Decimal], whole: Decimal) {
        if whole.is_zero() {
            return;
        }
        for p in parts {
            if let Some(v) = p
                .checked_mul(Decimal::ONE_HUNDRED)
                .and_then(|v| v.checked_div(whole))
            {
                self.pcts.push(v.abs());
            }
        }
    }

    /// Whether `k` is a count the scope shows: an aggregate's trades, wins or losses.
    fn is_count(&self, k: usize) -> bool {
        self.aggs
            .iter()
            .any(|g| g.trades == k || g.wins == k || g.losses == k)
    }

    fn trade_counts(&self) -> impl Iterator<Item = usize> + '_ {
        self.aggs.iter().map(|g| g.trades)
    }
}

fn merge(into: &mut SetupStats, s: &SetupStats) {
    into.trades += s.trades;
    into.wins += s.wins;
    into.losses += s.losses;
    into.net_pnl_usd += s.net_pnl_usd;
    into.gross_pnl_usd += s.gross_pnl_usd;
    into.fees_usd += s.fees_usd;
    into.holding_minutes += s.holding_minutes;
}

/// Whether `actual` rounds to `stated` at `dp` decimals (within half a unit of the last digit).
/// More than 20 decimals never match: no figure of the ledger is stated that finely.
fn within(stated: Decimal, dp: u32, actual: Decimal) -> bool {
    if dp > 20 {
        return false;
    }
    let tol = Decimal::new(5, dp + 1);
    actual.checked_sub(stated).is_some_and(|d| d.abs() <= tol)
}

/// `value` as stated: a parsed decimal keeps the scale it was written with (`12.00`).
fn shown(value: Decimal, _dp: u32) -> String {
    value.to_string()
}

const WIN_WORDS: &[&str] = &["win", "wins", "won", "winning", "winner", "winners"];
const LOSS_WORDS: &[&str] = &[
    "loss", "losses", "lost", "lose", "losing", "loser", "losers",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Win,
    Loss,
    Any,
}

/// Checks the figures of a bullet's tokens against `allowed`.
#[allow(clippy::too_many_lines)]
fn check_figures(toks: &[Tok], allowed: &Allowed, problems: &mut Vec<String>) {
    let word = |i: usize| match toks.get(i) {
        Some(Tok::Word(w)) => Some(w.as_str()),
        _ => None,
    };
    let punct = |i: usize| match toks.get(i) {
        Some(Tok::Punct(c)) => Some(*c),
        _ => None,
    };
    let num = |i: usize| match toks.get(i) {
        Some(Tok::Num { value, dp }) => Some((*value, *dp)),
        _ => None,
    };
    let count = |v: Decimal, dp: u32| -> Option<usize> {
        (dp == 0)
            .then(|| usize::try_from(v.mantissa()).ok())
            .flatten()
    };
    // The outcome the words around a figure speak of (a few tokens before, or after).
    let outcome = |idx: &[usize]| {
        let ws: Vec<&str> = idx.iter().filter_map(|&j| word(j)).collect();
        let win = ws.iter().any(|w| WIN_WORDS.contains(w));
        let loss = ws.iter().any(|w| LOSS_WORDS.contains(w));
        match (win, loss) {
            (true, false) => Outcome::Win,
            (false, true) => Outcome::Loss,
            _ => Outcome::Any,
        }
    };
    let before = |i: usize, n: usize| (i.saturating_sub(n)..i).collect::<Vec<_>>();
    let mut bad = Vec::new();
    let mut skip_next_num = false;
    for (i, t) in toks.iter().enumerate() {
        match t {
            Tok::Money { value, dp, sign } => {
                let ok = allowed.money.iter().any(|a| match sign {
                    Some(true) => *a >= Decimal::ZERO && within(*value, *dp, *a),
                    Some(false) => *a <= Decimal::ZERO && within(-*value, *dp, *a),
                    None => within(*value, *dp, a.abs()),
                });
                if !ok {
                    let s = match sign {
                        Some(true) => "+",
                        Some(false) => "-",
                        None => "",
                    };
                    bad.push(format!("{s}${}", shown(*value, *dp)));
                }
            }
            Tok::Percent { value, dp } => {
                let rates: Vec<&Decimal> = match outcome(&before(i, 3)) {
                    Outcome::Win => allowed.win_rates.iter().collect(),
                    Outcome::Loss => allowed.loss_rates.iter().collect(),
                    Outcome::Any => allowed
                        .win_rates
                        .iter()
                        .chain(allowed.loss_rates.iter())
                        .collect(),
                };
                if !rates.iter().any(|a| within(*value, *dp, **a))
                    && !allowed.pcts.iter().any(|a| within(*value, *dp, *a))
                {
                    bad.push(format!("{}%", shown(*value, *dp)));
                }
            }
            Tok::Num { value, dp } => {
                if skip_next_num {
                    skip_next_num = false;
                    continue;
                }
                let k = count(*value, *dp);
                // n=K, n≥K
                if i >= 2 && word(i - 2) == Some("n") {
                    match punct(i - 1) {
                        Some('=') => {
                            if !k.is_some_and(|k| allowed.trade_counts().any(|t| t == k)) {
                                bad.push(format!("n={}", shown(*value, *dp)));
                            }
                            continue;
                        }
                        Some('≥') => {
                            if k.is_none_or(|k| k > allowed.trades) {
                                bad.push(format!("n≥{}", shown(*value, *dp)));
                            }
                            continue;
                        }
                        _ => {}
                    }
                }
                // K of M, K/M: an aggregate of M trades with K wins / losses.
                let of = (word(i + 1) == Some("of")
                    || word(i + 1) == Some("for")
                    || punct(i + 1) == Some('/'))
                .then(|| num(i + 2))
                .flatten();
                // `W/L 2/1`: wins and losses of one aggregate.
                let wl = punct(i + 1) == Some('/')
                    && i >= 3
                    && word(i - 1) == Some("l")
                    && word(i - 3) == Some("w");
                if wl && let Some((m, mdp)) = num(i + 2) {
                    let (k, m) = (k, count(m, mdp));
                    if !allowed
                        .aggs
                        .iter()
                        .any(|g| Some(g.wins) == k && Some(g.losses) == m)
                    {
                        bad.push(format!(
                            "W/L {}/{}",
                            shown(*value, *dp),
                            shown(m.unwrap_or(0).into(), 0)
                        ));
                    }
                    skip_next_num = true;
                    continue;
                }
                if let Some((m, mdp)) = of {
                    let km = count(m, mdp);
                    let mut around = before(i, 2);
                    around.extend([i + 3, i + 4]);
                    let o = outcome(&around);
                    let ok = match (k, km) {
                        (Some(k), Some(m)) => allowed.aggs.iter().any(|g| {
                            g.trades == m
                                && match o {
                                    Outcome::Win => g.wins == k,
                                    Outcome::Loss => g.losses == k,
                                    Outcome::Any => {
                                        [g.wins, g.losses, g.trades - g.wins - g.losses, g.trades]
                                            .contains(&k)
                                    }
                                }
                        }),
                        _ => false,
                    };
                    if !ok {
                        bad.push(format!("{} of {}", shown(*value, *dp), shown(m, mdp)));
                    }
                    skip_next_num = true;
                    continue;
                }
                // K [w] [w] noun
                let noun = (1..=3).find_map(|d| {
                    let w = word(i + d)?;
                    (COUNT_NOUNS.contains(&w) || w == "setup" || w == "setups").then_some(w)
                });
                let timeframe =
                    (1..=2).any(|d| word(i + d).is_some_and(|w| TIME_NOUNS.contains(&w)));
                let ok = match noun {
                    _ if timeframe && noun.is_none() => true,
                    Some("setup" | "setups") => k.is_some_and(|k| k >= 1 && k <= allowed.setups),
                    Some(w) if WIN_WORDS.contains(&w) => {
                        k.is_some_and(|k| allowed.aggs.iter().any(|g| g.wins == k))
                    }
                    Some(w) if LOSS_WORDS.contains(&w) => {
                        k.is_some_and(|k| allowed.aggs.iter().any(|g| g.losses == k))
                    }
                    Some(_) => k.is_some_and(|k| allowed.trade_counts().any(|t| t == k)),
                    // A bare whole number ("the sample of 2", "too few trades (2)") must be one
                    // of the scope's counts.
                    None => k.is_some_and(|k| allowed.is_count(k)),
                };
                if !ok {
                    let noun = noun.map(|n| format!(" {n}")).unwrap_or_default();
                    bad.push(format!("{}{noun}", shown(*value, *dp)));
                }
            }
            _ => {}
        }
    }
    if !bad.is_empty() {
        problems.push(format!(
            "figures the ledger does not show: {}",
            bad.join(", ")
        ));
    }
}

/// The regimes a normalised, lower-cased bullet names.
pub(crate) fn regimes_named(text: &str) -> Vec<Option<RegimeTag>> {
    let mut out = Vec::new();
    let has = |needles: &[&str]| {
        needles.iter().any(|n| {
            let mut t = text.to_owned();
            remove_bounded(&mut t, n)
        })
    };
    if has(&["trending_up", "trending up", "trending-up", "uptrend"]) {
        out.push(Some(RegimeTag::TrendingUp));
    }
    if has(&[
        "trending_down",
        "trending down",
        "trending-down",
        "downtrend",
    ]) {
        out.push(Some(RegimeTag::TrendingDown));
    }
    if has(&["ranging", "range bound", "range-bound"]) {
        out.push(Some(RegimeTag::Ranging));
    }
    if has(&["volatile"]) {
        out.push(Some(RegimeTag::Volatile));
    }
    if has(&["unknown regime"]) {
        out.push(Some(RegimeTag::Unknown));
    }
    if has(&["untagged"]) {
        out.push(None);
    }
    out
}

/// Checks one bullet (raw text, as stored) against the window's closed trades.
#[must_use]
pub fn ground_bullet(raw: &str, trades: &[&TradeRecord]) -> Vec<String> {
    let mut problems = Vec::new();
    let hidden = raw.chars().filter(|&c| is_hidden(c)).count();
    if hidden > 0 {
        problems.push(format!(
            "{hidden} hidden character{} (zero-width, bidi, tag or format)",
            if hidden == 1 { "" } else { "s" }
        ));
    }
    let norm = normalise(raw).text.to_lowercase();
    let body = norm.strip_prefix("- ").unwrap_or(&norm).to_owned();

    // Which setup it names.
    let mut text = body.clone();
    let symbols: BTreeSet<&str> = trades.iter().map(|r| r.symbol.as_str()).collect();
    let named_symbols: Vec<&str> = symbols
        .iter()
        .copied()
        .filter(|s| remove_bounded(&mut text, &s.to_lowercase()))
        .collect();
    let regimes = regimes_named(&body);
    for d in SANCTIONED_DEFERRALS {
        remove_bounded(&mut text, d);
    }
    let toks = tokens(&text, &mut problems);
    let words: Vec<&str> = toks
        .iter()
        .filter_map(|t| match t {
            Tok::Word(w) => Some(w.as_str()),
            _ => None,
        })
        .collect();
    let mut sides = Vec::new();
    if words.iter().any(|w| *w == "long" || *w == "longs") {
        sides.push(Side::Long);
    }
    if words.iter().any(|w| *w == "short" || *w == "shorts") {
        sides.push(Side::Short);
    }

    let authority: BTreeSet<&str> = words
        .iter()
        .copied()
        .filter(|w| AUTHORITY_WORDS.contains(w))
        .collect();
    if !authority.is_empty() {
        problems.push(format!(
            "speaks about what binds the agent ({})",
            authority.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    let vocab = vocabulary();
    let unknown: BTreeSet<&str> = words
        .iter()
        .copied()
        .filter(|w| !vocab.contains(w) && !AUTHORITY_WORDS.contains(w))
        .collect();
    if !unknown.is_empty() {
        problems.push(format!(
            "words outside the lesson vocabulary ({})",
            unknown.into_iter().take(8).collect::<Vec<_>>().join(", ")
        ));
    }

    let whole_window = words.iter().any(|w| WHOLE_WINDOW.contains(w));
    let names_setup = !named_symbols.is_empty() || !sides.is_empty() || !regimes.is_empty();
    if !names_setup && !whole_window {
        problems.push("names no setup of the ledger (symbol, side or regime)".to_owned());
        return problems;
    }
    let scope: Vec<&TradeRecord> = trades
        .iter()
        .copied()
        .filter(|r| named_symbols.is_empty() || named_symbols.contains(&r.symbol.as_str()))
        .filter(|r| sides.is_empty() || sides.contains(&r.side))
        .filter(|r| regimes.is_empty() || regimes.contains(&r.entry_regime_tag))
        .collect();
    if scope.is_empty() {
        problems.push("names a setup the ledger does not have in this window".to_owned());
        return problems;
    }
    let allowed = Allowed::of(&scope, !names_setup);
    check_figures(&toks, &allowed, &mut problems);
    problems
}

/// Checks every bullet of `lessons` (non-blank lines) against the window's closed `trades`
/// (the trades the reflection read). Deterministic.
#[must_use]
pub fn ground_lessons(lessons: &str, trades: &[&TradeRecord]) -> Vec<BulletGrounding> {
    lessons
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .enumerate()
        .map(|(n, line)| BulletGrounding {
            bullet: n + 1,
            problems: ground_bullet(line, trades),
        })
        .collect()
}
