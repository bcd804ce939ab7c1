//! The binary's chat commands end to end: `token` mints a token the server accepts and prints
//! the login form's address (never a token in a URL), refusing a lifetime above the maximum; `serve` refuses to start without the secret or on SQLite, and serves the API
//! on PostgreSQL; `chat` talks to the coach as a user with lines piped into stdin.

use std::io::Write;
use std::process::{Command, Stdio};

use db::test_support::seed;
use live_runner::serve::Auth;
use live_runner::serve::auth::login_url;

use crate::common::serve::SECRET;
use crate::common::{hyperliquid_mock, postgres};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_live-runner"));
    c.env("RUST_LOG", "warn").env_remove("AGENT_JWT_SECRET");
    c
}

async fn run(mut cmd: Command, stdin: Option<&str>) -> std::process::Output {
    let input = stdin.map(str::to_owned);
    tokio::task::spawn_blocking(move || {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn live-runner");
        let mut pipe = child.stdin.take().expect("stdin");
        if let Some(text) = input {
            pipe.write_all(text.as_bytes()).expect("write stdin");
        }
        drop(pipe);
        child.wait_with_output().expect("wait")
    })
    .await
    .expect("join")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `live-runner serve` as a process of its own on a free local port, with the tests' secret and
/// `RUST_LOG=warn`: `serve --listen ADDR --db DB --model builtin/scripted --script SCRIPT` then
/// `args`.
pub(crate) struct ServeProcess {
    child: std::process::Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl ServeProcess {
    pub(crate) fn spawn(db: &str, script: &std::path::Path, args: &[&str]) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("a free port")
            .local_addr()
            .expect("addr")
            .port();
        let listen = format!("127.0.0.1:{port}");
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_live-runner"))
            .env("RUST_LOG", "warn")
            .env("AGENT_JWT_SECRET", SECRET)
            .args(["serve", "--listen", &listen, "--db", db])
            .args(["--model", "builtin/scripted", "--script"])
            .arg(script)
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn serve");
        Self {
            child,
            base: format!("http://{listen}"),
        }
    }

    /// Whether `/healthz` answered within 10 seconds.
    pub(crate) async fn up(&self, http: &reqwest::Client) -> bool {
        for _ in 0..100 {
            if http
                .get(format!("{}/healthz", self.base))
                .send()
                .await
                .is_ok()
            {
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        false
    }

    /// Stops the server; what it wrote to stderr.
    pub(crate) fn stop(mut self) -> String {
        let _ = self.child.kill();
        let output = self.child.wait_with_output().expect("wait serve");
        String::from_utf8_lossy(&output.stderr).into_owned()
    }
}

const SCRIPT: &str = r#"[
  {"toolCalls": [{"name": "remember", "arguments": {"fact": "You only trade BTC and ETH.", "topic": "symbols", "confidence": "asserted"}}]},
  {"text": "Got it: BTC and ETH only."},
  {"text": "Doing fine, thanks."}
]"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_mints_a_verifiable_token_and_serve_refuses_a_missing_secret_or_sqlite() {
    let user = uuid::Uuid::new_v4();
    let out = run(
        {
            let mut c = bin();
            c.env("AGENT_JWT_SECRET", SECRET).args([
                "token",
                "--user",
                &user.to_string(),
                "--ttl",
                "2h",
                "--base-url",
                "http://127.0.0.1:9999/",
            ]);
            c
        },
        None,
    )
    .await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    let caller = Auth::new(SECRET)
        .unwrap()
        .verify(lines[0])
        .expect("a valid token");
    assert_eq!(caller.user_id, user);
    assert_eq!(lines[1], login_url("http://127.0.0.1:9999/"));
    assert_eq!(lines[1], "http://127.0.0.1:9999/login");
    assert!(
        text(&out.stderr).contains("paste the token"),
        "{}",
        text(&out.stderr)
    );

    // Above the maximum lifetime (30 days, or --max-token-lifetime): refused, exit 2.
    for args in [
        vec!["--ttl", "31d"],
        vec!["--ttl", "2h", "--max-token-lifetime", "1h"],
    ] {
        let out = run(
            {
                let mut c = bin();
                c.env("AGENT_JWT_SECRET", SECRET)
                    .args(["token", "--user", &user.to_string()])
                    .args(&args);
                c
            },
            None,
        )
        .await;
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "no token printed");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("--ttl") && stderr.contains("above the maximum"),
            "{stderr}"
        );
    }

    // No secret: token and serve both refuse, naming the variable.
    let out = run(
        {
            let mut c = bin();
            c.args(["token", "--user", &user.to_string()]);
            c
        },
        None,
    )
    .await;
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("AGENT_JWT_SECRET is not set"),
        "{}",
        text(&out.stderr)
    );
    let out = run(
        {
            let mut c = bin();
            c.args([
                "serve",
                "--db",
                "postgres://postgres@127.0.0.1:5432/postgres",
                "--model",
                "anthropic/claude-sonnet-4.5",
            ]);
            c
        },
        None,
    )
    .await;
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("AGENT_JWT_SECRET is not set"),
        "{}",
        text(&out.stderr)
    );

    // SQLite has no row-level security: serve refuses it.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(&script, SCRIPT).unwrap();
    let out = run(
        {
            let mut c = bin();
            c.env("AGENT_JWT_SECRET", SECRET).args([
                "serve",
                "--db",
                &format!("sqlite://{}?mode=rwc", dir.path().join("x.db").display()),
                "--model",
                "builtin/scripted",
                "--script",
                script.to_str().unwrap(),
            ]);
            c
        },
        None,
    )
    .await;
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("needs PostgreSQL"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_on_postgres_with_a_minted_token() {
    let pg = postgres().await;
    let fx = seed(&pg.store).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(&script, SCRIPT).unwrap();
    let server = ServeProcess::spawn(
        &pg.url(),
        &script,
        &["--secure-cookies", "--max-token-lifetime", "1h"],
    );
    let token = Auth::new(SECRET)
        .unwrap()
        .mint(fx.user.id, chrono::Duration::minutes(5), chrono::Utc::now())
        .unwrap();
    let http = reqwest::Client::new();
    let base = server.base.clone();
    let up = server.up(&http).await;
    // A token that lives 2 hours, above the server's --max-token-lifetime of 1 hour.
    let long = Auth::new(SECRET)
        .unwrap()
        .mint(fx.user.id, chrono::Duration::hours(2), chrono::Utc::now())
        .unwrap();
    let no_redirect = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let (me, too_long, login, doc) = if up {
        (
            http.get(format!("{base}/api/me"))
                .bearer_auth(&token)
                .send()
                .await
                .ok(),
            http.get(format!("{base}/api/me"))
                .bearer_auth(&long)
                .send()
                .await
                .ok(),
            no_redirect
                .post(format!("{base}/login"))
                .form(&[("token", token.as_str())])
                .send()
                .await
                .ok(),
            // Public: no token.
            http.get(format!("{base}/api/openapi.json"))
                .send()
                .await
                .ok(),
        )
    } else {
        (None, None, None, None)
    };
    let stderr = server.stop();
    assert!(up, "serve never answered /healthz: {stderr}");
    let me: serde_json::Value = me.expect("GET /api/me").json().await.unwrap();
    assert_eq!(me["userId"], fx.user.id.to_string());
    let doc = doc.expect("GET /api/openapi.json");
    assert_eq!(doc.status(), reqwest::StatusCode::OK);
    let doc: serde_json::Value = doc.json().await.unwrap();
    assert_eq!(&doc, live_runner::serve::openapi::document());
    let too_long = too_long.expect("GET /api/me with a long-lived token");
    assert_eq!(too_long.status(), reqwest::StatusCode::UNAUTHORIZED);
    assert!(
        too_long.text().await.unwrap().contains("lives too long"),
        "--max-token-lifetime applies"
    );
    // --secure-cookies: the session cookie is Secure.
    let login = login.expect("POST /login");
    assert_eq!(login.status(), reqwest::StatusCode::SEE_OTHER);
    let cookie = login
        .headers()
        .get(reqwest::header::SET_COOKIE)
        .expect("a cookie")
        .to_str()
        .unwrap();
    assert!(
        cookie.contains("; Secure")
            && cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_talks_to_the_coach_as_the_user_over_a_pipe() {
    let pg = postgres().await;
    let fx = seed(&pg.store).await.unwrap();
    // The deployment's BTC and ETH bars come from a local mock, never the network.
    let hl = hyperliquid_mock().await;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    std::fs::write(&script, SCRIPT).unwrap();
    let out = run(
        {
            let mut c = bin();
            c.args([
                "chat",
                "--user",
                &fx.user.id.to_string(),
                "--db",
                &pg.url(),
                "--model",
                "builtin/scripted",
                "--script",
                script.to_str().unwrap(),
                "--deployment",
                &fx.deployment.id.to_string(),
                "--hl-url",
                &hl.uri(),
            ]);
            c
        },
        Some("I only trade BTC and ETH.\n\n   \nhow are you?\n/quit\nthis line is never read\n"),
    )
    .await;
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("· remember {"), "{stdout}");
    assert!(stdout.contains("→ ok"), "{stdout}");
    assert!(
        stdout.contains("coach: Got it: BTC and ETH only."),
        "{stdout}"
    );
    assert!(stdout.contains("coach: Doing fine, thanks."), "{stdout}");
    assert!(stderr.contains("2 turns (0 failed)"), "{stderr}");
    // Each turn read the recent bars of the deployment's symbols from --hl-url.
    let coins: std::collections::BTreeSet<String> = hl
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter_map(|r| serde_json::from_slice::<serde_json::Value>(&r.body).ok())
        .filter(|b| b["type"] == "candleSnapshot")
        .map(|b| b["req"]["coin"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(coins, ["BTC".to_owned(), "ETH".to_owned()].into());

    // Stored as the user: the fact, its audit entry by the authenticated role, two turns.
    let facts = pg
        .count(&format!(
            "SELECT count(*) FROM user_facts WHERE user_id = '{}' AND fact = 'You only trade BTC and ETH.'",
            fx.user.id
        ))
        .await;
    assert_eq!(facts, 1);
    let audited = pg
        .count(&format!(
            "SELECT count(*) FROM user_fact_changes WHERE user_id = '{}' AND db_role = 'authenticated' AND jwt_sub = user_id",
            fx.user.id
        ))
        .await;
    assert_eq!(audited, 1);
    let turns = pg
        .count(&format!(
            "SELECT count(*) FROM chat_turns WHERE user_id = '{}'",
            fx.user.id
        ))
        .await;
    assert_eq!(turns, 2);

    // Another user's deployment is not found for this user (row-level security).
    let other = seed(&pg.store).await.unwrap();
    let out = run(
        {
            let mut c = bin();
            c.args([
                "chat",
                "--user",
                &fx.user.id.to_string(),
                "--db",
                &pg.url(),
                "--model",
                "builtin/scripted",
                "--script",
                script.to_str().unwrap(),
                "--deployment",
                &other.deployment.id.to_string(),
            ]);
            c
        },
        Some("hello\n"),
    )
    .await;
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("not found"),
        "{}",
        text(&out.stderr)
    );
}
