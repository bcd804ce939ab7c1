//! Where `sim-worker run`'s threads may run, read from the kernel while the real binary is in
//! the middle of its ticks: without `--pin-threads` every thread keeps the CPUs it inherited;
//! with it, the tick's thread and the store's threads are on one CPU each, not the same.
//!
//! The run is held mid-tick without timing: its stderr is a pipe the test has filled, so the
//! tick's thread blocks in its first progress line (written between two ticks, pinned when
//! placed) until the test reads. While it is blocked the test reads every thread's
//! `Cpus_allowed_list` from `/proc/<pid>/task/*/status`, then drains the pipe and lets the run
//! finish.

use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::repo;

/// The CPUs in a `Cpus_allowed_list` value (`0-3,6`).
fn cpus(list: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let (lo, hi): (usize, usize) = (lo.parse().unwrap(), hi.parse().unwrap());
        out.extend(lo..=hi);
    }
    out
}

/// The CPUs a thread may run on, from its `status` file.
fn allowed(status_path: &str) -> Vec<usize> {
    let status = std::fs::read_to_string(status_path).unwrap();
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or_else(|| panic!("no Cpus_allowed_list in {status_path}"));
    cpus(line)
}

/// Each thread of `pid`, by thread id: its name and the CPUs it may run on.
fn threads(pid: u32) -> BTreeMap<u32, (String, Vec<usize>)> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let tid: u32 = entry
            .unwrap()
            .file_name()
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let dir = format!("/proc/{pid}/task/{tid}");
        let name = std::fs::read_to_string(format!("{dir}/comm")).unwrap_or_default();
        out.insert(
            tid,
            (name.trim().to_owned(), allowed(&format!("{dir}/status"))),
        );
    }
    out
}

/// The thread is blocked writing to a full pipe: its wait channel says so (`pipe_write`,
/// `anon_pipe_write`), or, where the kernel hides wait channels, the system call it is in is a
/// `write` to fd 2.
fn blocked_writing_stderr(pid: u32) -> bool {
    let dir = format!("/proc/{pid}/task/{pid}");
    if std::fs::read_to_string(format!("{dir}/wchan")).is_ok_and(|w| w.contains("pipe_write")) {
        return true;
    }
    #[cfg(target_arch = "x86_64")]
    const WRITE: &str = "1";
    #[cfg(target_arch = "aarch64")]
    const WRITE: &str = "64";
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    const WRITE: &str = "";
    let syscall = std::fs::read_to_string(format!("{dir}/syscall")).unwrap_or_default();
    let mut fields = syscall.split_whitespace();
    !WRITE.is_empty() && fields.next() == Some(WRITE) && fields.next() == Some("0x2")
}

/// Runs the README backtest (shortened) with `extra` flags, holds it at its first progress
/// line and returns its process id and its threads as they are then.
fn threads_mid_run(extra: &[&str]) -> (u32, BTreeMap<u32, (String, Vec<usize>)>) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let (mut reader, mut writer) = std::io::pipe().unwrap();
    // Fill the pipe, so that the child's first write to stderr blocks.
    rustix::io::ioctl_fionbio(&writer, true).unwrap();
    let mut filled = 0usize;
    for chunk in [4096, 1] {
        let bytes = vec![b'.'; chunk];
        loop {
            match writer.write(&bytes) {
                Ok(n) => filled += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => panic!("filling the pipe: {e}"),
            }
        }
    }
    rustix::io::ioctl_fionbio(&writer, false).unwrap();

    let bars = format!("EURUSD={}", repo("examples/data/EURUSD.csv"));
    let skill = repo("examples/skills/eurusd-sma-cross.yaml");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sim-worker"))
        .args([
            "run",
            "--skill",
            &skill,
            "--bars",
            &bars,
            "--to",
            "2017-05-03",
        ])
        .arg("--out")
        .arg(&out)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(writer)
        .spawn()
        .unwrap();
    let pid = child.id();
    let started = Instant::now();
    while !blocked_writing_stderr(pid) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended without writing to stderr"
        );
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the run never wrote to stderr"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let seen = threads(pid);

    // Let it finish: read everything it writes, then check it was held where intended.
    let mut stderr = Vec::new();
    reader.read_to_end(&mut stderr).unwrap();
    let status = child.wait().unwrap();
    let stderr = String::from_utf8_lossy(&stderr[filled..]).into_owned();
    assert!(status.success(), "{status}: {stderr}");
    assert!(
        stderr.starts_with("tick "),
        "held at the first progress line: {stderr}"
    );
    (pid, seen)
}

#[test]
fn run_pins_nothing_by_default_and_places_its_threads_with_pin_threads() {
    // What the child inherits: this thread's CPUs.
    let inherited = allowed("/proc/thread-self/status");

    let (_, free) = threads_mid_run(&[]);
    assert!(
        free.len() >= 3,
        "the tick's, the runtime's, SQLite's: {free:?}"
    );
    for (tid, (name, cpus)) in &free {
        assert_eq!(
            cpus, &inherited,
            "thread {tid} ({name}) without --pin-threads"
        );
    }

    let (main, placed) = threads_mid_run(&["--pin-threads"]);
    if inherited.len() < 2 {
        // One CPU: nothing to place.
        for (tid, (name, cpus)) in &placed {
            assert_eq!(cpus, &inherited, "thread {tid} ({name}), one CPU");
        }
        return;
    }
    // The tick's thread is the process's main thread.
    let tick = &placed[&main].1;
    assert_eq!(tick.len(), 1, "the tick's thread on one CPU: {placed:?}");
    let others: Vec<_> = placed.iter().filter(|(tid, _)| **tid != main).collect();
    assert!(others.len() >= 2, "the runtime's and SQLite's: {placed:?}");
    let store = &others[0].1.1;
    assert_eq!(store.len(), 1, "the store's threads on one CPU: {placed:?}");
    assert_ne!(store, tick, "on another CPU than the tick's: {placed:?}");
    for (tid, (name, cpus)) in others {
        assert_eq!(cpus, store, "thread {tid} ({name}) with the store's");
    }
}
