//! The loaders on the real example data and on broken files.

use std::path::{Path, PathBuf};

use chrono::{TimeZone, Utc};
use market_data::{DataError, FillsFormat, detect_interval, load_bars, load_fills, resample};
use rust_decimal_macros::dec;
use types::{Interval, OrderSide};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn eurusd_hourly_bars_load_exactly() {
    let bars = load_bars(&repo("examples/data/EURUSD.csv")).unwrap();
    assert_eq!(bars.len(), 5000);
    let first = &bars[0];
    // 2017-04-19 09:00:00,1.0716,1.0722,1.07083,1.07219,1413
    assert_eq!(
        first.time,
        Utc.with_ymd_and_hms(2017, 4, 19, 9, 0, 0).unwrap()
    );
    assert_eq!(first.open, dec!(1.0716));
    assert_eq!(first.low, dec!(1.07083));
    assert_eq!(first.close, dec!(1.07219));
    assert_eq!(first.volume, dec!(1413));
    assert_eq!(
        bars[4999].time,
        Utc.with_ymd_and_hms(2018, 2, 7, 15, 0, 0).unwrap()
    );
    assert_eq!(detect_interval(&bars), Some(Interval::H1));
}

#[test]
fn goog_daily_bars_load_with_date_only_timestamps() {
    let bars = load_bars(&repo("examples/data/GOOG.csv")).unwrap();
    assert_eq!(bars.len(), 2148);
    // 2004-08-19,100,104.06,95.96,100.34,22351900
    assert_eq!(
        bars[0].time,
        Utc.with_ymd_and_hms(2004, 8, 19, 0, 0, 0).unwrap()
    );
    assert_eq!(bars[0].close, dec!(100.34));
    assert_eq!(detect_interval(&bars), Some(Interval::D1));
}

#[test]
fn hyperliquid_candles_load() {
    let bars = load_bars(&repo(
        "crates/hyperliquid/tests/fixtures/candleSnapshot.json",
    ))
    .unwrap();
    assert_eq!(bars.len(), 24);
    // first candle: t 1684699200000, o 0.001601, h 0.001616, l 0.001601, c 0.001604
    assert_eq!(
        bars[0].time,
        Utc.timestamp_millis_opt(1_684_699_200_000).unwrap()
    );
    assert_eq!(bars[0].close, dec!(0.001604));
    assert_eq!(detect_interval(&bars), Some(Interval::H1));
}

#[test]
fn resampling_hourly_into_four_hours() {
    let bars = load_bars(&repo("examples/data/EURUSD.csv")).unwrap();
    let h4 = resample(&bars[..7], Interval::H4);
    // 09:00..11:00 fall in the 08:00 bucket, 12:00..15:00 in the 12:00 bucket.
    assert_eq!(h4.len(), 2);
    assert_eq!(
        h4[0].time,
        Utc.with_ymd_and_hms(2017, 4, 19, 8, 0, 0).unwrap()
    );
    assert_eq!(h4[0].open, bars[0].open);
    assert_eq!(h4[0].close, bars[2].close);
    assert_eq!(h4[0].high, bars[..3].iter().map(|b| b.high).max().unwrap());
    assert_eq!(h4[0].low, bars[..3].iter().map(|b| b.low).min().unwrap());
    assert_eq!(
        h4[0].volume,
        bars[0].volume + bars[1].volume + bars[2].volume
    );
    assert_eq!(
        h4[1].time,
        Utc.with_ymd_and_hms(2017, 4, 19, 12, 0, 0).unwrap()
    );
    assert_eq!(h4[1].close, bars[6].close);
}

#[test]
fn broken_bar_files_name_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let header = ",Open,High,Low,Close,Volume\n";
    let cases = [
        (
            "bad-number.csv",
            format!("{header}2020-01-01,1,2,0.5,1.5,10\n2020-01-02,1,2,x,1.5,10\n"),
            ":3: Low: not a number: \"x\"",
        ),
        (
            "out-of-order.csv",
            format!("{header}2020-01-02,1,2,0.5,1.5,10\n2020-01-01,1,2,0.5,1.5,10\n"),
            ":3: bars must be in increasing time order",
        ),
        (
            "high-low.csv",
            format!("{header}2020-01-01,1,0.5,2,1.5,10\n"),
            ":2: Low 2 is above High 0.5",
        ),
        (
            "bad-time.csv",
            format!("{header}yesterday,1,2,0.5,1.5,10\n"),
            ":2: timestamp \"yesterday\" is not a date",
        ),
        (
            "year-10000.csv",
            format!("{header}2020-01-01,1,2,0.5,1.5,10\n+10000-01-01 00:00:00,1,2,0.5,1.5,10\n"),
            ":3: timestamp \"+10000-01-01 00:00:00\" is outside the years 0001-9999",
        ),
        (
            "year-minus-1.csv",
            format!("{header}-0001-01-01 00:00:00,1,2,0.5,1.5,10\n"),
            ":2: timestamp \"-0001-01-01 00:00:00\" is outside the years 0001-9999",
        ),
        (
            "missing.csv",
            format!("{header}2020-01-01,1,2,0.5,,10\n"),
            ":2: missing Close",
        ),
        (
            "header.csv",
            "time,o,h,l,c,v\n2020-01-01,1,2,0.5,1.5,10\n".to_owned(),
            ":1: expected the header ,Open,High,Low,Close,Volume",
        ),
        ("empty.csv", header.to_owned(), ": no bars"),
    ];
    for (name, text, expected) in cases {
        let path = write(&dir, name, &text);
        let err = load_bars(&path).unwrap_err().to_string();
        assert!(
            err.contains(name) && err.contains(expected),
            "{name}: {err}"
        );
    }
    let err = load_bars(&dir.path().join("nope.csv")).unwrap_err();
    assert!(
        matches!(err, DataError::File { .. } | DataError::Io { .. }),
        "{err}"
    );
    let err = load_bars(&write(&dir, "bars.txt", "x"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown bar file type"), "{err}");
}

#[test]
fn bar_fields_are_trimmed_and_a_field_that_is_not_utf8_is_named_by_line() {
    let dir = tempfile::tempdir().unwrap();
    let spaced = write(
        &dir,
        "spaced.csv",
        " , Open ,High,Low, Close,Volume \n 2020-01-01 , 1 ,2, 0.5,1.5 ,10\n2020-01-02,1,2,0.5,1.25,\t7\n",
    );
    let bars = load_bars(&spaced).unwrap();
    assert_eq!(bars.len(), 2);
    assert_eq!(bars[0].open, dec!(1));
    assert_eq!(bars[0].close, dec!(1.5));
    assert_eq!(bars[1].close, dec!(1.25));
    assert_eq!(bars[1].volume, dec!(7));

    let path = dir.path().join("latin1.csv");
    let mut bytes = b",Open,High,Low,Close,Volume\n2020-01-01,1,2,0.5,1.5,10\n".to_vec();
    bytes.extend_from_slice(b"2020-01-02,1,2,0.5,1.5\xe9,10\n");
    std::fs::write(&path, bytes).unwrap();
    let err = load_bars(&path).unwrap_err().to_string();
    assert!(err.contains("latin1.csv:3: Close: not UTF-8 text"), "{err}");
}

#[test]
fn csv_fills_load_and_reject_bad_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "fills.csv",
        "id,time,symbol,side,qty,price,fee_usd\n\
         f2,2026-06-04 11:00:00,BTC,sell,0.01,65940,0.29673\n\
         f1,2026-06-04T10:00:00Z,BTC,buy,0.01,65200,0.2934\n",
    );
    let loaded = load_fills(&path, FillsFormat::Csv).unwrap();
    assert_eq!(loaded.skipped, 0);
    assert_eq!(loaded.fills.len(), 2);
    assert_eq!(loaded.fills[0].id, "f1", "sorted oldest first");
    assert_eq!(loaded.fills[0].side, OrderSide::Buy);
    assert_eq!(loaded.fills[1].fee_usd, dec!(0.29673));

    let bad = write(
        &dir,
        "bad.csv",
        "id,time,symbol,side,qty,price,fee_usd\nf1,2026-06-04T10:00:00Z,BTC,hold,1,1,0\n",
    );
    let err = load_fills(&bad, FillsFormat::Csv).unwrap_err().to_string();
    assert!(
        err.contains("bad.csv:2: side: expected buy or sell (got \"hold\")"),
        "{err}"
    );
    let dup = write(
        &dir,
        "dup.csv",
        "id,time,symbol,side,qty,price,fee_usd\nf1,2026-06-04T10:00:00Z,BTC,buy,1,1,0\nf1,2026-06-04T11:00:00Z,BTC,sell,1,1,0\n",
    );
    let err = load_fills(&dup, FillsFormat::Csv).unwrap_err().to_string();
    assert!(err.contains("fill id \"f1\" appears twice"), "{err}");
    let cols = write(&dir, "cols.csv", "id,time,symbol\n");
    let err = load_fills(&cols, FillsFormat::Csv).unwrap_err().to_string();
    assert!(err.contains("missing column \"side\""), "{err}");
}

#[test]
fn hyperliquid_fills_start_flat_per_coin() {
    let loaded = load_fills(
        &repo("crates/hyperliquid/tests/fixtures/userFills.json"),
        FillsFormat::Hyperliquid,
    )
    .unwrap();
    // A zero-crossing first fill is fed as its opening leg, not counted as skipped.
    assert_eq!(loaded.fills.len() + loaded.skipped, 500);
    assert!(
        loaded.skipped > 0,
        "the recorded window starts mid-position"
    );
    // Every coin's first fed fill opens from flat: either a fill with startPosition 0 or the
    // opening leg of a zero-crossing fill, marked #open.
    let opening_legs = loaded
        .fills
        .iter()
        .filter(|f| f.id.ends_with("#open"))
        .count();
    assert!(opening_legs > 0, "some coins start with a flip");
    assert!(loaded.fills.windows(2).all(|w| w[0].time <= w[1].time));
}

#[test]
fn a_fill_dated_beyond_year_9999_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "fills.csv",
        "id,time,symbol,side,qty,price,fee_usd\nf1,2026-06-04T10:00:00Z,BTC,buy,1,1,0\nf2,+10000-01-01 00:00:00,BTC,sell,1,1,0\n",
    );
    let err = load_fills(&path, FillsFormat::Csv).unwrap_err().to_string();
    assert!(
        err.contains("fills.csv")
            && err.contains(":3")
            && err.contains("outside the years 0001-9999"),
        "{err}"
    );
}

mod funding {
    use std::io::Write as _;

    use market_data::load_funding;
    use rust_decimal_macros::dec;

    fn file(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::File::create(&path)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        (dir, path)
    }

    /// The shared fixture is a real `fundingHistory` response (recorded with its request): 8h
    /// prints of BTC in 2023, read exactly.
    #[test]
    fn a_recorded_hyperliquid_response_is_read_exactly() {
        let path = std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../hyperliquid/tests/fixtures/fundingHistory.json"
        ));
        let h = load_funding(path, Some("BTC")).unwrap();
        assert_eq!(h.len(), 1038);
        assert_eq!(h[0].rate, dec!(-0.00061334));
        assert_eq!(h[0].premium, Some(dec!(-0.00091334)));
        assert_eq!(h[0].time.timestamp_millis(), 1_683_849_600_048);
        // 8h prints until the exchange went hourly in 2023.
        assert_eq!((h[0].period_hours, h[1].period_hours), (8, 8));
        let last = h.last().unwrap();
        assert_eq!((last.rate, last.period_hours), (dec!(0.0000125), 1));
        let err = load_funding(path, Some("ETH")).unwrap_err().to_string();
        assert!(
            err.contains("print 0: coin \"BTC\", expected \"ETH\""),
            "{err}"
        );
    }

    #[test]
    fn csv_gives_the_same_prints_and_an_hourly_period() {
        let (_d, csv) = file(
            "btc.csv",
            "time,rate,premium\n\
             2026-11-02T10:00:00Z,0.0000125,-0.0001\n\
             2026-11-02 11:00,-0.00002,\n\
             1793620800000,1e-05,0\n",
        );
        let h = load_funding(&csv, None).unwrap();
        assert_eq!(h.len(), 3);
        assert!(h.iter().all(|p| p.period_hours == 1));
        assert_eq!(h[0].premium, Some(dec!(-0.0001)));
        assert_eq!(h[1].rate, dec!(-0.00002));
        assert_eq!(h[1].premium, None);
        assert_eq!(h[2].rate, dec!(0.00001));
        assert_eq!(h[2].time.to_rfc3339(), "2026-11-02T12:00:00+00:00");
    }

    #[test]
    fn every_bad_csv_row_is_named_by_file_and_line() {
        let (_d, csv) = file(
            "bad.csv",
            "time,rate\n\
             2026-11-02T10:00:00Z,0.0001\n\
             yesterday,0.0001\n\
             2026-11-02T12:00:00Z,lots\n\
             2026-11-02T13:00:00Z,0.0002\n",
        );
        let err = load_funding(&csv, None).unwrap_err().to_string();
        assert!(
            err.contains("bad.csv:3: time \"yesterday\" is not"),
            "{err}"
        );
        assert!(
            err.contains("bad.csv:4: rate: not a number: \"lots\""),
            "{err}"
        );
        assert!(!err.contains(":2:") && !err.contains(":5:"), "{err}");

        let (_d, header) = file("h.csv", "when,rate\n2026-11-02T10:00:00Z,0.0001\n");
        let err = load_funding(&header, None).unwrap_err().to_string();
        assert!(
            err.contains("h.csv:1: expected the header time,rate[,premium]"),
            "{err}"
        );

        let (_d, order) = file(
            "o.csv",
            "time,rate\n2026-11-02T11:00:00Z,0.0001\n2026-11-02T10:00:00Z,0.0001\n",
        );
        let err = load_funding(&order, None).unwrap_err().to_string();
        assert!(
            err.contains("o.csv: funding prints must be in increasing time order"),
            "{err}"
        );

        let (_d, empty) = file("e.csv", "time,rate\n");
        let err = load_funding(&empty, None).unwrap_err().to_string();
        assert!(err.contains("e.csv: no funding prints"), "{err}");
    }

    #[test]
    fn bad_json_is_named_with_its_file() {
        let (_d, json) = file(
            "f.json",
            r#"[{"coin": "BTC", "fundingRate": "abc", "premium": "0", "time": 1683849600048}]"#,
        );
        let err = load_funding(&json, None).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}: ", json.display())), "{err}");
        assert!(err.contains("fundingRate") || err.contains("[0]"), "{err}");
    }
}

#[test]
fn bars_in_memory_parse_as_their_file_loads_and_errors_name_them() {
    for file in [
        "examples/data/EURUSD.csv",
        "crates/hyperliquid/tests/fixtures/candleSnapshot.json",
    ] {
        let path = repo(file);
        let name = path.file_name().unwrap().to_str().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(
            market_data::parse_bars(name, &bytes).unwrap(),
            load_bars(&path).unwrap(),
            "{file}"
        );
    }
    let broken = b",Open,High,Low,Close,Volume\n2017-04-19 09:00:00,1,2,0.5,1.5,10\n2017-04-19 10:00:00,x,2,0.5,1.5,10\n";
    let err = market_data::parse_bars("EURUSD.csv", broken).unwrap_err();
    assert_eq!(err.to_string(), "EURUSD.csv:3: Open: not a number: \"x\"",);
    let err = market_data::parse_bars("bars.txt", b"x").unwrap_err();
    assert!(
        err.to_string()
            .starts_with("bars.txt: unknown bar file type"),
        "{err}"
    );
}
