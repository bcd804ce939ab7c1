//! The `ticks` command both binaries offer (`sim-worker ticks` over a run's store, `live-runner
//! ticks` over PostgreSQL): a deployment's stored ticks in a window, exported as JSON lines (one
//! [`TickEntry`] a line, with `--prompts` its system prompt, user message and steps) or as CSV
//! (one row a tick, no prompt bodies). The binaries parse their flags, open the store and the
//! output; the checks, the reads and the formats are here, once.

use std::io::Write;

use chrono::{DateTime, SecondsFormat, Utc};
use db::{Deployment, MAX_TICKS_READ, RegistryStore, TickQuery, TickStore};
use types::Verdict;
use uuid::Uuid;

use crate::ticks::{ReadTicksError, TickEntry, read_ticks};

/// Ticks read per page with their prompts (a page's texts are held in memory at once).
const PROMPT_PAGE: u32 = 100;

/// How `ticks` writes the ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TicksFormat {
    /// One JSON object a line ([`TickEntry`]'s serialisation).
    Jsonl,
    /// A header, then one row a tick ([`CSV_HEADER`]); no prompt bodies.
    Csv,
}

/// `--format`: `jsonl` or `csv` (a clap `value_parser`).
///
/// # Errors
/// Any other word, quoted, with the two accepted.
pub fn parse_format(text: &str) -> Result<TicksFormat, String> {
    match text {
        "jsonl" => Ok(TicksFormat::Jsonl),
        "csv" => Ok(TicksFormat::Csv),
        other => Err(format!("{other:?} is not a format; use jsonl or csv")),
    }
}

/// What `ticks` exports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TicksRequest {
    /// The deployment; `None`: the store's only one ([`the_deployment`](crate::the_deployment)).
    pub deployment: Option<Uuid>,
    /// The first tick time exported, included (`--from`).
    pub from: Option<DateTime<Utc>>,
    /// The last tick time exported, included (`--to`).
    pub to: Option<DateTime<Utc>>,
    /// JSON lines or CSV (`--format`).
    pub format: TicksFormat,
    /// With each tick's system prompt, user message and steps (`--prompts`; JSON lines only).
    pub prompts: bool,
    /// At most this many ticks, the first of the window (`--limit`); `None`: all of them.
    pub limit: Option<u32>,
}

/// A refusal or a failure of `ticks`.
#[derive(Debug, thiserror::Error)]
pub enum TicksCommandError {
    /// The input's fault, its message naming the flag (the binaries exit 2; nothing was
    /// written).
    #[error("{0}")]
    Input(String),
    /// The store could not be read.
    #[error(transparent)]
    Read(#[from] ReadTicksError),
    /// The output could not be written.
    #[error("writing the ticks: {0}")]
    Output(#[from] std::io::Error),
}

fn bad(message: impl std::fmt::Display) -> TicksCommandError {
    TicksCommandError::Input(message.to_string())
}

impl TicksRequest {
    /// Checks the flags against each other (what [`resolve_deployment`] checks first; a binary
    /// may call it before opening the store).
    ///
    /// # Errors
    /// [`TicksCommandError::Input`] naming `--from`/`--to`, `--prompts` or `--limit`.
    pub fn check(&self) -> Result<(), TicksCommandError> {
        if let (Some(from), Some(to)) = (self.from, self.to)
            && from > to
        {
            return Err(bad(format!(
                "--from {} is after --to {}",
                time(from),
                time(to)
            )));
        }
        if self.prompts && self.format == TicksFormat::Csv {
            return Err(bad(
                "--prompts: CSV has one row a tick without the prompts; use --format jsonl for them",
            ));
        }
        if self.limit == Some(0) {
            return Err(bad("--limit 0: give at least 1"));
        }
        Ok(())
    }
}

/// The deployment whose ticks `request` exports, after checking the request: the one named, or
/// the store's only one.
///
/// # Errors
/// [`TicksCommandError::Input`] for a request [`TicksRequest::check`] refuses, an unknown
/// deployment, or none named while the store holds several or none (they are listed);
/// [`TicksCommandError::Read`] when the store fails.
pub async fn resolve_deployment<S: RegistryStore>(
    store: &S,
    request: &TicksRequest,
) -> Result<Deployment, TicksCommandError> {
    request.check()?;
    crate::the_deployment(store, request.deployment)
        .await
        .map_err(|e| match e {
            crate::DeploymentArgError::Store(e) => ReadTicksError::Store(e).into(),
            other => bad(other),
        })
}

/// Writes the ticks of `deployment_id` that `request` asks for to `out`, oldest first, page by
/// page (nothing is held but a page); returns how many. Call [`resolve_deployment`] first: a
/// bad request is refused before anything is written.
///
/// # Errors
/// [`TicksCommandError::Read`] when the store fails (the ticks before are written);
/// [`TicksCommandError::Output`] when `out` does.
pub async fn write_ticks<S: TickStore, W: Write>(
    store: &S,
    deployment_id: Uuid,
    request: &TicksRequest,
    out: W,
) -> Result<u64, TicksCommandError> {
    let page = if request.prompts {
        PROMPT_PAGE
    } else {
        MAX_TICKS_READ
    };
    let mut query = TickQuery {
        deployment_id,
        from: request.from,
        to: request.to,
        after: None,
        limit: page,
        texts: request.prompts,
    };
    let mut sink = match request.format {
        TicksFormat::Jsonl => Sink::Jsonl(out),
        TicksFormat::Csv => {
            let mut csv = csv::Writer::from_writer(out);
            csv.write_record(CSV_HEADER).map_err(std::io::Error::from)?;
            Sink::Csv(Box::new(csv))
        }
    };
    let mut left = request.limit;
    let mut written = 0;
    loop {
        if let Some(left) = left {
            query.limit = page.min(left);
        }
        let ticks = read_ticks(store, &query).await?;
        for t in &ticks {
            sink.write(t)?;
        }
        let n = u32::try_from(ticks.len()).unwrap_or(u32::MAX);
        written += u64::from(n);
        match ticks.last() {
            Some(last) if n == query.limit => query.after = Some(last.tick_at),
            _ => break,
        }
        if let Some(left) = &mut left {
            *left -= n;
            if *left == 0 {
                break;
            }
        }
    }
    sink.finish()?;
    Ok(written)
}

/// The columns of the CSV export, in order.
pub const CSV_HEADER: [&str; 22] = [
    "tick_id",
    "deployment_id",
    "tick_at",
    "outcome",
    "rule",
    "action",
    "symbol",
    "size_usd",
    "leverage",
    "confidence",
    "stop",
    "target",
    "reason",
    "verdict_detail",
    "model",
    "finish_reason",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost_usd",
    "error",
];

/// A tick's CSV row ([`CSV_HEADER`]): times in RFC 3339 as the JSON lines write them, numbers
/// as stored, an absent value empty.
fn csv_row(t: &TickEntry) -> [String; 22] {
    fn opt<T: ToString>(v: Option<T>) -> String {
        v.map_or_else(String::new, |v| v.to_string())
    }
    let p = t.proposal.as_ref();
    let detail = match &t.verdict {
        Verdict::Executed { detail }
        | Verdict::Rejected { detail, .. }
        | Verdict::NoOp { detail } => detail.clone(),
    };
    [
        t.tick_id.to_string(),
        t.deployment_id.to_string(),
        time(t.tick_at),
        t.outcome.as_str().to_owned(),
        opt(t.rule),
        opt(p.map(|p| p.action)),
        opt(p.map(|p| &p.symbol)),
        opt(p.and_then(|p| p.size_usd)),
        opt(p.and_then(|p| p.leverage)),
        opt(p.and_then(|p| p.confidence)),
        opt(p.and_then(|p| p.stop)),
        opt(p.and_then(|p| p.target)),
        opt(p.map(|p| &p.reason)),
        detail,
        t.model.clone(),
        opt(t.finish_reason.as_ref()),
        t.usage.input.to_string(),
        t.usage.output.to_string(),
        t.usage.cache_read.to_string(),
        t.usage.cache_write.to_string(),
        t.cost_usd.to_string(),
        opt(t.error.as_ref()),
    ]
}

/// A time as the JSON lines write it: RFC 3339 in UTC with `Z`.
fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// Where the ticks go, in their format (the CSV writer's buffer state boxed: one per export).
enum Sink<W: Write> {
    Jsonl(W),
    Csv(Box<csv::Writer<W>>),
}

impl<W: Write> Sink<W> {
    fn write(&mut self, t: &TickEntry) -> std::io::Result<()> {
        match self {
            Sink::Jsonl(out) => {
                serde_json::to_writer(&mut *out, t)?;
                out.write_all(b"\n")
            }
            Sink::Csv(csv) => csv.write_record(csv_row(t)).map_err(std::io::Error::from),
        }
    }

    fn finish(self) -> std::io::Result<()> {
        match self {
            Sink::Jsonl(mut out) => out.flush(),
            Sink::Csv(mut csv) => csv.flush(),
        }
    }
}
