use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How the author expresses the edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StrategyMode {
    /// A thesis (the edge to capture) with signals to weigh and hard things to avoid.
    Thesis,
    /// Explicit entry, exit and risk-management rules.
    Rules,
    /// Both: the thesis frames the rules.
    Hybrid,
}

impl StrategyMode {
    /// Whether the thesis block (thesis, style, horizon, lookFor, avoid, sizing) applies.
    #[must_use]
    pub const fn has_thesis(self) -> bool {
        matches!(self, StrategyMode::Thesis | StrategyMode::Hybrid)
    }

    /// Whether the rules block (entry, exit, riskManagement) applies.
    #[must_use]
    pub const fn has_rules(self) -> bool {
        matches!(self, StrategyMode::Rules | StrategyMode::Hybrid)
    }

    /// The snake_case spelling, as in the skill document.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            StrategyMode::Thesis => "thesis",
            StrategyMode::Rules => "rules",
            StrategyMode::Hybrid => "hybrid",
        }
    }
}

/// How much the model may improvise around the strategy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Leash {
    /// Follow the strategy literally.
    Strict,
    /// Follow faithfully, use judgment on edge cases.
    #[default]
    Balanced,
    /// Use the strategy as guidance; find the best expression each tick.
    Adaptive,
}

impl Leash {
    /// The snake_case spelling, as in the skill document.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Leash::Strict => "strict",
            Leash::Balanced => "balanced",
            Leash::Adaptive => "adaptive",
        }
    }
}

/// The trading style, shown to the model as a label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StrategyStyle {
    /// Trade in the direction of recent strong moves.
    Momentum,
    /// Fade stretched moves back towards a mean.
    MeanReversion,
    /// Enter when price leaves a range or level.
    Breakout,
    /// Ride established trends on the higher timeframes.
    TrendFollowing,
    /// Buy the bottom and sell the top of a range.
    RangeTrading,
    /// Harvest funding or basis.
    Carry,
    /// Trade around scheduled events and news.
    EventDriven,
    /// Many short holds for small moves.
    Scalping,
}

impl StrategyStyle {
    /// The human label the prompt shows.
    #[must_use]
    pub const fn label(self) -> &'static str {
        match self {
            StrategyStyle::Momentum => "Momentum",
            StrategyStyle::MeanReversion => "Mean reversion",
            StrategyStyle::Breakout => "Breakout",
            StrategyStyle::TrendFollowing => "Trend following",
            StrategyStyle::RangeTrading => "Range trading",
            StrategyStyle::Carry => "Carry (funding / basis)",
            StrategyStyle::EventDriven => "Event-driven",
            StrategyStyle::Scalping => "Scalping",
        }
    }
}

/// The author's strategy. Only these fields come from the author; the rest of the system prompt
/// is platform text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Strategy {
    /// Thesis, rules or hybrid; decides which of the fields below are required.
    pub mode: StrategyMode,
    /// Default `balanced`.
    #[serde(default)]
    pub leash: Leash,
    /// The edge to capture (required for thesis and hybrid).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4000))]
    pub thesis: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The trading style label; `None` shows no style.
    #[schemars(with = "StrategyStyle")]
    pub style: Option<StrategyStyle>,
    /// Holding horizon, e.g. "hours to two days".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 200))]
    pub horizon: Option<String>,
    /// Signals to weigh (not hard rules).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20), inner(length(min = 1, max = 500)))]
    pub look_for: Vec<String>,
    /// Hard constraints: when to stand down. Required for thesis and hybrid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20), inner(length(min = 1, max = 500)))]
    pub avoid: Vec<String>,
    /// Sizing and position-management guidance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4000))]
    pub sizing: Option<String>,
    /// Entry rules (required for rules and hybrid).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20), inner(length(min = 1, max = 500)))]
    pub entry: Vec<String>,
    /// Exit rules (required for rules and hybrid).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20), inner(length(min = 1, max = 500)))]
    pub exit: Vec<String>,
    /// Risk-management rules (required for rules and hybrid).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20), inner(length(min = 1, max = 500)))]
    pub risk_management: Vec<String>,
}
