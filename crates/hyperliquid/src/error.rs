//! [`HlError`], the adapter's one error type, and its [`Result`] alias.

use std::time::Duration;

/// Everything that can go wrong talking to Hyperliquid: transport, HTTP status, payload shape,
/// signing and order formatting. One enum for the adapter's whole domain.
#[derive(Debug, thiserror::Error)]
pub enum HlError {
    /// The URL given as base URL could not be joined with an endpoint path.
    #[error("invalid base URL {url:?}: {message}")]
    BaseUrl {
        /// The base URL as given.
        url: String,
        /// What is wrong with it.
        message: String,
    },

    /// The request could not be sent or the connection broke (after any retries).
    #[cfg(feature = "client")]
    #[error("transport error calling {endpoint}: {source}")]
    Transport {
        /// The endpoint called (`info` or `exchange`), or `client setup` when the HTTP client
        /// could not be built.
        endpoint: &'static str,
        /// reqwest's error.
        #[source]
        source: reqwest::Error,
    },

    /// The server answered with a non-success status that is not retried (4xx other than 429).
    #[error("{endpoint} answered HTTP {status}: {body}")]
    Status {
        /// The endpoint called (`info` or `exchange`).
        endpoint: &'static str,
        /// The HTTP status code.
        status: u16,
        /// The start of the response body (at most 512 bytes).
        body: String,
    },

    /// Every attempt failed with a retryable error (429, 5xx, connection); `last` is the final one.
    #[error("{endpoint}: gave up after {attempts} attempts over {elapsed:?}; last error: {last}")]
    RetriesExhausted {
        /// The endpoint called (`info` or `exchange`).
        endpoint: &'static str,
        /// How many attempts were made.
        attempts: u32,
        /// Time from the first attempt to giving up.
        elapsed: Duration,
        /// The final attempt's error.
        last: Box<HlError>,
    },

    /// The response body is not the documented shape. `path` is the JSON path of the offending
    /// value (e.g. `[3].px`), `message` what was wrong with it.
    #[error("unexpected {what} payload at `{path}`: {message}")]
    Decode {
        /// The payload being parsed, e.g. `userFills`.
        what: &'static str,
        /// The JSON path of the offending value.
        path: String,
        /// The parser's message.
        message: String,
    },

    /// The payload parsed but a value in it is unusable (e.g. a zero position value).
    #[error("invalid {what} payload at `{path}`: {message}")]
    Invalid {
        /// The payload, e.g. `clearinghouseState`.
        what: &'static str,
        /// The JSON path of the offending value.
        path: String,
        /// What is unusable about it.
        message: String,
    },

    /// The exchange endpoint refused the whole request (`{"status": "err", "response": ...}`).
    #[error("exchange rejected the request: {0}")]
    Rejected(String),

    /// The private key text is not a 32-byte hex secp256k1 secret key. The key is never echoed.
    #[error("invalid private key: {0}")]
    InvalidKey(&'static str),

    /// An address is not `0x` followed by 40 hex digits.
    #[error("invalid address {0:?}: expected 0x followed by 40 hex digits")]
    InvalidAddress(String),

    /// A network name is not `mainnet` or `testnet`.
    #[error("invalid network {0:?}: expected mainnet or testnet")]
    InvalidNetwork(String),

    /// A client order id is not `0x` followed by 32 hex digits.
    #[error("invalid client order id {0:?}: expected 0x followed by 32 hex digits")]
    InvalidCloid(String),

    /// The action could not be msgpack-encoded for hashing.
    #[error("cannot msgpack-encode action: {0}")]
    Msgpack(String),

    /// The signer failed (practically unreachable for a valid key).
    #[error("signing failed: {0}")]
    Signing(String),

    /// A price or size cannot be put on the wire (non-positive, rounds to zero, too precise).
    #[error("cannot format {field} {value} for the wire: {reason}")]
    WireNumber {
        /// Which number: `price`, `size`, `slippage`, ...
        field: &'static str,
        /// The value given.
        value: rust_decimal::Decimal,
        /// Why it cannot be sent.
        reason: &'static str,
    },

    /// The coin is not in the perp universe (`meta`).
    #[error("unknown asset {0:?}: not in the perp universe")]
    UnknownAsset(String),
}

/// Shorthand for results of this crate.
pub type Result<T, E = HlError> = std::result::Result<T, E>;

impl HlError {
    /// Whether retrying the same request may succeed (HTTP 429, 5xx, connection problems).
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        match self {
            #[cfg(feature = "client")]
            HlError::Transport { source, .. } => {
                source.is_connect()
                    || source.is_timeout()
                    || source.is_request()
                    || source.is_body()
            }
            HlError::Status { status, .. } => *status == 429 || (500..600).contains(status),
            _ => false,
        }
    }
}

/// Parses `bytes` as `T`, reporting the JSON path of the first bad value.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(
    what: &'static str,
    bytes: &[u8],
) -> Result<T> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| HlError::Decode {
        what,
        path: e.path().to_string(),
        message: e.inner().to_string(),
    })
}
