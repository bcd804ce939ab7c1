//! [`CandleFeed`]: Hyperliquid's WebSocket candle subscriptions on one connection, kept open.
//!
//! The feed connects to `{ws base}/ws`, subscribes to every (coin, interval) asked for
//! ([`CandleFeed::subscribe`]: `{"method": "subscribe", "subscription": {"type": "candle", ...}}`),
//! pings every [`FeedConfig::ping_every`] (the server closes a connection silent for a minute),
//! and hands what it reads to the caller as [`FeedEvent`]s: each candle update (the forming
//! candle's whole state so far), and each connection made or lost. A lost connection is made
//! again after a backoff (doubling from [`FeedConfig::reconnect_min`] to
//! [`FeedConfig::reconnect_max`]) with every subscription sent again; updates sent while it was
//! down are lost, which the caller learns from [`FeedEvent::Disconnected`] and repairs (over
//! REST: `candleSnapshot`).
//!
//! The feed decides nothing about closed bars: a candle is closed once a later one of its
//! series has been seen, which is the caller's bookkeeping.

use std::collections::BTreeSet;
use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use types::Interval;

use crate::error::{HlError, Result};
use crate::wire::{Candle, WsMessage, WsRequest, WsSubscription, parse_ws_message};

/// Where and how the feed connects.
#[derive(Debug, Clone)]
pub struct FeedConfig {
    /// The WebSocket URL, e.g. `wss://api.hyperliquid.xyz/ws` ([`ws_url`] derives it from the
    /// info API's base URL).
    pub url: String,
    /// How often a ping is sent on an open connection.
    pub ping_every: Duration,
    /// The first wait before connecting again after a failure.
    pub reconnect_min: Duration,
    /// The longest wait between two connection attempts.
    pub reconnect_max: Duration,
}

impl FeedConfig {
    /// `url` with a ping every 30 s and reconnection after 250 ms, doubling up to 30 s.
    #[must_use]
    pub fn new(url: impl Into<String>) -> Self {
        FeedConfig {
            url: url.into(),
            ping_every: Duration::from_secs(30),
            reconnect_min: Duration::from_millis(250),
            reconnect_max: Duration::from_secs(30),
        }
    }
}

/// The WebSocket URL of an API base URL: `https://host` → `wss://host/ws`, `http://host:port`
/// → `ws://host:port/ws`.
///
/// # Errors
/// [`HlError::BaseUrl`] for a URL that is not http(s).
pub fn ws_url(base: &str) -> Result<String> {
    let base = base.trim_end_matches('/');
    let rest = |scheme: &str| base.strip_prefix(scheme).filter(|r| !r.is_empty());
    if let Some(host) = rest("https://") {
        Ok(format!("wss://{host}/ws"))
    } else if let Some(host) = rest("http://") {
        Ok(format!("ws://{host}/ws"))
    } else {
        Err(HlError::BaseUrl {
            url: base.to_owned(),
            message: "expected an http:// or https:// URL".to_owned(),
        })
    }
}

/// What the feed reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedEvent {
    /// A connection is open and every subscription was sent on it.
    Connected,
    /// An update of a subscribed candle: its whole state so far.
    Candle(Candle),
    /// The connection failed or was lost: updates may have been missed from here until the
    /// next [`FeedEvent::Connected`].
    Disconnected {
        /// Why, for the log.
        reason: String,
    },
}

/// One WebSocket connection carrying candle subscriptions; stops when dropped.
#[derive(Debug)]
pub struct CandleFeed {
    subscribe: mpsc::UnboundedSender<(String, Interval)>,
    task: tokio::task::JoinHandle<()>,
}

impl CandleFeed {
    /// Starts the feed on the current tokio runtime: it connects (and reconnects) on a task
    /// of its own and sends what it reads to `events`. It ends when dropped or when `events`
    /// is closed.
    #[must_use]
    pub fn start(config: FeedConfig, events: mpsc::UnboundedSender<FeedEvent>) -> Self {
        let (subscribe, requests) = mpsc::unbounded_channel();
        let task = tokio::spawn(run(config, requests, events));
        CandleFeed { subscribe, task }
    }

    /// Subscribes to `coin`'s candles of `interval` (again on every new connection). Asking
    /// twice for one is one subscription.
    pub fn subscribe(&self, coin: &str, interval: Interval) {
        // The task ends only with the feed or its event receiver: nothing to report then.
        let _ = self.subscribe.send((coin.to_owned(), interval));
    }
}

impl Drop for CandleFeed {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn subscribe_text(coin: &str, interval: Interval) -> String {
    let request = WsRequest::Subscribe {
        subscription: WsSubscription::Candle {
            coin: coin.to_owned(),
            interval: interval.as_str().to_owned(),
        },
    };
    serde_json::to_string(&request).unwrap_or_default()
}

/// Why one connection ended.
enum Ended {
    /// The feed was dropped or nobody reads the events: stop.
    Stop,
    /// The connection was lost; connect again.
    Lost(String),
}

async fn run(
    config: FeedConfig,
    mut requests: mpsc::UnboundedReceiver<(String, Interval)>,
    events: mpsc::UnboundedSender<FeedEvent>,
) {
    let mut subscriptions: BTreeSet<(String, Interval)> = BTreeSet::new();
    let mut wait = config.reconnect_min;
    loop {
        let reason = match tokio_tungstenite::connect_async(config.url.as_str()).await {
            Ok((socket, _)) => {
                wait = config.reconnect_min;
                match connected(&config, socket, &mut subscriptions, &mut requests, &events).await {
                    Ended::Stop => return,
                    Ended::Lost(reason) => reason,
                }
            }
            Err(e) => format!("connecting to {}: {e}", config.url),
        };
        tracing::warn!(url = %config.url, %reason, "candle feed disconnected");
        if events.send(FeedEvent::Disconnected { reason }).is_err() {
            return;
        }
        let sleep = tokio::time::sleep(wait);
        tokio::pin!(sleep);
        // Subscriptions asked for meanwhile are sent on the next connection.
        loop {
            tokio::select! {
                () = &mut sleep => break,
                request = requests.recv() => match request {
                    Some(s) => { subscriptions.insert(s); }
                    None => return,
                },
            }
        }
        wait = (wait * 2).min(config.reconnect_max);
    }
}

async fn connected<S>(
    config: &FeedConfig,
    socket: tokio_tungstenite::WebSocketStream<S>,
    subscriptions: &mut BTreeSet<(String, Interval)>,
    requests: &mut mpsc::UnboundedReceiver<(String, Interval)>,
    events: &mpsc::UnboundedSender<FeedEvent>,
) -> Ended
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (mut sink, mut stream) = socket.split();
    for (coin, interval) in subscriptions.iter() {
        if let Err(e) = sink
            .send(Message::text(subscribe_text(coin, *interval)))
            .await
        {
            return Ended::Lost(format!("subscribing: {e}"));
        }
    }
    if events.send(FeedEvent::Connected).is_err() {
        return Ended::Stop;
    }
    let mut ping = tokio::time::interval_at(
        tokio::time::Instant::now() + config.ping_every,
        config.ping_every,
    );
    let ping_text = serde_json::to_string(&WsRequest::Ping).unwrap_or_default();
    loop {
        tokio::select! {
            request = requests.recv() => match request {
                Some((coin, interval)) => {
                    if subscriptions.insert((coin.clone(), interval))
                        && let Err(e) = sink.send(Message::text(subscribe_text(&coin, interval))).await
                    {
                        return Ended::Lost(format!("subscribing: {e}"));
                    }
                }
                None => return Ended::Stop,
            },
            message = stream.next() => match message {
                Some(Ok(Message::Text(text))) => match parse_ws_message(text.as_str()) {
                    Ok(WsMessage::Candles(candles)) => {
                        for c in candles {
                            if events.send(FeedEvent::Candle(c)).is_err() {
                                return Ended::Stop;
                            }
                        }
                    }
                    Ok(WsMessage::Error(e)) => tracing::warn!(error = %e, "the candle feed's server refused a request"),
                    Ok(WsMessage::Subscribed | WsMessage::Pong | WsMessage::Other) => {}
                    Err(e) => tracing::warn!(error = %e, "an unreadable candle update was skipped"),
                },
                Some(Ok(Message::Close(frame))) => {
                    return Ended::Lost(format!("closed by the server: {frame:?}"));
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Ended::Lost(e.to_string()),
                None => return Ended::Lost("the connection ended".to_owned()),
            },
            _ = ping.tick() => {
                if let Err(e) = sink.send(Message::text(ping_text.clone())).await {
                    return Ended::Lost(format!("ping: {e}"));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_websocket_url_follows_the_api_url() {
        assert_eq!(
            ws_url("https://api.hyperliquid.xyz").unwrap(),
            "wss://api.hyperliquid.xyz/ws"
        );
        assert_eq!(
            ws_url("http://127.0.0.1:8080/").unwrap(),
            "ws://127.0.0.1:8080/ws"
        );
        assert!(ws_url("ftp://x").is_err());
        assert!(ws_url("https://").is_err());
    }
}
