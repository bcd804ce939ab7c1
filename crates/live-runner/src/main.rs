//! `live-runner`: operator commands and the tick loop. The logic lives in the library
//! (`live_runner`); this file parses arguments, sets up logging and signals.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use live_runner::admin::{self, DeployRequest};
use live_runner::chat_market;
use live_runner::hl_broker::HyperliquidConfig;
use live_runner::metrics::{self, Metrics};
use live_runner::runner::{self, Runner, RunnerConfig};
use live_runner::serve::model::resolve_chat_model;
use live_runner::serve::{self, AppState, Auth};
use live_runner::terminal;
use rust_decimal::Decimal;
use types::{BadInput, Clock, SystemClock};
use uuid::Uuid;

/// mimalloc, as `sim-worker`'s: a tick is mostly small allocations (decoding candles, rendering
/// the prompt).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "live-runner",
    version,
    about = "Ticks trading-agent deployments on PostgreSQL with Hyperliquid market data.",
    long_about = "Ticks trading-agent deployments on PostgreSQL with Hyperliquid market data, \
                  trading on the paper broker or on a Hyperliquid account. Any number of `run` \
                  processes share the deployments by leasing due ticks in the database; a tick \
                  runs at most once per bar close (and places at most one order, under a \
                  deterministic client order id), and a restarted runner resumes from the \
                  database."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum EventsCommand {
    /// Upsert a calendar file into `market_events`: a JSON array (the `sim-worker --events`
    /// shape) or a CSV file with the header kind,title,symbols,scheduled_at,importance[,source]
    /// (symbols separated by spaces or `;`). Importing a file twice stores each event once; a
    /// bad row is named by file and line and nothing is stored.
    Import {
        /// Database URL, e.g. postgres://postgres@127.0.0.1:5432/agents.
        #[arg(long, env = "DATABASE_URL")]
        db: String,
        /// The calendar: `.csv` is read as CSV, anything else as JSON.
        file: PathBuf,
    },
}

#[derive(Subcommand)]
enum LessonsCommand {
    /// List a deployment's held bullets, newest note first: short id, status, note, text and
    /// why each was held back (as `sim-worker lessons held`).
    Held {
        /// Database URL (it must be migrated), e.g. postgres://postgres@127.0.0.1:5432/agents.
        #[arg(long, env = "DATABASE_URL")]
        db: String,
        /// The deployment; optional when the database (or the user) has only one.
        #[arg(long)]
        deployment: Option<Uuid>,
        /// Which bullets: pending, accepted, rejected or all.
        #[arg(long, default_value = "pending")]
        status: String,
        /// As this user (UUID), under row-level security: only their own deployments'.
        /// PostgreSQL only.
        #[arg(long, value_name = "UUID")]
        user: Option<Uuid>,
    },
    /// Accept a held bullet: a new note — the lessons in force for its window with the bullet
    /// appended — is in force from `--at`, never earlier.
    Accept(LessonReview),
    /// Reject a held bullet: it never reaches a prompt. Audited like an acceptance.
    Reject(LessonReview),
}

#[derive(clap::Args)]
struct LessonReview {
    /// The held bullet: at least 8 hex digits of its id (`lessons held` prints them).
    id: String,
    /// Database URL (it must be migrated), e.g. postgres://postgres@127.0.0.1:5432/agents.
    #[arg(long, env = "DATABASE_URL")]
    db: String,
    /// Review as this user (UUID), under row-level security: only a bullet of their own
    /// deployments, and the review names them (as the API and the pages do). PostgreSQL only.
    #[arg(long, value_name = "UUID", conflicts_with = "by")]
    user: Option<Uuid>,
    /// Who reviews it (1 to 100 characters), kept with the review. Without it (and without
    /// --user), the operator: `operator:$USER`.
    #[arg(long)]
    by: Option<String>,
    /// Why (1 to 500 characters, one line), kept with the review.
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    /// When the review takes effect (UTC). Default: now.
    #[arg(long, value_name = "TIME", value_parser = types::cli::parse_time)]
    at: Option<chrono::DateTime<chrono::Utc>>,
}

#[derive(clap::Args)]
struct TicksArgs {
    /// Database URL (it must be migrated), e.g. postgres://postgres@127.0.0.1:5432/agents.
    #[arg(long, env = "DATABASE_URL")]
    db: String,
    /// The deployment; optional when the database holds only one.
    #[arg(long)]
    deployment: Option<Uuid>,
    /// First tick time (UTC), included.
    #[arg(long, value_name = "TIME", value_parser = types::cli::parse_time)]
    from: Option<chrono::DateTime<chrono::Utc>>,
    /// Last tick time (UTC), included.
    #[arg(long, value_name = "TIME", value_parser = types::cli::parse_time)]
    to: Option<chrono::DateTime<chrono::Utc>>,
    /// `jsonl` (one JSON object a tick) or `csv` (a header, then one row a tick; no prompts).
    #[arg(long, value_name = "FORMAT", default_value = "jsonl", value_parser = tick::ticks_cmd::parse_format)]
    format: tick::ticks_cmd::TicksFormat,
    /// With each tick's system prompt, user message and steps (tool calls with their arguments
    /// and results); JSON lines only.
    #[arg(long)]
    prompts: bool,
    /// At most N ticks, the first of the window.
    #[arg(long, value_name = "N")]
    limit: Option<u32>,
    /// Write to FILE instead of stdout (and print how many ticks were written).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

#[derive(clap::Args)]
struct ControlArgs {
    /// The deployment (its id, as `deployments` lists it).
    deployment: Uuid,
    /// Database URL, e.g. postgres://postgres@127.0.0.1:5432/agents.
    #[arg(long, env = "DATABASE_URL")]
    db: String,
    /// Act as this user (UUID): only their own deployment, and the audit row names them (on
    /// PostgreSQL under row-level security). Without it, as the operator (`operator:$USER`).
    #[arg(long, value_name = "UUID")]
    user: Option<Uuid>,
    /// Why, kept in the audit trail (1 to 500 characters, one line).
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
}

/// `run`'s alert flags: when a tick is alerted, and how the alert worker delivers.
#[derive(clap::Args)]
struct AlertArgs {
    /// Alert `runner_lagging` when a tick starts this long or longer after its bar closed
    /// (e.g. 5m; 0s: never).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = types::cli::parse_duration)]
    alert_lag: Duration,
    /// Alert `model_error_streak` at this many model errors in a row (0: never).
    #[arg(long, value_name = "N", default_value_t = 3)]
    alert_model_error_streak: u32,
    /// An alert request's timeout (connect, send, answer), e.g. 10s.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = types::cli::parse_duration)]
    alert_timeout: Duration,
    /// The wait before an alert's second attempt; doubled after each further failure.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = types::cli::parse_duration)]
    alert_retry_first: Duration,
    /// The longest wait between two attempts of an alert.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = types::cli::parse_duration)]
    alert_retry_max: Duration,
    /// Attempts before an alert is given up.
    #[arg(long, value_name = "N", default_value_t = 20)]
    alert_attempts: u32,
    /// Most alert requests in flight at once.
    #[arg(long, value_name = "N", default_value_t = 8)]
    alert_concurrency: usize,
    /// The Telegram Bot API base URL (a proxy, or a local mock).
    #[arg(long, value_name = "URL", default_value = live_runner::alerts::TELEGRAM_API)]
    telegram_api: String,
}

/// `run`'s PostgreSQL pool: how many connections it opens and how long a statement waits for
/// one.
#[derive(clap::Args)]
struct PoolArgs {
    /// Most connections to the database at once. Default: --concurrency +
    /// --reflection-concurrency + 4, at most 32 (a tick holds a connection only while its
    /// statements run, never while its model answers).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    db_pool: Option<u32>,
    /// How long a statement waits for a free connection before it fails (its tick fails and is
    /// retried); shorter than --tick-budget.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = types::cli::parse_duration)]
    db_acquire_timeout: Duration,
}

impl PoolArgs {
    /// The pool for a runner of `concurrency` ticks and `reflections` reflections in flight.
    fn config(&self, concurrency: usize, reflections: usize) -> db::PoolConfig {
        db::PoolConfig {
            max_connections: self
                .db_pool
                .unwrap_or_else(|| runner::default_pool_size(concurrency, reflections)),
            acquire_timeout: self.db_acquire_timeout,
        }
    }
}

#[derive(clap::Args)]
struct TokenLifetimeArg {
    /// The longest lifetime a token may have (default 30d): `serve` refuses a token that lives
    /// longer (exp − iat, or exp − now), `token` refuses to mint one.
    #[arg(long, value_name = "DURATION", env = serve::auth::MAX_LIFETIME_ENV, value_parser = types::cli::parse_duration)]
    max_token_lifetime: Option<Duration>,
}

impl TokenLifetimeArg {
    /// `auth` with this maximum, when one was given.
    fn apply(&self, auth: Auth) -> anyhow::Result<Auth> {
        let Some(max) = self.max_token_lifetime else {
            return Ok(auth);
        };
        let max = chrono::Duration::from_std(max)
            .map_err(|e| anyhow::anyhow!("--max-token-lifetime: {e}"))?;
        auth.with_max_lifetime(max).context("--max-token-lifetime")
    }
}

/// Where `serve` and `chat` read a chat turn's market: the bars around past events that
/// `get_upcoming_events`' `your_exposure` measures, the recent bars that mark open positions,
/// funding and open interest.
#[derive(clap::Args)]
struct ChatMarketArgs {
    /// Read a chat turn's bars from files in DIR instead of Hyperliquid (offline; no funding
    /// or open interest). For SYMBOL at INTERVAL (5m, 15m, 1h, 4h, 1d, 1w) the first file that
    /// exists of SYMBOL-INTERVAL.csv, SYMBOL-INTERVAL.json (e.g. EURUSD-1h.csv, BTC-1h.json),
    /// then SYMBOL.csv, SYMBOL.json at any interval that divides INTERVAL, resampled (e.g.
    /// examples/data/EURUSD.csv); .csv in the backtesting.py layout and .json a Hyperliquid
    /// candleSnapshot answer, as `sim-worker run --bars` reads them.
    #[arg(long, value_name = "DIR", conflicts_with = "hl_url")]
    bars: Option<PathBuf>,
    /// Hyperliquid API base URL of a chat turn's candles, funding and open interest (mainnet
    /// by default; testnet or a local mock), cached in memory so a turn asking again for the
    /// same bars sends no request.
    #[arg(long, value_name = "URL", default_value = hyperliquid::MAINNET_URL)]
    hl_url: String,
}

impl ChatMarketArgs {
    /// The source these flags name.
    fn source(&self) -> anyhow::Result<Arc<dyn chat::ChatMarket>> {
        Ok(match &self.bars {
            Some(dir) => Arc::new(chat_market::BarDirectory::new(dir).bad_input()?),
            None => Arc::new(
                chat_market::HyperliquidMarket::new(&chat_market::chat_client_config(&self.hl_url))
                    .bad_input()?,
            ),
        })
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum BrokerArg {
    /// Simulated fills at Hyperliquid prices (slippage and fees applied).
    Paper,
    /// Real orders on a Hyperliquid account (needs --hl-account, --hl-network, --hl-key-env).
    Hyperliquid,
}

#[derive(Clone, Copy, ValueEnum)]
enum ModeArg {
    /// Writing and editing skills.
    Authoring,
    /// Coaching on the user's trading.
    Coach,
    /// Operations: deployments, runs, incidents.
    Ops,
}

impl From<ModeArg> for prompt_compose::ChatMode {
    fn from(m: ModeArg) -> Self {
        match m {
            ModeArg::Authoring => Self::Authoring,
            ModeArg::Coach => Self::Coach,
            ModeArg::Ops => Self::Ops,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum MarketFeedArg {
    /// Hyperliquid's WebSocket candle subscriptions, with candleSnapshot backfill and gap
    /// repair.
    Ws,
    /// candleSnapshot alone: one request per symbol, interval and bar close.
    Rest,
}

#[derive(Clone, Copy, ValueEnum)]
enum NetworkArg {
    Mainnet,
    Testnet,
}

#[derive(Subcommand)]
enum Command {
    /// Apply the database migrations (the store schema and the runner's state table) and list
    /// the applied schema versions. A PostgreSQL database the server does not have yet is
    /// created first.
    Migrate {
        /// Database URL (PostgreSQL for `run`), e.g. postgres://postgres@127.0.0.1:5432/agents.
        #[arg(long, env = "DATABASE_URL")]
        db: String,
    },
    /// Store a skill file as a skill version and create an active deployment of it, first
    /// ticking at the next close of the skill's bar interval. Creates the owner if missing.
    Deploy {
        /// Database URL (PostgreSQL for `run`), e.g. postgres://postgres@127.0.0.1:5432/agents.
        #[arg(long, env = "DATABASE_URL")]
        db: String,
        /// Skill file (YAML, JSON or TOML); it is validated and stored as JSON.
        #[arg(long)]
        skill: PathBuf,
        /// The owner's user id (UUID). `--owner` is its old name.
        #[arg(long = "user", alias = "owner", value_name = "UUID")]
        owner: Uuid,
        /// Where orders go: the paper broker, or a Hyperliquid account (real orders).
        #[arg(long, value_enum, default_value = "paper")]
        broker: BrokerArg,
        /// Starting equity of the paper account, in USD (paper only; default 10000). A
        /// Hyperliquid deployment's equity is its exchange account's.
        #[arg(long)]
        equity: Option<Decimal>,
        /// Hyperliquid account address (0x + 40 hex digits) the deployment trades; one
        /// active deployment per account.
        #[arg(long, value_name = "ADDRESS")]
        hl_account: Option<String>,
        /// Hyperliquid network of the account: mainnet or testnet (required, never guessed).
        #[arg(long, value_enum, value_name = "NETWORK")]
        hl_network: Option<NetworkArg>,
        /// NAME of the environment variable holding the account's private key when `run`
        /// ticks it. The key itself is never stored.
        #[arg(long, value_name = "VAR")]
        hl_key_env: Option<String>,
        /// Hyperliquid API base URL for this deployment's account reads and orders (default:
        /// the network's public API).
        #[arg(long, value_name = "URL")]
        hl_url: Option<String>,
        /// Worst accepted price of an order, as a fraction of the mark (orders are
        /// immediate-or-cancel limits this far through the mark).
        #[arg(long, value_name = "FRACTION", default_value = "0.01")]
        hl_max_slippage: Decimal,
        /// Paper only: the exchange's maximum leverage per coin from a Hyperliquid `meta` (or
        /// `metaAndAssetCtxs`) .json file. The skill's symbols it lists are margined as the
        /// exchange margins them (maintenance margin 0.5 / maxLeverage, a higher leverage
        /// refused), like `sim-worker run --meta`; without it, the skill's `maxLeverage`.
        #[arg(long, value_name = "FILE", conflicts_with = "meta_url")]
        meta: Option<PathBuf>,
        /// Paper only: like --meta, fetched from this Hyperliquid API now (e.g.
        /// https://api.hyperliquid.xyz); stored with the deployment, so its ticks and a
        /// backtest given the same `meta` margin alike.
        #[arg(long, value_name = "URL")]
        meta_url: Option<String>,
    },
    /// List the deployments: id, owner, skill, status, broker, last tick, open positions and
    /// realized PnL.
    Deployments {
        /// Database URL (PostgreSQL for `run`), e.g. postgres://postgres@127.0.0.1:5432/agents.
        #[arg(long, env = "DATABASE_URL")]
        db: String,
    },
    /// The market-event calendar the ticks of deployments with events enabled read.
    Events {
        #[command(subcommand)]
        command: EventsCommand,
    },
    /// Serve the chat coach over HTTP: the JSON API under /api (chat, facts, deployment
    /// memory), the pages, /healthz. Needs PostgreSQL (every request runs as its user under
    /// row-level security) and the token secret in AGENT_JWT_SECRET.
    Serve {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        /// PostgreSQL URL, e.g. postgres://postgres@127.0.0.1:5432/agents.
        #[arg(long, env = "DATABASE_URL")]
        db: String,
        /// The chat model: provider/name (anthropic/…, openai/…, openrouter/…, gateway/…;
        /// keys from the environment) or builtin/scripted with --script.
        #[arg(long, env = "CHAT_MODEL")]
        model: String,
        /// For builtin/scripted: a JSON array of responses
        /// ([{"text": "...", "toolCalls": [{"name": "remember", "arguments": {...}}]}]),
        /// played in order across every turn of the process.
        #[arg(long, value_name = "FILE")]
        script: Option<PathBuf>,
        /// Most model calls of one chat turn.
        #[arg(long, default_value_t = chat::DEFAULT_CHAT_MAX_STEPS)]
        max_steps: u32,
        /// Days a kept conversation stays after its last turn; older ones are deleted (checked
        /// at start and every hour).
        #[arg(long, default_value_t = serve::conversations::DEFAULT_RETENTION_DAYS, value_parser = clap::value_parser!(u32).range(1..=36_500))]
        conversation_retention_days: u32,
        #[command(flatten)]
        lifetime: TokenLifetimeArg,
        /// Mark the pages' session cookie `Secure` (the browser sends it over HTTPS only): set it
        /// when the server is reached over TLS, e.g. behind a TLS-terminating proxy.
        #[arg(long)]
        secure_cookies: bool,
        #[command(flatten)]
        market: ChatMarketArgs,
        /// Each user's limit of backtest jobs queued or running at once: `POST /api/backtests`
        /// past it answers 429.
        #[arg(long, value_name = "N", default_value_t = db::JobLimits::default().max_open_jobs)]
        backtest_max_open_jobs: u32,
        /// Each user's cost cap on backtest jobs: their queued and running jobs' `maxCostUsd`
        /// add up to at most this many USD (a built-in model costs nothing).
        #[arg(long, value_name = "USD", default_value = "50")]
        backtest_cost_cap: rust_decimal::Decimal,
    },
    /// Print a dev token (HS256, signed with AGENT_JWT_SECRET) for a user, then the address of
    /// the pages' login form to paste it into (a token never goes in a URL).
    Token {
        /// The user's id (UUID): the token's `sub`.
        #[arg(long)]
        user: Uuid,
        /// How long the token is valid: 90s, 30m, 1h, 7d (at most --max-token-lifetime).
        #[arg(long, default_value = "1h", value_parser = types::cli::parse_duration)]
        ttl: Duration,
        /// The server's base URL, for the login form's address.
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        base_url: String,
        #[command(flatten)]
        lifetime: TokenLifetimeArg,
    },
    /// Talk to the chat coach in a terminal as a user: one line per message, /quit (or the
    /// end of input) to leave. Works on a pipe. On PostgreSQL every turn runs as the user under
    /// row-level security.
    Chat {
        /// The user's id (UUID).
        #[arg(long)]
        user: Uuid,
        /// Database URL (PostgreSQL or SQLite).
        #[arg(long, env = "DATABASE_URL")]
        db: String,
        /// The chat model, as for `serve`.
        #[arg(long, env = "CHAT_MODEL")]
        model: String,
        /// For builtin/scripted: the script file, as for `serve`.
        #[arg(long, value_name = "FILE")]
        script: Option<PathBuf>,
        /// How the chat is opened.
        #[arg(long, value_enum, default_value = "coach")]
        mode: ModeArg,
        /// A deployment of the user's the conversation is about.
        #[arg(long)]
        deployment: Option<Uuid>,
        /// Most model calls of one turn.
        #[arg(long, default_value_t = chat::DEFAULT_CHAT_MAX_STEPS)]
        max_steps: u32,
        #[command(flatten)]
        market: ChatMarketArgs,
    },
    /// Score the outcomes (seed 003) whose +1h/+4h/+24h marks have passed, from Hyperliquid
    /// candles of each deployment's bar interval; off the tick path, on any schedule (cron).
    ScoreOutcomes {
        /// Database URL, e.g. postgres://postgres@127.0.0.1:5432/agents.
        #[arg(long, env = "DATABASE_URL")]
        db: String,
        /// Hyperliquid API base URL of the candles (mainnet by default).
        #[arg(long, default_value = hyperliquid::MAINNET_URL)]
        hl_url: String,
        /// Most outcomes scored in one run (oldest first), at most 1000.
        #[arg(long, default_value_t = 1000)]
        limit: u32,
    },
    /// Attach a note (and tags) to an outcome or a ledger row; prints the annotation's id (as
    /// `sim-worker annotate`).
    #[command(group(clap::ArgGroup::new("target").required(true).args(["outcome", "trade"])))]
    Annotate {
        /// Database URL (it must be migrated), e.g. postgres://postgres@127.0.0.1:5432/agents.
        #[arg(long, env = "DATABASE_URL")]
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
    },
    /// Summarise a symbol's outcomes over a window as they stood at its end (as
    /// `sim-worker memory-stats`): counts, grades, target and stop hits, the win rate (grade A
    /// or B), mean and median pnl % at 1h, 4h and 24h.
    MemoryStats {
        /// Database URL (it must be migrated), e.g. postgres://postgres@127.0.0.1:5432/agents.
        #[arg(long, env = "DATABASE_URL")]
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
        /// The window's end (UTC), exclusive: an outcome of this tick is out; default
        /// just after the latest outcome's tick of the symbol (1 µs).
        #[arg(long, value_name = "TIME", value_parser = types::cli::parse_time)]
        at: Option<chrono::DateTime<chrono::Utc>>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Review the bullets a reflection's lesson defences held back, one by one (as `sim-worker
    /// lessons`). Bad input exits 2.
    Lessons {
        #[command(subcommand)]
        command: LessonsCommand,
    },
    /// Promote a deployment's reflection note to its skill version (as `sim-worker
    /// promote-note`): the skill's other deployments without a note of their own see it from
    /// `--at` (default now).
    PromoteNote {
        /// Database URL (it must be migrated), e.g. postgres://postgres@127.0.0.1:5432/agents.
        #[arg(long, env = "DATABASE_URL")]
        db: String,
        /// The note (active or superseded; one pending review is accepted first).
        #[arg(long)]
        note: Uuid,
        /// When the promotion takes effect (UTC). Default: now.
        #[arg(long, value_name = "TIME", value_parser = types::cli::parse_time)]
        at: Option<chrono::DateTime<chrono::Utc>>,
    },
    /// Serve the outcome memory of one deployment (or of every deployment a user owns) over MCP
    /// on stdin/stdout, for Claude Code or any MCP client: the six recall tools (as of each
    /// call) and `annotate` (as `sim-worker mcp-serve`).
    McpServe {
        /// Database URL (it must be migrated), e.g. postgres://postgres@127.0.0.1:5432/agents.
        #[arg(long, env = "DATABASE_URL")]
        db: String,
        /// Serve this deployment's memory.
        #[arg(long, conflicts_with = "user", required_unless_present = "user")]
        deployment: Option<Uuid>,
        /// Serve the memory of every deployment this user owns.
        #[arg(long)]
        user: Option<Uuid>,
        /// Leave `annotate` out: the server only reads.
        #[arg(long)]
        read_only: bool,
    },
    /// Export a deployment's stored ticks, oldest first (as `sim-worker ticks`): JSON lines
    /// (with `--prompts`: the system prompt, user message and steps each tick's model saw) or
    /// CSV, with outcome, rule code, proposal, verdict, tokens and cost. Bad input exits 2 with
    /// nothing on stdout.
    Ticks(TicksArgs),
    /// Pause a deployment: no tick until it is resumed (a tick already running completes); its
    /// schedule, runner state and ledger are kept. Audited: who, when, why. Exit 2 when the
    /// deployment is unknown (or not the user's) or not active.
    Pause(ControlArgs),
    /// Resume a paused deployment: it ticks again from where it was, at its next bar close (at
    /// once, at the latest closed bar, when that passed while it was paused). Audited. Exit 2
    /// when it is not paused.
    Resume(ControlArgs),
    /// Stop a deployment for good (active or paused): it never ticks again. With --flatten a
    /// runner (`run`) also closes its open positions through its broker — paper or
    /// Hyperliquid — with reduce-only market orders, retrying until they are closed, also
    /// after a runner restart. Audited. Exit 2 when it is already stopped (unless --flatten
    /// asks to close what a stop without it left open).
    Stop {
        #[command(flatten)]
        args: ControlArgs,
        /// Also close every open position through the deployment's broker.
        #[arg(long)]
        flatten: bool,
    },
    /// Tick every due deployment once per closed bar, until SIGTERM / ctrl-c (in-flight ticks
    /// and reflections finish first) or, with --once, until nothing is due.
    Run {
        /// Database URL (PostgreSQL for `run`), e.g. postgres://postgres@127.0.0.1:5432/agents.
        #[arg(long, env = "DATABASE_URL")]
        db: String,
        /// Most ticks (model calls) in flight at once in this process.
        #[arg(long, default_value_t = 8)]
        concurrency: usize,
        /// Most reflections in flight at once in this process. They run off the tick path,
        /// after the tick released its lease, and never take a tick's slot.
        #[arg(long, default_value_t = 2)]
        reflection_concurrency: usize,
        /// Hyperliquid API base URL of the market data (candles) every deployment reads
        /// (mainnet by default; testnet or a local mock). A Hyperliquid deployment's account
        /// and orders use its own network's API (see `deploy --hl-url`).
        #[arg(long, default_value = hyperliquid::MAINNET_URL)]
        hl_url: String,
        /// Where the ticks' closed bars come from. Either way the runner keeps one series per
        /// symbol and interval that every deployment's tick reads, so its requests to the
        /// exchange grow with the symbols, not with the deployments.
        #[arg(long, value_enum, default_value = "ws")]
        market_feed: MarketFeedArg,
        /// The candle feed's WebSocket URL (`--market-feed ws`); by default --hl-url's
        /// (`https://host` → `wss://host/ws`).
        #[arg(long, value_name = "URL")]
        hl_ws_url: Option<String>,
        /// How long a tick waits for the WebSocket feed to close its bar before fetching it
        /// with candleSnapshot (e.g. 2s, 500ms).
        #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = types::cli::parse_duration)]
        feed_grace: Duration,
        /// Process what is due now, wait for it, and exit.
        #[arg(long)]
        once: bool,
        /// Budget of one tick (e.g. 120s, 2m): the model loop's deadline (a model that has not
        /// answered by then makes the tick a `model_error`); a lease lasts twice this and is
        /// extended every third of it while the tick runs, and a tick still running at twice
        /// the budget is abandoned as failed and retried.
        /// `--tick-budget-secs` is its old name.
        #[arg(long, value_name = "DURATION", default_value = "120s", alias = "tick-budget-secs", value_parser = types::cli::parse_duration)]
        tick_budget: Duration,
        /// How often to look for due deployments when idle (e.g. 5s). `--poll-secs` is its old
        /// name.
        #[arg(long, value_name = "DURATION", default_value = "5s", alias = "poll-secs", value_parser = types::cli::parse_duration)]
        poll: Duration,
        /// Address of the /healthz and /metrics endpoint.
        #[arg(long, default_value = "127.0.0.1:9464")]
        listen: SocketAddr,
        /// Also score the due outcomes (as `score-outcomes`) this often (e.g. 15m), on a task of
        /// its own off the tick path. Off by default (run `score-outcomes` from cron).
        #[arg(long, value_name = "DURATION", value_parser = types::cli::parse_duration)]
        score_outcomes_every: Option<Duration>,
        /// An RSS 2.0 / Atom 1.0 feed to poll for headlines (repeatable). With at least one
        /// feed (here or in --news-feeds-file) every tick's News section and
        /// `fetch_news_sentiment` show the stored headlines, point in time; without, they say
        /// headlines are unknown.
        #[arg(long = "news-feed", value_name = "URL")]
        news_feeds: Vec<String>,
        /// A file of feed URLs, one a line (blank lines and `#` comments ignored), added to
        /// --news-feed.
        #[arg(long, value_name = "FILE")]
        news_feeds_file: Option<PathBuf>,
        /// Poll the feeds this often (e.g. 5m; and once at start), off the tick path.
        #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = types::cli::parse_duration)]
        news_every: Duration,
        /// Give up on a feed that has not answered in this long (e.g. 10s; logged and skipped
        /// until the next poll). `--news-timeout-secs` is its old name.
        #[arg(long, value_name = "DURATION", default_value = "10s", alias = "news-timeout-secs", value_parser = types::cli::parse_duration)]
        news_timeout: Duration,
        #[command(flatten)]
        pool: PoolArgs,
        #[command(flatten)]
        alerts: AlertArgs,
    },
}

/// Refuses the command's input: returns a [`BadInput`] error (exit 2) saying why.
macro_rules! refuse {
    ($($arg:tt)*) => {
        return Err(anyhow::Error::new(BadInput(format!($($arg)*))))
    };
}

impl AlertArgs {
    /// The worker's config for `owner`, checked.
    fn config(&self, owner: &str) -> anyhow::Result<live_runner::alerts::AlertConfig> {
        if self.alert_timeout.is_zero() || self.alert_retry_first.is_zero() {
            refuse!("--alert-timeout and --alert-retry-first must be positive");
        }
        if self.alert_retry_max < self.alert_retry_first {
            refuse!("--alert-retry-max must be at least --alert-retry-first");
        }
        if self.alert_attempts == 0 || self.alert_concurrency == 0 {
            refuse!("--alert-attempts and --alert-concurrency must be at least 1");
        }
        if !(self.telegram_api.starts_with("https://") || self.telegram_api.starts_with("http://"))
        {
            refuse!(
                "--telegram-api must be an http:// or https:// URL (got {})",
                self.telegram_api
            );
        }
        let mut config = live_runner::alerts::AlertConfig::new(owner);
        config.timeout = self.alert_timeout;
        config.retry_first = self.alert_retry_first;
        config.retry_max = self.alert_retry_max;
        config.max_attempts = self.alert_attempts;
        config.concurrency = self.alert_concurrency;
        config.telegram_api.clone_from(&self.telegram_api);
        Ok(config)
    }
}

/// Marks an error as the input's fault (the process exits [`types::EXIT_BAD_INPUT`]).
trait InputFault<T> {
    fn bad_input(self) -> anyhow::Result<T>;
}

impl<T, E: Into<anyhow::Error>> InputFault<T> for Result<T, E> {
    fn bad_input(self) -> anyhow::Result<T> {
        self.map_err(|e| anyhow::Error::new(BadInput(format!("{:#}", e.into()))))
    }
}

/// Whether `e` is the input's fault: marked [`BadInput`], or an error that names what the input
/// got wrong — an id the store does not know, a database URL it cannot use or a database never
/// migrated, a note that cannot be promoted, a skill or calendar file that does not load, a skill's MCP server that cannot
/// start, a memory command's flag.
fn is_bad_input(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause.is::<BadInput>()
            || cause.is::<tick::memory_cmd::MemoryCommandError>()
            || matches!(
                cause.downcast_ref::<db::DbError>(),
                Some(
                    db::DbError::NotFound { .. }
                        | db::DbError::UnsupportedUrl { .. }
                        | db::DbError::NotMigrated { .. }
                )
            )
            || matches!(
                cause.downcast_ref::<tick::PromoteError>(),
                Some(
                    tick::PromoteError::Store(db::DbError::NotFound { .. })
                        | tick::PromoteError::AlreadySkillScoped(_)
                        | tick::PromoteError::PendingReview(_)
                )
            )
            || matches!(
                cause.downcast_ref::<admin::AdminError>(),
                Some(
                    admin::AdminError::Skill { .. }
                        | admin::AdminError::Calendar(_)
                        | admin::AdminError::Mcp(_)
                )
            )
    })
}

/// Exit codes: 0 done; 2 bad input (a usage error, or what [`is_bad_input`] says; stderr names
/// the problem); 1 any other failure (the database, the exchange, the network).
fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            if is_bad_input(&e) {
                ExitCode::from(types::EXIT_BAD_INPUT)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

#[tokio::main]
async fn run(cli: Cli) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    match cli.command {
        Command::Migrate { db } => {
            let report = admin::migrate(&db).await.context("migrate")?;
            if report.created {
                println!("created the database of {}", db::redact_url(&db));
            }
            println!(
                "{} schema up to date: {} migrations applied",
                report.backend,
                report.applied.len()
            );
            for (version, description) in report.applied {
                println!("  {version}  {description}");
            }
            println!("runner state table: live_runner_state (written with each tick)");
        }
        Command::Deploy {
            db,
            skill,
            owner,
            broker,
            equity,
            hl_account,
            hl_network,
            hl_key_env,
            hl_url,
            hl_max_slippage,
            meta,
            meta_url,
        } => {
            let exchange_max_leverage = match (&meta, &meta_url) {
                (Some(path), _) => market_data::load_exchange_max_leverage(path)
                    .context("--meta")
                    .bad_input()?,
                (None, Some(url)) => {
                    let info =
                        hyperliquid::InfoClient::new(&hyperliquid::ClientConfig::new(url.clone()))
                            .context("--meta-url")
                            .bad_input()?;
                    info.meta()
                        .await
                        .with_context(|| format!("--meta-url {url}: fetching `meta`"))?
                        .max_leverage_by_coin()
                }
                (None, None) => Default::default(),
            };
            let (broker, hyperliquid, equity_usd) = match broker {
                BrokerArg::Paper => {
                    let given = [
                        ("--hl-account", hl_account.is_some()),
                        ("--hl-network", hl_network.is_some()),
                        ("--hl-key-env", hl_key_env.is_some()),
                        ("--hl-url", hl_url.is_some()),
                    ];
                    let given: Vec<&str> =
                        given.iter().filter(|(_, g)| *g).map(|(f, _)| *f).collect();
                    if !given.is_empty() {
                        refuse!("{} apply to --broker hyperliquid only", given.join(", "));
                    }
                    (
                        db::BrokerKind::Paper,
                        None,
                        equity.unwrap_or(Decimal::from(10_000)),
                    )
                }
                BrokerArg::Hyperliquid => {
                    let config = hyperliquid_config(
                        hl_account,
                        hl_network,
                        hl_key_env,
                        hl_url,
                        hl_max_slippage,
                        equity,
                    )?;
                    (db::BrokerKind::Hyperliquid, Some(config), Decimal::ZERO)
                }
            };
            if let Some(config) = &hyperliquid {
                check_deploy_key(config).await?;
            }
            let parsed = admin::load_skill_file(&skill)?;
            let store = db::connect(&db)
                .await
                .context("connecting to the database")?;
            let req = DeployRequest {
                owner,
                broker,
                equity_usd,
                id: None,
                hyperliquid,
                exchange_max_leverage,
            };
            let d = admin::deploy(&store, &parsed, &req, SystemClock.now())
                .await
                .context("deploy")?;
            println!(
                "deployment {} of skill {} v{} created; first tick at {}",
                d.id,
                d.skill_id,
                d.skill_version,
                d.next_tick_at
                    .map(|t| t.to_rfc3339())
                    .unwrap_or_else(|| "now".to_owned())
            );
        }
        Command::Events {
            command: EventsCommand::Import { db, file },
        } => {
            let store = db::connect(&db)
                .await
                .context("connecting to the database")?;
            let events = admin::import_events(&store, &file).await?;
            println!("{} events stored from {}", events.len(), file.display());
        }
        Command::Pause(args) => control(args, db::ControlAction::Pause, false).await?,
        Command::Resume(args) => control(args, db::ControlAction::Resume, false).await?,
        Command::Stop { args, flatten } => {
            control(args, db::ControlAction::Stop, flatten).await?;
        }
        Command::Deployments { db } => {
            // Read-only: a mistyped URL is an error, never a newly migrated database.
            let store = db::open_existing(&db)
                .await
                .context("connecting to the database")?;
            let rows = admin::list(&store).await?;
            print!("{}", admin::render_table(&rows));
        }
        Command::Serve {
            listen,
            db,
            model,
            script,
            max_steps,
            conversation_retention_days,
            lifetime,
            secure_cookies,
            market,
            backtest_max_open_jobs,
            backtest_cost_cap,
        } => {
            let auth = Auth::from_env(&types::process_env)
                .context("the chat server's token secret")
                .bad_input()?;
            let auth = lifetime.apply(auth).bad_input()?;
            if max_steps == 0 {
                refuse!("--max-steps must be at least 1");
            }
            let model = resolve_chat_model(&model, script.as_deref(), &types::process_env)
                .context("the chat model")
                .bad_input()?;
            let market = market.source()?;
            let store = serve::connect_postgres(&db).await.context("serve")?;
            let mut state = AppState::new(store, auth, model, market, Arc::new(SystemClock));
            state.chat.max_steps = max_steps;
            state.chat.retention_days = conversation_retention_days;
            state.secure_cookies = secure_cookies;
            if backtest_cost_cap < rust_decimal::Decimal::ZERO {
                refuse!("--backtest-cost-cap must not be negative");
            }
            state.backtest_limits = db::JobLimits {
                max_open_jobs: backtest_max_open_jobs,
                max_open_cost_usd: backtest_cost_cap,
            };
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .with_context(|| format!("binding {listen}"))?;
            let local = listener.local_addr().context("the listening address")?;
            tracing::info!(%local, model = state.model.id(), "chat server listening");
            serve::serve(listener, state, shutdown_signal())
                .await
                .context("serving")?;
            tracing::info!("chat server stopped");
        }
        Command::Token {
            user,
            ttl,
            base_url,
            lifetime,
        } => {
            let auth = Auth::from_env(&types::process_env)
                .context("signing the token")
                .bad_input()?;
            let auth = lifetime.apply(auth).bad_input()?;
            let ttl = chrono::Duration::from_std(ttl)
                .map_err(|e| anyhow::anyhow!("--ttl: {e}"))
                .bad_input()?;
            let token = auth
                .mint(user, ttl, SystemClock.now())
                .map_err(|e| match e {
                    serve::AuthError::TtlAboveMax { .. } => {
                        anyhow::Error::new(BadInput(format!("--ttl: {e}")))
                    }
                    other => other.into(),
                })?;
            println!("{token}");
            println!("{}", serve::auth::login_url(&base_url));
            eprintln!("paste the token into the form at that address to log in to the pages");
        }
        Command::Chat {
            user,
            db,
            model,
            script,
            mode,
            deployment,
            max_steps,
            market,
        } => {
            if max_steps == 0 {
                refuse!("--max-steps must be at least 1");
            }
            let model = resolve_chat_model(&model, script.as_deref(), &types::process_env)
                .context("the chat model")
                .bad_input()?;
            let market = market.source()?;
            let store = db::connect(&db)
                .await
                .context("connecting to the database")?;
            let session = |focus| terminal::Session {
                user_id: user,
                mode: mode.into(),
                focus,
                tier: prompt_compose::Tier::Pro,
                max_steps,
            };
            let stdin = tokio::io::BufReader::new(tokio::io::stdin());
            let stdout = tokio::io::stdout();
            let summary = match &store {
                db::Store::Postgres(pg) => {
                    let scoped = pg.as_user(user);
                    let focus = chat_focus(&scoped, deployment).await?;
                    terminal::converse(
                        &scoped,
                        model.as_ref(),
                        market.as_ref(),
                        &SystemClock,
                        &session(focus),
                        stdin,
                        stdout,
                    )
                    .await?
                }
                db::Store::Sqlite(_) => {
                    let focus = chat_focus(&store, deployment).await?;
                    terminal::converse(
                        &store,
                        model.as_ref(),
                        market.as_ref(),
                        &SystemClock,
                        &session(focus),
                        stdin,
                        stdout,
                    )
                    .await?
                }
            };
            eprintln!("{} turns ({} failed)", summary.turns, summary.failed);
        }
        Command::ScoreOutcomes { db, hl_url, limit } => {
            let store = db::connect(&db)
                .await
                .context("connecting to the database")?;
            let info = hyperliquid::InfoClient::new(&hyperliquid::ClientConfig::new(hl_url))
                .context("Hyperliquid client")?;
            let report =
                live_runner::outcomes::score_outcomes(&store, &info, SystemClock.now(), limit)
                    .await
                    .context("scoring outcomes")?;
            println!(
                "{} outcomes due, {} updated, {} scored in full, {} skipped",
                report.pending,
                report.updated,
                report.finished,
                report.skipped.len()
            );
            for (id, why) in &report.skipped {
                println!("  skipped {id}: {why}");
            }
        }
        Command::Annotate {
            db,
            outcome,
            trade,
            text,
            tags,
        } => {
            let target = match (outcome, trade) {
                (Some(id), None) => db::AnnotationTarget::Outcome(id),
                (None, Some(id)) => db::AnnotationTarget::Trade(id),
                _ => refuse!("give exactly one of --outcome and --trade"),
            };
            let request = tick::memory_cmd::AnnotateRequest { target, text, tags };
            request.check()?;
            let store = db::open_existing(&db)
                .await
                .with_context(|| format!("--db {}", db::redact_url(&db)))?;
            let out = tick::memory_cmd::annotate(&store, request, SystemClock.now()).await?;
            print!("{out}");
        }
        Command::MemoryStats {
            db,
            deployment,
            symbol,
            days,
            at,
            json,
        } => {
            let request = tick::memory_cmd::StatsRequest {
                deployment,
                symbol,
                days,
                at,
                json,
            };
            request.check()?;
            let store = db::open_existing(&db)
                .await
                .with_context(|| format!("--db {}", db::redact_url(&db)))?;
            print!(
                "{}",
                tick::memory_cmd::memory_stats(&store, &request).await?
            );
        }
        Command::Lessons { command } => match lessons(command).await {
            Ok(out) => print!("{out}"),
            Err(e) => {
                eprintln!("error: {e:#}");
                std::process::exit(2);
            }
        },
        Command::PromoteNote { db, note, at } => {
            let store = db::open_existing(&db)
                .await
                .with_context(|| format!("--db {}", db::redact_url(&db)))?;
            let at = at.unwrap_or_else(|| SystemClock.now());
            let copy = tick::promote_note(&store, note, at)
                .await
                .with_context(|| format!("--note {note}"))?;
            print!("{}", tick::promoted_note_line(note, &copy));
        }
        Command::McpServe {
            db,
            deployment,
            user,
            read_only,
        } => {
            let store = db::open_existing(&db)
                .await
                .with_context(|| format!("--db {}", db::redact_url(&db)))?;
            let scope = tick::memory_cmd::memory_scope(&store, deployment, user).await?;
            let tools = tick::memory_tools(store, scope, Arc::new(SystemClock), read_only);
            let info = mcp::ServeInfo {
                name: "live-runner-memory".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                instructions: Some(tick::MEMORY_SERVER_INSTRUCTIONS.into()),
                mode: tools::RunMode::Trade,
            };
            mcp::serve_stdio(tools, info).await.context("serving MCP")?;
        }
        Command::Ticks(args) => ticks(args).await?,
        Command::Run {
            db,
            concurrency,
            reflection_concurrency,
            hl_url,
            market_feed,
            hl_ws_url,
            feed_grace,
            once,
            tick_budget,
            poll,
            listen,
            score_outcomes_every,
            news_feeds,
            news_feeds_file,
            news_every,
            news_timeout,
            pool,
            alerts,
        } => {
            let news = news_config(
                news_feeds,
                news_feeds_file.as_deref(),
                news_every,
                news_timeout,
            )?;
            if concurrency == 0 {
                refuse!("--concurrency must be at least 1");
            }
            if reflection_concurrency == 0 {
                refuse!("--reflection-concurrency must be at least 1");
            }
            if pool.db_acquire_timeout >= tick_budget {
                refuse!("--db-acquire-timeout must be shorter than --tick-budget");
            }
            let market_feed = match market_feed {
                MarketFeedArg::Rest => runner::MarketFeed::Rest,
                MarketFeedArg::Ws => {
                    let url = match hl_ws_url {
                        Some(url) => url,
                        None => match hyperliquid::ws_url(&hl_url) {
                            Ok(url) => url,
                            Err(e) => refuse!("--hl-url: {e}"),
                        },
                    };
                    if !(url.starts_with("ws://") || url.starts_with("wss://")) {
                        refuse!("--hl-ws-url must be a ws:// or wss:// URL, got {url:?}");
                    }
                    runner::MarketFeed::Ws(runner::WsFeed {
                        grace: feed_grace,
                        ..runner::WsFeed::new(url)
                    })
                }
            };
            let pool = pool.config(concurrency, reflection_concurrency);
            let store = db::connect_pooled(&db, pool)
                .await
                .context("connecting to the database")?;
            let info = hyperliquid::InfoClient::new(&hyperliquid::ClientConfig::new(hl_url))
                .context("Hyperliquid client")?;
            // Listening before `/healthz` answers: a SIGTERM from then on stops the runner cleanly.
            let shutdown = shutdown_signal();
            let metrics = Metrics::default();
            let _server = metrics::serve(listen, metrics.clone())
                .await
                .with_context(|| format!("binding the metrics endpoint {listen}"))?;
            let mut config = RunnerConfig::new(runner::process_owner());
            config.concurrency = concurrency;
            config.reflection_concurrency = reflection_concurrency;
            config.once = once;
            config.poll = poll;
            let budget = i64::try_from(tick_budget.as_secs()).unwrap_or(120);
            config.lease_for = chrono::Duration::seconds(budget.saturating_mul(2));
            config.tick_budget = tick_budget;
            config.lag_alert_after =
                chrono::Duration::from_std(alerts.alert_lag).unwrap_or(chrono::Duration::MAX);
            config.model_error_streak = alerts.alert_model_error_streak;
            let alert_config = alerts.config(&config.owner)?;
            tracing::info!(
                owner = %config.owner,
                concurrency,
                db_pool = pool.max_connections,
                "live-runner starting"
            );
            // The alert worker: a task of its own, off the tick path, stopped after the runner.
            let alert_worker = Arc::new(
                live_runner::alerts::AlertWorker::new(
                    store.clone(),
                    Arc::new(SystemClock),
                    alert_config,
                )
                .context("alert worker")?
                .with_metrics(metrics.clone()),
            );
            let (stop_alerts, alerts_stopped) = tokio::sync::watch::channel(false);
            let alert_task = (!once).then(|| {
                let mut stopped = alerts_stopped.clone();
                tokio::spawn(alert_worker.clone().run(async move {
                    let _ = stopped.wait_for(|stop| *stop).await;
                }))
            });
            let scorer = score_outcomes_every.map(|every| {
                tokio::spawn(score_outcomes_forever(store.clone(), info.clone(), every))
            });
            let runner = Arc::new(
                Runner::new(
                    store,
                    info,
                    Arc::new(SystemClock),
                    runner::default_resolver(),
                    metrics,
                    config,
                )
                .await?
                .with_news_opt(news)
                .with_market_feed(market_feed),
            );
            runner.run(shutdown).await?;
            if let Some(scorer) = scorer {
                scorer.abort();
            }
            let _ = stop_alerts.send(true);
            match alert_task {
                Some(task) => {
                    let _ = task.await;
                }
                // `--once`: what the ticks queued is sent before the process ends.
                None => match alert_worker.deliver_due().await {
                    Ok(report) => tracing::info!(
                        delivered = report.delivered,
                        retried = report.retried,
                        given_up = report.given_up,
                        "alerts sent"
                    ),
                    Err(e) => tracing::warn!(error = %e, "delivering alerts failed"),
                },
            }
            tracing::info!("live-runner stopped");
        }
    }
    Ok(())
}

/// `run`'s news feeds: the `--news-feed` URLs, then those of `--news-feeds-file`; `None`
/// without any.
fn news_config(
    mut feeds: Vec<String>,
    file: Option<&std::path::Path>,
    every: Duration,
    timeout: Duration,
) -> anyhow::Result<Option<runner::NewsFeeds>> {
    if let Some(file) = file {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("reading --news-feeds-file {}", file.display()))
            .bad_input()?;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if !(line.starts_with("http://") || line.starts_with("https://")) {
                refuse!(
                    "{}:{}: {line:?} is not an http:// or https:// feed URL",
                    file.display(),
                    n + 1
                );
            }
            feeds.push(line.to_owned());
        }
    }
    let mut seen = std::collections::HashSet::new();
    feeds.retain(|f| seen.insert(f.clone()));
    if feeds.is_empty() {
        return Ok(None);
    }
    let poller = news::FeedPoller::new(feeds, timeout)
        .context("--news-feed")
        .bad_input()?;
    tracing::info!(feeds = poller.feeds().len(), every = ?every, "news feeds configured");
    Ok(Some(runner::NewsFeeds { poller, every }))
}

/// `run --score-outcomes-every`: the outcome scorer on its own schedule, off the tick path; a
/// failed run is logged and tried again at the next one.
async fn score_outcomes_forever(store: db::Store, info: hyperliquid::InfoClient, every: Duration) {
    let mut ticker = tokio::time::interval(every);
    loop {
        ticker.tick().await;
        match live_runner::outcomes::score_outcomes(&store, &info, SystemClock.now(), 1000).await {
            Ok(r) => tracing::info!(
                due = r.pending,
                updated = r.updated,
                finished = r.finished,
                skipped = r.skipped.len(),
                "outcomes scored"
            ),
            Err(e) => tracing::warn!(error = %e, "scoring outcomes failed"),
        }
    }
}

/// The Hyperliquid broker config from `deploy`'s flags; every problem at once.
/// At deploy, a key present in this environment must be able to trade for the account: its own
/// key, or an API wallet the account approved and that has not expired (`extraAgents`). Without
/// the variable here (the key lives only on the runner), the runner checks it when it builds the
/// broker.
async fn check_deploy_key(config: &HyperliquidConfig) -> anyhow::Result<()> {
    use live_runner::hl_broker::{HlBrokerError, SignerRole, signer_from_env, verify_signer};
    let env = |name: &str| std::env::var(name).ok();
    let signer = match signer_from_env(config, &env) {
        Ok(signer) => signer,
        Err(HlBrokerError::MissingKey { var, .. }) => {
            eprintln!(
                "note: {var} is not set here; the runner checks the key when the deployment ticks"
            );
            return Ok(());
        }
        Err(e) => return Err(e).context("--hl-key-env").bad_input(),
    };
    let info = hyperliquid::InfoClient::new(&hyperliquid::ClientConfig::new(config.api_url()))
        .with_context(|| format!("Hyperliquid client for {}", config.api_url()))?;
    match verify_signer(config, signer.address(), &info, SystemClock.now())
        .await
        .context("checking the deployment's key")?
    {
        SignerRole::Account => {}
        SignerRole::Agent {
            address,
            name,
            valid_until,
        } => println!(
            "the key in {} is API wallet {address} ({name:?}) of {}, approved until {}",
            config.key_env,
            config.account,
            valid_until.to_rfc3339()
        ),
    }
    Ok(())
}

fn hyperliquid_config(
    account: Option<String>,
    network: Option<NetworkArg>,
    key_env: Option<String>,
    url: Option<String>,
    max_slippage: Decimal,
    equity: Option<Decimal>,
) -> anyhow::Result<HyperliquidConfig> {
    let mut problems = Vec::new();
    let account = match account {
        None => {
            problems.push("--hl-account is required with --broker hyperliquid".to_owned());
            None
        }
        Some(a) => match a.parse::<hyperliquid::Address>() {
            Ok(a) => Some(a),
            Err(e) => {
                problems.push(format!("--hl-account: {e}"));
                None
            }
        },
    };
    let network = match network {
        None => {
            problems.push(
                "--hl-network (mainnet or testnet) is required with --broker hyperliquid"
                    .to_owned(),
            );
            None
        }
        Some(NetworkArg::Mainnet) => Some(hyperliquid::Network::Mainnet),
        Some(NetworkArg::Testnet) => Some(hyperliquid::Network::Testnet),
    };
    if key_env.is_none() {
        problems.push(
            "--hl-key-env (the NAME of the environment variable holding the private key) is \
             required with --broker hyperliquid"
                .to_owned(),
        );
    }
    if equity.is_some() {
        problems.push(
            "--equity is the paper account's starting equity; a Hyperliquid deployment's \
             equity is the exchange account's"
                .to_owned(),
        );
    }
    if let (Some(account), Some(network), Some(key_env)) = (account, network, key_env) {
        let config = HyperliquidConfig {
            account,
            network,
            key_env,
            base_url: url,
            max_slippage,
        };
        problems.extend(config.problems());
        if problems.is_empty() {
            return Ok(config);
        }
    }
    refuse!("{}", problems.join("\n"))
}

/// `pause`, `resume`, `stop`: the change as the user or the operator, audited, and what
/// follows printed. A deployment unknown (or not the user's), a status that does not allow it
/// and a reason out of bounds are the input's fault (exit 2).
async fn control(
    args: ControlArgs,
    action: db::ControlAction,
    flatten: bool,
) -> anyhow::Result<()> {
    if let Some(reason) = &args.reason
        && (reason.trim().is_empty() || reason.chars().any(char::is_control))
    {
        refuse!("--reason: give one line of text (no control characters)");
    }
    // A mistyped URL is an error, never a newly migrated database.
    let store = db::open_existing(&args.db)
        .await
        .context("connecting to the database")?;
    let login = types::process_env("USER");
    let done = live_runner::controls::control(
        &store,
        args.deployment,
        action,
        flatten,
        args.user,
        login.as_deref(),
        args.reason.map(|r| r.trim().to_owned()),
        SystemClock.now(),
    )
    .await;
    match done {
        Ok(c) => {
            print!("{}", live_runner::controls::describe(&c));
            Ok(())
        }
        Err(
            e @ (db::DbError::Transition { .. }
            | db::DbError::Bound { .. }
            | db::DbError::Invalid { .. }),
        ) => Err(anyhow::Error::new(BadInput(e.to_string()))),
        Err(e) => Err(anyhow::Error::new(e).context(action.as_str())),
    }
}

/// `live-runner lessons …`: every failure is bad input (a flag, an id, a review the store
/// refuses) or an unreachable database; the caller exits 2 on it. The review is the store
/// method the API and the pages call; as `--user` it runs under row-level security
/// ([`db::PgStore::as_user`]) and names the user, else it names `--by` or the operator.
async fn lessons(command: LessonsCommand) -> anyhow::Result<String> {
    use tick::lessons_cmd;
    let open = |db: String, user: Option<Uuid>| async move {
        let store = db::open_existing(&db)
            .await
            .with_context(|| format!("--db {}", db::redact_url(&db)))?;
        match (store, user) {
            (store, None) => Ok(Err(store)),
            (db::Store::Postgres(pg), Some(user)) => Ok(Ok(pg.as_user(user))),
            (db::Store::Sqlite(_), Some(_)) => Err(anyhow::anyhow!(
                "--user: reviewing as a user needs PostgreSQL (row-level security keeps them to \
                 their own deployments); without --user the review is the operator's"
            )),
        }
    };
    let (review, decision) = match command {
        LessonsCommand::Held {
            db,
            deployment,
            status,
            user,
        } => {
            let status = lessons_cmd::parse_status(&status)?;
            return Ok(match open(db, user).await? {
                Ok(scoped) => lessons_cmd::list_held(&scoped, deployment, status).await?,
                Err(store) => lessons_cmd::list_held(&store, deployment, status).await?,
            });
        }
        LessonsCommand::Accept(review) => (review, db::HeldDecision::Accept),
        LessonsCommand::Reject(review) => (review, db::HeldDecision::Reject),
    };
    let at = review.at.unwrap_or_else(|| SystemClock.now());
    let by = match (review.user, &review.by) {
        (Some(user), _) => user.to_string(),
        (None, Some(by)) => by.clone(),
        (None, None) => lessons_cmd::operator_name(types::process_env("USER").as_deref()),
    };
    let reason = review.reason.as_deref();
    Ok(match open(review.db, review.user).await? {
        Ok(scoped) => lessons_cmd::review(&scoped, &review.id, decision, &by, reason, at).await?,
        Err(store) => lessons_cmd::review(&store, &review.id, decision, &by, reason, at).await?,
    })
}

/// `live-runner ticks`: the export `tick::ticks_cmd` writes, to stdout or `--out`. Bad input
/// (flags, an unknown or missing deployment) is refused before anything is written; a reader
/// closing stdout early ends the export without an error.
async fn ticks(args: TicksArgs) -> anyhow::Result<()> {
    use std::io::{BufWriter, ErrorKind};
    use tick::ticks_cmd::{self, TicksCommandError, TicksRequest};
    let request = TicksRequest {
        deployment: args.deployment,
        from: args.from,
        to: args.to,
        format: args.format,
        prompts: args.prompts,
        limit: args.limit,
    };
    let input = |e: TicksCommandError| match e {
        TicksCommandError::Input(m) => anyhow::Error::new(BadInput(m)),
        other => anyhow::Error::new(other),
    };
    request.check().map_err(input)?;
    let store = db::open_existing(&args.db)
        .await
        .with_context(|| format!("--db {}", db::redact_url(&args.db)))?;
    let d = ticks_cmd::resolve_deployment(&store, &request)
        .await
        .map_err(input)?;
    let Some(path) = args.out else {
        let out = BufWriter::new(std::io::stdout().lock());
        return match ticks_cmd::write_ticks(&store, d.id, &request, out).await {
            Err(TicksCommandError::Output(e)) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
            other => other.map(drop).context("writing the ticks to stdout"),
        };
    };
    let file = std::fs::File::create(&path)
        .with_context(|| format!("--out {}", path.display()))
        .bad_input()?;
    match ticks_cmd::write_ticks(&store, d.id, &request, BufWriter::new(file)).await {
        Ok(n) => {
            println!(
                "{n} ticks of deployment {} written to {}",
                d.id,
                path.display()
            );
            Ok(())
        }
        Err(e) => {
            // No partial export is left behind.
            let _ = std::fs::remove_file(&path);
            Err(e).with_context(|| format!("--out {}", path.display()))
        }
    }
}

/// The chat's focus on one of the user's deployments (not found — e.g. another user's, hidden
/// by row-level security — is an error naming it).
async fn chat_focus<S: db::RegistryStore>(
    store: &S,
    deployment: Option<Uuid>,
) -> anyhow::Result<Option<prompt_compose::Focus>> {
    let Some(id) = deployment else {
        return Ok(None);
    };
    let d = store
        .get_deployment(id)
        .await
        .with_context(|| format!("--deployment {id}"))?;
    let skill = store
        .get_skill(d.skill_id)
        .await
        .with_context(|| format!("the skill of deployment {id}"))?;
    Ok(Some(prompt_compose::Focus {
        kind: "deployment".to_owned(),
        name: skill.name,
        id,
    }))
}

/// Resolves on ctrl-c or SIGTERM received from the call on: on Unix both handlers are installed
/// before this returns (not when the future is first polled), so a signal sent while the process
/// is still starting — e.g. right after `/healthz` answers, before the runner loop runs — stops
/// it cleanly instead of killing it with the default action.
fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let listen = |kind: SignalKind, name: &'static str| match signal(kind) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for {name}");
                None
            }
        };
        let mut int = listen(SignalKind::interrupt(), "ctrl-c");
        let mut term = listen(SignalKind::terminate(), "SIGTERM");
        async move {
            tokio::select! {
                () = recv_or_never(int.as_mut()) => {}
                () = recv_or_never(term.as_mut()) => {}
            }
        }
    }
    #[cfg(not(unix))]
    async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for ctrl-c");
            std::future::pending::<()>().await;
        }
    }
}

/// The next delivery of `signal`; never without one (it could not be installed).
#[cfg(unix)]
async fn recv_or_never(signal: Option<&mut tokio::signal::unix::Signal>) {
    match signal {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending::<()>().await,
    }
}
