//! Which symbols a headline names, and its lexicon sentiment.

use std::collections::{BTreeSet, HashSet};
use std::sync::OnceLock;

use rust_decimal::{Decimal, RoundingStrategy};

use crate::text::words;

/// The alias table: a symbol also matches these words (whole word, case-insensitive). Kept
/// small on purpose; a symbol not listed matches only its own ticker.
pub const ALIASES: &[(&str, &[&str])] = &[
    ("BTC", &["bitcoin"]),
    ("ETH", &["ether", "ethereum"]),
    ("SOL", &["solana"]),
];

/// The symbols of `symbols` that `text` names: a symbol matches when one of the text's whole
/// words (maximal runs of letters and digits) equals it or one of its [`ALIASES`], ignoring
/// case. Answered in `symbols`' own spelling, sorted, once each.
#[must_use]
pub fn match_symbols(text: &str, symbols: &[String]) -> Vec<String> {
    let seen: HashSet<String> = words(text).map(str::to_lowercase).collect();
    let mut out = BTreeSet::new();
    for symbol in symbols {
        let lower = symbol.to_lowercase();
        let aliased = ALIASES
            .iter()
            .find(|(s, _)| s.eq_ignore_ascii_case(symbol))
            .is_some_and(|(_, aliases)| aliases.iter().any(|a| seen.contains(*a)));
        if seen.contains(&lower) || aliased {
            out.insert(symbol.clone());
        }
    }
    out.into_iter().collect()
}

fn list(text: &'static str) -> HashSet<&'static str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

fn positive() -> &'static HashSet<&'static str> {
    static WORDS: OnceLock<HashSet<&'static str>> = OnceLock::new();
    WORDS.get_or_init(|| list(include_str!("../lexicon/positive.txt")))
}

fn negative() -> &'static HashSet<&'static str> {
    static WORDS: OnceLock<HashSet<&'static str>> = OnceLock::new();
    WORDS.get_or_init(|| list(include_str!("../lexicon/negative.txt")))
}

/// The lexicon sentiment of `text`: with `p` the occurrences of words of
/// `lexicon/positive.txt` and `n` those of `lexicon/negative.txt` (whole words, ignoring
/// case), `(p − n) / (p + n)` rounded to 2 decimals (half away from zero); 0 when neither
/// occurs. Always in −1..=1. No negation handling: "not a crash" counts as a crash.
#[must_use]
pub fn lexicon_sentiment(text: &str) -> Decimal {
    let (mut p, mut n) = (0u32, 0u32);
    for w in words(text) {
        let w = w.to_lowercase();
        if positive().contains(w.as_str()) {
            p += 1;
        } else if negative().contains(w.as_str()) {
            n += 1;
        }
    }
    if p + n == 0 {
        return Decimal::ZERO;
    }
    ((Decimal::from(p) - Decimal::from(n)) / Decimal::from(p + n))
        .round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero)
}

#[cfg(test)]
mod tests {
    use rust_decimal_macros::dec;

    use super::*;

    fn syms(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn symbols_match_whole_words_and_aliases_ignoring_case() {
        let all = syms(&["BTC", "ETH", "SOL", "ARB", "kPEPE"]);
        assert_eq!(match_symbols("Bitcoin tops $100k", &all), ["BTC"]);
        assert_eq!(match_symbols("btc/eth ratio", &all), ["BTC", "ETH"]);
        assert_eq!(
            match_symbols("Ethereum and Solana upgrades", &all),
            ["ETH", "SOL"]
        );
        assert_eq!(match_symbols("KPEPE lists", &all), ["kPEPE"]);
        // Inside a longer word is no match: "arbitrage" is not ARB, "bitcoiner" not BTC,
        // "Ethernet" not ETH.
        assert!(match_symbols("arbitrage desks and bitcoiners on Ethernet", &all).is_empty());
        // No alias for ARB: "Arbitrum" does not name it.
        assert!(match_symbols("Arbitrum airdrop", &all).is_empty());
        // Only the deployments' symbols are candidates.
        assert!(match_symbols("Bitcoin", &syms(&["ETH"])).is_empty());
    }

    #[test]
    fn lexicon_score_is_the_stated_ratio() {
        assert_eq!(lexicon_sentiment("Bitcoin surges to a record"), dec!(1));
        assert_eq!(
            lexicon_sentiment("Exchange hacked; tokens plunge"),
            dec!(-1)
        );
        // p = 2 (rally, inflows), n = 1 (selloff): 1/3 → 0.33.
        assert_eq!(
            lexicon_sentiment("Rally after selloff as inflows return"),
            dec!(0.33)
        );
        // p = 1, n = 2: −1/3 → −0.33.
        assert_eq!(
            lexicon_sentiment("Gains erased: ETH drops, SOL slumps"),
            dec!(-0.33)
        );
        assert_eq!(lexicon_sentiment("Fed minutes due Wednesday"), dec!(0));
        // Whole words only: "rallying" is not "rally", case is ignored.
        assert_eq!(lexicon_sentiment("RALLY rallying"), dec!(1));
    }
}
