//! A deterministic linter for lessons: does a note contradict the strategy's `avoid` rules, or
//! carry hostile text that tries to steer the agent out of its strategy or caps?
//!
//! It is a heuristic, tuned to flag rather than to miss: a flagged note is stored with its flag
//! and NOT injected until a person accepts it (the caller does that); the previous note stays
//! active meanwhile. Nothing here can make a note more authoritative than the strategy.
//!
//! How it works:
//! 1. Text is [normalised](crate::normalise) (hidden characters removed, NFKC, confusables
//!    folded), then: lower case, a few phrases mapped to the action they mean (`averaging down`,
//!    `doubling down`, `buy more` → `add`), `'`-contractions expanded (`don't` → `do not`), every other
//!    non-alphanumeric character a space; each word is reduced to a crude stem and a few
//!    trading synonyms share one stem (`losers` / `losing` / `losses` → `lose`, `entries` /
//!    `enter` / `open` → `enter`, `adding` / `pyramiding` → `add`).
//! 2. Each avoid rule is read as "negation + action": `never …`, `do not …`, `no …`, `avoid …`,
//!    `stand down when …` (= do not trade when …). The action is a head word (the first content
//!    word: `add`, `fade`, `trade`, `enter`) and its object words.
//! 3. A lesson bullet contradicts the rule when it contains the head word NOT preceded (within
//!    three words) by a negation (`not`, `never`, `no`, `avoid`, `stop`, `without`), and enough
//!    object words: one when the rule has at most three or a direction, two otherwise; a rule
//!    that says `against` / `through` / `during` / `above` / `below` needs the lesson to say one
//!    of them too.
//! 4. A fixed list of hostile patterns is checked on every bullet: an override verb (`ignore`,
//!    `disregard`, `override`, `bypass`, `forget`, `violate`, `break`) followed within four words
//!    by `strategy`, `rules`, `avoid`, `instructions`, `constraints`, `caps`, `limits`, `risk`
//!    or `prompt`; and leverage/size escalation (`max leverage`, `maximum leverage`, `full
//!    leverage`, `all in`, `raise the cap`, `remove the stop`, and size escalation in plain
//!    words: `size up`, `bigger size`, `more size`, `take more`).

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::{Deserialize, Serialize};
use skill_schema::Strategy;

/// The verdict on one lessons text: the linter's alone ([`lint_lessons`]), or, on a
/// [`crate::NoteDraft`], every layer of the lesson defences together (linter, grounding, judge),
/// one reason per finding.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LintResult {
    /// True when at least one reason was found: store the note flagged (pending review), do not
    /// inject it until a person accepts it.
    pub flagged: bool,
    /// One line per finding, naming the bullet and the rule or pattern, in bullet order.
    pub reasons: Vec<String>,
}

/// Words that never count as a head or object word.
const STOPWORDS: &[&str] = &[
    "a", "an", "the", "to", "of", "or", "and", "in", "on", "for", "at", "by", "is", "are", "be",
    "it", "its", "this", "that", "these", "those", "any", "all", "when", "if", "while", "than",
    "then", "as", "per", "new", "last", "more", "less", "within", "before", "after", "from",
    "into", "your", "you", "we", "our", "their", "there", "has", "have", "been", "was", "were",
    "do", "does", "did", "is", "am", "h", "m", "x", "s", "prior", "same", "each", "every", "so",
    "up", "down", "out", "off", "over", "under", "only", "just", "still", "again", "even", "also",
    "very", "too", "which", "who", "what", "where", "how", "why", "can", "could", "should",
    "would", "will", "may", "might", "must", "shall", "time", "times", "right", "keep", "doing",
];

/// Words that negate an action that follows them.
const NEGATIONS: &[&str] = &[
    "not", "never", "no", "avoid", "stop", "without", "nor", "refrain",
];

/// Directional words that change an action's meaning ("against the trend" vs "with the trend").
const DIRECTIONAL: &[&str] = &["against", "through", "during", "above", "below"];

/// Verbs that, followed by a protected noun, try to override the strategy.
const OVERRIDE_VERBS: &[&str] = &[
    "ignore",
    "disregard",
    "override",
    "bypass",
    "forget",
    "violate",
    "break",
    "circumvent",
];

/// Nouns an override verb must not target.
const PROTECTED: &[&str] = &[
    "strategy",
    "rule",
    "avoid",
    "instruction",
    "constraint",
    "cap",
    "limit",
    "risk",
    "prompt",
    "guideline",
    "guardrail",
];

/// Escalation phrases (normalised, stemmed word sequences).
const ESCALATION: &[&[&str]] = &[
    &["max", "leverage"],
    &["maximum", "leverage"],
    &["maximal", "leverage"],
    &["full", "leverage"],
    &["highest", "leverage"],
    &["all", "in"],
    &["raise", "cap"],
    &["increase", "cap"],
    &["lift", "cap"],
    &["remove", "stop"],
    &["no", "stop", "loss"],
    // Size escalation in plain words: a lesson may say "smaller", never "bigger".
    &["size", "up"],
    &["size", "bigger"],
    &["size", "larger"],
    &["bigger", "size"],
    &["larger", "size"],
    &["more", "size"],
    &["increase", "size"],
    &["double", "size"],
    &["take", "more"],
];

/// Synonym groups: every word of a group stems to the group's first word.
const SYNONYMS: &[&[&str]] = &[
    &[
        "lose", "loser", "losers", "losing", "loss", "losses", "lost", "loses",
    ],
    &[
        "enter", "entry", "entries", "entering", "entered", "enters", "open", "opening", "opens",
        "opened",
    ],
    &[
        "add",
        "adds",
        "adding",
        "added",
        "pyramid",
        "pyramiding",
        "scale",
        "scaling",
    ],
    &["trade", "trades", "trading", "traded"],
    &["hold", "holds", "holding", "held"],
    &["fade", "fades", "fading", "faded"],
    &["position", "positions"],
    &["move", "moves", "moving", "moved"],
    &[
        "release",
        "releases",
        "print",
        "prints",
        "announcement",
        "announcements",
    ],
    &["cap", "caps", "capped"],
    &["rule", "rules"],
    &["strategy", "strategies"],
    &["limit", "limits"],
    &["instruction", "instructions"],
    &["constraint", "constraints"],
    &["guideline", "guidelines"],
    &["guardrail", "guardrails"],
    &["stop", "stops", "stopping", "stopped"],
    &["ignore", "ignores", "ignoring", "ignored"],
    &["disregard", "disregards", "disregarding", "disregarded"],
    &[
        "override",
        "overrides",
        "overriding",
        "overrode",
        "overridden",
    ],
    &["bypass", "bypasses", "bypassing", "bypassed"],
    &["forget", "forgets", "forgetting", "forgot", "forgotten"],
    &["violate", "violates", "violating", "violated"],
    &["break", "breaks", "breaking", "broke", "broken"],
    &["circumvent", "circumvents", "circumventing", "circumvented"],
];

fn stem(word: &str) -> String {
    // A stop word or a negation stays as it is; a synonym is its group's first word (the first
    // group that lists it). One hash lookup instead of scanning the three lists word by word
    // (≈40k instructions a bullet, #17).
    static FIXED: LazyLock<HashMap<&'static str, &'static str>> = LazyLock::new(|| {
        let mut fixed = HashMap::new();
        for w in STOPWORDS.iter().chain(NEGATIONS) {
            fixed.insert(*w, *w);
        }
        for group in SYNONYMS {
            for w in *group {
                fixed.entry(*w).or_insert(group[0]);
            }
        }
        fixed
    });
    if let Some(fixed) = FIXED.get(word) {
        return (*fixed).to_owned();
    }
    if word.ends_with("ss") {
        return word.to_owned();
    }
    for suffix in ["ing", "es", "s", "ed"] {
        if let Some(base) = word.strip_suffix(suffix)
            && base.chars().count() >= 3
        {
            // `-es` only after a sibilant (`fixes` → `fix`); otherwise just `-s` (`ignores`).
            if suffix == "es"
                && !["s", "x", "z", "ch", "sh"]
                    .iter()
                    .any(|e| base.ends_with(e))
            {
                continue;
            }
            return base.to_owned();
        }
    }
    word.to_owned()
}

/// Multi-word phrases that mean a listed action in other words: replaced before stemming, so
/// "averaging down into a losing position" reads as "add into a losing position".
const PHRASES: &[(&str, &str)] = &[
    ("averaging down", "add"),
    ("average down", "add"),
    ("averaged down", "add"),
    ("doubling down", "add"),
    ("double down", "add"),
    ("doubled down", "add"),
    ("buying more", "add"),
    ("buy more", "add"),
    ("selling more", "add"),
    ("sell more", "add"),
    ("increase the position", "add"),
    ("increasing the position", "add"),
    ("top up", "add"),
    ("topping up", "add"),
];

/// Lower-cased, contraction-expanded, stemmed words of the [normalised](crate::normalise) text.
pub(crate) fn words(text: &str) -> Vec<String> {
    let lower = crate::normalise::normalise(text)
        .text
        .to_lowercase()
        .replace(['’', '‘'], "'");
    let mut expanded = lower.replace("n't", " not").replace("cannot", "can not");
    // Each phrase's searcher built once; a phrase the text does not hold costs one SIMD scan,
    // not a searcher and a copy of the text (`str::replace` makes both every time).
    static FINDERS: LazyLock<Vec<Finder<'static>>> =
        LazyLock::new(|| PHRASES.iter().map(|(p, _)| Finder::new(p)).collect());
    for ((phrase, action), finder) in PHRASES.iter().zip(FINDERS.iter()) {
        if finder.find(expanded.as_bytes()).is_some() {
            expanded = expanded.replace(phrase, action);
        }
    }
    expanded
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(stem)
        .collect()
}

pub(crate) fn is_content(word: &str) -> bool {
    static STOP: LazyLock<HashSet<&'static str>> =
        LazyLock::new(|| STOPWORDS.iter().copied().collect());
    !STOP.contains(word) && !word.chars().all(|c| c.is_ascii_digit())
}

/// An avoid rule read as "do not <head> <objects>".
#[derive(Debug, Clone, PartialEq, Eq)]
struct Prohibition {
    rule: String,
    head: String,
    objects: Vec<String>,
    directional: Vec<String>,
}

fn prohibition(rule: &str) -> Option<Prohibition> {
    let w = words(rule);
    // Where the action starts, and whether it is "stand down when …" (= do not trade when …).
    let mut start = None;
    let mut implied_head = None;
    for i in 0..w.len() {
        if w[i] == "stand" && w.get(i + 1).is_some_and(|n| n == "down") {
            start = Some(i + 2);
            implied_head = Some("trade".to_owned());
            break;
        }
        if NEGATIONS.contains(&w[i].as_str()) {
            start = Some(i + 1);
            break;
        }
    }
    let rest: Vec<&String> = w[start?..].iter().collect();
    let mut content = rest.iter().map(|s| s.as_str()).filter(|s| is_content(s));
    let head = match implied_head {
        Some(h) => h,
        None => content.next()?.to_owned(),
    };
    let mut objects: Vec<String> = Vec::new();
    let mut directional = Vec::new();
    for word in content {
        if DIRECTIONAL.contains(&word) {
            if !directional.iter().any(|d| d == word) {
                directional.push(word.to_owned());
            }
        } else if word != head && !objects.iter().any(|o| o == word) {
            objects.push(word.to_owned());
        }
    }
    Some(Prohibition {
        rule: rule.trim().to_owned(),
        head,
        objects,
        directional,
    })
}

/// Whether `bullet` recommends the action `p` forbids: it names the head word, never in a
/// negated form (a bullet that says "do not add …" restates the rule, even if it later says
/// "both adds lost"), with the rule's direction and enough of its objects.
fn contradicts(bullet: &[String], p: &Prohibition) -> bool {
    let mut mentioned = false;
    for (i, w) in bullet.iter().enumerate() {
        if *w == p.head {
            if bullet[i.saturating_sub(3)..i]
                .iter()
                .any(|b| NEGATIONS.contains(&b.as_str()))
            {
                return false;
            }
            mentioned = true;
        }
    }
    if !mentioned {
        return false;
    }
    if !p.directional.is_empty() && !p.directional.iter().any(|d| bullet.contains(d)) {
        return false;
    }
    let matched = p.objects.iter().filter(|o| bullet.contains(o)).count();
    // A rule's direction, matched, narrows the action enough: one object then suffices
    // ("enter against the trend" vs "do not open a position against a 1d trend that …").
    let needed = if p.objects.len() <= 3 || !p.directional.is_empty() {
        usize::from(!p.objects.is_empty())
    } else {
        2
    };
    matched >= needed
}

fn hostile(bullet: &[String]) -> Option<String> {
    for (i, w) in bullet.iter().enumerate() {
        if OVERRIDE_VERBS.contains(&w.as_str())
            && let Some(target) = bullet[i + 1..]
                .iter()
                .take(4)
                .find(|t| PROTECTED.contains(&t.as_str()))
        {
            return Some(format!("tells the agent to {w} its {target}"));
        }
    }
    // Phrases match with articles and possessives skipped: "raise the cap" = "raise cap".
    let compact: Vec<&String> = bullet
        .iter()
        .filter(|w| !["the", "a", "an", "your", "its", "our", "their", "my"].contains(&w.as_str()))
        .collect();
    for phrase in ESCALATION {
        if compact
            .windows(phrase.len())
            .any(|win| win.iter().zip(phrase.iter()).all(|(w, p)| w.as_str() == *p))
        {
            return Some(format!("escalates risk (\"{}\")", phrase.join(" ")));
        }
    }
    None
}

/// Lints `lessons` (one `- ` bullet per line, as [`crate::bound_lessons`] produces; any text
/// works, each non-blank line is a bullet) against `strategy.avoid` and the hostile patterns.
#[must_use]
pub fn lint_lessons(lessons: &str, strategy: &Strategy) -> LintResult {
    let rules: Vec<Prohibition> = strategy
        .avoid
        .iter()
        .filter_map(|r| prohibition(r))
        .collect();
    let mut reasons = Vec::new();
    for (n, line) in lessons
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .enumerate()
    {
        let bullet = words(line);
        if let Some(why) = hostile(&bullet) {
            reasons.push(format!("bullet {}: {why}", n + 1));
        }
        for p in &rules {
            if contradicts(&bullet, p) {
                reasons.push(format!(
                    "bullet {}: recommends what the strategy forbids: \"{}\"",
                    n + 1,
                    p.rule
                ));
            }
        }
    }
    LintResult {
        flagged: !reasons.is_empty(),
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prohibitions_are_read_from_rules() {
        let p = prohibition("Never add to a losing position").expect("a prohibition");
        assert_eq!(p.head, "add");
        assert_eq!(p.objects, vec!["lose", "position"]);
        let p = prohibition("Stand down when the 1h range of the last 3 bars exceeds 3x")
            .expect("a prohibition");
        assert_eq!(p.head, "trade");
        let p = prohibition("Never trade against the daily trend").expect("a prohibition");
        assert_eq!(p.directional, vec!["against"]);
        assert!(prohibition("Size each entry at 20% of equity").is_none());
    }

    #[test]
    fn negated_lessons_agree_with_the_rule() {
        let p = prohibition("Never add to a losing position").expect("a prohibition");
        assert!(contradicts(
            &words("Add to losers when funding is extreme"),
            &p
        ));
        assert!(!contradicts(&words("Do not add to losers (n=3)"), &p));
        assert!(!contradicts(&words("Avoid adding to losing positions"), &p));
        assert!(!contradicts(&words("Don't add to losers"), &p));
    }
}
