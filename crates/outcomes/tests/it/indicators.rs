//! The indicators against `tests/fixtures/indicators_reference.csv` and
//! `snapshot_reference.csv` (pandas 2.2.3 + ta 0.11.0, generated once by
//! `tests/fixtures/gen_reference.py` over the fixture bars).

use chrono::Duration;
use outcomes::indicators::{adx, correlation, macd, rsi, volatility_percentile, volume_ratio};
use outcomes::{MacdState, compute_indicators};
use rust_decimal::prelude::ToPrimitive;
use types::Interval;
use types::RegimeTag;

use crate::common::{fixture_bars, reference_rows};

const TOL: f64 = 1e-6;

fn column(name: &str) -> Vec<Option<f64>> {
    let (headers, rows) = reference_rows("indicators_reference.csv");
    let i = headers
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name}"))
        - 1;
    rows.into_iter().map(|(_, v)| v[i]).collect()
}

fn f(values: impl Iterator<Item = rust_decimal::Decimal>) -> Vec<f64> {
    values.map(|d| d.to_f64().expect("f64")).collect()
}

/// Every point both define agrees within `TOL`, and both start at the same point.
fn assert_series(name: &str, ours: &[Option<f64>], reference: &[Option<f64>]) {
    assert_eq!(ours.len(), reference.len(), "{name}: lengths");
    let first = |s: &[Option<f64>]| s.iter().position(Option::is_some);
    assert_eq!(first(ours), first(reference), "{name}: first defined point");
    let mut compared = 0;
    for (i, (a, b)) in ours.iter().zip(reference).enumerate() {
        if let (Some(a), Some(b)) = (a, b) {
            assert!(
                (a - b).abs() <= TOL * b.abs().max(1.0),
                "{name} at bar {i}: ours {a}, reference {b}"
            );
            compared += 1;
        }
    }
    assert!(compared > 400, "{name}: only {compared} points compared");
}

#[test]
fn rsi_matches_ta() {
    let (bars, _) = fixture_bars();
    let closes = f(bars.iter().map(|b| b.close));
    assert_series("rsi14", &rsi(&closes, 14), &column("rsi14"));
}

#[test]
fn macd_matches_ta() {
    let (bars, _) = fixture_bars();
    let closes = f(bars.iter().map(|b| b.close));
    let (line, signal) = macd(&closes, 12, 26, 9);
    assert_series("macd", &line, &column("macd"));
    assert_series("macd_signal", &signal, &column("macd_signal"));
}

#[test]
fn adx_matches_pandas_wilder() {
    let (bars, _) = fixture_bars();
    let (h, l, c) = (
        f(bars.iter().map(|b| b.high)),
        f(bars.iter().map(|b| b.low)),
        f(bars.iter().map(|b| b.close)),
    );
    assert_series("adx14", &adx(&h, &l, &c, 14), &column("adx14"));
}

/// The latest-value indicators, at every prefix of the fixture.
#[test]
fn rolling_statistics_match_pandas() {
    let (bars, reference) = fixture_bars();
    let closes = f(bars.iter().map(|b| b.close));
    let volumes = f(bars.iter().map(|b| b.volume));
    let ref_closes = f(reference.iter().map(|b| b.close));
    let returns = |c: &[f64]| c.windows(2).map(|w| (w[1] / w[0]).ln()).collect::<Vec<_>>();
    let (ra, rb) = (returns(&closes), returns(&ref_closes));
    let per_prefix =
        |g: &dyn Fn(usize) -> Option<f64>| (1..=closes.len()).map(g).collect::<Vec<_>>();
    assert_series(
        "vol_pct",
        &per_prefix(&|k| volatility_percentile(&closes[..k], 20, 100)),
        &column("vol_pct"),
    );
    assert_series(
        "volume_ratio",
        &per_prefix(&|k| volume_ratio(&volumes[..k], 20)),
        &column("volume_ratio"),
    );
    assert_series(
        "corr50",
        &per_prefix(&|k| correlation(&ra[..k - 1], &rb[..k - 1], 50)),
        &column("corr50"),
    );
}

/// The snapshot: RSI 1h on the bars, RSI 4h on pandas' resampling (complete buckets only), the
/// rest as the series' values at the cut; nothing after the tick changes anything.
#[test]
fn snapshot_at_cut_points_matches_reference() {
    let (bars, reference) = fixture_bars();
    let (_, rows) = reference_rows("snapshot_reference.csv");
    let macd_line = column("macd");
    let macd_signal = column("macd_signal");
    for (k, v) in rows {
        let k: usize = k.parse().expect("cut point");
        let now = bars[k - 1].time + Duration::hours(1);
        // All 600 bars are passed: the ones closing after `now` must be ignored.
        let snap = compute_indicators(&bars, Interval::H1, now, Some(&reference));
        let close = |a: Option<f64>, b: Option<f64>, what: &str| {
            let (a, b) = (a.expect(what), b.expect(what));
            assert!(
                (a - b).abs() <= TOL * b.abs().max(1.0),
                "{what} at {k}: {a} vs {b}"
            );
        };
        close(snap.rsi_1h, v[0], "rsi_1h");
        close(snap.rsi_4h, v[1], "rsi_4h");
        assert_eq!(snap.rsi_15m, None, "no 15m RSI from hourly bars");
        close(snap.trend_strength, column("adx14")[k - 1], "adx");
        close(
            snap.volatility_percentile,
            column("vol_pct")[k - 1],
            "vol_pct",
        );
        close(
            snap.volume_ratio,
            column("volume_ratio")[k - 1],
            "volume_ratio",
        );
        close(snap.btc_correlation, column("corr50")[k - 1], "correlation");
        let (m, s) = (
            macd_line[k - 1].expect("macd"),
            macd_signal[k - 1].expect("signal"),
        );
        let expected = if m > s && m > 0.0 {
            MacdState::Bullish
        } else if m < s && m < 0.0 {
            MacdState::Bearish
        } else {
            MacdState::Neutral
        };
        assert_eq!(snap.macd_signal, Some(expected), "macd state at {k}");
        assert_eq!(snap.market_condition, types::classify_regime(&bars[..k]));
        // Without the reference's bars there is no correlation.
        let alone = compute_indicators(&bars[..k], Interval::H1, now, None);
        assert_eq!(alone.btc_correlation, None);
        assert_eq!(
            alone.rsi_4h, snap.rsi_4h,
            "bars after the tick changed the snapshot"
        );
    }
}

#[test]
fn too_few_bars_give_nulls_not_panics() {
    let (bars, _) = fixture_bars();
    let now = bars[4].time + Duration::hours(1);
    let snap = compute_indicators(&bars[..5], Interval::H1, now, Some(&[]));
    assert_eq!(snap.rsi_1h, None);
    assert_eq!(snap.rsi_4h, None);
    assert_eq!(snap.macd_signal, None);
    assert_eq!(snap.trend_strength, None);
    assert_eq!(snap.volatility_percentile, None);
    assert_eq!(snap.volume_ratio, None);
    assert_eq!(snap.btc_correlation, None);
    assert_eq!(snap.market_condition, RegimeTag::Unknown);
    let empty = compute_indicators(&[], Interval::H1, now, None);
    assert_eq!(empty.rsi_1h, None);
}

/// A market condition the caller classified is recorded as given; every other indicator is
/// the same as `compute_indicators` computes it.
#[test]
fn a_given_market_condition_replaces_only_the_regime() {
    let (bars, reference) = fixture_bars();
    let now = bars[299].time + Duration::hours(1);
    let own = compute_indicators(&bars, Interval::H1, now, Some(&reference));
    for given in [RegimeTag::Volatile, RegimeTag::Ranging, RegimeTag::Unknown] {
        let with = outcomes::compute_indicators_with_regime(
            &bars,
            Interval::H1,
            now,
            Some(&reference),
            given,
        );
        assert_eq!(with.market_condition, given);
        assert_eq!(
            outcomes::Indicators {
                market_condition: own.market_condition,
                ..with
            },
            own
        );
    }
}
