//! #18 item 5: the memory rows are compact (≤ 40 o200k tokens a row on the README's example, as
//! `preview` counts them) and `preview` / `skill validate --bars` warn when a tick's input is
//! above the token budget (default 8,000; `context.tokenBudget` sets a skill's own).

use crate::common::{repo, sim};

const AT: &str = "2017-05-10 00:00";

fn tokens(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_with_special_tokens(text)
        .len()
}

/// The example skill with `tokenBudget: budget` in its context, written under `dir`.
fn skill_with_budget(dir: &std::path::Path, budget: u32) -> String {
    let text = std::fs::read_to_string(repo("examples/skills/eurusd-sma-cross.yaml")).unwrap();
    let text = text.replacen(
        "context:\n",
        &format!("context:\n  tokenBudget: {budget}\n"),
        1,
    );
    assert!(
        text.contains("tokenBudget"),
        "the example has a context: block"
    );
    let path = dir.join("skill.yaml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

fn preview(skill: &str) -> (i32, String, String) {
    let bars = format!("EURUSD={}", repo("examples/data/EURUSD.csv"));
    sim(&["preview", "--skill", skill, "--bars", &bars, "--at", AT])
}

/// The o200k count `preview` prints for the section named `name`.
fn counted(stdout: &str, name: &str) -> usize {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&format!("user: {name} ")))
        .unwrap_or_else(|| panic!("{name} in\n{stdout}"));
    line[name.len() + 6..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap()
}

/// The `- ` rows of the section under `## heading` in the printed user message.
fn rows(stdout: &str, heading: &str) -> usize {
    let message = stdout.split("==== USER MESSAGE").nth(1).unwrap();
    let body = message
        .split(&format!("## {heading}\n"))
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap();
    body.lines().filter(|l| l.starts_with("- ")).count()
}

#[test]
fn the_examples_memory_rows_cost_at_most_40_tokens_each_and_the_default_budget_is_quiet() {
    let (code, stdout, stderr) = preview(&repo("examples/skills/eurusd-sma-cross.yaml"));
    assert_eq!(code, 0, "{stderr}");
    for (heading, want_rows) in [
        ("Recent trades on this skill (closed)", 10),
        ("Open positions (memory view)", 1),
    ] {
        let n = rows(&stdout, heading);
        assert_eq!(n, want_rows, "{heading}");
        // The section's tokens without its heading line, legend included, over its rows.
        let per_row =
            (counted(&stdout, heading) - tokens(&format!("## {heading}"))) as f64 / n as f64;
        assert!(per_row <= 40.0, "{heading}: {per_row} tokens a row");
    }
    assert!(
        stdout.contains("token budget: 8000 (the default; a skill sets its own with context.tokenBudget) · this tick "),
        "{stdout}"
    );
    assert!(!stderr.contains("warning"), "{stderr}");
}

#[test]
fn a_tick_above_the_skills_budget_is_warned_about_by_preview_and_validate() {
    let dir = tempfile::tempdir().unwrap();
    let bars = format!("EURUSD={}", repo("examples/data/EURUSD.csv"));

    // Above: 2,000 < the example's ≈3,800.
    let skill = skill_with_budget(dir.path(), 2000);
    let (code, stdout, stderr) = preview(&skill);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("token budget: 2000 (the skill's context.tokenBudget)"),
        "{stdout}"
    );
    assert!(
        stderr.contains("warning: the tick at 2017-05-10 00:00:00 UTC takes ")
            && stderr.contains("above the token budget of 2000 (the skill's context.tokenBudget)"),
        "{stderr}"
    );
    let (code, stdout, stderr) = sim(&["skill", "validate", &skill, "--bars", &bars, "--at", AT]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("ok: "), "{stdout}");
    assert!(stdout.contains("budget 2000"), "{stdout}");
    assert!(
        stderr.contains("above the token budget of 2000"),
        "{stderr}"
    );

    // Under: the skill's own 50,000.
    let skill = skill_with_budget(dir.path(), 50_000);
    let (code, stdout, stderr) = sim(&["skill", "validate", &skill, "--bars", &bars, "--at", AT]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("budget 50000"), "{stdout}");
    assert!(!stderr.contains("warning"), "{stderr}");

    // Below the schema's floor: refused with the path.
    let skill = skill_with_budget(dir.path(), 10);
    let (code, _, stderr) = sim(&["skill", "validate", &skill]);
    assert_eq!(code, 2);
    assert!(stderr.contains("context.tokenBudget"), "{stderr}");

    // A skill on a paid model: validate replays offline only.
    let (code, _, stderr) = sim(&[
        "skill",
        "validate",
        &repo("examples/skills/btc-eth-funding-thesis.yaml"),
        "--bars",
        &bars,
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("validate never calls a paid model"),
        "{stderr}"
    );
}
