//! `sim-worker run --meta`: the exchange's maximum leverage per coin (a Hyperliquid `meta`
//! response) margins the skill's symbols as the exchange does (#16 item 10), as
//! `live-runner deploy --meta` does for a paper deployment. The Portfolio section's liquidation
//! price follows: short `P = (E + M/q) / (1 + m)` with `m = 0.5 / maxLeverage`.

use std::str::FromStr;

use db::{RegistryStore, TickStore};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;

use crate::common::{repo, sim};

/// The first position line of the run's prompts: (entry, qty, margin, liq, side sign).
async fn first_position(store_url: &str) -> (serde_json::Value, [Decimal; 4], Decimal) {
    let store = db::connect(store_url).await.unwrap();
    let deployments = store.list_deployments(None).await.unwrap();
    let d = &deployments[0];
    let mut snapshots = store.list_snapshots(d.id, 10_000).await.unwrap();
    snapshots.sort_by_key(|s| s.tick_at);
    let line = snapshots
        .iter()
        .flat_map(|s| s.context.lines().map(str::to_owned).collect::<Vec<_>>())
        .find(|l| l.starts_with("- EURUSD ") && l.contains(" liq "))
        .expect("a position with a liquidation price");
    // "- EURUSD short 5599.15639377 @ 1.071482841 · mark … · margin $5,999.40 · liq 1.71437…"
    let words: Vec<&str> = line.split_whitespace().collect();
    let num = |s: &str| Decimal::from_str(&s.replace(['$', ','], "")).unwrap();
    let after = |w: &str| num(words[words.iter().position(|x| *x == w).unwrap() + 1]);
    let sign = if words[2] == "short" {
        dec!(1)
    } else {
        dec!(-1)
    };
    (
        d.config.clone(),
        [num(words[5]), num(words[3]), after("margin"), after("liq")],
        sign,
    )
}

#[tokio::test]
async fn the_exchanges_max_leverage_sets_the_maintenance_margin_of_the_skills_symbols() {
    let dir = tempfile::tempdir().unwrap();
    let meta = dir.path().join("meta.json");
    // A recorded-response wrapper, as the shared fixtures hold them; BTC is not the skill's.
    std::fs::write(
        &meta,
        r#"{"request":{"type":"meta"},"response":{"universe":[
            {"name":"EURUSD","szDecimals":0,"maxLeverage":20},
            {"name":"BTC","szDecimals":5,"maxLeverage":50}]}}"#,
    )
    .unwrap();
    let run = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let bars = format!("EURUSD={}", repo("examples/data/EURUSD.csv"));
        let skill = repo("examples/skills/eurusd-sma-cross.yaml");
        let mut args = vec!["run", "--skill", &skill, "--bars", &bars];
        args.extend([
            "--to",
            "2017-04-25T00:00:00Z",
            "--out",
            out.to_str().unwrap(),
        ]);
        args.extend(extra);
        let (code, stdout, stderr) = sim(&args);
        assert_eq!(code, 0, "{stderr}");
        stdout
            .lines()
            .find_map(|l| l.strip_prefix("store:   "))
            .and_then(|l| l.split(" (").next())
            .expect("store line")
            .to_owned()
    };
    let meta_path = meta.to_str().unwrap();
    for (name, extra, m) in [
        // The skill's maxLeverage 2: 0.5 / 2.
        ("plain", vec![], dec!(0.25)),
        // The exchange's 20x on EURUSD: 0.5 / 20.
        ("meta", vec!["--meta", meta_path], dec!(0.025)),
    ] {
        let (config, [entry, qty, margin, liq], sign) = first_position(&run(name, &extra)).await;
        let expected = (entry + sign * margin / qty) / (Decimal::ONE + sign * m);
        // The margin is printed in cents: the recomputed price is good to ~1e-6.
        assert!(
            (liq - expected).abs() < dec!(0.00001),
            "{name}: liq {liq}, expected {expected}"
        );
        let stored = config.get("exchange_max_leverage");
        if extra.is_empty() {
            assert_eq!(stored, None, "{config}");
        } else {
            assert_eq!(
                stored,
                Some(&serde_json::json!({"EURUSD": "20"})),
                "{config}"
            );
        }
    }

    // A file that is not a `meta` is named, and nothing runs.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"universe":[{"name":"EURUSD"}]}"#).unwrap();
    let bars = format!("EURUSD={}", repo("examples/data/EURUSD.csv"));
    let out = dir.path().join("bad-out");
    let (code, _, stderr) = sim(&[
        "run",
        "--skill",
        &repo("examples/skills/eurusd-sma-cross.yaml"),
        "--bars",
        &bars,
        "--meta",
        bad.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("--meta") && stderr.contains("bad.json"),
        "{stderr}"
    );
    assert!(!out.exists());
}
