//! Polling the configured feeds into the store.

use std::time::Duration;

use chrono::{DateTime, Utc};
use db::NewsStore;
use futures_util::future::join_all;

use crate::FeedError;
use crate::parse::parse_feed;

/// Largest feed document read, in bytes; a longer one is malformed.
pub const MAX_FEED_BYTES: usize = 5 * 1024 * 1024;

/// What one feed's poll did.
#[derive(Debug)]
pub struct FeedReport {
    /// The feed's URL.
    pub feed: String,
    /// Items in the document and how many of them were new, or why the feed was skipped.
    pub outcome: Result<FeedCounts, FeedError>,
}

/// A polled feed's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeedCounts {
    /// Usable items in the document (titled, duplicates within it counted once).
    pub items: usize,
    /// Items stored by this poll (not stored before).
    pub new: u64,
}

/// Fetches RSS/Atom feeds over HTTP(S) with a per-request timeout and stores their items.
#[derive(Debug, Clone)]
pub struct FeedPoller {
    feeds: Vec<String>,
    client: reqwest::Client,
}

impl FeedPoller {
    /// A poller of `feeds` (URLs) whose every request gives up after `timeout`.
    ///
    /// # Errors
    /// [`FeedError::Config`] for an empty feed list entry or when the HTTP client cannot be
    /// built.
    pub fn new(feeds: Vec<String>, timeout: Duration) -> Result<Self, FeedError> {
        if let Some(bad) = feeds
            .iter()
            .find(|f| !(f.starts_with("http://") || f.starts_with("https://")))
        {
            return Err(FeedError::Config(format!(
                "feed {bad:?} is not an http:// or https:// URL"
            )));
        }
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .user_agent(concat!("live-runner-news/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| FeedError::Config(format!("HTTP client: {e}")))?;
        Ok(FeedPoller { feeds, client })
    }

    /// The feeds polled.
    #[must_use]
    pub fn feeds(&self) -> &[String] {
        &self.feeds
    }

    /// One round: every feed fetched at once, parsed with symbols matched against `symbols`,
    /// its new items stored with `fetched_at = now`. A feed that is down, answers an error
    /// status, times out, is malformed or cannot be stored is logged (warn) and skipped; the
    /// others are stored regardless. Never fails as a whole.
    pub async fn poll<S: NewsStore + Sync>(
        &self,
        store: &S,
        symbols: &[String],
        now: DateTime<Utc>,
    ) -> Vec<FeedReport> {
        let fetched = join_all(self.feeds.iter().map(|f| self.fetch(f))).await;
        let mut reports = Vec::with_capacity(self.feeds.len());
        for (feed, body) in self.feeds.iter().zip(fetched) {
            let outcome = match body {
                Ok(body) => match parse_feed(feed, &body, now, symbols) {
                    Ok(items) => store
                        .insert_news(&items)
                        .await
                        .map(|new| FeedCounts {
                            items: items.len(),
                            new,
                        })
                        .map_err(|source| FeedError::Store {
                            feed: feed.clone(),
                            source,
                        }),
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            };
            match &outcome {
                Ok(c) => {
                    tracing::info!(feed = %feed, items = c.items, new = c.new, "news feed polled")
                }
                Err(e) => tracing::warn!(feed = %feed, error = %e, "news feed skipped"),
            }
            reports.push(FeedReport {
                feed: feed.clone(),
                outcome,
            });
        }
        reports
    }

    async fn fetch(&self, feed: &str) -> Result<Vec<u8>, FeedError> {
        let transport = |e: reqwest::Error| {
            if e.is_timeout() {
                FeedError::Timeout {
                    feed: feed.to_owned(),
                }
            } else {
                FeedError::Transport {
                    feed: feed.to_owned(),
                    detail: e.to_string(),
                }
            }
        };
        let response = self.client.get(feed).send().await.map_err(transport)?;
        let status = response.status();
        if !status.is_success() {
            return Err(FeedError::Status {
                feed: feed.to_owned(),
                status: status.as_u16(),
            });
        }
        let body = response.bytes().await.map_err(transport)?;
        if body.len() > MAX_FEED_BYTES {
            return Err(FeedError::Malformed {
                feed: feed.to_owned(),
                detail: format!("{} bytes, more than {MAX_FEED_BYTES}", body.len()),
            });
        }
        Ok(body.to_vec())
    }
}
