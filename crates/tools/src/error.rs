use crate::context::DataError;

/// Why a tool could not be built or called.
///
/// [`ToolError::is_recoverable`] says which errors the tick loop sends back to the model as the
/// tool's result (so it can correct itself) and which end the tick.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The arguments broke the tool's schema or rules. Every problem is listed, each naming the
    /// argument it is about.
    #[error("{tool}: invalid arguments: {}", problems.join("; "))]
    InvalidArguments {
        /// The tool called.
        tool: String,
        /// Every problem found, each naming its argument (e.g. `size_usd: must be > 0`).
        problems: Vec<String>,
    },
    /// The context is read-only and this tool could act.
    #[error("{tool}: refused: this context is read-only and {tool} can act; nothing was recorded")]
    ReadOnly {
        /// The tool refused.
        tool: String,
    },
    /// A data source failed while the tool ran.
    #[error("{tool}: data unavailable: {source}")]
    Data {
        /// The tool that was reading.
        tool: String,
        /// What the source reported.
        #[source]
        source: DataError,
    },
    /// No tool of that name is registered.
    #[error("unknown tool {name:?}; available: {}", available.join(", "))]
    UnknownTool {
        /// The name called.
        name: String,
        /// The names registered, in registry order.
        available: Vec<String>,
    },
    /// The whitelist names something that is not a built-in tool.
    #[error("tools.builtIn[{index}]: {name:?} is not a built-in tool; known: {}", skill_schema::BUILTIN_TOOLS.join(", "))]
    NotABuiltin {
        /// Position in the skill's `tools.builtIn` list (0-based).
        index: usize,
        /// The name given.
        name: String,
    },
    /// [`crate::Tool::call`] on a tool that only runs through [`crate::Tool::call_async`].
    #[error("{tool}: this tool waits on a store or a server; call it through Registry::call_async")]
    AsyncOnly {
        /// The tool called.
        tool: String,
    },
    /// The skill names an MCP server none of whose tools are in the context: its servers were
    /// not started (the caller starts them once, before the first tick).
    #[error(
        "tools.mcpServers[{index}] ({name}): the server was not started; none of its tools (mcp__{name}__*) are available"
    )]
    McpNotStarted {
        /// Position in the skill's `tools.mcpServers` list (0-based).
        index: usize,
        /// The server's name.
        name: String,
    },
    /// Two tools of one registry share a name: a started tool and a built-in, or two started
    /// tools.
    #[error("two tools are named {name:?}: {first} and {second}")]
    NameClash {
        /// The name both carry.
        name: String,
        /// Where the first comes from (`built-in`, `external tool 0`, ...).
        first: String,
        /// Where the second comes from.
        second: String,
    },
}

impl ToolError {
    /// Whether the tick loop should hand this error back to the model as the tool's result
    /// (invalid arguments, a read-only refusal, missing data) rather than end the tick.
    #[must_use]
    pub const fn is_recoverable(&self) -> bool {
        matches!(
            self,
            ToolError::InvalidArguments { .. }
                | ToolError::ReadOnly { .. }
                | ToolError::Data { .. }
        )
    }

    pub(crate) fn invalid(tool: &str, problems: Vec<String>) -> Self {
        ToolError::InvalidArguments {
            tool: tool.to_owned(),
            problems,
        }
    }

    pub(crate) fn data(tool: &str, source: DataError) -> Self {
        ToolError::Data {
            tool: tool.to_owned(),
            source,
        }
    }
}
