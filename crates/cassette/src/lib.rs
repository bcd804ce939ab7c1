//! Recorded model responses ("cassettes"): a [`LanguageModel`] decorator that records the
//! response to every request in a SQLite file and answers the same request from it again,
//! without calling the provider — so a re-run of a recorded LLM backtest is byte-identical and
//! costs $0.
//!
//! **Owns:** the cassette file and its format, the [`Mode`]s, the request fingerprint
//! ([`fingerprint()`]: SHA3-256 of the canonical JSON of provider, model, system prompt, every
//! message, every tool schema and the sampling parameters) and, on a replay miss, the sentence
//! naming the nearest recorded request and the first difference from it ([`diff`]).
//!
//! **Never does:** call a provider in [`Mode::Replay`] (there is no inner model to call), know
//! about ticks or skills (the tick time is read from the request's `## Time` section only to
//! find the nearest recording), or price anything (the cost of a replayed response is what the
//! caller's meter, which sits *under* the cassette, never sees).
//!
//! # The file
//! A SQLite database (created on first use in `record` and `auto` modes):
//! - `cassette_meta(key TEXT PRIMARY KEY, value TEXT)`: `format` = `model-cassette/1`;
//! - `responses(fingerprint TEXT PRIMARY KEY, seq INTEGER, model TEXT, request TEXT,
//!   response TEXT)`: `request` is the canonical JSON that was hashed, `response` the
//!   [`ModelResponse`] as JSON (`text`, `tool_calls` with the provider's call ids, `finish`,
//!   `usage`), `seq` the order recorded. One row per distinct request; recording a request
//!   again replaces its row.
//!
//! It is an ordinary SQLite file: `sqlite3 run.cassette 'SELECT seq, model, substr(response,
//! 1, 80) FROM responses'` reads it.
//!
//! # Modes
//! - [`Mode::Record`]: every request goes to the provider; each answer is written at once (a
//!   killed run keeps what it paid for).
//! - [`Mode::Replay`]: every request is answered from the file; a request with no recording is
//!   a [`ModelError::Other`] whose text names its fingerprint and the first difference from the
//!   nearest recorded request, and [`Cassette::first_miss`] keeps it for the caller to end the
//!   run with. Nothing is sent, no key is needed.
//! - [`Mode::Auto`]: a recorded request is replayed, any other one is sent and recorded.

pub mod diff;
pub mod fingerprint;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use model::{LanguageModel, ModelError, ModelRequest, ModelResponse};
use serde_json::Value;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};

pub use fingerprint::{canonical_json, canonical_request, fingerprint};

/// The `format` value in `cassette_meta` this version reads and writes.
pub const FORMAT: &str = "model-cassette/1";

/// How a [`Cassette`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Call the provider for every request and record each answer.
    Record,
    /// Answer every request from the recording; a request not recorded fails.
    Replay,
    /// Replay what is recorded, call the provider for (and record) the rest.
    Auto,
}

impl Mode {
    /// `record`, `replay` or `auto`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Mode::Record => "record",
            Mode::Replay => "replay",
            Mode::Auto => "auto",
        }
    }
}

/// Why a cassette could not be opened or used.
#[derive(Debug, thiserror::Error)]
pub enum CassetteError {
    /// Replay mode needs an existing file.
    #[error("{path}: no cassette there (record one first with the record or auto mode)")]
    Missing {
        /// The file named.
        path: PathBuf,
    },
    /// The file is not a cassette of this format.
    #[error("{path}: not a cassette of format {FORMAT}: {detail}")]
    Format {
        /// The file named.
        path: PathBuf,
        /// What was found.
        detail: String,
    },
    /// A row of the file cannot be read back.
    #[error("{path}: recording #{seq} (fingerprint {fingerprint}) is unreadable: {detail}")]
    Row {
        /// The file named.
        path: PathBuf,
        /// Its `seq`.
        seq: i64,
        /// Its fingerprint.
        fingerprint: String,
        /// The JSON error.
        detail: String,
    },
    /// Record and auto modes need the model that answers what is not recorded.
    #[error("the {mode} mode needs the model to call (only replay runs without one)")]
    NoModel {
        /// The mode asked for.
        mode: &'static str,
    },
    /// SQLite refused.
    #[error("{path}: {source}")]
    Sqlite {
        /// The file named.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: sqlx::Error,
    },
}

/// What a cassette did so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CassetteStats {
    /// Requests answered from the file.
    pub replayed: u64,
    /// Requests sent to the provider and recorded.
    pub recorded: u64,
    /// Requests with no recording in replay mode (failed).
    pub missed: u64,
}

struct Recorded {
    request: Value,
    response: ModelResponse,
}

#[derive(Default)]
struct State {
    /// Recorded requests in recording order, and their index by fingerprint.
    entries: Vec<(String, Recorded)>,
    by_fingerprint: HashMap<String, usize>,
    stats: CassetteStats,
    first_miss: Option<String>,
}

/// The decorator. Its [`id`](LanguageModel::id) is the model's id (in replay, the id given), so
/// costs, snapshots and summaries read exactly as with the model itself.
pub struct Cassette {
    id: String,
    mode: Mode,
    path: PathBuf,
    inner: Option<Arc<dyn LanguageModel>>,
    /// How to reach the file for writing; the pool is made on the first recording, on the
    /// runtime that records (the cassette may be opened on another).
    options: SqliteConnectOptions,
    pool: Mutex<Option<SqlitePool>>,
    state: Mutex<State>,
}

impl std::fmt::Debug for Cassette {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cassette")
            .field("id", &self.id)
            .field("mode", &self.mode)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Cassette {
    /// Opens (in record and auto modes: creates if missing) the cassette at `path` for the model
    /// `model_id`. `inner` answers what is not replayed: required in record and auto modes,
    /// ignored in replay (nothing is ever sent).
    ///
    /// # Errors
    /// [`CassetteError::Missing`] in replay mode without the file; [`CassetteError::NoModel`] in
    /// record or auto mode without `inner`; [`CassetteError::Format`] for a SQLite file that is
    /// not a cassette of [`FORMAT`]; [`CassetteError::Row`] for a recording that does not parse;
    /// [`CassetteError::Sqlite`] when SQLite refuses.
    pub async fn open(
        path: &Path,
        mode: Mode,
        model_id: &str,
        inner: Option<Arc<dyn LanguageModel>>,
    ) -> Result<Self, CassetteError> {
        let inner = match mode {
            Mode::Replay => None,
            Mode::Record | Mode::Auto => Some(inner.ok_or(CassetteError::NoModel {
                mode: mode.as_str(),
            })?),
        };
        if mode == Mode::Replay && !path.exists() {
            return Err(CassetteError::Missing {
                path: path.to_owned(),
            });
        }
        let sql = |source| CassetteError::Sqlite {
            path: path.to_owned(),
            source,
        };
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(mode != Mode::Replay)
            .read_only(mode == Mode::Replay);
        // Read with a pool of its own, closed before returning: nothing of it outlives the
        // runtime `open` runs on.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options.clone())
            .await
            .map_err(sql)?;
        if mode != Mode::Replay {
            for statement in [
                "CREATE TABLE IF NOT EXISTS cassette_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
                "CREATE TABLE IF NOT EXISTS responses (fingerprint TEXT PRIMARY KEY, \
                 seq INTEGER NOT NULL, model TEXT NOT NULL, request TEXT NOT NULL, \
                 response TEXT NOT NULL)",
            ] {
                sqlx::query(statement).execute(&pool).await.map_err(sql)?;
            }
            sqlx::query("INSERT OR IGNORE INTO cassette_meta (key, value) VALUES ('format', ?)")
                .bind(FORMAT)
                .execute(&pool)
                .await
                .map_err(sql)?;
        }
        let format: Option<(String,)> =
            sqlx::query_as("SELECT value FROM cassette_meta WHERE key = 'format'")
                .fetch_optional(&pool)
                .await
                .map_err(|e| CassetteError::Format {
                    path: path.to_owned(),
                    detail: e.to_string(),
                })?;
        match format {
            Some((f,)) if f == FORMAT => {}
            other => {
                return Err(CassetteError::Format {
                    path: path.to_owned(),
                    detail: format!(
                        "its format is {}",
                        other.map_or_else(|| "not stated".to_owned(), |(f,)| format!("{f:?}"))
                    ),
                });
            }
        }
        let rows: Vec<(String, i64, String, String)> = sqlx::query_as(
            "SELECT fingerprint, seq, request, response FROM responses ORDER BY seq",
        )
        .fetch_all(&pool)
        .await
        .map_err(sql)?;
        let mut state = State::default();
        for (fp, seq, request, response) in rows {
            let bad = |e: serde_json::Error| CassetteError::Row {
                path: path.to_owned(),
                seq,
                fingerprint: fp.clone(),
                detail: e.to_string(),
            };
            let recorded = Recorded {
                request: serde_json::from_str(&request).map_err(bad)?,
                response: serde_json::from_str(&response).map_err(bad)?,
            };
            state.by_fingerprint.insert(fp.clone(), state.entries.len());
            state.entries.push((fp, recorded));
        }
        pool.close().await;
        Ok(Self {
            id: inner
                .as_ref()
                .map_or_else(|| model_id.to_owned(), |m| m.id().to_owned()),
            mode,
            path: path.to_owned(),
            inner,
            options: options.create_if_missing(false),
            pool: Mutex::new(None),
            state: Mutex::new(state),
        })
    }

    /// The mode it was opened in.
    #[must_use]
    pub const fn mode(&self) -> Mode {
        self.mode
    }

    /// The file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many distinct requests the file holds now.
    #[must_use]
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether the file holds no recording.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What it did so far.
    #[must_use]
    pub fn stats(&self) -> CassetteStats {
        self.lock().stats
    }

    /// The error text of the first request replay could not answer, if any: a run should end
    /// with it rather than go on without the model.
    #[must_use]
    pub fn first_miss(&self) -> Option<String> {
        self.lock().first_miss.clone()
    }

    /// Closes the file (pending writes are already committed: each recording is its own
    /// statement). A later recording opens it again.
    pub async fn close(&self) {
        let pool = self
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(pool) = pool {
            pool.close().await;
        }
    }

    /// The pool recordings are written through, made on first use.
    fn writer(&self) -> SqlitePool {
        self.pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert_with(|| {
                SqlitePoolOptions::new()
                    .max_connections(1)
                    .connect_lazy_with(self.options.clone())
            })
            .clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn miss(&self, fp: &str, request: &Value) -> String {
        let mut state = self.lock();
        let why = match diff::nearest(request, state.entries.iter().map(|(_, r)| &r.request)) {
            None => "the cassette holds no recording".to_owned(),
            Some(i) => {
                let (near_fp, near) = &state.entries[i];
                let at = diff::tick_time(&near.request)
                    .map(|t| format!(", tick {t}"))
                    .unwrap_or_default();
                format!(
                    "nearest recorded request {}{at}: {}",
                    short(near_fp),
                    diff::first_difference(&near.request, request)
                        .unwrap_or_else(|| "no difference found".to_owned())
                )
            }
        };
        let message = format!(
            "cassette {}: no recording of this request (fingerprint {fp}) in replay mode; {why}",
            self.path.display()
        );
        state.stats.missed += 1;
        if state.first_miss.is_none() {
            state.first_miss = Some(message.clone());
        }
        message
    }

    async fn record(
        &self,
        fp: &str,
        request: &Value,
        canonical: &str,
        response: &ModelResponse,
    ) -> Result<(), ModelError> {
        let body = serde_json::to_string(response)
            .map_err(|e| ModelError::Other(format!("cassette: serialising a response: {e}")))?;
        // `seq` is file-wide: two cassettes on one file (a run's trading and reflection
        // models) interleave in the order they recorded.
        sqlx::query(
            "INSERT OR REPLACE INTO responses (fingerprint, seq, model, request, response) \
             VALUES (?, (SELECT COALESCE(MAX(seq), -1) + 1 FROM responses), ?, ?, ?)",
        )
        .bind(fp)
        .bind(&self.id)
        .bind(canonical)
        .bind(&body)
        .execute(&self.writer())
        .await
        .map_err(|e| {
            ModelError::Other(format!(
                "cassette {}: cannot record the response: {e}",
                self.path.display()
            ))
        })?;
        let mut state = self.lock();
        let recorded = Recorded {
            request: request.clone(),
            response: response.clone(),
        };
        match state.by_fingerprint.get(fp).copied() {
            Some(i) => state.entries[i].1 = recorded,
            None => {
                let i = state.entries.len();
                state.by_fingerprint.insert(fp.to_owned(), i);
                state.entries.push((fp.to_owned(), recorded));
            }
        }
        state.stats.recorded += 1;
        Ok(())
    }
}

fn short(fp: &str) -> &str {
    fp.get(..16).unwrap_or(fp)
}

#[async_trait::async_trait]
impl LanguageModel for Cassette {
    fn id(&self) -> &str {
        &self.id
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let value = canonical_request(&self.id, request);
        let canonical = canonical_json(&value);
        let fp = fingerprint(&canonical);
        if self.mode != Mode::Record {
            let mut state = self.lock();
            if let Some(&i) = state.by_fingerprint.get(&fp) {
                let response = state.entries[i].1.response.clone();
                state.stats.replayed += 1;
                return Ok(response);
            }
        }
        let Some(inner) = &self.inner else {
            return Err(ModelError::Other(self.miss(&fp, &value)));
        };
        let response = inner.generate(request).await?;
        self.record(&fp, &value, &canonical, &response).await?;
        Ok(response)
    }
}
