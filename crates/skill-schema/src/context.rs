use rust_decimal::Decimal;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use types::{EventKind, Interval};

/// What the agent is shown each tick. Portfolio and risk caps are always shown; funding and
/// open interest are fetched on demand through tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContextConfig {
    /// Bars of the execution timeframe shown per symbol. Default 100.
    #[serde(default = "default_bars_lookback")]
    #[schemars(range(min = 10, max = 500))]
    pub bars_lookback: u32,
    /// The execution timeframe: one tick per closed bar. `5m` is the floor.
    #[schemars(schema_with = "bars_interval_schema")]
    pub bars_interval: Interval,
    /// Higher timeframes shown as context. When absent, a ~4x ladder above `barsInterval` is
    /// derived (see [`ContextConfig::effective_higher_timeframes`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 3))]
    pub higher_timeframes: Option<Vec<Interval>>,
    /// The symbols this skill trades (at least one). There is no auto-discovery.
    #[schemars(
        length(min = 1, max = 20),
        inner(regex(pattern = r"^[A-Z0-9][A-Z0-9._/-]{0,31}$"))
    )]
    pub symbols: Vec<String>,
    /// How far back news is shown. Default 6.
    #[serde(default = "default_news_lookback_hours")]
    #[schemars(range(max = 168))]
    pub news_lookback_hours: u32,
    /// At most this many headlines, most relevant first. Default 10.
    #[serde(default = "default_news_top_k")]
    #[schemars(range(max = 50))]
    pub news_top_k: u32,
    /// Input tokens a tick may take (system prompt + user message, o200k estimate) before
    /// `sim-worker preview` and `skill validate --bars` warn. Absent: [`DEFAULT_TOKEN_BUDGET`]
    /// (left out of the serialised skill, so skills stored before it keep their ids).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 500, max = 1_000_000))]
    pub token_budget: Option<u32>,
    /// The memory dial (ADR-0017). Absent in legacy payloads: defaults apply.
    #[serde(default)]
    pub memory: SkillMemoryConfig,
    /// The forward-looking event calendar. Absent in legacy payloads: defaults apply (off).
    #[serde(default)]
    pub events: SkillEventsConfig,
    /// Removed 2026-06-10: funding is fetched with the `get_funding_rate` tool. Accepted and
    /// ignored so legacy payloads still parse; reported as a warning.
    #[serde(default, skip_serializing)]
    #[schemars(extend("deprecated" = true))]
    pub include_funding: Option<bool>,
    /// Removed 2026-06-10: open interest is fetched with the `get_open_interest` tool. Accepted
    /// and ignored; reported as a warning.
    #[serde(default, skip_serializing)]
    #[schemars(extend("deprecated" = true))]
    pub include_open_interest: Option<bool>,
}

/// The token budget of a tick when the skill sets none: 8,000 input tokens (o200k). The
/// README's example takes ≈3,900; ADR-0017's worst case for the memory sections alone is ≈900
/// (K = 30 rows), so a skill over 8,000 has a bar table, news or memory setting worth a look —
/// every tick pays for it.
pub const DEFAULT_TOKEN_BUDGET: u32 = 8_000;

impl ContextConfig {
    /// The skill's `tokenBudget`, or [`DEFAULT_TOKEN_BUDGET`].
    #[must_use]
    pub fn effective_token_budget(&self) -> u32 {
        self.token_budget.unwrap_or(DEFAULT_TOKEN_BUDGET)
    }

    /// The higher timeframes actually shown: the explicit list, or the next two rungs of the
    /// ladder 5m → 15m → 1h → 4h → 1d → 1w above `barsInterval`.
    #[must_use]
    pub fn effective_higher_timeframes(&self) -> Vec<Interval> {
        match &self.higher_timeframes {
            Some(list) => list.clone(),
            None => self.bars_interval.ladder_above(2),
        }
    }
}

fn bars_interval_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "enum": ["5m", "15m", "1h", "4h", "1d"],
        "description": "Execution timeframe; 5m is the floor."
    })
}

const fn default_bars_lookback() -> u32 {
    100
}
const fn default_news_lookback_hours() -> u32 {
    6
}
const fn default_news_top_k() -> u32 {
    10
}

/// The memory dial: how much of its own track record the agent sees (ADR-0017).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SkillMemoryConfig {
    /// Default true.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Closed trades shown in "Recent trades on this skill". Default 10, at most 30.
    #[serde(default = "default_recent_trades_k")]
    #[schemars(range(max = 30))]
    pub recent_trades_k: u32,
    /// Show "Open positions (memory view)". Default true.
    #[serde(default = "yes")]
    pub include_open_positions: bool,
    /// When and with which model lessons are distilled. Defaults apply when absent.
    #[serde(default)]
    pub reflection: ReflectionConfig,
    /// The symbol the outcome memory's market snapshots measure correlation against (their
    /// `btc_correlation`, seed 003). Default `BTC`; the value is null when the tick has no bars
    /// of it.
    // Left out of the serialised skill when it is the default, so skills that never set it keep
    // their stored JSON (and the ids derived from it) byte for byte.
    #[serde(
        default = "default_reference_symbol",
        skip_serializing_if = "is_default_reference_symbol"
    )]
    #[schemars(regex(pattern = r"^[A-Z0-9][A-Z0-9._/-]{0,31}$"))]
    pub reference_symbol: String,
    /// Show the `<trading_memory>` block (seed 003): per traded symbol its last 5 graded
    /// signals, its 30-day win rate and how signals did in its current market condition, as of
    /// the tick. Default false (ADR-0017: the agent does not query its outcome memory unless
    /// the skill asks).
    // Left out of the serialised skill when false, like `referenceSymbol`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub trading_memory: bool,
}

impl Default for SkillMemoryConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            recent_trades_k: default_recent_trades_k(),
            include_open_positions: true,
            reflection: ReflectionConfig::default(),
            reference_symbol: default_reference_symbol(),
            trading_memory: false,
        }
    }
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
const fn is_false(b: &bool) -> bool {
    !*b
}

fn default_reference_symbol() -> String {
    "BTC".to_owned()
}

fn is_default_reference_symbol(s: &str) -> bool {
    s == "BTC"
}

const fn yes() -> bool {
    true
}
const fn default_recent_trades_k() -> u32 {
    10
}

/// When reflection runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReflectionCadence {
    /// Never reflect.
    Off,
    /// After every `everyNTrades`-th closed trade of the deployment.
    #[default]
    PerNTrades,
    /// Once per UTC day at `hour`.
    Daily,
}

impl ReflectionCadence {
    /// The snake_case spelling, as in the skill document.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            ReflectionCadence::Off => "off",
            ReflectionCadence::PerNTrades => "per_n_trades",
            ReflectionCadence::Daily => "daily",
        }
    }
}

/// Reflection settings (ADR-0017 Phase 2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReflectionConfig {
    /// Default `per_n_trades`.
    #[serde(default)]
    pub cadence: ReflectionCadence,
    /// Default 10, between 2 and 100.
    #[serde(default = "default_every_n_trades")]
    #[schemars(range(min = 2, max = 100))]
    pub every_n_trades: u32,
    /// UTC hour for `daily`. Default 0.
    #[serde(default)]
    #[schemars(range(max = 23))]
    pub hour: u8,
    /// The reflection model. Default `builtin/stats-reflection`, the offline baseline that
    /// needs no key.
    #[serde(default = "default_reflection_model")]
    #[schemars(regex(pattern = r"^[a-z0-9-]+/\S+$"))]
    pub model: String,
}

impl Default for ReflectionConfig {
    fn default() -> Self {
        Self {
            cadence: ReflectionCadence::default(),
            every_n_trades: default_every_n_trades(),
            hour: 0,
            model: default_reflection_model(),
        }
    }
}

const fn default_every_n_trades() -> u32 {
    10
}
fn default_reflection_model() -> String {
    "builtin/stats-reflection".to_owned()
}

/// The forward-looking market-event calendar.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SkillEventsConfig {
    /// Default false.
    #[serde(default)]
    pub enabled: bool,
    /// Default 24, at most 72.
    #[serde(default = "default_lookahead_hours")]
    #[schemars(range(min = 1, max = 72))]
    pub lookahead_hours: u32,
    /// Events below this importance (0–1) are not shown. Default 0.4.
    #[serde(
        default = "default_min_importance",
        with = "rust_decimal::serde::float"
    )]
    #[schemars(with = "f64", range(min = 0, max = 1))]
    pub min_importance: Decimal,
    /// Only these kinds; empty = all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<EventKind>,
}

impl Default for SkillEventsConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            lookahead_hours: default_lookahead_hours(),
            min_importance: default_min_importance(),
            kinds: Vec::new(),
        }
    }
}

const fn default_lookahead_hours() -> u32 {
    24
}
fn default_min_importance() -> Decimal {
    Decimal::new(4, 1)
}
