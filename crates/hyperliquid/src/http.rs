//! The shared HTTP transport: JSON POSTs with a timeout and bounded retries.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{HlError, Result};

pub use crate::ids::{MAINNET_URL, TESTNET_URL};

/// How failed requests are retried (`types::RetryPolicy`): on HTTP 429, 5xx and connection
/// errors, waiting the policy's backoff; a 429's `Retry-After` (seconds) raises the wait to that
/// value, still capped at `max_delay`.
pub use types::RetryPolicy;

/// The adapter's default retries: 4 attempts, 250 ms base, 5 s cap.
pub const DEFAULT_RETRY: RetryPolicy = RetryPolicy {
    max_attempts: 4,
    base_delay: Duration::from_millis(250),
    max_delay: Duration::from_secs(5),
};

/// Where and how to reach the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    /// Base URL without a trailing path (`https://api.hyperliquid.xyz`, or a local mock).
    pub base_url: String,
    /// Timeout of one HTTP attempt (connect + response).
    pub timeout: Duration,
    /// How failed attempts (429, 5xx, connection errors) are retried.
    pub retry: RetryPolicy,
}

impl ClientConfig {
    /// Any base URL (e.g. a local mock server) with default timeout and retries.
    #[must_use]
    pub fn new(base_url: impl Into<String>) -> Self {
        ClientConfig {
            base_url: base_url.into(),
            timeout: Duration::from_secs(10),
            retry: DEFAULT_RETRY,
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

    /// The same config with another per-attempt timeout.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The same config with another retry policy.
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
        let max = self.retry.attempts();
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
            let mut wait = self.retry.jittered_backoff(attempt);
            if let Some(after) = retry_after {
                wait = wait.max(after.min(self.retry.max_delay));
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
    fn default_retries_are_the_adapters() {
        let c = ClientConfig::new("http://127.0.0.1:1");
        assert_eq!(c.retry.max_attempts, 4);
        assert_eq!(c.retry.base_delay, Duration::from_millis(250));
        assert_eq!(c.retry.max_delay, Duration::from_secs(5));
    }

    #[test]
    fn base_url_must_be_http() {
        assert!(Transport::new(&ClientConfig::new("ftp://x")).is_err());
        assert!(Transport::new(&ClientConfig::new("http://127.0.0.1:1/")).is_ok());
    }
}
