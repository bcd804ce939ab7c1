//! `sim-worker`: the strategy author's command line. Thin: parsing arguments and printing;
//! the work happens in the library crates.

mod skill_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Backtest trading-agent skills and inspect exactly what the agent sees.
#[derive(Debug, Parser)]
#[command(name = "sim-worker", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Work with skill files: validate them, export their JSON Schema, render their prompt.
    #[command(subcommand)]
    Skill(skill_cmd::SkillCommand),
}

/// Bad input (an invalid skill, an unreadable file): exit 2 with every problem on stderr and
/// nothing on stdout.
pub(crate) const EXIT_BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Skill(cmd) => skill_cmd::run(cmd),
    };
    match result {
        Ok(stdout) => {
            print!("{stdout}");
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprint!("{}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

/// A command's failure: what to print on stderr and the exit code.
#[derive(Debug)]
pub(crate) struct Failure {
    pub message: String,
    pub code: u8,
}

impl Failure {
    pub(crate) fn bad_input(message: impl Into<String>) -> Self {
        let mut message = message.into();
        if !message.ends_with('\n') {
            message.push('\n');
        }
        Self {
            message,
            code: EXIT_BAD_INPUT,
        }
    }
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Self::bad_input(format!("error: {e:#}"))
    }
}
