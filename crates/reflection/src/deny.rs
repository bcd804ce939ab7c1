//! The deny layer of the lesson defences: what no lesson bullet may say, whatever its figures.
//!
//! The grounding check's closed vocabulary keeps other languages, encodings and markup out;
//! this layer reads the plain-English words it lets through for the things a lesson never
//! needs to say and an attacker always does:
//! - **risk raised**: adding to or averaging into a position, sizing up, leverage, margin,
//!   wider or no stops, re-entering at once (`RISK_PHRASES`);
//! - **authority undone**: telling the agent to ignore, override or treat as optional what binds
//!   it, or speaking to it as a system would (`OVERRIDE_PHRASES`);
//! - **an avoid rule touched**: a distinctive word of one of the strategy's `avoid` rules (a
//!   lesson reports what the ledger shows; whether an avoid rule was right is the author's call,
//!   so a bullet about one goes to review whichever way it leans);
//! - **a sentence cut in two**: a bullet that ends on a word that cannot end a sentence, or
//!   starts by continuing the one before (an instruction split across two bullets; the job also
//!   runs this layer over every pair of neighbouring bullets joined).
//!
//! Every check reads the [normalised](crate::normalise), lower-cased text, word-bounded.

use skill_schema::Strategy;

use crate::normalise::normalise;

/// Phrases that raise risk or add exposure. Word-bounded, on the lower-cased text with every
/// run of non-alphanumeric characters (apostrophes aside) read as one space.
const RISK_PHRASES: &[&str] = &[
    "add",
    "adds",
    "adding",
    "added",
    "averaging",
    "average down",
    "average in",
    "average entry",
    "average price",
    "average cost",
    "averaged down",
    "averaged in",
    "better average",
    "lower average",
    "lowered the average",
    "improve the average",
    "improved the average",
    "cost basis",
    "blended",
    "scale in",
    "scale into",
    "scaling in",
    "scaled in",
    "scale up",
    "scaling up",
    "size up",
    "sizing up",
    "sized up",
    "pyramid",
    "pyramiding",
    "double down",
    "doubling down",
    "double",
    "doubled",
    "doubling",
    "triple",
    "tripled",
    "top up",
    "topping up",
    "buy more",
    "sell more",
    "short more",
    "buy again",
    "buying again",
    "sell again",
    "short again",
    "enter again",
    "entering again",
    "second long",
    "second short",
    "second position",
    "second entry",
    "second buy",
    "another long",
    "another short",
    "another position",
    "another entry",
    "additional",
    "extra long",
    "extra short",
    "extra position",
    "extra size",
    "more size",
    "more exposure",
    "more risk",
    "larger size",
    "larger position",
    "larger positions",
    "bigger size",
    "bigger position",
    "bigger positions",
    "increase",
    "increased",
    "increasing",
    "raise",
    "raised",
    "raising",
    "boost",
    "full size",
    "max size",
    "maximum size",
    "all in",
    "re enter",
    "reenter",
    "re entry",
    "reentry",
    "martingale",
    "sizing into",
    "size into",
    "sized into",
    "into red",
    "red positions",
    "into losing",
    "into losers",
    "into a loser",
    "into the loss",
    "accumulate",
    "accumulating",
    "accumulated",
    "accumulation",
    "dip",
    "dips",
    "weakness",
    "under water",
    "underwater",
    "build up",
    "built up",
    "building up",
    "grow the",
    "let the losing",
    "hold the loser",
    "hold losers",
    "holding losers",
    "follow up purchase",
    "follow up entry",
    "follow up buy",
    "purchase",
    "tranche",
    "leg in",
    "legging in",
    "ladder",
    "laddering",
    "dca",
    "dollar cost",
    "twice the",
    "twice as",
    "of equity",
    "whole account",
    "entire account",
    "aggressive",
    "aggressively",
    "stop off",
    "stops off",
    "without protection",
    "leverage",
    "leveraged",
    "margin",
    "widen",
    "widened",
    "wider stop",
    "wider stops",
    "looser stop",
    "loosen",
    "no stop",
    "no stops",
    "without a stop",
    "without stops",
    "without stop",
    "remove the stop",
    "move the stop",
    "skip the stop",
    "hold through",
    "let it run",
    "let them run",
];

/// Phrases that undo what binds the agent or speak to it as a system would.
const OVERRIDE_PHRASES: &[&str] = &[
    "rules",
    "waive",
    "suspend",
    "suspended",
    "relax",
    "relaxed",
    "lift the",
    "from here on",
    "from here",
    "at once",
    "all of them",
    "right away",
    "immediately",
    "henceforth",
    "never stop",
    "to the end",
    "hold every",
    "always hold",
    "always enter",
    "always trade",
    "always take",
    "never exit",
    "never close",
    "never cut",
    "never take profit",
    "avoid list",
    "avoid section",
    "avoid rules",
    "no attention",
    "only matters",
    "not matter",
    "doesn t matter",
    "ignore",
    "ignoring",
    "ignored",
    "disregard",
    "override",
    "overrides",
    "bypass",
    "set aside",
    "exception",
    "exempt",
    "not apply",
    "no longer",
    "not binding",
    "outdated",
    "optional",
    "advisory",
    "suggestion",
    "suggestions",
    "guideline",
    "guidelines",
    "soft",
    "freely",
    "from now on",
    "going forward",
    "you must",
    "you are",
    "act as",
    "pretend",
    "instead of the",
    "supersede",
    "superseded",
    "trust your",
    "your own judgement",
    "your own judgment",
    "system",
    "prompt",
    "instruction",
    "instructions",
    "assistant",
    "developer",
    "admin",
    "operator",
    "deployer",
    "tool",
    "tools",
    "function",
    "propose order",
    "propose_order",
    "execute",
    "engine",
];

/// Words too common in trade reports to mark an avoid rule (with the stop words).
const GENERIC: &[&str] = &[
    "a",
    "an",
    "the",
    "to",
    "of",
    "or",
    "and",
    "in",
    "on",
    "for",
    "at",
    "by",
    "is",
    "are",
    "be",
    "it",
    "its",
    "this",
    "that",
    "any",
    "all",
    "when",
    "if",
    "while",
    "than",
    "then",
    "as",
    "per",
    "never",
    "not",
    "no",
    "do",
    "don",
    "t",
    "avoid",
    "avoiding",
    "without",
    "with",
    "from",
    "into",
    "your",
    "you",
    "we",
    "our",
    "more",
    "less",
    "over",
    "under",
    "up",
    "down",
    "out",
    "trade",
    "trades",
    "trading",
    "position",
    "positions",
    "long",
    "longs",
    "short",
    "shorts",
    "entry",
    "entries",
    "enter",
    "entering",
    "exit",
    "exits",
    "price",
    "prices",
    "market",
    "markets",
    "losing",
    "loser",
    "losers",
    "loss",
    "losses",
    "lose",
    "winning",
    "win",
    "wins",
    "open",
    "opening",
    "close",
    "closing",
    "setup",
    "setups",
    "regime",
    "than",
    "one",
    "two",
    "same",
    "after",
    "before",
    "time",
    "times",
    "bar",
    "bars",
    "hour",
    "hours",
    "day",
    "days",
    "h",
    "m",
    "x",
    "s",
    "new",
    "last",
    "each",
    "every",
    "only",
    "just",
    "still",
    "again",
    "should",
    "must",
    "can",
    "may",
    "will",
    "would",
    "could",
    "stop",
    "stand",
    "down",
    "side",
    "average",
    "range",
    "made",
    "make",
    "trend",
    "within",
    "during",
    "through",
    "against",
    "above",
    "below",
    "around",
    "near",
    "about",
    "between",
    "until",
    "since",
    "across",
    "hold",
    "move",
    "extreme",
    "exceed",
    "exceeds",
    "bar",
    "candle",
    "close",
    "high",
    "low",
    "size",
    "order",
    "signal",
    "rule",
    "first",
    "previous",
    "next",
    "week",
    "month",
    "minute",
    "hour",
    "lose",
    "enter",
    "trade",
    "position",
];

/// Words a sentence cannot end on: a bullet ending on one was cut (or split on purpose).
const DANGLING: &[&str] = &[
    "to", "the", "a", "an", "and", "or", "of", "for", "with", "at", "by", "on", "in", "if", "when",
    "than", "that", "then", "so", "but", "your", "their", "its", "no", "not", "is", "are", "be",
    "into", "from", "while", "because", "which", "should", "must", "can", "will", "would", "could",
    "may", "might",
];

/// Words a bullet cannot start on without continuing the bullet before it.
const CONTINUING: &[&str] = &[
    "and",
    "or",
    "but",
    "so",
    "then",
    "to",
    "which",
    "that",
    "because",
    "therefore",
    "thus",
];

/// The text as the deny layer reads it: normalised, lower case, every run of other characters
/// one space, with a space at each end (so `" phrase "` finds a bounded phrase).
#[must_use]
pub(crate) fn plain_words(raw: &str) -> String {
    let norm = normalise(raw).text.to_lowercase();
    let mut out = String::from(" ");
    for c in norm.chars() {
        if c.is_alphanumeric() || c == '_' {
            out.push(c);
        } else if !out.ends_with(' ') {
            out.push(' ');
        }
    }
    if !out.ends_with(' ') {
        out.push(' ');
    }
    out
}

fn found<'a>(plain: &str, phrases: &[&'a str]) -> Vec<&'a str> {
    phrases
        .iter()
        .copied()
        .filter(|p| {
            let needle = format!(" {} ", p.replace('_', " "));
            plain.contains(&needle) || plain.contains(&format!(" {p} "))
        })
        .collect()
}

/// Verbs that undo a safeguard when one of [`SAFEGUARDS`] follows within four words.
const UNDO: &[&str] = &[
    "skip", "skipping", "drop", "dropping", "bend", "bending", "break", "breaking", "waive",
    "lift", "lifting", "loosen", "relax", "remove", "removing", "forget", "abandon", "stretch",
    "ditch", "scrap", "pause", "turn", "switch",
];

/// What binds the agent, as an [`UNDO`] verb's object.
const SAFEGUARDS: &[&str] = &[
    "rule",
    "rules",
    "stand",
    "avoid",
    "list",
    "cap",
    "caps",
    "limit",
    "limits",
    "stop",
    "stops",
    "filter",
    "filters",
    "check",
    "checks",
    "restriction",
    "restrictions",
    "guard",
    "off",
];

/// The phrase checks alone (risk raised, authority undone): what the job also runs on two
/// neighbouring bullets joined.
#[must_use]
pub(crate) fn deny_phrases(raw: &str) -> Vec<String> {
    let plain = plain_words(raw);
    let mut reasons = Vec::new();
    let risk = found(&plain, RISK_PHRASES);
    if !risk.is_empty() {
        reasons.push(format!(
            "speaks of raising risk or exposure ({})",
            risk.join(", ")
        ));
    }
    let over = found(&plain, OVERRIDE_PHRASES);
    if !over.is_empty() {
        reasons.push(format!(
            "speaks of undoing what binds the agent, or to it ({})",
            over.join(", ")
        ));
    }
    let ws: Vec<&str> = plain.split_whitespace().collect();
    for (i, w) in ws.iter().enumerate() {
        if UNDO.contains(w)
            && let Some(object) = ws[i + 1..ws.len().min(i + 5)]
                .iter()
                .find(|o| SAFEGUARDS.contains(o))
        {
            reasons.push(format!("speaks of undoing a safeguard ({w} … {object})"));
            break;
        }
    }
    reasons
}

/// Everything the deny layer finds in one bullet: [`deny_phrases`] and the avoid rules it
/// touches.
#[must_use]
pub(crate) fn deny(raw: &str, strategy: &Strategy) -> Vec<String> {
    let mut reasons = deny_phrases(raw);
    let words = crate::lint::words(raw);
    for rule in &strategy.avoid {
        let mut touched: Vec<String> = crate::lint::words(rule)
            .into_iter()
            .filter(|w| crate::lint::is_content(w) && !GENERIC.contains(&w.as_str()))
            .filter(|w| {
                w.chars().any(char::is_alphabetic) && !w.chars().any(|c| c.is_ascii_digit())
            })
            .filter(|w| words.contains(w))
            .collect();
        touched.sort();
        touched.dedup();
        // One shared word is description ("range", "average"); two name what the rule forbids.
        if touched.len() >= 2 {
            reasons.push(format!(
                "touches the avoid rule \"{}\" ({})",
                types::cut_chars(rule.trim(), 80).0,
                touched.join(", ")
            ));
        }
    }
    reasons
}

/// Whether one bullet reads as a whole sentence: `Some(reason)` when it ends on a word that
/// cannot end one or starts by continuing the bullet before.
#[must_use]
pub(crate) fn cut_sentence(raw: &str) -> Option<String> {
    let plain = plain_words(raw);
    let mut words = plain.split_whitespace();
    let first = words.next()?;
    let last = plain.split_whitespace().next_back().unwrap_or(first);
    let trimmed = raw.trim_end();
    let closed = trimmed.ends_with(['.', '!', '?', ')', '%']);
    if !closed && DANGLING.contains(&last) {
        return Some(format!("ends mid-sentence (\"{last}\")"));
    }
    let body = raw.trim_start().trim_start_matches(['-', '*', '•', ' ']);
    if body.starts_with(|c: char| c.is_lowercase()) && CONTINUING.contains(&first) {
        return Some(format!("continues the bullet before (\"{first}\")"));
    }
    None
}
