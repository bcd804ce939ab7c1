//! Invariants over generated inputs: point in time and determinism of the context, and a model
//! loop that never panics and never proposes from a tick that failed.

use crate::common;

use std::sync::Arc;

use agent_runtime::builtin::{parse_context, parse_context_last};
use agent_runtime::{FinishReason, ModelResponse, ScriptedModel, assemble_context, run_skill};
use chrono::Duration;
use common::{now, portfolio, skill};
use model::test_support::{tool_call, tool_turn};
use proptest::prelude::*;
use rust_decimal::Decimal;
use tools::{Preloaded, RunMode, ToolContext};
use types::{Bar, Interval};

fn bars_strategy() -> impl Strategy<Value = Vec<(i64, i64)>> {
    // (hours relative to now of the bar's open, close in cents)
    prop::collection::vec((-80i64..6, 1i64..10_000_000), 0..60)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn only_closed_bars_are_shown_and_rendering_is_deterministic(raw in bars_strategy()) {
        let bars: Vec<Bar> = raw
            .iter()
            .map(|&(h, cents)| {
                let c = Decimal::new(cents, 2);
                Bar { time: now() + Duration::hours(h), open: c, high: c, low: c, close: c, volume: Decimal::ONE }
            })
            .collect();
        let mut data = Preloaded::new().with_bars("BTC", Interval::H1, bars.clone());
        data.portfolio = Some(portfolio());
        let data = Arc::new(data);
        let ctx = ToolContext::new(now(), RunMode::Trade, vec!["BTC".into()], data.clone(), data);
        let mut s = skill();
        s.context.symbols = vec!["BTC".into()];
        let a = assemble_context(&s, &ctx, None).unwrap();
        let b = assemble_context(&s, &ctx, None).unwrap();
        prop_assert_eq!(&a, &b);

        // The expected rows: one per open time (the later insert wins), closed by now, the last 24.
        let mut by_time = std::collections::BTreeMap::new();
        for bar in &bars {
            by_time.insert(bar.time, bar.close);
        }
        let closed: Vec<Decimal> = by_time
            .iter()
            .filter(|(t, _)| **t + Duration::hours(1) <= now())
            .map(|(_, c)| *c)
            .collect();
        let expected = closed[closed.len().saturating_sub(24)..].to_vec();
        let parsed = parse_context(&a.text);
        prop_assert_eq!(&parsed.closes[0].1, &expected);
        // The baseline's tail parse reads the same closes, only the last `keep` of them, and the
        // same portfolio.
        for keep in [0, 1, 5, 21, usize::MAX] {
            let tail = parse_context_last(&a.text, keep);
            prop_assert_eq!(
                &tail.closes[0].1[..],
                &expected[expected.len().saturating_sub(keep)..]
            );
            prop_assert_eq!(&tail.equity, &parsed.equity);
            prop_assert_eq!(&tail.positions, &parsed.positions);
        }
    }

    #[test]
    fn the_loop_never_panics_and_errors_never_propose(
        calls in prop::collection::vec(
            (
                prop::sample::select(vec!["propose_order", "get_position_risk", "fetch_news_sentiment", "nope"]),
                prop_oneof![
                    Just(r#"{"action":"open_long","symbol":"BTC","size_usd":100,"reason":"r"}"#.to_owned()),
                    Just(r#"{"action":"no_op","symbol":"ETH","reason":"wait"}"#.to_owned()),
                    Just(String::new()),
                    ".{0,40}",
                    "\\{\"action\":\"[a-z_]{0,10}\",\"symbol\":\"[A-Z]{0,4}\",\"size_usd\":-?[0-9]{0,6}\\}",
                ],
            ),
            1..6,
        ),
    ) {
        let script: Vec<ModelResponse> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| tool_turn(vec![tool_call(format!("c{i}"), *name, args.clone())]))
            .collect();
        let model = ScriptedModel::new(script);
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let out = rt.block_on(run_skill(&skill(), &common::ctx(), &model, "sys", "ctx"));
        if out.finish_reason == FinishReason::Error {
            prop_assert!(out.proposed_action.is_none());
            prop_assert!(out.error.is_some());
        }
        if let Some(p) = &out.proposed_action {
            prop_assert!(p.symbol == "BTC" || p.symbol == "ETH");
            prop_assert!(!p.reason.is_empty() && p.reason.chars().count() <= tools::MAX_REASON_CHARS);
        }
        prop_assert!(out.steps.len() <= skill().max_steps as usize);
    }
}
