//! `propose_order` on generated arguments: never a panic; whatever it records obeys the rules.

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use skill_schema::ToolSpec;
use tools::{
    Preloaded, Registry, RunMode, ToolContext, ToolError, build_tools, proposal_from_result,
};
use types::OrderAction;

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1.0e9f64..1.0e9).prop_map(|f| json!(f)),
        "[a-zA-Z_ \n]{0,300}".prop_map(Value::from),
        prop::sample::select(vec![
            "open_long",
            "open_short",
            "close",
            "reduce",
            "no_op",
            "BTC",
            "ETH"
        ])
        .prop_map(Value::from),
    ]
}

fn args() -> impl Strategy<Value = Value> {
    prop::collection::vec(
        (
            prop::sample::select(vec![
                "action",
                "symbol",
                "size_usd",
                "leverage",
                "reason",
                "confidence",
                "stop",
                "target",
                "extra",
            ]),
            value(),
        ),
        0..9,
    )
    .prop_map(|kv| {
        Value::Object(
            kv.into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect::<Map<_, _>>(),
        )
    })
}

/// The built-ins of a trading context over BTC and ETH, without data.
fn trading_registry() -> Registry {
    let d = Arc::new(Preloaded::new());
    let now = Utc.with_ymd_and_hms(2026, 6, 5, 12, 0, 0).unwrap();
    let ctx = ToolContext::new(
        now,
        RunMode::Trade,
        vec!["BTC".into(), "ETH".into()],
        d.clone(),
        d,
    );
    build_tools(&ToolSpec::default(), &ctx).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn propose_order_never_panics_and_records_only_valid_proposals(args in args()) {
        let reg = trading_registry();
        match reg.call("propose_order", args) {
            Ok(result) => {
                let p = proposal_from_result(&result).unwrap();
                prop_assert!(p.symbol == "BTC" || p.symbol == "ETH");
                let n = p.reason.chars().count();
                prop_assert!((1..=tools::MAX_REASON_CHARS).contains(&n));
                prop_assert!(!p.reason.contains('\n'));
                match p.action {
                    OrderAction::OpenLong | OrderAction::OpenShort | OrderAction::Reduce => {
                        prop_assert!(p.size_usd.is_some_and(|s| s > rust_decimal::Decimal::ZERO));
                    }
                    OrderAction::Close | OrderAction::NoOp => prop_assert!(p.size_usd.is_none()),
                }
            }
            Err(e) => prop_assert!(matches!(e, ToolError::InvalidArguments { .. }), "{e:?}"),
        }
    }
}

/// Text made of words and every kind of whitespace `char::is_whitespace` knows (ASCII and not),
/// plus look-alikes that are not whitespace.
fn messy_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a", "Zé", "→", "x1", " ", "  ", "\t", "\n", "\r\n", "\r", "\u{0B}", "\u{0C}",
            "\u{85}", "\u{A0}", "\u{1680}", "\u{2003}", "\u{2028}", "\u{2029}", "\u{202F}",
            "\u{3000}", "\u{1C}", "\u{200B}", "\u{FEFF}", "\"",
        ]),
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// `one_line` copies text that is already on one line instead of re-joining it: the result
    /// is byte for byte the plain split-and-join.
    #[test]
    fn one_line_is_split_whitespace_joined_by_one_space(text in messy_text()) {
        let reference = text.split_whitespace().collect::<Vec<_>>().join(" ");
        prop_assert_eq!(tools::one_line(&text), reference);
    }
}

/// `checked_mean` as first written: `Decimal`s added one by one from zero.
fn mean_by_decimals(values: &[rust_decimal::Decimal]) -> Option<rust_decimal::Decimal> {
    let mut sum = rust_decimal::Decimal::ZERO;
    for v in values {
        sum = sum.checked_add(*v)?;
    }
    let n = u32::try_from(values.len()).ok().filter(|&n| n > 0)?;
    sum.checked_div(rust_decimal::Decimal::from(n))
}

fn decimal() -> impl Strategy<Value = rust_decimal::Decimal> {
    prop_oneof![
        // Closes of one table: one scale, positive.
        (1_i64..10_000_000).prop_map(|m| rust_decimal::Decimal::new(m, 5)),
        // Anything: any sign and scale, up to the 96-bit mantissa's edge.
        (any::<i128>(), 0_u32..=28).prop_map(|(m, scale)| {
            rust_decimal::Decimal::from_i128_with_scale(m % (1_i128 << 96), scale)
        }),
        Just(rust_decimal::Decimal::MAX),
    ]
}

proptest! {
    /// The mean summed as integers where it can be is the mean of `Decimal` additions, value
    /// and scale, bit for bit (an SMA's value is shown in the prompt with its scale).
    #[test]
    fn the_mean_is_the_decimal_additions_mean(
        values in prop::collection::vec(decimal(), 0..25),
    ) {
        let got = tools::checked_mean(values.iter().copied());
        let want = mean_by_decimals(&values);
        prop_assert_eq!(got.map(|d| d.serialize()), want.map(|d| d.serialize()));
    }
}

/// Arguments `propose_order` mostly accepts: every action, a symbol it trades or not, sizes,
/// leverages and prices as JSON numbers of any scale or absent or `null`, reasons with quotes,
/// control characters and non-ASCII text.
fn order_args() -> impl Strategy<Value = Value> {
    let number = || {
        prop_oneof![
            Just(Value::Null),
            (0_u64..10_000_000_000, 0_u32..9).prop_map(|(m, scale)| {
                let d = rust_decimal::Decimal::from_i128_with_scale(i128::from(m), scale);
                serde_json::from_str(&d.to_string()).unwrap()
            }),
            (-1.0e6_f64..1.0e12).prop_map(|f| json!(f)),
        ]
    };
    (
        prop::sample::select(vec!["open_long", "open_short", "close", "reduce", "no_op"]),
        prop::sample::select(vec!["BTC", "ETH", "SOL"]),
        number(),
        number(),
        prop_oneof![
            "[ -~]{1,300}",
            messy_text(),
            "\"[a\\\\b\u{1}\u{7f}é€]{0,40}\""
        ],
        prop_oneof![Just(Value::Null), (0_u64..120).prop_map(Value::from)],
        number(),
        number(),
    )
        .prop_map(
            |(action, symbol, size, leverage, reason, confidence, stop, target)| {
                json!({
                    "action": action, "symbol": symbol, "size_usd": size, "leverage": leverage,
                    "reason": reason, "confidence": confidence, "stop": stop, "target": target,
                })
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// The model loop's path (`Registry::call_output`: `propose_order`'s text written straight
    /// from the proposal) gives the text and the proposal of the value path (`Registry::call`,
    /// the value's text, `proposal_from_result`), byte for byte, and the same refusals.
    #[test]
    fn propose_orders_text_is_its_values_text(args in order_args()) {
        let reg = trading_registry();
        let by_value = reg.call("propose_order", args.clone());
        let output = crate::tools::block_on(reg.call_output("propose_order", args));
        match (by_value, output) {
            (Ok(value), Ok(output)) => {
                prop_assert_eq!(output.result.as_str(), value.to_string());
                prop_assert!(output.proposal.is_some());
                prop_assert_eq!(output.proposal, proposal_from_result(&value));
            }
            (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
            (a, b) => prop_assert!(false, "value path {a:?}, text path {b:?}"),
        }
    }
}

/// `propose_order` keeps the last text it wrote and serves it again only for the same record:
/// a repeated order gets that text, another order (another size, another reason) its own, and
/// the first order after it its own again. Each text is the value path's, byte for byte.
/// (Decimals equal by value at another scale are another record: `ProposedAction::same_text`.)
#[test]
fn a_repeated_orders_text_is_served_only_for_the_same_record() {
    let reg = trading_registry();
    let order = |size: Value, reason: &str| {
        json!({
            "action": "open_long", "symbol": "BTC", "size_usd": size, "leverage": 1.5,
            "reason": reason, "confidence": 60, "stop": null, "target": null,
        })
    };
    let calls = [
        order(json!(100), "cross up"),
        order(json!(100), "cross up"),
        order(json!(100.25), "cross up"),
        order(json!(100.25), "cross up"),
        order(json!(100), "cross up"),
        order(json!(100), "cross up again"),
        json!({"action": "no_op", "symbol": "BTC", "reason": "no cross"}),
        json!({"action": "no_op", "symbol": "BTC", "reason": "no cross"}),
    ];
    let mut texts = Vec::new();
    for args in calls {
        let value = reg
            .call("propose_order", args.clone())
            .expect("a valid order");
        let output =
            crate::tools::block_on(reg.call_output("propose_order", args)).expect("a valid order");
        assert_eq!(output.result.as_str(), value.to_string());
        texts.push(output.result.as_str().to_owned());
    }
    assert!(texts[0].contains("\"size_usd\":\"100\""), "{}", texts[0]);
    assert!(texts[2].contains("\"size_usd\":\"100.25\""), "{}", texts[2]);
    assert_ne!(texts[1], texts[2]);
    assert_ne!(texts[3], texts[4]);
    assert_ne!(texts[4], texts[5]);
}

/// `Preloaded::insert_bars` keeps one bar per open time, sorted, the later insert winning,
/// whether the bars come sorted (kept as given) or not, into an empty series or a held one.
mod insert_bars {
    use std::collections::BTreeMap;

    use chrono::Duration;
    use proptest::prelude::*;
    use rust_decimal::Decimal;
    use tools::Preloaded;
    use types::{Bar, Interval};

    fn bar(hour: i64, close: i64) -> Bar {
        let price = Decimal::from(close);
        Bar {
            time: chrono::TimeZone::with_ymd_and_hms(&chrono::Utc, 2024, 1, 1, 0, 0, 0).unwrap()
                + Duration::hours(hour),
            open: price,
            high: price,
            low: price,
            close: price,
            volume: Decimal::ONE,
        }
    }

    fn bars() -> impl Strategy<Value = Vec<Bar>> {
        prop_oneof![
            // Any order, repeated times.
            prop::collection::vec((0_i64..40, 1_i64..1000), 0..30)
                .prop_map(|v| v.into_iter().map(|(h, c)| bar(h, c)).collect()),
            // Strictly increasing: the fast path.
            prop::collection::btree_map(0_i64..40, 1_i64..1000, 0..30)
                .prop_map(|m| m.into_iter().map(|(h, c)| bar(h, c)).collect()),
        ]
    }

    proptest! {
        #[test]
        fn the_series_is_the_merge_by_time(first in bars(), second in bars()) {
            let mut data = Preloaded::new();
            data.insert_bars("X", Interval::H1, first.clone());
            let mut expected: BTreeMap<_, Bar> = first.iter().map(|b| (b.time, b.clone())).collect();
            prop_assert_eq!(
                data.all_bars("X", Interval::H1),
                &expected.values().cloned().collect::<Vec<_>>()[..]
            );
            data.insert_bars("X", Interval::H1, second.clone());
            expected.extend(second.into_iter().map(|b| (b.time, b)));
            prop_assert_eq!(
                data.all_bars("X", Interval::H1),
                &expected.into_values().collect::<Vec<_>>()[..]
            );
        }
    }
}
