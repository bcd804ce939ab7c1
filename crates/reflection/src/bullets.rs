//! The per-bullet path of the lesson defences: a reply is read line by line into candidate
//! bullets, each checked alone (and beside its neighbour), so one failing bullet is held back
//! alone and never holds back the rest of the note.
//!
//! A candidate is held when any of these finds something:
//! - the line above it: a heading, a tag or a `…:` lead-in that is not a plain lesson heading
//!   ("## Risk caps (engine-enforced)") holds every bullet under it, up to the next plain one;
//! - the [linter](crate::lint_lessons) and the [grounding check](crate::ground_bullet), on the
//!   bullet alone;
//! - the [deny layer](crate::deny): risk raised, authority undone, an avoid rule touched, a
//!   sentence cut in two; also on each pair of neighbouring bullets joined (an instruction split
//!   across two bullets holds both);
//! - for a real model, the [judge call](crate::judge_request), which must clear each bullet.

use skill_schema::Strategy;
use types::{HeldLesson, TradeRecord};

use crate::bounds::bullet_text;
use crate::deny::{cut_sentence, deny, deny_phrases, plain_words};
use crate::grounding::{AUTHORITY_WORDS, ground_bullet, vocabulary};
use crate::lint::lint_lessons;

/// Words a plain lesson heading may use beyond the lesson vocabulary.
const HEADING_WORDS: &[&str] = &[
    "key",
    "takeaways",
    "summary",
    "notes",
    "observations",
    "recent",
    "following",
    "learned",
    "learnt",
    "insights",
    "review",
    "reflection",
    "reflections",
    "what",
    "worked",
    "didn",
];

/// One bullet on its way to the prompt: its text (`- …`), and every reason to hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// `- ` and the bullet's text, markers and emphasis removed, whitespace collapsed.
    pub text: String,
    /// Why it is held; empty while it may go in.
    pub reasons: Vec<String>,
}

impl Candidate {
    pub(crate) fn passes(&self) -> bool {
        self.reasons.is_empty()
    }

    pub(crate) fn held(&self) -> HeldLesson {
        HeldLesson {
            text: self.text.clone(),
            reasons: self.reasons.clone(),
        }
    }
}

/// Whether a non-bullet line is a plain lesson heading or lead-in ("## Lessons", "**Behaviour
/// to avoid:**", "Here are the lessons:"): every word a lesson word, nothing the deny layer
/// finds, no tag.
fn plain_heading(line: &str, strategy: &Strategy) -> bool {
    if line.contains(['<', '>', '[', ']', '{', '}', '|', '\\']) {
        return false;
    }
    let plain = plain_words(line);
    let vocab = vocabulary();
    // Tickers (`EURUSD`, `BTC`) as the line spells them, in capitals.
    let tickers: Vec<String> = line
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| {
            w.len() >= 2
                && w.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        })
        .map(str::to_ascii_lowercase)
        .collect();
    plain.split_whitespace().all(|w| {
        (vocab.contains(w) || HEADING_WORDS.contains(&w) || tickers.iter().any(|t| t == w))
            && !AUTHORITY_WORDS.contains(&w)
    }) && deny(line, strategy).is_empty()
}

/// Emphasis and code marks removed: `**Behaviour to avoid:** EURUSD …` reads as plain text.
fn without_emphasis(text: &str) -> String {
    let t = text.replace("**", "").replace("__", "");
    t.chars()
        .filter(|c| *c != '`' && *c != '*')
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// A reply → candidate bullets, each carrying the reason of a hostile line above it, and
/// whether one was cut: `truncated` (the model stopped on its token limit) drops the last
/// bullet, which is incomplete, when another one remains.
pub(crate) fn split_reply(
    reply: &str,
    truncated: bool,
    strategy: &Strategy,
) -> (Vec<Candidate>, bool) {
    let mut out = Vec::new();
    let mut taint: Option<String> = None;
    for raw in reply.lines() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with("```") {
            continue;
        }
        let stripped = line.trim_start_matches(['*', '_']).trim_start();
        let is_bullet = crate::bounds::strip_marker(line).is_some();
        let heading = line.starts_with('#')
            || (!is_bullet && (line.ends_with(':') || line.ends_with(":**")))
            || (!is_bullet && line.starts_with("**") && line.ends_with("**"))
            || (!is_bullet && stripped.starts_with('<'));
        if heading {
            taint = if plain_heading(line, strategy) {
                None
            } else {
                Some(format!(
                    "under the line \"{}\", which is not a plain lesson heading",
                    types::cut_chars(line, 80).0
                ))
            };
            continue;
        }
        let Some(body) = bullet_text(line) else {
            continue;
        };
        let body = without_emphasis(&body);
        if body.is_empty() {
            continue;
        }
        out.push(Candidate {
            text: format!("- {body}"),
            reasons: taint.iter().cloned().collect(),
        });
    }
    let cut = truncated && out.len() > 1;
    if cut {
        out.pop();
    }
    (out, cut)
}

/// Every deterministic check on one candidate (the linter, grounding, the deny layer).
pub(crate) fn check(c: &mut Candidate, strategy: &Strategy, trades: &[&TradeRecord]) {
    for r in lint_lessons(&c.text, strategy).reasons {
        let r = r
            .strip_prefix("bullet 1: ")
            .map_or(r.clone(), str::to_owned);
        c.reasons.push(r);
    }
    for p in ground_bullet(&c.text, trades) {
        c.reasons.push(format!("not grounded in the ledger: {p}"));
    }
    c.reasons.extend(deny(&c.text, strategy));
    if let Some(r) = cut_sentence(&c.text) {
        c.reasons.push(r);
    }
}

/// The deny layer's phrase checks over each pair of neighbouring candidates joined: what only
/// the two together say (an instruction split in two) holds both.
pub(crate) fn check_pairs(cs: &mut [Candidate]) {
    for i in 1..cs.len() {
        // One sentence across two bullets: the first left open, the second going on in lower
        // case.
        let open = !cs[i - 1]
            .text
            .trim_end()
            .ends_with(['.', '!', '?', ')', '%']);
        let goes_on = cs[i]
            .text
            .trim_start_matches(['-', ' '])
            .starts_with(char::is_lowercase);
        if open && goes_on {
            let why = "one sentence split across two bullets".to_owned();
            cs[i - 1].reasons.push(why.clone());
            cs[i].reasons.push(why);
        }
        let joined = format!(
            "{} {}",
            cs[i - 1].text.trim_end_matches(['.', ' ']),
            cs[i].text.trim_start_matches(['-', ' '])
        );
        let found = deny_phrases(&joined);
        if found.is_empty() {
            continue;
        }
        let mut alone = deny_phrases(&cs[i - 1].text);
        alone.extend(deny_phrases(&cs[i].text));
        if found.iter().any(|f| !alone.contains(f)) {
            let why = format!(
                "read together with the neighbouring bullet: {}",
                found.join("; ")
            );
            cs[i - 1].reasons.push(why.clone());
            cs[i].reasons.push(why);
        }
    }
}
