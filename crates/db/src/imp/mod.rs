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

pub(crate) mod events;
pub(crate) mod facts;
pub(crate) mod lease;
pub(crate) mod ledger;
pub(crate) mod notes;
pub(crate) mod outcomes;
pub(crate) mod registry;
pub(crate) mod tick;

macro_rules! impl_stores {
    ($store:ty, $db:ty, $enc:ident, $users:literal, $begin:literal, $skip_locked:literal) => {
        use std::collections::{BTreeSet, HashMap, HashSet};

        use chrono::{DateTime, Utc};
        use rust_decimal::Decimal;
        use sqlx::types::Json;
        use types::{
            FactChange, Fill, MarketEvent, ReflectionNote, TradeRecord, TradeStatus, UserFact,
        };
        use uuid::Uuid;

        use crate::DbError;
        use crate::codec::{self, check_len, check_limit, u64_to_i64, $enc};
        use crate::error::ctx;
        use crate::model::*;
        use crate::traits::*;

        crate::imp::registry::impl_registry!($store, $enc, $users);
        crate::imp::lease::impl_lease!($store, $db, $enc, $skip_locked);
        crate::imp::tick::impl_tick!($store, $db, $enc, $begin);
        crate::imp::ledger::impl_ledger!($store, $enc);
        crate::imp::notes::impl_notes!($store, $db, $enc, $begin);
        crate::imp::facts::impl_facts!($store, $enc, $begin);
        crate::imp::events::impl_events!($store, $enc, $begin);
        crate::imp::outcomes::impl_outcomes!($store, $db, $enc, $begin);
    };
}

pub(crate) use impl_stores;
