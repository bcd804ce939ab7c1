use std::path::Path;

use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, Utc};
use rust_decimal::Decimal;
use types::{Bar, Interval};

use crate::DataError;

/// Reads bars from a file: `.csv` in the backtesting.py layout, `.json` as a Hyperliquid
/// `candleSnapshot` response (a bare array or a recorded `{"request", "response"}` pair).
///
/// # Errors
/// [`DataError`] naming the file (and line) that is unreadable, malformed or out of order.
pub fn load_bars(path: &Path) -> Result<Vec<Bar>, DataError> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("csv") => load_bars_csv(path),
        Some("json") => load_bars_hyperliquid(path),
        _ => Err(DataError::file(
            path,
            "unknown bar file type; use .csv (timestamp, Open, High, Low, Close, Volume) or .json (Hyperliquid candles)",
        )),
    }
}

/// Reads the backtesting.py CSV layout: a header `,Open,High,Low,Close,Volume` (the first column
/// unnamed), then one bar per line with its open time (`2017-04-19 09:00:00` or `2004-08-19`,
/// UTC). Bars must be in strictly increasing time order and satisfy low ≤ open, close ≤ high.
///
/// # Errors
/// [`DataError::Line`] with the line number of the first bad row.
pub fn load_bars_csv(path: &Path) -> Result<Vec<Bar>, DataError> {
    let reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_path(path)
        .map_err(|e| csv_error(path, e))?;
    csv_bars(path, reader)
}

/// Bars from bytes in memory, as [`load_bars`] reads a file: `name` (a file name) says the
/// format by its extension (`.csv`, `.json`), and every error names it. For bar files that
/// arrive in a request rather than on disk.
///
/// # Errors
/// [`DataError`] naming `name` (and the line) when the bytes are malformed or out of order, or
/// `name` has neither extension.
pub fn parse_bars(name: &str, bytes: &[u8]) -> Result<Vec<Bar>, DataError> {
    let path = Path::new(name);
    match path.extension().and_then(|e| e.to_str()) {
        Some("csv") => csv_bars(
            path,
            csv::ReaderBuilder::new()
                .has_headers(true)
                .from_reader(bytes),
        ),
        Some("json") => candle_bars(path, bytes),
        _ => Err(DataError::file(
            path,
            "unknown bar file type; use .csv (timestamp, Open, High, Low, Close, Volume) or .json (Hyperliquid candles)",
        )),
    }
}

/// The backtesting.py layout's bars from `reader`; errors name `path`.
fn csv_bars<R: std::io::Read>(
    path: &Path,
    mut reader: csv::Reader<R>,
) -> Result<Vec<Bar>, DataError> {
    // Byte records, each field trimmed here: the reader's own trimming (`csv::Trim::All`)
    // rebuilds every record, and a string record checks the whole row's UTF-8 once more —
    // together over half the parse of the README's 5,000 rows, which the run waits for.
    let headers = reader.byte_headers().map_err(|e| csv_error(path, e))?;
    let names: Vec<&str> = headers
        .iter()
        .map(|h| std::str::from_utf8(h).map_or("\u{fffd}", str::trim))
        .collect();
    let expected = ["Open", "High", "Low", "Close", "Volume"];
    if names.len() < expected.len() + 1 || names[1..=expected.len()] != expected {
        return Err(DataError::line(
            path,
            1,
            format!(
                "expected the header ,Open,High,Low,Close,Volume (got {})",
                names.join(",")
            ),
        ));
    }
    let mut bars: Vec<Bar> = Vec::new();
    let mut record = csv::ByteRecord::new();
    while reader
        .read_byte_record(&mut record)
        .map_err(|e| csv_error(path, e))?
    {
        let line = record.position().map_or(0, csv::Position::line);
        let field = |i: usize, name: &str| -> Result<&str, DataError> {
            let bytes = record
                .get(i)
                .ok_or_else(|| DataError::line(path, line, format!("missing {name}")))?;
            let text = std::str::from_utf8(bytes)
                .map_err(|_| DataError::line(path, line, format!("{name}: not UTF-8 text")))?
                .trim();
            if text.is_empty() {
                return Err(DataError::line(path, line, format!("missing {name}")));
            }
            Ok(text)
        };
        let time =
            parse_time(field(0, "timestamp")?).map_err(|m| DataError::line(path, line, m))?;
        let num = |i: usize, name: &str| -> Result<Decimal, DataError> {
            let text = field(i, name)?;
            parse_decimal(text)
                .map_err(|_| DataError::line(path, line, format!("{name}: not a number: {text:?}")))
        };
        let bar = Bar {
            time,
            open: num(1, "Open")?,
            high: num(2, "High")?,
            low: num(3, "Low")?,
            close: num(4, "Close")?,
            volume: num(5, "Volume")?,
        };
        check_bar(&bar).map_err(|m| DataError::line(path, line, m))?;
        if let Some(prev) = bars.last()
            && prev.time >= bar.time
        {
            return Err(DataError::line(
                path,
                line,
                format!(
                    "bars must be in increasing time order ({} after {})",
                    bar.time, prev.time
                ),
            ));
        }
        bars.push(bar);
    }
    if bars.is_empty() {
        return Err(DataError::file(path, "no bars"));
    }
    Ok(bars)
}

/// Reads a Hyperliquid `candleSnapshot` response.
///
/// # Errors
/// [`DataError`] when the file is unreadable or not a candle response.
pub fn load_bars_hyperliquid(path: &Path) -> Result<Vec<Bar>, DataError> {
    let text = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
    candle_bars(path, &text)
}

/// A candle response's bars from `text`; errors name `path`.
fn candle_bars(path: &Path, text: &[u8]) -> Result<Vec<Bar>, DataError> {
    let body = unwrap_recorded(text).map_err(|m| DataError::file(path, m))?;
    let candles = hyperliquid::wire::parse_candles(&body)
        .map_err(|e| DataError::file(path, e.to_string()))?;
    let bars = hyperliquid::wire::candles_to_bars(&candles);
    for (i, bar) in bars.iter().enumerate() {
        check_bar(bar).map_err(|m| DataError::file(path, format!("candle {i}: {m}")))?;
    }
    if bars.is_empty() {
        return Err(DataError::file(path, "no candles"));
    }
    Ok(bars)
}

/// A recorded `{"request", "response"}` pair yields its response; anything else is returned as is.
pub(crate) fn unwrap_recorded(text: &[u8]) -> Result<Vec<u8>, String> {
    let value: serde_json::Value =
        serde_json::from_slice(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let inner = match value {
        serde_json::Value::Object(mut map) if map.contains_key("response") => {
            map.remove("response").unwrap_or_default()
        }
        other => other,
    };
    serde_json::to_vec(&inner).map_err(|e| e.to_string())
}

fn check_bar(bar: &Bar) -> Result<(), String> {
    if bar.low > bar.high {
        return Err(format!("Low {} is above High {}", bar.low, bar.high));
    }
    for (name, v) in [("Open", bar.open), ("Close", bar.close)] {
        if v < bar.low || v > bar.high {
            return Err(format!(
                "{name} {v} is outside Low..High {}..{}",
                bar.low, bar.high
            ));
        }
    }
    if bar.low <= Decimal::ZERO {
        return Err(format!("prices must be positive (Low {})", bar.low));
    }
    if bar.volume.is_sign_negative() {
        return Err(format!("Volume {} is negative", bar.volume));
    }
    Ok(())
}

fn parse_time(text: &str) -> Result<DateTime<Utc>, String> {
    let t = parse_any_time(text).ok_or_else(|| {
        format!("timestamp {text:?} is not a date (YYYY-MM-DD) or date-time (YYYY-MM-DD HH:MM:SS)")
    })?;
    check_year(text, t)
}

fn parse_any_time(text: &str) -> Option<DateTime<Utc>> {
    if let Some(t) = fixed_date_time(text) {
        return Some(t);
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    for fmt in ["%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(text, fmt) {
            return Some(t.and_utc());
        }
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| t.and_utc())
}

/// `YYYY-MM-DD HH:MM:SS` (or with a `T`), read digit by digit: the layout of backtesting.py's
/// CSVs, so every row of such a file takes this path (chrono's format parser after the RFC
/// 3339 attempt cost ≈2,500 instructions a row). `None` for anything else, an impossible date
/// or time included (leap second: chrono's parsers decide those).
fn fixed_date_time(text: &str) -> Option<DateTime<Utc>> {
    let b = text.as_bytes();
    if b.len() != 19
        || b[4] != b'-'
        || b[7] != b'-'
        || !(b[10] == b' ' || b[10] == b'T')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<u32> {
        b[from..to].iter().try_fold(0_u32, |n, &c| {
            c.is_ascii_digit().then(|| n * 10 + u32::from(c - b'0'))
        })
    };
    let year = i32::try_from(num(0, 4)?).ok()?;
    NaiveDate::from_ymd_opt(year, num(5, 7)?, num(8, 10)?)?
        .and_hms_opt(num(11, 13)?, num(14, 16)?, num(17, 19)?)
        .map(|t| t.and_utc())
}

/// `t` when its year has four digits (0001–9999): chrono's `%Y` also reads `+10000` and
/// `-0001`, which no market has and which the prompt's time styles cannot print as data.
pub(crate) fn check_year(text: &str, t: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    if (1..=9999).contains(&t.year()) {
        Ok(t)
    } else {
        Err(format!("timestamp {text:?} is outside the years 0001-9999"))
    }
}

/// Exact decimal from text, accepting scientific notation (`1e-05`).
pub(crate) fn parse_decimal(text: &str) -> Result<Decimal, rust_decimal::Error> {
    types::parse_plain_decimal(text).map_or_else(|| Decimal::from_scientific(text), Ok)
}

/// The bar interval of a series: the smallest gap between consecutive bars, when it is one of
/// the known intervals (weekend and holiday gaps are larger and ignored).
#[must_use]
pub fn detect_interval(bars: &[Bar]) -> Option<Interval> {
    let gap = bars
        .windows(2)
        .map(|w| (w[1].time - w[0].time).num_minutes())
        .filter(|m| *m > 0)
        .min()?;
    Interval::ALL.into_iter().find(|i| i.minutes() == gap)
}

/// Aggregates bars into a higher timeframe: buckets aligned by [`Interval::bucket_start`],
/// open of the first bar, high/low extremes, close of the last bar, summed volume. A bucket is
/// emitted even if some of its bars are missing (weekends); callers showing a point in time
/// must keep only buckets whose close time has passed.
#[must_use]
pub fn resample(bars: &[Bar], to: Interval) -> Vec<Bar> {
    let mut out: Vec<Bar> = Vec::new();
    for bar in bars {
        let start = to.bucket_start(bar.time);
        match out.last_mut() {
            Some(last) if last.time == start => {
                last.high = last.high.max(bar.high);
                last.low = last.low.min(bar.low);
                last.close = bar.close;
                last.volume += bar.volume;
            }
            _ => out.push(Bar {
                time: start,
                ..bar.clone()
            }),
        }
    }
    out
}

fn csv_error(path: &Path, e: csv::Error) -> DataError {
    let line = e.position().map(csv::Position::line);
    let message = match e.kind() {
        csv::ErrorKind::Io(io) => {
            return DataError::io(path, std::io::Error::new(io.kind(), io.to_string()));
        }
        _ => e.to_string(),
    };
    match line {
        Some(line) => DataError::line(path, line, message),
        None => DataError::file(path, message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The digit-by-digit reading gives chrono's value for every text it takes, and leaves the
    /// rest (other layouts, impossible dates and times, leap seconds) to chrono.
    #[test]
    fn the_fixed_layout_reads_as_chrono_does() {
        let chrono = |text: &str| {
            ["%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"]
                .iter()
                .find_map(|f| NaiveDateTime::parse_from_str(text, f).ok())
                .map(|t| t.and_utc())
        };
        for text in [
            "2017-04-19 09:00:00",
            "2017-04-19T23:59:59",
            "0001-01-01 00:00:00",
            "9999-12-31 23:59:59",
            "2024-02-29 12:30:05",
        ] {
            assert_eq!(fixed_date_time(text), chrono(text), "{text}");
            assert!(fixed_date_time(text).is_some(), "{text}");
        }
        for text in [
            "2023-02-29 00:00:00",
            "2017-13-01 00:00:00",
            "2017-04-19 24:00:00",
            "2017-04-19 23:60:00",
            "2016-12-31 23:59:60",
            "2017-04-19 9:00:00 ",
            "2017-04-19 09:00",
            "2017/04/19 09:00:00",
            "+2017-04-19 09:00:00",
            "2017-04-19 09:0x:00",
            "2017-04-19",
        ] {
            assert_eq!(fixed_date_time(text), None, "{text}");
        }
        // What the fast path leaves to chrono still parses as before.
        assert_eq!(
            parse_any_time("2016-12-31 23:59:60"),
            chrono("2016-12-31 23:59:60")
        );
        assert_eq!(
            parse_any_time("2017-04-19 09:00"),
            NaiveDateTime::parse_from_str("2017-04-19 09:00", "%Y-%m-%d %H:%M")
                .ok()
                .map(|t| t.and_utc())
        );
    }
}
