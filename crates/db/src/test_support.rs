//! Builders for tests of this crate and its users (feature `test-support`): a user, a skill with
//! one version, a deployment, a snapshot, a tick record, a ledger row — valid, linked, with fresh
//! ids.

use chrono::{DateTime, Duration, TimeZone, Utc};
use rust_decimal::Decimal;
use types::{
    CloseKind, Fill, NoteLint, OrderAction, OrderSide, ProposedAction, RegimeTag, Side,
    TradeRecord, TradeStatus, Verdict,
};
use uuid::Uuid;

use crate::DbError;
use crate::model::{
    BrokerKind, DecisionSnapshot, Deployment, DeploymentStatus, NewNote, OutcomeWrites,
    SkillRecord, SkillVersion, TickRecord, User,
};
use crate::traits::{RegistryStore, TickStore};

/// 2026-06-04T10:00:00Z: the base time of every sample.
#[must_use]
pub fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 4, 10, 0, 0)
        .single()
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
}

/// `t0() + minutes`.
#[must_use]
pub fn at(minutes: i64) -> DateTime<Utc> {
    t0() + Duration::minutes(minutes)
}

/// The statement `LeaseStore::claim_due_deployments` runs, on PostgreSQL (`postgres`) or
/// SQLite, with its parameters `$1` owner, `$2` now, `$3` lease end, `$4` limit: for tests that
/// `EXPLAIN` it.
#[must_use]
pub fn claim_due_sql(postgres: bool) -> String {
    use crate::imp::Dialect;
    crate::imp::lease::claim_due_sql(if postgres {
        <sqlx::Postgres as Dialect>::SKIP_LOCKED
    } else {
        <sqlx::Sqlite as Dialect>::SKIP_LOCKED
    })
}

/// A user, a skill, its version 1 and an active paper deployment, as stored by [`seed`].
#[derive(Debug, Clone)]
pub struct Fixture {
    /// The user (fresh id, email `{id}@example.test`).
    pub user: User,
    /// Their skill "BTC breakout".
    pub skill: SkillRecord,
    /// Its version 1, model `builtin/scripted`.
    pub version: SkillVersion,
    /// An active paper deployment of version 1 with $10,000 of equity.
    pub deployment: Deployment,
}

/// A user with a fresh id and an `@example.test` email (not stored).
#[must_use]
pub fn sample_user() -> User {
    let id = Uuid::new_v4();
    User {
        id,
        email: Some(format!("{id}@example.test")),
    }
}

/// A skill "BTC breakout" of `user_id`, fresh id, created at [`t0`] (not stored).
#[must_use]
pub fn sample_skill(user_id: Uuid) -> SkillRecord {
    SkillRecord {
        id: Uuid::new_v4(),
        user_id,
        name: "BTC breakout".into(),
        created_at: t0(),
    }
}

/// Version `version` of `skill_id`: a thesis skill document, model `builtin/scripted`, created
/// at [`t0`] (not stored).
#[must_use]
pub fn sample_skill_version(skill_id: Uuid, version: i32) -> SkillVersion {
    SkillVersion {
        skill_id,
        version,
        body: serde_json::json!({
            "name": "BTC breakout",
            "strategy": {"kind": "thesis", "thesis": "buy breakouts above the prior swing high"},
        }),
        model: "builtin/scripted".into(),
        created_at: t0(),
    }
}

/// An active paper deployment of the skill version, fresh id, $10,000 initial and current equity,
/// symbols BTC and ETH, unscheduled and unleased (not stored).
#[must_use]
pub fn sample_deployment(user_id: Uuid, skill_id: Uuid, skill_version: i32) -> Deployment {
    Deployment {
        id: Uuid::new_v4(),
        user_id,
        skill_id,
        skill_version,
        broker: BrokerKind::Paper,
        status: DeploymentStatus::Active,
        initial_equity_usd: Decimal::new(10_000, 0),
        equity_usd: Decimal::new(10_000, 0),
        config: serde_json::json!({"symbols": ["BTC", "ETH"], "max_leverage": "3"}),
        created_at: t0(),
        next_tick_at: None,
        lease_owner: None,
        lease_expires_at: None,
    }
}

/// Stores a fresh user, skill, version 1 and deployment.
///
/// # Errors
/// Whatever the store returns.
pub async fn seed<S: RegistryStore>(store: &S) -> Result<Fixture, DbError> {
    let user = sample_user();
    let skill = sample_skill(user.id);
    let version = sample_skill_version(skill.id, 1);
    let deployment = sample_deployment(user.id, skill.id, 1);
    store.upsert_user(&user).await?;
    store.create_skill(&skill).await?;
    store.add_skill_version(&version).await?;
    store.create_deployment(&deployment).await?;
    Ok(Fixture {
        user,
        skill,
        version,
        deployment,
    })
}

/// A tick's snapshot at `tick_at` proposing a BTC long.
#[must_use]
pub fn sample_snapshot(deployment_id: Uuid, tick_at: DateTime<Utc>) -> DecisionSnapshot {
    DecisionSnapshot {
        id: Uuid::new_v4(),
        deployment_id,
        tick_at,
        system_prompt: "HEADER\nSTRATEGY\nFOOTER".into(),
        context: format!("## Time\n{}\n## Your turn", crate::time_text(tick_at)),
        steps: crate::JsonText::from_text(r#"[{"tool":"propose_order","ok":true}]"#.to_owned())
            .expect("literal JSON"),
        proposal: Some(ProposedAction {
            action: OrderAction::OpenLong,
            symbol: "BTC".into(),
            size_usd: Some(Decimal::new(250, 0)),
            leverage: Some(Decimal::new(2, 0)),
            reason: "breakout above prior swing high".into(),
            confidence: Some(70),
            stop: Some(Decimal::new(64_500, 0)),
            target: None,
        }),
        verdict: Verdict::Executed {
            detail: "filled".into(),
        },
        model: "builtin/scripted".into(),
        finish_reason: Some("tool_calls".into()),
        usage: types::Usage {
            input: 1200,
            output: 80,
            cache_read: 1000,
            cache_write: 0,
        },
        // 1200 × $3/Mtok + 80 × $15/Mtok = 0.0036 + 0.0012 = 0.0048
        cost_usd: Decimal::new(48, 4),
        error: None,
        model_error: false,
    }
}

/// A tick that writes only `snapshot`: no fills, ledger rows, links, equity, runner state or
/// outcome rows. A test sets what it checks with struct update syntax:
/// `TickRecord { trades, ..tick_record(snapshot) }`.
#[must_use]
pub fn tick_record(snapshot: DecisionSnapshot) -> TickRecord {
    TickRecord {
        snapshot,
        fills: Vec::new(),
        trades: Vec::new(),
        links: Vec::new(),
        equity_usd: None,
        runner_state: None,
        outcomes: OutcomeWrites::default(),
    }
}

/// A buy fill of `qty` BTC at `price` with a 0.045 % taker fee.
#[must_use]
pub fn sample_fill(id: &str, qty: Decimal, price: Decimal, time: DateTime<Utc>) -> Fill {
    Fill {
        id: id.into(),
        symbol: "BTC".into(),
        side: OrderSide::Buy,
        qty,
        price,
        fee_usd: (qty * price * Decimal::new(45, 5)).round_dp(6),
        time,
        snapshot_id: None,
        client_order_id: Some(format!("cl-{id}")),
        liquidation: false,
        trigger: None,
    }
}

/// An open BTC long: 0.01 BTC at 65,200 ($652 notional) entered at `entry_tick_at`.
#[must_use]
pub fn sample_open_trade(fx: &Fixture, entry_tick_at: DateTime<Utc>) -> TradeRecord {
    TradeRecord {
        id: Uuid::new_v4(),
        deployment_id: fx.deployment.id,
        skill_id: fx.skill.id,
        skill_version: fx.version.version,
        symbol: "BTC".into(),
        side: Side::Long,
        status: TradeStatus::Open,
        entry_tick_at,
        entry_price: Decimal::new(65_200, 0),
        entry_size_usd: Decimal::new(652, 0),
        entry_leverage: Some(Decimal::new(2, 0)),
        entry_reason: Some("breakout above prior swing high".into()),
        entry_snapshot_id: None,
        entry_regime_tag: Some(RegimeTag::TrendingUp),
        opened_qty: Decimal::new(1, 2),
        open_qty: Decimal::new(1, 2),
        exit_tick_at: None,
        exit_price: None,
        exit_reason: None,
        exit_snapshot_id: None,
        close_kind: None,
        holding_minutes: None,
        realized_pnl_usd: Decimal::ZERO,
        // 652 × 0.00045 = 0.2934
        fees_usd: Decimal::new(2934, 4),
        mfe_usd: Decimal::ZERO,
        mae_usd: Decimal::ZERO,
        exit_size_usd: Decimal::ZERO,
        broker_reconciled: false,
    }
}

/// `open` closed at 65,940 at `exit_tick_at` by a signal.
/// PnL (gross) = (65,940 − 65,200) × 0.01 = 7.40; exit fee 659.40 × 0.00045 = 0.29673, so fees
/// 0.2934 + 0.29673 = 0.59013.
#[must_use]
pub fn sample_closed_trade(open: &TradeRecord, exit_tick_at: DateTime<Utc>) -> TradeRecord {
    let minutes = (exit_tick_at - open.entry_tick_at).num_minutes();
    TradeRecord {
        status: TradeStatus::Closed,
        open_qty: Decimal::ZERO,
        exit_tick_at: Some(exit_tick_at),
        exit_price: Some(Decimal::new(65_940, 0)),
        exit_reason: Some("target reached".into()),
        close_kind: Some(CloseKind::Signal),
        holding_minutes: Some(Decimal::from(minutes)),
        realized_pnl_usd: Decimal::new(740, 2),
        fees_usd: Decimal::new(59013, 5),
        mfe_usd: Decimal::new(912, 2),
        mae_usd: Decimal::new(-310, 2),
        // 0.01 × 65,940
        exit_size_usd: Decimal::new(6594, 1),
        ..open.clone()
    }
}

/// A deployment-scoped note generated at `generated_at`.
#[must_use]
pub fn sample_note(fx: &Fixture, generated_at: DateTime<Utc>, lessons: &str) -> NewNote {
    NewNote {
        id: Uuid::new_v4(),
        skill_id: fx.skill.id,
        skill_version: fx.version.version,
        deployment_id: Some(fx.deployment.id),
        generated_at,
        content: types::NoteContent {
            window_start: t0(),
            window_end: generated_at,
            trades_considered: 10,
            lessons_text: lessons.into(),
            model_used: "builtin/scripted".into(),
            input_tokens: Some(900),
            output_tokens: Some(120),
            cost_usd: Some(Decimal::new(21, 4)),
            observations: Vec::new(),
            dropped: Vec::new(),
            held: Vec::new(),
        },
        lint: None,
    }
}

/// A pending action of `kind` of the fixture's user, prepared at `created_at` and expiring 15
/// minutes later, with a fresh id: a deployment action names the fixture's deployment (no
/// reason, no flatten), a skill version the fixture's skill with a small skill document
/// (`model` `builtin/scripted`).
#[must_use]
pub fn sample_pending_action(
    fx: &Fixture,
    kind: crate::ActionKind,
    created_at: DateTime<Utc>,
) -> crate::NewPendingAction {
    let skill = kind == crate::ActionKind::SaveSkillVersion;
    crate::NewPendingAction {
        id: Uuid::new_v4(),
        user_id: fx.user.id,
        conversation_id: None,
        kind,
        deployment_id: (!skill).then_some(fx.deployment.id),
        skill_id: skill.then_some(fx.skill.id),
        arguments: if skill {
            serde_json::json!({"skill": {
                "name": fx.skill.name,
                "version": 1,
                "model": "builtin/scripted",
                "strategy": {"kind": "thesis", "thesis": "buy breakouts above the prior swing high"},
            }})
        } else {
            serde_json::json!({})
        },
        summary: format!("{} of {}", kind.as_str(), fx.skill.name),
        created_at,
        expires_at: created_at + Duration::minutes(15),
    }
}

/// A lint flag with `reason`.
#[must_use]
pub fn lint(reason: &str) -> NoteLint {
    NoteLint {
        reason: reason.into(),
    }
}

/// A fresh PostgreSQL database per test, for this crate's contract suite and for other crates'
/// integration tests: created on the server `TEST_DATABASE_URL` names (default
/// [`DEFAULT_TEST_DATABASE_URL`](pg::DEFAULT_TEST_DATABASE_URL)), dropped when the value is
/// dropped. Creating one fails — never skips — when no server is reachable, with a message that
/// says how to start one.
pub mod pg {
    use std::str::FromStr;
    use std::time::{SystemTime, UNIX_EPOCH};

    use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
    use sqlx::{ConnectOptions, Connection, Executor, PgConnection, PgPool, Row};

    /// The server tests use when `TEST_DATABASE_URL` is unset: the development machines' local
    /// PostgreSQL (trust auth, user `postgres`).
    pub const DEFAULT_TEST_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

    /// A throwaway database; dropped (with `WITH (FORCE)`) when this value is dropped.
    pub struct TestDatabase {
        /// A pool on the test database.
        pub pool: PgPool,
        admin: PgConnectOptions,
        name: String,
    }

    fn admin_url() -> String {
        std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_TEST_DATABASE_URL.to_owned())
    }

    fn unix_secs() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    }

    impl TestDatabase {
        /// Creates `{prefix}{unix secs}_{uuid}` and a pool of `max_connections` on it, after
        /// dropping databases of the same prefix left by runs killed more than an hour ago.
        ///
        /// # Panics
        /// When no server is reachable or the database cannot be created (a test harness: the
        /// panic is the test failure, with instructions).
        pub async fn create(prefix: &str, max_connections: u32) -> Self {
            let url = admin_url();
            let admin = PgConnectOptions::from_str(&url).unwrap_or_else(|e| {
                panic!("TEST_DATABASE_URL {url:?} is not a PostgreSQL URL: {e}")
            });
            let mut conn = match admin.connect().await {
                Ok(c) => c,
                Err(e) => panic!(
                    "cannot reach PostgreSQL at {url} ({e}).\n\
                     These tests need a server: start it with\n    \
                     pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start\n\
                     (trust auth for user postgres on 127.0.0.1:5432), run `cargo xtask test`, or \
                     point TEST_DATABASE_URL at a server where the user may CREATE DATABASE and \
                     CREATE ROLE."
                ),
            };
            sweep_stale(&mut conn, prefix).await;
            let name = format!("{prefix}{}_{}", unix_secs(), uuid::Uuid::new_v4().simple());
            conn.execute(format!("CREATE DATABASE \"{name}\"").as_str())
                .await
                .unwrap_or_else(|e| panic!("CREATE DATABASE {name} on {url}: {e}"));
            conn.close().await.ok();
            let pool = PgPoolOptions::new()
                .max_connections(max_connections)
                .connect_with(admin.clone().database(&name))
                .await
                .unwrap_or_else(|e| panic!("connect to test database {name}: {e}"));
            Self { pool, admin, name }
        }

        /// The database's name.
        #[must_use]
        pub fn name(&self) -> &str {
            &self.name
        }

        /// A URL of the test database (TEST_DATABASE_URL with the database name replaced).
        #[must_use]
        pub fn url(&self) -> String {
            let admin = admin_url();
            let base = admin.rsplit_once('/').map_or(admin.as_str(), |(b, _)| b);
            format!("{base}/{}", self.name)
        }
    }

    /// Drops databases of this prefix left by runs that were killed more than an hour ago.
    async fn sweep_stale(conn: &mut PgConnection, prefix: &str) {
        let Ok(rows) =
            sqlx::query("SELECT datname FROM pg_database WHERE starts_with(datname, $1)")
                .bind(prefix)
                .fetch_all(&mut *conn)
                .await
        else {
            return;
        };
        let now = unix_secs();
        for row in rows {
            let name: String = row.get(0);
            let created = name
                .strip_prefix(prefix)
                .and_then(|rest| rest.split('_').next())
                .and_then(|secs| secs.parse::<u64>().ok());
            if created.is_some_and(|c| now.saturating_sub(c) > 3600) {
                let _ = conn
                    .execute(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)").as_str())
                    .await;
            }
        }
    }

    impl Drop for TestDatabase {
        fn drop(&mut self) {
            // Drop cannot await: drop the database from a thread with its own runtime.
            let admin = self.admin.clone();
            let name = std::mem::take(&mut self.name);
            let pool = self.pool.clone();
            let dropper = std::thread::spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                rt.block_on(async move {
                    drop(pool);
                    if let Ok(mut conn) = admin.connect().await {
                        let _ = conn
                            .execute(
                                format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)").as_str(),
                            )
                            .await;
                        let _ = conn.close().await;
                    }
                });
            });
            let _ = dropper.join();
        }
    }
}

/// A market snapshot and an unscored `long BTC` outcome (entry 65,000, stop 64,500, target
/// 66,500, executed) of the tick of `snapshot`.
#[must_use]
pub fn sample_outcome_rows(
    snapshot: &DecisionSnapshot,
) -> (outcomes::MarketSnapshot, outcomes::TradeOutcome) {
    let market = outcomes::MarketSnapshot {
        id: outcomes::market_snapshot_id(snapshot.id, "BTC"),
        deployment_id: snapshot.deployment_id,
        decision_snapshot_id: snapshot.id,
        tick_at: snapshot.tick_at,
        symbol: "BTC".into(),
        reference_symbol: "BTC".into(),
        indicators: outcomes::Indicators {
            rsi_15m: None,
            rsi_1h: Some(28.123_456_789_012_34),
            rsi_4h: Some(41.5),
            macd_signal: Some(outcomes::MacdState::Bearish),
            volatility_percentile: Some(87.0),
            volume_ratio: Some(2.25),
            trend_strength: Some(31.062_5),
            btc_correlation: None,
            market_condition: types::RegimeTag::TrendingDown,
        },
    };
    let outcome = outcomes::TradeOutcome {
        id: outcomes::outcome_id(snapshot.id),
        deployment_id: snapshot.deployment_id,
        decision_snapshot_id: snapshot.id,
        snapshot_id: market.id,
        tick_at: snapshot.tick_at,
        symbol: "BTC".into(),
        direction: types::Side::Long,
        confidence: Some(70),
        entry_price: Decimal::new(65_000, 0),
        predicted_stop: Some(Decimal::new(64_500, 0)),
        predicted_target: Some(Decimal::new(66_500, 0)),
        verdict: outcomes::OutcomeVerdict::Executed,
        reason: Some("Oversold bounce at support".into()),
        market_condition: market.indicators.market_condition,
        score: outcomes::OutcomeScore::default(),
    };
    (market, outcome)
}

/// Records a tick of `deployment_id` at `tick_at` ([`sample_snapshot`]) with its sample market
/// snapshot and unscored outcome ([`sample_outcome_rows`]); returns the outcome.
///
/// # Errors
/// Whatever the store returns.
pub async fn record_sample_outcome<S: TickStore>(
    store: &S,
    deployment_id: Uuid,
    tick_at: DateTime<Utc>,
) -> Result<outcomes::TradeOutcome, DbError> {
    let snapshot = sample_snapshot(deployment_id, tick_at);
    let (market, outcome) = sample_outcome_rows(&snapshot);
    store
        .record_tick(&TickRecord {
            outcomes: OutcomeWrites {
                snapshots: vec![market],
                outcomes: vec![outcome.clone()],
                scores: vec![],
            },
            ..tick_record(snapshot)
        })
        .await?;
    Ok(outcome)
}

/// A CSV bar file of `n` hourly bars from [`t0`] whose closes start at `100 + seed` (not stored;
/// a different `seed` gives a different file and hash).
#[must_use]
pub fn sample_bars(n: u32, seed: u32) -> crate::NewBars {
    use std::fmt::Write as _;
    let mut csv = String::from(",Open,High,Low,Close,Volume\n");
    for i in 0..n {
        let t = t0() + Duration::hours(i64::from(i));
        let close = 100 + seed + i % 7;
        let _ = writeln!(
            csv,
            "{},{close},{},{},{close},1000",
            t.format("%Y-%m-%d %H:%M:%S"),
            close + 1,
            close - 1
        );
    }
    crate::NewBars::of(crate::BarsFormat::Csv, csv.into_bytes())
}

/// A job of `user_id` running the sample skill over `bars` as symbol BTC with
/// `builtin/scripted`, fresh id, submitted at `t0() + minutes`, no batch, no cost limit (not
/// stored).
#[must_use]
pub fn sample_job(user_id: Uuid, bars: &crate::NewBars, minutes: i64) -> crate::NewJob {
    crate::NewJob {
        id: Uuid::new_v4(),
        user_id,
        batch_id: None,
        label: None,
        spec: crate::JobSpec {
            skill: sample_skill_version(Uuid::nil(), 1).body,
            bars: [("BTC".to_owned(), bars.reference())].into(),
            model: Some("builtin/scripted".into()),
            from: None,
            to: None,
            equity_usd: None,
            fee_bps: None,
            slippage_bps: None,
            blind: false,
            max_cost_usd: None,
            cassette: None,
        },
        cost_limit_usd: Decimal::ZERO,
        created_at: at(minutes),
    }
}
