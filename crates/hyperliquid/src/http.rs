//! The shared HTTP transport: JSON POSTs with a timeout and bounded retries.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{HlError, Result};

pub use crate::ids::{MAINNET_URL, TESTNET_URL};

/// Retries with exponential backoff and jitter on HTTP 429, 5xx and connection errors.
///
/// The wait before retry `n` (1-based) is drawn uniformly from `[d/2, d]` with
/// `d = min(initial_backoff × 2^(n−1), max_backoff)`; a 429's `Retry-After` (seconds) raises the
/// wait to that value, still capped at `max_backoff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total attempts including the first (at least 1).
    pub max_attempts: u32,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(5),
        }
    }
}

impl RetryPolicy {
    /// No retries: one attempt.
    #[must_use]
    pub const fn none() -> Self {
        RetryPolicy {
            max_attempts: 1,
            initial_backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
        }
    }

    /// The wait before retry number `retry` (1-based), with jitter from `random`.
    #[must_use]
    pub fn backoff(&self, retry: u32, random: u64) -> Duration {
        let factor = 1u32
            .checked_shl(retry.saturating_sub(1))
            .unwrap_or(u32::MAX);
        let full = self
            .initial_backoff
            .checked_mul(factor)
            .unwrap_or(self.max_backoff)
            .min(self.max_backoff);
        let half = full / 2;
        let span = u64::try_from((full - half).as_nanos()).unwrap_or(u64::MAX);
        let jitter = if span == 0 { 0 } else { random % (span + 1) };
        half + Duration::from_nanos(jitter)
    }
}

/// Where and how to reach the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    /// Base URL without a trailing path (`https://api.hyperliquid.xyz`, or a local mock).
    pub base_url: String,
    /// Timeout of one HTTP attempt (connect + response).
    pub timeout: Duration,
    pub retry: RetryPolicy,
}

impl ClientConfig {
    /// Any base URL (e.g. a local mock server) with default timeout and retries.
    #[must_use]
    pub fn new(base_url: impl Into<String>) -> Self {
        ClientConfig {
            base_url: base_url.into(),
            timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
        }
    }

    /// The mainnet API.
    #[must_use]
    pub fn mainnet() -> Self {
        Self::new(MAINNET_URL)
    }

    /// The testnet API.
    #[must_use]
    pub fn testnet() -> Self {
        Self::new(TESTNET_URL)
    }

    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    #[must_use]
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }
}

/// A JSON-over-HTTP POSTer with retries.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    client: reqwest::Client,
    base: String,
    retry: RetryPolicy,
}

const MAX_ERROR_BODY: usize = 512;

fn truncate(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(MAX_ERROR_BODY)]);
    text.into_owned()
}

fn random_u64() -> u64 {
    // std's RandomState is randomly keyed per instance: enough entropy for backoff jitter.
    let mut h = RandomState::new().build_hasher();
    h.write_u64(0);
    h.finish()
}

impl Transport {
    pub(crate) fn new(config: &ClientConfig) -> Result<Self> {
        let base = config.base_url.trim_end_matches('/').to_owned();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(HlError::BaseUrl {
                url: config.base_url.clone(),
                message: "must start with http:// or https://".to_owned(),
            });
        }
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .build()
            .map_err(|source| HlError::Transport {
                endpoint: "client setup",
                source,
            })?;
        Ok(Transport {
            client,
            base,
            retry: config.retry,
        })
    }

    /// POSTs `body` as JSON to `{base}/{endpoint}` and returns the 2xx response body.
    pub(crate) async fn post<B: Serialize + ?Sized>(
        &self,
        endpoint: &'static str,
        body: &B,
    ) -> Result<Vec<u8>> {
        let url = format!("{}/{endpoint}", self.base);
        let max = self.retry.max_attempts.max(1);
        let started = Instant::now();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let (err, retry_after) = match self.once(endpoint, &url, body).await {
                Ok(bytes) => return Ok(bytes),
                Err(e) => e,
            };
            if !err.is_retryable() {
                return Err(err);
            }
            if attempt >= max {
                return Err(HlError::RetriesExhausted {
                    endpoint,
                    attempts: attempt,
                    elapsed: started.elapsed(),
                    last: Box::new(err),
                });
            }
            let mut wait = self.retry.backoff(attempt, random_u64());
            if let Some(after) = retry_after {
                wait = wait.max(after.min(self.retry.max_backoff));
            }
            tracing::warn!(
                endpoint,
                attempt,
                max_attempts = max,
                wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                error = %err,
                "hyperliquid request failed; retrying"
            );
            tokio::time::sleep(wait).await;
        }
    }

    async fn once<B: Serialize + ?Sized>(
        &self,
        endpoint: &'static str,
        url: &str,
        body: &B,
    ) -> std::result::Result<Vec<u8>, (HlError, Option<Duration>)> {
        let transport = |source| (HlError::Transport { endpoint, source }, None);
        let resp = self
            .client
            .post(url)
            .json(body)
            .send()
            .await
            .map_err(transport)?;
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let bytes = resp.bytes().await.map_err(transport)?;
        if status.is_success() {
            Ok(bytes.to_vec())
        } else {
            Err((
                HlError::Status {
                    endpoint,
                    status: status.as_u16(),
                    body: truncate(&bytes),
                },
                retry_after,
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_within_half_to_full_and_caps() {
        let p = RetryPolicy {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
        };
        // retry 1: d = 100 ms → [50, 100]; retry 2: 200 → [100, 200]; retry 3: 400 capped 350.
        for (retry, lo, hi) in [(1, 50, 100), (2, 100, 200), (3, 175, 350), (30, 175, 350)] {
            for r in [0, 1, 12_345, u64::MAX] {
                let w = p.backoff(retry, r);
                assert!(
                    w >= Duration::from_millis(lo) && w <= Duration::from_millis(hi),
                    "retry {retry}: {w:?}"
                );
            }
        }
        assert_eq!(RetryPolicy::none().backoff(1, 7), Duration::ZERO);
    }

    #[test]
    fn base_url_must_be_http() {
        assert!(Transport::new(&ClientConfig::new("ftp://x")).is_err());
        assert!(Transport::new(&ClientConfig::new("http://127.0.0.1:1/")).is_ok());
    }
}
