//! The line gate in front of `rmcp`'s server: every line a client sends is checked here before
//! the SDK sees it, so that each malformed request gets the JSON-RPC 2.0 error it calls for.
//!
//! The SDK's own line transport ignores a line that is not JSON, answers every other misshapen
//! message with a bare Invalid Request without its id, and lets a `tools/call` whose params do not
//! fit fall through to "method not found". The gate answers instead:
//! - a line that is not JSON: `-32700` Parse error, id null;
//! - JSON that is not a request object (an array — batches are not supported —, a missing or
//!   non-string `method`, `jsonrpc` other than `"2.0"`, an id that is neither an integer nor a
//!   string of at most [`MAX_ID_CHARS`] characters): `-32600` Invalid Request (id null when the
//!   id itself is what is wrong);
//! - a method the server does not know: `-32601`;
//! - params that do not fit the method (`arguments` not an object, no tool `name`, ...):
//!   `-32602`;
//! - a line longer than [`MAX_LINE_BYTES`]: `-32600`, id null, after the line was skipped
//!   without being buffered; the next line is served.
//!
//! Notifications (no id) are never answered, not even when malformed. Before the client's
//! `initialize` request, notifications and responses are dropped (the SDK ends the connection
//! on anything but a request there). Every piece of the client's input an error repeats is cut to
//! [`MAX_ECHO_CHARS`] characters with a note of how much was cut.

use std::borrow::Cow;
use std::future::Future;

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequest, ClientJsonRpcMessage, ClientRequest, ErrorCode, InitializeRequest,
    JsonRpcMessage, ListToolsRequest, PingRequest,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The longest line (one JSON-RPC message, without its newline) the server reads: 1 MiB. A
/// longer line is skipped and answered with an Invalid Request error.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// The most characters of the client's input (a method or tool name, a value in a parse
/// message, a tool's error text) an answer repeats; the rest is cut with a note.
pub const MAX_ECHO_CHARS: usize = 200;

/// The longest string id answered with itself; a longer one is an Invalid Request, answered with
/// id null.
pub const MAX_ID_CHARS: usize = 200;

/// The methods a client may call (MCP's client requests). A request for one of them whose params
/// do not fit is `-32602`; any other method is `-32601`.
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/templates/list",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
    "completion/complete",
    "logging/setLevel",
];

/// `text`, or its first `max` characters and a note of how many were cut.
pub(crate) fn bounded(text: &str, max: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => Cow::Borrowed(text),
        Some((end, _)) => {
            let cut = text[end..].chars().count();
            Cow::Owned(format!("{}… ({cut} more characters cut)", &text[..end]))
        }
    }
}

/// What becomes of one line.
enum Verdict {
    /// A message for the SDK.
    Forward(Box<ClientJsonRpcMessage>),
    /// An error response, written at once.
    Answer(Vec<u8>),
    /// Nothing (a notification, a response, a blank line).
    Drop,
}

/// An error response line: `{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…}}`.
fn answer(id: Option<&Value>, code: ErrorCode, message: String) -> Verdict {
    #[derive(serde::Serialize)]
    struct Body {
        code: i32,
        message: String,
    }
    #[derive(serde::Serialize)]
    struct Response<'a> {
        jsonrpc: &'static str,
        id: &'a Value,
        error: Body,
    }
    let response = Response {
        jsonrpc: "2.0",
        id: id.unwrap_or(&Value::Null),
        error: Body {
            code: code.0,
            message,
        },
    };
    let mut line = serde_json::to_vec(&response).unwrap_or_default();
    line.push(b'\n');
    Verdict::Answer(line)
}

/// A JSON value's kind, for a message (never its content).
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Why `request` (`method` and `params` of a known method) does not deserialize as `T`.
fn misfit<T: DeserializeOwned>(request: &Map<String, Value>) -> Option<String> {
    let mut only = Map::new();
    for key in ["method", "params"] {
        if let Some(v) = request.get(key) {
            only.insert(key.to_owned(), v.clone());
        }
    }
    serde_json::from_value::<T>(Value::Object(only))
        .err()
        .map(|e| e.to_string())
}

/// The `-32602` answer for a request of a known `method` whose params do not fit.
fn invalid_params(id: &Value, method: &str, request: &Map<String, Value>) -> Verdict {
    let why = match method {
        "initialize" => misfit::<InitializeRequest>(request),
        "tools/call" => misfit::<CallToolRequest>(request),
        "tools/list" => misfit::<ListToolsRequest>(request),
        "ping" => misfit::<PingRequest>(request),
        _ => None,
    };
    let why = why.unwrap_or_else(|| "they do not have the shape the method takes".to_owned());
    answer(
        Some(id),
        ErrorCode::INVALID_PARAMS,
        format!(
            "invalid params for {method}: {}",
            bounded(&why, MAX_ECHO_CHARS)
        ),
    )
}

/// The checks of one line, in the order JSON-RPC 2.0 names its errors.
fn classify(line: &[u8], initialized: bool) -> Verdict {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Drop;
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return answer(
                None,
                ErrorCode::PARSE_ERROR,
                format!(
                    "parse error: the line is not JSON ({})",
                    bounded(&e.to_string(), MAX_ECHO_CHARS)
                ),
            );
        }
    };
    let Value::Object(request) = value else {
        let note = if value.is_array() {
            " (batches are not supported)"
        } else {
            ""
        };
        return answer(
            None,
            ErrorCode::INVALID_REQUEST,
            format!(
                "invalid request: a message must be a JSON object, not {}{note}",
                kind(&value)
            ),
        );
    };
    let id = match request.get("id") {
        None => None,
        Some(id @ Value::Number(n)) if n.is_i64() => Some(id),
        Some(id @ Value::String(s)) if s.chars().count() <= MAX_ID_CHARS => Some(id),
        Some(other) => {
            let got = match other {
                Value::String(s) => format!("a string of {} characters", s.chars().count()),
                Value::Number(n) => format!("the number {}", bounded(&n.to_string(), 40)),
                v => kind(v).to_owned(),
            };
            return answer(
                None,
                ErrorCode::INVALID_REQUEST,
                format!(
                    "invalid request: \"id\" must be an integer or a string of at most \
                     {MAX_ID_CHARS} characters, not {got}"
                ),
            );
        }
    };
    let method = match request.get("method") {
        None => None,
        Some(Value::String(m)) => Some(m.as_str()),
        Some(other) => {
            return answer(
                id,
                ErrorCode::INVALID_REQUEST,
                format!(
                    "invalid request: \"method\" must be a string, not {}",
                    kind(other)
                ),
            );
        }
    };
    let notification = id.is_none() && method.is_some();
    if request.get("jsonrpc") != Some(&Value::String("2.0".to_owned())) {
        if notification {
            return Verdict::Drop;
        }
        let got = match request.get("jsonrpc") {
            None => "missing".to_owned(),
            Some(Value::String(s)) => format!("{:?}", bounded(s, MAX_ECHO_CHARS)),
            Some(v) => kind(v).to_owned(),
        };
        return answer(
            id,
            ErrorCode::INVALID_REQUEST,
            format!("invalid request: \"jsonrpc\" must be \"2.0\" ({got})"),
        );
    }
    let Some(method) = method else {
        let response = request.contains_key("result") || request.contains_key("error");
        if response && id.is_some() {
            // A response to a request of ours: the SDK takes it, or nobody does.
            return match serde_json::from_value::<ClientJsonRpcMessage>(Value::Object(request)) {
                Ok(msg) if initialized => Verdict::Forward(Box::new(msg)),
                _ => Verdict::Drop,
            };
        }
        return answer(
            id,
            ErrorCode::INVALID_REQUEST,
            "invalid request: \"method\" is missing".to_owned(),
        );
    };
    let Some(id) = id else {
        // A notification: never answered.
        if !initialized {
            return Verdict::Drop;
        }
        return match serde_json::from_value::<ClientJsonRpcMessage>(Value::Object(request)) {
            Ok(msg) => Verdict::Forward(Box::new(msg)),
            Err(_) => Verdict::Drop,
        };
    };
    if !KNOWN_METHODS.contains(&method) {
        return answer(
            Some(id),
            ErrorCode::METHOD_NOT_FOUND,
            format!(
                "method not found: {:?}",
                bounded(method, MAX_ECHO_CHARS).as_ref()
            ),
        );
    }
    let method = method.to_owned();
    let id = id.clone();
    match serde_json::from_value::<ClientJsonRpcMessage>(Value::Object(request.clone())) {
        Ok(JsonRpcMessage::Request(r)) if matches!(r.request, ClientRequest::CustomRequest(_)) => {
            invalid_params(&id, &method, &request)
        }
        Ok(msg) => Verdict::Forward(Box::new(msg)),
        Err(e) => answer(
            Some(&id),
            ErrorCode::INVALID_PARAMS,
            format!(
                "invalid params for {method}: {}",
                bounded(&e.to_string(), MAX_ECHO_CHARS)
            ),
        ),
    }
}

/// One read of [`Gate::read_line`].
enum LineRead {
    /// A whole line is in `Gate::line`.
    Line,
    /// A line of this many bytes was longer than [`MAX_LINE_BYTES`] and skipped.
    TooLong(usize),
    /// The client closed its side.
    Eof,
}

/// The server's transport: lines in through the checks above, messages out as lines through a
/// writer task (an answer written from [`Transport::receive`] can never be cut half-way when the
/// SDK drops that future).
pub(crate) struct Gate<R> {
    read: BufReader<R>,
    /// The line read so far (cancel-safe: a dropped read resumes here).
    line: Vec<u8>,
    /// Bytes of the current line skipped because it is too long (0: not skipping).
    skipped: usize,
    out: mpsc::UnboundedSender<Vec<u8>>,
    initialized: bool,
}

impl<R: AsyncRead + Unpin> Gate<R> {
    /// A gate over `read` whose lines go to the writer behind `out`.
    pub(crate) fn new(read: R, out: mpsc::UnboundedSender<Vec<u8>>) -> Self {
        Self {
            read: BufReader::new(read),
            line: Vec::new(),
            skipped: 0,
            out,
            initialized: false,
        }
    }

    /// Reads up to the next newline, keeping at most [`MAX_LINE_BYTES`] of it.
    async fn read_line(&mut self) -> std::io::Result<LineRead> {
        loop {
            let buf = self.read.fill_buf().await?;
            if buf.is_empty() {
                if self.skipped > 0 {
                    return Ok(LineRead::TooLong(std::mem::take(&mut self.skipped)));
                }
                // A last line without its newline is still a line.
                return Ok(if self.line.is_empty() {
                    LineRead::Eof
                } else {
                    LineRead::Line
                });
            }
            let (chunk, used, complete) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], i + 1, true),
                None => (buf, buf.len(), false),
            };
            if self.skipped > 0 || self.line.len() + chunk.len() > MAX_LINE_BYTES {
                self.skipped += self.line.len() + chunk.len();
                self.line.clear();
            } else {
                self.line.extend_from_slice(chunk);
            }
            self.read.consume(used);
            if complete {
                if self.skipped > 0 {
                    return Ok(LineRead::TooLong(std::mem::take(&mut self.skipped)));
                }
                return Ok(LineRead::Line);
            }
        }
    }
}

/// Writes every line sent on `lines` to `write`, flushing each, until every sender is gone.
pub(crate) async fn write_lines<W: AsyncWrite + Unpin>(
    mut write: W,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
) -> std::io::Result<()> {
    while let Some(line) = lines.recv().await {
        write.write_all(&line).await?;
        write.flush().await?;
    }
    Ok(())
}

fn closed() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::BrokenPipe,
        "the output to the client is closed",
    )
}

impl<R: AsyncRead + Send + Unpin> Transport<RoleServer> for Gate<R> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let sent = serde_json::to_vec(&item)
            .map_err(std::io::Error::from)
            .and_then(|mut line| {
                line.push(b'\n');
                self.out.send(line).map_err(|_| closed())
            });
        std::future::ready(sent)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let verdict = match self.read_line().await {
                Ok(LineRead::Eof) => return None,
                Ok(LineRead::TooLong(bytes)) => answer(
                    None,
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "invalid request: a line of {bytes} bytes is longer than the \
                         {MAX_LINE_BYTES} bytes a message may have; it was skipped"
                    ),
                ),
                Ok(LineRead::Line) => {
                    let whole = std::mem::take(&mut self.line);
                    let line = whole.strip_suffix(b"\r").unwrap_or(&whole);
                    classify(line, self.initialized)
                }
                Err(e) => {
                    tracing::error!(error = %e, "reading from the MCP client");
                    return None;
                }
            };
            match verdict {
                Verdict::Forward(msg) => {
                    if let JsonRpcMessage::Request(r) = msg.as_ref()
                        && matches!(r.request, ClientRequest::InitializeRequest(_))
                    {
                        self.initialized = true;
                    }
                    return Some(*msg);
                }
                Verdict::Answer(line) => {
                    if self.out.send(line).is_err() {
                        return None;
                    }
                }
                Verdict::Drop => {}
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_cuts_at_a_character_and_says_how_much() {
        assert_eq!(bounded("héllo", 10), "héllo");
        assert_eq!(bounded("héllo", 2), "hé… (3 more characters cut)");
    }
}
