//! Every validation rule, the legacy defaults, the three formats, and the examples.

use std::path::{Path, PathBuf};

use rust_decimal_macros::dec;
use serde_json::{Value, json};
use skill_schema::{
    Format, Leash, LoadError, MAX_SKILL_BYTES, MAX_SKILL_DEPTH, ReflectionCadence, StrategyMode,
    load_skill, parse_skill, skill_json_schema,
};
use types::Interval;

/// A minimal valid thesis skill; each case below breaks one thing.
fn base() -> Value {
    json!({
        "name": "test skill",
        "version": 1,
        "model": "anthropic/claude-haiku-4-5",
        "strategy": {
            "mode": "thesis",
            "thesis": "Momentum persists after a volume breakout.",
            "avoid": ["Never add to a loser"]
        },
        "context": { "barsInterval": "1h", "symbols": ["BTC"] },
        "risk": {
            "maxPositionPct": 25, "maxTotalExposurePct": 50,
            "maxLeverage": 3, "maxOrderUsd": 1000
        }
    })
}

/// Sets (or with `Value::Null` as `remove`, removes) the value at a dotted path.
fn with(mut doc: Value, path: &str, value: Option<Value>) -> Value {
    let parts: Vec<&str> = path.split('.').collect();
    let (last, parents) = parts.split_last().unwrap();
    let mut node = &mut doc;
    for p in parents {
        node = node
            .get_mut(*p)
            .unwrap_or_else(|| panic!("no {p} in test document"));
    }
    let obj = node.as_object_mut().unwrap();
    match value {
        Some(v) => {
            obj.insert((*last).to_owned(), v);
        }
        None => {
            obj.remove(*last);
        }
    }
    doc
}

fn errors_of(doc: &Value) -> Vec<String> {
    match parse_skill(&doc.to_string(), Format::Json) {
        Ok(_) => vec![],
        Err(LoadError::Invalid { report }) => {
            report.errors.iter().map(ToString::to_string).collect()
        }
        Err(other) => panic!("expected validation errors, got {other}"),
    }
}

#[test]
fn the_base_document_is_valid_and_gets_documented_defaults() {
    let loaded = parse_skill(&base().to_string(), Format::Json).expect("valid");
    let s = loaded.skill;
    assert!(loaded.warnings.is_empty());
    assert_eq!(s.max_steps, 5);
    assert_eq!(s.strategy.leash, Leash::Balanced);
    assert_eq!(s.context.bars_lookback, 100);
    assert_eq!(s.context.news_lookback_hours, 6);
    assert_eq!(s.context.news_top_k, 10);
    assert_eq!(s.risk.min_order_usd, dec!(10));
    assert_eq!(s.risk.max_orders_per_hour, 6);
    assert_eq!(s.risk.halt_drawdown_pct, dec!(20));
    assert_eq!(s.risk.halt_daily_loss_pct, dec!(5));
    assert_eq!(s.tools.built_in, vec!["propose_order".to_owned()]);
    // higher timeframes: the ~4x ladder above 1h
    assert_eq!(
        s.context.effective_higher_timeframes(),
        vec![Interval::H4, Interval::D1]
    );
}

#[test]
fn legacy_payload_without_memory_or_events_gets_defaults() {
    let s = parse_skill(&base().to_string(), Format::Json)
        .unwrap()
        .skill;
    let m = &s.context.memory;
    assert!(m.enabled);
    assert_eq!(m.recent_trades_k, 10);
    assert!(m.include_open_positions);
    assert_eq!(m.reflection.cadence, ReflectionCadence::PerNTrades);
    assert_eq!(m.reflection.every_n_trades, 10);
    assert_eq!(m.reflection.hour, 0);
    assert_eq!(m.reflection.model, "builtin/stats-reflection");
    let e = &s.context.events;
    assert!(!e.enabled);
    assert_eq!(e.lookahead_hours, 24);
    assert_eq!(e.min_importance, dec!(0.4));
    assert!(e.kinds.is_empty());
}

#[test]
fn the_outcome_memorys_reference_symbol_defaults_to_btc_and_is_kept_out_of_the_stored_json() {
    let s = parse_skill(&base().to_string(), Format::Json)
        .unwrap()
        .skill;
    assert_eq!(s.context.memory.reference_symbol, "BTC");
    // The default is not written back: a stored skill (and the ids derived from its JSON) is
    // the same as before the field existed.
    let stored = serde_json::to_value(&s).unwrap();
    assert!(stored["context"]["memory"].get("referenceSymbol").is_none());

    let doc = with(
        base(),
        "context.memory",
        Some(json!({"referenceSymbol": "ETH"})),
    );
    let s = parse_skill(&doc.to_string(), Format::Json).unwrap().skill;
    assert_eq!(s.context.memory.reference_symbol, "ETH");
    assert_eq!(
        serde_json::to_value(&s).unwrap()["context"]["memory"]["referenceSymbol"],
        json!("ETH")
    );

    let bad = with(
        base(),
        "context.memory",
        Some(json!({"referenceSymbol": "eth usd"})),
    );
    let errors = errors_of(&bad);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("context.memory.referenceSymbol")),
        "{errors:?}"
    );
}

#[test]
fn partial_memory_keeps_defaults_for_the_rest() {
    let doc = with(base(), "context.memory", Some(json!({"recentTradesK": 3})));
    let s = parse_skill(&doc.to_string(), Format::Json).unwrap().skill;
    assert_eq!(s.context.memory.recent_trades_k, 3);
    assert!(s.context.memory.include_open_positions);
    assert_eq!(s.context.memory.reflection.every_n_trades, 10);
}

#[test]
fn removed_context_toggles_parse_with_a_warning() {
    let doc = with(base(), "context.includeFunding", Some(json!(true)));
    let doc = with(doc, "context.includeOpenInterest", Some(json!(false)));
    let loaded = parse_skill(&doc.to_string(), Format::Json).expect("legacy toggles are accepted");
    let warnings: Vec<String> = loaded.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(warnings.len(), 2);
    assert!(warnings[0].starts_with("context.includeFunding: was removed on 2026-06-10"));
    assert!(warnings[1].starts_with("context.includeOpenInterest: was removed"));
}

/// One row per rule: the mutation and the exact message it must produce.
#[test]
fn every_rule_reports_its_path_and_the_rule_broken() {
    let cases: Vec<(&str, Option<Value>, &str)> = vec![
        // ranges
        (
            "context.memory",
            Some(json!({"recentTradesK": 31})),
            "context.memory.recentTradesK: must be at most 30 (got 31)",
        ),
        (
            "context.memory",
            Some(json!({"reflection": {"everyNTrades": 1}})),
            "context.memory.reflection.everyNTrades: must be at least 2 (got 1)",
        ),
        (
            "context.memory",
            Some(json!({"reflection": {"everyNTrades": 101}})),
            "context.memory.reflection.everyNTrades: must be at most 100 (got 101)",
        ),
        (
            "context.memory",
            Some(json!({"reflection": {"hour": 24}})),
            "context.memory.reflection.hour: must be at most 23 (got 24)",
        ),
        (
            "maxSteps",
            Some(json!(0)),
            "maxSteps: must be at least 1 (got 0)",
        ),
        (
            "maxSteps",
            Some(json!(21)),
            "maxSteps: must be at most 20 (got 21)",
        ),
        (
            "version",
            Some(json!(0)),
            "version: must be at least 1 (got 0)",
        ),
        (
            "context.barsLookback",
            Some(json!(5)),
            "context.barsLookback: must be at least 10 (got 5)",
        ),
        (
            "context.newsTopK",
            Some(json!(51)),
            "context.newsTopK: must be at most 50 (got 51)",
        ),
        (
            "context.newsLookbackHours",
            Some(json!(169)),
            "context.newsLookbackHours: must be at most 168 (got 169)",
        ),
        (
            "context.events",
            Some(json!({"lookaheadHours": 73})),
            "context.events.lookaheadHours: must be at most 72 (got 73)",
        ),
        (
            "context.events",
            Some(json!({"minImportance": 1.5})),
            "context.events.minImportance: must be at most 1 (got 1.5)",
        ),
        (
            "risk.maxLeverage",
            Some(json!(0.5)),
            "risk.maxLeverage: must be at least 1 (got 0.5)",
        ),
        (
            "risk.maxLeverage",
            Some(json!(51)),
            "risk.maxLeverage: must be at most 50 (got 51)",
        ),
        (
            "risk.maxOrdersPerHour",
            Some(json!(0)),
            "risk.maxOrdersPerHour: must be at least 1 (got 0)",
        ),
        (
            "risk.haltDrawdownPct",
            Some(json!(101)),
            "risk.haltDrawdownPct: must be at most 100 (got 101)",
        ),
        // enums
        (
            "context.barsInterval",
            Some(json!("1m")),
            r#"context.barsInterval: must be one of "5m", "15m", "1h", "4h", "1d" (got "1m"); 5m is the floor"#,
        ),
        (
            "strategy.leash",
            Some(json!("loose")),
            r#"strategy.leash: must be one of "strict", "balanced", "adaptive" (got "loose")"#,
        ),
        (
            "strategy.mode",
            Some(json!("vibes")),
            r#"strategy.mode: must be one of "thesis", "rules", "hybrid" (got "vibes")"#,
        ),
        (
            "context.memory",
            Some(json!({"reflection": {"cadence": "weekly"}})),
            r#"context.memory.reflection.cadence: must be one of "off", "per_n_trades", "daily" (got "weekly")"#,
        ),
        // types
        (
            "maxSteps",
            Some(json!("five")),
            r#"maxSteps: must be a whole number (got "five")"#,
        ),
        (
            "context.symbols",
            Some(json!("BTC")),
            r#"context.symbols: must be a list (got "BTC")"#,
        ),
        (
            "risk.maxPositionPct",
            Some(json!("lots")),
            r#"risk.maxPositionPct: must be a number (got "lots")"#,
        ),
        (
            "context.memory",
            Some(json!({"enabled": "yes"})),
            r#"context.memory.enabled: must be true or false (got "yes")"#,
        ),
        // missing fields
        ("name", None, "name: is required"),
        ("model", None, "model: is required"),
        ("risk.maxLeverage", None, "risk.maxLeverage: is required"),
        (
            "context.barsInterval",
            None,
            "context.barsInterval: is required",
        ),
        // symbols
        (
            "context.symbols",
            Some(json!([])),
            "context.symbols: must have at least one entry",
        ),
        (
            "context.symbols",
            Some(json!(["btc"])),
            r#"context.symbols[0]: must be an upper-case symbol such as BTC, ETH or EURUSD (got "btc")"#,
        ),
        (
            "context.symbols",
            Some(json!(["BTC", "BTC"])),
            r#"context.symbols[1]: duplicate "BTC""#,
        ),
        // unknown fields (typos)
        (
            "context.memory",
            Some(json!({"recentTradeK": 5})),
            "context.memory.recentTradeK: unknown field",
        ),
        ("colour", Some(json!("red")), "colour: unknown field"),
        // model
        (
            "model",
            Some(json!("gpt5")),
            r#"model: must be provider/model, e.g. anthropic/claude-sonnet-4.6 (got "gpt5")"#,
        ),
        (
            "model",
            Some(json!("mistral/mistral-large")),
            r#"model: unknown provider "mistral" (known: anthropic, openai, openrouter, gateway, google, builtin)"#,
        ),
        // strategy by mode
        (
            "strategy.thesis",
            None,
            "strategy.thesis: is required in thesis mode",
        ),
        (
            "strategy.avoid",
            None,
            "strategy.avoid: needs at least one hard constraint in thesis mode",
        ),
        (
            "strategy.thesis",
            Some(json!("")),
            "strategy.thesis: must not be empty",
        ),
        (
            "strategy.avoid",
            Some(json!(["  "])),
            "strategy.avoid[0]: must not be blank",
        ),
        // cross-field caps
        (
            "risk.maxTotalExposurePct",
            Some(json!(10)),
            "risk.maxTotalExposurePct: must be at least maxPositionPct 25 (got 10)",
        ),
        (
            "risk.minOrderUsd",
            Some(json!(5000)),
            "risk.minOrderUsd: must not exceed maxOrderUsd 1000 (got 5000)",
        ),
        (
            "risk.allowedSymbols",
            Some(json!(["ETH"])),
            "context.symbols[0]: BTC is not in risk.allowedSymbols, so the engine would reject every order on it",
        ),
        // timeframes
        (
            "context.higherTimeframes",
            Some(json!(["15m"])),
            "context.higherTimeframes[0]: must be longer than barsInterval 1h (got 15m)",
        ),
        (
            "context.higherTimeframes",
            Some(json!(["4h", "4h"])),
            r#"context.higherTimeframes[1]: duplicate "4h""#,
        ),
        // tools
        (
            "tools",
            Some(json!({"builtIn": ["propose_order", "query_trade_history"]})),
            r#"tools.builtIn[1]: unknown tool "query_trade_history" (known: propose_order, fetch_news_sentiment, get_position_risk, get_funding_rate, get_open_interest, recall_symbol_history, recall_recent_trades, recall_signal_accuracy, recall_similar_setups, recall_what_worked, search_trade_memory)"#,
        ),
        (
            "tools",
            Some(json!({"builtIn": ["get_funding_rate"]})),
            "tools.builtIn: must include propose_order: without it the agent can never act",
        ),
        // MCP servers: stdio only, a bounded per-call timeout, names the model can call
        (
            "tools",
            Some(json!({"mcpServers": [{"name": "charts", "url": "https://mcp.example/sse"}]})),
            "tools.mcpServers[0].url: MCP over HTTP is not supported; give `command` for a stdio server",
        ),
        (
            "tools",
            Some(json!({"mcpServers": [{"name": "charts", "url": "https://mcp.example/sse"}]})),
            "tools.mcpServers[0].command: is required",
        ),
        (
            "tools",
            Some(json!({"mcpServers": [{"name": "charts", "command": "x", "timeoutMs": 99}]})),
            "tools.mcpServers[0].timeoutMs: must be at least 100 (got 99)",
        ),
        (
            "tools",
            Some(json!({"mcpServers": [{"name": "charts", "command": "x", "timeoutMs": 120001}]})),
            "tools.mcpServers[0].timeoutMs: must be at most 120000 (got 120001)",
        ),
        (
            "tools",
            Some(json!({"mcpServers": [{"name": "charts", "command": ""}]})),
            "tools.mcpServers[0].command: must not be empty",
        ),
        (
            "tools",
            Some(
                json!({"mcpServers": [{"name": "charts", "command": "x", "allowedTools": ["a b"]}]}),
            ),
            r#"tools.mcpServers[0].allowedTools[0]: the tool is offered to the model as "mcp__charts__a b", which must be 1-64 of a-z, A-Z, 0-9, _ and -"#,
        ),
        (
            "tools",
            Some(
                json!({"mcpServers": [{"name": "charts", "command": "x", "allowedTools": ["a", "a"]}]}),
            ),
            r#"tools.mcpServers[0].allowedTools[1]: duplicate "a""#,
        ),
        (
            "tools",
            Some(json!({"mcpServers": [
                {"name": "charts", "command": "x"}, {"name": "charts", "command": "y"}
            ]})),
            r#"tools.mcpServers[1]: duplicate "charts""#,
        ),
        (
            "tools",
            Some(json!({"mcpServers": [{"name": "charts", "command": "x", "env": {"A=B": "1"}}]})),
            r#"tools.mcpServers[0].env: "A=B" is not an environment variable name"#,
        ),
    ];
    let mut failures = Vec::new();
    for (path, value, expected) in cases {
        let errors = errors_of(&with(base(), path, value.clone()));
        if !errors.iter().any(|e| e == expected) {
            failures.push(format!(
                "{path} = {value:?}\n  expected: {expected}\n  got: {errors:#?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn rules_mode_requires_entry_exit_and_risk_management() {
    let doc = with(base(), "strategy", Some(json!({"mode": "rules"})));
    assert_eq!(
        errors_of(&doc),
        vec![
            "strategy.entry: needs at least one rule in rules mode",
            "strategy.exit: needs at least one rule in rules mode",
            "strategy.riskManagement: needs at least one rule in rules mode",
        ]
    );
}

#[test]
fn hybrid_mode_requires_both_blocks() {
    let doc = with(base(), "strategy", Some(json!({"mode": "hybrid"})));
    assert_eq!(
        errors_of(&doc),
        vec![
            "strategy.avoid: needs at least one hard constraint in hybrid mode",
            "strategy.entry: needs at least one rule in hybrid mode",
            "strategy.exit: needs at least one rule in hybrid mode",
            "strategy.riskManagement: needs at least one rule in hybrid mode",
            "strategy.thesis: is required in hybrid mode",
        ]
    );
}

#[test]
fn every_structural_problem_is_reported_at_once() {
    let doc = with(base(), "maxSteps", Some(json!(99)));
    let doc = with(doc, "context.barsInterval", Some(json!("1m")));
    let doc = with(doc, "context.symbols", Some(json!([])));
    let doc = with(doc, "context.memory", Some(json!({"recentTradesK": 31})));
    let doc = with(doc, "name", None);
    let errors = errors_of(&doc);
    assert_eq!(errors.len(), 5, "{errors:#?}");
    for prefix in [
        "context.barsInterval:",
        "context.memory.recentTradesK:",
        "context.symbols:",
        "maxSteps:",
        "name:",
    ] {
        assert!(
            errors.iter().any(|e| e.starts_with(prefix)),
            "{prefix} missing in {errors:#?}"
        );
    }
}

#[test]
fn syntax_errors_name_the_format_and_position() {
    let err = parse_skill("{\"name\": ", Format::Json).unwrap_err();
    assert!(matches!(
        err,
        LoadError::Syntax {
            format: Format::Json,
            ..
        }
    ));
    assert!(err.to_string().contains("line 1"), "{err}");

    let err = parse_skill("name: [unclosed\n", Format::Yaml).unwrap_err();
    assert!(err.to_string().starts_with("not valid YAML"), "{err}");

    let err = parse_skill("name = \n", Format::Toml).unwrap_err();
    assert!(err.to_string().starts_with("not valid TOML"), "{err}");
}

#[test]
fn an_empty_document_is_a_clear_error() {
    match parse_skill("", Format::Yaml).unwrap_err() {
        LoadError::Invalid { report } => {
            assert_eq!(
                report.errors[0].to_string(),
                "(root): must be an object (got null)"
            );
        }
        other => panic!("unexpected {other}"),
    }
}

#[test]
fn the_same_skill_reads_the_same_from_json_yaml_and_toml() {
    let json_text = base().to_string();
    let yaml_text = serde_yaml_ng::to_string(&base()).unwrap();
    let toml_text = toml::to_string(&base()).unwrap();
    let a = parse_skill(&json_text, Format::Json).unwrap().skill;
    let b = parse_skill(&yaml_text, Format::Yaml).unwrap().skill;
    let c = parse_skill(&toml_text, Format::Toml).unwrap().skill;
    assert_eq!(a, b);
    assert_eq!(a, c);
}

#[test]
fn a_skill_survives_a_round_trip_through_its_own_serialization() {
    for path in example_paths() {
        let skill = load_skill(&path).unwrap().skill;
        let text = serde_json::to_string(&skill).unwrap();
        let again = parse_skill(&text, Format::Json)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .skill;
        assert_eq!(skill, again, "{}", path.display());
    }
}

fn example_paths() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/skills");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 4,
        "expected the example skills in {}",
        dir.display()
    );
    paths
}

#[test]
fn the_examples_load_and_cover_every_mode() {
    let mut modes = Vec::new();
    for path in example_paths() {
        let loaded = load_skill(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            loaded.warnings.is_empty(),
            "{}: {:?}",
            path.display(),
            loaded.warnings
        );
        modes.push(loaded.skill.strategy.mode);
    }
    for mode in [
        StrategyMode::Thesis,
        StrategyMode::Rules,
        StrategyMode::Hybrid,
    ] {
        assert!(modes.contains(&mode), "no example in {mode:?} mode");
    }
}

#[test]
fn the_exported_schema_accepts_the_examples() {
    let validator = jsonschema::validator_for(&skill_json_schema()).unwrap();
    for path in example_paths() {
        let text = std::fs::read_to_string(&path).unwrap();
        let doc: Value = match Format::from_path(&path).unwrap() {
            Format::Json => serde_json::from_str(&text).unwrap(),
            Format::Yaml => serde_yaml_ng::from_str(&text).unwrap(),
            Format::Toml => {
                serde_json::to_value(toml::from_str::<toml::Table>(&text).unwrap()).unwrap()
            }
        };
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
    }
}

#[test]
fn the_exported_schema_rejects_what_the_loader_rejects() {
    let validator = jsonschema::validator_for(&skill_json_schema()).unwrap();
    let doc = with(base(), "context.memory", Some(json!({"recentTradesK": 31})));
    assert!(!validator.is_valid(&doc));
    let doc = with(base(), "context.barsInterval", Some(json!("1m")));
    assert!(!validator.is_valid(&doc));
}

#[test]
fn skill_ids_are_explicit_or_derived_from_the_name() {
    let a = parse_skill(&base().to_string(), Format::Json)
        .unwrap()
        .skill;
    let b = parse_skill(&base().to_string(), Format::Json)
        .unwrap()
        .skill;
    assert_eq!(a.skill_id(), b.skill_id());
    let doc = with(
        base(),
        "id",
        Some(json!("6f9619ff-8b86-d011-b42d-00c04fc964ff")),
    );
    let c = parse_skill(&doc.to_string(), Format::Json).unwrap().skill;
    assert_eq!(
        c.skill_id().to_string(),
        "6f9619ff-8b86-d011-b42d-00c04fc964ff"
    );
}

/// The example skill's text with `risk.maxLeverage` written twice.
fn with_second_leverage(yaml: &str) -> String {
    yaml.replacen("  maxLeverage:", "  maxLeverage: 20\n  maxLeverage:", 1)
}

#[test]
fn a_key_given_twice_is_an_error_in_yaml_and_json() {
    let yaml = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/skills/eurusd-sma-cross.yaml"
    ))
    .unwrap();
    assert!(
        yaml.contains("  maxLeverage:"),
        "the fixture has a risk.maxLeverage"
    );
    let err = parse_skill(&with_second_leverage(&yaml), Format::Yaml).unwrap_err();
    assert!(
        err.to_string()
            .contains("risk.maxLeverage: the key `maxLeverage` is given twice"),
        "{err}"
    );

    let json = r#"{"name": "a", "version": 1, "name": "b"}"#;
    let err = parse_skill(json, Format::Json).unwrap_err();
    assert!(
        matches!(
            err,
            LoadError::Syntax {
                format: Format::Json,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("name: the key `name` is given twice"),
        "{err}"
    );

    // TOML's own parser refuses a duplicate key.
    let err = parse_skill("name = \"a\"\nname = \"b\"\n", Format::Toml).unwrap_err();
    assert!(err.to_string().starts_with("not valid TOML"), "{err}");
}

#[test]
fn nesting_and_size_are_bounded() {
    let deep = format!(
        "{}1{}",
        "[".repeat(MAX_SKILL_DEPTH + 1),
        "]".repeat(MAX_SKILL_DEPTH + 1)
    );
    for format in [Format::Json, Format::Yaml] {
        let err = parse_skill(&format!("{{\"name\": {deep}}}"), format).unwrap_err();
        assert!(err.to_string().contains("levels deep"), "{format}: {err}");
    }
    // 60 KB of flow-style nesting (quadratic in some YAML paths) is refused by the depth bound.
    let hostile = format!("a: {}{}", "[".repeat(30_000), "]".repeat(30_000));
    assert!(parse_skill(&hostile, Format::Yaml).is_err());

    let big = format!("description: \"{}\"\n", "x".repeat(MAX_SKILL_BYTES));
    let err = parse_skill(&big, Format::Yaml).unwrap_err();
    assert!(
        matches!(err, LoadError::TooLarge { path: None, .. }),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains(&format!("at most {MAX_SKILL_BYTES} bytes")),
        "{err}"
    );
}

#[test]
fn errors_of_a_file_name_the_file() {
    let dir = std::env::temp_dir().join(format!("skill-syntax-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("broken.yaml");
    std::fs::write(&path, "name: [unclosed\n").unwrap();
    let err = load_skill(&path).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("{}: not valid YAML", path.display())),
        "{err}"
    );
    let big = dir.join("big.json");
    std::fs::write(&big, vec![b' '; MAX_SKILL_BYTES + 1]).unwrap();
    let err = load_skill(&big).unwrap_err();
    assert!(
        matches!(err, LoadError::TooLarge { path: Some(ref p), .. } if p == &big),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_version_beyond_the_stores_integer_is_invalid() {
    let yaml = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/skills/eurusd-sma-cross.yaml"
    ))
    .unwrap();
    let line = yaml.lines().find(|l| l.starts_with("version:")).unwrap();
    let over = yaml.replacen(line, "version: 3000000000", 1);
    let Err(LoadError::Invalid { report }) = parse_skill(&over, Format::Yaml) else {
        panic!("version 3000000000 must be invalid");
    };
    assert!(report.to_string().contains("version"), "{report}");
    let max = yaml.replacen(line, "version: 2147483647", 1);
    assert_eq!(
        parse_skill(&max, Format::Yaml).unwrap().skill.version,
        2_147_483_647
    );
}

/// A stdio MCP server entry: the defaults filled in, no warning (the runtime loads it), and the
/// same value back from its own serialization.
#[test]
fn an_mcp_server_entry_is_a_stdio_command_with_a_default_timeout() {
    let doc = with(
        base(),
        "tools",
        Some(json!({"mcpServers": [{
            "name": "charts",
            "command": "/usr/bin/charts-mcp",
            "args": ["--stdio"],
            "env": {"CHARTS_MODE": "read"},
            "allowedTools": ["levels"]
        }]})),
    );
    let loaded = parse_skill(&doc.to_string(), Format::Json).unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let server = &loaded.skill.tools.mcp_servers[0];
    assert_eq!(server.command, "/usr/bin/charts-mcp");
    assert_eq!(server.args, vec!["--stdio".to_owned()]);
    assert_eq!(server.env["CHARTS_MODE"], "read");
    assert_eq!(server.allowed_tools, vec!["levels".to_owned()]);
    assert_eq!(server.timeout_ms, skill_schema::DEFAULT_MCP_TIMEOUT_MS);
    let back = serde_json::to_value(&loaded.skill).unwrap();
    let again = parse_skill(&back.to_string(), Format::Json).unwrap();
    assert_eq!(again.skill, loaded.skill);
    let validator = jsonschema::validator_for(&skill_json_schema()).unwrap();
    assert!(validator.is_valid(&doc));
    let http = with(
        base(),
        "tools",
        Some(json!({"mcpServers": [{"name": "charts", "url": "https://mcp.example/sse"}]})),
    );
    assert!(
        !validator.is_valid(&http),
        "the editors' schema refuses `url` too"
    );
}
