//! `sim-worker run` as a strategy author runs it: the files it writes, what it prints, and bad
//! input exiting 2 with nothing on stdout.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

use crate::common::repo;

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
    // The store is closed at the end: no journal or write-ahead log is left beside sim.db, so
    // copying sim.db alone copies the whole run.
    for side in ["sim.db-wal", "sim.db-journal"] {
        let path = out.join(side);
        assert!(
            !path.exists() || std::fs::metadata(&path).unwrap().len() == 0,
            "{side} is left beside sim.db"
        );
    }

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

/// The default store skips fsyncs (`db::Durability::Scratch`), but a run killed mid-way must
/// still leave a sound file holding the ticks it committed (the interrupted transaction is
/// rolled back from the journal when the file is opened again), and a new run into the same
/// `--out` must replace it.
#[test]
fn a_run_killed_mid_way_leaves_a_sound_store_with_the_ticks_it_committed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("killed");
    let bars = eurusd();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_sim-worker"))
        .args(["run", "--skill", &skill(), "--bars", &bars])
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once a few batches are in (the whole run writes ≈65 MB).
    let db = out.join("sim.db");
    let started = std::time::Instant::now();
    while std::fs::metadata(&db).map_or(0, |m| m.len()) < 2_000_000 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "the run never wrote 2 MB"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it was killed"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // The killed run's files, as it left them (a journal may be hot), to open below.
    let killed = dir.path().join("killed-copy");
    std::fs::create_dir(&killed).unwrap();
    for name in ["sim.db", "sim.db-journal"] {
        if out.join(name).exists() {
            std::fs::copy(out.join(name), killed.join(name)).unwrap();
        }
    }

    // Running again into the same --out replaces the killed run's store, journal included.
    let o = run(&[
        "run",
        "--skill",
        &skill(),
        "--bars",
        &bars,
        "--out",
        out.to_str().unwrap(),
        "--to",
        "2017-05-03",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(!out.join("sim.db-journal").exists());

    let db = killed.join("sim.db");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let url = format!("sqlite://{}?mode=rwc", db.display());
        let store = db::connect(&url)
            .await
            .expect("the killed run's store opens");
        let db::Store::Sqlite(lite) = &store else {
            unreachable!("a sqlite URL")
        };
        let check: String = sqlx::query_scalar("PRAGMA integrity_check")
            .fetch_one(lite.pool())
            .await
            .unwrap();
        assert_eq!(check, "ok");
        let dangling: Vec<(String,)> = sqlx::query_as("PRAGMA foreign_key_check")
            .fetch_all(lite.pool())
            .await
            .unwrap();
        assert!(dangling.is_empty(), "{dangling:?}");
        let snapshots: i64 = sqlx::query_scalar("SELECT count(*) FROM decision_snapshots")
            .fetch_one(lite.pool())
            .await
            .unwrap();
        assert!(snapshots > 0, "the committed ticks are kept");
        store.close().await.unwrap();
    });
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
            "'--from <TIME>': \"yesterday\" is not a time",
        ),
        (
            vec!["--bars", &bars, "--model", "nope/x"],
            "--model nope/x: unknown provider \"nope\"",
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

#[test]
fn preview_prints_the_exact_prompt_of_a_tick_with_token_counts() {
    let bars = eurusd();
    let o = run(&[
        "preview",
        "--skill",
        &skill(),
        "--bars",
        &bars,
        "--at",
        "2017-04-25 10:00",
    ]);
    assert_eq!(o.code, 0, "stderr: {}", o.stderr);
    assert!(
        o.stdout
            .starts_with("==== SYSTEM PROMPT at 2017-04-25 10:00:00 UTC · "),
        "{}",
        &o.stdout[..200]
    );
    assert!(o.stdout.contains("## Time\n2017-04-25T10:00:00Z (Tuesday)"));
    for part in [
        "system: HEADER",
        "system: STRATEGY",
        "system: FOOTER",
        "user: Market context",
        "user: Your turn",
        "total (system + user)",
    ] {
        assert!(o.stdout.contains(part), "{part} in the token table");
    }

    let o = run(&[
        "preview",
        "--skill",
        &skill(),
        "--bars",
        &bars,
        "--at",
        "2017-04-25 10:30",
    ]);
    assert_eq!(o.code, 2);
    assert!(o.stdout.is_empty());
    assert!(o.stderr.contains("no tick at that time"), "{}", o.stderr);
}

/// The ledger without the columns that name the run (row id).
fn ledger_without_ids(csv: &str) -> Vec<String> {
    csv.lines()
        .map(|l| l.split_once(',').map_or(l, |(_, rest)| rest).to_owned())
        .collect()
}

#[test]
fn replaying_a_recorded_run_reproduces_its_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let bars = eurusd();
    let base = |out: &Path| {
        vec![
            "run".to_owned(),
            "--skill".to_owned(),
            skill(),
            "--bars".to_owned(),
            bars.clone(),
            "--out".to_owned(),
            out.to_str().unwrap().to_owned(),
            "--to".to_owned(),
            "2017-05-03".to_owned(),
        ]
    };
    let args_a = base(&a);
    let o = run(&args_a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.code, 0, "{}", o.stderr);
    let mut args_b = base(&b);
    args_b.push("--model".to_owned());
    args_b.push(format!(
        "builtin/replay:sqlite://{}",
        a.join("sim.db").display()
    ));
    let o = run(&args_b.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.code, 0, "{}", o.stderr);

    let ledger_a = std::fs::read_to_string(a.join("trades.csv")).unwrap();
    let ledger_b = std::fs::read_to_string(b.join("trades.csv")).unwrap();
    assert!(ledger_a.lines().count() > 5);
    assert_eq!(ledger_without_ids(&ledger_a), ledger_without_ids(&ledger_b));
    let sa: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(a.join("summary.json")).unwrap()).unwrap();
    let sb: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(b.join("summary.json")).unwrap()).unwrap();
    assert_eq!(sa["pnl"], sb["pnl"]);
    assert_eq!(sa["final_equity_usd"], sb["final_equity_usd"]);
    assert!(sb["model"].as_str().unwrap().starts_with("builtin/replay:"));

    let o = run(&[
        "run",
        "--skill",
        &skill(),
        "--bars",
        &bars,
        "--out",
        dir.path().join("c").to_str().unwrap(),
        "--model",
        "builtin/replay:sqlite:///nonexistent/sim.db",
    ]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("no store at /nonexistent/sim.db"),
        "{}",
        o.stderr
    );
}

#[test]
fn ab_runs_both_variants_and_compares_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap().to_owned();
    let bars = eurusd();
    let o = run(&[
        "ab",
        "--skill",
        &skill(),
        "--bars",
        &bars,
        "--to",
        "2017-05-10",
        "--out",
        &out,
        "--b-memory",
        "off",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("closed trades"));
    let ab: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("ab.json")).unwrap())
            .unwrap();
    assert!(ab["a"]["notes"].as_u64().unwrap() >= 1, "A reflects");
    assert_eq!(ab["b"]["notes"], 0, "B has no memory, hence no notes");
    // The sma-cross baseline ignores memory: the same trades either way.
    assert_eq!(ab["a"]["pnl"], ab["b"]["pnl"]);
    assert!(dir.path().join("a/report.html").exists());
    assert!(dir.path().join("b/report.html").exists());

    let o = run(&["ab", "--skill", &skill(), "--bars", &bars, "--out", &out]);
    assert_eq!(o.code, 2);
    assert!(o.stdout.is_empty());
    assert!(o.stderr.contains("B is the same as A"), "{}", o.stderr);
}

#[test]
fn a_news_file_reaches_the_news_section_only_within_its_window() {
    let dir = tempfile::tempdir().unwrap();
    let news = dir.path().join("news.json");
    std::fs::write(
        &news,
        r#"[{"time": "2017-04-25T08:30:00Z", "headline": "ECB holds rates, signals patience",
             "source": "wire", "sentiment": "0.2", "importance": "0.8", "symbols": ["EURUSD"]}]"#,
    )
    .unwrap();
    let bars = eurusd();
    let preview = |at: &str| {
        run(&[
            "preview",
            "--skill",
            &skill(),
            "--bars",
            &bars,
            "--news",
            news.to_str().unwrap(),
            "--at",
            at,
        ])
    };
    let o = preview("2017-04-25 10:00");
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("ECB holds rates, signals patience"),
        "{}",
        o.stdout
    );
    // Published after the tick: not visible yet.
    let o = preview("2017-04-25 08:00");
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(!o.stdout.contains("ECB holds rates"));
    assert!(
        o.stdout
            .contains("No headlines about EURUSD in the last 6h.")
    );
}

/// The URL of `db` with a password the server ignores (trust auth) but a careless program would
/// print: `postgres://postgres:s3cret-pw@127.0.0.1:5432/name`.
fn with_password(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    match rest.split_once('@') {
        Some((user, host)) => format!(
            "{scheme}://{}:s3cret-pw@{host}",
            user.split(':').next().unwrap()
        ),
        None => format!("{scheme}://postgres:s3cret-pw@{rest}"),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_store_password_is_never_shown() {
    let test_db = db::test_support::pg::TestDatabase::create("sim_worker_redact_", 2).await;
    let url = with_password(&test_db.url());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let bars = eurusd();
    let args = [
        "run",
        "--skill",
        &skill(),
        "--bars",
        &bars,
        "--to",
        "2017-05-03",
        "--db",
        &url,
        "--out",
        out.to_str().unwrap(),
    ];
    let o = run(&args);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("postgres:***@"), "{}", o.stdout);
    let report = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(report.contains("postgres:***@"));
    for (what, text) in [
        ("stdout", &o.stdout),
        ("stderr", &o.stderr),
        ("report.html", &report),
    ] {
        assert!(
            !text.contains("s3cret-pw"),
            "{what} shows the password:\n{text}"
        );
    }
    for name in ["summary.json", "trades.csv"] {
        let text = std::fs::read_to_string(out.join(name)).unwrap();
        assert!(!text.contains("s3cret-pw"), "{name} shows the password");
    }

    // Errors naming the store do not show it either: an unreachable server, a run already there.
    let unreachable = "postgres://postgres:s3cret-pw@127.0.0.1:1/nowhere";
    let mut bad = args;
    bad[8] = unreachable;
    let o = run(&bad);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.contains("postgres:***@127.0.0.1:1"),
        "{}",
        o.stderr
    );
    let again = run(&args);
    assert_ne!(again.code, 0);
    assert!(
        again.stderr.contains("already holds this run"),
        "{}",
        again.stderr
    );
    for text in [&o.stdout, &o.stderr, &again.stdout, &again.stderr] {
        assert!(!text.contains("s3cret-pw"), "{text}");
    }
}

#[test]
fn preview_errors_speak_of_the_at_flag_the_user_gave() {
    let bars = eurusd();
    for (at, expected) in [
        (
            "2017-06-01 10:30",
            "--at 2017-06-01 10:30: no tick at that time",
        ),
        ("2010-01-01 00:00", "between --from and --at"),
        ("soon", "'--at <TIME>': \"soon\" is not a time"),
    ] {
        let o = run(&["preview", "--skill", &skill(), "--bars", &bars, "--at", at]);
        assert_eq!(o.code, 2, "{at}: {}", o.stderr);
        assert!(o.stderr.contains(expected), "{at}: {}", o.stderr);
        assert!(
            !o.stderr.contains("--report-tick") && !o.stderr.contains("--to"),
            "{at}: {}",
            o.stderr
        );
    }
}

/// Starts the README backtest into `out` and kills it (SIGKILL) once its store has grown well
/// past the previous run's, before it completes.
async fn killed_run(out: &Path) {
    let db = out.join("sim.db");
    // The previous run's store is a short run's (a few megabytes); this run's grows far beyond.
    let previous = std::fs::metadata(&db).map_or(0, |m| m.len());
    let bars = eurusd();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("sim-worker"))
        .args(["run", "--skill", &skill(), "--bars", &bars, "--out"])
        .arg(out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "the run never got past its first ticks"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it was killed"
        );
        // The run holds its store locked while it writes; its size says it has ticks (the
        // whole run is about 60 MB).
        let progressed = std::fs::metadata(&db).is_ok_and(|m| m.len() > previous + (4 << 20));
        if progressed {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn a_killed_run_leaves_no_summary_of_another_run_and_replay_refuses_to_pad_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let bars = eurusd();
    let short_run = || {
        let o = run(&[
            "run",
            "--skill",
            &skill(),
            "--bars",
            &bars,
            "--to",
            "2017-05-03",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        assert!(out.join("summary.json").exists());
    };
    // A complete short run first: its results are in --out.
    short_run();

    // A second run into the same --out, killed part-way: nothing of the first run's results is
    // left beside its partial store.
    killed_run(&out).await;
    for name in ["summary.json", "trades.csv", "report.html"] {
        assert!(
            !out.join(name).exists(),
            "{name} of another run left beside a partial store"
        );
    }

    // Replaying the partial run over the whole range says how much it has, instead of no-ops.
    let partial = format!("builtin/replay:sqlite://{}", out.join("sim.db").display());
    let elsewhere = dir.path().join("replay");
    let o = run(&[
        "run",
        "--skill",
        &skill(),
        "--bars",
        &bars,
        "--model",
        &partial,
        "--out",
        elsewhere.to_str().unwrap(),
    ]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.contains("of this run's 5000 ticks"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("a killed run is partial"), "{}", o.stderr);

    // The same command again redoes the run from scratch and completes.
    short_run();
}

#[test]
fn pinned_threads_change_nothing_but_where_they_run() {
    // `--pin-threads` places the tick's thread and the store's threads on CPUs of their own
    // (Linux, two or more CPUs); the default leaves them to the scheduler. Past two
    // write-behind batches (256 ticks each), the outputs must be the same bytes.
    let dir = tempfile::tempdir().unwrap();
    let bars = eurusd();
    let files = |extra: &[&str], name: &str| {
        let out = dir.path().join(name);
        let skill = skill();
        let mut args = vec![
            "run",
            "--skill",
            &skill,
            "--bars",
            &bars,
            "--to",
            "2017-06-01",
        ];
        args.extend_from_slice(&["--out", out.to_str().unwrap()]);
        args.extend_from_slice(extra);
        let o = run(&args);
        assert_eq!(o.code, 0, "stderr: {}", o.stderr);
        ["summary.json", "trades.csv"].map(|f| std::fs::read(out.join(f)).unwrap())
    };
    let pinned = files(&["--pin-threads"], "pinned");
    let free = files(&[], "free");
    let summary: serde_json::Value = serde_json::from_slice(&pinned[0]).unwrap();
    assert!(summary["ticks"].as_u64().unwrap() > 512, "{summary}");
    assert_eq!(pinned, free);
}
