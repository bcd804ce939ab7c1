//! The server half: [`tools::Tool`]s served over MCP.

use std::future::Future;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    ToolAnnotations,
};
use rmcp::service::{MaybeSendFuture, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tools::{Registry, RunMode, Tool, ToolError};

use crate::error::McpError;
use crate::gate::{self, Gate, MAX_ECHO_CHARS, bounded};

/// The most characters of a tool's error text a `tools/call` result carries; the rest is cut
/// with a note (a tool's error may repeat an argument of any size).
pub const MAX_TOOL_ERROR_CHARS: usize = 2000;

/// Who the server says it is in the MCP handshake, and the mode its tools run in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeInfo {
    /// The server's name (`serverInfo.name`).
    pub name: String,
    /// Its version (`serverInfo.version`).
    pub version: String,
    /// Instructions for the client's model, if any.
    pub instructions: Option<String>,
    /// [`RunMode::ReadOnly`] refuses every tool that can act (the call's result is an error);
    /// [`RunMode::Trade`] runs them.
    pub mode: RunMode,
}

impl ServeInfo {
    /// A read-only server named `name` at `version`, without instructions.
    #[must_use]
    pub fn read_only(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            version: version.into(),
            instructions: None,
            mode: RunMode::ReadOnly,
        }
    }
}

/// Serves `tools` over MCP on this process's stdin and stdout (MCP's stdio transport) until the
/// client closes the connection.
///
/// # Errors
/// As [`serve`].
pub async fn serve_stdio(tools: Vec<Arc<dyn Tool>>, info: ServeInfo) -> Result<(), McpError> {
    let (stdin, stdout) = rmcp::transport::stdio();
    serve(tools, info, stdin, stdout).await
}

/// Serves `tools` over MCP on `read` and `write` (a child's pipes, an in-memory duplex) until
/// the client closes the connection.
///
/// `tools/list` lists each tool's name, description and input schema (annotated
/// `readOnlyHint: true` when it cannot act); `tools/call` runs the tool through a
/// [`Registry`] in `info.mode` ([`Registry::call_async`]): a result is the call's
/// `structuredContent` (an object) or its text (anything else), a [`ToolError`] is a result with
/// `isError: true` and the error's text — never a protocol error for a tool failure —, and an
/// unknown tool is the protocol's invalid-params error.
///
/// # Errors
/// [`McpError::Serve`] when the handshake fails or the connection breaks.
pub async fn serve<R, W>(
    tools: Vec<Arc<dyn Tool>>,
    info: ServeInfo,
    read: R,
    write: W,
) -> Result<(), McpError>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let handler = ToolServer::new(tools, info);
    let (out, lines) = tokio::sync::mpsc::unbounded_channel();
    let writer = tokio::spawn(gate::write_lines(write, lines));
    let served = match handler.serve(Gate::new(read, out)).await {
        Ok(running) => running
            .waiting()
            .await
            .map(drop)
            .map_err(|e| McpError::Serve(format!("the connection's task failed: {e}"))),
        Err(e) => Err(McpError::Serve(format!("the handshake failed: {e}"))),
    };
    // The transport (the writer's last sender) is gone with the service: every answer queued
    // is written before this returns.
    let written = writer
        .await
        .map_err(|e| McpError::Serve(format!("the writer's task failed: {e}")))?;
    served?;
    written.map_err(|e| McpError::Serve(format!("writing to the client: {e}")))
}

/// The MCP handler over a registry of tools.
struct ToolServer {
    registry: Registry,
    listed: Vec<rmcp::model::Tool>,
    config: ServerConfig,
}

impl ToolServer {
    fn new(tools: Vec<Arc<dyn Tool>>, info: ServeInfo) -> Self {
        let listed = tools.iter().map(|t| describe(t.as_ref())).collect();
        let mut config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(info.name, info.version));
        if let Some(instructions) = info.instructions {
            config = config.with_instructions(instructions);
        }
        Self {
            registry: Registry::new(info.mode, tools),
            listed,
            config,
        }
    }
}

/// A tool as `tools/list` shows it.
fn describe(tool: &dyn Tool) -> rmcp::model::Tool {
    let schema: JsonObject = match tool.parameters().as_ref() {
        Value::Object(map) => map.clone(),
        // A tool's parameters are an object schema; anything else is offered as "any object".
        _ => {
            let mut map = JsonObject::new();
            map.insert("type".to_owned(), Value::String("object".to_owned()));
            map
        }
    };
    rmcp::model::Tool::new(
        tool.name().to_owned(),
        tool.description().to_owned(),
        Arc::new(schema),
    )
    .annotate(ToolAnnotations::new().read_only(!tool.can_act()))
}

/// A tool's value as a `tools/call` result.
fn result_of(value: Value) -> CallToolResult {
    match value {
        Value::Object(_) => CallToolResult::structured(value),
        Value::String(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        other => CallToolResult::success(vec![ContentBlock::text(other.to_string())]),
    }
}

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        self.config.clone()
    }

    fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, ErrorData>> + MaybeSendFuture + '_ {
        std::future::ready(Ok(ListToolsResult::with_all_items(self.listed.clone())))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.listed.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map_or(Value::Null, Value::Object);
        match self.registry.call_async(&request.name, args).await {
            Ok(value) => Ok(result_of(value).into()),
            Err(ToolError::UnknownTool { name, available }) => Err(ErrorData::invalid_params(
                format!(
                    "unknown tool {:?}; available: {}",
                    bounded(&name, MAX_ECHO_CHARS).as_ref(),
                    available.join(", ")
                ),
                None,
            )),
            // A tool's error may repeat its arguments: what the client reads is bounded.
            Err(e) => Ok(CallToolResult::error(vec![ContentBlock::text(
                bounded(&e.to_string(), MAX_TOOL_ERROR_CHARS).into_owned(),
            )])
            .into()),
        }
    }
}
