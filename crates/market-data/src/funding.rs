//! Funding-rate history from a file: a Hyperliquid `fundingHistory` response (JSON, a bare
//! array or a recorded `{"request", "response"}` pair) or a CSV file with the header
//! `time,rate[,premium]` (times RFC 3339, `YYYY-MM-DD HH:MM[:SS]` or Unix milliseconds; rates
//! as fractions per funding period).

use std::path::Path;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

use crate::DataError;
use crate::bars::{check_year, parse_decimal, unwrap_recorded};

/// One funding print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FundingPrint {
    /// When the funding was applied (UTC).
    pub time: DateTime<Utc>,
    /// The rate for one funding period, a fraction (`0.0001` = 0.01 %); positive: longs pay.
    pub rate: Decimal,
    /// The premium of the mark over the oracle in the period, when the file gives it.
    pub premium: Option<Decimal>,
    /// The length of the period the rate is for, in hours: the gap since the previous print
    /// rounded to the hour (at least 1); for the first print the gap to the next one; 1
    /// (Hyperliquid's period since 2023) for a lone print. Per print, because a venue can change
    /// its period: the shared Hyperliquid fixture goes from 8h to 1h prints in 2023.
    pub period_hours: u32,
}

/// Reads a funding history, oldest first: CSV when the name ends in `.csv`, else Hyperliquid JSON. For JSON,
/// every print must be of one coin; `coin`, when given, must be it.
///
/// # Errors
/// [`DataError`] naming the file: for CSV every bad row by its line (one per line of the
/// message), for JSON the first bad value; prints out of order, duplicate times and an empty
/// file are refused. Nothing is returned then.
pub fn load_funding(path: &Path, coin: Option<&str>) -> Result<Vec<FundingPrint>, DataError> {
    let csv = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let mut prints = if csv {
        let text = std::fs::read_to_string(path).map_err(|e| DataError::io(path, e))?;
        parse_csv(path, &text)?
    } else {
        let bytes = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
        parse_json(path, &bytes, coin)?
    };
    if prints.is_empty() {
        return Err(DataError::file(path, "no funding prints"));
    }
    if let Some(i) = prints.windows(2).position(|w| w[1].time <= w[0].time) {
        return Err(DataError::file(
            path,
            format!(
                "funding prints must be in increasing time order (print {} at {} after {})",
                i + 2,
                prints[i + 1].time,
                prints[i].time
            ),
        ));
    }
    let hours = |a: DateTime<Utc>, b: DateTime<Utc>| {
        u32::try_from(((b - a).num_minutes() + 30) / 60)
            .unwrap_or(u32::MAX)
            .max(1)
    };
    let gaps: Vec<u32> = prints
        .windows(2)
        .map(|w| hours(w[0].time, w[1].time))
        .collect();
    for (i, p) in prints.iter_mut().enumerate() {
        p.period_hours = match i {
            0 => gaps.first().copied().unwrap_or(1),
            _ => gaps[i - 1],
        };
    }
    Ok(prints)
}

fn parse_json(
    path: &Path,
    bytes: &[u8],
    coin: Option<&str>,
) -> Result<Vec<FundingPrint>, DataError> {
    let body = unwrap_recorded(bytes).map_err(|m| DataError::file(path, m))?;
    let rates = hyperliquid::wire::parse_funding_history(&body)
        .map_err(|e| DataError::file(path, e.to_string()))?;
    let want = coin
        .map(str::to_owned)
        .or_else(|| rates.first().map(|r| r.coin.clone()));
    let mut prints = Vec::with_capacity(rates.len());
    for (i, r) in rates.into_iter().enumerate() {
        if let Some(want) = &want
            && &r.coin != want
        {
            return Err(DataError::file(
                path,
                format!("print {i}: coin {:?}, expected {want:?}", r.coin),
            ));
        }
        check_year(&r.time.to_rfc3339(), r.time)
            .map_err(|m| DataError::file(path, format!("print {i}: {m}")))?;
        prints.push(FundingPrint {
            time: r.time,
            rate: r.funding_rate,
            premium: Some(r.premium),
            period_hours: 1,
        });
    }
    Ok(prints)
}

fn parse_csv(path: &Path, text: &str) -> Result<Vec<FundingPrint>, DataError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .flexible(false)
        .from_reader(text.as_bytes());
    let header = reader
        .headers()
        .map_err(|e| DataError::line(path, 1, e.to_string()))?
        .clone();
    let names: Vec<&str> = header.iter().collect();
    if names != ["time", "rate"] && names != ["time", "rate", "premium"] {
        return Err(DataError::line(
            path,
            1,
            format!(
                "expected the header time,rate[,premium], got {}",
                names.join(",")
            ),
        ));
    }
    crate::error::csv_rows(path, &mut reader, print_of)
}

fn print_of(r: &csv::StringRecord) -> Result<FundingPrint, String> {
    let field = |i: usize| r.get(i).unwrap_or("");
    let time = parse_time(field(0))?;
    let rate =
        parse_decimal(field(1)).map_err(|_| format!("rate: not a number: {:?}", field(1)))?;
    let premium = match field(2) {
        "" => None,
        text => Some(parse_decimal(text).map_err(|_| format!("premium: not a number: {text:?}"))?),
    };
    Ok(FundingPrint {
        time,
        rate,
        premium,
        period_hours: 1,
    })
}

/// RFC 3339, `YYYY-MM-DD HH:MM[:SS]` (UTC) or Unix milliseconds (as Hyperliquid stamps them).
fn parse_time(text: &str) -> Result<DateTime<Utc>, String> {
    let bad = || {
        format!("time {text:?} is not RFC 3339, YYYY-MM-DD HH:MM[:SS] (UTC) or Unix milliseconds")
    };
    let t = if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        t.with_timezone(&Utc)
    } else if let Ok(t) = chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S")
        .or_else(|_| chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M"))
    {
        t.and_utc()
    } else if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse::<i64>()
            .ok()
            .and_then(DateTime::from_timestamp_millis)
            .ok_or_else(bad)?
    } else {
        return Err(bad());
    };
    check_year(text, t)
}
