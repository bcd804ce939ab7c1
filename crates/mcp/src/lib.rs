//! MCP (the Model Context Protocol) for the trading agents, on the official Rust SDK (`rmcp`).
//!
//! - The client half: [`McpServers::start`] starts every MCP server of a skill
//!   (`tools.mcpServers`) as a child process spoken to over its stdin and stdout, runs the
//!   `initialize` handshake, lists its tools (every page), keeps its `allowedTools` and wraps
//!   each as a [`tools::Tool`] named `mcp__{server}__{tool}`, whose
//!   [`call_async`](tools::Tool::call_async) calls the server within the entry's `timeoutMs`.
//!   A caller starts them once (before the first tick) and hands [`McpServers::tools`] to every
//!   tick's [`tools::ToolContext`] ([`with_external`](tools::ToolContext::with_external)). A
//!   result with `isError: true`, a timeout or a dead server is a recoverable
//!   [`tools::ToolError::Data`]: the model reads why.
//! - The server half: [`serve`] / [`serve_stdio`] expose [`tools::Tool`]s over MCP (`tools/list`,
//!   `tools/call`).
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use skill_schema::McpServer;
//!
//! let servers = [McpServer {
//!     name: "charts".into(),
//!     command: "/nonexistent/charts-mcp".into(),
//!     args: vec![],
//!     env: Default::default(),
//!     allowed_tools: vec![],
//!     timeout_ms: skill_schema::DEFAULT_MCP_TIMEOUT_MS,
//! }];
//! let err = mcp::McpServers::start(&servers).await.unwrap_err();
//! assert!(err.to_string().starts_with(
//!     "tools.mcpServers[0] (charts): cannot start `/nonexistent/charts-mcp`: "
//! ));
//! # });
//! ```

mod client;
mod error;
mod gate;
mod server;

pub use client::{DEFAULT_START_TIMEOUT, McpServers, is_tool_name};
pub use error::McpError;
pub use gate::{MAX_ECHO_CHARS, MAX_ID_CHARS, MAX_LINE_BYTES};
pub use server::{MAX_TOOL_ERROR_CHARS, ServeInfo, serve, serve_stdio};
