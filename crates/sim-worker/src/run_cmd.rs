//! `sim-worker run`: the backtest. Wiring only — the tick and the loop live in the `tick` crate.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::io::Write as _;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use agent_runtime::{LanguageModel, ModelError, builtin_model};
use anyhow::Context;
use backtest::{
    BacktestError, BacktestInput, Registration, RunOptions, Summary, register, tick_times,
};
use chrono::{DateTime, Utc};
use clap::Args;
use db::{RegistryStore, Store, TickStore};
use execution_engine::PaperBrokerConfig;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use market_data::{detect_interval, load_bars, resample};
use reflection::resolve_reflection_model;
use rust_decimal::Decimal;
use skill_schema::Skill;
use tick::{ID_NAMESPACE, TickDeployment, snapshot_id};
use tools::{NewsItem, Preloaded};
use types::{Interval, Uuid, text};

use crate::Failure;
use crate::spend::{CassetteMode, CassetteSpec, Guard, Stop};

/// Default starting equity in USD.
pub(crate) const DEFAULT_EQUITY: &str = "10000";
/// Default taker fee in basis points (Hyperliquid's base perp taker tier).
pub(crate) const DEFAULT_FEE_BPS: &str = "4.5";
/// Default slippage in basis points, adverse to the taker.
pub(crate) const DEFAULT_SLIPPAGE_BPS: &str = "1";

#[derive(Debug, Clone, Args)]
pub(crate) struct RunArgs {
    /// The skill file (.json, .yaml/.yml, .toml).
    #[arg(long, value_name = "FILE")]
    pub skill: PathBuf,
    /// Bars of one symbol at the skill's interval: `SYMBOL=PATH` (.csv in the backtesting.py
    /// layout or Hyperliquid candle .json). Repeat for every symbol of the skill. Higher
    /// timeframes are resampled from these bars.
    #[arg(long = "bars", value_name = "SYMBOL=PATH", required = true)]
    pub bars: Vec<String>,
    /// The model, overriding the skill's (`builtin/sma-cross:10:20`, `openai/gpt-4.1-mini`,
    /// `anthropic/…`, `openrouter/…`; keys and base URLs come from the environment).
    #[arg(long)]
    pub model: Option<String>,
    /// The store: `sqlite://PATH?mode=rwc` or `postgres://…`. Default: `sqlite://OUT/sim.db`
    /// (recreated on every run).
    #[arg(long)]
    pub db: Option<String>,
    /// Where summary.json, trades.csv and report.html go.
    #[arg(long, value_name = "DIR", default_value = "out")]
    pub out: PathBuf,
    /// First tick time (UTC; `2017-05-01`, `2017-05-01 09:00`, `2017-05-01T09:00`, or RFC 3339).
    #[arg(long, value_name = "TIME", value_parser = types::cli::parse_time)]
    pub from: Option<DateTime<Utc>>,
    /// Last tick time (UTC).
    #[arg(long, value_name = "TIME", value_parser = types::cli::parse_time)]
    pub to: Option<DateTime<Utc>>,
    /// Starting equity in USD.
    #[arg(long, value_name = "USD", default_value = DEFAULT_EQUITY)]
    pub equity: String,
    /// Taker fee in basis points of each fill's notional.
    #[arg(long, value_name = "N", default_value = DEFAULT_FEE_BPS)]
    pub fee_bps: String,
    /// Slippage in basis points against the taker: buys fill at close × (1 + N/10,000), sells
    /// at close × (1 − N/10,000).
    #[arg(long, value_name = "N", default_value = DEFAULT_SLIPPAGE_BPS)]
    pub slippage_bps: String,
    /// Headlines: a JSON array of {time, headline, source, sentiment, importance, symbols}.
    #[arg(long, value_name = "FILE")]
    pub news: Option<PathBuf>,
    /// Scheduled events: a JSON array of {kind, title, symbols, scheduled_at, importance}.
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Funding-rate history of one symbol: `SYMBOL=PATH`, a Hyperliquid `fundingHistory` .json
    /// response or a .csv with the header `time,rate[,premium]`. Repeatable, once per symbol.
    /// Each tick sees the prints stamped at or before it (Derivatives section,
    /// `get_funding_rate`).
    #[arg(long = "funding", value_name = "SYMBOL=PATH")]
    pub funding: Vec<String>,
    /// The exchange's maximum leverage per coin: a Hyperliquid `meta` or `metaAndAssetCtxs`
    /// .json response. The skill's symbols it lists are margined as the exchange margins them
    /// (maintenance margin `0.5 / maxLeverage`, a higher leverage refused), as
    /// `live-runner deploy --meta` does; other symbols use the skill's `maxLeverage`.
    #[arg(long, value_name = "FILE")]
    pub meta: Option<PathBuf>,
    /// The tick whose exact system prompt and user message the report shows (default: the last).
    #[arg(long, value_name = "TIME", value_parser = types::cli::parse_time)]
    pub report_tick: Option<DateTime<Utc>>,
    /// Recorded model responses: a SQLite file keyed by each request's fingerprint (provider,
    /// model, every message, tool schemas, sampling parameters). A re-run of a recorded
    /// backtest is byte-identical and sends nothing. Not `--model builtin/replay:…`, which
    /// re-proposes a stored run's decisions.
    #[arg(long, value_name = "FILE")]
    pub cassette: Option<PathBuf>,
    /// How the cassette answers: `record` (send every request, record each answer), `replay`
    /// (answer from the cassette only; a request it does not hold ends the run, exit 5) or
    /// `auto` (replay what it holds, send and record the rest).
    #[arg(long, value_enum, default_value_t = CassetteMode::Auto, requires = "cassette")]
    pub cassette_mode: CassetteMode,
    /// Stop the run cleanly, between ticks, when the spend so far plus the costliest tick so
    /// far would pass this many USD (the first tick always runs: it is the measurement). The
    /// ticks run are stored, the outputs written with `stopped` in summary.json; exit 4. Only
    /// for a model the rate table prices; replayed responses cost nothing.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<String>,
    /// Blind run: the model reads neutral symbol names (ASSET_A…), days relative to the first
    /// tick (`day 12 10:00`, no weekdays, no years) and prices rescaled per symbol (percentages,
    /// sizes and PnL in USD unchanged), and news and event text with the symbols and dates
    /// masked; its orders are mapped back. The ledger, trades.csv, the summary and the report
    /// stay in real symbols, times and prices; the stored prompts are what the model read.
    #[arg(long)]
    pub blind: bool,
    /// Pin the backtest's threads: the tick's thread to the CPU it runs on, the store's threads
    /// together to another (Linux, two or more CPUs). For benchmarks: a few per cent faster for
    /// one run alone on a two-core machine; backtests run side by side would each pin to the
    /// CPU they started on. Without it the scheduler places every thread.
    #[arg(long)]
    pub pin_threads: bool,
    /// Set by `ab --b-memory off`: run the skill with `context.memory.enabled: false`.
    #[arg(skip)]
    pub memory_off: bool,
    /// How errors name the time flags: `preview` takes one `--at` that sets both the end of the
    /// run and the reported tick, and its errors must speak of it.
    #[arg(skip)]
    pub time_flags: TimeFlags,
    /// Set by `arena`: no progress and no cost lines on stderr (the arena reports its runs).
    #[arg(skip)]
    pub quiet: bool,
    /// Set by `arena --max-cost`: the cap shared by every run of the arena.
    #[arg(skip)]
    pub budget: Option<Arc<crate::spend::Budget>>,
}

impl RunArgs {
    /// A run of `skill` on `bars` with `model` and every other flag at its default (no store,
    /// no output directory): what `skill validate --bars` replays.
    pub(crate) fn for_bars(skill: PathBuf, bars: Vec<String>, model: String) -> Self {
        Self {
            skill,
            bars,
            model: Some(model),
            db: None,
            out: PathBuf::new(),
            from: None,
            to: None,
            equity: DEFAULT_EQUITY.to_owned(),
            fee_bps: DEFAULT_FEE_BPS.to_owned(),
            slippage_bps: DEFAULT_SLIPPAGE_BPS.to_owned(),
            news: None,
            events: None,
            funding: Vec::new(),
            meta: None,
            report_tick: None,
            cassette: None,
            cassette_mode: crate::spend::CassetteMode::Auto,
            max_cost: None,
            blind: false,
            pin_threads: false,
            memory_off: false,
            time_flags: TimeFlags::default(),
            quiet: false,
            budget: None,
        }
    }
}

/// The flags as the user typed them, for error messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimeFlags {
    /// The flag that set `to`.
    pub to: &'static str,
    /// The flag that set `report_tick`.
    pub report_tick: &'static str,
}

impl Default for TimeFlags {
    fn default() -> Self {
        Self {
            to: "--to",
            report_tick: "--report-tick",
        }
    }
}

/// `SYMBOL=PATH` as `flag` (`--bars`, `--funding`) takes it: the symbol and the path, trimmed,
/// the symbol one of `symbols` when they are given.
///
/// # Errors
/// Bad input naming the flag and the value: no `=`, an empty side, a symbol not traded.
pub(crate) fn symbol_path<'a>(
    flag: &str,
    spec: &'a str,
    symbols: Option<&[String]>,
) -> Result<(String, &'a str), Failure> {
    let (symbol, path) = spec
        .split_once('=')
        .map(|(s, p)| (s.trim(), p.trim()))
        .filter(|(s, p)| !s.is_empty() && !p.is_empty())
        .ok_or_else(|| bad(format!("{flag} {spec:?}: expected SYMBOL=PATH")))?;
    if let Some(symbols) = symbols.filter(|s| !s.iter().any(|s| s == symbol)) {
        return Err(bad(format!(
            "{flag} {spec:?}: {symbol} is not one of the skill's symbols ({})",
            symbols.join(", ")
        )));
    }
    Ok((symbol.to_owned(), path))
}

fn bad(message: impl Into<String>) -> Failure {
    Failure::bad_input(format!("error: {}", message.into()))
}

fn parse_decimal(flag: &str, text: &str, min: Decimal) -> Result<Decimal, Failure> {
    let d: Decimal = text
        .trim()
        .parse()
        .map_err(|_| bad(format!("{flag}: {text:?} is not a number")))?;
    if d < min {
        return Err(bad(format!("{flag}: must be at least {min} (got {text})")));
    }
    Ok(d)
}

/// Everything the run needs, checked before anything is written.
pub(crate) struct Prepared {
    pub input: BacktestInput,
    pub model: Arc<dyn LanguageModel>,
    /// What the provider has been paid (trading and reflection models, replays excluded).
    pub spend: model::Spend,
    /// The cassettes of the run (`--cassette`): the trading model's, a reflection model's.
    pub cassettes: Vec<Arc<cassette::Cassette>>,
    /// `--max-cost`.
    pub max_cost: Option<Decimal>,
    pub skill_body: serde_json::Value,
    pub report_tick: DateTime<Utc>,
    pub first_tick: DateTime<Utc>,
    pub ticks: usize,
}

/// Loads the skill and bars, resolves the model and checks every flag.
pub(crate) fn prepare(args: &RunArgs) -> Result<Prepared, Failure> {
    // The bar files are read on a thread of their own while the skill is parsed and checked
    // against its schema (a few milliseconds each); their errors still come in the order below.
    let (loaded, mut prefetched) = std::thread::scope(|scope| {
        let bars = scope.spawn(|| {
            args.bars
                .iter()
                .map(|spec| {
                    spec.split_once('=')
                        .map(|(_, path)| load_bars(Path::new(path.trim())))
                })
                .collect::<Vec<_>>()
        });
        let loaded = crate::skill_cmd::load(&args.skill);
        let bars = bars
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (loaded, bars)
    });
    let loaded = loaded?;
    let mut skill: Skill = loaded.skill;
    if args.memory_off {
        skill.context.memory.enabled = false;
    }
    let interval = skill.context.bars_interval;

    let mut series: BTreeMap<String, Vec<types::Bar>> = BTreeMap::new();
    for (i, spec) in args.bars.iter().enumerate() {
        let (symbol, path) = symbol_path("--bars", spec, Some(&skill.context.symbols))?;
        let path = Path::new(path);
        let bars = prefetched[i]
            .take()
            .unwrap_or_else(|| load_bars(path))
            .map_err(|e| bad(e.to_string()))?;
        match detect_interval(&bars) {
            Some(i) if i == interval => {}
            Some(i) => {
                return Err(bad(format!(
                    "{}: the bars are {i}, the skill trades {interval}; pass {interval} bars \
                     (higher timeframes are resampled from them)",
                    path.display()
                )));
            }
            None => {
                return Err(bad(format!(
                    "{}: cannot tell the bar interval (need at least two bars {interval} apart)",
                    path.display()
                )));
            }
        }
        if series.insert(symbol.clone(), bars).is_some() {
            return Err(bad(format!("--bars: {symbol} given twice")));
        }
    }
    let missing: Vec<&str> = skill
        .context
        .symbols
        .iter()
        .filter(|s| !series.contains_key(*s))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(bad(format!(
            "no --bars for {} (the skill trades {})",
            missing.join(", "),
            skill.context.symbols.join(", ")
        )));
    }

    let mut market = Preloaded::new();
    for (symbol, bars) in &series {
        for h in skill.context.effective_higher_timeframes() {
            market.insert_bars(symbol, h, resample(bars, h));
        }
        market.insert_bars(symbol, interval, bars.clone());
    }

    let (from, to) = (args.from, args.to);
    let times = tick_times(&market, &skill.context.symbols, interval, from, to);
    let (Some(&first_tick), Some(&last_tick)) = (times.first(), times.last()) else {
        return Err(bad(format!(
            "no {interval} bar closes between --from and {}; the data covers {}",
            args.time_flags.to,
            coverage(&series, interval)
        )));
    };
    let report_tick = match args.report_tick {
        None => last_tick,
        Some(at) => {
            let flag = args.time_flags.report_tick;
            // As typed in the usual form: `2017-05-01 09:00`.
            let t = if at.timestamp() % 60 == 0 {
                at.format("%Y-%m-%d %H:%M")
            } else {
                at.format("%Y-%m-%d %H:%M:%S")
            };
            if times.binary_search(&at).is_err() {
                return Err(bad(format!(
                    "{flag} {t}: no tick at that time; ticks are at the close of each \
                     {interval} bar from {first_tick} to {last_tick}"
                )));
            }
            at
        }
    };

    let equity = parse_decimal("--equity", &args.equity, Decimal::ONE)?;
    let exchange_max_leverage = match &args.meta {
        Some(path) => market_data::load_exchange_max_leverage(path)
            .map_err(|e| bad(format!("--meta: {e}")))?,
        None => BTreeMap::new(),
    };
    let mut broker = PaperBrokerConfig::for_skill(equity, &skill, &exchange_max_leverage)
        .map_err(|e| bad(format!("the skill's risk.maxLeverage or --meta: {e}")))?;
    broker.taker_fee_bps = parse_decimal("--fee-bps", &args.fee_bps, Decimal::ZERO)?;
    broker.slippage_bps = parse_decimal("--slippage-bps", &args.slippage_bps, Decimal::ZERO)?;
    if broker.taker_fee_bps > Decimal::from(1_000) || broker.slippage_bps > Decimal::from(1_000) {
        return Err(bad("--fee-bps and --slippage-bps must be at most 1000"));
    }

    let news: Option<Vec<NewsItem>> = args
        .news
        .as_deref()
        .map(|p| read_json(p, "news"))
        .transpose()?;
    let events: Option<Vec<types::MarketEvent>> = args
        .events
        .as_deref()
        .map(|p| read_json(p, "events"))
        .transpose()?;
    if let Some(n) = news {
        market.news = n;
    }
    for spec in &args.funding {
        let (symbol, path) = symbol_path("--funding", spec, Some(&skill.context.symbols))?;
        if market.funding.contains_key(&symbol) {
            return Err(bad(format!("--funding: {symbol} given twice")));
        }
        let prints =
            market_data::load_funding(Path::new(path), None).map_err(|e| bad(e.to_string()))?;
        market.funding.insert(
            symbol,
            prints
                .into_iter()
                .map(|p| tools::FundingRate {
                    time: p.time,
                    rate: p.rate,
                    period_hours: p.period_hours,
                })
                .collect(),
        );
    }
    if let Some(e) = events {
        market.events = e;
    }

    let model_id = args.model.clone().unwrap_or_else(|| skill.model.clone());
    let builtins =
        |id: &str| builtin_model(id, &skill).ok_or_else(|| ModelError::UnknownModel(id.to_owned()));
    let cassette = args.cassette.as_ref().map(|path| CassetteSpec {
        path: path.clone(),
        mode: args.cassette_mode,
    });
    if cassette.is_some() && model_id.starts_with(REPLAY_PREFIX) {
        return Err(bad(format!(
            "--cassette with --model {model_id}: a cassette replays recorded model responses \
             request by request; builtin/replay: re-proposes a stored run's decisions tick by \
             tick without a model; use one of them"
        )));
    }
    let max_cost = crate::spend::parse_max_cost(args.max_cost.as_deref(), &model_id)?;
    let spend = model::Spend::default();
    let mut cassettes = Vec::new();
    let resolve = |id: &str| providers::resolve_model(id, &providers::process_env, &builtins);
    let model = match model_id.strip_prefix(REPLAY_PREFIX) {
        Some(spec) => crate::block_on(load_replay(&model_id, spec, &times))?,
        None => {
            let (model, tape) =
                crate::spend::wire(&model_id, "--model", cassette.as_ref(), &spend, &resolve)?;
            cassettes.extend(tape);
            model
        }
    };
    // A reflection model that calls a provider is metered and goes through the same cassette
    // (its requests carry its own model id); the built-in reflector calls nothing.
    let mut reflection_tape = None;
    let reflector = resolve_reflection_model(&skill.context.memory.reflection.model, |id| {
        if id.starts_with("builtin/") {
            return resolve(id);
        }
        let flag = "context.memory.reflection.model";
        let (model, tape) = crate::spend::wire(id, flag, cassette.as_ref(), &spend, &resolve)
            .map_err(|f| ModelError::Other(f.message.trim().to_owned()))?;
        reflection_tape = tape;
        Ok(model)
    })
    .map_err(|e| e.to_string());
    cassettes.extend(reflection_tape);

    let skill_body = serde_json::to_value(&skill).context("serializing the skill")?;
    let skill_id = skill.skill_id();
    // The schema bounds `version` to the stores' integer range; checked again, never clamped.
    let skill_version = i32::try_from(skill.version)
        .with_context(|| format!("skill version {} is above {}", skill.version, i32::MAX))?;
    // The run's identity: the skill document and every input that changes the outcome.
    let identity = serde_json::json!({
        "skill": skill_body,
        "model": model.id(),
        "bars": series.iter().map(|(s, b)| {
            (s.clone(), serde_json::json!({
                "count": b.len(),
                "first": b.first().map(|x| x.time),
                "last": b.last().map(|x| x.time),
            }))
        }).collect::<BTreeMap<_, _>>(),
        "from": from, "to": to,
        "equity": equity, "fee_bps": broker.taker_fee_bps, "slippage_bps": broker.slippage_bps,
        "news": market.news.len(), "events": market.events.len(),
    });
    let mut identity = identity;
    // Only a blind run says so: the id of a run that is not stays what it was.
    if args.blind {
        identity["blind"] = true.into();
        blind::Blind::check_skill(&skill).map_err(|e| bad(format!("--blind: {e}")))?;
    }
    // Only a run with funding names it: the id of a run without stays what it was.
    if !market.funding.is_empty() {
        identity["funding"] = market
            .funding
            .iter()
            .map(|(s, f)| {
                (
                    s.clone(),
                    serde_json::json!({
                        "count": f.len(),
                        "first": f.first().map(|x| x.time),
                        "last": f.last().map(|x| x.time),
                    }),
                )
            })
            .collect::<serde_json::Map<_, _>>()
            .into();
    }
    // Likewise the exchange's margins, only when they apply to one of the skill's symbols.
    if !broker.exchange_max_leverage.is_empty() {
        identity["exchange_max_leverage"] = serde_json::json!(broker.exchange_max_leverage);
    }
    let deployment_id = Uuid::new_v5(
        &ID_NAMESPACE,
        format!("sim-deployment\n{identity}").as_bytes(),
    );
    let has_news = !market.news.is_empty();
    let has_events = !market.events.is_empty();
    let has_funding = !market.funding.is_empty();
    let market = Arc::new(market);
    let input = BacktestInput {
        deployment: TickDeployment {
            user_id: Uuid::new_v5(&ID_NAMESPACE, b"sim-worker user"),
            deployment_id,
            skill_id,
            skill_version,
            skill: Arc::new(skill),
            reflector,
        },
        news: has_news.then(|| market.clone() as Arc<dyn tools::NewsSource>),
        events: has_events.then(|| market.clone() as Arc<dyn tools::EventCalendar>),
        derivatives: has_funding.then(|| market.clone() as Arc<dyn tools::DerivativesData>),
        market,
        from,
        to,
        broker,
        external_tools: std::sync::Arc::new([]),
        blind: args.blind.then_some(0),
    };
    Ok(Prepared {
        input,
        model,
        spend,
        cassettes,
        max_cost,
        skill_body,
        report_tick,
        first_tick,
        ticks: times.len(),
    })
}

/// `builtin/replay:STORE_URL[#DEPLOYMENT]`: re-propose what another run recorded.
pub(crate) const REPLAY_PREFIX: &str = "builtin/replay:";

/// Loads the proposals of a recorded run: the store's only deployment, or the one after `#`.
/// Every tick of this run (`times`) must have been recorded there: a partial run (one that was
/// killed) is refused with how many ticks it could replay, never replayed into silent no-ops.
async fn load_replay(
    model_id: &str,
    spec: &str,
    times: &[DateTime<Utc>],
) -> Result<Arc<dyn LanguageModel>, Failure> {
    let (url, wanted) = match spec.rsplit_once('#') {
        Some((url, id)) => {
            let id: Uuid = id
                .parse()
                .map_err(|_| bad(format!("--model {model_id}: {id:?} is not a deployment id")))?;
            (url, Some(id))
        }
        None => (spec, None),
    };
    if let Some(path) = sqlite_file(url)
        && !path.exists()
    {
        return Err(bad(format!(
            "--model {model_id}: no store at {}",
            path.display()
        )));
    }
    let store = db::open_existing(url)
        .await
        .map_err(|e| bad(format!("--model {model_id}: {e}")))?;
    let deployment = match wanted {
        Some(id) => id,
        None => {
            let all = store
                .list_deployments(None)
                .await
                .map_err(|e| bad(format!("--model {model_id}: {e}")))?;
            match all.as_slice() {
                [one] => one.id,
                [] => return Err(bad(format!("--model {model_id}: the store holds no run"))),
                many => {
                    return Err(bad(format!(
                        "--model {model_id}: the store holds {} runs; add #DEPLOYMENT ({})",
                        many.len(),
                        many.iter()
                            .map(|d| d.id.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
            }
        }
    };
    let snapshots = store
        .list_snapshots(deployment, u32::MAX)
        .await
        .map_err(|e| bad(format!("--model {model_id}: {e}")))?;
    if snapshots.is_empty() {
        return Err(bad(format!(
            "--model {model_id}: deployment {deployment} recorded no tick"
        )));
    }
    let proposals: BTreeMap<_, _> = snapshots
        .into_iter()
        .map(|s| (s.tick_at, s.proposal))
        .collect();
    let covered = times.iter().filter(|t| proposals.contains_key(t)).count();
    if covered < times.len() {
        let recorded =
            |t: Option<(&DateTime<Utc>, _)>| t.map_or_else(String::new, |(t, _)| t.to_string());
        return Err(bad(format!(
            "--model {model_id}: deployment {deployment} recorded {covered} of this run's {} \
             ticks (it recorded {} ticks, {} .. {}); a killed run is partial: replay it over the \
             ticks it has (--from/--to) or replay a complete run",
            times.len(),
            proposals.len(),
            recorded(proposals.first_key_value()),
            recorded(proposals.last_key_value()),
        )));
    }
    Ok(Arc::new(backtest::replay::ReplayModel::new(
        model_id, proposals,
    )))
}

/// The file a `sqlite:` URL names (`sqlite://path?…` or `sqlite:path`); `None` for another
/// scheme.
fn sqlite_file(url: &str) -> Option<&Path> {
    url.strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .map(|p| Path::new(p.split('?').next().unwrap_or(p)))
}

/// A SQLite file this run creates holds nothing but the run, which can be run again: it is
/// written without fsyncs ([`db::Durability::Scratch`]), like the run's other output files. An
/// existing file, which may hold other runs, keeps the normal durability.
fn durability_for(url: &str) -> db::Durability {
    match sqlite_file(url) {
        Some(path) if !path.exists() => db::Durability::Scratch,
        _ => db::Durability::Normal,
    }
}

fn coverage(series: &BTreeMap<String, Vec<types::Bar>>, interval: Interval) -> String {
    series
        .iter()
        .map(|(s, b)| match (b.first(), b.last()) {
            (Some(f), Some(l)) => format!("{s} {} .. {}", f.time, l.close_time(interval)),
            _ => format!("{s} (empty)"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> Result<T, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        bad(format!(
            "{}: cannot read the {what} file: {e}",
            path.display()
        ))
    })?;
    serde_json::from_str(&text).map_err(|e| bad(format!("{}: {e}", path.display())))
}

/// What a run writes into `--out` besides its store, `summary.json` last (its presence means the
/// run completed).
const OUTPUT_FILES: [&str; 3] = ["summary.json", "trades.csv", "report.html"];

/// [`run_full`]; exits [`EXIT_MODEL_FAILED`](crate::EXIT_MODEL_FAILED), after writing
/// every output and printing the result, when more than
/// [`MODEL_ERROR_MAX_PCT`](crate::MODEL_ERROR_MAX_PCT) % of the ticks failed on the model.
pub(crate) fn run(args: RunArgs) -> Result<String, Failure> {
    let RunOutput { text, summary, .. } = run_full(args)?;
    let ticks = summary["ticks"].as_u64().unwrap_or(0);
    let failed = summary["verdicts"]["model_error"].as_u64().unwrap_or(0);
    if too_many_model_errors(failed, ticks) {
        return Err(Failure {
            message: format!(
                "error: {failed} of {ticks} ticks failed on the model (more than {}%); each \
                 snapshot's `error` says why\n",
                crate::MODEL_ERROR_MAX_PCT
            ),
            code: crate::EXIT_MODEL_FAILED,
            stdout: text,
        });
    }
    Ok(text)
}

/// More than [`MODEL_ERROR_MAX_PCT`](crate::MODEL_ERROR_MAX_PCT) % of `ticks` failed.
fn too_many_model_errors(failed: u64, ticks: u64) -> bool {
    u128::from(failed) * 100 > u128::from(ticks) * u128::from(crate::MODEL_ERROR_MAX_PCT)
}

/// What a completed run hands back besides its files (for `ab` and `arena`).
#[derive(Debug, Clone)]
pub(crate) struct RunOutput {
    /// What `run` prints.
    pub text: String,
    /// summary.json.
    pub summary: serde_json::Value,
    /// The equity after every tick: `(tick time, USD)`, in time order.
    pub equity: Vec<(DateTime<Utc>, Decimal)>,
    /// What the provider was paid (replayed responses excluded).
    pub spent: model::SpendTotals,
    /// Model responses answered from the cassettes.
    pub replayed: u64,
    /// Model responses sent to the provider and recorded in the cassettes.
    pub recorded: u64,
}

/// [`run`], also returning the summary and the equity curve (for `ab` and `arena`).
///
/// The skill's MCP servers start first, before anything is written: a server that cannot start
/// ends the command there, with its `tools.mcpServers[i]` error and a non-zero exit. They run
/// for the whole backtest (every tick's context carries their tools) and are stopped at its end.
pub(crate) fn run_full(args: RunArgs) -> Result<RunOutput, Failure> {
    let mut prepared = prepare(&args)?;
    let placement = if args.pin_threads {
        crate::placement::plan()
    } else {
        None
    };
    crate::block_on_placed(placement, async move {
        let servers = start_mcp_servers(&mut prepared.input).await?;
        let result = prepare_outputs(&args).map(|url| simulate(args, prepared, url, placement));
        let result = match result {
            Ok(run) => run.await,
            Err(e) => Err(e),
        };
        servers.shutdown().await;
        result
    })
}

/// Starts the skill's MCP servers and hands their tools to every tick of `input`.
///
/// # Errors
/// The first server that cannot start, as `error: tools.mcpServers[i] (name): ...`.
pub(crate) async fn start_mcp_servers(
    input: &mut BacktestInput,
) -> Result<mcp::McpServers, Failure> {
    let servers = mcp::McpServers::start(&input.deployment.skill.tools.mcp_servers)
        .await
        .map_err(|e| bad(e.to_string()))?;
    input.external_tools = servers.tools();
    Ok(servers)
}

/// Clears `--out` of a previous run's files and returns the store URL.
fn prepare_outputs(args: &RunArgs) -> Result<String, Failure> {
    std::fs::create_dir_all(&args.out)
        .map_err(|e| bad(format!("{}: cannot create: {e}", args.out.display())))?;
    // A previous run's results go first: a run killed from here on leaves no summary of another
    // run beside its partial store (the summary is written last, when the run is complete).
    for name in OUTPUT_FILES {
        let p = args.out.join(name);
        if p.exists() {
            std::fs::remove_file(&p)
                .map_err(|e| bad(format!("{}: cannot replace: {e}", p.display())))?;
        }
    }
    Ok(match &args.db {
        Some(url) => url.clone(),
        None => {
            let path = args.out.join("sim.db");
            // A killed run leaves its journal (scratch) or log (WAL) beside the file.
            for suffix in ["", "-journal", "-wal", "-shm"] {
                let p = PathBuf::from(format!("{}{suffix}", path.display()));
                if p.exists() {
                    std::fs::remove_file(&p)
                        .map_err(|e| bad(format!("{}: cannot replace: {e}", p.display())))?;
                }
            }
            format!("sqlite://{}?mode=rwc", path.display())
        }
    })
}

/// The store at `url` (an existing file, or PostgreSQL) opened for a run: migrated, checked not
/// to hold this run's deployment already, and the deployment registered.
async fn open_for_run(
    url: &str,
    durability: db::Durability,
    p: &Prepared,
) -> Result<Store, Failure> {
    let store = db::connect_with(url, durability)
        .await
        .map_err(|e| bad(format!("--db {}: {e}", db::redact_url(url))))?;
    let d = &p.input.deployment;
    if store.get_deployment(d.deployment_id).await.is_ok() {
        let recorded = store
            .list_snapshots(d.deployment_id, u32::MAX)
            .await
            .map_or(0, |s| s.len());
        let state = if recorded < p.ticks {
            format!(
                "partial: {recorded} of {} ticks recorded, a killed run",
                p.ticks
            )
        } else {
            "complete".to_owned()
        };
        return Err(bad(format!(
            "{} already holds this run (deployment {}, {state}); use a fresh --db, or leave \
             --db out to redo it in --out",
            db::redact_url(url),
            d.deployment_id
        )));
    }
    register(&store, &p.input, p.skill_body.clone(), p.first_tick)
        .await
        .map_err(|e| {
            bad(format!(
                "recording the deployment in {}: {e}",
                db::redact_url(url)
            ))
        })?;
    Ok(store)
}

async fn simulate(
    args: RunArgs,
    p: Prepared,
    url: String,
    placement: Option<crate::placement::Placement>,
) -> Result<RunOutput, Failure> {
    let d = &p.input.deployment;
    let durability = durability_for(&url);
    // A file this run creates (the default `OUT/sim.db` included) holds nothing yet: its schema
    // is created and the deployment registered by a task while the first ticks run (a few
    // milliseconds the ticks no longer wait for); the store is first written once it has
    // finished. Why it failed, worded as the path below words it, is kept for the error.
    let preparing: Arc<Mutex<Option<String>>> = Arc::default();
    let (store, ready) = if durability == db::Durability::Scratch {
        let store = db::connect_lazy(&url, durability)
            .map_err(|e| bad(format!("--db {}: {e}", db::redact_url(&url))))?;
        let ready = {
            let store = store.clone();
            let registration = Registration::of(&p.input, p.skill_body.clone(), p.first_tick);
            let url = db::redact_url(&url).into_owned();
            let preparing = Arc::clone(&preparing);
            // On a blocking thread of the runtime, driving the future itself: sqlx's migrator
            // future cannot be proven `Send` for `tokio::spawn` (its executor bound is not
            // general enough), and it need not move between threads.
            let runtime = tokio::runtime::Handle::current();
            tokio::task::spawn_blocking(move || {
                let failed = move |message: String| {
                    *preparing.lock().unwrap_or_else(PoisonError::into_inner) =
                        Some(message.clone());
                    db::DbError::Invalid {
                        what: "backtest store",
                        detail: message,
                    }
                };
                runtime.block_on(async {
                    store
                        .migrate()
                        .await
                        .map_err(|e| failed(format!("--db {url}: {e}")))?;
                    registration
                        .store(&store)
                        .await
                        .map_err(|e| failed(format!("recording the deployment in {url}: {e}")))
                })
            })
        };
        (store, Some(ready))
    } else {
        (open_for_run(&url, durability, &p).await?, None)
    };

    let progress = Progress::new(
        p.ticks as u64,
        p.input.broker.initial_equity_usd,
        args.quiet,
    );
    let model_id = p.model.id().to_owned();
    let mut guard = Guard::new(
        &model_id,
        model::rates_for(&model_id),
        &p.spend,
        &p.cassettes,
        p.max_cost,
        p.ticks,
    );
    guard.budget = args.budget.clone();
    guard.quiet = args.quiet;
    guard.announce();
    let mut stop = None;
    let on_tick = |outcome: &tick::TickOutcome, state: &tick::TickState| {
        progress.tick(outcome, state);
        match guard.after_tick() {
            Some(why) => {
                stop = Some(why);
                ControlFlow::Break(())
            }
            None => ControlFlow::Continue(()),
        }
    };
    // The run returns when its last tick has run; its last batch is written behind. Its
    // thread is pinned for the ticks only: the MCP servers started before (child processes
    // inherit their parent thread's CPUs), and the report after, keep every CPU.
    let pinned = placement.map(crate::placement::Placement::pin_tick_thread);
    let mut options = RunOptions::default().on_tick(on_tick);
    if let Some(ready) = ready {
        options = options.store_ready(ready);
    }
    let run = backtest::run(&p.input, p.model.as_ref(), &store, options).await;
    drop(pinned);
    progress.finish();
    let ticks_run = guard.done();
    for c in &p.cassettes {
        c.close().await;
    }
    // The run's error, or its last write's.
    let failed = |e: BacktestError| {
        // The store's preparation failed: said as the path that prepares it first says it.
        let prepared = preparing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        bad(prepared.unwrap_or_else(|| format!("{e:#}")))
    };
    let (result, last_write) = run.map_err(failed)?.into_parts();
    if let Some(Stop::CassetteMiss(miss)) = &stop {
        // The run is not complete: no summary. The store keeps the ticks that ran.
        last_write.finish().await.map_err(failed)?;
        let _ = store.close().await;
        return Err(Failure {
            message: format!(
                "error: {miss}\nthe run stopped at tick {ticks_run} of {}; nothing was sent for \
                 it and no summary was written (re-record with --cassette-mode auto or record)\n",
                p.ticks
            ),
            code: crate::EXIT_CASSETTE_MISS,
            stdout: String::new(),
        });
    }

    // A run stopped early reports its last tick when the asked one did not run.
    let report_tick = result
        .points
        .last()
        .map_or(p.report_tick, |l| l.tick_at.min(p.report_tick));
    // The last batch is stored, then the report's snapshot read back from the store (its texts
    // rebuilt from the stored lines), by the runtime's worker and the store's thread, while
    // this one computes the summary, the ledger's CSV and the report up to that tick: the
    // other core would otherwise write alone while this one waits.
    let read = {
        let store = store.clone();
        let id = snapshot_id(d.deployment_id, report_tick);
        tokio::spawn(async move {
            last_write.finish().await?;
            Ok::<_, BacktestError>(store.get_snapshot(id).await)
        })
    };
    // The ledger's CSV and the charts on a thread of their own while this one computes the
    // summary (≈40 % of the run's end, which nothing else overlaps but the last batch).
    let (summary, (trades_csv, charts)) = std::thread::scope(|scope| {
        let other = scope.spawn(|| {
            (
                crate::report::trades_csv(&result.trades),
                crate::report::charts(&result),
            )
        });
        let summary = Summary::of(&result);
        let other = other
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (summary, other)
    });
    let mut html = crate::report::render_head(&crate::report::ReportInput {
        skill: &d.skill,
        model: p.model.id(),
        summary: &summary,
        result: &result,
        db_url: &db::redact_url(&url),
        deployment_id: d.deployment_id,
        charts: &charts,
    });
    let snapshot = match read.await {
        Ok(Ok(snapshot)) => snapshot.map_err(|e| e.to_string()),
        Ok(Err(last_write)) => return Err(failed(last_write)),
        Err(e) => Err(e.to_string()),
    }
    .map_err(|e| bad(format!("reading the snapshot of {report_tick}: {e}")))?;
    crate::report::push_snapshot(&mut html, &snapshot);
    let trades_csv = trades_csv?;
    let stopped = match &stop {
        Some(Stop::MaxCost {
            cap,
            spent,
            costliest_tick,
        }) => Some(serde_json::json!({
            "reason": "max_cost",
            "max_cost_usd": cap.to_string(),
            "spent_usd": spent.to_string(),
            "costliest_tick_usd": costliest_tick.to_string(),
            "ticks_run": ticks_run,
            "ticks_planned": p.ticks,
        })),
        _ => None,
    };
    let ran = Ran {
        summary: &summary,
        trades_csv: &trades_csv,
        html: &html,
        stopped,
    };
    let written = write_outputs(&args.out, &p, ran, &store, &url);
    // A SQLite store folds its write-ahead log into the file: the file alone is the run.
    let closed = store
        .close()
        .await
        .map_err(|e| bad(format!("closing {}: {e}", db::redact_url(&url))));
    let (mut text, json) = written?;
    closed?;
    text.push_str(&crate::spend::result_lines(
        &model_id,
        &p.spend,
        &p.cassettes,
    ));
    let (replayed, recorded) = crate::spend::cassette_counts(&p.cassettes);
    let output = RunOutput {
        text,
        summary: json,
        equity: result
            .points
            .iter()
            .map(|t| (t.tick_at, t.equity_usd))
            .collect(),
        spent: p.spend.totals(),
        replayed,
        recorded,
    };
    if let Some(Stop::MaxCost {
        cap,
        spent,
        costliest_tick,
    }) = stop
    {
        return Err(Failure {
            message: format!(
                "stopped: --max-cost {}: {} spent after {ticks_run} of {} ticks; the \
                 next could cost {} (the costliest so far) and pass the cap. \
                 The ticks run are stored and summarised (`stopped` in summary.json)\n",
                text::cost(cap),
                text::cost(spent),
                p.ticks,
                text::cost(costliest_tick)
            ),
            code: crate::EXIT_COST_CAP,
            stdout: output.text,
        });
    }
    Ok(output)
}

/// summary.json's object: the run's [`Summary`] with its deployment, model, store, fee and
/// slippage, and — only when they apply, so other runs' summaries are unchanged — `blind` and
/// `stopped` (why the run stopped early). `run` writes it; a job stores it.
pub(crate) fn summary_json(
    summary: &Summary,
    p: &Prepared,
    store: &str,
    stopped: Option<serde_json::Value>,
) -> Result<serde_json::Value, serde_json::Error> {
    let mut json = serde_json::to_value(summary)?;
    if let Some(obj) = json.as_object_mut() {
        let d = &p.input.deployment;
        obj.insert("deployment_id".into(), d.deployment_id.to_string().into());
        obj.insert("model".into(), p.model.id().into());
        obj.insert("store".into(), store.into());
        if p.input.blind.is_some() {
            obj.insert("blind".into(), true.into());
        }
        obj.insert(
            "fee_bps".into(),
            p.input.broker.taker_fee_bps.to_string().into(),
        );
        obj.insert(
            "slippage_bps".into(),
            p.input.broker.slippage_bps.to_string().into(),
        );
        if let Some(stopped) = stopped {
            obj.insert("stopped".into(), stopped);
        }
    }
    Ok(json)
}

/// What a finished (or stopped) backtest hands to [`write_outputs`].
struct Ran<'a> {
    summary: &'a Summary,
    /// `trades.csv`'s bytes (the ledger's rows).
    trades_csv: &'a [u8],
    /// `report.html`.
    html: &'a str,
    /// `summary.json`'s `stopped`, for a run `--max-cost` ended early.
    stopped: Option<serde_json::Value>,
}

fn write_outputs(
    out: &Path,
    p: &Prepared,
    ran: Ran<'_>,
    store: &Store,
    url: &str,
) -> Result<(String, serde_json::Value), Failure> {
    let Ran {
        summary,
        trades_csv,
        html,
        stopped,
    } = ran;
    // What the outputs show of the store: never its password.
    let url = &*db::redact_url(url);
    // Each file appears whole or not at all: written beside, then renamed into place.
    let write = |name: &str, body: &[u8]| {
        let path = out.join(name);
        let partial = out.join(format!(".{name}.partial"));
        std::fs::write(&partial, body)
            .and_then(|()| std::fs::rename(&partial, &path))
            .map_err(|e| bad(format!("{}: cannot write: {e}", path.display())))?;
        Ok::<PathBuf, Failure>(path)
    };
    let json = summary_json(summary, p, store.backend_name(), stopped)
        .context("serializing the summary")?;
    let mut text = serde_json::to_string_pretty(&json).context("serializing the summary")?;
    text.push('\n');
    let trades_path = write("trades.csv", trades_csv)?;
    let report_path = write("report.html", html.as_bytes())?;
    // Last: a summary means the run completed.
    let summary_path = write("summary.json", text.as_bytes())?;

    let s = summary;
    let text = format!(
        "{} ticks {} .. {} · {} trades (win rate {}) · net PnL {} (gross {}, fees {}) · \
         max drawdown {} · Sharpe {} · {} notes{}\n\
         summary: {}\ntrades:  {}\nstore:   {url} (deployment {})\nreport:  {}\n",
        s.ticks,
        s.first_tick.map(|t| t.to_string()).unwrap_or_default(),
        s.last_tick.map(|t| t.to_string()).unwrap_or_default(),
        s.trades,
        s.win_rate_pct.map_or_else(|| "n/a".to_owned(), text::pct),
        text::money(s.pnl.net_usd),
        text::money(s.pnl.gross_usd),
        text::money(s.pnl.fees_usd),
        text::pct(s.max_drawdown_pct),
        crate::report::sharpe(s.sharpe),
        s.notes,
        match s.model_errors() {
            0 => String::new(),
            1 => " · 1 model error".to_owned(),
            n => format!(" · {n} model errors"),
        },
        summary_path.display(),
        trades_path.display(),
        p.input.deployment.deployment_id,
        report_path.display(),
    );
    Ok((text, json))
}

/// A progress bar on a terminal, a plain log line every 10 % otherwise (both on stderr).
struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    done: std::cell::Cell<u64>,
    /// Notes written so far (the state keeps only the note in force).
    notes: std::cell::Cell<u64>,
    initial: Decimal,
    /// Nothing on stderr.
    quiet: bool,
}

impl Progress {
    fn new(total: u64, initial: Decimal, quiet: bool) -> Self {
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            if let Ok(style) =
                ProgressStyle::with_template("{bar:30} {pos}/{len} ticks · {msg} · ETA {eta}")
            {
                bar.set_style(style);
            }
            bar
        });
        Progress {
            bar,
            total,
            done: std::cell::Cell::new(0),
            notes: std::cell::Cell::new(0),
            initial,
            quiet,
        }
    }

    fn tick(&self, outcome: &tick::TickOutcome, state: &tick::TickState) {
        let done = self.done.get() + 1;
        self.done.set(done);
        // The backtest runs a due reflection before reporting its tick: a note of this tick is
        // the cadence's last note now.
        if state
            .last_note
            .is_some_and(|n| n.generated_at == outcome.tick_at)
        {
            self.notes.set(self.notes.get() + 1);
        }
        let msg = || {
            let pnl = text::signed_money(outcome.equity_usd - self.initial);
            format!(
                "{} trades · PnL {pnl} · {} notes",
                state.closed_trades(),
                self.notes.get()
            )
        };
        match &self.bar {
            Some(bar) => {
                bar.set_position(done);
                bar.set_message(msg());
            }
            None if self.quiet => {}
            None => {
                // Without a terminal, a line at every tenth of the run: the message is written
                // only then, as one write (stderr is unbuffered: `writeln!` on it makes a
                // system call of every piece of the format, ≈30 a line).
                let step = (self.total / 10).max(1);
                if done.is_multiple_of(step) || done == self.total {
                    let line = format!(
                        "tick {done}/{} at {} · {}\n",
                        self.total,
                        outcome.tick_at,
                        msg()
                    );
                    let _ = std::io::stderr().write_all(line.as_bytes());
                }
            }
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_than_half_of_the_ticks_failing_on_the_model_is_too_many() {
        assert!(!too_many_model_errors(0, 0));
        assert!(!too_many_model_errors(0, 10));
        assert!(
            !too_many_model_errors(5, 10),
            "exactly half is not more than half"
        );
        assert!(too_many_model_errors(6, 10));
        assert!(too_many_model_errors(1, 1));
        assert!(too_many_model_errors(u64::MAX, u64::MAX));
    }

    #[test]
    fn only_a_sqlite_file_the_run_creates_is_written_as_scratch() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("sim.db");
        let url = format!("sqlite://{}?mode=rwc", fresh.display());
        assert_eq!(durability_for(&url), db::Durability::Scratch);
        assert_eq!(
            durability_for(&format!("sqlite:{}", fresh.display())),
            db::Durability::Scratch
        );

        std::fs::write(&fresh, b"").unwrap();
        assert_eq!(durability_for(&url), db::Durability::Normal);
        assert_eq!(
            durability_for("postgres://postgres@127.0.0.1:5432/postgres"),
            db::Durability::Normal
        );
    }
}
