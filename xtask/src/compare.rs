//! `cargo xtask compare-backtesting-py`: backtesting.py 0.6.6's SmaCross(10, 20) and
//! `sim-worker run` on the same EURUSD bars, their trades and their speed (issue #17 item 5).
//!
//! 1. A throwaway venv in a temporary directory gets `backtesting==0.6.6` from PyPI (pip
//!    resolves its pandas, numpy and bokeh; the versions are printed).
//! 2. `examples/reference/smacross_backtesting_py.py` writes backtesting.py's trades
//!    (`trade_on_close=True`, no commission: fills at the signal bar's close) and times
//!    `Backtest.run()` alone, `--runs` times after a warm-up call, and takes the median.
//! 3. The trades are checked against the committed reference
//!    (`examples/reference/backtesting-py-smacross-10-20.csv`, which the parity test of the
//!    `sim-worker` crate compares with a backtest trade for trade); `--regenerate` rewrites it.
//! 4. The whole backtesting.py process (interpreter start, imports, reading the CSV, one run,
//!    writing the trades) is timed `--runs` times as well.
//! 5. `sim-worker` is built in release and the README's main command (the example skill,
//!    `builtin/sma-cross:10:20`, every tick's snapshot persisted to SQLite, the report written)
//!    is timed as a whole process `--runs` times.
//!
//! It prints both throughputs in bars per second (medians) and their ratios. The headline
//! ratio is the conservative one: sim-worker's whole process against backtesting.py's
//! `Backtest.run()` alone.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};

/// The backtesting.py release the reference trades come from.
const BACKTESTING_VERSION: &str = "0.6.6";
const SCRIPT: &str = "examples/reference/smacross_backtesting_py.py";
const REFERENCE: &str = "examples/reference/backtesting-py-smacross-10-20.csv";
const BARS: &str = "examples/data/EURUSD.csv";
const SKILL: &str = "examples/skills/eurusd-sma-cross.yaml";

/// Options of the task.
struct Options {
    runs: usize,
    regenerate: bool,
}

fn parse(args: &[String]) -> Result<Options> {
    let mut options = Options {
        runs: 5,
        regenerate: false,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--regenerate" => options.regenerate = true,
            "--runs" => {
                let n = it.next().context("--runs needs a number")?;
                options.runs =
                    n.parse().ok().filter(|n| *n >= 1).with_context(|| {
                        format!("--runs: expected a whole number ≥ 1, got {n:?}")
                    })?;
            }
            other => bail!(
                "compare-backtesting-py: unknown argument {other:?} (expected --runs N, --regenerate)"
            ),
        }
    }
    Ok(options)
}

/// Runs the task (see the module docs).
pub(crate) fn compare_backtesting_py(args: &[String]) -> Result<()> {
    let options = parse(args)?;
    let root = workspace_root()?;
    let tmp = tempfile::Builder::new()
        .prefix("xtask-backtesting-py-")
        .tempdir()
        .context("creating a temporary directory for the venv")?;

    // 1. the venv
    let venv = tmp.path().join("venv");
    eprintln!(
        "xtask: creating a venv in {} and installing backtesting=={BACKTESTING_VERSION} from PyPI",
        venv.display()
    );
    run(Command::new("python3").arg("-m").arg("venv").arg(&venv))
        .context("python3 -m venv (Debian: apt-get install python3-venv)")?;
    let python = venv.join("bin/python");
    run(Command::new(&python).args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        &format!("backtesting=={BACKTESTING_VERSION}"),
    ]))
    .context("pip install backtesting")?;

    // 2. + 3. trades and Backtest.run() timing
    let trades = tmp.path().join("trades.csv");
    let script = root.join(SCRIPT);
    let bars = root.join(BARS);
    let out = output(
        Command::new(&python)
            .arg(&script)
            .arg("--bars")
            .arg(&bars)
            .arg("--trades")
            .arg(&trades)
            .arg("--runs")
            .arg(options.runs.to_string()),
    )
    .context("running the backtesting.py script")?;
    let timing: serde_json::Value = serde_json::from_str(out.trim())
        .with_context(|| format!("reading the script's timing line {out:?}"))?;
    let bt_run_median = number(&timing, "median_s")?;
    let bar_count = number(&timing, "bars")?;
    check_reference(&root, &trades, &timing, options.regenerate)?;

    // 4. the whole backtesting.py process
    let mut bt_process = Vec::with_capacity(options.runs);
    for _ in 0..options.runs {
        let once = tmp.path().join("once.csv");
        bt_process.push(timed(
            Command::new(&python)
                .arg(&script)
                .arg("--bars")
                .arg(&bars)
                .arg("--trades")
                .arg(&once),
        )?);
    }

    // 5. sim-worker, release, the README's main command
    eprintln!("xtask: building sim-worker (release)");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    run(Command::new(&cargo).current_dir(&root).args([
        "build",
        "--release",
        "--locked",
        "-p",
        "sim-worker",
    ]))
    .context("cargo build --release -p sim-worker")?;
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let sim_worker = target.join("release/sim-worker");
    ensure!(
        sim_worker.exists(),
        "{} was not built (is CARGO_TARGET_DIR set differently for this shell?)",
        sim_worker.display()
    );
    let sim_out = tmp.path().join("eurusd");
    let mut sim = Vec::with_capacity(options.runs);
    for _ in 0..options.runs {
        sim.push(timed(
            Command::new(&sim_worker)
                .current_dir(&root)
                .args(["run", "--skill", SKILL, "--bars"])
                .arg(format!("EURUSD={BARS}"))
                .arg("--out")
                .arg(&sim_out),
        )?);
    }

    let bt_process_median = median(&mut bt_process);
    let sim_median = median(&mut sim);
    let rate = |seconds: f64| bar_count / seconds;
    println!(
        "bars: {bar_count} ({BARS}); {} runs each, medians",
        options.runs
    );
    println!("versions: {}", timing["versions"]);
    println!(
        "backtesting.py {BACKTESTING_VERSION} SmaCross(10, 20), Backtest.run() only: {:.3} s = {:.0} bars/s (runs {})",
        bt_run_median,
        rate(bt_run_median),
        timing["runs"]
    );
    println!(
        "backtesting.py, whole process (python start, imports, CSV, one run, trades written): {:.3} s = {:.0} bars/s (runs {})",
        bt_process_median,
        rate(bt_process_median),
        seconds(&bt_process)
    );
    println!(
        "sim-worker run (release), whole process, every snapshot persisted to SQLite, report written: {:.3} s = {:.0} bars/s (runs {})",
        sim_median,
        rate(sim_median),
        seconds(&sim)
    );
    println!(
        "ratio sim-worker / backtesting.py: {:.2}x against Backtest.run() only; {:.2}x process against process",
        bt_run_median / sim_median,
        bt_process_median / sim_median
    );
    Ok(())
}

/// Compares the trades the script wrote with the committed reference (its `#` header lines
/// aside), or rewrites the reference with `regenerate`.
fn check_reference(
    root: &Path,
    trades: &Path,
    timing: &serde_json::Value,
    regenerate: bool,
) -> Result<()> {
    let fresh =
        std::fs::read_to_string(trades).with_context(|| format!("reading {}", trades.display()))?;
    let path = root.join(REFERENCE);
    if regenerate {
        let header = format!(
            "# backtesting.py {BACKTESTING_VERSION} SmaCross(10, 20) on {BARS}: Backtest(data, SmaCross, cash=10_000,\n\
             # commission=0, spread=0, trade_on_close=True, exclusive_orders=False, hedging=False,\n\
             # finalize_trades=False).run(); times are the bars' open times as the CSV stamps them\n\
             # (backtesting.py's EntryTime/ExitTime); the last trade is still open.\n\
             # Versions: {}\n\
             # Produced by: cargo xtask compare-backtesting-py --regenerate\n\
             # (python {SCRIPT} --bars {BARS} --trades FILE, in a venv with backtesting=={BACKTESTING_VERSION}).\n",
            timing["versions"]
        );
        std::fs::write(&path, header + &fresh)
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("xtask: wrote {}", path.display());
        return Ok(());
    }
    let committed = std::fs::read_to_string(&path)
        .with_context(|| format!("reading {} (write it with --regenerate)", path.display()))?;
    let body: String = committed
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    if body != fresh {
        let first = body
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .map_or_else(
                || "the number of trades".to_owned(),
                |i| format!("trade line {}", i + 1),
            );
        bail!(
            "backtesting.py's trades differ from {REFERENCE} ({} vs {} lines; first difference at {first}); \
             inspect them, then `cargo xtask compare-backtesting-py --regenerate` if they should change",
            body.lines().count(),
            fresh.lines().count()
        );
    }
    eprintln!(
        "xtask: backtesting.py's {} trades match {REFERENCE}",
        fresh.lines().count().saturating_sub(1)
    );
    Ok(())
}

fn workspace_root() -> Result<PathBuf> {
    // `cargo run` (the `cargo xtask` alias) sets it for the process: the clone the command ran
    // in. The path compiled in names the clone that built the binary, which is another one when
    // clones share a target directory (cargo does not relink a fresh binary).
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    manifest
        .parent()
        .map(Path::to_path_buf)
        .context("xtask's manifest directory has no parent")
}

fn number(v: &serde_json::Value, key: &str) -> Result<f64> {
    v[key]
        .as_f64()
        .with_context(|| format!("the script's timing line has no number {key:?}: {v}"))
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn seconds(values: &[f64]) -> String {
    let parts: Vec<String> = values.iter().map(|v| format!("{v:.3}")).collect();
    format!("[{}]", parts.join(", "))
}

fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd.status().with_context(|| format!("starting {cmd:?}"))?;
    ensure!(status.success(), "{cmd:?} failed ({status})");
    Ok(())
}

fn output(cmd: &mut Command) -> Result<String> {
    let out = cmd.output().with_context(|| format!("starting {cmd:?}"))?;
    ensure!(
        out.status.success(),
        "{cmd:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).context("the output is not UTF-8")
}

/// Wall-clock seconds of one run of `cmd`, its output discarded.
fn timed(cmd: &mut Command) -> Result<f64> {
    let start = Instant::now();
    let out = cmd.output().with_context(|| format!("starting {cmd:?}"))?;
    let elapsed = start.elapsed().as_secs_f64();
    ensure!(
        out.status.success(),
        "{cmd:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(elapsed)
}
