//! The `builtin/sma-cross:FAST:SLOW` baseline: crossing rules on hand-made closes, and whole
//! ticks through the same tool path as a real model.

use std::sync::Arc;

use agent_runtime::builtin::{Cross, parse_context, sma_cross};
use agent_runtime::{FinishReason, ToolOutcome, builtin_model, run_agent_tick};
use chrono::{DateTime, Duration, TimeZone, Utc};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use skill_schema::{Format, Skill, parse_skill};
use tools::{Preloaded, RunMode, ToolContext};
use types::test_support::flat_portfolio;
use types::{Bar, Interval, OrderAction, PortfolioSnapshot, Position, Side};

fn closes(v: &[i64]) -> Vec<Decimal> {
    v.iter().copied().map(Decimal::from).collect()
}

#[test]
fn crossing_rules_on_hand_made_closes() {
    // FAST 2, SLOW 3.
    // [10,10,10 | 13]: before, SMA2 = SMA3 = 10 (fast ≤ slow); now SMA2 = (10+13)/2 = 11.5 >
    // SMA3 = (10+10+13)/3 = 11 → up.
    assert_eq!(
        sma_cross(&closes(&[10, 10, 10, 13]), 2, 3),
        Some((Cross::Up, dec!(11.5), dec!(11)))
    );
    // [10,10,10 | 7]: now SMA2 = 8.5 < SMA3 = 9 → down.
    assert_eq!(
        sma_cross(&closes(&[10, 10, 10, 7]), 2, 3),
        Some((Cross::Down, dec!(8.5), dec!(9)))
    );
    // [10,11,12 | 13]: fast was already above (11.5 > 11) and stays above (12.5 > 12) → none.
    assert_eq!(
        sma_cross(&closes(&[10, 11, 12, 13]), 2, 3),
        Some((Cross::None, dec!(12.5), dec!(12)))
    );
    // [13,12,11 | 12]: before, SMA2 = 11.5 < SMA3 = 12; now SMA2 = (11+12)/2 = 11.5 <
    // SMA3 = (12+11+12)/3 = 11.67 → still below → none.
    assert_eq!(
        sma_cross(&closes(&[13, 12, 11, 12]), 2, 3).map(|c| c.0),
        Some(Cross::None)
    );
    // Touching is not crossing: [10,10,10 | 10] → equal before and after → none.
    assert_eq!(
        sma_cross(&closes(&[10, 10, 10, 10]), 2, 3).map(|c| c.0),
        Some(Cross::None)
    );
    // SLOW + 1 closes are needed.
    assert_eq!(sma_cross(&closes(&[10, 10, 13]), 2, 3), None);
}

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2017, 6, 1, 12, 0, 0).unwrap()
}

fn skill() -> Skill {
    let yaml = include_str!("../../../../examples/skills/eurusd-sma-cross.yaml");
    parse_skill(yaml, Format::Yaml).unwrap().skill
}

/// 59 flat EURUSD bars at 1.07000 closing by `now`, then the last closed bar at `last`, then a
/// still-forming bar (closes after now) that would reverse any signal if it leaked.
fn eurusd(last: Decimal) -> Preloaded {
    let bar = |time: DateTime<Utc>, close: Decimal| Bar {
        time,
        open: close,
        high: close + dec!(0.00050),
        low: close - dec!(0.00050),
        close,
        volume: dec!(1200),
    };
    let mut bars: Vec<Bar> = (0..59)
        .map(|i| bar(now() - Duration::hours(60 - i), dec!(1.07000)))
        .collect();
    bars.push(bar(now() - Duration::hours(1), last));
    let forming = dec!(2.14) - last; // the mirror image of the signal
    bars.push(bar(now(), forming));
    Preloaded::new().with_bars("EURUSD", Interval::H1, bars)
}

fn portfolio(position: Option<Side>) -> PortfolioSnapshot {
    PortfolioSnapshot {
        positions: position
            .map(|side| Position {
                symbol: "EURUSD".into(),
                side,
                qty: dec!(5000),
                entry_price: dec!(1.07),
                leverage: dec!(1),
                mark_price: dec!(1.07),
                liquidation_price: None,
                unrealized_pnl_usd: dec!(0),
                margin_usd: dec!(5350),
            })
            .into_iter()
            .collect(),
        ..flat_portfolio(now(), dec!(10000))
    }
}

async fn tick(last: Decimal, position: Option<Side>) -> agent_runtime::TickOutput {
    tick_with(last, position, &mut agent_runtime::RenderCache::default()).await
}

async fn tick_with(
    last: Decimal,
    position: Option<Side>,
    cache: &mut agent_runtime::RenderCache,
) -> agent_runtime::TickOutput {
    let mut data = eurusd(last);
    data.portfolio = Some(portfolio(position));
    let data = Arc::new(data);
    let ctx = ToolContext::new(
        now(),
        RunMode::Trade,
        vec!["EURUSD".into()],
        data.clone(),
        data,
    );
    let skill = skill();
    let model = builtin_model(&skill.model, &skill).expect("the example skill names sma-cross");
    run_agent_tick(&skill, &ctx, model.as_ref(), None, None, cache)
        .await
        .unwrap()
}

/// A deployment keeps its render cache between ticks, and with it the JSON text of its last
/// steps (a step equal to one of them is not serialised again): every tick's stored steps are
/// still the text a fresh cache gives, through repeats and changes (no cross, a cross, a
/// position that changes the proposal, no cross again).
#[tokio::test]
async fn steps_through_a_kept_cache_are_the_fresh_texts() {
    let mut kept = agent_runtime::RenderCache::default();
    for (last, position) in [
        (dec!(1.07000), None),
        (dec!(1.07000), None),
        (dec!(1.07500), None),
        (dec!(1.07500), None),
        (dec!(1.06500), Some(Side::Long)),
        (dec!(1.07000), Some(Side::Long)),
        (dec!(1.07000), None),
    ] {
        let cached = tick_with(last, position, &mut kept).await;
        let fresh = tick(last, position).await;
        let text = |out: &agent_runtime::TickOutput| {
            out.run
                .steps_json
                .as_ref()
                .map(|j| j.as_str().to_owned())
                .expect("steps json")
        };
        assert_eq!(text(&cached), text(&fresh), "close {last}, {position:?}");
        assert_eq!(cached.run.steps, fresh.run.steps);
    }
}

#[tokio::test]
async fn a_cross_above_proposes_long_through_propose_order() {
    // SMA10 = 1.07 + 0.005/10 = 1.0705 > SMA20 = 1.07 + 0.005/20 = 1.07025; both were 1.07.
    let out = tick(dec!(1.07500), None).await;
    let p = out.run.proposed_action.clone().unwrap();
    assert_eq!(p.action, OrderAction::OpenLong);
    assert_eq!(p.symbol, "EURUSD");
    // 60 % of the equity left after the order: $10,000 less a cent (the shown equity is
    // rounded) less up to 10 bps of the order itself:
    // 0.6 × 9,999.99 / (1 + 0.6 × 0.001) = 5,996.396… → $5,996.39, under the $100000 order cap.
    assert_eq!(p.size_usd, Some(dec!(5996.39)));
    assert_eq!(p.leverage, Some(dec!(1)));
    assert!(
        p.reason
            .starts_with("Rule-based baseline builtin/sma-cross:10:20 (not an LLM)"),
        "{}",
        p.reason
    );
    assert!(
        p.reason
            .contains("SMA10 1.0705 crossed above SMA20 1.07025"),
        "{}",
        p.reason
    );
    // Same path as an LLM: a propose_order tool call that the tool validated and recorded.
    assert_eq!(out.run.steps[0].tool_calls[0].name, "propose_order");
    assert!(matches!(
        out.run.steps[0].tool_calls[0].outcome,
        ToolOutcome::Ok { .. }
    ));
    assert_eq!(out.run.finish_reason, FinishReason::Stop);
    assert_eq!(out.run.cost_usd, dec!(0));
    assert!(out.run.cost_known);
    // It read the same message an LLM would have, which never held the forming bar.
    assert!(!out.context.text.contains("06-01T12:00 "));
    assert_eq!(parse_context(&out.context.text).closes[0].1.len(), 60);
}

#[tokio::test]
async fn a_cross_below_proposes_short_and_flips_a_long() {
    let out = tick(dec!(1.06500), Some(Side::Long)).await;
    let p = out.run.proposed_action.unwrap();
    assert_eq!(p.action, OrderAction::OpenShort);
    // The flip first closes 5,000 at the last close 1.065 = $5,325 of notional, which may cost
    // 10 bps too: 0.6 × (9,999.99 − 5.325) / 1.0006 = 5,993.203… → $5,993.20.
    assert_eq!(p.size_usd, Some(dec!(5993.20)));
    assert!(p.reason.contains("crossed below"), "{}", p.reason);
    assert!(p.reason.contains("flips the open position"), "{}", p.reason);
}

#[tokio::test]
async fn no_cross_or_already_positioned_is_no_op() {
    let out = tick(dec!(1.07000), None).await;
    let p = out.run.proposed_action.unwrap();
    assert_eq!(p.action, OrderAction::NoOp);
    assert!(p.reason.contains("no SMA10/SMA20 cross"), "{}", p.reason);

    let out = tick(dec!(1.07500), Some(Side::Long)).await;
    let p = out.run.proposed_action.unwrap();
    assert_eq!(p.action, OrderAction::NoOp);
    assert!(p.reason.contains("already long, holding"), "{}", p.reason);
}

#[test]
fn builtin_model_ids() {
    let s = skill();
    assert_eq!(
        builtin_model("builtin/sma-cross:10:20", &s).unwrap().id(),
        "builtin/sma-cross:10:20"
    );
    assert!(builtin_model("builtin/sma-cross:20:10", &s).is_none());
    assert!(builtin_model("builtin/sma-cross:0:5", &s).is_none());
    assert!(builtin_model("builtin/sma-cross:10", &s).is_none());
    assert!(builtin_model("builtin/scripted", &s).is_none());
    assert!(builtin_model("openai/gpt-5", &s).is_none());
}
