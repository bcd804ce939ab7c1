//! The `mock` feature: code generic over a store trait runs against a `mockall` mock.
#![cfg(feature = "mock")]

use chrono::{TimeZone, Utc};
use db::{DbError, LedgerStore, MockLedgerStore};
use uuid::Uuid;

/// What a linking service might write: generic over the trait, not over a backend.
async fn has_closed_trades<S: LedgerStore>(store: &S, deployment: Uuid) -> Result<bool, DbError> {
    let as_of = Utc.with_ymd_and_hms(2026, 6, 4, 10, 0, 0).unwrap();
    Ok(store.count_closed_trades(deployment, as_of).await? > 0)
}

#[tokio::test]
async fn a_generic_caller_runs_against_the_mock() {
    let id = Uuid::from_u128(7);
    let mut store = MockLedgerStore::new();
    store
        .expect_count_closed_trades()
        .withf(move |deployment, _| *deployment == id)
        .times(1)
        .returning(|_, _| Box::pin(std::future::ready(Ok(3))));
    assert!(has_closed_trades(&store, id).await.unwrap());

    let mut failing = MockLedgerStore::new();
    failing.expect_count_closed_trades().returning(|_, _| {
        Box::pin(std::future::ready(Err(DbError::NotFound {
            entity: "deployment",
            id: "7".into(),
        })))
    });
    assert!(has_closed_trades(&failing, id).await.is_err());
}
