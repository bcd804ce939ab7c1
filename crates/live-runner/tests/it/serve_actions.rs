//! Consent before any action over real HTTP on PostgreSQL, with the offline scripted model: a
//! chat turn's `prepare_action` keeps a pending action that `POST /api/chat` answers and that
//! changes nothing; `POST /api/actions/{id}/confirm` as its owner applies it with its
//! `deployment_controls` row; another user's confirm or discard is a 404 that changes nothing;
//! an action past its expiry is refused (409) and changes nothing, swept or not; a change its
//! rules refuse marks the action failed.

use std::sync::{Arc, Mutex};

use agent_runtime::{LanguageModel, ModelError, ModelRequest, ModelResponse, ScriptedModel};
use chrono::{DateTime, Duration, Utc};
use db::{ActionStatus, ActionStore, DeploymentStatus, RegistryStore};
use model::test_support::{tool_call, tool_turn};
use reqwest::StatusCode;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::serve::{Server, server, server_with_clock, snake_case_keys, world};
use crate::serve_chat::say;

/// A scripted model whose script is given once the world it names exists (the deployments'
/// ids are only known after the server's database is seeded).
#[derive(Default)]
pub(crate) struct Later(std::sync::OnceLock<ScriptedModel>);

impl Later {
    pub(crate) fn script(&self, responses: Vec<ModelResponse>) {
        assert!(
            self.0.set(ScriptedModel::new(responses)).is_ok(),
            "scripted once"
        );
    }
}

#[async_trait::async_trait]
impl LanguageModel for Later {
    fn id(&self) -> &str {
        "builtin/scripted"
    }
    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        self.0.get().expect("the script").generate(request).await
    }
}

/// A clock the test moves forward.
pub(crate) struct MovingClock(pub(crate) Mutex<DateTime<Utc>>);

impl types::Clock for MovingClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().expect("clock")
    }
}

impl MovingClock {
    pub(crate) fn advance(&self, by: Duration) {
        *self.0.lock().expect("clock") += by;
    }
}

pub(crate) fn prepare_pause(deployment: Uuid) -> ModelResponse {
    tool_turn(vec![tool_call(
        "call_1",
        "prepare_action",
        json!({"action": "pause_deployment", "deploymentId": deployment,
               "reason": "CPI print at 14:30"})
        .to_string(),
    )])
}

pub(crate) async fn status(s: &Server, id: Uuid) -> DeploymentStatus {
    s.store.get_deployment(id).await.expect("deployment").status
}

pub(crate) async fn audit_rows(s: &Server, id: Uuid) -> i64 {
    s.pg.count(&format!(
        "SELECT count(*) FROM deployment_controls WHERE deployment_id = '{id}'"
    ))
    .await
}

/// Asserts that deployment `id` is still active with no control audited.
pub(crate) async fn untouched(s: &Server, id: Uuid) {
    assert_eq!(status(s, id).await, DeploymentStatus::Active);
    assert_eq!(audit_rows(s, id).await, 0);
}

/// Asserts that confirming action `id` as the user of `token` is a 409 whose error says
/// `needle`.
async fn refused(s: &Server, token: &str, id: &str, needle: &str) {
    let (code, body) = s
        .post_empty(&format!("/api/actions/{id}/confirm"), token)
        .await;
    assert_eq!(code, StatusCode::CONFLICT, "{body}");
    assert!(body["error"].as_str().unwrap().contains(needle), "{body}");
}

/// A chat turn (a kept conversation about `deployment`) as the user of `token`: its answer.
async fn chat(s: &Server, token: &str, deployment: Uuid) -> Value {
    let (code, body) = s
        .post(
            "/api/chat",
            token,
            &json!({"message": "Pause my BTC bot before CPI.", "deploymentId": deployment}),
        )
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prepared_pause_changes_nothing_until_its_owner_confirms_it() {
    let model = Arc::new(Later::default());
    let s = server(model.clone() as Arc<dyn LanguageModel>).await;
    let w = world(&s).await;
    let (a, b) = (&w.a, &w.b);
    let dep = a.deployment();
    model.script(vec![
        prepare_pause(dep),
        say("I prepared a pause of your BTC bot; confirm it to apply it."),
    ]);

    let body = chat(&s, &a.token, dep).await;
    assert!(snake_case_keys(&body).is_empty(), "{body}");
    let actions = body["actions"].as_array().expect("actions");
    assert_eq!(actions.len(), 1, "{body}");
    let action = &actions[0];
    assert_eq!(action["kind"], "pause_deployment");
    assert_eq!(action["status"], "pending");
    assert_eq!(action["deploymentId"], json!(dep));
    assert_eq!(action["conversationId"], body["conversationId"]);
    assert_eq!(action["reason"], "CPI print at 14:30");
    assert_eq!(action["flatten"], false);
    assert_eq!(
        action["summary"],
        "Pause deployment \"BTC breakout\" v1 (BTC, ETH), now active"
    );
    let id = action["id"].as_str().unwrap().to_owned();
    assert_eq!(
        action["confirmWith"],
        format!("POST /api/actions/{id}/confirm")
    );
    // Prepared, not applied.
    untouched(&s, dep).await;

    // Listed for its owner only.
    let (code, mine) = s.get("/api/actions", &a.token).await;
    assert_eq!(code, StatusCode::OK, "{mine}");
    assert_eq!(mine.as_array().unwrap().len(), 1);
    assert_eq!(mine[0]["id"], json!(id));
    let (_, theirs) = s.get("/api/actions", &b.token).await;
    assert_eq!(theirs, json!([]));
    let (_, theirs) = s.get("/api/actions/history", &b.token).await;
    assert_eq!(theirs, json!([]));

    // Another user: 404 for confirm and discard, nothing changes.
    for verb in ["confirm", "discard"] {
        let (code, body) = s
            .post_empty(&format!("/api/actions/{id}/{verb}"), &b.token)
            .await;
        assert_eq!(code, StatusCode::NOT_FOUND, "{verb}: {body}");
    }
    untouched(&s, dep).await;
    let stored = s.store.action(a.user(), id.parse().unwrap()).await.unwrap();
    assert_eq!(stored.status, ActionStatus::Pending);

    // The owner confirms: paused, audited in their name, naming the action.
    let (code, done) = s
        .post_empty(&format!("/api/actions/{id}/confirm"), &a.token)
        .await;
    assert_eq!(code, StatusCode::OK, "{done}");
    assert_eq!(done["status"], "confirmed");
    assert_eq!(done["decidedBy"], a.user().to_string());
    assert_eq!(done["result"]["kind"], "control");
    assert_eq!(done["result"]["fromStatus"], "active");
    assert_eq!(done["result"]["toStatus"], "paused");
    assert_eq!(status(&s, dep).await, DeploymentStatus::Paused);
    let (code, controls) = s
        .get(&format!("/api/deployments/{dep}/controls"), &a.token)
        .await;
    assert_eq!(code, StatusCode::OK, "{controls}");
    let rows = controls["controls"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{controls}");
    assert_eq!(rows[0]["id"], done["result"]["controlId"]);
    assert_eq!(rows[0]["action"], "pause");
    assert_eq!(rows[0]["requestedBy"], a.user().to_string());
    assert!(
        rows[0]["reason"].as_str().unwrap().contains(&id),
        "{controls}"
    );

    // Decided: a second confirmation or a discard is a 409, nothing more is written.
    for verb in ["confirm", "discard"] {
        let (code, body) = s
            .post_empty(&format!("/api/actions/{id}/{verb}"), &a.token)
            .await;
        assert_eq!(code, StatusCode::CONFLICT, "{verb}: {body}");
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains("already confirmed"),
            "{body}"
        );
    }
    assert_eq!(audit_rows(&s, dep).await, 1);
    let (_, pending) = s.get("/api/actions", &a.token).await;
    assert_eq!(pending, json!([]));
    let (_, history) = s.get("/api/actions/history", &a.token).await;
    assert_eq!(history.as_array().unwrap().len(), 1);
    assert_eq!(history[0]["status"], "confirmed");

    // Bad ids: 400; no token: 401.
    let (code, _) = s
        .post_empty("/api/actions/not-a-uuid/confirm", &a.token)
        .await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    let (code, _) = s
        .post_empty(&format!("/api/actions/{id}/confirm"), "not-a-token")
        .await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unconfirmed_action_expires_and_changes_nothing() {
    let clock = Arc::new(MovingClock(Mutex::new(Utc::now())));
    let model = Arc::new(Later::default());
    let s = server_with_clock(model.clone() as Arc<dyn LanguageModel>, clock.clone()).await;
    let w = world(&s).await;
    let (a, dep) = (&w.a, w.a.deployment());
    model.script(vec![
        prepare_pause(dep),
        say("Prepared."),
        prepare_pause(dep),
        say("Prepared again."),
    ]);
    let first = chat(&s, &a.token, dep).await["actions"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Past its 15 minutes: no longer pending, read as expired before any sweep.
    clock.advance(Duration::minutes(16));
    let (_, pending) = s.get("/api/actions", &a.token).await;
    assert_eq!(pending, json!([]));
    let (_, history) = s.get("/api/actions/history", &a.token).await;
    assert_eq!(history[0]["status"], "expired", "{history}");
    refused(&s, &a.token, &first, "expired").await;
    untouched(&s, dep).await;

    // The sweep marks another one expired in the database, and it is refused too.
    let second = chat(&s, &a.token, dep).await["actions"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    clock.advance(Duration::minutes(15));
    let sweep = tokio::spawn(live_runner::serve::actions::expire_due(
        s.store.clone(),
        clock.clone(),
    ));
    let second_id: Uuid = second.parse().unwrap();
    let mut swept = false;
    for _ in 0..100 {
        if s.store.action(a.user(), second_id).await.unwrap().status == ActionStatus::Expired {
            swept = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    sweep.abort();
    assert!(swept, "the sweep did not expire the action");
    refused(&s, &a.token, &second, "expired").await;
    untouched(&s, dep).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confirmation_its_change_refuses_fails_and_a_discard_drops_it() {
    let model = Arc::new(Later::default());
    let s = server(model.clone() as Arc<dyn LanguageModel>).await;
    let w = world(&s).await;
    let (a, dep) = (&w.a, w.a.deployment());
    model.script(vec![
        prepare_pause(dep),
        say("Prepared."),
        prepare_pause(dep),
        say("Prepared."),
    ]);
    let first = chat(&s, &a.token, dep).await["actions"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = chat(&s, &a.token, dep).await["actions"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // The user pauses it themselves: the prepared pause is no longer possible.
    let (code, _) = s
        .post_empty(&format!("/api/deployments/{dep}/pause"), &a.token)
        .await;
    assert_eq!(code, StatusCode::OK);
    refused(&s, &a.token, &first, "already paused").await;
    assert_eq!(audit_rows(&s, dep).await, 1);

    // Discarded: nothing changes, and it is no longer pending.
    let (code, body) = s
        .post_empty(&format!("/api/actions/{second}/discard"), &a.token)
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "discarded");
    let (_, history) = s.get("/api/actions/history", &a.token).await;
    let statuses: Vec<(&str, &str)> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["id"].as_str().unwrap(), h["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        statuses,
        [(second.as_str(), "discarded"), (first.as_str(), "failed")]
    );
    assert!(
        history[1]["error"]
            .as_str()
            .unwrap()
            .contains("already paused"),
        "{history}"
    );
    assert_eq!(status(&s, dep).await, DeploymentStatus::Paused);
    assert_eq!(audit_rows(&s, dep).await, 1);
}
