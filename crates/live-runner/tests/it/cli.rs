//! The `live-runner` binary end to end: migrate, deploy, run --once against a mock Hyperliquid,
//! deployments; then `run` serving /healthz and /metrics until SIGTERM.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{hyperliquid_mock, postgres};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_live-runner"));
    c.env("RUST_LOG", "info");
    c
}

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("run live-runner"))
        .await
        .expect("join")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn http_get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_deploy_run_once_and_list_through_the_binary_then_sigterm_stops_cleanly() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    common::hl_exchange::mount(&hl, common::hl_exchange::account(10_000, &[], 0)).await;
    let url = pg_url(&pg).await;

    let out = output({
        let mut c = bin();
        c.args(["migrate", "--db", &url]);
        c
    })
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("postgres schema up to date"), "{stdout}");
    assert!(stdout.contains("live_runner_state"), "{stdout}");

    let owner = "00000000-0000-0000-0000-0000000a11ce";
    let skill = common::fixture("btc-sma-cross.yaml");
    let skill = skill.to_str().expect("path");
    // A Hyperliquid deployment needs its account, network and key variable; every missing or
    // bad flag is named at once, nothing is stored.
    let refused = output({
        let mut c = bin();
        c.args(["deploy", "--db", &url, "--skill", skill, "--owner", owner]);
        c.args(["--broker", "hyperliquid", "--equity", "100"]);
        c
    })
    .await;
    assert!(!refused.status.success());
    let stderr = text(&refused.stderr);
    for flag in ["--hl-account", "--hl-network", "--hl-key-env", "--equity"] {
        assert!(stderr.contains(flag), "{flag}: {stderr}");
    }
    assert!(text(&refused.stdout).is_empty());
    let refused = output({
        let mut c = bin();
        c.args(["deploy", "--db", &url, "--skill", skill, "--user", owner]);
        c.args(["--broker", "hyperliquid", "--hl-account", "0x1234"]);
        c.args(["--hl-network", "testnet", "--hl-key-env", "HL KEY"]);
        c
    })
    .await;
    assert!(!refused.status.success());
    let stderr = text(&refused.stderr);
    assert!(
        stderr.contains("--hl-account: invalid address \"0x1234\""),
        "{stderr}"
    );
    let refused = output({
        let mut c = bin();
        c.args(["deploy", "--db", &url, "--skill", skill, "--user", owner]);
        c.args(["--broker", "paper", "--hl-key-env", "HL_KEY"]);
        c
    })
    .await;
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("--broker hyperliquid only"),
        "{}",
        text(&refused.stderr)
    );
    assert_eq!(pg.count("SELECT count(*) FROM deployments").await, 0);

    let account = common::hl_exchange::test_account().to_string();
    let hl_uri = hl.uri();
    let out = output({
        let mut c = bin();
        c.args(["deploy", "--db", &url, "--skill", skill, "--user", owner]);
        c.args(["--broker", "hyperliquid", "--hl-account", &account]);
        c.args(["--hl-network", "testnet", "--hl-key-env", "HL_CLI_TEST_KEY"]);
        c.args(["--hl-url", &hl_uri]);
        c
    })
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let hl_id = text(&out.stdout)
        .split_whitespace()
        .nth(1)
        .expect("deployment id")
        .to_owned();

    let out = output({
        let mut c = bin();
        c.args(["deploy", "--db", &url, "--skill", skill, "--user", owner]);
        c.args(["--broker", "paper", "--equity", "5000"]);
        c
    })
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let id = stdout
        .split_whitespace()
        .nth(1)
        .expect("deployment id")
        .to_owned();
    assert!(stdout.starts_with("deployment "), "{stdout}");

    // Make it due now (it was scheduled at the next bar close).
    sqlx::query("UPDATE deployments SET next_tick_at = now() - interval '1 minute'")
        .execute(pg.pool())
        .await
        .expect("make due");
    // The exchange deployment's key comes from the variable it names, in the runner's
    // environment.
    let out = output({
        let mut c = bin();
        c.args(["run", "--db", &url, "--once", "--hl-url", &hl.uri()]);
        c.args(["--listen", "127.0.0.1:0"]);
        c.env("HL_CLI_TEST_KEY", common::hl_exchange::TEST_KEY);
        c
    })
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(pg.count("SELECT count(*) FROM decision_snapshots").await, 2);
    assert!(
        !text(&out.stderr).contains(&common::hl_exchange::TEST_KEY[2..]),
        "the key is never logged"
    );

    let out = output({
        let mut c = bin();
        c.args(["deployments", "--db", &url]);
        c
    })
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let line = table
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("{id} in {table}"));
    assert!(line.contains("active") && line.contains("paper"), "{line}");
    assert!(!line.contains("never"), "it ticked: {line}");
    let line = table
        .lines()
        .find(|l| l.starts_with(&hl_id))
        .unwrap_or_else(|| panic!("{hl_id} in {table}"));
    assert!(line.contains(" hyperliquid "), "{line}");
    assert!(line.contains(&format!("{account}@testnet")), "{line}");
    assert!(!line.contains("never"), "it ticked: {line}");

    // A long-running runner serves its endpoints and stops on SIGTERM.
    let port = free_port();
    let mut child = bin()
        .args(["run", "--db", &url, "--hl-url", &hl.uri(), "--poll", "1s"])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn run");
    let mut health = None;
    for _ in 0..100 {
        health = http_get(port, "/healthz");
        if health.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let health = health.expect("/healthz answers");
    assert!(
        health.starts_with("HTTP/1.1 200") && health.ends_with("ok\n"),
        "{health}"
    );
    let metrics = http_get(port, "/metrics").expect("/metrics answers");
    assert!(
        metrics.contains("# TYPE live_runner_ticks_total counter"),
        "{metrics}"
    );
    assert!(
        metrics.contains("live_runner_tick_seconds_bucket{le=\"+Inf\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("live_runner_lease_takeovers_total 0"),
        "{metrics}"
    );

    let pid = child.id().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(killed.success());
    let status = tokio::task::spawn_blocking(move || {
        let status = child.wait().expect("wait");
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        (status, err)
    })
    .await
    .expect("join");
    assert!(
        status.0.success(),
        "exit on SIGTERM: {:?}\n{}",
        status.0,
        status.1
    );
    assert!(status.1.contains("live-runner stopped"), "{}", status.1);
}

/// A URL of the harness's database.
async fn pg_url(pg: &common::Pg) -> String {
    pg.url()
}

/// `deploy` with the key in its environment: a key that is not the account's must be an API
/// wallet the account approved and whose approval has not expired (`extraAgents`), else the
/// deployment is refused naming both addresses and nothing is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_refuses_an_agent_key_the_account_has_not_approved() {
    const AGENT_KEY: &str = "0x1123456789012345678901234567890123456789012345678901234567890123";
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let account = common::hl_exchange::account(10_000, &[], 0);
    common::hl_exchange::mount(&hl, account.clone()).await;
    let url = pg_url(&pg).await;
    let skill = common::fixture("btc-sma-cross.yaml");
    let skill = skill.to_str().expect("path").to_owned();
    let master = common::hl_exchange::test_account().to_string();
    let agent = hyperliquid::Signer::from_hex(AGENT_KEY)
        .unwrap()
        .address()
        .to_string();
    let deploy = || {
        let mut c = bin();
        c.args(["deploy", "--db", &url, "--skill", &skill]);
        c.args(["--user", "00000000-0000-0000-0000-0000000a11ce"]);
        c.args(["--broker", "hyperliquid", "--hl-account", &master]);
        c.args(["--hl-network", "testnet", "--hl-key-env", "HL_AGENT_KEY"]);
        c.args(["--hl-url", &hl.uri()]);
        c.env("HL_AGENT_KEY", AGENT_KEY);
        c
    };
    let approve = |valid_until_ms: i64| {
        account.lock().unwrap().agents = vec![serde_json::json!({
            "name": "runner", "address": agent, "validUntil": valid_until_ms
        })];
    };

    // Not approved at all.
    let out = output(deploy()).await;
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&master) && stderr.contains(&agent) && stderr.contains("approved"),
        "{stderr}"
    );
    // Approved until 2020-01-01: expired.
    approve(1_577_836_800_000);
    let out = output(deploy()).await;
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&master) && stderr.contains(&agent) && stderr.contains("expired"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(&AGENT_KEY[2..]),
        "the key is never printed"
    );
    assert_eq!(pg.count("SELECT count(*) FROM deployments").await, 0);

    // Approved until 2100-01-01: deployed, and said so.
    approve(4_102_444_800_000);
    let out = output(deploy()).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(&format!("API wallet {agent}")) && stdout.contains(&master),
        "{stdout}"
    );
    assert_eq!(pg.count("SELECT count(*) FROM deployments").await, 1);
    assert_eq!(account.lock().unwrap().agent_queries.len(), 3);
}

/// `deploy --broker paper --meta-url URL` / `--meta FILE` (#16 item 10): the paper account is
/// margined as the exchange margins the skill's symbols (Hyperliquid `meta`: BTC at 50x, so a
/// maintenance margin of 0.5 / 50 = 1 %), stored with the deployment; a `meta` that cannot be
/// read, or one given to a Hyperliquid deployment, stores nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_margins_a_paper_account_as_the_exchange_does() {
    use db::RegistryStore;
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    common::hl_exchange::mount(&hl, common::hl_exchange::account(10_000, &[], 0)).await;
    let url = pg_url(&pg).await;
    let skill = common::fixture("btc-sma-cross.yaml");
    let skill = skill.to_str().expect("path").to_owned();
    let meta = common::repo("crates/hyperliquid/tests/fixtures/meta.json");
    let meta = meta.to_str().expect("path").to_owned();
    let deploy = |extra: &[&str]| {
        let mut c = bin();
        c.args(["deploy", "--db", &url, "--skill", &skill]);
        c.args(["--user", "00000000-0000-0000-0000-0000000a11ce"]);
        c.args(extra);
        c
    };
    let hl_uri = hl.uri();
    let expected =
        std::collections::BTreeMap::from([("BTC".to_owned(), rust_decimal::Decimal::from(50))]);
    for extra in [["--meta-url", hl_uri.as_str()], ["--meta", meta.as_str()]] {
        let out = output(deploy(&extra)).await;
        assert!(out.status.success(), "{extra:?}: {}", text(&out.stderr));
        let id: uuid::Uuid = text(&out.stdout)
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("deployment id");
        let d = pg.store.get_deployment(id).await.expect("stored");
        let paper: execution_engine::PaperBrokerConfig =
            serde_json::from_value(d.config["paper"].clone()).expect("paper config");
        assert_eq!(paper.exchange_max_leverage, expected, "{extra:?}");
        assert_eq!(
            paper.maintenance_margin_rate_for("BTC"),
            rust_decimal::Decimal::new(1, 2)
        );
    }

    // Unreadable: a server that does not speak Hyperliquid, a file that is not a `meta`.
    let dead = wiremock::MockServer::start().await;
    let out = output(deploy(&["--meta-url", &dead.uri()])).await;
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--meta-url"),
        "{}",
        text(&out.stderr)
    );
    let out = output(deploy(&["--meta", &skill])).await;
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("--meta") && stderr.contains("btc-sma-cross.yaml"),
        "{stderr}"
    );
    // A Hyperliquid account is margined by the exchange itself.
    let account = common::hl_exchange::test_account().to_string();
    let out = output(deploy(&[
        "--broker",
        "hyperliquid",
        "--hl-account",
        &account,
        "--hl-network",
        "testnet",
        "--hl-key-env",
        "HL_CLI_TEST_KEY",
        "--hl-url",
        &hl_uri,
        "--meta",
        &meta,
    ]))
    .await;
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("margined by the exchange"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(pg.count("SELECT count(*) FROM deployments").await, 2);
}

/// The `deployments` table's realized PnL, one row per amount: money at cents with separators.
#[test]
fn the_deployments_table_prints_realized_pnl_as_money() {
    use live_runner::admin::{DeploymentRow, render_table};
    use rust_decimal::Decimal;

    for (realized, want) in [
        (Decimal::new(-123_450, 2), "-$1,234.50"),
        (Decimal::new(19_058, 2), "$190.58"),
        (Decimal::new(-4, 3), "$0.00"),
        (Decimal::new(125_000_004, 4), "$12,500.00"),
    ] {
        let row = DeploymentRow {
            id: uuid::Uuid::nil(),
            owner: uuid::Uuid::nil(),
            skill: "btc-breakout v1".into(),
            status: "active",
            broker: "paper",
            last_tick: None,
            open_positions: 0,
            realized_pnl_usd: realized,
            account: None,
        };
        let table = render_table(&[row]);
        let line = table.lines().nth(1).unwrap();
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cells[cells.len() - 2], want, "{line}");
        assert!(table.starts_with("ID "), "{table}");
    }
}
