//! The facts routes through real HTTP on PostgreSQL: add, edit, promote / demote, archive, the
//! archived toggle — each change in the audit trail, made by the `authenticated` role with the
//! caller's id (the request ran as its user).

use reqwest::StatusCode;
use serde_json::json;

use crate::common::serve::{no_model, server, world};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_edit_promote_demote_archive_each_audited_as_the_user() {
    let s = server(no_model()).await;
    let w = world(&s).await;
    let t = &w.a.token;

    let (status, added) = s
        .post(
            "/api/facts",
            t,
            &json!({"fact": "I never hold a position over the weekend.", "topic": "session"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{added}");
    assert_eq!(added["source"], "profile");
    assert_eq!(added["confidence"], "asserted");
    assert_eq!(added["userId"], w.a.user().to_string());
    let id = added["id"].as_str().unwrap().to_owned();
    // Adding a fact references it: it enters the coach's top facts at once.
    let time = |v: &serde_json::Value| {
        chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap_or_else(|| panic!("a time: {v}")))
            .unwrap()
    };
    assert_eq!(time(&added["lastReferencedAt"]), time(&added["createdAt"]));

    let (status, edited) = s
        .patch(
            &format!("/api/facts/{id}"),
            t,
            &json!({"fact": "I close every position before Friday 20:00 UTC.", "topic": null}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{edited}");
    assert_eq!(
        edited["fact"],
        "I close every position before Friday 20:00 UTC."
    );
    assert!(edited["topic"].is_null());
    // So does editing it, at the edit's time.
    assert!(time(&edited["lastReferencedAt"]) >= time(&added["lastReferencedAt"]));

    let (status, demoted) = s
        .patch(
            &format!("/api/facts/{id}"),
            t,
            &json!({"confidence": "inferred"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(demoted["confidence"], "inferred");
    let (status, promoted) = s
        .patch(
            &format!("/api/facts/{id}"),
            t,
            &json!({"confidence": "asserted", "topic": "risk"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(promoted["confidence"], "asserted");
    assert_eq!(promoted["topic"], "risk");

    let (status, listed) = s.get("/api/facts", t).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert_eq!(listed[0]["id"], id.as_str(), "newest first");

    let (status, archived) = s
        .post(
            &format!("/api/facts/{id}/archive"),
            t,
            &json!({"reason": "user_corrected"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{archived}");
    assert_eq!(archived["archivedReason"], "user_corrected");
    assert!(archived["archivedAt"].is_string());

    let (_, active) = s.get("/api/facts", t).await;
    assert_eq!(active.as_array().unwrap().len(), 1);
    assert_eq!(active[0]["id"], w.a.fact.id.to_string());
    let (_, all) = s.get("/api/facts?archived=true", t).await;
    assert_eq!(all.as_array().unwrap().len(), 2);

    // An archived fact can no longer be edited.
    let (status, _) = s
        .patch(
            &format!("/api/facts/{id}"),
            t,
            &json!({"confidence": "inferred"}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (status, changes) = s.get(&format!("/api/facts/{id}/changes"), t).await;
    assert_eq!(status, StatusCode::OK);
    let ops: Vec<&str> = changes
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["insert", "update", "update", "update", "archive"]);
    for c in changes.as_array().unwrap() {
        assert_eq!(c["dbRole"], "authenticated", "{c}");
        assert_eq!(c["jwtSub"], w.a.user().to_string(), "{c}");
        assert_eq!(c["actor"], "profile", "{c}");
    }
    assert_eq!(
        changes[1]["oldFact"],
        "I never hold a position over the weekend."
    );
    assert_eq!(changes[4]["reason"], "user_corrected");
}
