//! Load tool, loopback only and bounded in time: `--deployments` paper deployments on 5-minute
//! bars, all due at one bar close, ticked by `--runners` runners (each with its own connection
//! pool, as separate processes would have, `--concurrency` ticks in flight each) over one
//! PostgreSQL on this machine and a local mock of Hyperliquid's info endpoint. The model is the
//! scripted `builtin/sma-cross` baseline, which makes two calls a tick (it proposes, then closes
//! the turn once `propose_order` answered); every call waits `--model-latency` first, and
//! `--model-calls` above 2 adds `get_position_risk` rounds before them.
//!
//! ```text
//! cargo run --release -p live-runner --example load -- --deployments 2000 --runners 2 --concurrency 500
//! ```
//!
//! Prints ticks/s, the start lag (bar close → the tick's first model call) and the tick
//! completion (bar close → its snapshot recorded) at p50 / p99 / max, the `candleSnapshot`
//! requests the runners' candle caches made (REST feed), the process's CPU
//! (runners and the in-process mock exchange; PostgreSQL's is its own) and peak RSS, and
//! proves that no tick ran twice. TEST_DATABASE_URL as the tests; a fresh database is created
//! and dropped. The bar close is the moment the runners start: every deployment is due then.

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_runtime::{LanguageModel, ModelError, ModelRequest, ModelResponse};
use anyhow::Context as _;
use clap::Parser;
use live_runner::admin::{self, DeployRequest};
use live_runner::runner::ModelResolver;
use live_runner::test_support::paper_deploy;
use model::{FinishReason, Message, ToolCall, Usage};
use rust_decimal::Decimal;
use uuid::Uuid;

/// As the binary: the runners allocate through mimalloc.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The load tool's flags.
#[derive(Parser)]
#[command(
    name = "load",
    about = "Ticks N paper deployments due at one bar close through R runners on a local \
             PostgreSQL and a mock Hyperliquid; prints throughput, lags, CPU and RSS."
)]
struct Args {
    /// Paper deployments, all due at one bar close.
    #[arg(long, value_name = "N", default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..))]
    deployments: u32,
    /// Runners, each with its own connection pool.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    runners: u32,
    /// Ticks in flight per runner (`run --concurrency`).
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..))]
    concurrency: u32,
    /// Connections per runner (`run --db-pool`); default as `run`'s, from --concurrency.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    db_pool: Option<u32>,
    /// How long each model call waits before it answers (e.g. 2s, 500ms; 0 for none).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = latency)]
    model_latency: Duration,
    /// Model calls a tick, at least 2 (the baseline's own two).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..=16))]
    model_calls: u32,
}

/// A duration flag that also takes zero (`0`, `0s`): no wait.
fn latency(text: &str) -> Result<Duration, String> {
    match text.trim() {
        "0" | "0s" | "0ms" => Ok(Duration::ZERO),
        t => types::cli::parse_duration(t),
    }
}

/// The id prefix of the extra rounds' tool calls, hidden from the baseline.
const EXTRA: &str = "load-extra-";

/// When each tick made its first model call.
type Starts = Arc<Mutex<Vec<Instant>>>;

/// The baseline behind a wait per call, with `calls - 2` `get_position_risk` rounds first.
struct Scripted {
    inner: Arc<dyn LanguageModel>,
    latency: Duration,
    calls: usize,
    starts: Starts,
}

fn is_extra(m: &Message) -> bool {
    match m {
        Message::Assistant { tool_calls, .. } => tool_calls.iter().any(|c| c.id.starts_with(EXTRA)),
        Message::Tool { call_id, .. } => call_id.starts_with(EXTRA),
        Message::User { .. } => false,
    }
}

#[async_trait::async_trait]
impl LanguageModel for Scripted {
    fn id(&self) -> &str {
        self.inner.id()
    }
    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let made = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Assistant { .. }))
            .count();
        if made == 0 {
            tracing::debug!(target: "load", "first model call");
        }
        if made == 0
            && let Ok(mut s) = self.starts.lock()
        {
            s.push(Instant::now());
        }
        if !self.latency.is_zero() {
            tokio::time::sleep(self.latency).await;
        }
        if made + 2 < self.calls {
            return Ok(ModelResponse {
                text: None,
                tool_calls: vec![ToolCall {
                    id: format!("{EXTRA}{made}"),
                    name: "get_position_risk".to_owned(),
                    arguments: "{}".to_owned(),
                }],
                finish: FinishReason::ToolCalls,
                usage: Usage::default(),
            });
        }
        if made == 0 || self.calls == 2 {
            return self.inner.generate(request).await;
        }
        // The baseline reads its own conversation: without the extra rounds.
        let mut own = request.clone();
        own.messages.retain(|m| !is_extra(m));
        self.inner.generate(&own).await
    }
}

/// The value at percentile `p` (nearest rank) of `sorted`.
fn percentile(sorted: &[Duration], p: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

/// Seconds with two decimals.
fn secs(d: Duration) -> String {
    let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    types::text::fixed(Decimal::new(ms, 3), 2)
}

/// `p50 / p99 / max` of `values`, in seconds.
fn spread(mut values: Vec<Duration>) -> String {
    values.sort();
    format!(
        "p50 {} s, p99 {} s, max {} s",
        secs(percentile(&values, 50)),
        secs(percentile(&values, 99)),
        secs(values.last().copied().unwrap_or_default())
    )
}

/// This process's CPU time so far (user + system), from `/proc/self/stat` in USER_HZ (100 a
/// second on Linux).
fn cpu_time() -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").context("reading /proc/self/stat")?;
    // The fields after the command name (which may hold spaces) start at the state, field 3.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .context("/proc/self/stat has no command name")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> anyhow::Result<u64> {
        fields
            .get(i)
            .context("/proc/self/stat is short")?
            .parse()
            .context("/proc/self/stat field")
    };
    // utime and stime are fields 14 and 15: indexes 11 and 12 from the state.
    Ok(Duration::from_millis((ticks(11)? + ticks(12)?) * 10))
}

/// This process's peak resident set (`VmHWM`), in MB.
fn peak_rss_mb() -> anyhow::Result<u64> {
    let status =
        std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("/proc/self/status has no VmHWM")?;
    Ok(kb / 1000)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    // With RUST_LOG set, its events on stderr: `sqlx::query=debug,load=debug` lists each
    // statement a tick makes, and its first model call.
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let n = args.deployments as usize;
    let concurrency = args.concurrency as usize;
    let pool_size = args.db_pool.unwrap_or_else(|| {
        live_runner::runner::default_pool_size(
            concurrency,
            live_runner::runner::RunnerConfig::new("load").reflection_concurrency,
        )
    });
    let calls = args.model_calls as usize;

    let pg = common::postgres().await;
    let hl = common::hyperliquid_mock().await;
    let mut skill = admin::load_skill_file(&common::fixture("btc-sma-cross.yaml"))?;
    skill.context.bars_interval = types::Interval::M5;
    skill.context.higher_timeframes = Some(vec![types::Interval::H1]);
    if calls > 2 {
        skill.tools.built_in.push("get_position_risk".to_owned());
        skill.max_steps = skill.max_steps.max(args.model_calls);
    }
    let bar = common::t("2026-11-02T12:00:00Z");
    let deploy_started = Instant::now();
    for i in 0..n {
        let req = DeployRequest {
            id: Some(Uuid::from_u128(0x1_0000 + i as u128)),
            ..paper_deploy(Uuid::from_u128(0x0a11ce))
        };
        admin::deploy(&pg.store, &skill, &req, bar - chrono::Duration::minutes(2)).await?;
    }
    eprintln!("deployed {n} in {} s", secs(deploy_started.elapsed()));

    let starts: Starts = Arc::new(Mutex::new(Vec::with_capacity(n)));
    let resolver = |starts: Starts| -> ModelResolver {
        Arc::new(move |id: &str, skill: &skill_schema::Skill| {
            let inner = agent_runtime::builtin_model(id, skill)
                .ok_or_else(|| ModelError::UnknownModel(id.to_owned()))?;
            Ok(Arc::new(Scripted {
                inner,
                latency: args.model_latency,
                calls,
                starts: starts.clone(),
            }) as Arc<dyn LanguageModel>)
        })
    };
    let url = pg.url();
    let pool = db::PoolConfig {
        max_connections: pool_size,
        ..db::PoolConfig::default()
    };
    let mut runners = Vec::new();
    for r in 0..args.runners {
        let store = db::connect_pooled(&url, pool).await?;
        let info = hyperliquid::InfoClient::new(&hyperliquid::ClientConfig::new(hl.uri()))?;
        let mut config = live_runner::runner::RunnerConfig::new(format!("load-{r}"));
        config.once = true;
        config.concurrency = concurrency;
        runners.push(Arc::new(
            live_runner::runner::Runner::new(
                store,
                info,
                Arc::new(types::FixedClock(bar + chrono::Duration::seconds(1))),
                resolver(starts.clone()),
                live_runner::metrics::Metrics::default(),
                config,
            )
            .await?,
        ));
    }
    let cpu_before = cpu_time()?;
    let bar_close = chrono::Utc::now();
    let started = Instant::now();
    let results = futures_util::future::join_all(
        runners
            .iter()
            .map(|r| r.clone().run(std::future::pending())),
    )
    .await;
    let wall = started.elapsed();
    let cpu = cpu_time()?.saturating_sub(cpu_before);
    for r in results {
        r?;
    }

    let recorded: Vec<u64> = runners
        .iter()
        .map(|r| r.metrics().ticks("recorded"))
        .collect();
    let total: u64 = recorded.iter().sum();
    let again: u64 = runners
        .iter()
        .map(|r| r.metrics().ticks("already_recorded"))
        .sum();
    let failed: u64 = runners.iter().map(|r| r.metrics().ticks("failed")).sum();
    let snapshots = pg.count("SELECT count(*) FROM decision_snapshots").await;
    let doubled = pg
        .count(
            "SELECT count(*) FROM (SELECT deployment_id, tick_at FROM decision_snapshots \
             GROUP BY 1, 2 HAVING count(*) > 1) d",
        )
        .await;
    let done_ms: Vec<i64> = sqlx::query_scalar(
        "SELECT (extract(epoch FROM created_at) * 1000)::bigint FROM decision_snapshots",
    )
    .fetch_all(pg.pool())
    .await?;
    let bar_close_ms = bar_close.timestamp_millis();
    let completions: Vec<Duration> = done_ms
        .iter()
        .map(|ms| Duration::from_millis(u64::try_from(ms - bar_close_ms).unwrap_or(0)))
        .collect();
    let lags: Vec<Duration> = starts
        .lock()
        .map_err(|_| anyhow::anyhow!("start list poisoned"))?
        .iter()
        .map(|s| s.saturating_duration_since(started))
        .collect();
    let wall_ms = i64::try_from(wall.as_millis()).unwrap_or(i64::MAX).max(1);
    let cpu_ms = i64::try_from(cpu.as_millis()).unwrap_or(i64::MAX);
    let requests = |kind: &str| -> u64 {
        runners
            .iter()
            .map(|r| r.metrics().market_requests(kind))
            .sum()
    };
    let (backfills, updates) = (requests("backfill"), requests("update"));
    let per_runner = recorded
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(" / ");
    println!(
        "deployments {n}, {} runners x {concurrency} in flight x {pool_size} connections, \
         model {} s a call x {calls} calls a tick\n\
         wall {} s, ticks recorded {total} ({per_runner}), already recorded {again}, failed {failed}\n\
         ticks/s {}\n\
         start lag (bar close -> first model call) {}\n\
         tick completion (bar close -> recorded) {}\n\
         candleSnapshot requests {} (backfill {backfills}, update {updates})\n\
         process CPU {} s = {} % of one core (runners and mock exchange), peak RSS {} MB\n\
         snapshots {snapshots}, (deployment, tick) pairs with more than one snapshot: {doubled}",
        args.runners,
        secs(args.model_latency),
        secs(wall),
        types::text::fixed(
            Decimal::from(total) * Decimal::from(1000) / Decimal::from(wall_ms),
            1
        ),
        spread(lags),
        spread(completions),
        backfills + updates,
        secs(cpu),
        types::text::fixed(
            Decimal::from(cpu_ms) * Decimal::from(100) / Decimal::from(wall_ms),
            0
        ),
        peak_rss_mb()?,
    );
    anyhow::ensure!(
        total as usize == n && again == 0 && doubled == 0 && snapshots as usize == n,
        "a tick was lost or ran twice"
    );
    Ok(())
}
