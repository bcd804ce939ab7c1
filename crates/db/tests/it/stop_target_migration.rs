//! The stop/target migration (`*_stop_target.sql`) over a SQLite database the previous schema
//! wrote. SQLite's widened `close_kind` check is an edit of the table's schema text (a rebuild
//! would cascade through the foreign keys inside sqlx's migration transaction): the old rows and
//! the fills linked to them stay, `stop` / `target` are accepted, other words still refused.

use db::{LedgerStore, SqliteStore};
use types::CloseKind;
use uuid::Uuid;

use db::test_support::at;

const STOP_TARGET_MIGRATION: i64 = 20261124000075;

#[tokio::test]
async fn sqlite_the_stop_target_migration_keeps_old_rows_and_widens_close_kind() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("old.sqlite").display()
    );
    let (user, skill, d, trade) = (
        Uuid::new_v4(),
        Uuid::new_v4(),
        Uuid::new_v4(),
        Uuid::new_v4(),
    );
    let (t0, t1) = (db::time_text(at(0)), db::time_text(at(60)));
    {
        let mut conn = crate::common::sqlite_before(&url, STOP_TARGET_MIGRATION).await;
        for s in [
            format!("INSERT INTO users (id) VALUES ('{user}')"),
            format!("INSERT INTO skills (id, user_id, name) VALUES ('{skill}', '{user}', 'old')"),
            format!(
                "INSERT INTO skill_versions (skill_id, version, body, model) \
                 VALUES ('{skill}', 1, '{{}}', 'builtin/scripted')"
            ),
            format!(
                "INSERT INTO deployments (id, user_id, skill_id, skill_version, broker, \
                 initial_equity_usd, equity_usd) VALUES ('{d}', '{user}', '{skill}', 1, 'paper', '10000', '10000')"
            ),
            format!(
                "INSERT INTO trade_history (id, deployment_id, skill_id, skill_version, symbol, side, \
                 status, entry_tick_at, entry_price, entry_size_usd, opened_qty, open_qty, \
                 exit_tick_at, exit_price, close_kind, closed_at) VALUES ('{trade}', '{d}', '{skill}', \
                 1, 'BTC', 'long', 'closed', '{t0}', '100', '1000', '10', '0', '{t1}', '101', \
                 'flip', '{t1}')"
            ),
            format!(
                "INSERT INTO fills (deployment_id, broker_fill_id, symbol, side, qty, price, fee_usd, \
                 time, trade_id) VALUES ('{d}', 'paper-1', 'BTC', 'buy', '10', '100', '0', '{t0}', \
                 '{trade}')"
            ),
        ] {
            sqlx::query(&s)
                .execute(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("{s}: {e}"));
        }
    }
    // Opening the store applies the new migration.
    let store = SqliteStore::connect(&url).await.unwrap();
    let closed = store.closed_trades(d, at(120), 10).await.unwrap();
    assert_eq!(closed.len(), 1, "the old row is kept");
    assert_eq!(
        (closed[0].id, closed[0].close_kind),
        (trade, Some(CloseKind::Flip))
    );
    let fills = store.list_fills(d, None).await.unwrap();
    assert_eq!(fills.len(), 1);
    assert_eq!(
        (fills[0].trade_id, fills[0].fill.trigger),
        (Some(trade), None),
        "the fill keeps its link to the row and reads without a trigger"
    );
    for kind in ["stop", "target"] {
        sqlx::query(&format!(
            "UPDATE trade_history SET close_kind = '{kind}' WHERE id = '{trade}'"
        ))
        .execute(store.pool())
        .await
        .unwrap_or_else(|e| panic!("{kind}: {e}"));
    }
    let err = sqlx::query(&format!(
        "UPDATE trade_history SET close_kind = 'margin_call' WHERE id = '{trade}'"
    ))
    .execute(store.pool())
    .await
    .unwrap_err();
    assert!(
        err.to_string().contains("trade_history_close_kind"),
        "{err}"
    );
    let err = sqlx::query(&format!(
        "UPDATE fills SET trigger_kind = 'trailing' WHERE deployment_id = '{d}'"
    ))
    .execute(store.pool())
    .await
    .unwrap_err();
    assert!(err.to_string().contains("fills_trigger_kind"), "{err}");
    let check: (String,) = sqlx::query_as("PRAGMA integrity_check")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(check.0, "ok");
}
