use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Subcommand, ValueEnum};
use db::{LedgerStore, TickStore};
use market_data::{FillsFormat, detect_interval, load_bars, load_fills};
use memory_ledger::{LedgerChanges, LedgerScope, LedgerState, ProposalInfo, Proposals};
use rust_decimal::Decimal;
use types::{Bar, Fill, Position, Side, TradeRecord, Uuid, text};

use crate::Failure;

#[derive(Debug, Subcommand)]
pub(crate) enum LedgerCommand {
    /// Build the round-trip trades (one JSON object per line) from a fills file, with the same
    /// materializer a deployment uses. A summary goes to stderr.
    FromFills {
        /// The fills file.
        #[arg(long, value_name = "FILE")]
        fills: PathBuf,
        /// `csv` (`id,time,symbol,side,qty,price,fee_usd[,liquidation]`) or `hyperliquid` (a
        /// userFills response; per coin, fills before the first flat position are skipped).
        #[arg(long, value_enum, default_value_t = FillsFormatArg::Csv)]
        format: FillsFormatArg,
        /// A directory of bar files named SYMBOL.csv or SYMBOL.json; with it, MFE/MAE are
        /// computed from bar highs and lows since entry.
        #[arg(long, value_name = "DIR")]
        bars: Option<PathBuf>,
    },
    /// Rebuild a deployment's ledger from its stored fills and report every row that differs
    /// from the stored one. Exits 0 when they match, 1 when something differs.
    Rebuild {
        /// The store: `sqlite://PATH` or `postgres://…`.
        #[arg(long)]
        db: String,
        /// The deployment id; optional when the store holds only one, as a run's `sim.db` does.
        #[arg(long)]
        deployment: Option<Uuid>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum FillsFormatArg {
    Csv,
    Hyperliquid,
}

pub(crate) fn run(cmd: LedgerCommand) -> Result<String, Failure> {
    match cmd {
        LedgerCommand::FromFills {
            fills,
            format,
            bars,
        } => from_fills(&fills, format, bars.as_deref()),
        LedgerCommand::Rebuild { db, deployment } => crate::block_on(rebuild(&db, deployment)),
    }
}

fn from_fills(
    path: &Path,
    format: FillsFormatArg,
    bars_dir: Option<&Path>,
) -> Result<String, Failure> {
    let format = match format {
        FillsFormatArg::Csv => FillsFormat::Csv,
        FillsFormatArg::Hyperliquid => FillsFormat::Hyperliquid,
    };
    let loaded = load_fills(path, format).map_err(|e| Failure::bad_input(format!("error: {e}")))?;
    let scope = LedgerScope {
        deployment_id: Uuid::nil(),
        skill_id: Uuid::nil(),
        skill_version: 1,
    };
    let mut ledger = LedgerState::new(scope);
    let mut rows: BTreeMap<Uuid, TradeRecord> = BTreeMap::new();
    let no_proposals = Proposals::new();
    let no_regimes = BTreeMap::new();
    let ledger_err = |e: memory_ledger::LedgerError| {
        Failure::bad_input(format!("error: {}: {e}", path.display()))
    };
    match bars_dir {
        None => {
            let changes = ledger
                .apply_fills(&loaded.fills, &no_proposals, &no_regimes)
                .map_err(ledger_err)?;
            absorb(&mut rows, changes);
        }
        Some(dir) => {
            let symbols: BTreeSet<&str> = loaded.fills.iter().map(|f| f.symbol.as_str()).collect();
            let bars = load_bar_dir(dir, &symbols)?;
            replay_with_bars(&mut ledger, &mut rows, &loaded.fills, &bars).map_err(ledger_err)?;
        }
    }
    let mut out = String::new();
    let mut trades: Vec<&TradeRecord> = rows.values().collect();
    trades.sort_by(|a, b| {
        (a.entry_tick_at, &a.symbol, a.id).cmp(&(b.entry_tick_at, &b.symbol, b.id))
    });
    for t in &trades {
        out.push_str(&serde_json::to_string(t).context("serializing a trade")?);
        out.push('\n');
    }
    let closed = trades
        .iter()
        .filter(|t| t.status == types::TradeStatus::Closed)
        .count();
    let gross: Decimal = trades.iter().map(|t| t.realized_pnl_usd).sum();
    let fees: Decimal = trades.iter().map(|t| t.fees_usd).sum();
    let _ = writeln!(
        std::io::stderr(),
        "{}: {} fills → {} trades ({closed} closed, {} open); realized PnL {} gross, fees {}, net {}{}",
        path.display(),
        loaded.fills.len(),
        trades.len(),
        trades.len() - closed,
        text::money(gross),
        text::money(fees),
        text::money(gross - fees),
        if loaded.skipped > 0 {
            format!(
                "; skipped {} fills of positions opened before the file starts",
                loaded.skipped
            )
        } else {
            String::new()
        }
    );
    Ok(out)
}

fn absorb(rows: &mut BTreeMap<Uuid, TradeRecord>, changes: LedgerChanges) {
    for write in changes.rows {
        rows.insert(write.row.id, write.row);
    }
}

fn load_bar_dir(
    dir: &Path,
    symbols: &BTreeSet<&str>,
) -> Result<BTreeMap<String, Vec<Bar>>, Failure> {
    let mut out = BTreeMap::new();
    for symbol in symbols {
        let path = ["csv", "json"]
            .iter()
            .map(|ext| dir.join(format!("{symbol}.{ext}")))
            .find(|p| p.exists())
            .ok_or_else(|| {
                Failure::bad_input(format!(
                    "error: no bars for {symbol} in {} (expected {symbol}.csv or {symbol}.json)",
                    dir.display()
                ))
            })?;
        let bars = load_bars(&path).map_err(|e| Failure::bad_input(format!("error: {e}")))?;
        out.insert((*symbol).to_owned(), bars);
    }
    Ok(out)
}

/// Ticks at every bar close: the fills up to that instant, the bars that closed since the last
/// tick, and the positions those fills imply (so nothing is reconciled away).
fn replay_with_bars(
    ledger: &mut LedgerState,
    rows: &mut BTreeMap<Uuid, TradeRecord>,
    fills: &[Fill],
    bars: &BTreeMap<String, Vec<Bar>>,
) -> Result<(), memory_ledger::LedgerError> {
    let interval = bars
        .values()
        .find_map(|b| detect_interval(b))
        .unwrap_or(types::Interval::H1);
    let mut closes: BTreeSet<types::DateTime<types::Utc>> = BTreeSet::new();
    for series in bars.values() {
        closes.extend(series.iter().map(|b| b.close_time(interval)));
    }
    let no_proposals = Proposals::new();
    let no_regimes = BTreeMap::new();
    let mut net: BTreeMap<String, Decimal> = BTreeMap::new();
    let mut next_fill = 0;
    let mut prev: Option<types::DateTime<types::Utc>> = None;
    for at in closes {
        let start = next_fill;
        while next_fill < fills.len() && fills[next_fill].time <= at {
            *net.entry(fills[next_fill].symbol.clone()).or_default() +=
                fills[next_fill].signed_qty();
            next_fill += 1;
        }
        let window: BTreeMap<String, Vec<Bar>> = bars
            .iter()
            .map(|(s, series)| {
                let closed: Vec<Bar> = series
                    .iter()
                    .filter(|b| {
                        let c = b.close_time(interval);
                        c <= at && prev.is_none_or(|p| c > p)
                    })
                    .cloned()
                    .collect();
                (s.clone(), closed)
            })
            .collect();
        let marks: BTreeMap<&str, Decimal> = bars
            .iter()
            .filter_map(|(s, series)| {
                series
                    .iter()
                    .rev()
                    .find(|b| b.close_time(interval) <= at)
                    .map(|b| (s.as_str(), b.close))
            })
            .collect();
        let positions: Vec<Position> = net
            .iter()
            .filter(|(_, q)| !q.is_zero())
            .map(|(symbol, q)| {
                let mark = marks.get(symbol.as_str()).copied().unwrap_or(Decimal::ONE);
                Position {
                    symbol: symbol.clone(),
                    side: if q.is_sign_positive() {
                        Side::Long
                    } else {
                        Side::Short
                    },
                    qty: q.abs(),
                    entry_price: ledger.open_row(symbol).map_or(mark, |r| r.entry_price),
                    leverage: Decimal::ONE,
                    mark_price: mark,
                    liquidation_price: None,
                    unrealized_pnl_usd: Decimal::ZERO,
                    margin_usd: Decimal::ZERO,
                }
            })
            .collect();
        let changes = ledger.apply_tick(memory_ledger::TickInput {
            at,
            positions: &positions,
            fills: &fills[start..next_fill],
            bars: &window,
            bar_interval: interval,
            proposals: &no_proposals,
            regimes: &no_regimes,
        })?;
        absorb(rows, changes);
        prev = Some(at);
    }
    if next_fill < fills.len() {
        let changes = ledger.apply_fills(&fills[next_fill..], &no_proposals, &no_regimes)?;
        absorb(rows, changes);
    }
    Ok(())
}

/// The columns a rebuild from fills can reproduce. MFE/MAE and the entry regime tag come from
/// market data that fills do not carry, so they are not compared.
fn fill_derived(t: &TradeRecord) -> Vec<(&'static str, String)> {
    let d = |x: Decimal| x.normalize().to_string();
    let od = |x: Option<Decimal>| x.map(|v| v.normalize().to_string()).unwrap_or_default();
    vec![
        ("symbol", t.symbol.clone()),
        ("side", t.side.as_str().to_owned()),
        ("status", t.status.as_str().to_owned()),
        ("entry_tick_at", t.entry_tick_at.to_rfc3339()),
        ("entry_price", d(t.entry_price)),
        ("entry_size_usd", d(t.entry_size_usd)),
        ("opened_qty", d(t.opened_qty)),
        ("open_qty", d(t.open_qty)),
        (
            "exit_tick_at",
            t.exit_tick_at.map(|x| x.to_rfc3339()).unwrap_or_default(),
        ),
        ("exit_price", od(t.exit_price)),
        (
            "close_kind",
            t.close_kind
                .map(|k| k.as_str().to_owned())
                .unwrap_or_default(),
        ),
        ("realized_pnl_usd", d(t.realized_pnl_usd)),
        ("fees_usd", d(t.fees_usd)),
        ("entry_reason", t.entry_reason.clone().unwrap_or_default()),
        ("exit_reason", t.exit_reason.clone().unwrap_or_default()),
        (
            "entry_snapshot_id",
            t.entry_snapshot_id
                .map(|x| x.to_string())
                .unwrap_or_default(),
        ),
        (
            "exit_snapshot_id",
            t.exit_snapshot_id
                .map(|x| x.to_string())
                .unwrap_or_default(),
        ),
    ]
}

async fn rebuild(url: &str, deployment: Option<Uuid>) -> Result<String, Failure> {
    let store = db::open_existing(url).await.map_err(|e| {
        Failure::bad_input(format!("error: cannot open {}: {e}", db::redact_url(url)))
    })?;
    let deployment = tick::the_deployment(&store, deployment)
        .await
        .map_err(|e| Failure::bad_input(format!("error: {e}")))?;
    let deployment_id = deployment.id;
    let stored_fills = store
        .list_fills(deployment_id, None)
        .await
        .context("reading stored fills")?;
    let fills: Vec<Fill> = stored_fills.into_iter().map(|s| s.fill).collect();
    let mut proposals = Proposals::new();
    for id in fills
        .iter()
        .filter_map(|f| f.snapshot_id)
        .collect::<BTreeSet<_>>()
    {
        let snapshot = store
            .get_snapshot(id)
            .await
            .context("reading a decision snapshot")?;
        if let Some(p) = snapshot.proposal.as_ref() {
            proposals.insert(id, ProposalInfo::from(p));
        }
    }
    let mut ledger = LedgerState::new(LedgerScope {
        deployment_id,
        skill_id: deployment.skill_id,
        skill_version: deployment.skill_version,
    });
    let mut rebuilt = BTreeMap::new();
    let changes = ledger
        .apply_fills(&fills, &proposals, &BTreeMap::new())
        .map_err(|e| Failure::bad_input(format!("error: stored fills do not replay: {e}")))?;
    absorb(&mut rebuilt, changes);
    let stored: BTreeMap<Uuid, TradeRecord> = store
        .all_trades(deployment_id)
        .await
        .context("reading stored trades")?
        .into_iter()
        .map(|t| (t.id, t))
        .collect();

    let mut report = Vec::new();
    for (id, row) in &stored {
        match rebuilt.get(id) {
            None if row.broker_reconciled => report.push(format!(
                "{id} {} {}: stored row was reconciled against broker positions; fills alone do not produce it",
                row.symbol, row.side
            )),
            None => report.push(format!("{id} {} {}: stored but not rebuilt from fills", row.symbol, row.side)),
            Some(new) => {
                for ((name, old), (_, fresh)) in fill_derived(row).into_iter().zip(fill_derived(new)) {
                    if old != fresh {
                        report.push(format!("{id} {} {}: {name} stored {old:?}, rebuilt {fresh:?}", row.symbol, row.side));
                    }
                }
            }
        }
    }
    for (id, row) in &rebuilt {
        if !stored.contains_key(id) {
            report.push(format!(
                "{id} {} {}: rebuilt from fills but not stored",
                row.symbol, row.side
            ));
        }
    }
    let summary = format!(
        "deployment {deployment_id}: {} fills, {} stored rows, {} rebuilt rows (MFE/MAE and regime tags come from bars and are not compared)\n",
        fills.len(),
        stored.len(),
        rebuilt.len()
    );
    if report.is_empty() {
        Ok(format!("{summary}ledger matches its fills\n"))
    } else {
        Err(Failure {
            message: format!(
                "{summary}{} difference(s):\n{}\n",
                report.len(),
                report.join("\n")
            ),
            code: 1,
            stdout: String::new(),
        })
    }
}
