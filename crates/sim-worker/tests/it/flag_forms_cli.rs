//! One style at every seam: every command of `sim-worker` that takes a time reads the same forms
//! through one parser, and a bad time is a usage error (exit 2) naming the flag.

use std::process::Command;

use crate::common::repo;

/// Every form a time flag accepts (all the same instant).
pub(crate) const GOOD_TIMES: [&str; 5] = [
    "2017-05-10",
    "2017-05-10 00:00",
    "2017-05-10T00:00",
    "2017-05-10T00:00:00Z",
    "2017-05-10T02:00:00+02:00",
];

/// A store that does not exist: a command that parsed its flags fails opening it (sim-worker
/// calls a store it cannot open bad input too, so only the message tells the two apart).
const NO_DB: &str = "sqlite:///nonexistent/dir/none.db";
const ID: &str = "00000000-0000-0000-0000-000000000001";

fn sim(args: &[&str]) -> (i32, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_sim-worker"))
        .args(args)
        .output()
        .expect("run sim-worker");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn every_time_flag_takes_the_same_forms_and_refuses_a_bad_one_with_exit_2() {
    let (skill, bars) = (
        repo("examples/skills/eurusd-sma-cross.yaml"),
        format!("EURUSD={}", repo("examples/data/EURUSD.csv")),
    );
    // (arguments before the time flag, the flag, whether the command stops later at the
    // unknown model that keeps a backtest from running, rather than at the store).
    let offline: Vec<&str> = vec!["--skill", &skill, "--bars", &bars, "--model", "nope/x"];
    let mut cases: Vec<(Vec<&str>, &str, bool)> = Vec::new();
    for flag in ["--from", "--to", "--report-tick"] {
        let mut run = vec!["run"];
        run.extend(&offline);
        cases.push((run, flag, true));
        let mut ab = vec!["ab", "--b-model", "builtin/sma-cross:5:10"];
        ab.extend(&offline);
        cases.push((ab, flag, true));
    }
    for flag in ["--at", "--from"] {
        let mut preview = vec!["preview"];
        preview.extend(&offline);
        if flag == "--from" {
            preview.extend(["--at", "2017-05-10"]);
        }
        cases.push((preview, flag, true));
    }
    cases.extend([
        (
            vec![
                "skill", "validate", &skill, "--bars", &bars, "--model", "nope/x",
            ],
            "--at",
            true,
        ),
        (
            vec!["reflect", "--db", NO_DB, "--deployment", ID],
            "--at",
            false,
        ),
        (
            vec!["accept-note", "--db", NO_DB, "--note", ID],
            "--at",
            false,
        ),
        (
            vec!["promote-note", "--db", NO_DB, "--note", ID],
            "--at",
            false,
        ),
        (
            vec!["lessons", "accept", "--db", NO_DB, "--by", "me", ID],
            "--at",
            false,
        ),
        (
            vec!["lessons", "reject", "--db", NO_DB, "--by", "me", ID],
            "--at",
            false,
        ),
        (
            vec![
                "memory-stats",
                "--db",
                NO_DB,
                "--symbol",
                "EURUSD",
                "--days",
                "7",
            ],
            "--at",
            false,
        ),
        (
            vec!["score-outcomes", "--db", NO_DB, "--bars", &bars],
            "--at",
            false,
        ),
        // The old name of score-outcomes' --at.
        (
            vec!["score-outcomes", "--db", NO_DB, "--bars", &bars],
            "--now",
            false,
        ),
        (vec!["ticks", "--db", NO_DB], "--from", false),
        (vec!["ticks", "--db", NO_DB], "--to", false),
    ]);
    for (head, flag, exits_2_later) in &cases {
        for time in GOOD_TIMES {
            let mut args = head.clone();
            args.extend([*flag, time]);
            let (code, stderr) = sim(&args);
            assert!(
                !stderr.contains("invalid value") && !stderr.contains("is not a time"),
                "{args:?}: {stderr}"
            );
            assert!(
                *exits_2_later || stderr.contains("none.db"),
                "{args:?}: {code} {stderr}"
            );
        }
        let mut args = head.clone();
        args.extend([*flag, "yesterday"]);
        let (code, stderr) = sim(&args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        // clap names an old spelling by the flag's name.
        let named = if *flag == "--now" { "--at" } else { flag };
        assert!(
            stderr.contains(&format!("invalid value 'yesterday' for '{named} <TIME>'"))
                && stderr.contains("RFC 3339"),
            "{args:?}: {stderr}"
        );
    }
}

/// The same bad time exits 2 with the same message as in `live-runner` (its own test says so).
#[test]
fn a_bad_time_is_a_usage_error() {
    let (code, stderr) = sim(&[
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
