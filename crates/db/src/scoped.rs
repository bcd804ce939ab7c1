//! [`UserScoped`]: the PostgreSQL store acting as one end user, under row-level security.
//!
//! Every statement a [`UserScoped`] store sends runs inside a PostgreSQL transaction that first
//! did `SET LOCAL ROLE authenticated` and
//! `SELECT set_config('request.jwt.claims', '{"sub": "<user id>", "role": "authenticated"}', true)`
//! — what PostgREST does for a Supabase request. The policies of `migrations/postgres/*_rls.sql`
//! then decide what the statement sees and may write: a user's own rows only. The store methods
//! are the same code as [`PgStore`]'s (the store traits are implemented once for every
//! `Backend`, see `imp/mod.rs`); only where a statement's connection comes from differs:
//! - a method that opens a transaction (`edit_fact`, `top_facts`, ...) gets one that starts
//!   with the role and the claims;
//! - a method that sends a single statement gets a transaction of its own around it (the
//!   executor of [`ScopedPool`] opens it, sets the role and the claims, runs the statement,
//!   commits).
//!
//! So a bug in code that holds a [`UserScoped`] (an HTTP handler passing the wrong id) cannot
//! read another user's rows: the database filters them out, and a read of one by id is
//! [`DbError::NotFound`](crate::DbError::NotFound). `LeaseStore` is not implemented: leasing
//! deployments is the runners' business.
//!
//! The connecting role must be allowed to `SET ROLE authenticated` (a superuser, or a login
//! role granted `authenticated`).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::stream::{self, BoxStream, StreamExt, TryStreamExt};
use sqlx::postgres::{PgQueryResult, PgRow, PgStatement, PgTypeInfo};
use sqlx::{Describe, Either, Execute, Executor, PgPool, Postgres, Transaction};
use uuid::Uuid;

use crate::PgStore;

/// The role every statement of a [`UserScoped`] store runs as.
pub const USER_ROLE: &str = "authenticated";

/// The PostgreSQL store acting as one user: every statement runs in a transaction as role
/// `authenticated` with the user's JWT claims, so row-level security scopes it (see the module
/// docs). Made by [`PgStore::as_user`]; cheap to clone.
#[derive(Debug, Clone)]
pub struct UserScoped {
    pool: ScopedPool,
    /// Which prompt lines the deployments' scopes hold (a user writes no snapshot under RLS:
    /// stays empty).
    lines: crate::imp::prompt_lines::LineCache,
}

/// A pool whose every statement runs in a transaction as the user (the executor of
/// [`UserScoped`]'s statements).
#[derive(Debug, Clone)]
pub(crate) struct ScopedPool {
    pool: PgPool,
    user_id: Uuid,
    /// The `request.jwt.claims` JSON: `{"role":"authenticated","sub":"<user id>"}`.
    claims: Arc<str>,
}

impl PgStore {
    /// This store acting as `user_id`: every call runs in a transaction as role
    /// `authenticated` with `{"sub": user_id, "role": "authenticated"}` as the request's JWT
    /// claims, so row-level security, not the caller's code, keeps other users' rows out.
    #[must_use]
    pub fn as_user(&self, user_id: Uuid) -> UserScoped {
        let claims = serde_json::json!({ "role": USER_ROLE, "sub": user_id }).to_string();
        UserScoped {
            pool: ScopedPool {
                pool: self.pool().clone(),
                user_id,
                claims: claims.into(),
            },
            lines: crate::imp::prompt_lines::LineCache::default(),
        }
    }
}

impl UserScoped {
    /// The user every statement runs as.
    #[must_use]
    pub fn user_id(&self) -> Uuid {
        self.pool.user_id
    }

    /// The JWT claims every statement's transaction sets (`request.jwt.claims`).
    #[must_use]
    pub fn claims(&self) -> &str {
        &self.pool.claims
    }

    /// A transaction as the user (role and claims set), for statements the store traits do not
    /// cover. Dropped without `commit`, it rolls back.
    ///
    /// # Errors
    /// [`DbError::Backend`](crate::DbError::Backend) when the server cannot be reached or the
    /// connecting role may not `SET ROLE authenticated`.
    pub async fn begin(&self) -> Result<Transaction<'static, Postgres>, crate::DbError> {
        self.pool
            .begin()
            .await
            .map_err(crate::error::ctx("beginning a transaction as the user"))
    }
}

impl ScopedPool {
    /// A transaction that did `SET LOCAL ROLE authenticated` and set the claims (both local to it).
    pub(crate) async fn begin(&self) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        // `set_config('role', …, true)` is `SET LOCAL ROLE` (as PostgREST does it): one round
        // trip for the role and the claims, both undone when the transaction ends.
        sqlx::query(
            "SELECT set_config('role', $1, true), set_config('request.jwt.claims', $2, true)",
        )
        .bind(USER_ROLE)
        .bind(&*self.claims)
        .execute(&mut *tx)
        .await?;
        Ok(tx)
    }
}

/// Each statement in a transaction of its own, as the user; results are buffered (a store
/// method reads whole results anyway).
impl<'p> Executor<'p> for &'_ ScopedPool {
    type Database = Postgres;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, Result<Either<PgQueryResult, PgRow>, sqlx::Error>>
    where
        E: 'q + Execute<'q, Postgres>,
    {
        let scoped = self.clone();
        let all = async move {
            let mut tx = scoped.begin().await?;
            let out: Vec<Either<PgQueryResult, PgRow>> =
                (&mut *tx).fetch_many(query).try_collect().await?;
            tx.commit().await?;
            Ok::<_, sqlx::Error>(out)
        };
        stream::once(all)
            .map_ok(|rows| stream::iter(rows.into_iter().map(Ok)))
            .try_flatten()
            .boxed()
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<PgRow>, sqlx::Error>>
    where
        E: 'q + Execute<'q, Postgres>,
    {
        let scoped = self.clone();
        Box::pin(async move {
            let mut tx = scoped.begin().await?;
            let row = (&mut *tx).fetch_optional(query).await?;
            tx.commit().await?;
            Ok(row)
        })
    }

    fn prepare_with<'e, 'q: 'e>(
        self,
        sql: &'q str,
        parameters: &'e [PgTypeInfo],
    ) -> BoxFuture<'e, Result<PgStatement<'q>, sqlx::Error>> {
        let scoped = self.clone();
        Box::pin(async move {
            let mut tx = scoped.begin().await?;
            let statement = (&mut *tx).prepare_with(sql, parameters).await?;
            tx.commit().await?;
            Ok(statement)
        })
    }

    fn describe<'e, 'q: 'e>(
        self,
        sql: &'q str,
    ) -> BoxFuture<'e, Result<Describe<Postgres>, sqlx::Error>> {
        let scoped = self.clone();
        Box::pin(async move {
            let mut tx = scoped.begin().await?;
            let described = (&mut *tx).describe(sql).await?;
            tx.commit().await?;
            Ok(described)
        })
    }
}

impl crate::imp::Backend for UserScoped {
    type Db = Postgres;

    fn pool(&self) -> impl crate::imp::On<Postgres> {
        &self.pool
    }

    fn begin(
        &self,
    ) -> impl std::future::Future<Output = Result<Transaction<'static, Postgres>, sqlx::Error>> + Send
    {
        self.pool.begin()
    }

    fn lines(&self) -> &crate::imp::prompt_lines::LineCache {
        &self.lines
    }
}
