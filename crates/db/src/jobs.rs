//! Backtests as jobs: a queue of backtest runs on PostgreSQL that worker processes lease
//! (`FOR UPDATE SKIP LOCKED`), run, heartbeat and report on, and the bar files they run over,
//! stored once per user by their SHA-256.
//!
//! A job is one backtest run ([`JobSpec`]: the skill document, the bars of each symbol by
//! content hash, the model, the range and the paper account's settings), optionally one of a
//! batch (an arena's runs share a [`NewJob::batch_id`]). Its user submits it
//! ([`JobStore::submit_jobs`](crate::JobStore::submit_jobs): refused at once past the user's
//! [`JobLimits`]), reads it and may cancel it; a worker claims it
//! ([`JobQueue::claim_jobs`](crate::JobQueue::claim_jobs)), reports its progress with each
//! heartbeat and finishes or fails it. A job whose worker died is claimed again once its lease
//! expired, and run again from its first tick: the run's ids are derived from the job, so the
//! re-run writes the rows an uninterrupted run writes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use sha2::Digest as _;
use uuid::Uuid;

/// Longest job label, in characters.
pub const MAX_JOB_LABEL_CHARS: usize = 200;
/// Longest error text kept of a failed job, in characters (longer ones are cut).
pub const MAX_JOB_ERROR_CHARS: usize = 2000;
/// Largest bar file, in bytes.
pub const MAX_BARS_BYTES: usize = 64 * 1024 * 1024;
/// Largest job spec, in bytes of JSON.
pub const MAX_JOB_SPEC_BYTES: usize = 1024 * 1024;
/// Most jobs one submit holds.
pub const MAX_JOBS_PER_SUBMIT: usize = 1000;
/// Most jobs one read returns.
pub const MAX_JOBS_READ: u32 = 1000;
/// Longest lease owner name, in characters.
pub const MAX_JOB_OWNER_CHARS: usize = 200;

/// Where a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Waiting for a worker.
    Queued,
    /// Leased to a worker, which heartbeats while it runs.
    Running,
    /// Finished: its result (the run's summary) is stored.
    Done,
    /// Given up: its error says why.
    Failed,
    /// Cancelled by its user before it finished.
    Cancelled,
}

impl JobStatus {
    /// Every status, in the order a job moves through them.
    pub const ALL: [JobStatus; 5] = [
        JobStatus::Queued,
        JobStatus::Running,
        JobStatus::Done,
        JobStatus::Failed,
        JobStatus::Cancelled,
    ];

    /// The stored text.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::Running => "running",
            JobStatus::Done => "done",
            JobStatus::Failed => "failed",
            JobStatus::Cancelled => "cancelled",
        }
    }

    /// The status whose [`as_str`](Self::as_str) is `s`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// Done, failed or cancelled: nothing changes it any more.
    #[must_use]
    pub const fn is_finished(self) -> bool {
        matches!(
            self,
            JobStatus::Done | JobStatus::Failed | JobStatus::Cancelled
        )
    }
}

/// How a bar file's bytes parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BarsFormat {
    /// The backtesting.py CSV layout (`,Open,High,Low,Close,Volume`).
    Csv,
    /// A Hyperliquid `candleSnapshot` response.
    Json,
}

impl BarsFormat {
    /// The stored text, which is also the file extension the bar loader reads it by.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            BarsFormat::Csv => "csv",
            BarsFormat::Json => "json",
        }
    }

    /// The format whose [`as_str`](Self::as_str) is `s`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        [BarsFormat::Csv, BarsFormat::Json]
            .into_iter()
            .find(|f| f.as_str() == s)
    }

    /// The format of a file named `name`, by its extension (`.csv`, `.json`).
    #[must_use]
    pub fn of_file_name(name: &str) -> Option<Self> {
        let (_, ext) = name.rsplit_once('.')?;
        Self::parse(&ext.to_ascii_lowercase())
    }
}

/// A bar file a spec runs over: its content's SHA-256 (lower-case hex) and how it parses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BarsRef {
    /// SHA-256 of the file's bytes, 64 lower-case hex digits.
    pub sha256: String,
    /// How the bytes parse.
    pub format: BarsFormat,
}

/// A bar file to store with a submit ([`NewBars::of`] hashes it).
#[derive(Clone, PartialEq, Eq)]
pub struct NewBars {
    /// SHA-256 of `bytes`, 64 lower-case hex digits.
    pub sha256: String,
    /// How `bytes` parse.
    pub format: BarsFormat,
    /// The file's bytes.
    pub bytes: Vec<u8>,
}

impl std::fmt::Debug for NewBars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewBars")
            .field("sha256", &self.sha256)
            .field("format", &self.format)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

impl NewBars {
    /// The bar file `bytes` in `format`, with its hash.
    #[must_use]
    pub fn of(format: BarsFormat, bytes: Vec<u8>) -> Self {
        Self {
            sha256: sha256_hex(&bytes),
            format,
            bytes,
        }
    }

    /// The reference a [`JobSpec`] holds to this file.
    #[must_use]
    pub fn reference(&self) -> BarsRef {
        BarsRef {
            sha256: self.sha256.clone(),
            format: self.format,
        }
    }
}

/// SHA-256 of `bytes` as 64 lower-case hex digits.
#[must_use]
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = sha2::Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Whether `s` is a SHA-256 as stored: 64 lower-case hex digits.
#[must_use]
pub fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A bar file as stored.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredBars {
    /// Whose it is.
    pub user_id: Uuid,
    /// SHA-256 of `bytes`.
    pub sha256: String,
    /// How `bytes` parse.
    pub format: BarsFormat,
    /// The file's bytes.
    pub bytes: Vec<u8>,
}

impl std::fmt::Debug for StoredBars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredBars")
            .field("user_id", &self.user_id)
            .field("sha256", &self.sha256)
            .field("format", &self.format)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

/// Recorded model responses a job's run answers from: a cassette file on the worker's file
/// system (a shared volume), and how it answers (`record`, `replay` or `auto`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CassetteRef {
    /// The cassette's path as the workers see it.
    pub path: String,
    /// `record`, `replay` or `auto`.
    pub mode: String,
}

/// One backtest run: what `sim-worker run` is given on its command line, with the bar files
/// by content hash. Stored as the job's `spec` (JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// The skill document (JSON, as a skill version stores it).
    pub skill: serde_json::Value,
    /// The bars of each of the skill's symbols, at its interval.
    pub bars: BTreeMap<String, BarsRef>,
    /// The model, overriding the skill's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// First tick time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<DateTime<Utc>>,
    /// Last tick time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<DateTime<Utc>>,
    /// Starting equity in USD (default: `sim-worker run`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equity_usd: Option<Decimal>,
    /// Taker fee in basis points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fee_bps: Option<Decimal>,
    /// Slippage in basis points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slippage_bps: Option<Decimal>,
    /// A blind run (`sim-worker run --blind`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blind: bool,
    /// The most the run may spend at the provider, in USD (`--max-cost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<Decimal>,
    /// Recorded model responses (`--cassette`, `--cassette-mode`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cassette: Option<CassetteRef>,
}

impl JobSpec {
    /// The most this run can cost, as the user's cost cap counts it: nothing for a built-in
    /// model or a cassette in replay mode (nothing is sent), else its `max_cost_usd`, which a
    /// model that calls a provider must state.
    ///
    /// # Errors
    /// A message naming `max_cost_usd` for a provider's model without one.
    pub fn cost_budget(&self, skill_model: &str) -> Result<Decimal, String> {
        let model = self.model.as_deref().unwrap_or(skill_model);
        let replay = self.cassette.as_ref().is_some_and(|c| c.mode == "replay");
        if model.starts_with("builtin/") || replay {
            return Ok(self.max_cost_usd.unwrap_or_default());
        }
        self.max_cost_usd.ok_or_else(|| {
            format!(
                "max_cost_usd: {model} calls a provider; a job of it states the most it may \
                 spend (the user's cost cap counts it)"
            )
        })
    }
}

/// A job to submit.
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    /// Its id (the caller's: a derived id makes a repeated submit of the same job a conflict).
    pub id: Uuid,
    /// Whose it is: the run's deployment, ticks and ledger are theirs.
    pub user_id: Uuid,
    /// The batch it belongs to (an arena's runs), if any.
    pub batch_id: Option<Uuid>,
    /// A name for people (1..=[`MAX_JOB_LABEL_CHARS`] characters), if any.
    pub label: Option<String>,
    /// The run.
    pub spec: JobSpec,
    /// The most the run may spend, in USD ([`JobSpec::cost_budget`]).
    pub cost_limit_usd: Decimal,
    /// When it was submitted.
    pub created_at: DateTime<Utc>,
}

/// A user's limits, checked at submit: the jobs not finished (queued or running) may number
/// at most `max_open_jobs`, and their cost limits add up to at most `max_open_cost_usd`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobLimits {
    /// Most jobs queued or running at once.
    pub max_open_jobs: u32,
    /// Most USD the queued and running jobs may spend together.
    pub max_open_cost_usd: Decimal,
}

impl Default for JobLimits {
    /// 200 jobs and $50.
    fn default() -> Self {
        Self {
            max_open_jobs: 200,
            max_open_cost_usd: Decimal::from(50),
        }
    }
}

/// What a submit stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Submitted {
    /// Jobs queued.
    pub jobs: usize,
    /// Bar files stored (the others were stored already).
    pub bars_stored: usize,
}

/// How far a running job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JobProgress {
    /// Ticks run.
    pub ticks_done: u32,
    /// Ticks the run has in all (known once a worker prepared it).
    pub ticks_total: Option<u32>,
    /// What the run has spent at the provider so far, in USD.
    pub cost_usd: Decimal,
}

/// A job as stored (its report aside: [`JobStore::job_report`](crate::JobStore::job_report)).
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Its id.
    pub id: Uuid,
    /// Whose it is.
    pub user_id: Uuid,
    /// Its batch.
    pub batch_id: Option<Uuid>,
    /// Its label.
    pub label: Option<String>,
    /// The run.
    pub spec: JobSpec,
    /// Where it stands.
    pub status: JobStatus,
    /// The most the run may spend, in USD.
    pub cost_limit_usd: Decimal,
    /// How many times a worker claimed it.
    pub attempts: u32,
    /// The worker that holds it (running jobs only).
    pub lease_owner: Option<String>,
    /// Until when.
    pub lease_expires_at: Option<DateTime<Utc>>,
    /// The worker's last heartbeat.
    pub heartbeat_at: Option<DateTime<Utc>>,
    /// How far it is.
    pub progress: JobProgress,
    /// The deployment its run records into, once a worker started it.
    pub deployment_id: Option<Uuid>,
    /// The run's summary (done jobs).
    pub result: Option<serde_json::Value>,
    /// Why it failed.
    pub error: Option<String>,
    /// Whether a report is stored.
    pub has_report: bool,
    /// When it was submitted.
    pub created_at: DateTime<Utc>,
    /// When a worker first claimed it.
    pub started_at: Option<DateTime<Utc>>,
    /// When it finished.
    pub finished_at: Option<DateTime<Utc>>,
}

/// Which jobs a read returns: a user's, a batch's, or all, newest first, at most `limit`
/// (≤ [`MAX_JOBS_READ`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobFilter {
    /// Only this user's.
    pub user_id: Option<Uuid>,
    /// Only this batch's.
    pub batch_id: Option<Uuid>,
    /// Most jobs returned.
    pub limit: u32,
}

/// What a finished run hands back ([`JobQueue::finish_job`](crate::JobQueue::finish_job)).
#[derive(Debug, Clone, PartialEq)]
pub struct JobResult {
    /// The run's summary (`summary.json`'s object).
    pub summary: serde_json::Value,
    /// The run's report (`report.html`), if it wrote one.
    pub report_html: Option<String>,
    /// Its final progress.
    pub progress: JobProgress,
}
