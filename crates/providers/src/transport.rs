//! The shared HTTP transport: one JSON POST with a per-request timeout, retried with exponential
//! backoff and jitter on 408 / 429 / 5xx, connection errors and timeouts.
//!
//! Errors come back as [`ModelError`] variants carrying the provider name, so the tick record says
//! which provider failed and how.

use std::time::{Duration, Instant};

use model::ModelError;
use reqwest::header::HeaderMap;

/// How failed calls are retried (`types::RetryPolicy`). Attempt `n` (1-based) that fails with a
/// retryable error waits, before attempt `n + 1`, the server's `retry-after-ms` (milliseconds)
/// or `retry-after` (whole seconds) header when present and parseable (an HTTP-date
/// `retry-after` is not parsed and falls back to backoff), otherwise the policy's backoff with
/// equal jitter; in every case at most `max_delay`.
pub use types::RetryPolicy;

/// The providers' default retries: 4 attempts, 500 ms base, 30 s cap.
pub const DEFAULT_RETRY: RetryPolicy = RetryPolicy {
    max_attempts: 4,
    base_delay: Duration::from_millis(500),
    max_delay: Duration::from_secs(30),
};

/// The wait after failed attempt `attempt`: the server's hint (capped) or the backoff.
fn delay(policy: &RetryPolicy, attempt: u32, retry_after: Option<Duration>) -> Duration {
    match retry_after {
        Some(hint) => hint.min(policy.max_delay),
        None => policy.jittered_backoff(attempt),
    }
}

/// Timeout and retry settings shared by every HTTP provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransportOptions {
    /// Whole-request timeout (connect, send, wait, read the body) for ONE attempt.
    pub timeout: Duration,
    /// How failed attempts (connection errors, timeouts, HTTP 408, 429, 5xx) are retried.
    pub retry: RetryPolicy,
}

impl Default for TransportOptions {
    /// 120 s per attempt (long answers from large models are slow), [`DEFAULT_RETRY`].
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(120),
            retry: DEFAULT_RETRY,
        }
    }
}

/// Bodies quoted in errors are cut to this many characters.
const MAX_ERROR_BODY_CHARS: usize = 4000;

/// A reqwest client bound to one provider name and one set of options.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    client: reqwest::Client,
    provider: String,
    options: TransportOptions,
}

/// The outcome of one attempt, before deciding whether to retry.
enum Attempt {
    Done(Result<serde_json::Value, ModelError>),
    Retry {
        error: ModelError,
        retry_after: Option<Duration>,
    },
}

impl Transport {
    /// # Errors
    /// [`ModelError::Other`] when the HTTP client cannot be built (TLS backend initialisation).
    pub(crate) fn new(provider: &str, options: TransportOptions) -> Result<Self, ModelError> {
        let client = reqwest::Client::builder()
            .timeout(options.timeout)
            .build()
            .map_err(|e| ModelError::Other(format!("{provider}: cannot build HTTP client: {e}")))?;
        Ok(Self {
            client,
            provider: provider.to_owned(),
            options,
        })
    }

    pub(crate) fn provider(&self) -> &str {
        &self.provider
    }

    /// POST `body` as JSON to `url` with `headers`, retrying per the policy; the parsed JSON of
    /// the first 2xx answer. With a `deadline`, no attempt waits past it (its timeout is the
    /// shorter of the per-attempt timeout and the time left), and a wait before a retry that
    /// would end past it — a server's `retry-after` longer than the time left, or the backoff —
    /// ends the call at once with [`ModelError::Deadline`] instead of sleeping through it.
    ///
    /// # Errors
    /// The last attempt's error: [`ModelError::Http`] (status and body), [`ModelError::Timeout`],
    /// [`ModelError::Connection`]; [`ModelError::Decode`] when a 2xx body is not JSON (not
    /// retried); [`ModelError::Deadline`] when the deadline passed or a retry's wait would pass
    /// it.
    pub(crate) async fn post_json(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &serde_json::Value,
        deadline: Option<Instant>,
    ) -> Result<serde_json::Value, ModelError> {
        let attempts = self.options.retry.attempts();
        let mut attempt = 1;
        loop {
            let timeout = match deadline {
                None => self.options.timeout,
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(self.deadline(format!("no time left before attempt {attempt}")));
                    }
                    left.min(self.options.timeout)
                }
            };
            match self.attempt(url, headers.clone(), body, timeout).await {
                Attempt::Done(result) => return result,
                Attempt::Retry { error, retry_after } => {
                    if attempt >= attempts {
                        return Err(error);
                    }
                    let delay = delay(&self.options.retry, attempt, retry_after);
                    if let Some(deadline) = deadline {
                        let left = deadline.saturating_duration_since(Instant::now());
                        let wait = retry_after.unwrap_or(delay).max(delay);
                        if wait >= left {
                            let what = if retry_after.is_some() {
                                "retry-after"
                            } else {
                                "backoff"
                            };
                            return Err(self.deadline(format!(
                                "{what} of {} ms after attempt {attempt} ({error}) is beyond the {} ms left",
                                wait.as_millis(),
                                left.as_millis()
                            )));
                        }
                    }
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
            }
        }
    }

    fn deadline(&self, detail: String) -> ModelError {
        ModelError::Deadline {
            provider: self.provider.clone(),
            detail,
        }
    }

    async fn attempt(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &serde_json::Value,
        timeout: Duration,
    ) -> Attempt {
        let sent = self
            .client
            .post(url)
            .headers(headers)
            .timeout(timeout)
            .json(body)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(e) => {
                return Attempt::Retry {
                    error: self.transport_error(&e, timeout),
                    retry_after: None,
                };
            }
        };
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let text = match response.text().await {
            Ok(text) => text,
            Err(e) => {
                return Attempt::Retry {
                    error: self.transport_error(&e, timeout),
                    retry_after: None,
                };
            }
        };
        if status.is_success() {
            return Attempt::Done(serde_json::from_str(&text).map_err(|e| ModelError::Decode {
                provider: self.provider.clone(),
                message: format!("response body is not JSON ({e}): {}", truncate(&text)),
            }));
        }
        let error = ModelError::Http {
            provider: self.provider.clone(),
            status: status.as_u16(),
            body: truncate(&text),
        };
        let retryable =
            status.as_u16() == 408 || status.as_u16() == 429 || status.is_server_error();
        if retryable {
            Attempt::Retry { error, retry_after }
        } else {
            Attempt::Done(Err(error))
        }
    }

    fn transport_error(&self, e: &reqwest::Error, timeout: Duration) -> ModelError {
        if e.is_timeout() {
            let millis = timeout.as_millis();
            ModelError::Timeout {
                provider: self.provider.clone(),
                seconds: u64::try_from(millis.div_ceil(1000)).unwrap_or(u64::MAX),
            }
        } else {
            ModelError::Connection {
                provider: self.provider.clone(),
                message: error_chain(e),
            }
        }
    }
}

/// `e` and its sources, joined with ": " (reqwest's own Display omits the root cause).
fn error_chain(e: &reqwest::Error) -> String {
    let mut message = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// The server's retry hint: `retry-after-ms` (OpenAI) first, then `retry-after` in seconds.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<u64>().ok()) {
        return Some(Duration::from_millis(ms));
    }
    header("retry-after")
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_secs)
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_ERROR_BODY_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(1000),
        }
    }

    #[test]
    fn without_a_hint_the_wait_is_the_backoff() {
        let p = policy();
        for (attempt, full) in [(1u32, 100u64), (2, 200), (4, 800), (5, 1000), (40, 1000)] {
            let w = delay(&p, attempt, None);
            assert!(w >= Duration::from_millis(full / 2), "{attempt}: {w:?}");
            assert!(w <= Duration::from_millis(full), "{attempt}: {w:?}");
        }
    }

    #[test]
    fn retry_after_wins_but_is_capped() {
        let p = policy();
        assert_eq!(delay(&p, 1, Some(Duration::from_millis(0))), Duration::ZERO);
        assert_eq!(
            delay(&p, 3, Some(Duration::from_millis(700))),
            Duration::from_millis(700)
        );
        assert_eq!(
            delay(&p, 1, Some(Duration::from_secs(120))),
            Duration::from_millis(1000)
        );
    }

    #[test]
    fn defaults_are_the_providers() {
        let d = TransportOptions::default();
        assert_eq!(d.timeout, Duration::from_secs(120));
        assert_eq!(d.retry, DEFAULT_RETRY);
        assert_eq!(DEFAULT_RETRY.max_attempts, 4);
    }

    #[test]
    fn retry_after_headers_are_read() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", "3".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(3)));
        h.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        let mut date = HeaderMap::new();
        date.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&date), None);
    }

    #[test]
    fn long_bodies_are_truncated_on_a_char_boundary() {
        let long = "é".repeat(MAX_ERROR_BODY_CHARS + 10);
        let cut = truncate(&long);
        assert_eq!(cut.chars().count(), MAX_ERROR_BODY_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(truncate("short"), "short");
    }
}
