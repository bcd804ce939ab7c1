//! `sim-worker preview`: the exact system prompt and user message of the tick at `--at`, with
//! token counts per segment and per section.
//!
//! The prompt at a tick depends on everything before it (the ledger, the last decision, the
//! lessons), so preview runs the backtest up to `--at` in an in-memory store with the same model
//! and prints the snapshot the tick recorded. Counts are exact `o200k_base` tokens (the tokenizer
//! of OpenAI's GPT-4o / GPT-4.1 / GPT-5 families, embedded in the binary by `tiktoken-rs`, so it
//! works offline); other providers tokenize differently, so the runtime's `ceil(chars / 4)`
//! estimate is shown beside it.

use std::fmt::Write as _;
use std::path::PathBuf;

use backtest::{RunOptions, register};
use clap::Args;
use db::TickStore;
use tick::snapshot_id;
use types::{DateTime, Utc};

use crate::Failure;
use crate::run_cmd::{
    DEFAULT_EQUITY, DEFAULT_FEE_BPS, DEFAULT_SLIPPAGE_BPS, RunArgs, TimeFlags, prepare,
};

#[derive(Debug, Args)]
pub(crate) struct PreviewArgs {
    /// The skill file.
    #[arg(long, value_name = "FILE")]
    pub skill: PathBuf,
    /// Bars of one symbol at the skill's interval: `SYMBOL=PATH` (repeat per symbol).
    #[arg(long = "bars", value_name = "SYMBOL=PATH", required = true)]
    pub bars: Vec<String>,
    /// The tick to show (UTC): the close time of a bar of the skill's interval.
    #[arg(long, value_name = "TIME", value_parser = types::cli::parse_time)]
    pub at: DateTime<Utc>,
    /// The model, overriding the skill's. Every tick before `--at` runs with it.
    #[arg(long)]
    pub model: Option<String>,
    /// First tick of the replay leading up to `--at`.
    #[arg(long, value_name = "TIME", value_parser = types::cli::parse_time)]
    pub from: Option<DateTime<Utc>>,
    #[arg(long, value_name = "USD", default_value = DEFAULT_EQUITY)]
    pub equity: String,
    #[arg(long, value_name = "N", default_value = DEFAULT_FEE_BPS)]
    pub fee_bps: String,
    #[arg(long, value_name = "N", default_value = DEFAULT_SLIPPAGE_BPS)]
    pub slippage_bps: String,
    #[arg(long, value_name = "FILE")]
    pub news: Option<PathBuf>,
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Funding-rate history of one symbol: `SYMBOL=PATH` (Hyperliquid `fundingHistory` .json
    /// or a `time,rate[,premium]` .csv); repeatable.
    #[arg(long = "funding", value_name = "SYMBOL=PATH")]
    pub funding: Vec<String>,
    /// The exchange's maximum leverage per coin (Hyperliquid `meta` .json), as `run --meta`.
    #[arg(long, value_name = "FILE")]
    pub meta: Option<PathBuf>,
    /// Recorded model responses, as `run --cassette`: the ticks up to `--at` replay from it.
    #[arg(long, value_name = "FILE")]
    pub cassette: Option<PathBuf>,
    /// `record`, `replay` or `auto`, as `run --cassette-mode`.
    #[arg(long, value_enum, default_value_t = crate::spend::CassetteMode::Auto, requires = "cassette")]
    pub cassette_mode: crate::spend::CassetteMode,
    /// Preview the tick as a blind run's model reads it (see `run --blind`).
    #[arg(long)]
    pub blind: bool,
}

/// Exact `o200k_base` token count.
pub(crate) fn tokens(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton()
        .encode_with_special_tokens(text)
        .len()
}

/// The sections of a user message: it is `## ` sections joined by one blank line; the
/// `<trading_memory>` block (its own `## ` headings inside) counts as one.
pub(crate) fn sections(message: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, _) in message.match_indices("\n\n") {
        let next = &message[i + 2..];
        // A section starts with its `## ` heading, or is the `<trading_memory>` block.
        if next.starts_with("## ") || next.starts_with("<trading_memory>") {
            out.push(&message[start..i]);
            start = i + 2;
        }
    }
    out.push(message[start..].trim_end_matches('\n'));
    out
}

pub(crate) fn run(args: PreviewArgs) -> Result<String, Failure> {
    let tick = preview_tick(args)?;
    if let Some(warning) = tick.budget_warning() {
        eprintln!("{warning}");
    }
    Ok(tick.text)
}

/// One previewed tick: the report, and what the token budget check needs.
pub(crate) struct PreviewedTick {
    /// The report `preview` prints.
    pub text: String,
    /// The tick.
    pub at: chrono::DateTime<chrono::Utc>,
    /// o200k tokens of the system prompt and the user message together.
    pub input_tokens: usize,
    /// The skill's `context.tokenBudget`, when it sets one.
    pub skill_budget: Option<u32>,
}

impl PreviewedTick {
    /// The budget the tick is checked against.
    pub(crate) fn budget(&self) -> u32 {
        self.skill_budget
            .unwrap_or(skill_schema::DEFAULT_TOKEN_BUDGET)
    }

    /// The tick's input as a whole percentage of the budget (rounded down).
    pub(crate) fn percent_of_budget(&self) -> usize {
        self.input_tokens * 100 / usize::try_from(self.budget()).unwrap_or(usize::MAX).max(1)
    }

    /// Where the budget comes from, for messages.
    fn budget_source(&self) -> &'static str {
        match self.skill_budget {
            Some(_) => "the skill's context.tokenBudget",
            None => "the default; a skill sets its own with context.tokenBudget",
        }
    }

    /// `warning: …` when the tick's input is above the budget.
    pub(crate) fn budget_warning(&self) -> Option<String> {
        let budget = self.budget();
        (self.input_tokens > usize::try_from(budget).unwrap_or(usize::MAX)).then(|| {
            format!(
                "warning: the tick at {} takes {} input tokens (o200k: system prompt + user \
                 message), above the token budget of {budget} ({}); every tick of a deployment \
                 pays for them",
                self.at,
                self.input_tokens,
                self.budget_source()
            )
        })
    }
}

/// Replays the backtest up to `--at` and renders that tick, with its token budget line.
pub(crate) fn preview_tick(args: PreviewArgs) -> Result<PreviewedTick, Failure> {
    let at = args.at;
    let run_args = RunArgs {
        skill: args.skill,
        bars: args.bars,
        model: args.model,
        db: None,
        out: PathBuf::new(),
        from: args.from,
        to: Some(at),
        equity: args.equity,
        fee_bps: args.fee_bps,
        slippage_bps: args.slippage_bps,
        news: args.news,
        events: args.events,
        funding: args.funding,
        meta: args.meta,
        report_tick: Some(at),
        cassette: args.cassette,
        cassette_mode: args.cassette_mode,
        max_cost: None,
        blind: args.blind,
        // A preview replays in memory, on its own runtime: nothing to place.
        pin_threads: false,
        memory_off: false,
        time_flags: TimeFlags {
            to: "--at",
            report_tick: "--at",
        },
        quiet: false,
        budget: None,
    };
    let mut p = prepare(&run_args)?;
    let skill_budget = p.input.deployment.skill.context.token_budget;
    let (text, input_tokens) = crate::block_on(async move {
        let servers = crate::run_cmd::start_mcp_servers(&mut p.input).await?;
        let preview = preview(&p, at).await;
        servers.shutdown().await;
        preview
    })?;
    let mut tick = PreviewedTick {
        text,
        at,
        input_tokens,
        skill_budget,
    };
    let _ = writeln!(
        tick.text,
        "token budget: {} ({}) · this tick {} ({}%)",
        tick.budget(),
        tick.budget_source(),
        tick.input_tokens,
        tick.percent_of_budget()
    );
    Ok(tick)
}

/// Runs the backtest up to `at` in memory and renders the tick at `at`.
async fn preview(
    p: &crate::run_cmd::Prepared,
    at: chrono::DateTime<chrono::Utc>,
) -> Result<(String, usize), Failure> {
    {
        let bad = |m: String| Failure::bad_input(format!("error: {m}"));
        let store = db::connect("sqlite::memory:")
            .await
            .map_err(|e| bad(e.to_string()))?;
        register(&store, &p.input, p.skill_body.clone(), p.first_tick)
            .await
            .map_err(|e| bad(e.to_string()))?;
        let result = async {
            backtest::run(&p.input, p.model.as_ref(), &store, RunOptions::default())
                .await?
                .stored()
                .await
        }
        .await
        .map_err(|e| bad(e.to_string()));
        for c in &p.cassettes {
            c.close().await;
        }
        let result = result?;
        if let Some(miss) = p.cassettes.iter().find_map(|c| c.first_miss()) {
            return Err(Failure {
                message: format!("error: {miss}\n"),
                code: crate::EXIT_CASSETTE_MISS,
                stdout: String::new(),
            });
        }
        let snap = store
            .get_snapshot(snapshot_id(p.input.deployment.deployment_id, at))
            .await
            .map_err(|e| bad(e.to_string()))?;
        // The note the tick showed: the latest injectable one written before it.
        let lessons = result
            .notes
            .iter()
            .filter(|n| !n.lint.flagged)
            .rfind(|n| n.generated_at < at)
            .map(reflection::to_lessons);
        // A blind run's model read the skill as disguised, through the lens of the tick.
        let blind = backtest::blind_run(&p.input, p.first_tick).map_err(|e| bad(e.to_string()))?;
        let skill = blind
            .as_ref()
            .map_or(&p.input.deployment.skill, |b| &b.skill);
        let mut segments = prompt_compose::compose_system_prompt_segments(skill, lessons.as_ref())
            .map_err(|e| bad(e.to_string()))?;
        if let Some(b) = &blind {
            for s in &mut segments {
                s.text = b.blind.show(&s.text, at);
            }
        }
        let mut text = String::new();
        if blind.is_some() {
            text.push_str(concat!(
                "blind run: the model read the system prompt and user message below; ",
                "the tick time in their headers and the verdict line are in real terms\n",
            ));
        }
        text.push_str(&render(&snap, &segments));
        Ok((text, tokens(&snap.system_prompt) + tokens(&snap.context)))
    }
}

fn render(snap: &db::DecisionSnapshot, segments: &[prompt_compose::Segment]) -> String {
    let mut out = String::new();
    let mut table: Vec<(String, usize, u32)> = Vec::new();
    let _ = writeln!(
        out,
        "==== SYSTEM PROMPT at {} · {} tokens (o200k_base) ====",
        snap.tick_at,
        tokens(&snap.system_prompt)
    );
    out.push_str(&snap.system_prompt);
    out.push('\n');
    let joined = segments
        .iter()
        .map(|s| s.text.as_str())
        .collect::<Vec<_>>()
        .join("\n\n");
    if joined == snap.system_prompt {
        for s in segments {
            table.push((
                format!("system: {}", s.name),
                tokens(&s.text),
                agent_runtime::context::estimate_tokens(&s.text),
            ));
        }
    } else {
        // Cannot happen with the same skill and note; say so rather than mislabel segments.
        table.push((
            "system: (segments differ from the recorded prompt)".to_owned(),
            tokens(&snap.system_prompt),
            agent_runtime::context::estimate_tokens(&snap.system_prompt),
        ));
    }

    let _ = writeln!(
        out,
        "\n==== USER MESSAGE · {} tokens (o200k_base) ====",
        tokens(&snap.context)
    );
    out.push_str(&snap.context);
    for section in sections(&snap.context) {
        let name = section
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches('#')
            .trim()
            .to_owned();
        table.push((
            format!("user: {name}"),
            tokens(section),
            agent_runtime::context::estimate_tokens(section),
        ));
    }
    let width = table
        .iter()
        .map(|(n, _, _)| n.chars().count())
        .max()
        .unwrap_or(10);
    let _ = writeln!(
        out,
        "\n==== TOKENS ====\n{:<width$}  {:>8}  {:>9}",
        "part", "o200k", "chars/4"
    );
    for (name, t, e) in &table {
        let _ = writeln!(out, "{name:<width$}  {t:>8}  {e:>9}");
    }
    let _ = writeln!(
        out,
        "{:<width$}  {:>8}  {:>9}",
        "total (system + user)",
        tokens(&snap.system_prompt) + tokens(&snap.context),
        agent_runtime::context::estimate_tokens(&snap.system_prompt)
            + agent_runtime::context::estimate_tokens(&snap.context)
    );
    let _ = writeln!(
        out,
        "verdict at this tick: {}",
        match &snap.verdict {
            types::Verdict::Executed { detail } => format!("executed — {detail}"),
            types::Verdict::Rejected { rule, detail } => format!("rejected {rule} — {detail}"),
            types::Verdict::NoOp { detail } => format!("no-op — {detail}"),
        }
    );
    out
}
