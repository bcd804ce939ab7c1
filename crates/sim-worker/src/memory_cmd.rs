//! `sim-worker annotate` and `sim-worker memory-stats`: the outcome memory (seed 003) of an
//! existing store — a note on an outcome or a ledger row, and a point-in-time summary of a
//! symbol's outcomes. Neither creates a store. The checks, reads and output are
//! `tick::memory_cmd`'s, shared with `live-runner`.

use chrono::{DateTime, Utc};
use clap::{ArgGroup, Args};
use db::AnnotationTarget;
use tick::memory_cmd::{self, AnnotateRequest, StatsRequest};
use types::Uuid;

use crate::Failure;

/// `sim-worker annotate`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("target").required(true).args(["outcome", "trade"])))]
pub(crate) struct AnnotateArgs {
    /// The store: `sqlite://PATH` or `postgres://…` (it must exist).
    #[arg(long)]
    db: String,
    /// The `trade_outcomes` row to annotate.
    #[arg(long)]
    outcome: Option<Uuid>,
    /// The `trade_history` (ledger) row to annotate.
    #[arg(long)]
    trade: Option<Uuid>,
    /// The note, 1 to 2000 characters.
    #[arg(long)]
    text: String,
    /// A tag (repeatable; at most 16, each 1 to 40 characters).
    #[arg(long = "tag")]
    tags: Vec<String>,
}

/// `sim-worker memory-stats`.
#[derive(Debug, Args)]
pub(crate) struct StatsArgs {
    /// The store: `sqlite://PATH` or `postgres://…` (it must exist).
    #[arg(long)]
    db: String,
    /// Only this deployment's outcomes; default every deployment of the store.
    #[arg(long)]
    deployment: Option<Uuid>,
    /// The symbol.
    #[arg(long)]
    symbol: String,
    /// The window: outcomes whose tick is in [at − DAYS days, at), 1 to 3650.
    #[arg(long)]
    days: u32,
    /// The window's end (UTC), exclusive: an outcome of this tick is out; default just
    /// after the latest outcome's tick of the symbol (1 µs). An outcome scored after it counts
    /// as unscored.
    #[arg(long, value_name = "TIME", value_parser = types::cli::parse_time)]
    at: Option<DateTime<Utc>>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

fn bad(message: impl std::fmt::Display) -> Failure {
    Failure::bad_input(format!("error: {message}"))
}

async fn open(url: &str) -> Result<db::Store, Failure> {
    db::open_existing(url)
        .await
        .map_err(|e| bad(format!("--db {}: {e}", db::redact_url(url))))
}

/// Stores an annotation on an outcome or a ledger row; prints its id.
pub(crate) fn annotate(args: AnnotateArgs) -> Result<String, Failure> {
    let target = match (args.outcome, args.trade) {
        (Some(id), None) => AnnotationTarget::Outcome(id),
        (None, Some(id)) => AnnotationTarget::Trade(id),
        // clap's group makes exactly one of them present.
        _ => return Err(bad("give exactly one of --outcome and --trade")),
    };
    let request = AnnotateRequest {
        target,
        text: args.text,
        tags: args.tags,
    };
    request.check().map_err(bad)?;
    crate::block_on(async move {
        let store = open(&args.db).await?;
        memory_cmd::annotate(&store, request, Utc::now())
            .await
            .map_err(bad)
    })
}

/// Prints the point-in-time summary of a symbol's outcomes over a window.
pub(crate) fn stats(args: StatsArgs) -> Result<String, Failure> {
    let request = StatsRequest {
        deployment: args.deployment,
        symbol: args.symbol,
        days: args.days,
        at: args.at,
        json: args.json,
    };
    request.check().map_err(bad)?;
    crate::block_on(async move {
        let store = open(&args.db).await?;
        memory_cmd::memory_stats(&store, &request)
            .await
            .map_err(bad)
    })
}

/// `sim-worker mcp-serve`.
#[derive(Debug, Args)]
pub(crate) struct McpServeArgs {
    /// The store: `sqlite://PATH` (a backtest's `sim.db`) or `postgres://…` (it must exist).
    #[arg(long)]
    db: String,
    /// Serve this deployment's memory; default the store's only deployment.
    #[arg(long, conflicts_with = "user")]
    deployment: Option<Uuid>,
    /// Serve the memory of every deployment this user owns.
    #[arg(long)]
    user: Option<Uuid>,
    /// Leave `annotate` out: the server only reads.
    #[arg(long)]
    read_only: bool,
}

/// Serves the outcome memory over MCP on stdin/stdout (until the client disconnects): the six
/// recall tools, as of the wall clock at each call, and `annotate` unless `--read-only`.
/// Prints nothing on stdout itself (it is the MCP transport).
pub(crate) fn mcp_serve(args: McpServeArgs) -> Result<String, Failure> {
    crate::block_on(async move {
        let store = open(&args.db).await?;
        let scope = memory_cmd::memory_scope(&store, args.deployment, args.user)
            .await
            .map_err(bad)?;
        let tools = tick::memory_tools(
            store,
            scope,
            std::sync::Arc::new(types::SystemClock),
            args.read_only,
        );
        let info = mcp::ServeInfo {
            name: "sim-worker-memory".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            instructions: Some(tick::MEMORY_SERVER_INSTRUCTIONS.into()),
            mode: tools::RunMode::Trade,
        };
        mcp::serve_stdio(tools, info)
            .await
            .map_err(|e| bad(format!("serving MCP: {e}")))?;
        Ok(String::new())
    })
}
