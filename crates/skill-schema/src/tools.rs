use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The built-in tools a skill may whitelist. The `tools` crate's registry implements exactly
/// these (a test there checks it).
pub const BUILTIN_TOOLS: [&str; 5] = [
    "propose_order",
    "fetch_news_sentiment",
    "get_position_risk",
    "get_funding_rate",
    "get_open_interest",
];

/// Which tools the model may call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolSpec {
    /// Whitelisted built-ins. Default `["propose_order"]`; must include `propose_order`.
    #[serde(default = "default_builtin")]
    #[schemars(length(min = 1, max = 5))]
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

/// An MCP server whose tools the skill may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServer {
    /// The server's name: 1–40 of `a-z`, `0-9`, `_`, `-`.
    #[schemars(regex(pattern = r"^[a-z0-9_-]{1,40}$"))]
    pub name: String,
    /// The server's `http://` or `https://` endpoint.
    #[schemars(regex(pattern = r"^https?://\S+$"))]
    pub url: String,
    /// Only these of the server's tools; empty = all it offers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_tools: Vec<String>,
}
