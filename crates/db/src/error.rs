use std::fmt;

/// Which kind of database constraint rejected a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConstraintKind {
    /// A unique constraint or unique index (a duplicate id, a second open ledger row for a symbol, ...).
    Unique,
    /// A `CHECK` constraint (a bound or an enumeration the schema enforces).
    Check,
    /// A foreign key: the row references a user, skill, deployment or note that does not exist.
    ForeignKey,
    /// A `NOT NULL` column was given no value.
    NotNull,
}

impl fmt::Display for ConstraintKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConstraintKind::Unique => "unique",
            ConstraintKind::Check => "check",
            ConstraintKind::ForeignKey => "foreign key",
            ConstraintKind::NotNull => "not null",
        })
    }
}

/// Everything a store operation can fail with.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The row the operation needs does not exist (or is not visible to the caller).
    #[error("{entity} {id} not found")]
    NotFound {
        /// What was looked up: `"skill"`, `"deployment"`, `"decision snapshot"`, ...
        entity: &'static str,
        /// The key it was looked up by, as text (an id; `{skill_id} v{version}` for a skill
        /// version; the user or lease owner in parentheses or before a colon where it matters).
        id: String,
    },

    /// The database refused the write. `constraint` is the constraint's name on PostgreSQL and
    /// what SQLite reports on SQLite (the CHECK name, or `table.column` for unique indexes).
    #[error("{context}: {kind} constraint `{constraint}` rejected the write ({message})")]
    Constraint {
        /// What the store was doing, e.g. `"inserting fill"`.
        context: &'static str,
        /// Which kind of constraint.
        kind: ConstraintKind,
        /// The constraint's name (PostgreSQL) or what SQLite names (CHECK name or `table.column`); empty
        /// when the driver names none.
        constraint: String,
        /// The database's own message.
        message: String,
    },

    /// A text field is outside its bounds (checked in Rust before the database sees it).
    #[error("{field} has {actual} characters; allowed {min}..={max}")]
    Bound {
        /// The bounded field, e.g. `"skill name"`, `"fact"`, `"lessons"`.
        field: &'static str,
        /// Its length in characters (Unicode scalar values, not bytes).
        actual: usize,
        /// The fewest characters allowed.
        min: usize,
        /// The most characters allowed.
        max: usize,
    },

    /// The input is not acceptable for a reason other than length.
    #[error("invalid {what}: {detail}")]
    Invalid {
        /// What was refused, e.g. `"skill version"`, `"limit"`, `"SQLite URL"`.
        what: &'static str,
        /// Why, with the offending value.
        detail: String,
    },

    /// A stored value could not be turned back into its Rust type.
    #[error("cannot decode column `{column}`: {detail}")]
    Decode {
        /// The column (or JSON field) that failed to decode.
        column: String,
        /// Why, from the decoder.
        detail: String,
    },

    /// The URL given to [`connect`](crate::connect) names no supported backend.
    #[error("unsupported database URL scheme `{scheme}`: expected sqlite:… or postgres://…")]
    UnsupportedUrl {
        /// The URL's scheme (the text before the first `:`).
        scheme: String,
    },

    /// Applying the embedded migrations failed.
    #[error("running {backend} migrations: {source}")]
    Migrate {
        /// `"SQLite"` or `"PostgreSQL"`.
        backend: &'static str,
        /// sqlx's migration error.
        #[source]
        source: sqlx::migrate::MigrateError,
    },

    /// [`open_existing`](crate::open_existing) found a database without this build's schema
    /// (a mistyped path or database name, or one never migrated). Nothing was created or applied.
    #[error(
        "the {backend} database has not been migrated to this build's schema (missing versions \
         {missing:?}); check the URL, or run `live-runner migrate --db URL` for a new database"
    )]
    NotMigrated {
        /// `"SQLite"` or `"PostgreSQL"`.
        backend: &'static str,
        /// The migration versions this build has and the database has not applied.
        missing: Vec<i64>,
    },

    /// A tick carried a runner state older than (or as old as) the one already stored for its
    /// deployment: another runner has moved the deployment on. Nothing of the tick was written.
    #[error(
        "deployment {deployment_id}: the runner state of the tick at {stored_tick_at} is stored; \
         the tick at {tick_at} is stale and was not written"
    )]
    StaleState {
        /// The deployment whose state is ahead.
        deployment_id: uuid::Uuid,
        /// The tick that was refused (UTC).
        tick_at: chrono::DateTime<chrono::Utc>,
        /// The tick of the state already stored (UTC), at or after `tick_at`.
        stored_tick_at: chrono::DateTime<chrono::Utc>,
    },

    /// A control ([`ControlStore::control_deployment`](crate::ControlStore::control_deployment))
    /// that the deployment's status does not allow: pausing one that is not active, resuming
    /// one that is not paused, stopping one that is stopped (unless to flatten positions a
    /// stop without flatten left open). Nothing was written.
    #[error(
        "deployment {deployment_id} is {}: cannot {} it ({why})",
        current.as_str(),
        action.as_str()
    )]
    Transition {
        /// The deployment.
        deployment_id: uuid::Uuid,
        /// What was asked.
        action: crate::ControlAction,
        /// The status it is in.
        current: crate::DeploymentStatus,
        /// Why the status does not allow it, for a person.
        why: &'static str,
    },

    /// The row was decided already, or its state no longer allows the change: a held lesson
    /// reviewed already (or meanwhile), one whose note a newer reflection replaced (only a
    /// rejection is possible then), a note accepted already. Nothing was written.
    #[error("{what} {detail}")]
    Conflict {
        /// What was refused, e.g. `"held lesson"`.
        what: &'static str,
        /// Its id and why, for a person (`… was already accepted by alice at …`).
        detail: String,
    },

    /// A per-user limit refused the write: nothing was written. Backtest jobs: more jobs
    /// queued or running than the user may have, or their cost limits past the user's cap
    /// ([`JobLimits`](crate::JobLimits)).
    #[error("{what}: {detail}")]
    Limit {
        /// What was refused, e.g. `"backtest jobs"`.
        what: &'static str,
        /// The limit and where the user stands, for a person.
        detail: String,
    },

    /// A retried write kept conflicting with concurrent writers.
    #[error("{context}: still conflicting after {attempts} attempts")]
    Contention {
        /// What the store was doing.
        context: &'static str,
        /// How many times it tried.
        attempts: u32,
    },

    /// Any other driver or server error.
    #[error("{context}: {source}")]
    Backend {
        /// What the store was doing, e.g. `"opening SQLite database"`.
        context: &'static str,
        /// The driver's error.
        #[source]
        source: sqlx::Error,
    },
}

impl DbError {
    /// Classifies a driver error: constraint violations become [`DbError::Constraint`], anything
    /// else [`DbError::Backend`], both tagged with what was being done.
    pub(crate) fn from_sqlx(context: &'static str, err: sqlx::Error) -> Self {
        if let sqlx::Error::Database(db) = &err {
            let kind = match db.kind() {
                sqlx::error::ErrorKind::UniqueViolation => Some(ConstraintKind::Unique),
                sqlx::error::ErrorKind::CheckViolation => Some(ConstraintKind::Check),
                sqlx::error::ErrorKind::ForeignKeyViolation => Some(ConstraintKind::ForeignKey),
                sqlx::error::ErrorKind::NotNullViolation => Some(ConstraintKind::NotNull),
                // A SQLite trigger's RAISE(ABORT, 'CHECK constraint failed: name') (SQLite has no
                // cross-table CHECK; the trigger stands in for one and says so).
                _ if db.message().starts_with("CHECK constraint failed: ") => {
                    Some(ConstraintKind::Check)
                }
                _ => None,
            };
            if let Some(kind) = kind {
                let message = db.message().to_owned();
                // PostgreSQL names the constraint; SQLite puts it after the colon of its message
                // ("CHECK constraint failed: reflection_notes_lessons_len").
                let constraint = db.constraint().map_or_else(
                    || {
                        message
                            .split_once(": ")
                            .map_or_else(String::new, |(_, name)| name.trim().to_owned())
                    },
                    str::to_owned,
                );
                return DbError::Constraint {
                    context,
                    kind,
                    constraint,
                    message,
                };
            }
        }
        DbError::Backend {
            context,
            source: err,
        }
    }

    /// True when this is a unique violation.
    #[must_use]
    pub fn is_unique_violation(&self) -> bool {
        matches!(
            self,
            DbError::Constraint {
                kind: ConstraintKind::Unique,
                ..
            }
        )
    }

    pub(crate) fn not_found(entity: &'static str, id: impl fmt::Display) -> Self {
        DbError::NotFound {
            entity,
            id: id.to_string(),
        }
    }
}

/// `map_err` adapter: `.map_err(ctx("inserting fill"))`.
pub(crate) fn ctx(context: &'static str) -> impl FnOnce(sqlx::Error) -> DbError {
    move |e| DbError::from_sqlx(context, e)
}
