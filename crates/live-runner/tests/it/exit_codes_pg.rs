//! `live-runner`'s exit codes, run as a process: bad input of every kind exits 2 naming the
//! problem on stderr (as `sim-worker` does), a command that works exits 0, and a failure that is
//! not the input's (a database that cannot be reached) exits 1.

use std::process::Command;

use crate::common::postgres;

fn live(args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_live-runner"));
    cmd.args(args)
        .env_remove("DATABASE_URL")
        .env_remove("AGENT_JWT_SECRET")
        .env_remove("CHAT_MODEL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run live-runner");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A command line, its environment, and what its stderr must name.
type Case<'a> = (Vec<&'a str>, &'a [(&'a str, &'a str)], &'a str);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_of_every_kind_exits_2_and_names_the_problem() {
    let pg = postgres().await;
    let url = pg.url();
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let bad_skill = file("bad.yaml", "name: [unclosed\n");
    let bad_meta = file("meta.json", "{\"universe\": 3");
    let bad_feeds = file("feeds.txt", "ftp://example.com/rss\n");
    let bad_script = file("script.json", "not json");
    let bad_calendar = file("calendar.json", "[{\"kind\": \"nope\"}]");
    let good_script = file("good.json", "[]");
    let skill = crate::common::fixture("btc-sma-cross.yaml");
    let skill = skill.to_str().unwrap();
    let owner = "00000000-0000-0000-0000-0000000a11ce";
    let unknown = "00000000-0000-0000-0000-00000000dead";
    let secret = [("AGENT_JWT_SECRET", "0123456789abcdef0123456789abcdef")];

    let cases: Vec<Case<'_>> = vec![
        (vec!["run", "--frobnicate"], &[], "--frobnicate"),
        (vec!["mcp-serve", "--db", &url], &[], "--deployment"),
        (
            vec![
                "memory-stats",
                "--db",
                &url,
                "--symbol",
                "BTC",
                "--days",
                "7",
                "--at",
                "yesterday",
            ],
            &[],
            "--at",
        ),
        (
            vec![
                "deploy", "--db", &url, "--skill", &bad_skill, "--user", owner,
            ],
            &[],
            "skill file",
        ),
        (
            vec![
                "deploy",
                "--db",
                &url,
                "--skill",
                "/nonexistent/skill.yaml",
                "--user",
                owner,
            ],
            &[],
            "/nonexistent/skill.yaml",
        ),
        (
            vec![
                "deploy",
                "--db",
                &url,
                "--skill",
                skill,
                "--user",
                owner,
                "--hl-network",
                "mainnet",
            ],
            &[],
            "--hl-network apply to --broker hyperliquid only",
        ),
        (
            vec![
                "deploy", "--db", &url, "--skill", skill, "--user", owner, "--meta", &bad_meta,
            ],
            &[],
            "--meta",
        ),
        (
            vec![
                "deploy",
                "--db",
                &url,
                "--skill",
                skill,
                "--user",
                owner,
                "--broker",
                "hyperliquid",
            ],
            &[],
            "--hl-account is required",
        ),
        (
            vec!["run", "--db", &url, "--concurrency", "0"],
            &[],
            "--concurrency must be at least 1",
        ),
        (
            vec![
                "run",
                "--db",
                &url,
                "--hl-ws-url",
                "https://api.hyperliquid.xyz/ws",
            ],
            &[],
            "--hl-ws-url must be a ws:// or wss:// URL",
        ),
        (
            vec![
                "run",
                "--db",
                &url,
                "--market-feed",
                "ws",
                "--hl-url",
                "ftp://x",
            ],
            &[],
            "--hl-url",
        ),
        (
            vec!["run", "--db", &url, "--news-feeds-file", &bad_feeds],
            &[],
            "is not an http:// or https:// feed URL",
        ),
        (
            vec!["token", "--user", owner, "--ttl", "forever"],
            &secret,
            "--ttl",
        ),
        (vec!["token", "--user", owner], &[], "signing the token"),
        (
            vec![
                "chat",
                "--user",
                owner,
                "--db",
                &url,
                "--model",
                "builtin/scripted",
                "--script",
                &bad_script,
            ],
            &[],
            "the chat model",
        ),
        (
            vec![
                "chat",
                "--user",
                owner,
                "--db",
                &url,
                "--model",
                "builtin/scripted",
                "--script",
                &good_script,
                "--deployment",
                unknown,
            ],
            &[],
            unknown,
        ),
        (
            vec!["mcp-serve", "--db", &url, "--deployment", unknown],
            &[],
            unknown,
        ),
        (
            vec!["promote-note", "--db", &url, "--note", unknown],
            &[],
            "--note",
        ),
        (
            vec![
                "annotate",
                "--db",
                &url,
                "--outcome",
                unknown,
                "--text",
                "x",
            ],
            &[],
            "no trade outcome has this id",
        ),
        (
            vec!["events", "import", "--db", &url, &bad_calendar],
            &[],
            "calendar",
        ),
        (
            vec!["migrate", "--db", "mysql://localhost/agents"],
            &[],
            "mysql",
        ),
    ];
    for (args, env, names) in cases {
        let (code, stderr) = tokio::task::spawn_blocking({
            let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
            let env: Vec<(String, String)> = env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            move || {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let env: Vec<(&str, &str)> =
                    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                live(&args, &env)
            }
        })
        .await
        .unwrap();
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(names), "{args:?}: {stderr}");
    }
    // Nothing was stored by any of them.
    assert_eq!(pg.count("SELECT count(*) FROM deployments").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_good_command_exits_0_and_an_unreachable_database_exits_1() {
    let pg = postgres().await;
    let url = pg.url();
    let (code, stderr) =
        tokio::task::spawn_blocking(move || live(&["deployments", "--db", &url], &[]))
            .await
            .unwrap();
    assert_eq!(code, 0, "{stderr}");
    for args in [
        [
            "deployments",
            "--db",
            "postgres://postgres@127.0.0.1:1/agents",
        ],
        ["migrate", "--db", "postgres://postgres@127.0.0.1:1/agents"],
    ] {
        let (code, stderr) = tokio::task::spawn_blocking(move || live(&args, &[]))
            .await
            .unwrap();
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_creates_a_database_the_server_does_not_have_yet() {
    use sqlx::migrate::MigrateDatabase;
    // A fresh name, emptied again: dropped here, re-created by `migrate`, dropped with `test_db`.
    let test_db = db::test_support::pg::TestDatabase::create(crate::common::DB_PREFIX, 1).await;
    let url = test_db.url();
    test_db.pool.close().await;
    sqlx::Postgres::drop_database(&url).await.expect("drop");
    assert!(!sqlx::Postgres::database_exists(&url).await.unwrap());
    let migrate = |url: String| {
        tokio::task::spawn_blocking(move || {
            let out = Command::new(env!("CARGO_BIN_EXE_live-runner"))
                .args(["migrate", "--db", &url])
                .env_remove("DATABASE_URL")
                .output()
                .expect("run live-runner");
            (
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        })
    };
    let (code, stdout, stderr) = migrate(url.clone()).await.unwrap();
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("created the database of "), "{stdout}");
    assert!(stdout.contains("postgres schema up to date"), "{stdout}");
    assert!(sqlx::Postgres::database_exists(&url).await.unwrap());
    // Once it exists, `migrate` only checks the schema.
    let (code, stdout, stderr) = migrate(url).await.unwrap();
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("postgres schema up to date"), "{stdout}");
}
