//! The `sim-worker skill` subcommands as a user runs them: exit codes, stdout, stderr.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn sim() -> Command {
    Command::cargo_bin("sim-worker").unwrap()
}

struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Outcome {
    let out = sim().args(args).output().unwrap();
    Outcome {
        code: out.status.code().unwrap(),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn validate_accepts_every_example_with_a_one_line_summary() {
    for entry in std::fs::read_dir(examples().join("skills")).unwrap() {
        let path = entry.unwrap().path();
        let out = run(&["skill", "validate", path.to_str().unwrap()]);
        assert_eq!(out.code, 0, "{}: {}", path.display(), out.stderr);
        assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
        assert!(out.stdout.starts_with("ok: "), "{}", out.stdout);
        assert!(out.stderr.is_empty(), "{}", out.stderr);
    }
}

const VALID: &str = r#"
name: broken on purpose
version: 1
model: anthropic/claude-haiku-4-5
strategy:
  mode: thesis
  thesis: Momentum persists.
  avoid: [Never add to a loser]
context:
  barsInterval: 1h
  symbols: [BTC]
risk:
  maxPositionPct: 25
  maxTotalExposurePct: 50
  maxLeverage: 3
  maxOrderUsd: 1000
"#;

/// Each broken file: a replacement applied to VALID and the line stderr must contain.
#[test]
fn validate_rejects_broken_files_with_exit_2_and_nothing_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "missing-field.yaml",
            VALID.replace("model: anthropic/claude-haiku-4-5\n", ""),
            "error: model: is required",
        ),
        (
            "wrong-type.yaml",
            VALID.replace("maxLeverage: 3", "maxLeverage: three"),
            r#"error: risk.maxLeverage: must be a number (got "three")"#,
        ),
        (
            "out-of-range.yaml",
            VALID.replace(
                "symbols: [BTC]",
                "symbols: [BTC]\n  memory: {recentTradesK: 31}",
            ),
            "error: context.memory.recentTradesK: must be at most 30 (got 31)",
        ),
        (
            "unknown-enum.yaml",
            VALID.replace("mode: thesis", "mode: vibes"),
            r#"error: strategy.mode: must be one of "thesis", "rules", "hybrid" (got "vibes")"#,
        ),
        (
            "empty-symbols.yaml",
            VALID.replace("symbols: [BTC]", "symbols: []"),
            "error: context.symbols: must have at least one entry",
        ),
        (
            "one-minute.yaml",
            VALID.replace("barsInterval: 1h", "barsInterval: 1m"),
            r#"error: context.barsInterval: must be one of "5m", "15m", "1h", "4h", "1d" (got "1m"); 5m is the floor"#,
        ),
        (
            "not-yaml.yaml",
            "name: [unclosed\n".to_owned(),
            "not valid YAML",
        ),
        (
            "empty.yaml",
            String::new(),
            "error: (root): must be an object (got null)",
        ),
    ];
    for (name, text, expected) in cases {
        let path = write(&dir, name, &text);
        let out = run(&["skill", "validate", &path]);
        assert_eq!(out.code, 2, "{name}: {}", out.stderr);
        assert!(
            out.stdout.is_empty(),
            "{name}: stdout must stay empty, got {}",
            out.stdout
        );
        assert!(
            out.stderr.contains(expected),
            "{name}: expected {expected:?} in\n{}",
            out.stderr
        );
    }
}

#[test]
fn validate_lists_every_problem_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let text = VALID
        .replace("barsInterval: 1h", "barsInterval: 1m")
        .replace("symbols: [BTC]", "symbols: []")
        .replace("maxLeverage: 3", "maxLeverage: 99");
    let path = write(&dir, "many.yaml", &text);
    let out = run(&["skill", "validate", &path]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("3 problems"), "{}", out.stderr);
    assert_eq!(
        out.stderr
            .lines()
            .filter(|l| l.starts_with("error: "))
            .count(),
        3
    );
}

#[test]
fn validate_reports_missing_files_and_unknown_extensions() {
    let out = run(&["skill", "validate", "/definitely/not/here.yaml"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("cannot read /definitely/not/here.yaml"),
        "{}",
        out.stderr
    );
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "skill.txt", VALID);
    let out = run(&["skill", "validate", &path]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("unknown file type"), "{}", out.stderr);
}

#[test]
fn schema_prints_a_json_schema() {
    let out = run(&["skill", "schema"]);
    assert_eq!(out.code, 0);
    let schema: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(schema["title"], "Skill");
    assert!(schema["$schema"].as_str().unwrap().contains("2020-12"));
}

#[test]
fn prompt_prints_the_exact_system_prompt() {
    let skill = examples().join("skills/btc-eth-funding-thesis.yaml");
    let lessons = examples().join("lessons/btc-eth-funding.json");
    let out = run(&["skill", "prompt", skill.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let loaded = skill_schema::load_skill(&skill).unwrap();
    let expected = prompt_compose::compose_system_prompt(&loaded.skill, None).unwrap();
    assert_eq!(out.stdout, format!("{expected}\n"));
    assert!(!out.stdout.contains("Lessons from your recent trades"));

    let out = run(&[
        "skill",
        "prompt",
        skill.to_str().unwrap(),
        "--lessons",
        lessons.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains(
        "Lessons from your recent trades on this skill (auto-generated; signal, not strategy):"
    ));
    assert!(out.stdout.contains("Distilled from 13 closed trades"));
}

#[test]
fn prompt_rejects_a_broken_lessons_file() {
    let dir = tempfile::tempdir().unwrap();
    let lessons = write(&dir, "lessons.json", "{\"text\": 5}");
    let skill = examples().join("skills/eurusd-sma-cross.yaml");
    let out = run(&[
        "skill",
        "prompt",
        skill.to_str().unwrap(),
        "--lessons",
        &lessons,
    ]);
    assert_eq!(out.code, 2);
    assert!(out.stdout.is_empty());
    assert!(
        out.stderr.contains("not a reflection note"),
        "{}",
        out.stderr
    );

    let long = serde_json::json!({
        "text": "x".repeat(2001), "trades_considered": 3,
        "generated_at": "2026-06-05T09:00:00Z", "window_start": "2026-06-01T00:00:00Z",
        "window_end": "2026-06-05T08:00:00Z"
    });
    let lessons = write(&dir, "long.json", &long.to_string());
    let out = run(&[
        "skill",
        "prompt",
        skill.to_str().unwrap(),
        "--lessons",
        &lessons,
    ]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("must be at most 2000 characters (got 2001)"),
        "{}",
        out.stderr
    );
}

/// `sim-worker skill validate` with its stdout redirected by a shell.
fn validate_with_stdout(redirect: &str) -> std::process::Output {
    let bin = assert_cmd::cargo::cargo_bin("sim-worker");
    let skill = examples().join("skills/eurusd-sma-cross.yaml");
    std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("\"$0\" skill validate \"$1\" {redirect}"))
        .arg(bin)
        .arg(skill)
        .output()
        .unwrap()
}

#[test]
fn a_full_stdout_is_an_error_and_a_closed_pipe_is_not_a_panic() {
    let out = validate_with_stdout(">/dev/full");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(74), "{stderr}");
    assert!(
        stderr.contains("error: writing the result to stdout"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");

    // A reader that is gone before the result is written (`… | head` that already exited): the
    // write fails with a broken pipe; the command did its work and exits 0.
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("sim-worker"))
        .args(["skill", "validate"])
        .arg(examples().join("skills/eurusd-sma-cross.yaml"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
