//! The job fleet's speed-up: a batch of CPU-bound backtest jobs — the README's backtest (the
//! built-in `sma-cross` model over the 5,000 EURUSD hours) reading 240 bars a tick, blind: the
//! prompts' writing and rewriting make each job's work the worker's CPU rather than the
//! database's — queued on a fresh PostgreSQL database, then drained by `--workers` `sim-worker work` processes started side by side.
//! Prints how long the drain took, from the workers' start to the last one's exit, and checks
//! every job is done.
//!
//! ```text
//! cargo bench -p sim-worker --bench fleet -- --workers 1
//! cargo bench -p sim-worker --bench fleet -- --workers 2 [--jobs 12]
//! ```
//!
//! Needs PostgreSQL at `TEST_DATABASE_URL` (default `postgres://postgres@127.0.0.1:5432/postgres`);
//! the database it creates is dropped at the end. Figures: `docs/performance.md`.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

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
    let jobs = flag(&args, "--jobs", 12).max(1);
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
    let bars = format!("EURUSD={}", repo("examples/data/EURUSD.csv"));
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
        text.replace("barsLookback: 60", "barsLookback: 240"),
    )
    .expect("the skill variant");
    let skill = skill.display().to_string();
    for i in 0..jobs {
        let out = Command::new(bin)
            .args([
                "submit", "--db", &url, "--skill", &skill, "--bars", &bars, "--blind",
            ])
            .args(["--label", &format!("job {i}")])
            .output()
            .expect("submit");
        assert!(
            out.status.success(),
            "submit: {}",
            String::from_utf8_lossy(&out.stderr)
        );
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
    let took = start.elapsed();
    let out = Command::new(bin)
        .args(["jobs", "--db", &url, "--json", "--limit", "1000"])
        .output()
        .expect("jobs");
    let listed = String::from_utf8_lossy(&out.stdout);
    let done = listed
        .lines()
        .filter(|l| l.contains("\"status\":\"done\""))
        .count();
    assert_eq!(done, jobs as usize, "every job done:\n{listed}");
    println!(
        "{workers} worker(s): {jobs} blind jobs of 5,000 ticks drained in {} ms",
        took.as_millis()
    );
    drop(db);
}
