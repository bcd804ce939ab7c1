//! The store implementations, written once and expanded for each backend.
//!
//! The SQL is the common subset of PostgreSQL and SQLite (numbered `$n` parameters, `ON CONFLICT`,
//! `RETURNING`, `NULLS LAST`); the only differences are how values are bound (the `$enc` module:
//! [`crate::codec::lite`] binds uuid/decimal/time as TEXT, [`crate::codec::pg`] natively) and the
//! users table's name, and the row-locking clause of the lease claim (`FOR UPDATE SKIP LOCKED` on
//! PostgreSQL; nothing on SQLite, which has one writer at a time). Rows are decoded by the shared `*_from_row` functions through
//! [`crate::codec::RowExt`]. Write transactions open with `$begin`: `BEGIN IMMEDIATE` on SQLite
//! (take the write lock up front, so a read-then-write transaction waits for a concurrent writer
//! instead of failing with `SQLITE_BUSY`), plain `BEGIN` on PostgreSQL. The `Any` driver is not used: it cannot carry decimals, uuids, times or
//! JSON.
//!
//! One file per store trait: each holds that trait's helpers and a macro with its
//! implementation; [`impl_stores`] brings the shared imports and expands every one of them.

pub(crate) mod chat_turns;
pub(crate) mod events;
pub(crate) mod facts;
pub(crate) mod lease;
pub(crate) mod ledger;
pub(crate) mod news;
pub(crate) mod notes;
pub(crate) mod outcomes;
pub(crate) mod prompt_lines;
pub(crate) mod registry;
pub(crate) mod tick;

/// The imports every store implementation's macros use.
macro_rules! store_imports {
    ($enc:ident) => {
        #[allow(unused_imports)]
        use std::collections::{BTreeSet, HashMap, HashSet};

        #[allow(unused_imports)]
        use chrono::{DateTime, Utc};
        #[allow(unused_imports)]
        use rust_decimal::Decimal;
        #[allow(unused_imports)]
        use sqlx::types::Json;
        #[allow(unused_imports)]
        use types::{
            FactChange, Fill, MarketEvent, ReflectionNote, TradeRecord, TradeStatus, UserFact,
        };
        #[allow(unused_imports)]
        use uuid::Uuid;

        #[allow(unused_imports)]
        use crate::DbError;
        #[allow(unused_imports)]
        use crate::codec::{self, check_len, check_limit, u64_to_i64, $enc};
        #[allow(unused_imports)]
        use crate::error::ctx;
        #[allow(unused_imports)]
        use crate::model::*;
        #[allow(unused_imports)]
        use crate::traits::*;
    };
}

/// Every store trait for a backend's store type (`self.pool` a sqlx pool).
macro_rules! impl_stores {
    ($store:ty, $db:ty, $enc:ident, $users:literal, $begin:literal, $skip_locked:literal) => {
        crate::imp::store_imports!($enc);
        crate::imp::registry::impl_registry!($store, $enc, $users);
        crate::imp::lease::impl_lease!($store, $db, $enc, $skip_locked);
        crate::imp::tick::impl_tick!($store, $db, $enc, $begin);
        crate::imp::tick::impl_convert!($store, $enc, $begin);
        crate::imp::ledger::impl_ledger!($store, $enc);
        crate::imp::notes::impl_notes!($store, $db, $enc, $begin);
        crate::imp::facts::impl_facts!($store, $enc, $begin);
        crate::imp::events::impl_events!($store, $enc, $begin);
        crate::imp::news::impl_news!($store, $enc, $begin);
        crate::imp::chat_turns::impl_chat_turns!($store, $enc);
        crate::imp::outcomes::impl_outcomes!($store, $db, $enc, $begin);
    };
}

/// The store traits an end user's requests use, for [`crate::UserScoped`] (`self.pool` a
/// [`crate::scoped::ScopedPool`]: every statement in a transaction as the user). Not
/// `LeaseStore`: leasing deployments is the runners' business, never a user's.
macro_rules! impl_user_stores {
    ($store:ty, $db:ty, $enc:ident, $users:literal, $begin:literal) => {
        crate::imp::store_imports!($enc);
        crate::imp::registry::impl_registry!($store, $enc, $users);
        crate::imp::tick::impl_tick!($store, $db, $enc, $begin);
        crate::imp::ledger::impl_ledger!($store, $enc);
        crate::imp::notes::impl_notes!($store, $db, $enc, $begin);
        crate::imp::facts::impl_facts!($store, $enc, $begin);
        crate::imp::events::impl_events!($store, $enc, $begin);
        crate::imp::news::impl_news!($store, $enc, $begin);
        crate::imp::chat_turns::impl_chat_turns!($store, $enc);
        crate::imp::outcomes::impl_outcomes!($store, $db, $enc, $begin);
    };
}

pub(crate) use impl_stores;
pub(crate) use impl_user_stores;
pub(crate) use store_imports;
