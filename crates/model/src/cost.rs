//! Cost: the one rate table, [`rates_for`] and [`estimate_cost`] (the formula is
//! [`Rates::cost`]).
//!
//! Rates are dollars per million tokens for uncached input, output, cache reads and cache
//! writes (Anthropic's 5-minute cache write; OpenAI has no write charge, so its cache-write rate
//! is the input rate, which only matters if a provider ever reports such tokens). Cost is exact
//! decimal arithmetic ([`Rates::cost`], normalised):
//!
//! `cost = (input·r_in + output·r_out + cache_read·r_cr + cache_write·r_cw) / 1,000,000`
//!
//! Model ids are matched after normalisation: everything up to the last `/` is dropped
//! (`anthropic/`, `openrouter/anthropic/`), the name is lowercased, `.` becomes `-`
//! (`claude-sonnet-4.6` = `claude-sonnet-4-6`) and a trailing `-YYYYMMDD` snapshot date is
//! dropped (`claude-haiku-4-5-20251001` = `claude-haiku-4-5`). `builtin/*` models cost 0 and are
//! known. Anything else costs 0 and is reported as unknown.

use rust_decimal::Decimal;
use serde::Serialize;

use types::Usage;

use crate::model::Rates;

/// `(normalised name, [input, output, cache read, cache write])` in thousandths of a dollar per
/// million tokens.
const TABLE: [(&str, [i64; 4]); 17] = [
    // Anthropic
    ("claude-sonnet-4", [3_000, 15_000, 300, 3_750]),
    ("claude-sonnet-4-0", [3_000, 15_000, 300, 3_750]),
    ("claude-sonnet-4-5", [3_000, 15_000, 300, 3_750]),
    ("claude-sonnet-4-6", [3_000, 15_000, 300, 3_750]),
    ("claude-haiku-4-5", [1_000, 5_000, 100, 1_250]),
    ("claude-opus-4", [15_000, 75_000, 1_500, 18_750]),
    ("claude-opus-4-0", [15_000, 75_000, 1_500, 18_750]),
    ("claude-opus-4-1", [15_000, 75_000, 1_500, 18_750]),
    ("claude-opus-4-5", [5_000, 25_000, 500, 6_250]),
    // OpenAI (cache write = input rate: OpenAI does not charge writes)
    ("gpt-5", [1_250, 10_000, 125, 1_250]),
    ("gpt-5-mini", [250, 2_000, 25, 250]),
    ("gpt-4-1", [2_000, 8_000, 500, 2_000]),
    ("gpt-4o-mini", [150, 600, 75, 150]),
    ("gpt-4o", [2_500, 10_000, 1_250, 2_500]),
    // Google Gemini, standard paid tier for prompts up to 200k tokens (gemini-2.5-pro costs
    // more above; a tick's prompt is far below), from Google's Gemini API pricing page
    // (ai.google.dev/gemini-api/docs/pricing, as of 2026-01): cache reads at 10 % of input;
    // implicit caching charges no write, so the write rate is the input rate (as OpenAI).
    ("gemini-2-5-pro", [1_250, 10_000, 125, 1_250]),
    ("gemini-2-5-flash", [300, 2_500, 30, 300]),
    ("gemini-2-5-flash-lite", [100, 400, 10, 100]),
];

/// The cost of a tick's usage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CostEstimate {
    /// The cost in USD, exact and normalised (see [`Rates::cost`]).
    pub usd: Decimal,
    /// False when the model is not in the table: `usd` is then 0, not a real figure.
    pub known: bool,
}

/// The normalised name a model id is looked up by (see the module docs).
#[must_use]
pub fn normalise_model_id(model_id: &str) -> String {
    let name = model_id.rsplit('/').next().unwrap_or(model_id);
    let mut name = name.to_ascii_lowercase().replace('.', "-");
    if let Some((head, tail)) = name.rsplit_once('-')
        && tail.len() == 8
        && tail.bytes().all(|b| b.is_ascii_digit())
    {
        name = head.to_owned();
    }
    name
}

/// The rates of `model_id`, `None` when it is not in the table. `builtin/*` models have zero
/// rates.
#[must_use]
pub fn rates_for(model_id: &str) -> Option<Rates> {
    if model_id.starts_with("builtin/") {
        return Some(Rates::ZERO);
    }
    let name = normalise_model_id(model_id);
    TABLE.iter().find(|(n, _)| *n == name).map(|(_, r)| Rates {
        input: Decimal::new(r[0], 3),
        output: Decimal::new(r[1], 3),
        cache_read: Decimal::new(r[2], 3),
        cache_write: Decimal::new(r[3], 3),
    })
}

/// The dollar cost of `usage` on `model_id`; unknown models cost 0 with `known: false`.
#[must_use]
pub fn estimate_cost(model_id: &str, usage: &Usage) -> CostEstimate {
    let Some(r) = rates_for(model_id) else {
        return CostEstimate {
            usd: Decimal::ZERO,
            known: false,
        };
    };
    CostEstimate {
        usd: r.cost(usage),
        known: true,
    }
}
