//! The fixture bars and small builders.

use std::str::FromStr;

use chrono::{DateTime, NaiveDateTime, Utc};
use rust_decimal::Decimal;
use types::Bar;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

pub(crate) fn time(s: &str) -> DateTime<Utc> {
    NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S")
        .unwrap_or_else(|e| panic!("bad time {s:?}: {e}"))
        .and_utc()
}

/// The 600 EURUSD hourly bars of the fixture and the reference series' bars (its closes on the
/// same times).
pub(crate) fn fixture_bars() -> (Vec<Bar>, Vec<Bar>) {
    let mut reader = csv::Reader::from_path(format!("{FIXTURES}/eurusd_600_with_ref.csv"))
        .expect("fixture bars");
    let (mut bars, mut reference) = (Vec::new(), Vec::new());
    for row in reader.records() {
        let row = row.expect("fixture row");
        let d = |i: usize| Decimal::from_str(&row[i]).expect("decimal column");
        let t = time(&row[0]);
        bars.push(Bar {
            time: t,
            open: d(1),
            high: d(2),
            low: d(3),
            close: d(4),
            volume: d(5),
        });
        let r = d(6);
        reference.push(Bar {
            time: t,
            open: r,
            high: r,
            low: r,
            close: r,
            volume: Decimal::ONE,
        });
    }
    (bars, reference)
}

/// A reference CSV as rows of optional floats (an empty cell is `None`), the first column
/// kept as text.
/// A reference row: its first cell and the others.
pub(crate) type Row = (String, Vec<Option<f64>>);

pub(crate) fn reference_rows(file: &str) -> (Vec<String>, Vec<Row>) {
    let mut reader = csv::Reader::from_path(format!("{FIXTURES}/{file}")).expect("reference");
    let headers = reader
        .headers()
        .expect("headers")
        .iter()
        .map(str::to_owned)
        .collect();
    let rows = reader
        .records()
        .map(|r| {
            let r = r.expect("reference row");
            let values = r
                .iter()
                .skip(1)
                .map(|c| (!c.is_empty()).then(|| c.parse::<f64>().expect("float cell")))
                .collect();
            (r[0].to_owned(), values)
        })
        .collect();
    (headers, rows)
}
