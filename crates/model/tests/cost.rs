//! The rate table, with the arithmetic written out.

use model::{Usage, estimate_cost, normalise_model_id, rates_for};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;

fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Usage {
    Usage {
        input,
        output,
        cache_read,
        cache_write,
    }
}

#[test]
fn cost_table() {
    let cases: [(&str, Usage, Decimal); 14] = [
        // 1M input × $3 + 1M output × $15 = $18
        (
            "anthropic/claude-sonnet-4.6",
            usage(1_000_000, 1_000_000, 0, 0),
            dec!(18),
        ),
        // 10k×3 + 2k×15 + 50k×0.30 + 20k×3.75 = 30000 + 30000 + 15000 + 75000 = 150000 µ$ = $0.15
        (
            "anthropic/claude-sonnet-4-5",
            usage(10_000, 2_000, 50_000, 20_000),
            dec!(0.15),
        ),
        // the dated snapshot id is the same model: 4000×1 + 500×5 + 8000×0.10 + 0 = 4000 + 2500 + 800 = 7300 µ$
        (
            "anthropic/claude-haiku-4-5-20251001",
            usage(4_000, 500, 8_000, 0),
            dec!(0.0073),
        ),
        // 1000×15 + 1000×75 + 1000×1.5 + 1000×18.75 = 15000 + 75000 + 1500 + 18750 = 110250 µ$
        (
            "anthropic/claude-opus-4.1",
            usage(1_000, 1_000, 1_000, 1_000),
            dec!(0.11025),
        ),
        // 1000×5 + 1000×25 = 30000 µ$
        (
            "anthropic/claude-opus-4-5",
            usage(1_000, 1_000, 0, 0),
            dec!(0.03),
        ),
        // 2000×1.25 + 300×10 + 1000×0.125 = 2500 + 3000 + 125 = 5625 µ$
        ("openai/gpt-5", usage(2_000, 300, 1_000, 0), dec!(0.005625)),
        // 2000×0.25 + 300×2 + 1000×0.025 = 500 + 600 + 25 = 1125 µ$
        (
            "openai/gpt-5-mini",
            usage(2_000, 300, 1_000, 0),
            dec!(0.001125),
        ),
        // 1000×2 + 1000×8 + 1000×0.5 = 10500 µ$
        (
            "openai/gpt-4.1",
            usage(1_000, 1_000, 1_000, 0),
            dec!(0.0105),
        ),
        // 10000×0.15 + 1000×0.6 = 1500 + 600 = 2100 µ$
        (
            "openai/gpt-4o-mini",
            usage(10_000, 1_000, 0, 0),
            dec!(0.0021),
        ),
        // Gemini: 10000×1.25 + 1000×10 + 10000×0.125 = 12500 + 10000 + 1250 = 23750 µ$
        (
            "google/gemini-2.5-pro",
            usage(10_000, 1_000, 10_000, 0),
            dec!(0.02375),
        ),
        // 10000×0.10 + 1000×0.40 + 10000×0.01 = 1000 + 400 + 100 = 1500 µ$
        (
            "google/gemini-2.5-flash-lite",
            usage(10_000, 1_000, 10_000, 0),
            dec!(0.0015),
        ),
        // routed through a gateway prefix: still sonnet 4.6 → 1000×3 = 3000 µ$
        (
            "openrouter/anthropic/claude-sonnet-4.6",
            usage(1_000, 0, 0, 0),
            dec!(0.003),
        ),
        // offline models are free, and known
        (
            "builtin/sma-cross:10:20",
            usage(5_000, 5_000, 0, 0),
            dec!(0),
        ),
        ("builtin/scripted", usage(5_000, 5_000, 0, 0), dec!(0)),
    ];
    for (model, u, expected) in cases {
        let c = estimate_cost(model, &u);
        assert!(c.known, "{model}");
        assert_eq!(c.usd, expected, "{model}");
    }
}

#[test]
fn unknown_models_cost_zero_and_say_so() {
    for model in [
        "google/gemini-2.0-pro",
        "google/gemini-3-pro-preview",
        "openai/gpt-5-nano",
        "local/llama3",
        "claude-3-5-sonnet",
    ] {
        let c = estimate_cost(model, &usage(1_000, 1_000, 0, 0));
        assert_eq!((c.usd, c.known), (dec!(0), false), "{model}");
        assert!(rates_for(model).is_none());
    }
}

#[test]
fn ids_normalise_to_one_name() {
    assert_eq!(
        normalise_model_id("anthropic/claude-sonnet-4.6"),
        "claude-sonnet-4-6"
    );
    assert_eq!(
        normalise_model_id("anthropic/claude-haiku-4-5-20251001"),
        "claude-haiku-4-5"
    );
    assert_eq!(normalise_model_id("OpenAI/GPT-4.1"), "gpt-4-1");
    assert_eq!(normalise_model_id("gpt-5-mini"), "gpt-5-mini");
}
