//! `sim-worker ticks` over a run's store: every tick the run recorded, a window's ticks, the
//! prompts the report and `preview` show for a tick, a CSV that reads back, a file, and bad
//! input refused with exit 2 and nothing on stdout.

use serde_json::Value;

use crate::common::{backtest_with, repo, sim};

/// The first tick of the README backtest (the close of the first bar).
const FIRST: &str = "2017-04-19T10:00:00Z";

fn lines(jsonl: &str) -> Vec<Value> {
    jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The text of `<h3>{title}</h3><pre>…</pre>` in the report, unescaped.
fn report_section(html: &str, title: &str) -> String {
    let open = format!("<h3>{title}</h3><pre>");
    let start = html.find(&open).expect("the section") + open.len();
    let end = start + html[start..].find("</pre>").expect("its end");
    html[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// The system prompt and user message `sim-worker preview` prints for the tick at `at`.
fn preview(at: &str) -> (String, String) {
    let skill = repo("examples/skills/eurusd-sma-cross.yaml");
    let bars = format!("EURUSD={}", repo("examples/data/EURUSD.csv"));
    let (code, out, err) = sim(&["preview", "--skill", &skill, "--bars", &bars, "--at", at]);
    assert_eq!(code, 0, "{err}");
    let after_line = |s: &str, head: &str| {
        let at = s.find(head).expect(head);
        at + s[at..].find('\n').unwrap() + 1
    };
    let system_at = after_line(&out, "==== SYSTEM PROMPT at ");
    let system_end = out.find("\n\n==== USER MESSAGE").unwrap();
    let user_at = after_line(&out, "==== USER MESSAGE");
    let user_end = out.find("\n==== TOKENS ====").unwrap();
    (
        out[system_at..system_end].to_owned(),
        out[user_at..user_end].to_owned(),
    )
}

#[tokio::test]
async fn ticks_export_what_the_run_stored_and_what_the_model_saw() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let (url, deployment) = backtest_with(&run, "2017-04-25", &["--report-tick", FIRST]);
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();

    // Every tick of the run, oldest first.
    let (code, out, err) = sim(&["ticks", "--db", &url]);
    assert_eq!(code, 0, "{err}");
    let all = lines(&out);
    assert_eq!(all.len() as u64, summary["ticks"].as_u64().unwrap());
    let lite = sqlx::SqlitePool::connect(&url).await.unwrap();
    let stored: i64 = sqlx::query_scalar("SELECT count(*) FROM decision_snapshots")
        .fetch_one(&lite)
        .await
        .unwrap();
    assert_eq!(all.len() as i64, stored);
    assert_eq!(all[0]["tick_at"], FIRST);
    assert_eq!(all[0]["tick_at"], summary["first_tick"]);
    assert_eq!(all.last().unwrap()["tick_at"], summary["last_tick"]);
    assert!(
        all.iter()
            .all(|t| t["deployment_id"] == deployment.as_str())
    );
    assert!(
        all.windows(2)
            .all(|w| w[0]["tick_at"].as_str() < w[1]["tick_at"].as_str())
    );
    // The outcomes are the summary's verdict counts.
    for (kind, n) in summary["verdicts"].as_object().unwrap() {
        let counted = all.iter().filter(|t| t["outcome"] == kind.as_str()).count();
        assert_eq!(counted as u64, n.as_u64().unwrap(), "{kind}");
    }
    assert!(all.iter().all(|t| t.get("system_prompt").is_none()));

    // A window: its ticks, both ends included, the same records.
    let (from, to) = ("2017-04-20 00:00", "2017-04-21T12:00:00Z");
    let (code, out, err) = sim(&["ticks", "--db", &url, "--from", from, "--to", to]);
    assert_eq!(code, 0, "{err}");
    let window = lines(&out);
    let want: Vec<&Value> = all
        .iter()
        .filter(|t| {
            let at = t["tick_at"].as_str().unwrap();
            ("2017-04-20T00:00:00Z"..="2017-04-21T12:00:00Z").contains(&at)
        })
        .collect();
    assert_eq!(
        window.len(),
        37,
        "hourly ticks from 00:00 to 12:00 the next day"
    );
    assert_eq!(window.iter().collect::<Vec<_>>(), want);

    // The first tick's prompt: what the report and `preview` show for it.
    let (code, out, err) = sim(&[
        "ticks",
        "--db",
        &url,
        "--deployment",
        &deployment,
        "--prompts",
        "--limit",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    let first = lines(&out);
    assert_eq!(first.len(), 1);
    let system = first[0]["system_prompt"].as_str().unwrap();
    let user = first[0]["user_message"].as_str().unwrap();
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert_eq!(system, report_section(&html, "System prompt"));
    assert_eq!(user, report_section(&html, "User message"));
    let (preview_system, preview_user) = preview(FIRST);
    assert_eq!(system, preview_system);
    assert_eq!(user, preview_user);
    let steps = first[0]["steps"].as_array().unwrap();
    assert_eq!(steps[0]["tool_calls"][0]["name"], "propose_order");
    assert_eq!(
        serde_json::from_str::<Value>(steps[0]["tool_calls"][0]["arguments"].as_str().unwrap())
            .unwrap()["action"],
        first[0]["proposal"]["action"]
    );

    // The CSV reads back: a row a tick, the same ids, outcomes and costs.
    let (code, out, err) = sim(&["ticks", "--db", &url, "--format", "csv"]);
    assert_eq!(code, 0, "{err}");
    let mut reader = csv::Reader::from_reader(out.as_bytes());
    let header = reader.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), all.len());
    for (row, t) in rows.iter().zip(&all) {
        assert_eq!(&row[col("tick_id")], t["tick_id"].as_str().unwrap());
        assert_eq!(&row[col("tick_at")], t["tick_at"].as_str().unwrap());
        assert_eq!(&row[col("outcome")], t["outcome"].as_str().unwrap());
        assert_eq!(&row[col("cost_usd")], t["cost_usd"].as_str().unwrap());
        assert_eq!(
            &row[col("verdict_detail")],
            t["verdict"]["detail"].as_str().unwrap()
        );
    }
    assert!(
        rows.iter()
            .any(|r| r[col("verdict_detail")].contains(',') && r[col("outcome")] == *"executed"),
        "a detail with commas, quoted"
    );

    // To a file: the same bytes as on stdout, and a line saying so.
    let file = dir.path().join("ticks.csv");
    let (code, said, err) = sim(&[
        "ticks",
        "--db",
        &url,
        "--format",
        "csv",
        "--out",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), out);
    assert_eq!(
        said,
        format!(
            "{} ticks of deployment {deployment} written to {}\n",
            all.len(),
            file.display()
        )
    );

    // Bad input: exit 2, the flag named, nothing on stdout.
    for (args, names) in [
        (vec!["--from", "2017-04-22", "--to", "2017-04-21"], "--from"),
        (vec!["--format", "xml"], "--format"),
        (vec!["--prompts", "--format", "csv"], "--prompts"),
        (vec!["--limit", "0"], "--limit"),
        (vec!["--to", "soon"], "--to"),
        (
            vec!["--deployment", "00000000-0000-0000-0000-000000000001"],
            "no such deployment",
        ),
    ] {
        let mut full = vec!["ticks", "--db", url.as_str()];
        full.extend(args);
        let (code, out, err) = sim(&full);
        assert_eq!(code, 2, "{full:?}: {err}");
        assert!(out.is_empty(), "{full:?}");
        assert!(err.contains(names), "{full:?}: {err}");
    }
}
