//! Two users through real HTTP on PostgreSQL: every route tried by A with B's ids answers 404
//! (or an empty list), never B's data, and B's rows are unchanged afterwards.

use reqwest::StatusCode;
use serde_json::json;

use crate::common::serve::{no_model, server, world};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_with_the_other_users_ids_is_404_or_empty() {
    let s = server(no_model()).await;
    let w = world(&s).await;
    let (a, b) = (&w.a, &w.b);
    let b_fact = b.fact.id;
    let b_dep = b.deployment();

    // Lists hold only the caller's rows, archived or not.
    for path in ["/api/facts", "/api/facts?archived=true"] {
        let (status, body) = s.get(path, &a.token).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        let ids: Vec<&str> = body
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, [a.fact.id.to_string()], "{path}");
        assert!(!body.to_string().contains(&b.user().to_string()), "{path}");
    }

    let (status, body) = s.get("/api/deployments", &a.token).await;
    assert_eq!(status, StatusCode::OK);
    let ids: Vec<&str> = body
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [a.deployment().to_string()]);

    // Reads by id.
    for path in [
        format!("/api/deployments/{b_dep}/memory"),
        format!("/api/facts/{b_fact}/changes"),
    ] {
        let (status, body) = s.get(&path, &a.token).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {body}");
        assert!(body["error"].is_string(), "{path}: {body}");
        assert!(
            !body.to_string().contains("second lesson"),
            "{path}: {body}"
        );
    }

    // Writes by id.
    let (status, body) = s
        .patch(
            &format!("/api/facts/{b_fact}"),
            &a.token,
            &json!({"fact": "Hijacked by A, this must not land."}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, body) = s
        .post(
            &format!("/api/facts/{b_fact}/archive"),
            &a.token,
            &json!({"reason": "user_deleted"}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    // A chat about B's deployment.
    let (status, body) = s
        .post(
            "/api/chat",
            &a.token,
            &json!({"messages": [{"role": "user", "content": "How is it going?"}], "deploymentId": b_dep}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    // An unknown id is the same 404 as another user's.
    let unknown = uuid::Uuid::new_v4();
    let (status, _) = s
        .get(&format!("/api/deployments/{unknown}/memory"), &a.token)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // B's fact is untouched, and its audit trail holds only its insert.
    let (status, body) = s.get("/api/facts", &b.token).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body[0]["fact"], b.fact.fact.as_str());
    assert!(body[0]["archivedAt"].is_null());
    let (status, body) = s
        .get(&format!("/api/facts/{b_fact}/changes"), &b.token)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body.as_array().unwrap().len(), 1, "{body}");
    assert_eq!(body[0]["op"], "insert");

    // And B sees their own deployment.
    let (status, body) = s
        .get(&format!("/api/deployments/{b_dep}/memory"), &b.token)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["deployment"]["id"], b_dep.to_string());
}
