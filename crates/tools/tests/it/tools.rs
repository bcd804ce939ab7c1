//! The registry, the built-ins' validation and point-in-time behaviour, read-only refusal and
//! the last-decision snapshot.

use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use serde_json::{Value, json};
use skill_schema::{BUILTIN_TOOLS, McpServer, ToolSpec};
use tools::{
    FundingRate, NewsItem, OpenInterestPoint, Preloaded, RunMode, ToolContext, ToolError,
    VerdictStatus, build_tools, builtin_names, proposal_from_result, to_last_decision_snapshot,
};
use types::test_support::flat_portfolio;
use types::{OrderAction, PortfolioSnapshot, Position, ProposedAction, RuleCode, Side, Verdict};

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 5, 12, 0, 0).unwrap()
}

fn portfolio() -> PortfolioSnapshot {
    PortfolioSnapshot {
        available_margin_usd: dec!(8000),
        positions: vec![Position {
            symbol: "BTC".into(),
            side: Side::Long,
            qty: dec!(0.04),
            entry_price: dec!(65000),
            leverage: dec!(2),
            mark_price: dec!(66000),
            liquidation_price: Some(dec!(33660)),
            unrealized_pnl_usd: dec!(40),
            margin_usd: dec!(1320),
        }],
        fees_paid_usd: dec!(1.5),
        ..flat_portfolio(now(), dec!(10000))
    }
}

fn data() -> Preloaded {
    let mut d = Preloaded::new();
    d.portfolio = Some(portfolio());
    d.news = vec![
        news(
            now() - Duration::hours(1),
            "BTC ETF inflows hit a record",
            dec!(0.6),
            dec!(0.9),
            &["BTC"],
        ),
        news(
            now() - Duration::hours(3),
            "ETH upgrade date set",
            dec!(0.2),
            dec!(0.5),
            &["ETH"],
        ),
        news(
            now() - Duration::hours(2),
            "Macro: dollar firms\nahead of CPI",
            dec!(-0.3),
            dec!(0.5),
            &[],
        ),
        news(
            now() + Duration::minutes(5),
            "FUTURE headline must never show",
            dec!(1),
            dec!(1),
            &["BTC"],
        ),
        news(
            now() - Duration::hours(30),
            "Too old to show",
            dec!(0),
            dec!(1),
            &["BTC"],
        ),
    ];
    d.funding.insert(
        "BTC".into(),
        (0..4)
            .map(|i| FundingRate {
                time: now() - Duration::hours(3 - i),
                rate: dec!(0.0000125) * Decimal::from(i + 1),
                period_hours: 1,
            })
            .chain(std::iter::once(FundingRate {
                time: now() + Duration::hours(1),
                rate: dec!(0.5),
                period_hours: 1,
            }))
            .collect(),
    );
    d.open_interest.insert(
        "BTC".into(),
        vec![
            OpenInterestPoint {
                time: now() - Duration::hours(2),
                oi_base: dec!(20000),
                oi_usd: dec!(1300000000),
            },
            OpenInterestPoint {
                time: now(),
                oi_base: dec!(21000),
                oi_usd: dec!(1386000000),
            },
        ],
    );
    d
}

fn news(
    time: DateTime<Utc>,
    headline: &str,
    sentiment: Decimal,
    importance: Decimal,
    symbols: &[&str],
) -> NewsItem {
    NewsItem {
        time,
        headline: headline.into(),
        source: "Wire".into(),
        sentiment,
        importance,
        symbols: symbols.iter().map(|s| (*s).to_owned()).collect(),
    }
}

fn ctx(mode: RunMode) -> ToolContext {
    let d = Arc::new(data());
    ToolContext::new(
        now(),
        mode,
        vec!["BTC".into(), "ETH".into()],
        d.clone(),
        d.clone(),
    )
    .with_news(d.clone())
    .with_derivatives(d)
}

fn all_tools() -> ToolSpec {
    ToolSpec {
        built_in: BUILTIN_TOOLS
            .iter()
            .rev()
            .map(|s| (*s).to_owned())
            .collect(),
        mcp_servers: vec![],
    }
}

#[test]
fn registry_implements_exactly_the_schema_builtins_in_canonical_order() {
    assert_eq!(builtin_names(), BUILTIN_TOOLS.to_vec());
    // The whitelist is given in reverse; the registry still lists them canonically.
    let reg = build_tools(&all_tools(), &ctx(RunMode::Trade)).unwrap();
    assert_eq!(reg.names(), BUILTIN_TOOLS.to_vec());
    for tool in reg.tools() {
        let params = tool.parameters();
        assert_eq!(params["type"], "object", "{}", tool.name());
        assert!(
            !params.to_string().contains("$ref"),
            "{} must inline its schema",
            tool.name()
        );
        assert!(!tool.description().is_empty());
        assert_eq!(tool.can_act(), tool.name() == "propose_order");
    }
}

#[test]
fn only_whitelisted_tools_are_hydrated() {
    let spec = ToolSpec {
        built_in: vec![
            "get_funding_rate".into(),
            "propose_order".into(),
            "propose_order".into(),
        ],
        mcp_servers: vec![],
    };
    let reg = build_tools(&spec, &ctx(RunMode::Trade)).unwrap();
    assert_eq!(reg.names(), vec!["propose_order", "get_funding_rate"]);
    let err = reg
        .call("get_open_interest", json!({"symbol": "BTC"}))
        .unwrap_err();
    assert!(matches!(err, ToolError::UnknownTool { ref name, .. } if name == "get_open_interest"));
    assert!(!err.is_recoverable());
}

#[test]
fn unknown_builtins_and_mcp_servers_are_refused_with_their_place() {
    let spec = ToolSpec {
        built_in: vec!["propose_order".into(), "place_order_now".into()],
        mcp_servers: vec![],
    };
    let err = build_tools(&spec, &ctx(RunMode::Trade)).unwrap_err();
    assert_eq!(
        err,
        ToolError::NotABuiltin {
            index: 1,
            name: "place_order_now".into()
        }
    );
    assert!(
        err.to_string()
            .starts_with("tools.builtIn[1]: \"place_order_now\" is not a built-in tool")
    );

    // A skill's MCP server whose tools were not started is refused, not silently dropped.
    let spec = ToolSpec {
        built_in: vec!["propose_order".into()],
        mcp_servers: vec![mcp_server("charts")],
    };
    let err = build_tools(&spec, &ctx(RunMode::Trade)).unwrap_err();
    assert_eq!(
        err,
        ToolError::McpNotStarted {
            index: 0,
            name: "charts".into()
        }
    );
    assert!(
        err.to_string()
            .starts_with("tools.mcpServers[0] (charts): ")
    );
}

fn mcp_server(name: &str) -> McpServer {
    McpServer {
        name: name.into(),
        command: "charts-mcp".into(),
        args: vec![],
        env: std::collections::BTreeMap::new(),
        allowed_tools: vec![],
        timeout_ms: skill_schema::DEFAULT_MCP_TIMEOUT_MS,
    }
}

/// A tool started outside the tick: answers with its name and arguments, after yielding once
/// (it waits, as an MCP tool does).
struct Started {
    name: &'static str,
    acts: bool,
}

impl tools::Tool for Started {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "started outside the tick"
    }
    fn parameters(&self) -> Arc<Value> {
        Arc::new(json!({"type": "object"}))
    }
    fn can_act(&self) -> bool {
        self.acts
    }
    fn call_async(&self, args: Value) -> tools::ToolFuture<'_> {
        Box::pin(async move { Ok(json!({"tool": self.name, "args": args})) })
    }
}

fn started(names: &[&'static str]) -> Arc<[Arc<dyn tools::Tool>]> {
    names
        .iter()
        .map(|&name| {
            Arc::new(Started {
                name,
                acts: name.ends_with("write"),
            }) as Arc<dyn tools::Tool>
        })
        .collect()
}

#[test]
fn external_tools_follow_the_builtins_sorted_by_name_and_dispatch_asynchronously() {
    let spec = ToolSpec {
        built_in: vec!["get_funding_rate".into(), "propose_order".into()],
        mcp_servers: vec![mcp_server("charts")],
    };
    let ctx =
        ctx(RunMode::Trade).with_external(started(&["mcp__charts__write", "mcp__charts__levels"]));
    let reg = build_tools(&spec, &ctx).unwrap();
    assert_eq!(
        reg.names(),
        vec![
            "propose_order",
            "get_funding_rate",
            "mcp__charts__levels",
            "mcp__charts__write"
        ]
    );
    let out = block_on(reg.call_async("mcp__charts__levels", json!({"n": 2}))).unwrap();
    assert_eq!(
        out,
        json!({"tool": "mcp__charts__levels", "args": {"n": 2}})
    );
    // The synchronous path refuses a tool that waits, naming the async one.
    let err = reg.call("mcp__charts__levels", json!({})).unwrap_err();
    assert!(matches!(err, ToolError::AsyncOnly { .. }), "{err}");
    // A read-only context refuses an external tool that can act, before it runs.
    let read_only = ToolContext {
        mode: RunMode::ReadOnly,
        ..ctx
    };
    let reg = build_tools(&spec, &read_only).unwrap();
    let err = block_on(reg.call_async("mcp__charts__write", json!({}))).unwrap_err();
    assert_eq!(
        err,
        ToolError::ReadOnly {
            tool: "mcp__charts__write".into()
        }
    );
    assert!(block_on(reg.call_async("mcp__charts__levels", json!({}))).is_ok());
}

#[test]
fn an_external_tool_may_not_share_a_name_with_a_builtin_or_another_external_tool() {
    let spec = ToolSpec::default();
    let ctx = ctx(RunMode::Trade).with_external(started(&["mcp__a__x", "get_funding_rate"]));
    let err = build_tools(&spec, &ctx).unwrap_err();
    assert_eq!(
        err.to_string(),
        "two tools are named \"get_funding_rate\": the built-in and external tool 1"
    );
    let ctx = ctx.with_external(started(&["mcp__a__x", "mcp__a__y", "mcp__a__x"]));
    let err = build_tools(&spec, &ctx).unwrap_err();
    assert_eq!(
        err.to_string(),
        "two tools are named \"mcp__a__x\": external tool 0 and external tool 2"
    );
}

/// Polls a future that never waits on anything outside itself to completion.
pub(crate) fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let std::task::Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

fn propose(args: Value) -> Result<Value, ToolError> {
    build_tools(&all_tools(), &ctx(RunMode::Trade))
        .unwrap()
        .call("propose_order", args)
}

#[test]
fn a_valid_proposal_is_recorded_not_executed() {
    let out = propose(json!({
        "action": "open_long", "symbol": "ETH", "size_usd": 1250.5, "leverage": 3,
        "reason": "  Reclaim of the 4h range\nlow with funding reset  ", "confidence": 70,
        "stop": 3350, "target": 3600.25
    }))
    .unwrap();
    assert_eq!(out["status"], "recorded");
    let p = proposal_from_result(&out).unwrap();
    assert_eq!(
        p,
        ProposedAction {
            action: OrderAction::OpenLong,
            symbol: "ETH".into(),
            size_usd: Some(dec!(1250.5)),
            leverage: Some(dec!(3)),
            // Whitespace (the newline included) collapses: reasons stay on one line.
            reason: "Reclaim of the 4h range low with funding reset".into(),
            confidence: Some(70),
            stop: Some(dec!(3350)),
            target: Some(dec!(3600.25)),
        }
    );
}

#[test]
fn nulls_mean_absent_and_close_drops_sizing_fields() {
    let out = propose(json!({
        "action": "close", "symbol": "BTC", "size_usd": 500, "leverage": 2, "stop": null,
        "reason": "Target reached", "confidence": null
    }))
    .unwrap();
    let p = proposal_from_result(&out).unwrap();
    assert_eq!(p.action, OrderAction::Close);
    assert_eq!(
        (p.size_usd, p.leverage, p.confidence, p.stop),
        (None, None, None, None)
    );
}

#[test]
fn schema_violations_are_all_listed_with_the_argument() {
    let err = propose(json!({
        "action": "buy", "symbol": "BTC", "size_usd": "lots", "reason": "x".repeat(281), "extra": 1
    }))
    .unwrap_err();
    let ToolError::InvalidArguments { tool, problems } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(tool, "propose_order");
    assert!(err.is_recoverable());
    let text = problems.join("\n");
    assert!(text.contains("action:"), "{text}");
    assert!(text.contains("size_usd:"), "{text}");
    assert!(text.contains("reason:"), "{text}");
    assert!(text.contains("extra"), "{text}");
    let err = propose(json!({"action": "no_op", "symbol": "BTC"})).unwrap_err();
    assert!(
        err.to_string()
            .contains("\"reason\" is a required property"),
        "{err}"
    );
}

#[test]
fn rules_beyond_the_schema() {
    let cases = [
        (
            json!({"action": "open_long", "symbol": "SOL", "size_usd": 100, "reason": "r"}),
            "symbol: not traded by this deployment; use one of BTC, ETH",
        ),
        (
            json!({"action": "open_short", "symbol": "BTC", "reason": "r"}),
            "size_usd: required for open_short",
        ),
        (
            json!({"action": "reduce", "symbol": "BTC", "size_usd": 0, "reason": "r"}),
            "size_usd: must be greater than 0 (got 0)",
        ),
        (
            json!({"action": "open_long", "symbol": "BTC", "size_usd": 100, "reason": "r", "stop": 70000, "target": 68000}),
            "stop: a long's stop (70000) must be below its target (68000)",
        ),
        (
            json!({"action": "open_short", "symbol": "BTC", "size_usd": 100, "reason": "r", "stop": 60000, "target": 62000}),
            "stop: a short's stop (60000) must be above its target (62000)",
        ),
        (
            json!({"action": "no_op", "symbol": "BTC", "reason": " \n "}),
            "reason: must not be blank",
        ),
    ];
    for (args, expected) in cases {
        let err = propose(args.clone()).unwrap_err();
        let ToolError::InvalidArguments { problems, .. } = &err else {
            panic!("{args}: {err:?}")
        };
        assert_eq!(problems, &vec![expected.to_owned()], "{args}");
    }
}

#[test]
fn read_only_mode_refuses_every_tool_that_can_act() {
    let reg = build_tools(&all_tools(), &ctx(RunMode::ReadOnly)).unwrap();
    let args = json!({"action": "open_long", "symbol": "BTC", "size_usd": 100, "reason": "r"});
    let err = reg.call("propose_order", args.clone()).unwrap_err();
    assert_eq!(
        err,
        ToolError::ReadOnly {
            tool: "propose_order".into()
        }
    );
    assert!(err.to_string().contains("read-only"));
    // The tool itself refuses too, not only the registry's dispatch.
    let err = reg.get("propose_order").unwrap().call(args).unwrap_err();
    assert!(matches!(err, ToolError::ReadOnly { .. }));
    // Reading still works (the recall tools wait on their store: `recall.rs` calls them
    // read-only).
    for tool in reg
        .tools()
        .iter()
        .filter(|t| !t.can_act() && !tools::RECALL_TOOLS.contains(&t.name()))
    {
        let args = if tool.name().starts_with("get_") && tool.name() != "get_position_risk" {
            json!({"symbol": "BTC"})
        } else {
            json!({})
        };
        reg.call(tool.name(), args).unwrap();
    }
}

#[test]
fn news_is_point_in_time_ranked_and_one_line() {
    let reg = build_tools(&all_tools(), &ctx(RunMode::Trade)).unwrap();
    let out = reg
        .call("fetch_news_sentiment", json!({"hours": 6}))
        .unwrap();
    let headlines: Vec<&str> = out["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["headline"].as_str().unwrap())
        .collect();
    // importance 0.9 first; the two 0.5s newest first; nothing after now or older than 6h.
    assert_eq!(
        headlines,
        vec![
            "BTC ETF inflows hit a record",
            "Macro: dollar firms ahead of CPI",
            "ETH upgrade date set"
        ]
    );
    // (0.6 + 0.2 − 0.3) / 3 = 0.1666… → 0.17
    assert_eq!(out["mean_sentiment"], "0.17");
    let out = reg
        .call("fetch_news_sentiment", json!({"symbol": "ETH", "top_k": 1}))
        .unwrap();
    assert_eq!(out["items"].as_array().unwrap().len(), 1);
    assert_eq!(
        out["items"][0]["headline"],
        "Macro: dollar firms ahead of CPI"
    );
    let err = reg
        .call("fetch_news_sentiment", json!({"symbol": "DOGE"}))
        .unwrap_err();
    assert!(err.to_string().contains("not traded"), "{err}");
}

#[test]
fn position_risk_arithmetic() {
    let reg = build_tools(&all_tools(), &ctx(RunMode::Trade)).unwrap();
    let out = reg.call("get_position_risk", json!({})).unwrap();
    let p = &out["positions"][0];
    // notional 0.04 × 66000 = 2640; of equity 2640 / 10000 = 26.40 %
    assert_eq!(p["notional_usd"], "2640.00");
    assert_eq!(p["pct_of_equity"], "26.40");
    // liquidation distance (66000 − 33660) / 66000 = 49.00 %
    assert_eq!(p["distance_to_liquidation_pct"], "49.00");
    // uPnL 40 on an entry notional of 0.04 × 65000 = 2600 → 1.538… → 1.54 %
    assert_eq!(p["unrealized_pnl_pct_of_entry"], "1.54");
    assert_eq!(out["gross_exposure_pct_of_equity"], "26.40");
    let out = reg
        .call("get_position_risk", json!({"symbol": "ETH"}))
        .unwrap();
    assert_eq!(out["positions"], json!([]));
}

#[test]
fn funding_and_open_interest_never_show_the_future() {
    let reg = build_tools(&all_tools(), &ctx(RunMode::Trade)).unwrap();
    let out = reg
        .call("get_funding_rate", json!({"symbol": "BTC"}))
        .unwrap();
    // Prints at 09:00..12:00 of 0.0000125 × 1..4; the 13:00 print of 0.5 is in the future.
    assert_eq!(out["history"].as_array().unwrap().len(), 4);
    assert_eq!(out["latest"]["rate"], "0.0000500");
    // 0.00005 per 1h × 8760 h = 0.438 → 43.80 % a year
    assert_eq!(out["latest_annualised_pct"], "43.80");
    // mean (1+2+3+4)/4 × 0.0000125 = 0.00003125
    assert_eq!(out["mean_rate"], "0.00003125");
    let out = reg
        .call("get_funding_rate", json!({"symbol": "ETH"}))
        .unwrap();
    assert_eq!(out["available"], false);
    let out = reg
        .call("get_open_interest", json!({"symbol": "BTC"}))
        .unwrap();
    // (21000 − 20000) / 20000 = 5.00 %
    assert_eq!(out["change_pct"], "5.00");
}

#[test]
fn last_decision_snapshot_from_a_rejection() {
    let p = ProposedAction {
        action: OrderAction::OpenLong,
        symbol: "BTC".into(),
        size_usd: Some(dec!(6000)),
        leverage: Some(dec!(3)),
        reason: "Breakout above the prior swing high".into(),
        confidence: Some(72),
        stop: None,
        target: None,
    };
    let verdict = Verdict::Rejected {
        rule: RuleCode::PositionCap,
        detail: "position would be 60.00% of equity;\ncap is 40%".into(),
    };
    let s = to_last_decision_snapshot(Some(&p), &verdict, now());
    assert_eq!(s.status, VerdictStatus::Rejected);
    assert_eq!(s.rule, Some(RuleCode::PositionCap));
    assert_eq!(s.detail, "position would be 60.00% of equity; cap is 40%");
    assert_eq!(
        s.proposal.as_deref(),
        Some(
            "open_long BTC $6,000.00 at 3x, confidence 72: \"Breakout above the prior swing high\""
        )
    );
    let s = to_last_decision_snapshot(
        None,
        &Verdict::NoOp {
            detail: "no proposal".into(),
        },
        now(),
    );
    assert_eq!(
        (s.status, s.proposal, s.rule),
        (VerdictStatus::NoOp, None, None)
    );
}

/// The tool definitions are part of the cacheable prompt prefix: any change to a name,
/// description or schema shows up here.
#[test]
fn tool_definitions_snapshot() {
    let reg = build_tools(&all_tools(), &ctx(RunMode::Trade)).unwrap();
    let defs: Vec<Value> = reg
        .tools()
        .iter()
        .map(|t| json!({"name": t.name(), "description": t.description(), "parameters": t.parameters(), "can_act": t.can_act()}))
        .collect();
    insta::assert_snapshot!(
        "tool_definitions",
        serde_json::to_string_pretty(&defs).unwrap()
    );
}

/// `Preloaded` returns the bars closed by the asked time (a bar closing exactly then included),
/// the latest `limit` of them, and nothing near the earliest representable time.
#[test]
fn preloaded_bars_are_the_closed_ones() {
    use tools::MarketData;
    use types::{Bar, Interval};
    let bar = |h: i64| Bar {
        time: now() + Duration::hours(h),
        open: dec!(1),
        high: dec!(2),
        low: dec!(0.5),
        close: dec!(1.5),
        volume: dec!(10),
    };
    let data = Preloaded::new().with_bars("BTC", Interval::H1, (-5..5).map(bar).collect());
    let times = |closed_by: DateTime<Utc>, limit: usize| -> Vec<i64> {
        data.bars("BTC", Interval::H1, closed_by, limit)
            .unwrap()
            .iter()
            .map(|b| (b.time - now()).num_hours())
            .collect()
    };
    // The bar opened at now − 1h closes at now; the one opened at now is still open.
    assert_eq!(times(now(), 100), vec![-5, -4, -3, -2, -1]);
    assert_eq!(
        times(now() - Duration::seconds(1), 100),
        vec![-5, -4, -3, -2]
    );
    assert_eq!(times(now() + Duration::hours(1), 3), vec![-2, -1, 0]);
    assert_eq!(times(now(), 0), Vec::<i64>::new());
    assert!(times(DateTime::<Utc>::MIN_UTC, 100).is_empty());
    assert!(
        data.bars("ETH", Interval::H1, now(), 10)
            .unwrap()
            .is_empty()
    );
}

/// `Preloaded` lends its bars with their place in a series whose id changes exactly when the
/// series does (a clone shares it, an insert renews it); a source that only implements `bars`
/// vouches for no series.
#[test]
fn preloaded_windows_name_their_series_and_a_changed_series_gets_a_new_id() {
    use tools::{BarsWindow, MarketData, SeriesOrigin};
    use types::{Bar, Interval};

    let bar = |h: i64| Bar {
        time: now() - Duration::hours(h),
        open: dec!(1),
        high: dec!(2),
        low: dec!(1),
        close: dec!(2),
        volume: dec!(3),
    };
    let mut data = Preloaded::new().with_bars("X", Interval::H1, (1..=30).map(bar).collect());
    let w = data.bars_window("X", Interval::H1, now(), 5).unwrap();
    // 30 bars closed by now; the last five are numbers 25..30.
    assert_eq!(w.bars.len(), 5);
    assert!(matches!(w.bars, std::borrow::Cow::Borrowed(_)));
    let origin = w.origin.unwrap();
    assert_eq!(origin.start, 25);
    let earlier = data
        .bars_window("X", Interval::H1, now() - Duration::hours(3), 5)
        .unwrap();
    assert_eq!(
        earlier.origin,
        Some(SeriesOrigin {
            start: 22,
            ..origin
        })
    );
    assert_eq!(&*earlier.bars, &data.all_bars("X", Interval::H1)[22..27]);
    let clone = data.clone();
    assert_eq!(
        clone
            .bars_window("X", Interval::H1, now(), 5)
            .unwrap()
            .origin,
        Some(origin)
    );
    data.insert_bars("X", Interval::H1, vec![bar(40)]);
    let renewed = data.bars_window("X", Interval::H1, now(), 5).unwrap();
    assert_ne!(renewed.origin.unwrap().series, origin.series);
    assert_eq!(
        data.bars("X", Interval::H1, now(), 5).unwrap(),
        renewed.bars.into_owned()
    );

    struct OnlyBars(Preloaded);
    impl MarketData for OnlyBars {
        fn bars(
            &self,
            symbol: &str,
            interval: Interval,
            closed_by: DateTime<Utc>,
            limit: usize,
        ) -> Result<Vec<Bar>, tools::DataError> {
            self.0.bars(symbol, interval, closed_by, limit)
        }
    }
    let only_bars = OnlyBars(clone);
    let plain: BarsWindow<'_> = only_bars.bars_window("X", Interval::H1, now(), 5).unwrap();
    assert_eq!(plain.origin, None);
    assert_eq!(plain.bars.len(), 5);
}

/// Shared bars are held without a copy and only up to the given close: a source for a tick
/// holds nothing that closed after it, whatever the shared series holds beyond; a series that
/// is not sorted is merged as `insert_bars` merges.
#[test]
fn preloaded_shared_bars_end_at_the_given_close() {
    use tools::MarketData;
    use types::{Bar, Interval};

    let bar = |h: i64| Bar {
        time: now() + Duration::hours(h),
        open: dec!(1),
        high: dec!(2),
        low: dec!(1),
        close: Decimal::from(h + 100),
        volume: dec!(3),
    };
    let shared: Arc<[Bar]> = (-10..3).map(bar).collect::<Vec<_>>().into();
    let mut data = Preloaded::new().with_bars("X", Interval::H1, vec![bar(-50)]);
    data.insert_shared_bars("X", Interval::H1, shared.clone(), now());
    // Replaced, not merged; the bars opened at now and after have not closed by now.
    let held = data.all_bars("X", Interval::H1);
    assert_eq!(held.len(), 10);
    assert_eq!(held.last().unwrap().time, now() - Duration::hours(1));
    assert!(std::ptr::eq(held.as_ptr(), shared.as_ptr()), "not copied");
    // Asked for a later close, still nothing past the one it was given.
    let later = data
        .bars("X", Interval::H1, now() + Duration::hours(5), 100)
        .unwrap();
    assert_eq!(later.len(), 10);
    let w = data.bars_window("X", Interval::H1, now(), 3).unwrap();
    assert_eq!(w.origin.unwrap().start, 7);

    let unsorted: Arc<[Bar]> = vec![bar(-1), bar(-3), bar(-2), bar(-2), bar(1)].into();
    data.insert_shared_bars("X", Interval::H1, unsorted, now());
    let times: Vec<i64> = data
        .all_bars("X", Interval::H1)
        .iter()
        .map(|b| (b.time - now()).num_hours())
        .collect();
    assert_eq!(times, vec![-3, -2, -1]);
}
