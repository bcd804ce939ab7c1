//! The Skill: what a strategy author writes and a deployment runs.
//!
//! A skill names its model, its strategy (thesis | rules | hybrid on a strict | balanced |
//! adaptive leash), the context it wants each tick (bars, higher timeframes, news, the memory
//! dial, the event calendar), the risk caps the execution engine enforces, and the whitelist of
//! tools the model may call.
//!
//! - [`load_skill`] / [`parse_skill`] read JSON, YAML or TOML and return a validated [`Skill`] or
//!   **every** problem at once, each with its path and the rule it broke
//!   (`context.memory.recentTradesK: must be at most 30 (got 31)`).
//! - [`skill_json_schema`] exports the JSON Schema editors use; the same schema is the first
//!   validation pass, so the editor and the loader can never disagree on structure.
//! - Legacy payloads without `context.memory` or `context.events` parse with the documented
//!   defaults; removed keys (`includeFunding`, `includeOpenInterest`) are accepted and reported as
//!   warnings.
//!
//! This crate does no I/O beyond [`load_skill`] reading the one file it is given.
//!
//! ```
//! use skill_schema::{Format, LoadError, StrategyMode, parse_skill};
//!
//! let yaml = "
//! name: BTC rules
//! version: 1
//! model: builtin/sma-cross:10:20
//! strategy:
//!   mode: rules
//!   leash: strict
//!   entry: [Go long when the 10-bar average crosses above the 20-bar average.]
//!   exit: [Close on the opposite cross.]
//!   riskManagement: [One position at a time.]
//! context:
//!   barsInterval: 1h
//!   symbols: [BTC]
//! risk:
//!   maxPositionPct: 50
//!   maxTotalExposurePct: 100
//!   maxOrderUsd: 10000
//!   maxLeverage: 2
//! ";
//! let loaded = parse_skill(yaml, Format::Yaml)?;
//! assert_eq!(loaded.skill.strategy.mode, StrategyMode::Rules);
//! assert_eq!(loaded.skill.context.symbols, ["BTC"]);
//!
//! // Every problem at once, each with its path.
//! let bad = yaml.replace("maxLeverage: 2", "maxLeverage: 0");
//! let Err(LoadError::Invalid { report }) = parse_skill(&bad, Format::Yaml) else {
//!     panic!("a zero leverage cap is invalid");
//! };
//! assert!(report.errors.iter().any(|p| p.path == "risk.maxLeverage"));
//! # Ok::<(), LoadError>(())
//! ```

mod context;
mod load;
mod risk;
mod schema;
mod skill;
mod strategy;
mod strict;
mod tools;
mod validate;

pub use context::{
    ContextConfig, DEFAULT_TOKEN_BUDGET, ReflectionCadence, ReflectionConfig, SkillEventsConfig,
    SkillMemoryConfig,
};
pub use load::{Format, LoadError, LoadedSkill, load_skill, parse_skill};
pub use risk::RiskCaps;
pub use schema::skill_json_schema;
pub use skill::Skill;
pub use strategy::{Leash, Strategy, StrategyMode, StrategyStyle};
pub use strict::{MAX_SKILL_BYTES, MAX_SKILL_DEPTH};
pub use tools::{
    BUILTIN_TOOLS, DEFAULT_MCP_TIMEOUT_MS, DERIVATIVES_TOOLS, MAX_MCP_TIMEOUT_MS,
    MIN_MCP_TIMEOUT_MS, McpServer, RECALL_TOOLS, ToolSpec,
};
/// The kinds a skill's `events.kinds` names: `types`' one definition.
pub use types::EventKind;
pub use validate::{Problem, ValidationReport};

/// Bounds every write path obeys; exported so the other crates enforce the same numbers.
pub mod limits {
    /// Longest free-text strategy field (thesis, sizing) in characters.
    pub const MAX_TEXT_CHARS: usize = 4_000;
    /// Longest single rule / bullet in characters.
    pub const MAX_RULE_CHARS: usize = 500;
    /// Most bullets in one list (lookFor, avoid, entry, exit, riskManagement).
    pub const MAX_RULES: usize = 20;
    /// Most symbols a skill may trade.
    pub const MAX_SYMBOLS: usize = 20;

    /// The memory layer's bounds (lessons, facts, K) are defined once, in `types`.
    pub use types::{MAX_FACT_CHARS, MAX_LESSONS_CHARS, MAX_MEMORY_K, MIN_FACT_CHARS};
}
