//! Engine authority across two ticks: whatever the model proposes, the execution engine alone
//! decides, and the next tick's "Last decision" section tells the model why.

use crate::common;

use std::collections::BTreeMap;

use agent_runtime::{ScriptedModel, assemble_context, run_skill};
use common::{ctx, now, portfolio, skill};
use execution_engine::{AccountView, validate};
use model::test_support::{answer, tool_call, tool_turn};
use tools::to_last_decision_snapshot;
use types::{RuleCode, Verdict};

fn propose(arguments: &str) -> ScriptedModel {
    ScriptedModel::new(vec![
        tool_turn(vec![tool_call("c1", "propose_order", arguments)]),
        answer("done"),
    ])
}

fn account() -> AccountView {
    let p = portfolio();
    let marks: BTreeMap<String, rust_decimal::Decimal> = p
        .positions
        .iter()
        .map(|pos| (pos.symbol.clone(), pos.mark_price))
        .collect();
    let mut marks = marks;
    marks.insert("ETH".into(), rust_decimal_macros::dec!(3600));
    AccountView {
        peak_equity_usd: p.equity_usd,
        day_start_equity_usd: p.equity_usd,
        portfolio: p,
        marks,
        recent_order_times: vec![],
    }
}

/// Tick 1 with the given proposal through the engine; returns the verdict and tick 2's "Last
/// decision" section.
async fn two_ticks(arguments: &str) -> (Option<types::ProposedAction>, Verdict, String) {
    let skill = skill();
    let ctx = ctx();
    let user = assemble_context(&skill, &ctx, None).unwrap().text;
    let out = run_skill(&skill, &ctx, &propose(arguments), "system", &user).await;
    let decision = validate(
        out.proposed_action.as_ref(),
        &skill.risk,
        &account(),
        &skill.context.symbols,
        now(),
    );
    assert!(decision.order.is_none() || matches!(decision.verdict, Verdict::Executed { .. }));
    let last = to_last_decision_snapshot(out.proposed_action.as_ref(), &decision.verdict, now());
    let next = assemble_context(&skill, &ctx, Some(&last)).unwrap().text;
    let section = next
        .split("\n\n## ")
        .find(|s| s.starts_with("Last decision"))
        .expect("tick 2 shows the last decision")
        .to_owned();
    (out.proposed_action, decision.verdict, section)
}

fn rejected_with(verdict: &Verdict) -> Option<RuleCode> {
    match verdict {
        Verdict::Rejected { rule, .. } => Some(*rule),
        _ => None,
    }
}

#[tokio::test]
async fn an_order_below_the_minimum_size_is_rejected_and_explained() {
    // minOrderUsd is 25.
    let (proposal, verdict, section) = two_ticks(
        r#"{"action":"open_short","symbol":"ETH","size_usd":5,"leverage":2,"reason":"tiny probe"}"#,
    )
    .await;
    assert!(
        proposal.is_some(),
        "the tool accepts the shape; the engine judges the size"
    );
    assert_eq!(rejected_with(&verdict), Some(RuleCode::OrderTooSmall));
    assert!(section.contains("R6_ORDER_TOO_SMALL"), "{section}");
    assert!(section.contains("rejected"), "{section}");
}

#[tokio::test]
async fn leverage_above_the_cap_is_rejected_and_explained() {
    // maxLeverage is 5; the model asks for 20 and says the caps do not apply.
    let (_, verdict, section) = two_ticks(
        r#"{"action":"open_short","symbol":"ETH","size_usd":1000,"leverage":20,"reason":"ignore the caps, max leverage"}"#,
    )
    .await;
    assert_eq!(rejected_with(&verdict), Some(RuleCode::LeverageCap));
    assert!(section.contains("R5_LEVERAGE_CAP"), "{section}");
}

#[tokio::test]
async fn an_oversized_order_is_rejected_and_explained() {
    // maxOrderUsd is 5,000.
    let (_, verdict, section) = two_ticks(
        r#"{"action":"open_short","symbol":"ETH","size_usd":50000,"leverage":2,"reason":"all in"}"#,
    )
    .await;
    assert_eq!(rejected_with(&verdict), Some(RuleCode::OrderTooLarge));
    assert!(section.contains("R7_ORDER_TOO_LARGE"), "{section}");
}

#[tokio::test]
async fn an_unknown_symbol_never_reaches_an_order() {
    let (proposal, verdict, section) = two_ticks(
        r#"{"action":"open_long","symbol":"DOGE","size_usd":1000,"leverage":2,"reason":"meme season"}"#,
    )
    .await;
    // The tool refuses a symbol the deployment does not trade, so there is no proposal and
    // the engine answers no-op: nothing trades.
    assert_eq!(proposal, None);
    assert!(matches!(verdict, Verdict::NoOp { .. }), "{verdict:?}");
    assert!(section.contains(": no proposal\nEngine: no"), "{section}");
}

#[tokio::test]
async fn an_unknown_symbol_reaching_the_engine_directly_is_r1() {
    let skill = skill();
    let p = types::ProposedAction {
        action: types::OrderAction::OpenLong,
        symbol: "DOGE".into(),
        size_usd: Some(rust_decimal_macros::dec!(1000)),
        leverage: Some(rust_decimal_macros::dec!(2)),
        reason: "meme".into(),
        confidence: None,
        stop: None,
        target: None,
    };
    let d = validate(
        Some(&p),
        &skill.risk,
        &account(),
        &skill.context.symbols,
        now(),
    );
    assert_eq!(rejected_with(&d.verdict), Some(RuleCode::UnknownSymbol));
    assert!(d.order.is_none());
}
