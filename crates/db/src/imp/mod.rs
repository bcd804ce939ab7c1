//! The store implementations, written once over [`Backend`] and [`Dialect`].
//!
//! The SQL is the common subset of PostgreSQL and SQLite (numbered `$n` parameters, `ON CONFLICT`,
//! `RETURNING`, `NULLS LAST`); the only differences are how values are bound (the
//! [`Dialect`] encoders: SQLite binds uuid/decimal/time as TEXT, PostgreSQL natively), the
//! users table's name, and the row-locking clause of the lease claim (`FOR UPDATE SKIP LOCKED`
//! on PostgreSQL; nothing on SQLite, which has one writer at a time). Rows are decoded by the
//! shared `*_from_row` functions through [`crate::codec::RowExt`]. Write transactions open with
//! [`Dialect::BEGIN`]: `BEGIN IMMEDIATE` on SQLite (take the write lock up front, so a
//! read-then-write transaction waits for a concurrent writer instead of failing with
//! `SQLITE_BUSY`), plain `BEGIN` on PostgreSQL. Two statements differ whole and are a trait
//! per database next to their store trait: recording a tick attempt ([`lease::AttemptSql`])
//! and the memory search's candidates ([`outcomes::SearchSql`]). The `Any` driver is not used:
//! it cannot carry decimals, uuids, times or JSON.
//!
//! One file per store trait: each holds that trait's helpers (free functions generic over the
//! dialect or the store) and its implementation for every [`Backend`]
//! (`impl<S: Backend<Db = D>, D: Dialect> RegistryStore for S`), so the SQLite store, the
//! PostgreSQL store and the user-scoped PostgreSQL store run the same functions, each
//! monomorphised for its store. The dialects are implemented in `sqlite.rs` and `postgres.rs`,
//! the backends there and in `scoped.rs`.
//!
//! Statements are built with [`query`] rather than `sqlx::query`: sqlx's `bind` needs
//! `T: Encode<'q, DB> + Type<DB>` for each bound type, which generic code over `DB` could only
//! have from a where clause repeated on every generic item (Rust does not carry such bounds
//! from a trait to its users). [`Query::bind`] takes a [`Param`] instead: a [`Plain`] value
//! both databases bind alike, or a dialect's encoding of a uuid, decimal, time or symbol list.
//! Likewise a statement runs [`On`] a store's pool ([`Backend::pool`]) or a transaction's
//! connection (`&mut *tx`), whatever the backend.

pub(crate) mod actions;
pub(crate) mod alerts;
pub(crate) mod chat_turns;
pub(crate) mod controls;
pub(crate) mod conversations;
pub(crate) mod events;
pub(crate) mod facts;
pub(crate) mod jobs;
pub(crate) mod lease;
pub(crate) mod ledger;
pub(crate) mod news;
pub(crate) mod notes;
pub(crate) mod outcomes;
pub(crate) mod prompt_lines;
pub(crate) mod registry;
pub(crate) mod tick;

use std::future::Future;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::Serialize;
use sqlx::postgres::{PgConnection, PgQueryResult};
use sqlx::sqlite::{SqliteConnection, SqliteQueryResult};
use sqlx::types::Json;
use sqlx::{Database, Encode, Executor, IntoArguments, Postgres, Sqlite, Transaction, Type};
use uuid::Uuid;

use crate::codec::RowExt;
use crate::imp::prompt_lines::LineCache;

/// sqlx's statement type for database `D`.
pub(crate) type SqlxQuery<'q, D> = sqlx::query::Query<'q, D, <D as Database>::Arguments<'q>>;

/// A database the stores run on (SQLite, PostgreSQL): how values are bound and the few
/// statement texts that differ. The bounds on its sqlx types are what the generic store code
/// needs of them (stated here, as bounds of the associated types, so that every user of
/// `D: Dialect` has them).
pub(crate) trait Dialect:
    for<'q> Database<
        Arguments<'q>: IntoArguments<'q, Self>,
        Row: RowExt,
        QueryResult: Affected,
        Connection: Conn<Db = Self>,
    >
{
    /// Whether generated statements number their parameters (`$n`) or leave them anonymous
    /// (`?`).
    const NUMBERED_PARAMS: bool;
    /// The users table.
    const USERS: &'static str;
    /// The statement that opens a write transaction.
    const BEGIN: &'static str;
    /// The row-locking clause of the lease claim's choice of due rows.
    const SKIP_LOCKED: &'static str;

    /// A uuid as bound.
    type Id: for<'q> Param<'q, Self>;
    /// An optional uuid as bound.
    type OptId: for<'q> Param<'q, Self>;
    /// A decimal as bound.
    type Dec: for<'q> Param<'q, Self>;
    /// An optional decimal as bound.
    type OptDec: for<'q> Param<'q, Self>;
    /// A time as bound.
    type Ts: for<'q> Param<'q, Self>;
    /// An optional time as bound.
    type OptTs: for<'q> Param<'q, Self>;
    /// A list of symbols (or tags) as bound.
    type Symbols: for<'q> Param<'q, Self>;

    fn id(v: Uuid) -> Self::Id;
    fn oid(v: Option<Uuid>) -> Self::OptId;
    fn dec(v: Decimal) -> Self::Dec;
    fn odec(v: Option<Decimal>) -> Self::OptDec;
    fn ts(v: DateTime<Utc>) -> Self::Ts;
    fn ots(v: Option<DateTime<Utc>>) -> Self::OptTs;
    fn symbols(v: &[String]) -> Self::Symbols;

    /// `q` with `v` bound (sqlx's `bind`, for a value both databases take as it is).
    fn bind_plain<'q, T: Plain<'q>>(q: SqlxQuery<'q, Self>, v: T) -> SqlxQuery<'q, Self>;
}

/// A store type: where its statements run and how its transactions begin. The store traits
/// are implemented for every `Backend` (see the module docs).
pub(crate) trait Backend: Sync {
    /// The database it runs on.
    type Db: Dialect;

    /// Where a statement of its own runs: the pool, or for [`crate::UserScoped`] a
    /// transaction as the user around it.
    fn pool(&self) -> impl On<Self::Db>;

    /// A write transaction, opened with [`Dialect::BEGIN`] (for [`crate::UserScoped`]: as the
    /// user).
    fn begin(
        &self,
    ) -> impl Future<Output = Result<Transaction<'static, Self::Db>, sqlx::Error>> + Send;

    /// Which prompt lines the deployments' scopes hold.
    fn lines(&self) -> &LineCache;
}

/// A store that leases deployments to runners: the stores of the connecting role, not
/// [`crate::UserScoped`] (leasing is the runners' business, never a user's).
pub(crate) trait Leases: Backend {}

/// A value a statement of database `D` binds.
pub(crate) trait Param<'q, D: Database> {
    /// `q` with this value bound.
    fn bind_to(self, q: SqlxQuery<'q, D>) -> SqlxQuery<'q, D>;
}

/// A value both databases bind as it is: integers, booleans, floats, text, bytes, JSON, and
/// their options. Not a uuid, decimal, time or list: those go through the [`Dialect`]'s
/// encoders (bound raw, a uuid would be a BLOB on SQLite).
pub(crate) trait Plain<'q>:
    'q + Send + Encode<'q, Sqlite> + Type<Sqlite> + Encode<'q, Postgres> + Type<Postgres>
{
}

impl Plain<'_> for i32 {}
impl Plain<'_> for i64 {}
impl Plain<'_> for f64 {}
impl Plain<'_> for bool {}
impl Plain<'_> for String {}
impl Plain<'_> for Vec<u8> {}
impl<'q> Plain<'q> for &'q str {}
impl<'q> Plain<'q> for &'q String {}
impl<'q> Plain<'q> for &'q [u8] {}
impl<'q, T: Serialize + Send + 'q> Plain<'q> for Json<T> {}
impl<'q, T: Plain<'q>> Plain<'q> for Option<T> {}

impl<'q, D: Dialect, T: Plain<'q>> Param<'q, D> for T {
    fn bind_to(self, q: SqlxQuery<'q, D>) -> SqlxQuery<'q, D> {
        D::bind_plain(q, self)
    }
}

/// The number of rows a statement changed (each backend's query result has it as an inherent
/// method).
pub(crate) trait Affected {
    fn rows_affected(&self) -> u64;
}

impl Affected for SqliteQueryResult {
    fn rows_affected(&self) -> u64 {
        SqliteQueryResult::rows_affected(self)
    }
}

impl Affected for PgQueryResult {
    fn rows_affected(&self) -> u64 {
        PgQueryResult::rows_affected(self)
    }
}

/// A database connection a statement can run on (through `&mut`).
pub(crate) trait Conn: Send {
    /// Its database.
    type Db: Database;
    /// The connection as sqlx's executor.
    fn exec(&mut self) -> impl Executor<'_, Database = Self::Db>;
}

impl Conn for SqliteConnection {
    type Db = Sqlite;
    fn exec(&mut self) -> impl Executor<'_, Database = Sqlite> {
        self
    }
}

impl Conn for PgConnection {
    type Db = Postgres;
    fn exec(&mut self) -> impl Executor<'_, Database = Postgres> {
        self
    }
}

/// Where a statement of database `D` runs: a pool (`&pool`, [`Backend::pool`]) or a
/// transaction's connection (`&mut *tx`).
pub(crate) trait On<D: Database>: Send {
    /// As sqlx's executor, for as long as `self` lives.
    fn executor<'e>(self) -> impl Executor<'e, Database = D>
    where
        Self: 'e;
}

impl<C: Conn> On<C::Db> for &mut C {
    fn executor<'e>(self) -> impl Executor<'e, Database = C::Db>
    where
        Self: 'e,
    {
        self.exec()
    }
}

/// A pool, or another shared executor (a [`crate::scoped::ScopedPool`]).
impl<T: Sync, D: Database> On<D> for &T
where
    for<'e> Self: Executor<'e, Database = D>,
{
    fn executor<'e>(self) -> impl Executor<'e, Database = D>
    where
        Self: 'e,
    {
        self
    }
}

/// A statement being built for database `D`: sqlx's query, binding [`Param`]s.
pub(crate) struct Query<'q, D: Database>(SqlxQuery<'q, D>);

/// The statement `sql` (`sqlx::query` for the generic store code).
pub(crate) fn query<D: Database>(sql: &str) -> Query<'_, D> {
    Query(sqlx::query(sql))
}

/// The runs return `impl Future + Send` rather than being `async fn`s: a store method's future
/// must be `Send`, and rustc does not carry an `async fn`'s `Send` into a generic caller that
/// runs it on a transaction's connection ("lifetime bound not satisfied",
/// rust-lang/rust#100013); declared on the returned future, it is proven here once.
#[allow(clippy::manual_async_fn)] // an `async fn` here is what does not compile in the callers
impl<'q, D: Dialect> Query<'q, D> {
    /// Binds the next parameter.
    pub(crate) fn bind(self, value: impl Param<'q, D>) -> Self {
        Query(value.bind_to(self.0))
    }

    /// Runs the statement; how many rows it changed.
    pub(crate) fn execute<'e>(
        self,
        on: impl On<D> + 'e,
    ) -> impl Future<Output = Result<<D as Database>::QueryResult, sqlx::Error>> + Send + 'e
    where
        'q: 'e,
    {
        async move { self.0.execute(on.executor()).await }
    }

    /// Runs the statement; every row it returns.
    pub(crate) fn fetch_all<'e>(
        self,
        on: impl On<D> + 'e,
    ) -> impl Future<Output = Result<Vec<<D as Database>::Row>, sqlx::Error>> + Send + 'e
    where
        'q: 'e,
    {
        async move { self.0.fetch_all(on.executor()).await }
    }

    /// Runs the statement; its one row (an error when it returns none).
    pub(crate) fn fetch_one<'e>(
        self,
        on: impl On<D> + 'e,
    ) -> impl Future<Output = Result<<D as Database>::Row, sqlx::Error>> + Send + 'e
    where
        'q: 'e,
    {
        async move { self.0.fetch_one(on.executor()).await }
    }

    /// Runs the statement; its first row, if any.
    pub(crate) fn fetch_optional<'e>(
        self,
        on: impl On<D> + 'e,
    ) -> impl Future<Output = Result<Option<<D as Database>::Row>, sqlx::Error>> + Send + 'e
    where
        'q: 'e,
    {
        async move { self.0.fetch_optional(on.executor()).await }
    }
}
