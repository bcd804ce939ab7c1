//! [`McpError`]: why a skill's MCP servers could not be started, or why serving failed.

use std::time::Duration;

/// Why an MCP server of a skill could not be started, or why serving tools over MCP failed.
///
/// Every start error names the entry (`place`: `tools.mcpServers[i] (name)`) and the command
/// line, then the cause; a server that wrote to its stderr has its last lines attached.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The program could not be started (not found, not executable, ...).
    #[error("{place}: cannot start `{command}`: {source}")]
    Spawn {
        /// `tools.mcpServers[i] (name)`.
        place: String,
        /// The command line.
        command: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The program exited before the MCP handshake and the tool listing completed.
    #[error(
        "{place}: `{command}` exited during start-up ({status}){}",
        stderr_tail(stderr)
    )]
    Exited {
        /// `tools.mcpServers[i] (name)`.
        place: String,
        /// The command line.
        command: String,
        /// Its exit status (`exit status: 3`, `signal: 9`, or `still running` when only its
        /// pipes closed).
        status: String,
        /// Its last stderr lines (empty when it wrote none).
        stderr: Vec<String>,
    },
    /// The handshake and tool listing did not complete in time.
    #[error("{place}: `{command}` did not complete the MCP handshake and tool listing within {} ms{}", after.as_millis(), stderr_tail(stderr))]
    StartTimeout {
        /// `tools.mcpServers[i] (name)`.
        place: String,
        /// The command line.
        command: String,
        /// The start timeout.
        after: Duration,
        /// Its last stderr lines.
        stderr: Vec<String>,
    },
    /// The server answered the handshake or the listing with something this client refuses.
    #[error("{place}: `{command}`: {message}{}", stderr_tail(stderr))]
    Protocol {
        /// `tools.mcpServers[i] (name)`.
        place: String,
        /// The command line.
        command: String,
        /// What went wrong (the SDK's error).
        message: String,
        /// Its last stderr lines.
        stderr: Vec<String>,
    },
    /// A tool of `allowedTools` is not offered by the server.
    #[error("{place}: `{command}` does not offer the allowed tool {tool:?}; it offers: {}", offered.join(", "))]
    MissingTool {
        /// `tools.mcpServers[i] (name)`.
        place: String,
        /// The command line.
        command: String,
        /// The allowed tool it lacks.
        tool: String,
        /// The tools it offers.
        offered: Vec<String>,
    },
    /// The server offers no tool the skill may use: listing it would change nothing.
    #[error("{place}: `{command}` offers no tools")]
    NoTools {
        /// `tools.mcpServers[i] (name)`.
        place: String,
        /// The command line.
        command: String,
    },
    /// A tool's name, as offered to the model (`mcp__{server}__{tool}`), is not
    /// `^[a-zA-Z0-9_-]{1,64}$`.
    #[error(
        "{place}: tool {tool:?} would be offered to the model as {offered:?}, which is not 1-64 of a-z, A-Z, 0-9, _ and -"
    )]
    BadToolName {
        /// `tools.mcpServers[i] (name)`.
        place: String,
        /// The server's name for the tool.
        tool: String,
        /// The name it would have been offered under.
        offered: String,
    },
    /// Serving tools over MCP failed (the handshake, or the transport).
    #[error("serving MCP: {0}")]
    Serve(String),
}

/// `; its stderr ends with: a | b` or nothing.
fn stderr_tail(lines: &[String]) -> String {
    if lines.is_empty() {
        String::new()
    } else {
        format!("; its stderr ends with: {}", lines.join(" | "))
    }
}
