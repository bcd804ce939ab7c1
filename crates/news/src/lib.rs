//! The live news source: RSS 2.0 / Atom 1.0 feeds (JSON Feed too, through `feed-rs`) polled
//! into the store's `news_items`, which the live tick reads point in time.
//!
//! What this crate owns: fetching a feed ([`FeedPoller`], reqwest with rustls, a timeout per
//! request), turning its document into [`db::NewsRecord`]s ([`parse_feed`]: plain text,
//! bounded, deduplicated by guid), the symbol rule ([`match_symbols`], whole words and a small
//! [`ALIASES`] table) and the lexicon sentiment ([`lexicon_sentiment`], the word lists in
//! `lexicon/`).
//!
//! What it never does: fail a caller because a feed is down, slow or malformed (that feed is
//! logged and skipped, the others stored); move a stored item's `fetched_at` (a re-polled item
//! is a duplicate, not an update); read a float; decide what a tick shows (the runner reads the
//! store through `NewsStore::news_window`).

mod matching;
mod parse;
mod poller;
mod text;

pub use matching::{ALIASES, lexicon_sentiment, match_symbols};
pub use parse::{IMPORTANCE_MARKET_WIDE, IMPORTANCE_NAMED, parse_feed};
pub use poller::{FeedCounts, FeedPoller, FeedReport, MAX_FEED_BYTES};

/// Why a feed was skipped (or the poller could not be built).
#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    /// The poller's configuration is unusable.
    #[error("news feeds: {0}")]
    Config(String),
    /// The feed did not answer within the timeout.
    #[error("feed {feed}: timed out")]
    Timeout {
        /// The feed's URL.
        feed: String,
    },
    /// The feed could not be reached.
    #[error("feed {feed}: {detail}")]
    Transport {
        /// The feed's URL.
        feed: String,
        /// The HTTP client's error.
        detail: String,
    },
    /// The feed answered an error status.
    #[error("feed {feed}: HTTP {status}")]
    Status {
        /// The feed's URL.
        feed: String,
        /// The status code.
        status: u16,
    },
    /// The document is not a feed (or too large).
    #[error("feed {feed}: not a valid RSS/Atom document: {detail}")]
    Malformed {
        /// The feed's URL.
        feed: String,
        /// The parser's complaint.
        detail: String,
    },
    /// The items could not be stored.
    #[error("feed {feed}: storing its items: {source}")]
    Store {
        /// The feed's URL.
        feed: String,
        /// The store's error.
        #[source]
        source: db::DbError,
    },
}
