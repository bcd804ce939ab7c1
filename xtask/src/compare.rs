//! `cargo xtask compare-backtesting-py`: backtesting.py 0.6.6's SmaCross(10, 20) and
//! `sim-worker run` on the same EURUSD bars, their trades and their speed (issue #17 item 5).
//!
//! 1. A throwaway venv in a temporary directory gets `backtesting==0.6.6` from PyPI (pip
//!    resolves its pandas, numpy and bokeh; the versions are printed).
//! 2. `examples/reference/smacross_backtesting_py.py` writes backtesting.py's trades
//!    (`trade_on_close=True`, no commission: fills at the signal bar's close).
//! 3. The trades are checked against the committed reference
//!    (`examples/reference/backtesting-py-smacross-10-20.csv`, which the parity test of the
//!    `sim-worker` crate compares with a backtest trade for trade); `--regenerate` rewrites it.
//! 4. `sim-worker` is built in release.
//! 5. `--runs` rounds, each timing back to back: one `Backtest.run()` call alone (the script
//!    serves them, `--serve`, after a warm-up call: no interpreter start, imports or CSV
//!    reading), one whole backtesting.py process (interpreter start, imports, reading the CSV,
//!    one run, writing the trades) and one `sim-worker` process running the README's main
//!    command (the example skill, `builtin/sma-cross:10:20`, every tick's snapshot persisted to
//!    SQLite, the report written) with `--pin-threads`. Interleaved, so that a host whose speed drifts over the
//!    minutes (a shared VM's does, by tens of per cent) slows both sides alike.
//!
//! It prints both throughputs in bars per second (medians) and their ratios, and the median of
//! the rounds' own ratios. The headline ratio is the conservative one: sim-worker's whole
//! process against backtesting.py's `Backtest.run()` alone.

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

    // 2. + 3. trades, checked against the reference
    let trades = tmp.path().join("trades.csv");
    let script = root.join(SCRIPT);
    let bars = root.join(BARS);
    run(Command::new(&python)
        .arg(&script)
        .arg("--bars")
        .arg(&bars)
        .arg("--trades")
        .arg(&trades))
    .context("running the backtesting.py script")?;

    // 4. sim-worker, release (built before any timing)
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

    // 5. the timed rounds: in each, one `Backtest.run()` call (the script serving them, warm),
    // one whole backtesting.py process and one sim-worker process running the README's main
    // command, one after the other, so that a host whose speed drifts slows all three alike.
    let mut server = BacktestServer::start(&python, &script, &bars)?;
    let bar_count = number(&server.ready, "bars")?;
    check_reference(&root, &trades, &server.ready, options.regenerate)?;
    let sim_out = tmp.path().join("eurusd");
    let once = tmp.path().join("once.csv");
    let (mut bt_run, mut bt_process, mut sim, mut ratios) = (
        Vec::with_capacity(options.runs),
        Vec::with_capacity(options.runs),
        Vec::with_capacity(options.runs),
        Vec::with_capacity(options.runs),
    );
    for _ in 0..options.runs {
        let run = server.time_run()?;
        bt_run.push(run);
        bt_process.push(timed(
            Command::new(&python)
                .arg(&script)
                .arg("--bars")
                .arg(&bars)
                .arg("--trades")
                .arg(&once),
        )?);
        // Placed, as every comparison in the performance diary was measured (the command's
        // default leaves the threads to the scheduler).
        let s = timed(
            Command::new(&sim_worker)
                .current_dir(&root)
                .args(["run", "--skill", SKILL, "--bars"])
                .arg(format!("EURUSD={BARS}"))
                .arg("--out")
                .arg(&sim_out)
                .arg("--pin-threads"),
        )?;
        sim.push(s);
        ratios.push(run / s);
    }
    let versions = server.ready["versions"].clone();
    server.stop()?;

    let bt_run_median = median(&mut bt_run.clone());
    let bt_process_median = median(&mut bt_process);
    let sim_median = median(&mut sim);
    let rate = |seconds: f64| bar_count / seconds;
    println!(
        "bars: {bar_count} ({BARS}); {} runs each, medians",
        options.runs
    );
    println!("versions: {versions}");
    println!(
        "backtesting.py {BACKTESTING_VERSION} SmaCross(10, 20), Backtest.run() only: {:.3} s = {:.0} bars/s (runs {})",
        bt_run_median,
        rate(bt_run_median),
        seconds(&bt_run)
    );
    println!(
        "backtesting.py, whole process (python start, imports, CSV, one run, trades written): {:.3} s = {:.0} bars/s (runs {})",
        bt_process_median,
        rate(bt_process_median),
        seconds(&bt_process)
    );
    println!(
        "sim-worker run --pin-threads (release), whole process, every snapshot persisted to SQLite, report written: {:.3} s = {:.0} bars/s (runs {})",
        sim_median,
        rate(sim_median),
        seconds(&sim)
    );
    println!(
        "ratio sim-worker / backtesting.py: {:.2}x against Backtest.run() only; {:.2}x process against process",
        bt_run_median / sim_median,
        bt_process_median / sim_median
    );
    println!(
        "the rounds' own ratios against Backtest.run() (each round times both sides back to back): median {:.2}x (rounds {})",
        median(&mut ratios.clone()),
        ratios
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

/// The backtesting.py script serving timed `Backtest.run()` calls (`--serve`): one per line
/// written to its stdin, its seconds read back from its stdout.
struct BacktestServer {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    /// Its first line: the bar count and the versions.
    ready: serde_json::Value,
}

impl BacktestServer {
    fn start(python: &Path, script: &Path, bars: &Path) -> Result<Self> {
        use std::io::BufRead as _;
        use std::process::Stdio;
        let mut child = Command::new(python)
            .arg(script)
            .arg("--bars")
            .arg(bars)
            .arg("--serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("starting the backtesting.py script (--serve)")?;
        let stdin = child.stdin.take().context("the script's stdin")?;
        let mut stdout =
            std::io::BufReader::new(child.stdout.take().context("the script's stdout")?);
        let mut line = String::new();
        stdout
            .read_line(&mut line)
            .context("reading the script's first line")?;
        let ready = serde_json::from_str(line.trim())
            .with_context(|| format!("reading the script's first line {line:?}"))?;
        Ok(Self {
            child,
            stdin,
            stdout,
            ready,
        })
    }

    /// The seconds of one `Backtest.run()` call.
    fn time_run(&mut self) -> Result<f64> {
        use std::io::{BufRead as _, Write as _};
        writeln!(self.stdin, "run").context("asking the script for a run")?;
        self.stdin.flush().context("asking the script for a run")?;
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .context("reading a run's time from the script")?;
        line.trim()
            .parse()
            .with_context(|| format!("the script answered {line:?}, not seconds"))
    }

    /// Ends the script (its stdin closes) and checks that it exited cleanly.
    fn stop(self) -> Result<()> {
        let Self {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let status = child.wait().context("waiting for the script")?;
        ensure!(
            status.success(),
            "the backtesting.py script failed ({status})"
        );
        Ok(())
    }
}

/// Compares the trades the script wrote with the committed reference (its `#` header lines
/// aside), or rewrites the reference with `regenerate`.
fn check_reference(
    root: &Path,
    trades: &Path,
    ready: &serde_json::Value,
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
            ready["versions"]
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
        .with_context(|| format!("the script's first line has no number {key:?}: {v}"))
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
