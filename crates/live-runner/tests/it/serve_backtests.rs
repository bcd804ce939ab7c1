//! Backtests as jobs over real HTTP on PostgreSQL: a user submits a backtest (skill text and
//! bars, then the same bars by hash), lists and reads it — another user sees none of it — and
//! follows it as a worker (the store's `JobQueue`, as `sim-worker work` calls it) runs it: the
//! progress (ticks done / total, cost so far) in the API and as a progress bar on `/backtests`,
//! then the result and the report, served with its style sheet linked. A submit past the
//! user's limits is a 429; a bad skill, bars, symbol or model a 422 naming the field.

use db::{JobLimits, JobProgress, JobQueue, JobResult};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::repo;
use crate::common::serve::{Server, no_model, page, server, server_with, world};

/// The README skill's text.
fn skill() -> String {
    std::fs::read_to_string(repo("examples/skills/eurusd-sma-cross.yaml")).unwrap()
}

/// The first `n` hourly bars of the EURUSD example, as the file's text.
fn bars(n: usize) -> String {
    let text = std::fs::read_to_string(repo("examples/data/EURUSD.csv")).unwrap();
    text.lines().take(n + 1).map(|l| format!("{l}\n")).collect()
}

fn body(n: usize) -> Value {
    json!({
        "skill": skill(),
        "bars": {"EURUSD": {"format": "csv", "data": bars(n)}},
        "label": "first 300 hours",
        "to": "2017-05-10T00:00:00Z",
    })
}

async fn count(s: &Server, sql: &str) -> i64 {
    s.pg.count(sql).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backtest_is_submitted_followed_as_it_runs_and_its_report_served() {
    let s = server(no_model()).await;
    let w = world(&s).await;
    let (a, b) = (&w.a, &w.b);
    let (code, job) = s.post("/api/backtests", &a.token, &body(300)).await;
    assert_eq!(code, StatusCode::CREATED, "{job}");
    let id = job["id"].as_str().unwrap().to_owned();
    assert_eq!(job["status"], "queued");
    assert_eq!(job["label"], "first 300 hours");
    assert_eq!(job["skill"], "EURUSD 1h moving-average cross");
    assert_eq!(job["symbols"], json!(["EURUSD"]));
    assert_eq!(
        job["progress"],
        json!({"ticksDone": 0, "ticksTotal": null, "costUsd": "0"})
    );
    assert_eq!(job["result"], Value::Null);

    // The same bars again, by their hash: nothing new stored.
    let sha = db::NewBars::of(db::BarsFormat::Csv, bars(300).into_bytes()).sha256;
    let again = json!({
        "skill": skill(),
        "bars": {"EURUSD": {"format": "csv", "sha256": sha}},
    });
    let (code, second) = s.post("/api/backtests", &a.token, &again).await;
    assert_eq!(code, StatusCode::CREATED, "{second}");
    assert_eq!(count(&s, "SELECT count(*) FROM backtest_bars").await, 1);
    // B cannot use A's bars, and sees none of A's jobs.
    let (code, refused) = s.post("/api/backtests", &b.token, &again).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    let (code, list) = s.get("/api/backtests", &a.token).await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(list.as_array().unwrap().len(), 2);
    let (_, theirs) = s.get("/api/backtests", &b.token).await;
    assert_eq!(theirs, json!([]));
    let path = format!("/api/backtests/{id}");
    assert_eq!(s.get(&path, &b.token).await.0, StatusCode::NOT_FOUND);

    // A worker takes it and reports its progress.
    let now = chrono::Utc::now();
    let lease = chrono::Duration::seconds(30);
    let claimed = s.store.claim_jobs("worker-1", now, lease, 1).await.unwrap();
    assert_eq!(claimed[0].id.to_string(), id, "oldest first");
    let deployment = uuid::Uuid::new_v4();
    assert!(
        s.store
            .begin_job_run(claimed[0].id, "worker-1", deployment, 300)
            .await
            .unwrap()
    );
    let progress = JobProgress {
        ticks_done: 120,
        ticks_total: Some(300),
        cost_usd: rust_decimal::Decimal::new(123, 4),
    };
    assert!(
        s.store
            .heartbeat_job(claimed[0].id, "worker-1", now, now + lease, progress)
            .await
            .unwrap()
    );
    let (_, running) = s.get(&path, &a.token).await;
    assert_eq!(running["status"], "running");
    assert_eq!(
        running["progress"],
        json!({"ticksDone": 120, "ticksTotal": 300, "costUsd": "0.0123"})
    );
    assert_eq!(running["attempts"], 1);
    let (code, html) = page(&s, "/backtests", &a.token).await;
    assert_eq!(code, StatusCode::OK);
    assert!(html.contains("120 of 300 ticks"), "{html}");
    assert!(
        html.contains("<progress value=\"120\" max=\"300\">40%</progress>"),
        "{html}"
    );
    assert!(html.contains("$0.0123"), "{html}");
    assert!(
        html.contains("http-equiv=\"refresh\""),
        "a running job reloads the page"
    );
    assert!(html.contains("first 300 hours"));
    let (_, html_b) = page(&s, "/backtests", &b.token).await;
    assert!(html_b.contains("No backtest yet."));

    // Done, with its summary and report.
    let summary = json!({
        "ticks": 300, "trades": 12, "cost_usd": "0.0123",
        "pnl": {"net_usd": "-42.5", "fees_usd": "10.25"},
        "total_return_pct": "-0.38", "max_drawdown_pct": "1.2", "win_rate_pct": "25",
    });
    let report = "<!DOCTYPE html><html><head><title>r</title><style>body{color:#123}</style>\
                  </head><body><h1>Backtest · EURUSD SMA cross</h1></body></html>";
    let result = JobResult {
        summary,
        report_html: Some(report.to_owned()),
        progress: JobProgress {
            ticks_done: 300,
            ..progress
        },
    };
    assert!(
        s.store
            .finish_job(claimed[0].id, "worker-1", chrono::Utc::now(), &result)
            .await
            .unwrap()
    );
    let (_, done) = s.get(&path, &a.token).await;
    assert_eq!(done["status"], "done");
    assert_eq!(done["deploymentId"], deployment.to_string());
    assert_eq!(
        done["result"],
        json!({"ticks": 300, "trades": 12, "netPnlUsd": "-42.5", "feesUsd": "10.25",
               "totalReturnPct": "-0.38", "maxDrawdownPct": "1.2", "winRatePct": "25",
               "costUsd": "0.0123"})
    );
    let report_url = done["reportUrl"].as_str().unwrap().to_owned();
    assert_eq!(report_url, format!("/backtests/{id}/report"));

    let (code, served) = page(&s, &report_url, &a.token).await;
    assert_eq!(code, StatusCode::OK);
    assert!(!served.contains("<style>"), "{served}");
    assert!(
        served.contains(&format!(
            "<link rel=\"stylesheet\" href=\"/backtests/{id}/report.css\">"
        )),
        "{served}"
    );
    assert!(served.contains("<h1>Backtest · EURUSD SMA cross</h1>"));
    let css = crate::common::serve::http()
        .get(s.url(&format!("/backtests/{id}/report.css")))
        .header(reqwest::header::COOKIE, format!("token={}", a.token))
        .send()
        .await
        .unwrap();
    assert_eq!(css.status(), StatusCode::OK);
    assert_eq!(css.headers()["content-type"], "text/css; charset=utf-8");
    assert_eq!(css.text().await.unwrap(), "body{color:#123}");
    assert_eq!(
        page(&s, &report_url, &b.token).await.0,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        page(&s, "/backtests/not-an-id/report", &a.token).await.0,
        StatusCode::NOT_FOUND
    );

    let (_, html) = page(&s, "/backtests", &a.token).await;
    assert!(html.contains("-$42.50"), "{html}");
    assert!(html.contains(&format!("href=\"{report_url}\"")), "{html}");
    assert!(html.contains(&format!("href=\"/deployments/{deployment}\"")));
    // The second job is still queued: the page keeps reloading.
    assert!(html.contains("http-equiv=\"refresh\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submit_past_the_limits_is_a_429_and_bad_input_a_422_naming_the_field() {
    let s = server_with(no_model(), |state| {
        state.backtest_limits = JobLimits {
            max_open_jobs: 1,
            max_open_cost_usd: rust_decimal::Decimal::new(5, 0),
        };
    })
    .await;
    let w = world(&s).await;
    let t = &w.a.token;
    let (code, first) = s.post("/api/backtests", t, &body(100)).await;
    assert_eq!(code, StatusCode::CREATED, "{first}");
    let (code, refused) = s.post("/api/backtests", t, &body(100)).await;
    assert_eq!(code, StatusCode::TOO_MANY_REQUESTS, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("at most 1 may be queued or running at once"),
        "{refused}"
    );

    let with = |patch: Value| {
        let mut b = body(100);
        for (k, v) in patch.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };
    let cases = [
        (
            with(
                json!({"bars": {"EURUSD": {"format": "csv", "data": ",Open,High,Low,Close,Volume\n2017-04-19 09:00:00,x,1,1,1,1\n"}}}),
            ),
            "bars.EURUSD",
            "EURUSD.csv:2: Open: not a number",
        ),
        (
            with(json!({"bars": {"BTC": {"format": "csv", "data": bars(10)}}})),
            "bars.BTC",
            "BTC is not one of the skill's symbols",
        ),
        (with(json!({"bars": {}})), "bars", "no bars for EURUSD"),
        (
            with(json!({"model": "openai/gpt-4o-mini"})),
            "maxCostUsd",
            "openai/gpt-4o-mini calls a provider",
        ),
        (with(json!({"skill": "name: x\n"})), "skill", "skill:"),
        (
            with(json!({"bars": {"EURUSD": {"format": "xml", "data": bars(10)}}})),
            "bars.EURUSD.format",
            "csv or json",
        ),
        (
            with(json!({"feeBps": "5000"})),
            "feeBps",
            "outside 0..=1000",
        ),
    ];
    for (bad, field, says) in cases {
        let (code, e) = s.post("/api/backtests", &w.b.token, &bad).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{field}: {e}");
        assert_eq!(e["field"], field, "{e}");
        assert!(e["error"].as_str().unwrap().contains(says), "{field}: {e}");
    }
    assert_eq!(
        s.pg.count(&format!(
            "SELECT count(*) FROM backtest_jobs WHERE user_id = '{}'",
            w.b.user()
        ))
        .await,
        0
    );
    // The model's cost counts against the cap.
    let priced = with(json!({"model": "openai/gpt-4o-mini", "maxCostUsd": "6"}));
    let (code, e) = s.post("/api/backtests", &w.b.token, &priced).await;
    assert_eq!(code, StatusCode::TOO_MANY_REQUESTS, "{e}");
    assert!(
        e["error"].as_str().unwrap().contains("(the cost cap)"),
        "{e}"
    );
}
