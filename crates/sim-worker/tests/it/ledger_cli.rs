//! `sim-worker ledger from-fills` and `ledger rebuild` as a user runs them.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::sim;
use db::test_support::{at, sample_fill, sample_snapshot, seed, tick_record};
use db::{TickRecord, TickStore};
use memory_ledger::{LedgerScope, LedgerState, Proposals};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use serde_json::Value;

fn dec_field(row: &Value, name: &str) -> Decimal {
    row[name]
        .as_str()
        .unwrap_or_else(|| panic!("{name} in {row}"))
        .parse()
        .unwrap()
}

#[test]
fn from_fills_splits_a_flip_and_keeps_partial_closes_on_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fills.csv");
    std::fs::write(
        &path,
        "id,time,symbol,side,qty,price,fee_usd\n\
         f1,2026-06-04T10:00:00Z,BTC,buy,0.01,65200,0.2934\n\
         f2,2026-06-04T11:00:00Z,BTC,sell,0.004,66000,0.1188\n\
         f3,2026-06-04T12:00:00Z,BTC,sell,0.016,64000,0.4608\n\
         f4,2026-06-04T13:00:00Z,BTC,buy,0.01,63000,0.2835\n",
    )
    .unwrap();
    let (code, stdout, stderr) = sim(&["ledger", "from-fills", "--fills", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let rows: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2, "{stdout}");

    // Long: 0.01 @ 65,200; partial close 0.004 @ 66,000 → +3.20; the flip closes the other
    // 0.006 @ 64,000 → −7.20; gross −4.00. Fees 0.2934 + 0.1188 + 0.4608 × 0.006/0.016
    // (= 0.1728) = 0.585. Exit = (0.004 × 66,000 + 0.006 × 64,000) / 0.01 = 64,800.
    let long = &rows[0];
    assert_eq!(long["side"], "long");
    assert_eq!(long["status"], "closed");
    assert_eq!(long["close_kind"], "flip");
    assert_eq!(dec_field(long, "entry_price"), dec!(65200));
    assert_eq!(dec_field(long, "realized_pnl_usd"), dec!(-4.0));
    assert_eq!(dec_field(long, "fees_usd"), dec!(0.585));
    assert_eq!(dec_field(long, "exit_price"), dec!(64800));

    // Short: opened by the flip's other 0.01 @ 64,000 (fee 0.4608 × 0.01/0.016 = 0.288), closed
    // 0.01 @ 63,000 → +10.00; fees 0.288 + 0.2835 = 0.5715.
    let short = &rows[1];
    assert_eq!(short["side"], "short");
    assert_eq!(dec_field(short, "entry_price"), dec!(64000));
    assert_eq!(dec_field(short, "realized_pnl_usd"), dec!(10));
    assert_eq!(dec_field(short, "fees_usd"), dec!(0.5715));
    assert!(
        stderr.contains("4 fills → 2 trades (2 closed, 0 open)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("realized PnL $6.00 gross, fees $1.16, net $4.84"),
        "{stderr}"
    );
}

#[test]
fn from_fills_reads_real_hyperliquid_fills() {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../hyperliquid/tests/fixtures/userFills.json");
    let (code, stdout, stderr) = sim(&[
        "ledger",
        "from-fills",
        "--fills",
        fixture.to_str().unwrap(),
        "--format",
        "hyperliquid",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let rows: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        rows.iter().any(|r| r["close_kind"] == "flip"),
        "the recording has flips"
    );
    // Every closed row is flat; every open row still holds quantity.
    for r in &rows {
        let open = dec_field(r, "open_qty");
        assert_eq!(r["status"] == "closed", open.is_zero(), "{r}");
    }
    assert!(
        stderr.contains("skipped"),
        "the window starts mid-position: {stderr}"
    );
}

#[test]
fn from_fills_with_bars_computes_excursions() {
    let dir = tempfile::tempdir().unwrap();
    let fills = dir.path().join("fills.csv");
    // Long 1000 EURUSD at the 2017-04-19 10:00 close, sold at the 14:00 close.
    std::fs::write(
        &fills,
        "id,time,symbol,side,qty,price,fee_usd\n\
         f1,2017-04-19 10:00:00,EURUSD,buy,1000,1.07219,0\n\
         f2,2017-04-19 14:00:00,EURUSD,sell,1000,1.07202,0\n",
    )
    .unwrap();
    let bars = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/data");
    let (code, stdout, stderr) = sim(&[
        "ledger",
        "from-fills",
        "--fills",
        fills.to_str().unwrap(),
        "--bars",
        bars.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let row: Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    // (1.07202 − 1.07219) × 1000 = −0.17
    assert_eq!(dec_field(&row, "realized_pnl_usd"), dec!(-0.17));
    assert!(dec_field(&row, "mfe_usd") >= Decimal::ZERO);
    assert!(
        dec_field(&row, "mae_usd") < Decimal::ZERO,
        "bars after entry traded below it: {row}"
    );

    let (code, _, stderr) = sim(&[
        "ledger",
        "from-fills",
        "--fills",
        fills.to_str().unwrap(),
        "--bars",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no bars for EURUSD"), "{stderr}");
}

#[test]
fn from_fills_rejects_a_broken_file_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fills.csv");
    std::fs::write(
        &path,
        "id,time,symbol,side,qty,price,fee_usd\nf1,2026-06-04T10:00:00Z,BTC,buy,-1,65200,0\n",
    )
    .unwrap();
    let (code, stdout, stderr) = sim(&["ledger", "from-fills", "--fills", path.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("fills.csv:2: qty and price must be positive"),
        "{stderr}"
    );
}

#[test]
fn rebuild_matches_a_consistent_ledger_and_reports_a_tampered_row() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("ledger.db").display()
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let deployment = rt.block_on(async {
        let store = db::connect(&url).await.unwrap();
        let fx = seed(&store).await.unwrap();
        let scope = LedgerScope {
            deployment_id: fx.deployment.id,
            skill_id: fx.skill.id,
            skill_version: fx.version.version,
        };
        let mut ledger = LedgerState::new(scope);
        let fills = [
            sample_fill("f-1", dec!(0.01), dec!(65200), at(0)),
            sample_fill("f-2", dec!(0.01), dec!(66000), at(60)),
        ];
        let mut sell = fills[1].clone();
        sell.side = types::OrderSide::Sell;
        for (i, fill) in [fills[0].clone(), sell].into_iter().enumerate() {
            let changes = ledger
                .apply_fills(
                    std::slice::from_ref(&fill),
                    &Proposals::new(),
                    &BTreeMap::new(),
                )
                .unwrap();
            let tick_at = at(60 * i as i64);
            store
                .record_tick(&TickRecord {
                    links: changes
                        .fill_links
                        .iter()
                        .map(|l| db::FillTradeLink {
                            broker_fill_id: l.fill_id.clone(),
                            trade_id: l.trade_id,
                            flip_trade_id: None,
                        })
                        .collect(),
                    trades: changes.rows.into_iter().map(|w| w.row).collect(),
                    fills: vec![fill],
                    ..tick_record(sample_snapshot(fx.deployment.id, tick_at))
                })
                .await
                .unwrap();
        }
        fx.deployment.id
    });
    let id = deployment.to_string();
    let (code, stdout, stderr) = sim(&["ledger", "rebuild", "--db", &url, "--deployment", &id]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(
        stdout.contains("2 fills, 1 stored rows, 1 rebuilt rows"),
        "{stdout}"
    );
    assert!(stdout.contains("ledger matches its fills"), "{stdout}");

    // A row whose stored PnL no longer matches its fills.
    rt.block_on(async {
        let pool = sqlx_pool(&url).await;
        sqlx::query("UPDATE trade_history SET realized_pnl_usd = '999'")
            .execute(&pool)
            .await
            .unwrap();
    });
    let (code, _, stderr) = sim(&["ledger", "rebuild", "--db", &url, "--deployment", &id]);
    assert_eq!(code, 1);
    // (66,000 − 65,200) × 0.01 = 8
    assert!(
        stderr.contains(r#"realized_pnl_usd stored "999", rebuilt "8""#),
        "{stderr}"
    );

    let (code, _, stderr) = sim(&[
        "ledger",
        "rebuild",
        "--db",
        &url,
        "--deployment",
        "6f9619ff-8b86-d011-b42d-00c04fc964ff",
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("6f9619ff-8b86-d011-b42d-00c04fc964ff"),
        "{stderr}"
    );
}

async fn sqlx_pool(url: &str) -> sqlx::SqlitePool {
    sqlx::SqlitePool::connect(url).await.unwrap()
}
