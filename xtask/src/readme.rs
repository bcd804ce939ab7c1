//! `cargo xtask readme`: runs every command of the README's `sh` blocks as printed.
//!
//! The README promises commands that work on a fresh clone; this task keeps the promise
//! checked. It reads `README.md`, takes every fenced `sh` block in order, joins lines continued
//! with `\`, and runs each command with `bash` from the repository root, carrying the
//! environment from one command to the next (so an `export` holds for the commands after it).
//! The release folder of the target directory is put at the front of `PATH`, as the README
//! tells a reader to do (`$CARGO_TARGET_DIR/release` when it is set, where CI keeps them); the
//! README's own commands build the binaries.
//!
//! A command that cannot run as printed is an error: placeholders (`<ID>`, `…`, `...`) are
//! refused, so the README shows real commands. An HTML comment right before a block says how
//! to treat it; the comment is invisible on the rendered page:
//!
//! - `<!-- readme: skip, REASON -->`: not run (the test command, which CI runs on its own).
//! - `<!-- readme: needs VAR -->`: run only when the environment has `VAR` (a provider key).
//! - `<!-- readme: serves URL -->`: a long-running command; started, checked to answer `URL`
//!   with HTTP 200, then stopped with SIGTERM and required to exit cleanly.
//! - `<!-- readme: fresh-database URL -->`: the block creates the PostgreSQL database at
//!   `URL`; the check refuses to run when it already exists (it would be written into) and
//!   drops it at the end.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};

/// How long one foreground command may take (the first builds in release mode).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// How long a serving command has to answer its URL.
const SERVE_TIMEOUT: Duration = Duration::from_secs(60);

/// What to do with a block, from the comment before it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Marker {
    Run,
    Skip(String),
    Needs(String),
    Serves(String),
    FreshDatabase(String),
}

/// One command of the README: where it is and how to run it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ReadmeCommand {
    line: usize,
    text: String,
    marker: Marker,
}

pub(crate) fn readme(args: &[String]) -> Result<()> {
    ensure!(args.is_empty(), "`cargo xtask readme` takes no arguments");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("the xtask crate has no parent folder")?
        .to_owned();
    let readme = std::fs::read_to_string(root.join("README.md")).context("reading README.md")?;
    let commands = parse(&readme)?;
    crate::ensure_postgres()?;
    let bin = release_dir(&root);
    let mut env: Vec<(String, String)> = std::env::vars().collect();
    let path = std::env::var("PATH").unwrap_or_default();
    set(&mut env, "PATH", &format!("{}:{path}", bin.display()));

    let mut databases = Vec::new();
    let result = run_all(&root, &commands, &mut env, &mut databases);
    for url in databases {
        if let Err(e) = drop_database(&url) {
            eprintln!("xtask readme: could not drop {url}: {e:#}");
        }
    }
    result
}

fn run_all(
    root: &Path,
    commands: &[ReadmeCommand],
    env: &mut Vec<(String, String)>,
    databases: &mut Vec<String>,
) -> Result<()> {
    let mut ran = 0;
    for c in commands {
        let at = format!("README.md:{}", c.line);
        match &c.marker {
            Marker::Skip(why) => {
                println!("skip  {at}  {}  ({why})", c.text);
                continue;
            }
            Marker::Needs(var) if !env.iter().any(|(k, _)| k == var) => {
                println!("skip  {at}  {}  (needs {var})", c.text);
                continue;
            }
            Marker::FreshDatabase(url) if !databases.contains(url) => {
                ensure!(
                    !database_exists(url)?,
                    "{at}: the README creates the database {url}, which exists already; \
                     drop it (or run the check on a machine without it) so the commands run \
                     against a fresh one"
                );
                databases.push(url.clone());
            }
            _ => {}
        }
        println!("run   {at}  {}", c.text);
        let started = Instant::now();
        match &c.marker {
            Marker::Serves(url) => serve(root, c, env, url).with_context(|| at.clone())?,
            _ => foreground(root, c, env).with_context(|| at.clone())?,
        }
        println!("      ok in {:.1} s", started.elapsed().as_secs_f64());
        ran += 1;
    }
    println!("xtask readme: {ran} of {} commands ran", commands.len());
    Ok(())
}

/// Reads the commands of every `sh` block, with the marker before each block.
fn parse(readme: &str) -> Result<Vec<ReadmeCommand>> {
    let mut out = Vec::new();
    let mut marker = Marker::Run;
    let mut in_block = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in readme.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim_end();
        if !in_block {
            if line == "```sh" {
                in_block = true;
            } else if let Some(m) = line.trim().strip_prefix("<!-- readme:") {
                let m = m
                    .strip_suffix("-->")
                    .with_context(|| format!("README.md:{line_no}: unclosed readme marker"))?;
                marker = parse_marker(m.trim())
                    .with_context(|| format!("README.md:{line_no}: bad readme marker"))?;
            } else if !line.trim().is_empty() {
                marker = Marker::Run;
            }
            continue;
        }
        if line == "```" {
            ensure!(
                pending.is_none(),
                "README.md:{line_no}: the block ends inside a continued command"
            );
            in_block = false;
            marker = Marker::Run;
            continue;
        }
        let (start, mut text) = pending.take().unwrap_or((line_no, String::new()));
        let (body, continued) = match line.strip_suffix('\\') {
            Some(b) => (b.trim_end(), true),
            None => (line, false),
        };
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(body.trim());
        if continued {
            pending = Some((start, text));
        } else if !text.is_empty() && !text.starts_with('#') {
            check_runnable(&text).with_context(|| format!("README.md:{start}"))?;
            out.push(ReadmeCommand {
                line: start,
                text,
                marker: marker.clone(),
            });
        }
    }
    ensure!(!in_block, "README.md ends inside a code block");
    ensure!(!out.is_empty(), "README.md has no sh block");
    Ok(out)
}

fn parse_marker(m: &str) -> Result<Marker> {
    let (word, rest) = m.split_once(char::is_whitespace).unwrap_or((m, ""));
    let rest = rest.trim();
    let word = word.trim_end_matches(',');
    Ok(match word {
        "skip" if !rest.is_empty() => Marker::Skip(rest.to_owned()),
        "needs" if !rest.is_empty() => Marker::Needs(rest.to_owned()),
        "serves" if rest.starts_with("http://") => Marker::Serves(rest.to_owned()),
        "fresh-database" if rest.starts_with("postgres://") => {
            Marker::FreshDatabase(rest.to_owned())
        }
        _ => bail!(
            "{m:?}: expected `skip, REASON`, `needs VAR`, `serves http://…` or \
             `fresh-database postgres://…`"
        ),
    })
}

/// A README command has to run as printed: no placeholders for the reader to fill in.
fn check_runnable(text: &str) -> Result<()> {
    let code = text.split(" # ").next().unwrap_or(text);
    for (needle, what) in [("…", "an ellipsis"), (" ... ", "an ellipsis")] {
        ensure!(
            !code.contains(needle),
            "`{text}` has {what} for the reader to fill in"
        );
    }
    let bytes: Vec<char> = code.chars().collect();
    for (i, c) in bytes.iter().enumerate() {
        if *c == '<' {
            let rest: String = bytes[i + 1..].iter().collect();
            if let Some(end) = rest.find('>') {
                let inside = &rest[..end];
                if !inside.is_empty()
                    && inside
                        .chars()
                        .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
                {
                    bail!("`{text}` has the placeholder <{inside}>");
                }
            }
        }
    }
    Ok(())
}

/// Where the README's release builds put the binaries it then calls by name (the README builds
/// them itself, one package at a time, so no build here can differ in features from its own).
fn release_dir(root: &Path) -> PathBuf {
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => root.join("target"),
    };
    let target = if target.is_absolute() {
        target
    } else {
        root.join(target)
    };
    target.join("release")
}

/// A `bash` that runs `text` with `env`; with `dump` it also writes its environment at the end.
fn bash(root: &Path, text: &str, env: &[(String, String)], dump: Option<&Path>) -> Command {
    let script = match dump {
        Some(file) => format!("set -eo pipefail\n{text}\nenv -0 > '{}'\n", file.display()),
        None => format!("set -eo pipefail\nexec {text}\n"),
    };
    let mut cmd = Command::new("bash");
    cmd.current_dir(root)
        .arg("-c")
        .arg(script)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null());
    cmd
}

fn foreground(root: &Path, c: &ReadmeCommand, env: &mut Vec<(String, String)>) -> Result<()> {
    let dump = tempfile::NamedTempFile::new().context("a temporary file for the environment")?;
    let mut child = bash(root, &c.text, env, Some(dump.path()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting bash")?;
    let (status, stdout, stderr) = wait_capturing(&mut child, COMMAND_TIMEOUT)?;
    if !status.success() {
        bail!(
            "`{}` failed ({status})\n--- stdout (end)\n{}\n--- stderr (end)\n{}",
            c.text,
            tail(&stdout),
            tail(&stderr)
        );
    }
    let mut bytes = Vec::new();
    std::fs::File::open(dump.path())
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .context("reading the command's environment")?;
    *env = String::from_utf8_lossy(&bytes)
        .split('\0')
        .filter_map(|kv| kv.split_once('='))
        .filter(|(k, _)| !matches!(*k, "_" | "SHLVL" | "PWD" | "OLDPWD"))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    Ok(())
}

/// Waits for `child` up to `limit`, reading its output as it goes (so a full pipe never
/// stalls it); kills it when the time is up.
fn wait_capturing(child: &mut Child, limit: Duration) -> Result<(ExitStatus, String, String)> {
    let mut out = child.stdout.take().context("stdout")?;
    let mut err = child.stderr.take().context("stderr")?;
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("did not finish within {} s", limit.as_secs());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = String::from_utf8_lossy(&out_reader.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_reader.join().unwrap_or_default()).into_owned();
    Ok((status, stdout, stderr))
}

/// Starts a long-running command, waits for `url` to answer 200, then stops it with SIGTERM.
fn serve(root: &Path, c: &ReadmeCommand, env: &[(String, String)], url: &str) -> Result<()> {
    let mut child = bash(root, &c.text, env, None)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting bash")?;
    let deadline = Instant::now() + SERVE_TIMEOUT;
    let answered = loop {
        if let Some(status) = child.try_wait()? {
            let (_, stdout, stderr) = wait_capturing(&mut child, Duration::from_secs(5))?;
            bail!(
                "`{}` exited ({status}) before answering {url}\n--- stdout (end)\n{}\n--- stderr (end)\n{}",
                c.text,
                tail(&stdout),
                tail(&stderr)
            );
        }
        if http_ok(url) {
            break true;
        }
        if Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let term = Command::new("kill")
        .args(["-s", "TERM", &child.id().to_string()])
        .status()
        .context("sending SIGTERM")?;
    ensure!(term.success(), "could not send SIGTERM to `{}`", c.text);
    let (status, stdout, stderr) = wait_capturing(&mut child, Duration::from_secs(60))?;
    ensure!(
        answered,
        "`{}` did not answer {url} with 200 within {} s\n--- stderr (end)\n{}",
        c.text,
        SERVE_TIMEOUT.as_secs(),
        tail(&stderr)
    );
    ensure!(
        status.success(),
        "`{}` did not exit cleanly on SIGTERM ({status})\n--- stdout (end)\n{}\n--- stderr (end)\n{}",
        c.text,
        tail(&stdout),
        tail(&stderr)
    );
    Ok(())
}

/// Whether a plain HTTP GET of `url` answers 200.
fn http_ok(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let Ok(mut stream) = TcpStream::connect(authority) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request = format!("GET {path} HTTP/1.0\r\nHost: {authority}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 16];
    let n = stream.read(&mut head).unwrap_or(0);
    let head = String::from_utf8_lossy(&head[..n]);
    head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200")
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

fn set(env: &mut Vec<(String, String)>, key: &str, value: &str) {
    env.retain(|(k, _)| k != key);
    env.push((key.to_owned(), value.to_owned()));
}

/// The database name of a PostgreSQL URL, and the URL of the server's `postgres` database.
fn split_database(url: &str) -> Result<(String, String)> {
    let (base, name) = url
        .rsplit_once('/')
        .filter(|(b, n)| b.contains("://") && !n.is_empty())
        .with_context(|| format!("{url} names no database"))?;
    let name = name.split('?').next().unwrap_or(name);
    ensure!(
        name.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
        "{url}: database name {name:?} is not a plain identifier"
    );
    Ok((name.to_owned(), format!("{base}/postgres")))
}

fn psql(admin_url: &str, sql: &str) -> Result<String> {
    let out = Command::new("psql")
        .args([admin_url, "-XtAc", sql])
        .output()
        .context("running psql (PostgreSQL's client)")?;
    ensure!(
        out.status.success(),
        "psql `{sql}` failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn database_exists(url: &str) -> Result<bool> {
    let (name, admin) = split_database(url)?;
    Ok(psql(
        &admin,
        &format!("SELECT 1 FROM pg_database WHERE datname = '{name}'"),
    )? == "1")
}

fn drop_database(url: &str) -> Result<()> {
    let (name, admin) = split_database(url)?;
    psql(
        &admin,
        &format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"),
    )
    .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_markers_and_continuations_are_read() {
        let md = "intro\n\n```sh\ncargo run -p x -- a\n# a comment\nx b \\\n  --c d\n```\n\n\
                  <!-- readme: skip, CI runs it -->\n```sh\ncargo xtask test\n```\n\
                  <!-- readme: serves http://127.0.0.1:9/healthz -->\n\n```sh\nx serve\n```\n\
                  ```rust\nnot run\n```\n";
        let c = parse(md).unwrap();
        let got: Vec<_> = c
            .iter()
            .map(|c| (c.line, c.text.as_str(), c.marker.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                (4, "cargo run -p x -- a", Marker::Run),
                (6, "x b --c d", Marker::Run),
                (12, "cargo xtask test", Marker::Skip("CI runs it".into())),
                (
                    17,
                    "x serve",
                    Marker::Serves("http://127.0.0.1:9/healthz".into())
                ),
            ]
        );
    }

    #[test]
    fn a_marker_holds_only_for_the_block_right_after_it() {
        let md = "<!-- readme: needs KEY -->\nsome prose\n```sh\nx\n```\n";
        assert_eq!(parse(md).unwrap()[0].marker, Marker::Run);
    }

    #[test]
    fn placeholders_are_refused_with_their_line() {
        for (cmd, want) in [
            ("x --deployment <ID>", "<ID>"),
            ("x --db postgres://…", "ellipsis"),
            ("sim-worker run ... --out y", "ellipsis"),
        ] {
            let md = format!("\n```sh\n{cmd}\n```\n");
            let e = format!("{:#}", parse(&md).unwrap_err());
            assert!(e.contains("README.md:3") && e.contains(want), "{e}");
        }
        // Shell redirection and a comment's prose are not placeholders.
        parse("```sh\nx schema > out.json   # for <EDITORS> ...\n```\n").unwrap();
    }

    #[test]
    fn bad_markers_and_open_blocks_are_errors() {
        assert!(parse("<!-- readme: sometimes -->\n```sh\nx\n```\n").is_err());
        assert!(parse("<!-- readme: serves localhost -->\n```sh\nx\n```\n").is_err());
        assert!(parse("```sh\nx \\\n```\n").is_err());
        assert!(parse("```sh\nx\n").is_err());
    }

    #[test]
    fn database_urls_are_split() {
        assert_eq!(
            split_database("postgres://postgres@127.0.0.1:5432/trading").unwrap(),
            (
                "trading".to_owned(),
                "postgres://postgres@127.0.0.1:5432/postgres".to_owned()
            )
        );
        assert!(split_database("postgres://h/x;drop").is_err());
    }

    /// The README itself parses: markers valid, no placeholders.
    #[test]
    fn the_readme_parses() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
        let commands = parse(&readme).unwrap();
        assert!(
            commands
                .iter()
                .any(|c| c.text.starts_with("cargo xtask test"))
        );
    }
}
