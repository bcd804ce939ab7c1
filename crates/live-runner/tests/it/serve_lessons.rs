//! The review queue over real HTTP on PostgreSQL: `GET /api/lessons/held` and `POST
//! /api/lessons/{id}/accept|reject` as the caller under row-level security (another user's
//! held lesson is a 404, one decided already a 409), each decision audited with the caller's
//! id, the time and the reason; and the `/lessons` page's plain forms, the memory page's count,
//! and the cross-origin guard in front of them.

use chrono::Utc;
use db::test_support::{Fixture, at, sample_note};
use db::{HeldStatus, NoteScope, NoteStore, PgStore};
use reqwest::StatusCode;
use reqwest::header::LOCATION;
use serde_json::{Value, json};
use types::{HeldLesson, Uuid};

use crate::common::serve::{Server, no_model, page, post_form, server, world};

/// A note of `fx`'s deployment at `minutes` whose reflection held `bullets` back (each with two
/// reasons, the first naming the bullet's place); returns the note's and the bullets' ids.
pub(crate) async fn held_note(
    store: &PgStore,
    fx: &Fixture,
    minutes: i64,
    bullets: &[&str],
) -> (Uuid, Vec<Uuid>) {
    let mut note = sample_note(fx, at(minutes), "- third lesson");
    note.content.held = bullets
        .iter()
        .enumerate()
        .map(|(i, text)| HeldLesson {
            text: (*text).into(),
            reasons: vec![
                format!("bullet {}: names a <price> level", i + 1),
                "not a figure of the ledger".into(),
            ],
        })
        .collect();
    store.insert_note(&note).await.expect("held note");
    let ids = (0..bullets.len())
        .map(|i| db::held_lesson_id(note.id, u32::try_from(i).unwrap()))
        .collect();
    (note.id, ids)
}

async fn pending(s: &Server, deployment: Uuid) -> usize {
    s.store
        .held_lessons(
            NoteScope::Deployment(deployment),
            Some(HeldStatus::Pending),
            100,
        )
        .await
        .unwrap()
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_lists_accepts_and_rejects_held_lessons_as_the_caller() {
    let s = server(no_model()).await;
    let w = world(&s).await;
    let (a, b) = (&w.a, &w.b);
    let (_, mine) = held_note(
        &s.store,
        &a.fx,
        100,
        &["- buy the dip at 60k", "- double the size"],
    )
    .await;
    let (_, theirs) = held_note(&s.store, &b.fx, 100, &["- theirs"]).await;

    // The queue: the caller's, with the deployment, the skill, the text and why.
    let (code, body) = s.get("/api/lessons/held", &a.token).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let rows = body.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{body}");
    assert_eq!(rows[0]["id"], mine[0].to_string());
    assert_eq!(rows[0]["deploymentId"], a.deployment().to_string());
    assert_eq!(rows[0]["skillName"], a.fx.skill.name.as_str());
    assert_eq!(rows[0]["text"], "- buy the dip at 60k");
    assert_eq!(
        rows[0]["reasons"],
        json!([
            "bullet 1: names a <price> level",
            "not a figure of the ledger"
        ])
    );
    assert_eq!(rows[0]["status"], "pending");
    assert_eq!(rows[0]["heldAt"], "2026-06-04T11:40:00Z");
    for field in [
        "reviewedAt",
        "reviewedBy",
        "reviewReason",
        "resultingNoteId",
    ] {
        assert_eq!(rows[0][field], Value::Null, "{field}");
    }
    assert_eq!(rows[1]["id"], mine[1].to_string());
    let (code, body) = s
        .get(
            &format!("/api/lessons/held?deployment={}", a.deployment()),
            &a.token,
        )
        .await;
    assert_eq!((code, body.as_array().unwrap().len()), (StatusCode::OK, 2));
    let (_, body) = s.get("/api/lessons/held", &b.token).await;
    assert_eq!(body.as_array().unwrap().len(), 1);
    assert_eq!(body[0]["id"], theirs[0].to_string());
    // Another user's deployment: 404; a bad filter names itself.
    let (code, _) = s
        .get(
            &format!("/api/lessons/held?deployment={}", b.deployment()),
            &a.token,
        )
        .await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    let (code, body) = s.get("/api/lessons/held?status=open", &a.token).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["field"], "status");
    let (code, _) = s.get("/api/lessons/held?deployment=x", &a.token).await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    let (code, _) = s.get("/api/lessons/held", "not-a-token").await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);

    // Bad bodies: 422 naming the field, nothing decided.
    let accept_first = format!("/api/lessons/{}/accept", mine[0]);
    for (bad, field) in [
        (json!({"reason": ""}), "reason"),
        (json!({"reason": "   "}), "reason"),
        (json!({"reason": "a\u{0}b"}), "reason"),
        (json!({"reason": "two\nlines"}), "reason"),
        (json!({"reason": "x".repeat(501)}), "reason"),
        (json!({"why": "typo"}), "why"),
    ] {
        let (code, body) = s.post(&accept_first, &a.token, &bad).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
        assert_eq!(body["field"], field, "{bad}: {body}");
    }
    assert_eq!(pending(&s, a.deployment()).await, 2);

    // Another user cannot decide mine: 404, and it stays pending.
    for action in ["accept", "reject"] {
        let (code, body) = s
            .post_empty(&format!("/api/lessons/{}/{action}", mine[0]), &b.token)
            .await;
        assert_eq!(code, StatusCode::NOT_FOUND, "{action}: {body}");
    }
    assert_eq!(pending(&s, a.deployment()).await, 2);

    // Accept: audited as the caller, with the reason; the note in force carries it from now.
    let before = Utc::now();
    let (code, body) = s
        .post(&accept_first, &a.token, &json!({"reason": "fair, keep it"}))
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "accepted");
    assert_eq!(body["reviewedBy"], a.user().to_string());
    assert_eq!(body["reviewReason"], "fair, keep it");
    assert_eq!(body["skillName"], a.fx.skill.name.as_str());
    let resulting = db::accepted_note_id(mine[0]);
    assert_eq!(body["resultingNoteId"], resulting.to_string());
    let reviewed_at: chrono::DateTime<Utc> = body["reviewedAt"].as_str().unwrap().parse().unwrap();
    assert!(reviewed_at >= before && reviewed_at <= Utc::now());
    let scope = NoteScope::Deployment(a.deployment());
    let active = s
        .store
        .active_note(scope, Utc::now())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(active.id, resulting);
    assert_eq!(
        active.content.lessons_text,
        "- third lesson\n- buy the dip at 60k"
    );
    let (_, memory) = s
        .get(
            &format!("/api/deployments/{}/memory", a.deployment()),
            &a.token,
        )
        .await;
    assert_eq!(memory["notes"][0]["id"], resulting.to_string());
    assert_eq!(memory["notes"][0]["status"], "active");

    // Decided already: 409 naming who decided, nothing changes; for another user still 404.
    let (code, body) = s.post_empty(&accept_first, &a.token).await;
    assert_eq!(code, StatusCode::CONFLICT, "{body}");
    let message = body["error"].as_str().unwrap();
    assert!(
        message.contains(&format!("already accepted by {}", a.user())),
        "{body}"
    );
    let (code, _) = s
        .post_empty(&format!("/api/lessons/{}/reject", mine[0]), &a.token)
        .await;
    assert_eq!(code, StatusCode::CONFLICT);
    let (code, _) = s
        .post_empty(&format!("/api/lessons/{}/reject", mine[0]), &b.token)
        .await;
    assert_eq!(code, StatusCode::NOT_FOUND);

    // Reject without a body; unknown and malformed ids.
    let (code, body) = s
        .post_empty(&format!("/api/lessons/{}/reject", mine[1]), &a.token)
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "rejected");
    assert_eq!(body["reviewReason"], Value::Null);
    assert_eq!(body["resultingNoteId"], Value::Null);
    let (code, _) = s
        .post_empty(&format!("/api/lessons/{}/accept", Uuid::new_v4()), &a.token)
        .await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    let (code, _) = s
        .post_empty("/api/lessons/not-a-uuid/accept", &a.token)
        .await;
    assert_eq!(code, StatusCode::BAD_REQUEST);

    // The queue is empty; every status shows the audit; the database names the caller.
    let (_, body) = s.get("/api/lessons/held", &a.token).await;
    assert_eq!(body, json!([]));
    let (_, body) = s.get("/api/lessons/held?status=all", &a.token).await;
    let statuses: Vec<&str> = body
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["accepted", "rejected"]);
    let (_, body) = s.get("/api/lessons/held?status=rejected", &a.token).await;
    assert_eq!(body[0]["id"], mine[1].to_string());
    assert_eq!(
        s.pg.count(&format!(
            "SELECT count(*) FROM held_lessons WHERE reviewed_by = '{}' AND reviewed_at IS NOT NULL",
            a.user()
        ))
        .await,
        2
    );
    assert_eq!(pending(&s, b.deployment()).await, 1, "B's untouched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lessons_page_lists_the_queue_and_decides_with_plain_forms() {
    let s = server(no_model()).await;
    let w = world(&s).await;
    let (a, b) = (&w.a, &w.b);
    let own = s.base.clone();
    let (_, mine) = held_note(&s.store, &a.fx, 100, &["- buy <b>the dip</b>", "- hold"]).await;
    let (_, theirs) = held_note(&s.store, &b.fx, 100, &["- theirs"]).await;

    // The memory page says how many wait, and links the queue.
    let memory = format!("/deployments/{}/memory", a.deployment());
    let (code, body) = page(&s, &memory, &a.token).await;
    assert_eq!(code, StatusCode::OK);
    assert!(
        body.contains(&format!(
            r#"<a href="/lessons?deployment={}">2 held lessons wait for your review</a>"#,
            a.deployment()
        )),
        "{body}"
    );
    assert!(body.contains(r#"<a href="/lessons" id="nav-lessons">"#));

    // The queue: every row with its reasons, the text escaped, no script.
    let (code, body) = page(&s, "/lessons", &a.token).await;
    assert_eq!(code, StatusCode::OK);
    assert!(body.contains(&format!(r#"id="held-{}""#, mine[0])));
    assert!(body.contains(&format!(r#"id="held-{}""#, mine[1])));
    assert!(!body.contains(&theirs[0].to_string()), "not B's");
    assert!(
        body.contains("- buy &lt;b&gt;the dip&lt;&#x2f;b&gt;"),
        "{body}"
    );
    assert!(body.contains("<li>bullet 1: names a &lt;price&gt; level</li>"));
    assert!(!body.contains("<b>the dip</b>") && !body.contains("<script"));
    assert!(body.contains(&a.fx.skill.name));

    // Accept from the form, with a reason and the filter to go back to.
    let filter = a.deployment().to_string();
    let r = post_form(
        &s,
        &format!("/lessons/{}/accept", mine[0]),
        &a.token,
        &[("reason", "worth a try"), ("deployment", &filter)],
        &own,
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let back = format!("/lessons?deployment={filter}&done=accepted");
    assert_eq!(r.headers().get(LOCATION).unwrap(), &back);
    let (_, body) = page(&s, &back, &a.token).await;
    assert!(body.contains("Accepted: a new note with this lesson is in force from now"));
    assert!(
        !body.contains(&format!(r#"id="held-{}""#, mine[0])),
        "it left the queue"
    );
    assert!(body.contains(&format!(r#"id="held-{}""#, mine[1])));
    let row = &s
        .store
        .held_lessons(NoteScope::Deployment(a.deployment()), None, 10)
        .await
        .unwrap()[0];
    assert_eq!(
        (
            row.status,
            row.reviewed_by.clone(),
            row.review_reason.clone()
        ),
        (
            HeldStatus::Accepted,
            Some(a.user().to_string()),
            Some("worth a try".into())
        )
    );
    let (_, body) = page(&s, &memory, &a.token).await;
    assert!(
        body.contains("1 held lesson waits for your review"),
        "{body}"
    );

    // Again: the queue with the reason, 409.
    let r = post_form(
        &s,
        &format!("/lessons/{}/reject", mine[0]),
        &a.token,
        &[("reason", "")],
        &own,
    )
    .await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let body = r.text().await.unwrap();
    assert!(
        body.contains(r#"id="error""#) && body.contains("already accepted"),
        "{body}"
    );
    // Another user's: a 404 page, nothing changed; a refused reason: 422.
    let r = post_form(
        &s,
        &format!("/lessons/{}/reject", theirs[0]),
        &a.token,
        &[],
        &own,
    )
    .await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_eq!(pending(&s, b.deployment()).await, 1);
    let r = post_form(
        &s,
        &format!("/lessons/{}/reject", mine[1]),
        &a.token,
        &[("reason", &"x".repeat(501))],
        &own,
    )
    .await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(pending(&s, a.deployment()).await, 1);

    // From another port of this host: refused before the handler, nothing changed.
    let port: u16 = own.rsplit(':').next().unwrap().parse().unwrap();
    let other = format!("http://127.0.0.1:{}", if port == 1 { 2 } else { port - 1 });
    let r = post_form(
        &s,
        &format!("/lessons/{}/reject", mine[1]),
        &a.token,
        &[("reason", "planted")],
        &other,
    )
    .await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(pending(&s, a.deployment()).await, 1);

    // Reject without a reason; the reviewed view shows both decisions.
    let r = post_form(
        &s,
        &format!("/lessons/{}/reject", mine[1]),
        &a.token,
        &[("reason", "  ")],
        &own,
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers().get(LOCATION).unwrap(), "/lessons?done=rejected");
    let (_, body) = page(&s, "/lessons?done=rejected", &a.token).await;
    assert!(body.contains("Rejected: it never reaches a prompt."));
    assert!(body.contains(r#"id="no-held""#), "{body}");
    let (_, body) = page(&s, "/lessons?status=all", &a.token).await;
    assert!(
        body.contains(&format!("accepted by {}", a.user())),
        "{body}"
    );
    assert!(body.contains(&format!("rejected by {}", a.user())));
    assert!(body.contains("“worth a try”"));
    let (code, _) = page(
        &s,
        &format!("/lessons?deployment={}", b.deployment()),
        &a.token,
    )
    .await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    let (code, body) = page(&s, "/lessons?status=open", &a.token).await;
    assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(body.contains("is not one of pending"), "{body}");
}
