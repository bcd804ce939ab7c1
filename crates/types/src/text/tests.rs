use chrono::{Duration, TimeZone, Utc};
use proptest::strategy::Strategy as _;
use rust_decimal_macros::dec;

use super::*;

/// The one money style, written out: zero, negative, thousands, rounding half-way, large.
#[test]
fn money_style_table() {
    for (value, want, signed) in [
        (dec!(0), "$0.00", "$0.00"),
        (dec!(-0.004), "$0.00", "$0.00"),
        (dec!(0.004), "$0.00", "$0.00"),
        (dec!(42.5), "$42.50", "+$42.50"),
        (dec!(250), "$250.00", "+$250.00"),
        (dec!(999.995), "$1,000.00", "+$1,000.00"),
        (dec!(6000), "$6,000.00", "+$6,000.00"),
        (dec!(6000.5), "$6,000.50", "+$6,000.50"),
        (dec!(5999.9996), "$6,000.00", "+$6,000.00"),
        (dec!(12500.4), "$12,500.40", "+$12,500.40"),
        (dec!(-9.7), "-$9.70", "-$9.70"),
        (dec!(-1234.5), "-$1,234.50", "-$1,234.50"),
        (dec!(1.005), "$1.01", "+$1.01"),
        (dec!(-12.345), "-$12.35", "-$12.35"),
        (dec!(1234567.891), "$1,234,567.89", "+$1,234,567.89"),
        (
            dec!(-98765432109876.545),
            "-$98,765,432,109,876.55",
            "-$98,765,432,109,876.55",
        ),
        // Past 64 bits: rounded through `Decimal`.
        (
            dec!(123456789012345678901.005),
            "$123,456,789,012,345,678,901.01",
            "+$123,456,789,012,345,678,901.01",
        ),
    ] {
        assert_eq!(money(value), want, "{value}");
        assert_eq!(signed_money(value), signed, "{value}");
        let mut out = String::from("x");
        push_money(&mut out, value);
        assert_eq!(&out[1..], want);
    }
}

/// Costs: money's style, the sub-cent digits kept to six decimals.
#[test]
fn cost_style_table() {
    for (value, want) in [
        (dec!(0), "$0.00"),
        (dec!(2), "$2.00"),
        (dec!(0.15), "$0.15"),
        (dec!(0.000336), "$0.000336"),
        (dec!(0.01008), "$0.01008"),
        (dec!(0.0000004), "$0.00"),
        (dec!(0.00000051), "$0.000001"),
        (dec!(1234.5), "$1,234.50"),
        (dec!(-0.0042), "-$0.0042"),
    ] {
        assert_eq!(cost(value), want, "{value}");
    }
}

/// Holding times for a person: two units from an hour on.
#[test]
fn span_style_table() {
    for (minutes, want) in [
        (-5, "0m"),
        (0, "0m"),
        (45, "45m"),
        (60, "1h 0m"),
        (150, "2h 30m"),
        (1380, "23h 0m"),
        (1439, "23h 59m"),
        (1440, "1d 0h"),
        (8880, "6d 4h"),
    ] {
        assert_eq!(span(minutes), want, "{minutes}");
    }
}

#[test]
fn prices_keep_their_scale() {
    assert_eq!(price(dec!(65200)), "65,200");
    assert_eq!(price(dec!(65940.00)), "65,940");
    assert_eq!(price(dec!(3410.456)), "3,410.46");
    assert_eq!(price(dec!(1.07219)), "1.07219");
    assert_eq!(price(dec!(1.072194)), "1.07219");
    assert_eq!(price(dec!(0.078325)), "0.078325");
    assert_eq!(price(dec!(0.00001234567)), "0.0000123457");
    assert_eq!(price(dec!(1234567.89)), "1,234,568");
    assert_eq!(price(dec!(0)), "0");
}

#[test]
fn price_usd_num_and_pct_keep_significant_digits() {
    assert_eq!(price_usd(dec!(60000.00)), "$60,000");
    assert_eq!(price_usd(dec!(0.00001234)), "$0.00001234");
    assert_eq!(price_usd(dec!(-1500.5)), "-$1,500.5");
    assert_eq!(num(dec!(0.10)), "0.1");
    assert_eq!(num(dec!(1250)), "1,250");
    assert_eq!(pct(dec!(60.000)), "60%");
    assert_eq!(pct(dec!(33.33333)), "33.33%");
}

#[test]
fn shares_scores_and_volumes() {
    // 28.40 / 250 = 0.1136 → 11.4 %
    assert_eq!(percent_of(dec!(28.40), dec!(250)).as_deref(), Some("11.4%"));
    assert_eq!(percent_of(dec!(-9.7), dec!(1800)).as_deref(), Some("-0.5%"));
    assert_eq!(percent_of(dec!(1), dec!(0)), None);
    assert_eq!(grouped_fixed(dec!(1234.56), 1), "1,234.6");
    assert_eq!(fixed(dec!(1234.5), 2), "1234.50");
    for (value, want) in [
        (dec!(0.6), "+0.60"),
        (dec!(-0.3), "-0.30"),
        (dec!(-0.004), "0.00"),
    ] {
        let mut out = String::new();
        push_signed_fixed(&mut out, value, 2);
        assert_eq!(out, want);
    }
    assert_eq!(volume(dec!(1234.567)), "1235");
    assert_eq!(volume(dec!(12.345)), "12.35");
    assert_eq!(volume(dec!(0.012345)), "0.0123");
}

#[test]
fn times_and_durations() {
    let t = Utc.with_ymd_and_hms(2024, 6, 5, 10, 15, 7).unwrap();
    let mut out = String::new();
    push_timestamp(&mut out, t);
    out.push(' ');
    push_date_minute(&mut out, t);
    out.push(' ');
    push_short_time(&mut out, t);
    out.push(' ');
    push_date(&mut out, t);
    out.push(' ');
    push_clock(&mut out, t);
    assert_eq!(
        out,
        "2024-06-05T10:15:07Z 2024-06-05T10:15 06-05T10:15 2024-06-05 10:15"
    );
    assert_eq!(duration_minutes(45), "45m");
    assert_eq!(duration_minutes(1439), "1439m");
    assert_eq!(duration_minutes(1440 + 185), "1d 3h");
    for (minutes, want) in [
        (-5, "0m"),
        (45, "45m"),
        (360, "6h"),
        (150, "2h30m"),
        (65, "1h05m"),
    ] {
        let mut out = String::new();
        push_duration(&mut out, Duration::minutes(minutes));
        assert_eq!(out, want);
    }
}

#[test]
fn quotes_escape() {
    assert_eq!(
        quoted("say \"hi\"\nthen \\ go\u{7}"),
        r#""say \"hi\"\nthen \\ go\u{7}""#
    );
}

proptest::proptest! {
    /// `push_rfc3339` writes what chrono writes, for every format, any second and nanosecond
    /// from before year 0 to after 9999, leap seconds included.
    #[test]
    fn rfc3339_is_chronos(
        (secs, nanos) in proptest::prop_oneof![
            (-62_167_219_200i64..253_402_300_800, 0u32..1_000_000_000),
            (-100_000_000_000i64..100_000_000_000, 0u32..1_000_000_000),
            (-62_167_219_200i64..253_402_300_800).prop_map(|s| (s, 0)),
            // Leap seconds (valid only at :59).
            (0i64..4_000_000_000, 1_000_000_000u32..2_000_000_000)
                .prop_map(|(s, n)| (s - s.rem_euclid(60) + 59, n)),
        ],
        format in proptest::sample::select(vec![
            chrono::SecondsFormat::Secs,
            chrono::SecondsFormat::Millis,
            chrono::SecondsFormat::Micros,
            chrono::SecondsFormat::Nanos,
            chrono::SecondsFormat::AutoSi,
        ]),
    ) {
        let t = chrono::DateTime::from_timestamp(secs, nanos).expect("representable");
        let mut out = String::from("x");
        push_rfc3339(&mut out, t, format);
        proptest::prop_assert_eq!(out, format!("x{}", t.to_rfc3339_opts(format, true)));
    }
}
