//! The client half: a skill's MCP servers started as child processes, their tools wrapped as
//! [`tools::Tool`]s.

use std::collections::{BTreeSet, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ContentBlock,
    Implementation,
};
use rmcp::service::RunningService;
use rmcp::{Peer, RoleClient, ServiceError, ServiceExt};
use serde_json::Value;
use skill_schema::McpServer;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr, Command};
use tokio::task::JoinHandle;
use tools::{DataError, Tool, ToolError, ToolFuture, mcp_tool_prefix};

use crate::error::McpError;

/// How long a server may take to start: spawn, the MCP handshake and listing its tools.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(10);

/// How many of a server's last stderr lines a start error quotes.
const STDERR_LINES: usize = 8;
/// A quoted stderr line is cut to this many characters.
const STDERR_LINE_CHARS: usize = 300;
/// How long a server may take to exit once its stdin closed, at shutdown, before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// The started MCP servers of one skill and their tools. The child processes live exactly as
/// long as this value: [`McpServers::shutdown`] closes each server's stdin, waits briefly and
/// kills what is left; dropping the set kills them at once.
///
/// The tools ([`McpServers::tools`]) hold only a connection to their server: a call after the
/// set is gone fails with a recoverable [`ToolError::Data`], never a panic.
#[derive(Default)]
pub struct McpServers {
    servers: Vec<Running>,
    tools: Arc<[Arc<dyn Tool>]>,
}

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServers")
            .field(
                "servers",
                &self.servers.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .field(
                "tools",
                &self.tools.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// One started server: its connection and its process.
struct Running {
    name: String,
    service: RunningService<RoleClient, ClientConfig>,
    child: Child,
    stderr: JoinHandle<()>,
}

impl McpServers {
    /// No servers and no tools (a skill without `tools.mcpServers`).
    #[must_use]
    pub fn empty() -> Self {
        Self::default()
    }

    /// Starts every server of `servers` (a skill's `tools.mcpServers`), in order, each within
    /// [`DEFAULT_START_TIMEOUT`].
    ///
    /// # Errors
    /// As [`McpServers::start_with`].
    pub async fn start(servers: &[McpServer]) -> Result<Self, McpError> {
        Self::start_with(servers, DEFAULT_START_TIMEOUT).await
    }

    /// Starts every server of `servers`, in order: spawns its command with its arguments and
    /// environment (stdin, stdout and stderr piped), runs the MCP `initialize` handshake, lists
    /// its tools (every page) and keeps its `allowedTools` (all when empty), each server within
    /// `start_timeout`. A failure stops the start; the servers already started are killed.
    ///
    /// # Errors
    /// [`McpError::Spawn`] when a command cannot be started, [`McpError::Exited`] when it exits
    /// before the listing completed, [`McpError::StartTimeout`], [`McpError::Protocol`] when it
    /// answers with something this client refuses (or lists a tool twice),
    /// [`McpError::MissingTool`] for an allowed tool it does not offer, [`McpError::NoTools`],
    /// and [`McpError::BadToolName`] for a tool whose offered name does not fit.
    pub async fn start_with(
        servers: &[McpServer],
        start_timeout: Duration,
    ) -> Result<Self, McpError> {
        let mut running = Vec::with_capacity(servers.len());
        let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
        let mut names = BTreeSet::new();
        for (index, spec) in servers.iter().enumerate() {
            let (server, server_tools) = start_one(index, spec, start_timeout).await?;
            for tool in &server_tools {
                if !names.insert(tool.name().to_owned()) {
                    return Err(McpError::Protocol {
                        place: place(index, spec),
                        command: command_line(spec),
                        message: format!(
                            "its tool {:?} has the name of a tool of an earlier server",
                            tool.name()
                        ),
                        stderr: Vec::new(),
                    });
                }
            }
            running.push(server);
            tools.extend(server_tools);
        }
        Ok(Self {
            servers: running,
            tools: tools.into(),
        })
    }

    /// Every started tool, in server order then the server's listing order: what a
    /// [`tools::ToolContext`] carries as [`external`](tools::ToolContext::external).
    #[must_use]
    pub fn tools(&self) -> Arc<[Arc<dyn Tool>]> {
        self.tools.clone()
    }

    /// The started servers' names, in order.
    #[must_use]
    pub fn server_names(&self) -> Vec<&str> {
        self.servers.iter().map(|s| s.name.as_str()).collect()
    }

    /// Stops every server: closes the connection (the server sees its stdin close), waits up to
    /// two seconds for it to exit, then kills it.
    pub async fn shutdown(self) {
        for server in self.servers {
            let Running {
                name,
                service,
                mut child,
                stderr,
            } = server;
            if let Err(e) = service.cancel().await {
                tracing::debug!(server = %name, error = %e, "closing the MCP connection");
            }
            match tokio::time::timeout(EXIT_GRACE, child.wait()).await {
                Ok(Ok(status)) => tracing::debug!(server = %name, %status, "MCP server exited"),
                _ => {
                    if let Err(e) = child.kill().await {
                        tracing::warn!(server = %name, error = %e, "killing the MCP server");
                    }
                }
            }
            stderr.abort();
        }
    }
}

/// `tools.mcpServers[i] (name)`.
fn place(index: usize, spec: &McpServer) -> String {
    format!("tools.mcpServers[{index}] ({})", spec.name)
}

/// The command and its arguments, as one line.
fn command_line(spec: &McpServer) -> String {
    std::iter::once(spec.command.as_str())
        .chain(spec.args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The last stderr lines of a server, shared with the task that reads them.
type Tail = Arc<Mutex<VecDeque<String>>>;

fn tail_lines(tail: &Tail) -> Vec<String> {
    tail.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .cloned()
        .collect()
}

/// Reads a server's stderr to its end: each line is logged and the last few kept for errors.
fn read_stderr(name: String, stderr: ChildStderr, tail: Tail) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(server = %name, "stderr: {line}");
            let mut kept = tail.lock().unwrap_or_else(PoisonError::into_inner);
            if kept.len() == STDERR_LINES {
                kept.pop_front();
            }
            kept.push_back(line.chars().take(STDERR_LINE_CHARS).collect());
        }
    })
}

/// This client's identity in the handshake.
fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("agent-mcp", env!("CARGO_PKG_VERSION")),
    )
}

async fn start_one(
    index: usize,
    spec: &McpServer,
    start_timeout: Duration,
) -> Result<(Running, Vec<Arc<dyn Tool>>), McpError> {
    let place = place(index, spec);
    let command = command_line(spec);
    let mut child = Command::new(&spec.command)
        .args(&spec.args)
        .envs(&spec.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|source| McpError::Spawn {
            place: place.clone(),
            command: command.clone(),
            source,
        })?;
    let tail: Tail = Arc::default();
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(McpError::Protocol {
            place,
            command,
            message: "its stdin, stdout or stderr could not be piped".to_owned(),
            stderr: Vec::new(),
        });
    };
    let mut stderr_task = read_stderr(spec.name.clone(), stderr, tail.clone());

    let handshake = async {
        let service = client_config()
            .serve((stdout, stdin))
            .await
            .map_err(|e| e.to_string())?;
        let listed = service
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| format!("listing its tools: {e}"))?;
        Ok::<_, String>((service, listed))
    };
    let (service, listed) = match tokio::time::timeout(start_timeout, handshake).await {
        Ok(Ok(done)) => done,
        Err(_) => {
            let _ = child.kill().await;
            let _ = tokio::time::timeout(Duration::from_millis(300), &mut stderr_task).await;
            return Err(McpError::StartTimeout {
                place,
                command,
                after: start_timeout,
                stderr: tail_lines(&tail),
            });
        }
        Ok(Err(message)) => {
            // An exited server closes its pipes: its status and its last words say why.
            let status = tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
            let _ = tokio::time::timeout(Duration::from_millis(300), &mut stderr_task).await;
            return Err(match status {
                Ok(Ok(status)) => McpError::Exited {
                    place,
                    command,
                    status: status.to_string(),
                    stderr: tail_lines(&tail),
                },
                _ => McpError::Protocol {
                    place,
                    command,
                    message,
                    stderr: tail_lines(&tail),
                },
            });
        }
    };

    let offered: Vec<String> = listed.iter().map(|t| t.name.to_string()).collect();
    for tool in &spec.allowed_tools {
        if !offered.contains(tool) {
            return Err(McpError::MissingTool {
                place,
                command,
                tool: tool.clone(),
                offered,
            });
        }
    }
    let timeout = Duration::from_millis(u64::from(spec.timeout_ms));
    let prefix = mcp_tool_prefix(&spec.name);
    let mut seen = BTreeSet::new();
    let mut tools: Vec<Arc<dyn Tool>> = Vec::new();
    for tool in listed {
        if !spec.allowed_tools.is_empty() && !spec.allowed_tools.iter().any(|a| *a == tool.name) {
            continue;
        }
        if !seen.insert(tool.name.to_string()) {
            return Err(McpError::Protocol {
                place,
                command,
                message: format!("it lists the tool {:?} twice", tool.name),
                stderr: Vec::new(),
            });
        }
        let offered = format!("{prefix}{}", tool.name);
        if !is_tool_name(&offered) {
            return Err(McpError::BadToolName {
                place,
                tool: tool.name.to_string(),
                offered,
            });
        }
        let read_only = tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false);
        tools.push(Arc::new(McpTool {
            offered,
            remote: tool.name.to_string(),
            server: spec.name.clone(),
            description: tool.description.as_deref().unwrap_or_default().to_owned(),
            parameters: Arc::new(Value::Object((*tool.input_schema).clone())),
            read_only,
            timeout,
            peer: service.peer().clone(),
        }));
    }
    if tools.is_empty() {
        return Err(McpError::NoTools { place, command });
    }
    tracing::info!(
        server = %spec.name,
        tools = tools.len(),
        "MCP server started"
    );
    Ok((
        Running {
            name: spec.name.clone(),
            service,
            child,
            stderr: stderr_task,
        },
        tools,
    ))
}

/// A tool name every provider accepts: `^[a-zA-Z0-9_-]{1,64}$`.
#[must_use]
pub fn is_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// One tool of a started server, as the model sees it.
struct McpTool {
    /// `mcp__{server}__{tool}`.
    offered: String,
    /// The server's name for it.
    remote: String,
    /// The server's name in the skill.
    server: String,
    description: String,
    parameters: Arc<Value>,
    /// The server annotated it `readOnlyHint: true`.
    read_only: bool,
    /// One call's timeout (the entry's `timeoutMs`).
    timeout: Duration,
    peer: Peer<RoleClient>,
}

impl McpTool {
    fn data(&self, message: String) -> ToolError {
        ToolError::Data {
            tool: self.offered.clone(),
            source: DataError::new(format!("MCP server {}", self.server), message),
        }
    }

    async fn run(&self, args: Value) -> Result<Value, ToolError> {
        let arguments = match args {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(ToolError::InvalidArguments {
                    tool: self.offered.clone(),
                    problems: vec![format!("the arguments must be an object (got {other})")],
                });
            }
        };
        let params = CallToolRequestParams::new(self.remote.clone()).with_arguments(arguments);
        match tokio::time::timeout(self.timeout, self.peer.call_tool(params)).await {
            Err(_) => Err(self.data(format!(
                "no answer within {} ms; the call was cancelled",
                self.timeout.as_millis()
            ))),
            Ok(Err(ServiceError::McpError(e))) => {
                Err(self.data(format!("the server refused the call: {}", e.message)))
            }
            Ok(Err(e)) => Err(self.data(format!("the server is not answering: {e}"))),
            Ok(Ok(result)) if result.is_error == Some(true) => {
                Err(self.data(format!("the tool failed: {}", error_text(&result))))
            }
            Ok(Ok(result)) => Ok(result_json(result)),
        }
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.offered
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Arc<Value> {
        self.parameters.clone()
    }

    fn can_act(&self) -> bool {
        !self.read_only
    }

    fn call_async(&self, args: Value) -> ToolFuture<'_> {
        Box::pin(self.run(args))
    }
}

/// A successful result as JSON: its `structuredContent` when present, else its text contents —
/// one text that is JSON as that value, one other text as a string, several as a list.
fn result_json(result: CallToolResult) -> Value {
    if let Some(structured) = result.structured_content {
        return structured;
    }
    let mut texts: Vec<String> = result.content.iter().map(content_text).collect();
    match texts.len() {
        0 => Value::Null,
        1 => {
            let text = texts.remove(0);
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        }
        _ => Value::Array(texts.into_iter().map(Value::String).collect()),
    }
}

/// What an `isError` result says, as one line of text.
fn error_text(result: &CallToolResult) -> String {
    let texts: Vec<String> = result.content.iter().map(content_text).collect();
    if texts.is_empty() {
        result
            .structured_content
            .as_ref()
            .map_or_else(|| "(no message)".to_owned(), Value::to_string)
    } else {
        texts.join(" | ")
    }
}

/// A content block's text; other kinds are named, not passed on (a tick's model reads text).
fn content_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(_) => "[image content omitted]".to_owned(),
        ContentBlock::Audio(_) => "[audio content omitted]".to_owned(),
        ContentBlock::Resource(_) => "[embedded resource omitted]".to_owned(),
        ContentBlock::ResourceLink(_) => "[resource link omitted]".to_owned(),
        _ => "[content omitted]".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_what_providers_accept() {
        assert!(is_tool_name("mcp__charts__levels-2"));
        assert!(!is_tool_name("mcp__charts__a b"));
        assert!(!is_tool_name("mcp__charts__é"));
        assert!(!is_tool_name(""));
        assert!(is_tool_name(&"a".repeat(64)));
        assert!(!is_tool_name(&"a".repeat(65)));
    }

    #[test]
    fn results_become_json() {
        let structured = CallToolResult::structured(serde_json::json!({"sum": 3}));
        assert_eq!(result_json(structured), serde_json::json!({"sum": 3}));
        let json_text = CallToolResult::success(vec![ContentBlock::text("[1,2]")]);
        assert_eq!(result_json(json_text), serde_json::json!([1, 2]));
        let plain = CallToolResult::success(vec![ContentBlock::text("hello")]);
        assert_eq!(result_json(plain), serde_json::json!("hello"));
        let two = CallToolResult::success(vec![
            ContentBlock::text("a"),
            ContentBlock::image("AAAA", "image/png"),
        ]);
        assert_eq!(
            result_json(two),
            serde_json::json!(["a", "[image content omitted]"])
        );
        let failed = CallToolResult::error(vec![ContentBlock::text("no"), ContentBlock::text("x")]);
        assert_eq!(error_text(&failed), "no | x");
    }
}
