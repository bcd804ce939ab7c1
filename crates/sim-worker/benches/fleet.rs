//! The job fleet's speed-up: a CPU-bound arena drained by one `sim-worker work` process or two.
//!
//! The arena is the README's (three entrants and the skill's rule baseline over eight windows
//! of the 5,000 EURUSD hours: 32 runs of ≈625 ticks, built-in models) reading 240 bars a tick,
//! blind: writing and rewriting the prompts makes each job's work the worker's CPU rather than
//! the database's. `sim-worker arena --db` queues it on a fresh PostgreSQL database; then
//! `--workers` worker processes are started side by side and the arena waits for them. Prints
//! how long the drain took, from the workers' start to the arena's arena.json, and checks the
//! arena finished.
//!
//! ```text
//! cargo bench -p sim-worker --bench fleet -- --workers 1
//! cargo bench -p sim-worker --bench fleet -- --workers 2 [--lookback 480]
//! ```
//!
//! `--lookback N` sets the skill's `barsLookback` (default 240, at most 500).
//!
//! Needs PostgreSQL at `TEST_DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`);
//! the database it creates is dropped at the end. Figures: `docs/performance.md`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `--name N` of `args`, or `default`.
fn flag(args: &[String], name: &str, default: u32) -> u32 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map_or(default, |v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}: {v:?} is not a count"))
        })
}

fn repo(p: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(p)
        .display()
        .to_string()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let workers = flag(&args, "--workers", 2).max(1);
    let lookback = flag(&args, "--lookback", 240).max(1);
    let bin = env!("CARGO_BIN_EXE_sim-worker");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let db = rt.block_on(db::test_support::pg::TestDatabase::create(
        "sim_worker_fleet_bench_",
        1,
    ));
    let url = db.url();
    // The README's skill reading 240 bars a tick instead of 60: four times the prompt to write
    // and rewrite blind, for about as many rows stored (the bars' lines repeat tick to tick).
    let dir = tempfile::tempdir().expect("a temporary directory");
    let skill = dir.path().join("eurusd-240.yaml");
    let text = std::fs::read_to_string(repo("examples/skills/eurusd-sma-cross.yaml"))
        .expect("the README's skill");
    assert!(
        text.contains("barsLookback: 60"),
        "the README's skill reads 60 bars"
    );
    std::fs::write(
        &skill,
        text.replace("barsLookback: 60", &format!("barsLookback: {lookback}")),
    )
    .expect("the skill variant");
    let log = dir.path().join("arena.log");
    let mut arena = Command::new(bin)
        .args(["arena", "--db", &url, "--blind", "--skill"])
        .arg(&skill)
        .args([
            "--bars",
            &format!("EURUSD={}", repo("examples/data/EURUSD.csv")),
            "--entrant",
            "fast:model=builtin/sma-cross:5:20",
            "--entrant",
            "slow:model=builtin/sma-cross:20:50",
            "--entrant",
            "half-size:risk.maxPositionPct=30",
            "--out",
        ])
        .arg(dir.path().join("arena"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("the arena's log"))
        .spawn()
        .expect("the arena");
    let said = || std::fs::read_to_string(&log).unwrap_or_default();
    while !said().contains("jobs queued") {
        assert!(
            arena.try_wait().expect("the arena").is_none(),
            "the arena ended before queueing its jobs:\n{}",
            said()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let start = Instant::now();
    let running: Vec<_> = (0..workers)
        .map(|w| {
            Command::new(bin)
                .args([
                    "work",
                    "--db",
                    &url,
                    "--drain",
                    "--owner",
                    &format!("bench-{w}"),
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("a worker")
        })
        .collect();
    for mut w in running {
        assert!(
            w.wait().expect("a worker's end").success(),
            "a worker failed"
        );
    }
    assert!(
        arena.wait().expect("the arena's end").success(),
        "the arena failed:\n{}",
        said()
    );
    let took = start.elapsed();
    assert!(
        said().contains("arena: 32 of 32 jobs done"),
        "every job done:\n{}",
        said()
    );
    assert!(dir.path().join("arena/arena.json").exists());
    println!(
        "{workers} worker(s): an arena of 32 blind jobs of ≈625 ticks drained in {} ms",
        took.as_millis()
    );
    drop(db);
}
