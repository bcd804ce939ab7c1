use std::collections::BTreeSet;
use std::path::Path;

use chrono::{DateTime, NaiveDateTime, Utc};
use rust_decimal::Decimal;
use types::{Fill, OrderSide};

use crate::DataError;
use crate::bars::{parse_decimal, unwrap_recorded};

/// The layouts `load_fills` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FillsFormat {
    /// A header `id,time,symbol,side,qty,price,fee_usd` and optionally `liquidation`
    /// (`true`/`false`); `side` is `buy` or `sell`; times are RFC 3339 or
    /// `YYYY-MM-DD HH:MM:SS` (UTC).
    Csv,
    /// A Hyperliquid `userFills` response (a bare array or a recorded `{"request", "response"}`
    /// pair).
    Hyperliquid,
}

/// Fills ready for the materializer, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedFills {
    /// The fills kept, oldest first; ids are unique.
    pub fills: Vec<Fill>,
    /// Fills dropped because they belong to a position opened before the file starts.
    pub skipped: usize,
}

/// Reads a fills file.
///
/// Hyperliquid's API returns only the newest fills, so its window usually starts mid-position.
/// Per coin, fills are skipped until the position is flat: a fill that starts at zero is taken
/// whole; a fill that crosses zero contributes only its opening part (quantity past zero, fee
/// pro rata by quantity, id suffixed `#open`). Fills before that are counted in `skipped`.
///
/// # Errors
/// [`DataError`] naming the file (and line for CSV) of the first bad fill, or a fill id that
/// appears twice.
pub fn load_fills(path: &Path, format: FillsFormat) -> Result<LoadedFills, DataError> {
    let loaded = match format {
        FillsFormat::Csv => LoadedFills {
            fills: load_csv(path)?,
            skipped: 0,
        },
        FillsFormat::Hyperliquid => load_hyperliquid(path)?,
    };
    let mut ids = BTreeSet::new();
    for f in &loaded.fills {
        if !ids.insert(f.id.as_str()) {
            return Err(DataError::file(
                path,
                format!("fill id {:?} appears twice", f.id),
            ));
        }
    }
    Ok(loaded)
}

fn load_csv(path: &Path) -> Result<Vec<Fill>, DataError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_path(path)
        .map_err(|e| DataError::file(path, e.to_string()))?;
    let headers = reader
        .headers()
        .map_err(|e| DataError::file(path, e.to_string()))?
        .clone();
    let column = |name: &str| headers.iter().position(|h| h == name);
    let required = ["id", "time", "symbol", "side", "qty", "price", "fee_usd"];
    let mut idx = [0usize; 7];
    for (slot, name) in idx.iter_mut().zip(required) {
        *slot = column(name).ok_or_else(|| {
            DataError::line(
                path,
                1,
                format!("missing column {name:?}; expected {}", required.join(",")),
            )
        })?;
    }
    let liquidation = column("liquidation");
    let mut fills = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| DataError::file(path, e.to_string()))?;
        let line = record.position().map_or(0, csv::Position::line);
        let err = |m: String| DataError::line(path, line, m);
        let get = |i: usize, name: &str| -> Result<&str, DataError> {
            record
                .get(i)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| err(format!("missing {name}")))
        };
        let dec = |i: usize, name: &str| -> Result<Decimal, DataError> {
            let text = get(i, name)?;
            parse_decimal(text).map_err(|_| err(format!("{name}: not a number: {text:?}")))
        };
        let side = match get(idx[3], "side")?.to_ascii_lowercase().as_str() {
            "buy" | "b" => OrderSide::Buy,
            "sell" | "s" | "a" => OrderSide::Sell,
            other => return Err(err(format!("side: expected buy or sell (got {other:?})"))),
        };
        let qty = dec(idx[4], "qty")?;
        let price = dec(idx[5], "price")?;
        if qty <= Decimal::ZERO || price <= Decimal::ZERO {
            return Err(err(format!(
                "qty and price must be positive (got {qty} @ {price})"
            )));
        }
        let time_text = get(idx[1], "time")?;
        let time = parse_time(time_text)
            .ok_or_else(|| {
                err(format!(
                    "time: {time_text:?} is not RFC 3339 or YYYY-MM-DD HH:MM:SS"
                ))
            })
            .and_then(|t| {
                crate::bars::check_year(time_text, t).map_err(|m| err(format!("time: {m}")))
            })?;
        let liquidation = match liquidation.and_then(|i| record.get(i)) {
            None | Some("" | "false" | "0") => false,
            Some("true" | "1") => true,
            Some(other) => {
                return Err(err(format!(
                    "liquidation: expected true or false (got {other:?})"
                )));
            }
        };
        fills.push(Fill {
            id: get(idx[0], "id")?.to_owned(),
            symbol: get(idx[2], "symbol")?.to_owned(),
            side,
            qty,
            price,
            fee_usd: dec(idx[6], "fee_usd")?,
            time,
            snapshot_id: None,
            client_order_id: None,
            liquidation,
            trigger: None,
        });
    }
    fills.sort_by_key(|f| f.time);
    Ok(fills)
}

fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .ok()
        .or_else(|| {
            NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S")
                .ok()
                .map(|t| t.and_utc())
        })
}

fn load_hyperliquid(path: &Path) -> Result<LoadedFills, DataError> {
    let text = std::fs::read(path).map_err(|e| DataError::io(path, e))?;
    let body = unwrap_recorded(&text).map_err(|m| DataError::file(path, m))?;
    let wire = hyperliquid::wire::parse_user_fills(&body)
        .map_err(|e| DataError::file(path, e.to_string()))?;
    let mut started: BTreeSet<String> = BTreeSet::new();
    let mut out = LoadedFills {
        fills: Vec::new(),
        skipped: 0,
    };
    for hl in &wire {
        let fill = hl.to_fill();
        if started.contains(&hl.coin) {
            out.fills.push(fill);
            continue;
        }
        let start = hl.start_position;
        let end = start + fill.signed_qty();
        if start.is_zero() {
            started.insert(hl.coin.clone());
            out.fills.push(fill);
        } else if !end.is_zero() && start.is_sign_positive() != end.is_sign_positive() {
            // Crosses zero: keep only the part that opens the new position.
            started.insert(hl.coin.clone());
            let open_qty = end.abs();
            out.fills.push(Fill {
                id: format!("{}#open", fill.id),
                qty: open_qty,
                fee_usd: fill.fee_usd * open_qty / fill.qty,
                ..fill
            });
        } else {
            out.skipped += 1;
        }
    }
    Ok(out)
}
