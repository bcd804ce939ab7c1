//! A mock of Hyperliquid's WebSocket API on 127.0.0.1: it greets a connection as the exchange
//! does, acknowledges subscriptions (and records them), answers pings, and sends every client
//! what the test pushes — candle updates in the exchange's wire format — or closes every
//! connection.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_tungstenite::tungstenite::Message;

#[derive(Clone, Debug)]
enum Push {
    Text(String),
    Close,
}

pub(crate) struct WsMock {
    /// `ws://127.0.0.1:PORT/ws`.
    pub url: String,
    push: broadcast::Sender<Push>,
    /// Every subscription received, as `coin interval`, in order (again after a reconnect).
    subscriptions: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WsMock {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub(crate) async fn ws_mock() -> WsMock {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("ws://{}/ws", listener.local_addr().expect("addr"));
    let (push, _) = broadcast::channel(1024);
    let subscriptions = Arc::new(Mutex::new(Vec::new()));
    let (sender, subs) = (push.clone(), subscriptions.clone());
    let task = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let mut pushed = sender.subscribe();
            let subs = subs.clone();
            tokio::spawn(async move {
                let Ok(socket) = tokio_tungstenite::accept_async(tcp).await else {
                    return;
                };
                let (mut sink, mut stream) = socket.split();
                let _ = sink
                    .send(Message::text("Websocket connection established."))
                    .await;
                loop {
                    tokio::select! {
                        incoming = stream.next() => {
                            let Some(Ok(Message::Text(text))) = incoming else {
                                if matches!(incoming, None | Some(Err(_)) | Some(Ok(Message::Close(_)))) {
                                    return;
                                }
                                continue;
                            };
                            let v: Value = serde_json::from_str(text.as_str()).unwrap_or_default();
                            match v["method"].as_str() {
                                Some("subscribe") => {
                                    let s = &v["subscription"];
                                    subs.lock().expect("subs").push(format!(
                                        "{} {}",
                                        s["coin"].as_str().unwrap_or(""),
                                        s["interval"].as_str().unwrap_or("")
                                    ));
                                    let ack = json!({"channel": "subscriptionResponse", "data": v});
                                    let _ = sink.send(Message::text(ack.to_string())).await;
                                }
                                Some("ping") => {
                                    let _ = sink.send(Message::text(r#"{"channel":"pong"}"#)).await;
                                }
                                _ => {}
                            }
                        }
                        push = pushed.recv() => match push {
                            Ok(Push::Text(t)) => {
                                if sink.send(Message::text(t)).await.is_err() {
                                    return;
                                }
                            }
                            Ok(Push::Close) | Err(_) => {
                                let _ = sink.close().await;
                                return;
                            }
                        },
                    }
                }
            });
        }
    });
    WsMock {
        url,
        push,
        subscriptions,
        task,
    }
}

impl WsMock {
    /// Sends `candle` (its wire JSON) to every connected client as a `candle` message.
    pub(crate) fn candle(&self, candle: &Value) {
        let text = json!({"channel": "candle", "data": candle}).to_string();
        let _ = self.push.send(Push::Text(text));
    }

    /// Closes every open connection.
    pub(crate) fn close_all(&self) {
        let _ = self.push.send(Push::Close);
    }

    /// The subscriptions received so far.
    pub(crate) fn subscriptions(&self) -> Vec<String> {
        self.subscriptions.lock().expect("subs").clone()
    }

    /// Waits until `n` subscriptions were received in all (at most 10 s).
    pub(crate) async fn subscribed(&self, n: usize) {
        for _ in 0..1000 {
            if self.subscriptions().len() >= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{} subscriptions, expected {n}", self.subscriptions().len());
    }
}
