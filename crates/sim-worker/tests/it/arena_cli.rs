//! `sim-worker arena` (#47 item 1): three entrants and the baselines over eight walk-forward
//! windows with two repeats of the entrants whose model is not built in, from one command on the
//! example data — a mock LLM behind the real chat-completions wire, recorded in cassettes, then
//! replayed for free. Its numbers are recomputed here from each run's own summary.json and the
//! bars: the estimates exactly, the intervals and probabilities with a bootstrap of this file's
//! own (its own generator, in `f64`) within the tolerances stated below; buy-and-hold from the
//! bars' closes; flat cash exactly 0. The page is checked in headless Chromium.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use assert_cmd::Command;
use rust_decimal::Decimal;
use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

use crate::common::{Run, chat_server, done, last_message, openai_at, proposing, repo, sim};
use crate::page::{Page, docs_image};

/// Monday to Thursday noon: no window falls on a weekend, and each has the ten bars a regime
/// needs.
const FROM: &str = "2017-05-01T00:00:00Z";
const TO: &str = "2017-05-04T12:00:00Z";
const RESAMPLES: u32 = 5_000;
const SEED: &str = "11";

/// A trader over the chat-completions wire whose answer to a tick depends on how many calls
/// came before it, not on the prompt: the same window run twice trades differently, as an LLM
/// sampled twice does. After the tool result it stops. 1,000 prompt and 30 completion tokens a
/// call.
struct Moody {
    calls: Arc<AtomicUsize>,
}

impl Respond for Moody {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if last_message(request)["role"] == "tool" {
            return done();
        }
        // A scrambled call count: long, short, close or nothing.
        let mood = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 61;
        let args = match mood {
            0 | 1 => json!({"action": "open_long", "symbol": "EURUSD", "size_usd": 2500,
                            "leverage": 1, "reason": "mood"}),
            2 | 3 => json!({"action": "open_short", "symbol": "EURUSD", "size_usd": 2500,
                            "leverage": 1, "reason": "mood"}),
            4 | 5 => json!({"action": "close", "symbol": "EURUSD", "reason": "mood"}),
            _ => json!({"action": "no_op", "symbol": "EURUSD", "reason": "mood"}),
        };
        proposing(n, &args)
    }
}

/// `sim-worker arena` with the three entrants, against `base_url` (a closed port when `None`,
/// and no key), then `extra`.
fn arena(out: &Path, tape: &Path, base_url: Option<&str>, extra: &[&str]) -> (i32, String, String) {
    let mut cmd = Command::cargo_bin("sim-worker").unwrap();
    cmd.args([
        "arena",
        "--skill",
        &repo("examples/skills/eurusd-sma-cross.yaml"),
        "--bars",
        &format!("EURUSD={}", repo("examples/data/EURUSD.csv")),
        "--from",
        FROM,
        "--to",
        TO,
        "--entrant",
        "gpt:model=openai/gpt-4o-mini",
        "--entrant",
        "gpt-small:model=openai/gpt-4o-mini; risk.maxPositionPct=30",
        "--entrant",
        "sma-5-20:model=builtin/sma-cross:5:20",
        "--reference",
        "sma-5-20",
        "--windows",
        "8",
        "--repeats",
        "2",
        "--resamples",
        &RESAMPLES.to_string(),
        "--seed",
        SEED,
        "--cassette",
        tape.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
    .args(extra);
    let r = Run::of(openai_at(&mut cmd, base_url));
    (r.code, r.stdout, r.stderr)
}

/// `sim-worker arena` of the example skill on the example bars into `out`, then `extra`.
fn example_arena(out: &Path, extra: &[&str]) -> (i32, String, String) {
    let (skill, bars) = (
        repo("examples/skills/eurusd-sma-cross.yaml"),
        format!("EURUSD={}", repo("examples/data/EURUSD.csv")),
    );
    let mut args = vec![
        "arena",
        "--skill",
        &skill,
        "--bars",
        &bars,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    sim(&args)
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
    )
    .unwrap()
}

fn dec(v: &Value) -> Decimal {
    match v {
        Value::String(s) => s.parse().unwrap(),
        Value::Number(n) => n.to_string().parse().unwrap(),
        other => panic!("not a number: {other}"),
    }
}

/// A metric of a run, read from its summary.json as this test reads the definitions: net
/// return is the total return (mark-to-market), tokens every kind summed.
fn metric(summary: &Value, key: &str) -> Option<Decimal> {
    let at = |p: &str| summary.pointer(p).filter(|v| !v.is_null()).map(dec);
    match key {
        "net_return_usd" => at("/total_return_usd"),
        "sharpe" => at("/sharpe"),
        "max_drawdown_pct" => at("/max_drawdown_pct"),
        "win_rate_pct" => at("/win_rate_pct"),
        "trades" => at("/trades"),
        "cost_usd" => at("/cost_usd"),
        "tokens" => ["input", "output", "cache_read", "cache_write"]
            .iter()
            .map(|k| at(&format!("/tokens/{k}")))
            .sum(),
        other => panic!("unknown metric {other}"),
    }
}

/// A run's metrics by key (`None` where it has none).
type Values = BTreeMap<&'static str, Option<Decimal>>;

/// (key, summed over windows, better when higher: Some(true) / lower: Some(false) / None).
const METRICS: [(&str, bool, Option<bool>); 7] = [
    ("net_return_usd", true, Some(true)),
    ("sharpe", false, Some(true)),
    ("max_drawdown_pct", false, Some(false)),
    ("win_rate_pct", false, Some(true)),
    ("trades", true, None),
    ("cost_usd", true, Some(false)),
    ("tokens", true, Some(false)),
];

/// The reference bootstrap: SplitMix64, `f64`, windows drawn with replacement, then each side's
/// repeats within a drawn window; percentiles by nearest rank.
struct Reference {
    state: u64,
}

impl Reference {
    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn mean_of_draws(&mut self, v: &[f64]) -> f64 {
        if v.len() < 2 {
            return v.first().copied().unwrap_or(0.0);
        }
        (0..v.len()).map(|_| v[self.below(v.len())]).sum::<f64>() / v.len() as f64
    }

    /// The sorted resampled statistics over `windows` (each: this side's runs, the subtracted
    /// side's runs or none).
    fn resample(
        &mut self,
        windows: &[(Vec<f64>, Vec<f64>)],
        sum: bool,
        resamples: usize,
    ) -> Vec<f64> {
        let n = windows.len();
        let scale = if sum { n as f64 } else { 1.0 };
        let mut stats: Vec<f64> = (0..resamples)
            .map(|_| {
                let total: f64 = (0..n)
                    .map(|_| {
                        let (a, b) = &windows[self.below(n)];
                        let a = self.mean_of_draws(a);
                        a - if b.is_empty() {
                            0.0
                        } else {
                            self.mean_of_draws(b)
                        }
                    })
                    .sum();
                total / n as f64 * scale
            })
            .collect();
        stats.sort_by(f64::total_cmp);
        stats
    }
}

/// The share of `sorted` at or below `v` (within rounding), and strictly below it.
fn cdf(sorted: &[f64], v: f64) -> (f64, f64) {
    let eps = 1e-9 * v.abs().max(1.0);
    let r = sorted.len() as f64;
    (
        sorted.partition_point(|s| *s <= v + eps) as f64 / r,
        sorted.partition_point(|s| *s < v - eps) as f64 / r,
    )
}

fn mean(v: &[Decimal]) -> Decimal {
    v.iter().sum::<Decimal>() / Decimal::from(v.len())
}

fn f(d: Decimal) -> f64 {
    d.to_string().parse().unwrap()
}

/// An interval end passes when it is within this share of the interval's width of the
/// reference's end (both are Monte Carlo estimates of the same percentile: the arena's from
/// 5,000 resamples, the reference's from 40,000)…
const END_WIDTH_SHARE: f64 = 0.02;
/// …or when it is a percentile of the reference's resampled statistics to within this much
/// probability: the low end has at least 2.5 % − this of them at or below it and at most
/// 2.5 % + this strictly below it (the high end likewise at 97.5 %). Counts and win rates make
/// the distribution discrete, and there an end may rightly be one step from the reference's.
/// The binomial standard error of a 2.5 % tail over 5,000 resamples is 0.0022.
const END_PROBABILITY: f64 = 0.01;
/// Probabilities of beating the reference within this (the binomial standard error over 5,000
/// resamples is at most 0.007).
const P_TOLERANCE: f64 = 0.04;

/// Checks one statistic of arena.json against this test's: the estimate exactly (to arena.json's
/// 6 decimals; within their rounding when the values are arena.json's own, `rounded`), the
/// interval ends and the probability within the tolerances. Returns the gap of the ends from the
/// reference's in shares of the width.
#[allow(clippy::too_many_arguments)]
fn check(
    what: &str,
    got: &Value,
    windows: &[(Vec<Decimal>, Vec<Decimal>)],
    rounded: bool,
    sum: bool,
    better: Option<bool>,
    paired: bool,
    rng: &mut Reference,
) -> f64 {
    assert_eq!(got["windows"], windows.len(), "{what}: windows");
    let n = Decimal::from(windows.len());
    let total: Decimal = windows
        .iter()
        .map(|(a, b)| mean(a) - if b.is_empty() { Decimal::ZERO } else { mean(b) })
        .sum();
    let estimate = if sum { total } else { total / n };
    if rounded {
        // Values read back from arena.json, each rounded to 6 decimals.
        let slack = Decimal::new(5, 7) * n;
        assert!(
            (dec(&got["estimate"]) - estimate).abs() <= slack,
            "{what}: estimate"
        );
    } else {
        assert_eq!(
            dec(&got["estimate"]),
            estimate.round_dp(6),
            "{what}: estimate"
        );
    }
    if windows.len() < 2 {
        assert!(got["low"].is_null(), "{what}");
        return 0.0;
    }
    let as_f64: Vec<(Vec<f64>, Vec<f64>)> = windows
        .iter()
        .map(|(a, b)| {
            (
                a.iter().map(|d| f(*d)).collect(),
                b.iter().map(|d| f(*d)).collect(),
            )
        })
        .collect();
    let stats = rng.resample(&as_f64, sum, 40_000);
    let r = stats.len();
    let rank = |p: f64| stats[((p * r as f64).ceil() as usize).clamp(1, r) - 1];
    let (low, high) = (rank(0.025), rank(0.975));
    let (g_low, g_high) = (f(dec(&got["low"])), f(dec(&got["high"])));
    let width = g_high - g_low;
    let gap = (g_low - low).abs().max((g_high - high).abs());
    for (end, p) in [(g_low, 0.025), (g_high, 0.975)] {
        let want = if p < 0.5 { low } else { high };
        let (at_or_below, below) = cdf(&stats, end);
        // Plus arena.json's rounding to 6 decimals.
        let close = (end - want).abs() <= END_WIDTH_SHARE * width + 1e-6;
        let a_percentile = at_or_below >= p - END_PROBABILITY && below <= p + END_PROBABILITY;
        assert!(
            close || a_percentile,
            "{what}: the end {end} of [{g_low}, {g_high}] vs the reference's {want} (of \
             [{low}, {high}]); {at_or_below:.4} of the reference's resamples at or below it, \
             {below:.4} below"
        );
    }
    match (paired, better) {
        (true, Some(higher)) => {
            let p = f(dec(&got["p_better"]));
            let (at_or_below_0, below_0) = cdf(&stats, 0.0);
            let ties = at_or_below_0 - below_0;
            let want = if higher {
                1.0 - at_or_below_0 + ties / 2.0
            } else {
                below_0 + ties / 2.0
            };
            assert!(
                (p - want).abs() <= P_TOLERANCE,
                "{what}: P {p} vs the reference's {want}"
            );
        }
        _ => assert!(got.get("p_better").is_none(), "{what}: no P"),
    }
    if width < 1e-9 { 0.0 } else { gap / width }
}

/// The closes of the example bars by close time (the bar's open time + 1h).
fn closes() -> BTreeMap<String, Decimal> {
    let text = std::fs::read_to_string(repo("examples/data/EURUSD.csv")).unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            let open =
                chrono::NaiveDateTime::parse_from_str(cells[0], "%Y-%m-%d %H:%M:%S").unwrap();
            let close_time = (open + chrono::Duration::hours(1)).and_utc();
            (
                close_time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                cells[4].parse().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_arena_of_three_entrants_and_the_baselines_recomputed_and_replayed_for_free() {
    let dir = tempfile::tempdir().unwrap();
    let tape = dir.path().join("llm.cassette");
    let calls = Arc::new(AtomicUsize::new(0));
    let server = chat_server(Moody {
        calls: calls.clone(),
    })
    .await;
    let out = dir.path().join("arena");
    let uri = server.uri();
    let (code, stdout, stderr) =
        tokio::task::spawn_blocking(move || arena(&out, &tape, Some(&uri), &["--max-cost", "5"]))
            .await
            .unwrap();
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    let (out, tape) = (dir.path().join("arena"), dir.path().join("llm.cassette"));
    assert!(calls.load(Ordering::SeqCst) > 0);
    assert!(
        tape.exists() && dir.path().join("llm-r2.cassette").exists(),
        "a cassette per repeat"
    );
    assert!(
        stdout.contains("6 rows (3 entrants, 3 baselines) × 8 walk-forward windows"),
        "{stdout}"
    );
    let doc = read_json(&out.join("arena.json"));
    assert_eq!(doc["format"], "sim-worker-arena/1");
    assert_eq!(doc["reference"], "sma-5-20");
    assert_eq!(doc["resamples"], RESAMPLES);
    let windows = doc["windows"].as_array().unwrap();
    assert_eq!(windows.len(), 8);
    let rows = doc["entrants"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "gpt",
            "gpt-small",
            "sma-5-20",
            "rules:eurusd-sma-cross",
            "buy-and-hold:EURUSD",
            "flat-cash"
        ]
    );
    let repeats: Vec<u64> = rows
        .iter()
        .map(|r| r["repeats"].as_u64().unwrap())
        .collect();
    assert_eq!(
        repeats,
        [2, 2, 1, 1, 1, 1],
        "repeats only where the model is not built in"
    );
    assert_eq!(rows[1]["set"], json!({"risk.maxPositionPct": 30}));

    // Each row's runs, [window][repeat], from the runs' own summaries (baselines from arena.json:
    // they write none).
    let runs: Vec<Vec<Vec<Values>>> = rows
        .iter()
        .map(|row| {
            let mut per_window = vec![Vec::new(); windows.len()];
            for run in row["runs"].as_array().unwrap() {
                let w: usize = run["window"].as_str().unwrap()[1..]
                    .parse::<usize>()
                    .unwrap()
                    - 1;
                let values: Values = match run["dir"].as_str() {
                    Some(d) => {
                        let summary = read_json(&out.join(d).join("summary.json"));
                        assert!(out.join(d).join("report.html").exists());
                        METRICS
                            .iter()
                            .map(|(k, ..)| (*k, metric(&summary, k)))
                            .collect()
                    }
                    None => METRICS
                        .iter()
                        .map(|(k, ..)| {
                            (
                                *k,
                                Some(&run["values"][k]).filter(|v| !v.is_null()).map(dec),
                            )
                        })
                        .collect(),
                };
                // What arena.json says of the run is what its summary says.
                for (k, v) in &values {
                    assert_eq!(
                        run["values"][k]
                            .as_str()
                            .map(|s| s.parse::<Decimal>().unwrap()),
                        v.map(|d| d.round_dp(6)),
                        "{} {} {k}",
                        row["name"],
                        run["window"]
                    );
                }
                per_window[w].push(values);
            }
            per_window
        })
        .collect();
    // The LLM's repeats differ somewhere: they are not replays of each other.
    assert!(
        runs[0]
            .iter()
            .any(|w| w[0]["net_return_usd"] != w[1]["net_return_usd"]),
        "repeats differ"
    );

    let reference = 2;
    let mut rng = Reference { state: 47 };
    let mut worst: f64 = 0.0;
    let side = |r: usize, w: usize, k: &str| -> Vec<Decimal> {
        runs[r][w].iter().filter_map(|v| v[k]).collect()
    };
    for (r, row) in rows.iter().enumerate() {
        let name = row["name"].as_str().unwrap();
        // A baseline computed from the bars writes no summary: its values are arena.json's.
        let baseline = row["runs"][0]["dir"].is_null();
        for &(key, sum, better) in &METRICS {
            let got = &row["metrics"][key];
            // The row's own statistic, then its difference from the reference's.
            let own: Vec<(Vec<Decimal>, Vec<Decimal>)> = (0..windows.len())
                .map(|w| (side(r, w, key), Vec::new()))
                .filter(|(a, _)| !a.is_empty())
                .collect();
            let mut cases = vec![(format!("{name} {key}"), &got["value"], own, false)];
            if r == reference {
                assert!(got["vs_reference"].is_null());
            } else {
                let paired = (0..windows.len())
                    .map(|w| (side(r, w, key), side(reference, w, key)))
                    .filter(|(a, b)| !a.is_empty() && !b.is_empty())
                    .collect();
                cases.push((
                    format!("{name} − sma-5-20 {key}"),
                    &got["vs_reference"],
                    paired,
                    true,
                ));
            }
            for (what, got, sample, paired) in cases {
                if sample.is_empty() {
                    assert!(got.is_null(), "{what}");
                    continue;
                }
                let gap = check(&what, got, &sample, baseline, sum, better, paired, &mut rng);
                worst = worst.max(gap);
            }
        }
        // By regime: the windows of each regime, and the net return over them.
        for (regime, part) in row["by_regime"].as_object().unwrap() {
            let ws: Vec<usize> = part["windows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|w| w.as_str().unwrap()[1..].parse::<usize>().unwrap() - 1)
                .collect();
            for &w in &ws {
                assert_eq!(windows[w]["regime"], regime.as_str());
            }
            let total: Decimal = ws
                .iter()
                .map(|&w| mean(&side(r, w, "net_return_usd")))
                .sum();
            let got = dec(&part["metrics"]["net_return_usd"]["value"]["estimate"]);
            let slack = if baseline {
                Decimal::new(5, 7) * Decimal::from(ws.len())
            } else {
                Decimal::ZERO
            };
            assert!(
                (got - total.round_dp(6)).abs() <= slack,
                "{name} {regime}: {got} vs {total}"
            );
        }
    }
    eprintln!(
        "the widest gap between an interval end and the reference's: {worst:.4} of its width"
    );

    // Buy-and-hold, from the bars: the whole equity bought at the first tick's close moved by
    // the 1 bp slippage, paying the 4.5 bps fee on the notional, marked at the window's last
    // close.
    let closes = closes();
    let equity = Decimal::from(10_000);
    let fee_rate = Decimal::new(45, 5);
    for (w, window) in windows.iter().enumerate() {
        let at = |k: &str| closes[window[k].as_str().unwrap()];
        let fill = at("from") * Decimal::new(10_001, 4);
        let notional = equity / (Decimal::ONE + fee_rate);
        let fee = (notional * fee_rate).round_dp(8);
        let made = notional / fill * at("to") - notional - fee;
        assert_eq!(
            runs[4][w][0]["net_return_usd"].unwrap().round_dp(2),
            made.round_dp(2),
            "buy-and-hold in {}",
            window["name"]
        );
        // Flat cash: exactly nothing.
        assert_eq!(runs[5][w][0]["net_return_usd"], Some(Decimal::ZERO));
    }
    let flat = &rows[5]["metrics"]["net_return_usd"]["value"];
    assert_eq!(
        (&flat["estimate"], &flat["low"], &flat["high"]),
        (&json!("0"), &json!("0"), &json!("0"))
    );
    assert!(rows[5]["metrics"]["sharpe"]["value"].is_null());

    // Again with the server gone and no key: every response from the cassettes, nothing paid,
    // the same arena to the byte.
    drop(server);
    let again = dir.path().join("again");
    let (code, stdout, stderr) = {
        let (again, tape) = (again.clone(), tape.clone());
        tokio::task::spawn_blocking(move || {
            arena(&again, &tape, None, &["--cassette-mode", "replay"])
        })
        .await
        .unwrap()
    };
    assert_eq!(code, 0, "stdout: {stdout}\nstderr: {stderr}");
    assert!(
        stdout.contains("spent:   $0.00 at the provider · cassettes: ")
            && stdout.contains(" responses replayed, 0 sent and recorded"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("arena.json")).unwrap(),
        std::fs::read_to_string(again.join("arena.json")).unwrap(),
        "a replayed arena is the recorded one"
    );
}

/// The README's arena: built-in models only, so it runs offline.
const README_ARENA: [&str; 14] = [
    "--skill",
    "examples/skills/eurusd-sma-cross.yaml",
    "--bars",
    "EURUSD=examples/data/EURUSD.csv",
    "--to",
    "2017-07-01",
    "--entrant",
    "fast:model=builtin/sma-cross:5:20",
    "--entrant",
    "slow:model=builtin/sma-cross:20:50",
    "--entrant",
    "half-size:risk.maxPositionPct=30",
    "--reference",
    "rules:eurusd-sma-cross",
];

/// `arena` and the README's arena flags, its paths from the repository root.
pub(crate) fn readme_arena() -> Vec<String> {
    let mut args = vec!["arena".to_owned()];
    for (i, a) in README_ARENA.iter().enumerate() {
        let prev = i.checked_sub(1).map(|p| README_ARENA[p]);
        args.push(match prev {
            Some("--skill") => repo(a),
            Some("--bars") => format!("EURUSD={}", repo("examples/data/EURUSD.csv")),
            _ => (*a).to_owned(),
        });
    }
    args
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_arena_page_in_chromium_shows_every_row_s_equity_the_leaderboard_and_the_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("arena");
    let mut args = readme_arena();
    args.extend(["--out".to_owned(), out.to_str().unwrap().to_owned()]);
    let (code, stdout, stderr) = tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        sim(&refs)
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("rules:eurusd-sma-cross (reference)"),
        "{stdout}"
    );

    let page = Page::open(&out.join("arena.html")).await;
    let rows = [
        "fast",
        "slow",
        "half-size",
        "rules:eurusd-sma-cross",
        "buy-and-hold:EURUSD",
        "flat-cash",
    ];
    assert_eq!(
        page.count("svg.chart polyline").await,
        rows.len(),
        "a line per row"
    );
    let legend = page.texts("ul.legend li").await;
    assert_eq!(legend, rows.map(str::to_owned));
    let y = page.texts("svg.chart text.y-label").await;
    assert_eq!(y.len(), 5);
    assert!(
        y.iter().all(|l| l.starts_with('$') && l.contains(',')),
        "{y:?}"
    );
    let x = page.texts("svg.chart text.x-label").await;
    assert_eq!(x.len(), 9, "eight window starts and the last tick: {x:?}");
    assert!(x[0].starts_with("w01 2017-04-"), "{x:?}");
    assert!(x[8].ends_with("UTC"), "{x:?}");
    assert_eq!(page.count("svg.chart line.window").await, 8);
    let mut board = page.texts("table.leaderboard td.name").await;
    assert_eq!(board.len(), rows.len());
    board.sort();
    let mut want = rows.map(str::to_owned);
    want.sort();
    assert_eq!(board, want);
    let reference = page.texts("table.leaderboard tr.reference td.name").await;
    assert_eq!(reference, ["rules:eurusd-sma-cross"]);
    // 8 windows of the three entrants and the rule baseline, a report each.
    assert_eq!(page.count("ul.runs a").await, 32);
    page.screenshot(&docs_image("arena.png")).await;

    // A run's link opens its report.
    let link = page
        .client
        .find(fantoccini::Locator::Css("ul.runs a"))
        .await
        .unwrap();
    link.click().await.unwrap();
    let title = page.client.title().await.unwrap();
    assert!(title.starts_with("Backtest · "), "{title}");
    page.close().await;
}

#[test]
fn bad_input_names_what_and_where_exits_2_and_prints_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let syntax = file(
        "syntax.yaml",
        "entrants:\n  - name: a\n    model: [unclosed\n",
    );
    let unknown_key = file(
        "key.yaml",
        "entrants:\n  - name: a\n  - name: b\n    sett: {risk.maxPositionPct: 30}\n",
    );
    let unknown_field = file(
        "field.toml",
        "[[entrants]]\nname = \"a\"\n[entrants.set]\n\"risk.maxPositionPc\" = 30\n",
    );
    let bad_value = file(
        "value.json",
        r#"{"entrants": [{"name": "wide", "set": {"risk.maxPositionPct": "lots"}}]}"#,
    );
    let cases: [(&[&str], &[&str]); 9] = [
        (
            &["--entrant", "a", "--entrant", "b", "--reference", "nope"],
            &[
                "--reference nope: not a row of this arena (entrants: a, b; baselines: buy-and-hold:EURUSD, flat-cash)",
            ],
        ),
        (
            &["--arena", &syntax],
            &["--arena ", "syntax.yaml: not valid: ", "line 3"],
        ),
        (
            &["--arena", &unknown_key],
            &["key.yaml: entrants[1].sett: unknown field `sett`, expected one of"],
        ),
        (
            &["--arena", &unknown_field],
            &[
                "entrant a (",
                "field.toml: entrants[0])",
                "not a valid skill",
                "risk.maxPositionPc",
            ],
        ),
        (
            &["--arena", &bad_value],
            &[
                "entrant wide (",
                "value.json: entrants[0])",
                "risk.maxPositionPct",
            ],
        ),
        (
            &[
                "--entrant",
                "a",
                "--entrant",
                "a:model=builtin/sma-cross:5:20",
            ],
            &["--entrant a: the name a is taken by --entrant a"],
        ),
        (
            &["--entrant", "x:strategy.leash"],
            &["(the entrant flag number 1): \"strategy.leash\" is not KEY=VALUE"],
        ),
        (
            &["--entrant", "x:model=nobody/knows"],
            &["entrant x: ", "nobody/knows"],
        ),
        (
            &["--entrant", "x:model=openai/not-priced", "--max-cost", "1"],
            &["entrant x: --max-cost: openai/not-priced is not in the rate table"],
        ),
    ];
    for (extra, says) in cases {
        let (code, stdout, stderr) =
            example_arena(&out, &[&["--to", "2017-05-01"], extra].concat());
        assert_eq!(code, 2, "{extra:?}: {stderr}");
        assert!(stdout.is_empty(), "{extra:?}: {stdout}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        for s in says {
            assert!(stderr.contains(s), "{extra:?} should say {s:?}: {stderr}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_cost_stops_the_whole_arena_before_it_passes_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let server = chat_server(Moody {
        calls: Arc::default(),
    })
    .await;
    let (out, tape) = (dir.path().join("arena"), dir.path().join("llm.cassette"));
    let uri = server.uri();
    // A call costs $0.000168: a cap of a few ticks.
    let (code, stdout, stderr) = {
        let (out, tape) = (out.clone(), tape.clone());
        tokio::task::spawn_blocking(move || {
            arena(
                &out,
                &tape,
                Some(&uri),
                &["--max-cost", "0.002", "--concurrency", "1"],
            )
        })
        .await
        .unwrap()
    };
    assert_eq!(code, 4, "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains("stopped: --max-cost $0.002 for the whole arena: $0.00"),
        "{stderr}"
    );
    assert!(
        stderr.contains("run the arena again with the same --cassette"),
        "{stderr}"
    );
    assert!(!out.join("arena.json").exists());
    // What was spent stayed under the cap: the recorded calls.
    let recorded = server.received_requests().await.unwrap().len();
    assert!(
        recorded > 0 && (recorded as f64) * 0.000168 <= 0.002,
        "{recorded} calls"
    );
}

#[test]
fn blind_applies_to_every_entrant_and_never_to_the_baselines_arithmetic() {
    let dir = tempfile::tempdir().unwrap();
    let run = |blind: bool| {
        let out = dir.path().join(if blind { "blind" } else { "seeing" });
        let mut args = vec![
            "--from",
            "2017-05-01",
            "--to",
            "2017-05-04",
            "--windows",
            "2",
            "--resamples",
            "200",
            "--entrant",
            "fast:model=builtin/sma-cross:5:20",
        ];
        if blind {
            args.push("--blind");
        }
        let (code, _, stderr) = example_arena(&out, &args);
        assert_eq!(code, 0, "{stderr}");
        let doc = read_json(&out.join("arena.json"));
        (out, doc)
    };
    let (blind_out, blind) = run(true);
    let (_, seeing) = run(false);
    assert_eq!(blind["blind"], true);
    assert_eq!(seeing["blind"], false);
    for row in blind["entrants"].as_array().unwrap() {
        for r in row["runs"].as_array().unwrap() {
            if let Some(d) = r["dir"].as_str() {
                let summary = read_json(&blind_out.join(d).join("summary.json"));
                assert_eq!(summary["blind"], true, "{} {}", row["name"], r["window"]);
            }
        }
    }
    // The rule-based entrants trade the same blind (prices rescaled, percentages kept), and
    // the baselines computed from the bars are the same numbers.
    assert_eq!(blind["entrants"], seeing["entrants"]);
}
