//! `sim-worker ab --windows N` (#18 item 4): A and B walk forward over the same bars; each
//! window is a real backtest (it equals `run --from --to` of that window), and every metric's
//! B − A gets a bootstrap interval with a plain sentence, in the output, ab.json and ab.html.

use crate::common::{repo, sim};

#[test]
fn ab_windows_reports_intervals_and_each_window_is_a_run_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ab");
    let bars = format!("EURUSD={}", repo("examples/data/EURUSD.csv"));
    let skill = repo("examples/skills/eurusd-sma-cross.yaml");
    let (code, stdout, stderr) = sim(&[
        "ab",
        "--skill",
        &skill,
        "--bars",
        &bars,
        "--to",
        "2017-06-01T00:00:00Z",
        "--b-model",
        "builtin/sma-cross:20:50",
        "--windows",
        "3",
        "--concurrency",
        "2",
        "--resamples",
        "2000",
        "--seed",
        "7",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.starts_with("3 walk-forward windows from 2017-04-19 10:00:00 UTC"),
        "{stdout}"
    );
    for label in ["net PnL", "Sharpe", "max drawdown", "win rate"] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("- B's {label} is ")))
            .unwrap_or_else(|| panic!("{label} in {stdout}"));
        assert!(line.contains("(95% CI ["), "{line}");
        assert!(
            line.contains("the interval includes 0: no evidence of a difference")
                || line.contains("the interval excludes 0: evidence that B's is"),
            "{line}"
        );
    }
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("ab.json")).unwrap()).unwrap();
    assert_eq!(json["resamples"], 2000);
    assert_eq!(json["seed"], 7);
    let windows = json["windows"].as_array().unwrap();
    assert_eq!(windows.len(), 3);
    let net = json["intervals"]["net PnL"].clone();
    assert_eq!(net["statistic"], "sum over windows");
    // The sum of the per-window differences, as the windows' summaries give them: equity at
    // the window's end less the initial (realized net of fees plus unrealized), which is not
    // the realized net alone when a window ends with a position open.
    let num = |v: &serde_json::Value| {
        v.as_str()
            .unwrap()
            .parse::<rust_decimal::Decimal>()
            .unwrap()
    };
    let mut open_at_an_end = false;
    let d: rust_decimal::Decimal = windows
        .iter()
        .map(|w| {
            let mut v = |s: &str| {
                let (s, realized, unrealized) = (
                    &w[s],
                    num(&w[s]["pnl"]["net_usd"]),
                    num(&w[s]["unrealized_pnl_usd"]),
                );
                open_at_an_end |= !unrealized.is_zero();
                assert_eq!(
                    num(&s["final_equity_usd"]) - num(&s["initial_equity_usd"]),
                    realized + unrealized
                );
                realized + unrealized
            };
            v("b") - v("a")
        })
        .sum();
    assert!(open_at_an_end, "a window ends with a position open");
    assert_eq!(
        net["b_minus_a"].as_str().unwrap(),
        d.round_dp(4).to_string()
    );
    let html = std::fs::read_to_string(out.join("ab.html")).unwrap();
    assert_eq!(html.matches("<polyline").count(), 2, "both equity curves");
    for (i, w) in windows.iter().enumerate() {
        let date = &w["from"].as_str().unwrap()[..10];
        assert!(
            html.contains(&format!("w{:02} {date}</text>", i + 1)),
            "window {i} marked"
        );
    }
    assert!(
        html.contains("- B&#39;s net PnL is "),
        "the report text, escaped"
    );

    // Window 2 of A is the backtest of its own span.
    let w2 = &windows[1];
    let (from, to) = (w2["from"].as_str().unwrap(), w2["to"].as_str().unwrap());
    let solo = dir.path().join("solo");
    let (code, _, stderr) = sim(&[
        "run",
        "--skill",
        &skill,
        "--bars",
        &bars,
        "--from",
        from,
        "--to",
        to,
        "--out",
        solo.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(solo.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["pnl"], w2["a"]["pnl"]);
    assert_eq!(summary["trades"], w2["a"]["trades"]);

    // --report-tick names one run: refused with --windows.
    let (code, _, stderr) = sim(&[
        "ab",
        "--skill",
        &skill,
        "--bars",
        &bars,
        "--b-memory",
        "off",
        "--windows",
        "2",
        "--report-tick",
        "2017-05-01 00:00",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--report-tick"), "{stderr}");
}
