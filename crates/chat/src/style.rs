//! How the chat tools print money, prices, quantities and percentages to the model: the
//! prompt's styles of [`types::text`] (`$1,234.50`, `+$28.40`, `65,200`, `1.25%`), never a
//! decimal's full scale or a float. Each is a `serialize_with` function for a field of a tool's
//! answer, with a [`Value`] twin for answers built with `json!`.

use rust_decimal::Decimal;
use serde::Serializer;
use serde_json::Value;
use types::text;

/// Decimals a ratio (a Sharpe ratio) is printed with.
pub(crate) const RATIO_DECIMALS: u32 = 2;

/// An amount: `$1,234.50`.
pub(crate) fn money_text(d: Decimal) -> String {
    text::money(d)
}

/// A fraction as a percentage with two decimals at most: `0.0125` → `1.25%`.
pub(crate) fn percent_text(fraction: Decimal) -> String {
    text::pct(fraction.saturating_mul(Decimal::ONE_HUNDRED))
}

/// A ratio with [`RATIO_DECIMALS`] decimals: `0.42`, `-1.30`.
pub(crate) fn ratio_text(d: Decimal) -> String {
    text::fixed(d, RATIO_DECIMALS)
}

/// Whole minutes of a holding time: `45m`, `1d 3h`.
pub(crate) fn minutes_text(d: Decimal) -> String {
    let minutes = d.round().try_into().unwrap_or(i64::MAX);
    text::duration_minutes(minutes)
}

/// [`money_text`] as a JSON string.
pub(crate) fn money_value(d: Decimal) -> Value {
    Value::String(money_text(d))
}

/// [`text::signed_money`] as a JSON string (`null` for `None`).
pub(crate) fn signed_money_value(d: Option<Decimal>) -> Value {
    d.map_or(Value::Null, |d| Value::String(text::signed_money(d)))
}

/// [`text::price`] as a JSON string (`null` for `None`).
pub(crate) fn price_value(d: Option<Decimal>) -> Value {
    d.map_or(Value::Null, |d| Value::String(text::price(d)))
}

/// [`text::num`] as a JSON string.
pub(crate) fn num_value(d: Decimal) -> Value {
    Value::String(text::num(d))
}

/// [`percent_text`] as a JSON string (`null` for `None`).
pub(crate) fn percent_value(fraction: Option<Decimal>) -> Value {
    fraction.map_or(Value::Null, |f| Value::String(percent_text(f)))
}

/// Optional money as a JSON string or `null`.
pub(crate) fn opt_money_value(d: Option<Decimal>) -> Value {
    d.map_or(Value::Null, money_value)
}

pub(crate) fn money<S: Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&money_text(*d))
}

pub(crate) fn opt_money<S: Serializer>(d: &Option<Decimal>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_str(&money_text(*d)),
        None => s.serialize_none(),
    }
}

pub(crate) fn signed_money<S: Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&text::signed_money(*d))
}

pub(crate) fn opt_signed_money<S: Serializer>(
    d: &Option<Decimal>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_str(&text::signed_money(*d)),
        None => s.serialize_none(),
    }
}

pub(crate) fn price<S: Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&text::price(*d))
}

pub(crate) fn opt_price<S: Serializer>(d: &Option<Decimal>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_str(&text::price(*d)),
        None => s.serialize_none(),
    }
}

pub(crate) fn num<S: Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&text::num(*d))
}

pub(crate) fn opt_percent<S: Serializer>(d: &Option<Decimal>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_str(&percent_text(*d)),
        None => s.serialize_none(),
    }
}

pub(crate) fn opt_ratio<S: Serializer>(d: &Option<Decimal>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_str(&ratio_text(*d)),
        None => s.serialize_none(),
    }
}

pub(crate) fn opt_minutes<S: Serializer>(d: &Option<Decimal>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_str(&minutes_text(*d)),
        None => s.serialize_none(),
    }
}
