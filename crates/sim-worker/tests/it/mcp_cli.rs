//! A skill's MCP servers start before the first tick: one that cannot start ends the command
//! with its error and a non-zero exit, and nothing of a run is written.

use crate::common::{repo, sim};

/// The README's EURUSD skill with one MCP server whose command does not exist.
fn skill_with_missing_server(dir: &std::path::Path) -> String {
    let base = std::fs::read_to_string(repo("examples/skills/eurusd-sma-cross.yaml")).unwrap();
    let skill = format!(
        "{base}tools:\n  builtIn: [propose_order]\n  mcpServers:\n    - name: charts\n      \
         command: /nonexistent/charts-mcp\n      args: [--stdio]\n"
    );
    let path = dir.join("skill.yaml");
    std::fs::write(&path, skill).unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn run_and_preview_with_a_server_that_cannot_start_exit_non_zero_before_any_tick() {
    let dir = tempfile::tempdir().unwrap();
    let skill = skill_with_missing_server(dir.path());
    let bars = format!("EURUSD={}", repo("examples/data/EURUSD.csv"));
    let out = dir.path().join("run");
    let (code, stdout, stderr) = sim(&[
        "run",
        "--skill",
        &skill,
        "--bars",
        &bars,
        "--out",
        out.to_str().unwrap(),
        "--to",
        "2017-05-01",
    ]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert_eq!(
        stderr,
        "error: tools.mcpServers[0] (charts): cannot start `/nonexistent/charts-mcp --stdio`: \
         No such file or directory (os error 2)\n"
    );
    assert!(stdout.is_empty());
    // Before any tick: not even the output directory was created, so no store holds ticks.
    assert!(!out.exists());

    let (code, _, stderr) = sim(&[
        "preview",
        "--skill",
        &skill,
        "--bars",
        &bars,
        "--at",
        "2017-05-01",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.starts_with("error: tools.mcpServers[0] (charts): cannot start"));
}
