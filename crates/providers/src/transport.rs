//! The shared HTTP transport: one JSON POST with a per-request timeout, retried with exponential
//! backoff and jitter on 408 / 429 / 5xx, connection errors and timeouts.
//!
//! Errors come back as [`ModelError`] variants carrying the provider name, so the tick record says
//! which provider failed and how.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use model::ModelError;
use reqwest::header::HeaderMap;

/// How failed calls are retried.
///
/// Attempt `n` (1-based) that fails with a retryable error waits, before attempt `n + 1`:
/// - the server's `retry-after-ms` (milliseconds) or `retry-after` (whole seconds) header when
///   present and parseable (an HTTP-date `retry-after` is not parsed and falls back to backoff);
/// - otherwise `base_delay * 2^(n-1)` with "equal jitter": half of it fixed, the other half
///   uniformly random, so concurrent agents do not retry in lockstep;
///
/// and in every case at most `max_delay`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total attempts including the first one; `0` is treated as `1`.
    pub max_attempts: u32,
    /// The backoff before the second attempt (before jitter). Tests set this to a few ms.
    pub base_delay: Duration,
    /// No wait is ever longer than this, whatever the server's `retry-after` says.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    /// 4 attempts, 500 ms base, 30 s cap.
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The wait after failed attempt `attempt` (1-based). `retry_after` is the server's hint;
    /// `jitter` is a fraction in `[0, 1]` (clamped) choosing where in the jitter window we land.
    #[must_use]
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>, jitter: f64) -> Duration {
        if let Some(hint) = retry_after {
            return hint.min(self.max_delay);
        }
        let exponent = attempt.saturating_sub(1).min(31);
        let full = self
            .base_delay
            .saturating_mul(1_u32 << exponent)
            .min(self.max_delay);
        let half = full / 2;
        let jitter = if jitter.is_finite() {
            jitter.clamp(0.0, 1.0)
        } else {
            0.0
        };
        (half + half.mul_f64(jitter)).min(self.max_delay)
    }
}

/// Timeout and retry settings shared by every HTTP provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransportOptions {
    /// Whole-request timeout (connect, send, wait, read the body) for ONE attempt.
    pub timeout: Duration,
    pub retry: RetryPolicy,
}

impl Default for TransportOptions {
    /// 120 s per attempt (long answers from large models are slow), [`RetryPolicy::default`].
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
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
    /// the first 2xx answer.
    ///
    /// # Errors
    /// The last attempt's error: [`ModelError::Http`] (status and body), [`ModelError::Timeout`],
    /// [`ModelError::Connection`]; [`ModelError::Decode`] when a 2xx body is not JSON (not
    /// retried).
    pub(crate) async fn post_json(
        &self,
        url: &str,
        headers: HeaderMap,
        body: &serde_json::Value,
    ) -> Result<serde_json::Value, ModelError> {
        let attempts = self.options.retry.max_attempts.max(1);
        let mut attempt = 1;
        loop {
            match self.attempt(url, headers.clone(), body).await {
                Attempt::Done(result) => return result,
                Attempt::Retry { error, retry_after } => {
                    if attempt >= attempts {
                        return Err(error);
                    }
                    let delay = self.options.retry.delay(attempt, retry_after, jitter());
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
            }
        }
    }

    async fn attempt(&self, url: &str, headers: HeaderMap, body: &serde_json::Value) -> Attempt {
        let sent = self
            .client
            .post(url)
            .headers(headers)
            .json(body)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(e) => {
                return Attempt::Retry {
                    error: self.transport_error(&e),
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
                    error: self.transport_error(&e),
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

    fn transport_error(&self, e: &reqwest::Error) -> ModelError {
        if e.is_timeout() {
            let millis = self.options.timeout.as_millis();
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

/// A uniform-ish fraction in `[0, 1)` from the std library's randomly keyed hasher: jitter needs
/// no cryptographic quality and this keeps a random-number crate out of the tree.
fn jitter() -> f64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(0x9e37_79b9_7f4a_7c15);
    // 53 random bits → an exactly representable fraction.
    let bits = hasher.finish() >> 11;
    #[allow(clippy::cast_precision_loss)]
    let fraction = bits as f64 / (1_u64 << 53) as f64;
    fraction
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
    fn backoff_doubles_with_equal_jitter_and_is_capped() {
        let p = policy();
        // (attempt, jitter, expected ms): full = 100 * 2^(attempt-1) capped at 1000;
        // delay = full/2 + full/2 * jitter.
        let table = [
            (1, 0.0, 50),    // full 100 → 50 + 0
            (1, 1.0, 100),   // full 100 → 50 + 50
            (2, 0.5, 150),   // full 200 → 100 + 50
            (3, 0.0, 200),   // full 400 → 200 + 0
            (4, 1.0, 800),   // full 800 → 400 + 400
            (5, 0.0, 500),   // full 1600 capped to 1000 → 500 + 0
            (5, 1.0, 1000),  // capped → 500 + 500
            (40, 1.0, 1000), // huge exponent saturates, still capped
        ];
        for (attempt, jitter, expected) in table {
            assert_eq!(
                p.delay(attempt, None, jitter),
                Duration::from_millis(expected),
                "attempt {attempt}, jitter {jitter}"
            );
        }
    }

    #[test]
    fn retry_after_wins_but_is_capped() {
        let p = policy();
        assert_eq!(
            p.delay(1, Some(Duration::from_millis(0)), 1.0),
            Duration::ZERO
        );
        assert_eq!(
            p.delay(3, Some(Duration::from_millis(700)), 0.0),
            Duration::from_millis(700)
        );
        assert_eq!(
            p.delay(1, Some(Duration::from_secs(120)), 0.0),
            Duration::from_millis(1000)
        );
    }

    #[test]
    fn out_of_range_jitter_is_clamped() {
        let p = policy();
        assert_eq!(p.delay(1, None, -3.0), Duration::from_millis(50));
        assert_eq!(p.delay(1, None, 7.0), Duration::from_millis(100));
        assert_eq!(p.delay(1, None, f64::NAN), Duration::from_millis(50));
    }

    #[test]
    fn jitter_is_a_fraction() {
        for _ in 0..1000 {
            let j = jitter();
            assert!((0.0..1.0).contains(&j), "{j}");
        }
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
