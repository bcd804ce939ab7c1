//! Developer tasks. `cargo xtask test` is the README's test command and what CI runs.
//!
//! It makes sure a PostgreSQL server is reachable for the contract tests (starting the local
//! cluster, or installing one on a fresh Debian machine) and that headless Chromium and its
//! WebDriver are installed for the pages' browser test (Debian's `chromium` and
//! `chromium-driver`, installed with apt-get when missing), then runs every test of the
//! workspace with every feature (the `mock` features' tests included) and the committed
//! `Cargo.lock`. It never skips the PostgreSQL or the browser half silently: when a server or
//! a browser cannot be had it stops with a message that says exactly what to do.
//!
//! `cargo xtask readme` runs every command of the README as printed (see the `readme`
//! module). `cargo xtask compare-backtesting-py` runs backtesting.py's SmaCross(10, 20) and
//! `sim-worker run` on the same bars (see the `compare` module).

use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

mod compare;
mod readme;

const DEFAULT_TEST_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Where Debian's `chromium` package puts the browser; the browser test starts this binary.
const CHROMIUM: &str = "/usr/bin/chromium";
/// Where Debian's `chromium-driver` package puts the WebDriver server.
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("postgres") => ensure_postgres().map(|url| println!("{url}")),
        Some("browser") => ensure_browser(),
        Some("compare-backtesting-py") => compare::compare_backtesting_py(&args[1..]),
        Some("readme") => readme::readme(&args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <task>\n\n\
                 tasks:\n  \
                 test [ARGS]   ensure PostgreSQL is up, then `cargo test --workspace --all-features --locked [ARGS]`\n  \
                 postgres      ensure PostgreSQL is up and print TEST_DATABASE_URL\n  \
                 browser       ensure headless Chromium and chromedriver are installed\n  \
                 readme        run every command of README.md's sh blocks as printed\n  \
                 compare-backtesting-py [--runs N] [--regenerate]\n                \
                 backtesting.py 0.6.6's SmaCross(10, 20) (throwaway venv, PyPI) vs `sim-worker run`\n                \
                 on examples/data/EURUSD.csv: trades checked against the committed reference,\n                \
                 bars per second of both and their ratio"
            );
            std::process::exit(2);
        }
    }
}

fn test(extra: &[String]) -> Result<()> {
    let url = ensure_postgres()?;
    ensure_browser()?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        // Every feature: the `mock` features' tests run too. Locked: tests build exactly the
        // committed dependency versions.
        .args(["test", "--workspace", "--all-features", "--locked"])
        .args(extra)
        .env("TEST_DATABASE_URL", &url)
        .status()
        .context("running cargo test")?;
    if !status.success() {
        bail!("tests failed ({status})");
    }
    Ok(())
}

/// Returns a reachable `TEST_DATABASE_URL`, starting or installing the local server if needed.
fn ensure_postgres() -> Result<String> {
    let url =
        std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_TEST_DATABASE_URL.to_owned());
    let addr = host_port(&url)?;
    if reachable(&addr) {
        return Ok(url);
    }
    let local = addr.starts_with("127.0.0.1:") || addr.starts_with("localhost:");
    if !local {
        bail!(
            "PostgreSQL at {addr} (TEST_DATABASE_URL) is not reachable; start it or point TEST_DATABASE_URL at a running server"
        );
    }
    eprintln!("xtask: PostgreSQL is not reachable at {addr}; starting the local cluster");
    if !Path::new("/etc/postgresql").exists() {
        install_postgres()?;
    }
    start_clusters()?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if reachable(&addr) {
            return Ok(url);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    bail!(
        "PostgreSQL did not come up at {addr}. Start it with \
         `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start` \
         (trust auth for user postgres on 127.0.0.1), or set TEST_DATABASE_URL to a running server"
    )
}

/// Makes sure the browser test's Chromium and chromedriver are installed: Debian's
/// `chromium` and `chromium-driver`, installed non-interactively with apt-get when either
/// binary is missing (as root on a Debian machine; anything else is told what to install).
fn ensure_browser() -> Result<()> {
    let missing = || {
        [CHROMIUM, CHROMEDRIVER]
            .into_iter()
            .filter(|p| !Path::new(p).exists())
            .collect::<Vec<_>>()
    };
    let absent = missing();
    if absent.is_empty() {
        return Ok(());
    }
    let what = absent.join(" and ");
    if !is_root() || !Path::new("/usr/bin/apt-get").exists() {
        bail!(
            "the browser test needs {what}, which are missing. Install Debian's packages as \
             root: `apt-get install -y chromium chromium-driver` (or run `cargo xtask test` as \
             root on Debian, which installs them)"
        );
    }
    eprintln!("xtask: {what} missing; installing chromium and chromium-driver with apt-get");
    apt_get(&[
        &["update"][..],
        &[
            "install",
            "-y",
            "--no-install-recommends",
            "chromium",
            "chromium-driver",
        ][..],
    ])?;
    let absent = missing();
    if !absent.is_empty() {
        bail!(
            "apt-get installed chromium and chromium-driver but {} is still missing",
            absent.join(" and ")
        );
    }
    Ok(())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Runs `apt-get` once per argument list, non-interactively, stopping at the first failure.
fn apt_get(runs: &[&[&str]]) -> Result<()> {
    for args in runs {
        let status = Command::new("apt-get")
            .args(*args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .context("running apt-get")?;
        if !status.success() {
            bail!("apt-get {} failed ({status})", args.join(" "));
        }
    }
    Ok(())
}

fn host_port(url: &str) -> Result<String> {
    let rest = url
        .split_once("://")
        .map(|(_, r)| r)
        .with_context(|| format!("TEST_DATABASE_URL {url:?} is not a URL"))?;
    let authority = rest.split('/').next().unwrap_or(rest);
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    Ok(if host_port.contains(':') {
        host_port.to_owned()
    } else {
        format!("{host_port}:5432")
    })
}

fn reachable(addr: &str) -> bool {
    addr.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .is_some_and(|a| TcpStream::connect_timeout(&a, Duration::from_secs(2)).is_ok())
}

fn start_clusters() -> Result<()> {
    for entry in std::fs::read_dir("/etc/postgresql").context("listing /etc/postgresql")? {
        let version = entry?.file_name().to_string_lossy().into_owned();
        let status = Command::new("pg_ctlcluster")
            .args(["--skip-systemctl-redirect", &version, "main", "start"])
            .status()
            .context("running pg_ctlcluster (is postgresql-common installed?)")?;
        if !status.success() {
            eprintln!("xtask: pg_ctlcluster {version} main start exited with {status}");
        }
    }
    Ok(())
}

/// A fresh Debian machine without a server: install one and let local TCP connections in with
/// trust auth, as the development machines are set up.
fn install_postgres() -> Result<()> {
    if !is_root() || !Path::new("/usr/bin/apt-get").exists() {
        bail!(
            "PostgreSQL is not installed. Install it (Debian: `apt-get install postgresql`), allow \
             trust auth for user postgres on 127.0.0.1, start it, or set TEST_DATABASE_URL"
        );
    }
    eprintln!("xtask: installing PostgreSQL with apt-get");
    apt_get(&[&["update"][..], &["install", "-y", "postgresql"][..]])?;
    for entry in std::fs::read_dir("/etc/postgresql")? {
        let hba = entry?.path().join("main/pg_hba.conf");
        let old =
            std::fs::read_to_string(&hba).with_context(|| format!("reading {}", hba.display()))?;
        let trust = "host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n";
        std::fs::write(&hba, format!("{trust}{old}"))
            .with_context(|| format!("writing {}", hba.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::host_port;

    #[test]
    fn host_port_is_read_from_the_url() {
        assert_eq!(
            host_port("postgres://postgres@127.0.0.1:5432/postgres").unwrap(),
            "127.0.0.1:5432"
        );
        assert_eq!(
            host_port("postgres://u:p@db.internal/x").unwrap(),
            "db.internal:5432"
        );
        assert!(host_port("nonsense").is_err());
    }
}
