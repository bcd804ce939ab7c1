use std::collections::BTreeSet;
use std::fmt;

use crate::{BUILTIN_TOOLS, Skill};

/// One thing wrong (or worth a warning) in a skill document.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Problem {
    /// Dotted path into the document, e.g. `context.memory.recentTradesK` or
    /// `context.symbols[1]`; `(root)` for the document itself.
    pub path: String,
    /// The rule broken, with the offending value.
    pub message: String,
}

impl Problem {
    pub(crate) fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// Every error and warning found in one document, sorted by path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ValidationReport {
    /// Problems that make the document invalid.
    pub errors: Vec<Problem>,
    /// Problems worth telling the author about that do not stop loading.
    pub warnings: Vec<Problem>,
}

impl fmt::Display for ValidationReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for e in &self.errors {
            writeln!(f, "error: {e}")?;
        }
        for w in &self.warnings {
            writeln!(f, "warning: {w}")?;
        }
        Ok(())
    }
}

/// Model providers a skill may name.
pub(crate) const PROVIDERS: [&str; 6] = [
    "anthropic",
    "openai",
    "openrouter",
    "gateway",
    "google",
    "builtin",
];

/// Rules that span fields or need the typed value; the schema pass has already checked
/// structure, ranges and enums.
pub(crate) fn semantic(skill: &Skill, report: &mut ValidationReport) {
    let err = |report: &mut ValidationReport, path: &str, msg: String| {
        report.errors.push(Problem::new(path, msg));
    };
    let warn = |report: &mut ValidationReport, path: &str, msg: String| {
        report.warnings.push(Problem::new(path, msg));
    };

    if skill.name.trim().is_empty() {
        err(report, "name", "must not be blank".into());
    }

    // model
    match skill.model.split_once('/') {
        Some((provider, _)) if !PROVIDERS.contains(&provider) => err(
            report,
            "model",
            format!(
                "unknown provider {provider:?} (known: {})",
                PROVIDERS.join(", ")
            ),
        ),
        _ => {}
    }

    // strategy
    let s = &skill.strategy;
    let mode = s.mode.as_str();
    if s.mode.has_thesis() {
        if s.thesis.as_deref().is_none_or(|t| t.trim().is_empty()) {
            err(
                report,
                "strategy.thesis",
                format!("is required in {mode} mode"),
            );
        }
        if s.avoid.is_empty() {
            err(
                report,
                "strategy.avoid",
                format!("needs at least one hard constraint in {mode} mode"),
            );
        }
    } else {
        for (field, set) in [
            ("thesis", s.thesis.is_some()),
            ("style", s.style.is_some()),
            ("horizon", s.horizon.is_some()),
            ("lookFor", !s.look_for.is_empty()),
            ("sizing", s.sizing.is_some()),
        ] {
            if set {
                warn(
                    report,
                    &format!("strategy.{field}"),
                    format!(
                        "is ignored in {mode} mode (use hybrid to combine a thesis with rules)"
                    ),
                );
            }
        }
    }
    if s.mode.has_rules() {
        for (field, list) in [
            ("entry", &s.entry),
            ("exit", &s.exit),
            ("riskManagement", &s.risk_management),
        ] {
            if list.is_empty() {
                err(
                    report,
                    &format!("strategy.{field}"),
                    format!("needs at least one rule in {mode} mode"),
                );
            }
        }
    } else {
        for (field, set) in [
            ("entry", !s.entry.is_empty()),
            ("exit", !s.exit.is_empty()),
            ("riskManagement", !s.risk_management.is_empty()),
        ] {
            if set {
                warn(
                    report,
                    &format!("strategy.{field}"),
                    format!(
                        "is ignored in {mode} mode (use hybrid to combine a thesis with rules)"
                    ),
                );
            }
        }
    }
    for (field, list) in [
        ("lookFor", &s.look_for),
        ("avoid", &s.avoid),
        ("entry", &s.entry),
        ("exit", &s.exit),
        ("riskManagement", &s.risk_management),
    ] {
        for (i, item) in list.iter().enumerate() {
            if item.trim().is_empty() {
                err(
                    report,
                    &format!("strategy.{field}[{i}]"),
                    "must not be blank".into(),
                );
            }
        }
    }
    for (field, text) in [
        ("thesis", &s.thesis),
        ("horizon", &s.horizon),
        ("sizing", &s.sizing),
    ] {
        if text.as_deref().is_some_and(|t| t.trim().is_empty()) {
            err(
                report,
                &format!("strategy.{field}"),
                "must not be blank".into(),
            );
        }
    }

    // context
    let c = &skill.context;
    duplicates(report, "context.symbols", &c.symbols);
    if let Some(htf) = &c.higher_timeframes {
        for (i, tf) in htf.iter().enumerate() {
            if *tf <= c.bars_interval {
                err(
                    report,
                    &format!("context.higherTimeframes[{i}]"),
                    format!(
                        "must be longer than barsInterval {} (got {tf})",
                        c.bars_interval
                    ),
                );
            }
        }
        let names: Vec<String> = htf.iter().map(ToString::to_string).collect();
        duplicates(report, "context.higherTimeframes", &names);
    }
    if c.include_funding.is_some() {
        warn(
            report,
            "context.includeFunding",
            "was removed on 2026-06-10 and is ignored; whitelist the get_funding_rate tool instead"
                .into(),
        );
    }
    if c.include_open_interest.is_some() {
        warn(
            report,
            "context.includeOpenInterest",
            "was removed on 2026-06-10 and is ignored; whitelist the get_open_interest tool instead"
                .into(),
        );
    }
    if let Some((provider, _)) = c.memory.reflection.model.split_once('/')
        && !PROVIDERS.contains(&provider)
    {
        err(
            report,
            "context.memory.reflection.model",
            format!(
                "unknown provider {provider:?} (known: {})",
                PROVIDERS.join(", ")
            ),
        );
    }

    // risk
    let r = &skill.risk;
    if r.max_total_exposure_pct < r.max_position_pct {
        err(
            report,
            "risk.maxTotalExposurePct",
            format!(
                "must be at least maxPositionPct {} (got {})",
                r.max_position_pct.normalize(),
                r.max_total_exposure_pct.normalize()
            ),
        );
    }
    if r.min_order_usd > r.max_order_usd {
        err(
            report,
            "risk.minOrderUsd",
            format!(
                "must not exceed maxOrderUsd {} (got {})",
                r.max_order_usd.normalize(),
                r.min_order_usd.normalize()
            ),
        );
    }
    duplicates(report, "risk.allowedSymbols", &r.allowed_symbols);
    if !r.allowed_symbols.is_empty() {
        for (i, sym) in c.symbols.iter().enumerate() {
            if !r.allowed_symbols.contains(sym) {
                err(
                    report,
                    &format!("context.symbols[{i}]"),
                    format!(
                        "{sym} is not in risk.allowedSymbols, so the engine would reject every order on it"
                    ),
                );
            }
        }
    }

    // tools
    let t = &skill.tools;
    for (i, name) in t.built_in.iter().enumerate() {
        if !BUILTIN_TOOLS.contains(&name.as_str()) {
            err(
                report,
                &format!("tools.builtIn[{i}]"),
                format!(
                    "unknown tool {name:?} (known: {})",
                    BUILTIN_TOOLS.join(", ")
                ),
            );
        }
    }
    duplicates(report, "tools.builtIn", &t.built_in);
    if !t.built_in.iter().any(|n| n == "propose_order") {
        err(
            report,
            "tools.builtIn",
            "must include propose_order: without it the agent can never act".into(),
        );
    }
    let servers: Vec<String> = t.mcp_servers.iter().map(|m| m.name.clone()).collect();
    duplicates(report, "tools.mcpServers", &servers);
    for (i, server) in t.mcp_servers.iter().enumerate() {
        duplicates(
            report,
            &format!("tools.mcpServers[{i}].allowedTools"),
            &server.allowed_tools,
        );
        for (j, tool) in server.allowed_tools.iter().enumerate() {
            let offered = format!("mcp__{}__{tool}", server.name);
            if !is_tool_name(&offered) {
                err(
                    report,
                    &format!("tools.mcpServers[{i}].allowedTools[{j}]"),
                    format!(
                        "the tool is offered to the model as {offered:?}, which must be 1-64 of \
                         a-z, A-Z, 0-9, _ and -"
                    ),
                );
            }
        }
        for key in server.env.keys() {
            if key.is_empty() || key.contains('=') || key.contains('\0') {
                err(
                    report,
                    &format!("tools.mcpServers[{i}].env"),
                    format!("{key:?} is not an environment variable name"),
                );
            }
        }
    }
}

fn duplicates(report: &mut ValidationReport, path: &str, items: &[String]) {
    let mut seen = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        if !seen.insert(item) {
            report.errors.push(Problem::new(
                format!("{path}[{i}]"),
                format!("duplicate {item:?}"),
            ));
        }
    }
}

/// A tool name every provider accepts: `^[a-zA-Z0-9_-]{1,64}$`.
fn is_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
