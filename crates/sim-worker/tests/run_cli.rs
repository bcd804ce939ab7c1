//! `sim-worker run` as a strategy author runs it: the files it writes, what it prints, and bad
//! input exiting 2 with nothing on stdout.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn repo(p: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(p)
        .to_str()
        .unwrap()
        .to_owned()
}

struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Outcome {
    let out = Command::cargo_bin("sim-worker")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    Outcome {
        code: out.status.code().unwrap(),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

fn skill() -> String {
    repo("examples/skills/eurusd-sma-cross.yaml")
}

fn eurusd() -> String {
    format!("EURUSD={}", repo("examples/data/EURUSD.csv"))
}

#[test]
fn a_short_run_writes_the_summary_the_ledger_the_store_and_a_self_contained_report() {
    let dir = tempfile::tempdir().unwrap();
    let out: PathBuf = dir.path().join("eurusd");
    let out_s = out.to_str().unwrap();
    let bars = eurusd();
    let o = run(&[
        "run",
        "--skill",
        &skill(),
        "--bars",
        &bars,
        "--out",
        out_s,
        "--to",
        "2017-05-03",
        "--fee-bps",
        "0",
        "--slippage-bps",
        "0",
        "--report-tick",
        "2017-05-02 10:00",
    ]);
    assert_eq!(o.code, 0, "stderr: {}", o.stderr);
    let report = out.join("report.html");
    assert!(
        o.stdout
            .lines()
            .last()
            .unwrap()
            .ends_with(report.to_str().unwrap()),
        "the last line says where the report is: {}",
        o.stdout
    );
    // Not a terminal: plain progress lines on stderr.
    assert!(o.stderr.contains("tick "), "{}", o.stderr);

    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    // 2017-04-19 10:00 .. 2017-05-03 00:00, hourly, weekends without bars.
    let ticks = summary["ticks"].as_u64().unwrap();
    assert!((200..=340).contains(&ticks), "{ticks}");
    assert_eq!(summary["pnl"]["fees_usd"], "0");
    assert_eq!(summary["model"], "builtin/sma-cross:10:20");
    assert!(summary["trades"].as_u64().unwrap() >= 5);

    let csv = std::fs::read_to_string(out.join("trades.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(header.starts_with("id,symbol,side,status,entry_time,entry_price"));
    assert!(csv.lines().count() > 5);

    assert!(
        out.join("sim.db").exists(),
        "the default store is SQLite in --out"
    );

    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("<svg"), "inline charts");
    assert!(!html.contains("<script"), "no scripts");
    assert!(!html.contains("src=\"http"), "no external assets");
    assert!(!html.contains("href=\"http"), "no external assets");
    assert!(html.contains("What the agent saw at 2017-05-02T10:00:00Z"));
    assert!(
        html.contains("## Time\n2017-05-02T10:00:00Z"),
        "the exact user message"
    );
    assert!(html.contains("Lessons history"));

    // Running again replaces the default store and gives the same ledger.
    let again = run(&[
        "run",
        "--skill",
        &skill(),
        "--bars",
        &bars,
        "--out",
        out_s,
        "--to",
        "2017-05-03",
        "--fee-bps",
        "0",
        "--slippage-bps",
        "0",
        "--report-tick",
        "2017-05-02 10:00",
    ]);
    assert_eq!(again.code, 0, "stderr: {}", again.stderr);
    assert_eq!(
        std::fs::read_to_string(out.join("trades.csv")).unwrap(),
        csv
    );
}

#[test]
fn bad_input_exits_2_naming_the_problem_with_nothing_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap().to_owned();
    let goog = format!("EURUSD={}", repo("examples/data/GOOG.csv"));
    let btc = format!("BTC={}", repo("examples/data/EURUSD.csv"));
    let bars = eurusd();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--bars", &goog],
            "the bars are 1d, the skill trades 1h",
        ),
        (
            vec!["--bars", &btc],
            "BTC is not one of the skill's symbols",
        ),
        (vec!["--bars", "EURUSD"], "expected SYMBOL=PATH"),
        (
            vec!["--bars", &bars, "--from", "2030-01-01"],
            "no 1h bar closes between --from and --to",
        ),
        (
            vec!["--bars", &bars, "--report-tick", "2017-04-19 09:30"],
            "--report-tick 2017-04-19 09:30: no tick at that time",
        ),
        (
            vec!["--bars", &bars, "--fee-bps=-1"],
            "--fee-bps: must be at least 0",
        ),
        (
            vec!["--bars", &bars, "--from", "yesterday"],
            "is not a UTC time",
        ),
        (
            vec!["--bars", &bars, "--model", "nope/x"],
            "--model nope/x: unknown model",
        ),
    ];
    for (extra, expected) in cases {
        let skill = skill();
        let mut args = vec!["run", "--skill", &skill, "--out", &out];
        args.extend(extra.iter().copied());
        let o = run(&args);
        assert_eq!(o.code, 2, "{args:?}: {}", o.stderr);
        assert!(o.stdout.is_empty(), "{args:?}: stdout {:?}", o.stdout);
        assert!(
            o.stderr.contains(expected),
            "{args:?}: expected {expected:?} in {:?}",
            o.stderr
        );
    }
}
