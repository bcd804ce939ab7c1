//! `ticks_cmd`, the export both binaries' `ticks` commands run: every tick of the window once,
//! oldest first, across pages, cut at `--limit`; the CSV's rows; refusals before anything is
//! written; steps that are not the runtime's named with their tick.

use db::test_support::{Fixture, at, sample_snapshot, seed, tick_record};
use db::{DecisionSnapshot, Store, TickRecord, TickStore};
use serde_json::Value;
use tick::ticks_cmd::{self, TicksCommandError, TicksFormat, TicksRequest};
use tick::{ReadTicksError, TickEntry};
use types::{RuleCode, Verdict};

/// Tick `n` at minute `n`: steps the runtime can read (one step without tool calls), a
/// rejection every third tick, a user message with its tick number.
fn snapshot(fx: &Fixture, n: i64) -> DecisionSnapshot {
    let mut s = sample_snapshot(fx.deployment.id, at(n));
    s.context = format!("## Time\nminute {n}\n\n## Your turn\nDecide, \"quoted\", comma.");
    s.steps = db::JsonText::from_text(format!(
        r#"[{{"index":0,"text":"tick {n}","tool_calls":[],"usage":{{"input":5,"output":1,"cache_read":0,"cache_write":0}},"finish":"stop"}}]"#
    ))
    .unwrap();
    if n % 3 == 1 {
        s.verdict = Verdict::Rejected {
            rule: RuleCode::OrderTooSmall,
            detail: format!("size 1, minimum 10, \"tick {n}\""),
        };
    }
    s
}

async fn store_with(ticks: i64) -> (Store, Fixture) {
    let store = db::connect("sqlite::memory:").await.unwrap();
    let fx = seed(&store).await.unwrap();
    let batch: Vec<TickRecord> = (0..ticks).map(|n| tick_record(snapshot(&fx, n))).collect();
    store
        .record_ticks(&db::PlannedTicks::new(batch), &[])
        .await
        .unwrap();
    (store, fx)
}

fn request(format: TicksFormat, prompts: bool) -> TicksRequest {
    TicksRequest {
        deployment: None,
        from: None,
        to: None,
        format,
        prompts,
        limit: None,
    }
}

async fn export(store: &Store, request: &TicksRequest) -> Result<(u64, String), TicksCommandError> {
    let d = ticks_cmd::resolve_deployment(store, request).await?;
    let mut out = Vec::new();
    let n = ticks_cmd::write_ticks(store, d.id, request, &mut out).await?;
    Ok((n, String::from_utf8(out).unwrap()))
}

fn lines(jsonl: &str) -> Vec<Value> {
    jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn every_tick_of_the_window_is_written_once_oldest_first_across_pages() {
    // 230 ticks: three pages with prompts (100 a page).
    let (store, fx) = store_with(230).await;
    let (n, out) = export(&store, &request(TicksFormat::Jsonl, true))
        .await
        .unwrap();
    assert_eq!(n, 230);
    let all = lines(&out);
    assert_eq!(all.len(), 230);
    for (i, v) in all.iter().enumerate() {
        let want = snapshot(&fx, i as i64);
        assert_eq!(v["tick_at"], serde_json::to_value(want.tick_at).unwrap());
        assert_eq!(v["user_message"], want.context.as_str());
        assert_eq!(v["system_prompt"], want.system_prompt.as_str());
        assert_eq!(v["steps"][0]["text"], format!("tick {i}"));
        let outcome = if i % 3 == 1 { "rejected" } else { "executed" };
        assert_eq!(v["outcome"], outcome, "tick {i}");
    }
    assert_eq!(all[1]["rule"], "R6_ORDER_TOO_SMALL");
    assert_eq!(all[0]["rule"], Value::Null);
    assert_eq!(all[0]["cost_usd"], "0.0048", "decimals as strings");
    assert_eq!(all[0]["usage"]["input"], 1200);

    // A limit across a page boundary, inside a window: the first of the window.
    let window = TicksRequest {
        from: Some(at(20)),
        to: Some(at(200)),
        limit: Some(150),
        ..request(TicksFormat::Jsonl, true)
    };
    let (n, out) = export(&store, &window).await.unwrap();
    assert_eq!(n, 150);
    let got = lines(&out);
    assert_eq!(got.first().unwrap()["tick_at"], all[20]["tick_at"]);
    assert_eq!(got.last().unwrap()["tick_at"], all[169]["tick_at"]);
    // Without prompts: no prompt keys, the same ticks.
    let bare = TicksRequest {
        prompts: false,
        ..window.clone()
    };
    let (_, out) = export(&store, &bare).await.unwrap();
    let bare = lines(&out);
    assert_eq!(bare.len(), 150);
    assert!(bare[0].get("system_prompt").is_none() && bare[0].get("steps").is_none());
    let mut with = got[0].clone();
    for k in ["system_prompt", "user_message", "steps"] {
        with.as_object_mut().unwrap().remove(k);
    }
    assert_eq!(bare[0], with);

    // The CSV of the window reads back: a header, a row a tick, quoted fields intact.
    let csv_window = TicksRequest {
        format: TicksFormat::Csv,
        prompts: false,
        limit: None,
        ..window
    };
    let (n, out) = export(&store, &csv_window).await.unwrap();
    assert_eq!(n, 181, "minutes 20 to 200, both included");
    let mut reader = csv::Reader::from_reader(out.as_bytes());
    assert_eq!(
        reader.headers().unwrap().iter().collect::<Vec<_>>(),
        ticks_cmd::CSV_HEADER.to_vec()
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 181);
    let col = |name: &str| {
        ticks_cmd::CSV_HEADER
            .iter()
            .position(|h| *h == name)
            .unwrap()
    };
    let first = &rows[0];
    assert_eq!(&first[col("tick_at")], all[20]["tick_at"].as_str().unwrap());
    assert_eq!(&first[col("tick_id")], all[20]["tick_id"].as_str().unwrap());
    assert_eq!(&first[col("outcome")], "executed");
    let rejected = &rows[2]; // minute 22
    assert_eq!(&rejected[col("outcome")], "rejected");
    assert_eq!(&rejected[col("rule")], "R6_ORDER_TOO_SMALL");
    assert_eq!(
        &rejected[col("verdict_detail")],
        "size 1, minimum 10, \"tick 22\""
    );
    assert_eq!(&first[col("action")], "open_long");
    assert_eq!(&first[col("size_usd")], "250");
    assert_eq!(&first[col("target")], "");
    assert_eq!(&first[col("cost_usd")], "0.0048");
    assert_eq!(&first[col("input_tokens")], "1200");
    drop(fx);
}

#[tokio::test]
async fn bad_requests_are_refused_before_anything_is_written() {
    let (store, _fx) = store_with(3).await;
    let refusals = [
        (
            TicksRequest {
                from: Some(at(2)),
                to: Some(at(1)),
                ..request(TicksFormat::Jsonl, false)
            },
            "--from",
        ),
        (request(TicksFormat::Csv, true), "--prompts"),
        (
            TicksRequest {
                limit: Some(0),
                ..request(TicksFormat::Csv, false)
            },
            "--limit",
        ),
        (
            TicksRequest {
                deployment: Some(uuid::Uuid::from_u128(7)),
                ..request(TicksFormat::Jsonl, false)
            },
            "--deployment 00000000-0000-0000-0000-000000000007: no such deployment",
        ),
    ];
    for (r, names) in refusals {
        match ticks_cmd::resolve_deployment(&store, &r).await {
            Err(TicksCommandError::Input(m)) => assert!(m.contains(names), "{m}"),
            other => panic!("{r:?}: {other:?}"),
        }
    }
    // Two deployments and none named: both listed.
    seed(&store).await.unwrap();
    match ticks_cmd::resolve_deployment(&store, &request(TicksFormat::Jsonl, false)).await {
        Err(TicksCommandError::Input(m)) => {
            assert!(m.contains("--deployment is needed"), "{m}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        ticks_cmd::parse_format("xml").unwrap_err(),
        "\"xml\" is not a format; use jsonl or csv"
    );
}

#[tokio::test]
async fn steps_that_are_not_the_runtimes_are_named_with_their_tick() {
    let store = db::connect("sqlite::memory:").await.unwrap();
    let fx = seed(&store).await.unwrap();
    // The sample snapshot's steps are not step records.
    let s = sample_snapshot(fx.deployment.id, at(5));
    store.record_tick(&tick_record(s.clone())).await.unwrap();
    let q = db::TickQuery {
        texts: true,
        ..db::TickQuery::of(fx.deployment.id)
    };
    match tick::read_ticks(&store, &q).await {
        Err(ReadTicksError::Steps { tick_id, .. }) => assert_eq!(tick_id, s.id),
        other => panic!("{other:?}"),
    }
    // Without the texts the tick reads.
    let entries: Vec<TickEntry> = tick::read_ticks(&store, &db::TickQuery::of(fx.deployment.id))
        .await
        .unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].tick_id, s.id);
    assert!(entries[0].prompt.is_none());
}
