//! [`BarDirectory`]: a chat turn's bars from files in one directory, offline.
//!
//! For `SYMBOL` at `INTERVAL` (`5m`, `15m`, `1h`, `4h`, `1d`, `1w`), the first of these that
//! exists ([`bar_file_names`]):
//! 1. `SYMBOL-INTERVAL.csv`, `SYMBOL-INTERVAL.json` — bars of that interval;
//! 2. `SYMBOL.csv`, `SYMBOL.json` — bars of any interval that divides `INTERVAL`, resampled to
//!    it (`examples/data/EURUSD.csv`, hourly, serves `1h` and `4h`).
//!
//! `.csv` is the backtesting.py layout and `.json` a Hyperliquid `candleSnapshot` answer, as
//! `sim-worker run --bars` reads them ([`market_data::load_bars`]). A file is parsed once and
//! kept in memory until it changes (its modification time or length).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use async_trait::async_trait;
use chat::{BarNeed, BarsUnavailable, ChatMarket, ChatMarketError, LoadedBars};
use chrono::{DateTime, Utc};
use tools::Preloaded;
use types::{Bar, Interval};

use super::MarketSourceError;

/// The files that may hold `symbol`'s bars at `interval`, in the order they are tried; the
/// second value says whether the file is named for the interval (else it may be resampled).
#[must_use]
pub fn bar_file_names(symbol: &str, interval: Interval) -> [(String, bool); 4] {
    [
        (format!("{symbol}-{interval}.csv"), true),
        (format!("{symbol}-{interval}.json"), true),
        (format!("{symbol}.csv"), false),
        (format!("{symbol}.json"), false),
    ]
}

/// Whether `symbol` can name a file in the directory: letters, digits and `-_.:@`, not
/// starting with a dot, at most 64 characters (never a path).
fn is_file_symbol(symbol: &str) -> bool {
    !symbol.is_empty()
        && symbol.len() <= 64
        && !symbol.starts_with('.')
        && symbol
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:@".contains(c))
}

/// A file's bars at one interval, as read when the file had this modification time and length.
struct Series {
    modified: Option<SystemTime>,
    len: u64,
    bars: Arc<[Bar]>,
}

/// A chat turn's bars from a directory of bar files (see the module's doc). No funding or open
/// interest: the tools say they are unknown.
pub struct BarDirectory {
    dir: PathBuf,
    series: Mutex<HashMap<(PathBuf, Interval), Arc<Series>>>,
}

impl std::fmt::Debug for BarDirectory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BarDirectory")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl BarDirectory {
    /// A source over `dir`.
    ///
    /// # Errors
    /// [`MarketSourceError::BarDirectory`] when `dir` is not a directory that can be read.
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self, MarketSourceError> {
        let dir = dir.into();
        let refuse = |reason: String| MarketSourceError::BarDirectory {
            path: dir.display().to_string(),
            reason,
        };
        let meta = std::fs::metadata(&dir).map_err(|e| refuse(e.to_string()))?;
        if !meta.is_dir() {
            return Err(refuse("not a directory".into()));
        }
        std::fs::read_dir(&dir).map_err(|e| refuse(e.to_string()))?;
        Ok(Self {
            dir,
            series: Mutex::new(HashMap::new()),
        })
    }

    /// `reason` with the directory's path left out: what a turn's tools repeat to the model
    /// names the file, never where the server keeps it.
    fn relative(&self, reason: &str) -> String {
        let mut prefix = self.dir.display().to_string();
        if !prefix.ends_with(std::path::MAIN_SEPARATOR) {
            prefix.push(std::path::MAIN_SEPARATOR);
        }
        reason.replace(&prefix, "")
    }

    /// `symbol`'s bars at `interval`: from the first file of [`bar_file_names`] that exists,
    /// parsed (and resampled) once per version of the file.
    async fn series(&self, symbol: &str, interval: Interval) -> Result<Arc<[Bar]>, String> {
        if !is_file_symbol(symbol) {
            return Err(format!("the symbol {symbol:?} cannot name a bar file"));
        }
        let names = bar_file_names(symbol, interval);
        for (name, exact) in &names {
            let path = self.dir.join(name);
            let Ok(meta) = tokio::fs::metadata(&path).await else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            let (modified, len) = (meta.modified().ok(), meta.len());
            let key = (path.clone(), interval);
            let cached = self
                .series
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&key)
                .filter(|s| s.modified == modified && s.len == len)
                .cloned();
            if let Some(s) = cached {
                return Ok(Arc::clone(&s.bars));
            }
            let exact = *exact;
            let read = path.clone();
            let bars = tokio::task::spawn_blocking(move || read_series(&read, interval, exact))
                .await
                .map_err(|e| format!("reading {name}: {e}"))?
                .map_err(|e| self.relative(&e))?;
            self.series
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(
                    key,
                    Arc::new(Series {
                        modified,
                        len,
                        bars: Arc::clone(&bars),
                    }),
                );
            return Ok(bars);
        }
        Err(format!(
            "no bar file for {symbol} {interval} in the bar directory ({})",
            names
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

/// The bars of `path` at `interval`: as they are in a file named for the interval, else
/// resampled from the file's own interval when it divides `interval`.
fn read_series(path: &Path, interval: Interval, exact: bool) -> Result<Arc<[Bar]>, String> {
    let bars = market_data::load_bars(path).map_err(|e| e.to_string())?;
    let Some(found) = market_data::detect_interval(&bars) else {
        // One bar, or gaps of no known interval: taken as named.
        return Ok(bars.into());
    };
    if found == interval {
        return Ok(bars.into());
    }
    if !exact && found < interval && interval.minutes() % found.minutes() == 0 {
        return Ok(market_data::resample(&bars, interval).into());
    }
    Err(format!(
        "{} holds {found} bars, which do not make {interval} bars",
        path.display()
    ))
}

#[async_trait]
impl ChatMarket for BarDirectory {
    /// The bars of each need opening in its window and closed by `now`. A need whose file is
    /// missing or unreadable is unavailable, with the reason (the file and line of a bad row).
    /// Never an error.
    async fn load(
        &self,
        needs: &[BarNeed],
        now: DateTime<Utc>,
    ) -> Result<LoadedBars, ChatMarketError> {
        let mut by_series: BTreeMap<(&str, Interval), Vec<&BarNeed>> = BTreeMap::new();
        for need in needs {
            by_series
                .entry((need.symbol.as_str(), need.interval))
                .or_default()
                .push(need);
        }
        let mut market = Preloaded::new();
        let mut unavailable = Vec::new();
        for ((symbol, interval), needs) in by_series {
            match self.series(symbol, interval).await {
                Ok(all) => {
                    let bars: Vec<Bar> = all
                        .iter()
                        .filter(|b| {
                            b.close_time(interval) <= now
                                && needs.iter().any(|n| b.time >= n.from && b.time < n.to)
                        })
                        .cloned()
                        .collect();
                    market.insert_bars(symbol, interval, bars);
                }
                Err(reason) => {
                    tracing::warn!(
                        dir = %self.dir.display(),
                        %symbol,
                        %interval,
                        %reason,
                        "chat market: bars unavailable"
                    );
                    unavailable.extend(needs.into_iter().map(|need| BarsUnavailable {
                        need: need.clone(),
                        reason: reason.clone(),
                    }));
                }
            }
        }
        Ok(LoadedBars {
            market: Arc::new(market),
            unavailable,
        })
    }
}
