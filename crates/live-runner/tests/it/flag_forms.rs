//! One style at every seam: every time flag of `live-runner` reads the same forms as
//! `sim-worker`'s, every duration flag takes units, and bad input exits 2 naming the flag (a
//! `--bars` that is not a directory too).

use std::process::Command;

/// Every form a time flag accepts (all the same instant); sim-worker's test lists the same.
const GOOD_TIMES: [&str; 5] = [
    "2017-05-10",
    "2017-05-10 00:00",
    "2017-05-10T00:00",
    "2017-05-10T00:00:00Z",
    "2017-05-10T02:00:00+02:00",
];
/// A store that cannot be opened: a command that parsed its flags fails there (some commands
/// call that bad input too, so the message, not the exit code, says parsing went through).
const NO_DB: &str = "sqlite:///nonexistent/dir/none.db";
const ID: &str = "00000000-0000-0000-0000-000000000001";

fn live(args: &[&str]) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_live-runner"))
        .args(args)
        .env("AGENT_JWT_SECRET", "0123456789abcdef0123456789abcdef")
        .output()
        .expect("run live-runner");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn refused(args: &[&str], named: &str) {
    let (code, stderr) = live(args);
    assert_eq!(code, 2, "{args:?}: {stderr}");
    assert!(
        stderr.contains(&format!("for '{named} <")),
        "{args:?}: {stderr}"
    );
}

#[test]
fn every_time_flag_takes_the_same_forms_and_refuses_a_bad_one_with_exit_2() {
    let cases: [Vec<&str>; 4] = [
        vec!["lessons", "accept", "--db", NO_DB, "--by", "me", ID],
        vec!["lessons", "reject", "--db", NO_DB, "--by", "me", ID],
        vec![
            "memory-stats",
            "--db",
            NO_DB,
            "--symbol",
            "BTC",
            "--days",
            "7",
        ],
        vec!["promote-note", "--db", NO_DB, "--note", ID],
    ];
    for head in &cases {
        for time in GOOD_TIMES {
            let mut args = head.clone();
            args.extend(["--at", time]);
            let (code, stderr) = live(&args);
            assert!(
                stderr.contains("unable to open database file")
                    && !stderr.contains("invalid value"),
                "{args:?}: {code} {stderr}"
            );
        }
        let mut args = head.clone();
        args.extend(["--at", "yesterday"]);
        refused(&args, "--at");
    }
    // The window of `ticks`.
    for flag in ["--from", "--to"] {
        for time in GOOD_TIMES {
            let args = ["ticks", "--db", NO_DB, flag, time];
            let (code, stderr) = live(&args);
            assert!(
                stderr.contains("unable to open database file")
                    && !stderr.contains("invalid value"),
                "{args:?}: {code} {stderr}"
            );
        }
        refused(&["ticks", "--db", NO_DB, flag, "yesterday"], flag);
    }
}

#[test]
fn every_duration_flag_takes_units_and_old_spellings_still_work() {
    let run = ["run", "--db", NO_DB, "--once", "--listen", "127.0.0.1:0"];
    for (flag, good) in [
        ("--tick-budget", "2m"),
        ("--tick-budget-secs", "120"),
        ("--poll", "5s"),
        ("--poll-secs", "5"),
        ("--news-every", "15m"),
        ("--news-every", "300"),
        ("--news-timeout", "10s"),
        ("--news-timeout-secs", "10"),
        ("--score-outcomes-every", "1h30m"),
        ("--db-acquire-timeout", "5s"),
    ] {
        let mut args = run.to_vec();
        args.extend([flag, good]);
        let (code, stderr) = live(&args);
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains("unable to open database file"),
            "{args:?}: {stderr}"
        );
        let mut args = run.to_vec();
        args.extend([flag, "soon"]);
        let named = flag.trim_end_matches("-secs");
        refused(&args, named);
    }
    let token = ["token", "--user", ID];
    for ttl in ["90s", "30m", "1h", "7d", "3600"] {
        let mut args = token.to_vec();
        args.extend(["--ttl", ttl]);
        let (code, stderr) = live(&args);
        assert_eq!(code, 0, "{args:?}: {stderr}");
    }
    refused(&["token", "--user", ID, "--ttl", "0h"], "--ttl");
}

/// `run`'s pool flags: a size of at least one connection, an acquire timeout shorter than the
/// tick budget; anything else exits 2 naming the flag.
#[test]
fn the_pool_flags_refuse_no_connections_and_a_wait_past_the_tick_budget() {
    let run = ["run", "--db", NO_DB, "--once", "--listen", "127.0.0.1:0"];
    let mut args = run.to_vec();
    args.extend(["--db-pool", "3", "--db-acquire-timeout", "30s"]);
    let (code, stderr) = live(&args);
    assert_eq!(code, 1, "{args:?}: {stderr}");
    assert!(
        stderr.contains("unable to open database file"),
        "{args:?}: {stderr}"
    );
    for bad in ["0", "many"] {
        let mut args = run.to_vec();
        args.extend(["--db-pool", bad]);
        refused(&args, "--db-pool");
    }
    for budget in [None, Some("2m")] {
        let mut args = run.to_vec();
        args.extend(["--db-acquire-timeout", "2m"]);
        if let Some(budget) = budget {
            args.extend(["--tick-budget", budget]);
        }
        let (code, stderr) = live(&args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(
            stderr.contains("--db-acquire-timeout must be shorter than --tick-budget"),
            "{args:?}: {stderr}"
        );
    }
}

/// The same bad time exits 2 with the same message as in `sim-worker` (its own test says so).
#[test]
fn a_bad_time_is_a_usage_error() {
    let (code, stderr) = live(&[
        "memory-stats",
        "--db",
        NO_DB,
        "--symbol",
        "BTC",
        "--days",
        "7",
        "--at",
        "yesterday",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(
            "error: invalid value 'yesterday' for '--at <TIME>': \"yesterday\" is not a time"
        ),
        "{stderr}"
    );
}

#[test]
fn bars_must_be_a_directory_and_excludes_hl_url() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(&script, "[]").unwrap();
    let missing = dir.path().join("no-such-dir");
    let head = |market: &[&str]| {
        let mut args: Vec<String> = [
            "chat",
            "--user",
            "00000000-0000-0000-0000-000000000001",
            "--db",
            "sqlite::memory:",
            "--model",
            "builtin/scripted",
            "--script",
            script.to_str().unwrap(),
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        args.extend(market.iter().map(|s| (*s).to_owned()));
        args
    };
    let run = |args: Vec<String>| live(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let (code, stderr) = run(head(&["--bars", missing.to_str().unwrap()]));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!("--bars {}:", missing.display())),
        "{stderr}"
    );
    let (code, stderr) = run(head(&[
        "--bars",
        dir.path().to_str().unwrap(),
        "--hl-url",
        "http://127.0.0.1:9",
    ]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("cannot be used with"), "{stderr}");
}
