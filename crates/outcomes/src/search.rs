//! Full-text search of the outcome memory, the half that decides: which documents match a
//! search text and in which order. A store only returns candidates (a superset of the matches:
//! the rows in scope and time whose lowercased text contains every ASCII word of the query,
//! [`SearchTerms::prefilter`]); [`rank`] keeps the documents that match and orders them, in
//! Rust, so every store answers the same search with the same hits in the same order.
//!
//! - **Words**: a text's words are its runs of letters and digits, ASCII letters lowercased, a
//!   trailing plural `s` dropped from a word of four or more characters that does not end in
//!   `ss` (`Longs` → `long`, `stops` → `stop`, `loss` stays). Nothing else is interpreted:
//!   operators, `*`, `:` and punctuation only separate words.
//! - **Matching**: every word of the query must be a word of the document; a `"quoted phrase"`
//!   must appear as consecutive words (an unclosed quote runs to the end of the text).
//! - **Ranking**: BM25's term weight over the matched documents (every match holds every term,
//!   so the inverse document frequency is the same for all and left out): for each term,
//!   `tf·(k1+1) / (tf + k1·(1 − b + b·len/avg_len))`, summed, with k1 = 1.2 and b = 0.75; a
//!   term occurring more often in a shorter text ranks higher. Ties: newer first, then id.

use thiserror::Error;

use crate::recall::{MAX_SEARCH_CHARS, MemoryHit};

/// At most this many words of a search text are matched (phrases' words included); the rest
/// are ignored.
pub const MAX_SEARCH_WORDS: usize = 16;
/// The most candidates a store hands to [`rank`]: the newest, by time then id.
pub const MAX_CANDIDATES: u32 = 2000;
/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.75;

/// A search text that cannot be searched.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SearchTextError {
    /// Nothing but white space.
    #[error("empty after trimming")]
    Empty,
    /// Longer than [`MAX_SEARCH_CHARS`].
    #[error("{chars} characters, more than {MAX_SEARCH_CHARS}")]
    TooLong {
        /// Its length in characters.
        chars: usize,
    },
    /// No run of letters or digits.
    #[error("{text:?} has no word (letters or digits) to search for")]
    NoWord {
        /// The trimmed text.
        text: String,
    },
}

/// One term of a query: a word, or a phrase of two or more consecutive words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    /// A word (normalised).
    Word(String),
    /// Consecutive words (normalised).
    Phrase(Vec<String>),
}

/// A parsed search text: its terms, each once, in the text's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchTerms {
    terms: Vec<Term>,
}

/// A word as search compares it (see the module's rules).
#[must_use]
pub fn normalize(word: &str) -> String {
    let mut w = word.to_ascii_lowercase();
    if w.chars().count() >= 4 && w.ends_with('s') && !w.ends_with("ss") {
        w.pop();
    }
    w
}

/// The normalised words of `text`, in order.
#[must_use]
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(normalize)
        .collect()
}

impl SearchTerms {
    /// Parses a search text: quoted parts are phrases, the rest words; at most
    /// [`MAX_SEARCH_WORDS`] words in all.
    ///
    /// # Errors
    /// [`SearchTextError`] for a blank text, one over [`MAX_SEARCH_CHARS`] characters, or one
    /// without a word.
    pub fn parse(text: &str) -> Result<Self, SearchTextError> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(SearchTextError::Empty);
        }
        let chars = text.chars().count();
        if chars > MAX_SEARCH_CHARS {
            return Err(SearchTextError::TooLong { chars });
        }
        let mut terms: Vec<Term> = Vec::new();
        let mut budget = MAX_SEARCH_WORDS;
        for (i, part) in trimmed.split('"').enumerate() {
            if budget == 0 {
                break;
            }
            let mut ws = words(part);
            ws.truncate(budget);
            budget -= ws.len();
            let quoted = i % 2 == 1;
            if quoted && ws.len() > 1 {
                let t = Term::Phrase(ws);
                if !terms.contains(&t) {
                    terms.push(t);
                }
            } else {
                for w in ws {
                    let t = Term::Word(w);
                    if !terms.contains(&t) {
                        terms.push(t);
                    }
                }
            }
        }
        if terms.is_empty() {
            return Err(SearchTextError::NoWord {
                text: trimmed.to_owned(),
            });
        }
        Ok(Self { terms })
    }

    /// The terms, in the text's order.
    #[must_use]
    pub fn terms(&self) -> &[Term] {
        &self.terms
    }

    /// The words a store may require as substrings of a candidate's lowercased text: every
    /// ASCII word of the terms, each once (a document that matches contains each of them,
    /// whatever the store's `lower()` does to other characters).
    #[must_use]
    pub fn prefilter(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for t in &self.terms {
            let ws = match t {
                Term::Word(w) => std::slice::from_ref(w),
                Term::Phrase(ws) => ws.as_slice(),
            };
            for w in ws {
                if w.is_ascii() && !out.contains(w) {
                    out.push(w.clone());
                }
            }
        }
        out
    }

    /// How often each term occurs in `doc_words`; `None` when a term does not.
    fn frequencies(&self, doc: &[String]) -> Option<Vec<u32>> {
        self.terms
            .iter()
            .map(|t| {
                let n = match t {
                    Term::Word(w) => doc.iter().filter(|d| *d == w).count(),
                    Term::Phrase(ws) => doc.windows(ws.len()).filter(|win| win == ws).count(),
                };
                (n > 0).then(|| u32::try_from(n).unwrap_or(u32::MAX))
            })
            .collect()
    }
}

/// The hits of a search: the best `limit` and how many documents matched.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchHits {
    /// The best matches, best first (each with its [`MemoryHit::rank`]).
    pub hits: Vec<MemoryHit>,
    /// Documents that matched, listed or not.
    pub matched: usize,
}

/// The candidates that match `terms`, ranked (see the module), the best `limit`.
#[must_use]
pub fn rank(terms: &SearchTerms, candidates: Vec<MemoryHit>, limit: usize) -> SearchHits {
    let mut matched: Vec<(MemoryHit, Vec<u32>, usize)> = candidates
        .into_iter()
        .filter_map(|h| {
            let doc = words(&h.text);
            let tf = terms.frequencies(&doc)?;
            let len = doc.len();
            Some((h, tf, len))
        })
        .collect();
    let total_len: usize = matched.iter().map(|(_, _, len)| len).sum();
    let avg_len = if matched.is_empty() {
        1.0
    } else {
        count_f64(total_len) / count_f64(matched.len())
    };
    for (h, tf, len) in &mut matched {
        let norm = K1 * (1.0 - B + B * count_f64(*len) / avg_len);
        h.rank = tf
            .iter()
            .map(|&f| {
                let f = f64::from(f);
                f * (K1 + 1.0) / (f + norm)
            })
            .sum();
    }
    let count = matched.len();
    let mut hits: Vec<MemoryHit> = matched.into_iter().map(|(h, _, _)| h).collect();
    hits.sort_by(|a, b| {
        b.rank
            .total_cmp(&a.rank)
            .then_with(|| b.at.cmp(&a.at))
            .then_with(|| a.id.cmp(&b.id))
            .then_with(|| kind_order(a).cmp(&kind_order(b)))
    });
    hits.truncate(limit);
    SearchHits {
        hits,
        matched: count,
    }
}

/// Outcomes before annotations (an annotation and its outcome never share an id; this only
/// makes the order total).
fn kind_order(h: &MemoryHit) -> u8 {
    match h.kind {
        crate::HitKind::Outcome => 0,
        crate::HitKind::Annotation => 1,
    }
}

/// A count as `f64` (exact below 2^53, far above any document's words or the candidates).
fn count_f64(n: usize) -> f64 {
    u32::try_from(n).map_or(f64::from(u32::MAX), f64::from)
}
