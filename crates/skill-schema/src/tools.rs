use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The built-ins every skill may list for the market and its account.
const MARKET_TOOLS: [&str; 5] = [
    "propose_order",
    "fetch_news_sentiment",
    "get_position_risk",
    "get_funding_rate",
    "get_open_interest",
];

/// The outcome memory's recall tools among [`BUILTIN_TOOLS`] (seed 003), in that order.
pub const RECALL_TOOLS: [&str; 6] = [
    "recall_symbol_history",
    "recall_recent_trades",
    "recall_signal_accuracy",
    "recall_similar_setups",
    "recall_what_worked",
    "search_trade_memory",
];

/// The built-in tools a skill may whitelist. The `tools` crate's registry implements exactly
/// these (a test there checks it).
///
/// The last six are [`RECALL_TOOLS`]: opt-in, like every built-in but `propose_order` — a skill
/// that does not list them never queries its outcome memory.
pub const BUILTIN_TOOLS: [&str; 11] = {
    let mut all = [""; 11];
    let mut i = 0;
    while i < MARKET_TOOLS.len() {
        all[i] = MARKET_TOOLS[i];
        i += 1;
    }
    while i < all.len() {
        all[i] = RECALL_TOOLS[i - MARKET_TOOLS.len()];
        i += 1;
    }
    all
};

/// The built-ins that read perpetual-futures data: a skill listing one gets the prompt's
/// Derivatives section, and a live tick fetches funding and open interest for it.
pub const DERIVATIVES_TOOLS: [&str; 2] = ["get_funding_rate", "get_open_interest"];

impl ToolSpec {
    /// Whether the whitelist lists a derivatives tool ([`DERIVATIVES_TOOLS`]).
    #[must_use]
    pub fn lists_derivatives_tool(&self) -> bool {
        self.built_in
            .iter()
            .any(|n| DERIVATIVES_TOOLS.contains(&n.as_str()))
    }

    /// Whether the whitelist lists a recall tool ([`RECALL_TOOLS`]).
    #[must_use]
    pub fn lists_recall_tool(&self) -> bool {
        self.built_in
            .iter()
            .any(|n| RECALL_TOOLS.contains(&n.as_str()))
    }
}

/// Which tools the model may call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolSpec {
    /// Whitelisted built-ins. Default `["propose_order"]`; must include `propose_order`.
    #[serde(default = "default_builtin")]
    #[schemars(length(min = 1, max = 11))]
    pub built_in: Vec<String>,
    /// MCP servers whose tools are offered too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<McpServer>,
}

impl Default for ToolSpec {
    fn default() -> Self {
        Self {
            built_in: default_builtin(),
            mcp_servers: Vec::new(),
        }
    }
}

fn default_builtin() -> Vec<String> {
    vec!["propose_order".to_owned()]
}

/// The default per-call timeout of an MCP server's tools, in milliseconds.
pub const DEFAULT_MCP_TIMEOUT_MS: u32 = 10_000;
/// The shortest per-call timeout a skill may give an MCP server, in milliseconds.
pub const MIN_MCP_TIMEOUT_MS: u32 = 100;
/// The longest per-call timeout a skill may give an MCP server, in milliseconds.
pub const MAX_MCP_TIMEOUT_MS: u32 = 120_000;

/// An MCP server whose tools the skill may use: a program started as a child process, spoken to
/// over its stdin and stdout (MCP's stdio transport). MCP over HTTP is not supported.
///
/// Its tools are offered to the model as `mcp__{name}__{tool}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServer {
    /// The server's name: 1–40 of `a-z`, `0-9`, `_`, `-`.
    #[schemars(regex(pattern = r"^[a-z0-9_-]{1,40}$"))]
    pub name: String,
    /// The program to start (a path, or a name looked up on `PATH`).
    #[schemars(length(min = 1, max = 4096))]
    pub command: String,
    /// Its arguments, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub args: Vec<String>,
    /// Environment variables set for it, on top of the runner's own environment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Only these of the server's tools; empty = all it offers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
    /// How long one tool call may take, in milliseconds (100–120000, default 10000).
    #[serde(default = "default_timeout_ms")]
    #[schemars(range(min = 100, max = 120_000))]
    pub timeout_ms: u32,
}

const fn default_timeout_ms() -> u32 {
    DEFAULT_MCP_TIMEOUT_MS
}
