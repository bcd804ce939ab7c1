//! Consent before any action: `prepare_action` through a scripted model keeps a pending action
//! and changes nothing — the deployment keeps its status, no control is audited, no skill
//! version is saved — until the store confirms it; what the turn's data does not allow, and a
//! skill draft the loader refuses (with each problem's path), go back to the model; a failed
//! turn keeps no action; a turn out of steps says what it prepared. On SQLite and PostgreSQL.

use agent_runtime::{Message, ModelResponse, ScriptedModel, ToolOutcome};
use chat::{ChatStore, DEFAULT_ACTION_TTL, PREPARE_ACTION, actions::action_id};
use chrono::{DateTime, TimeZone, Utc};
use db::test_support::pg::TestDatabase;
use db::{
    ActionKind, ActionResult, ActionStatus, ControlStore, ConversationStore, DeploymentStatus,
    NewConversation,
};
use model::test_support::{tool_call, tool_turn};
use serde_json::{Value, json};
use tools::RunMode;
use uuid::Uuid;

use crate::memory::{answer, run, turn};

/// A valid skill document (the repository's example).
const SKILL: &str = include_str!("../../../../examples/skills/btc-breakout-rules.json");

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 8, 14, 32, 0).unwrap()
}

fn prepare(id: &str, args: Value) -> ModelResponse {
    tool_turn(vec![tool_call(id, PREPARE_ACTION, args.to_string())])
}

/// The tool results the model read, in order.
fn results(m: &[Message]) -> Vec<&str> {
    m.iter()
        .filter_map(|m| match m {
            Message::Tool { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect()
}

async fn a_prepared_pause_waits_for_the_user<S: ChatStore + ControlStore + ConversationStore>(
    store: &S,
) {
    let fx = db::test_support::seed(store).await.expect("seed");
    let (user, deployment) = (fx.user.id, fx.deployment.id);
    let conversation = NewConversation {
        id: Uuid::new_v4(),
        user_id: user,
        mode: "coach".into(),
        deployment_id: Some(deployment),
        title: "Pause it".into(),
        at: now(),
    };
    store.start_conversation(&conversation).await.unwrap();
    let model = ScriptedModel::new(vec![
        prepare(
            "c1",
            json!({"action": "pause_deployment", "deploymentId": deployment,
                   "reason": "CPI print at 14:30"}),
        ),
        answer("I prepared a pause; confirm it in the app."),
    ]);
    let mut t = turn(user, 40, Vec::new(), "Pause my BTC bot before CPI.", now());
    t.conversation_id = Some(conversation.id);
    let turn_id = t.turn_id;
    let out = run(store, &model, t).await;
    assert!(out.run.error.is_none(), "{:?}", out.run.error);

    // One action, kept pending, in the turn's conversation, with a derived id and the TTL.
    let [action] = out.actions.as_slice() else {
        panic!("one action: {:?}", out.actions)
    };
    assert_eq!(action.id, action_id(turn_id, 0));
    assert_eq!(action.kind, ActionKind::PauseDeployment);
    assert_eq!(action.status, ActionStatus::Pending);
    assert_eq!(action.deployment_id, Some(deployment));
    assert_eq!(action.conversation_id, Some(conversation.id));
    assert_eq!(action.created_at, now());
    assert_eq!(action.expires_at, now() + DEFAULT_ACTION_TTL);
    assert_eq!(
        action.summary,
        "Pause deployment \"BTC breakout\" v1 (BTC, ETH), now active"
    );
    assert_eq!(action.reason(), Some("CPI print at 14:30"));
    assert_eq!(
        store.pending_actions(user, now(), 10).await.unwrap(),
        out.actions
    );

    // What the model read: pending, with the route that confirms it.
    let requests = model.requests();
    let read: Value = serde_json::from_str(results(&requests[1].messages)[0]).unwrap();
    assert_eq!(read["actionId"], json!(action.id));
    assert_eq!(read["status"], "pending");
    assert_eq!(read["summary"], json!(action.summary));
    assert_eq!(read["expiresAt"], json!(action.expires_at));
    assert_eq!(
        read["confirmWith"],
        format!("POST /api/actions/{}/confirm", action.id)
    );

    // Nothing changed.
    assert_eq!(
        store.get_deployment(deployment).await.unwrap().status,
        DeploymentStatus::Active
    );
    assert!(
        store
            .deployment_controls(deployment, 10)
            .await
            .unwrap()
            .is_empty()
    );

    // The user's confirmation applies it.
    let done = store
        .confirm_action(user, action.id, now() + chrono::Duration::minutes(2))
        .await
        .unwrap();
    assert!(matches!(done.result, Some(ActionResult::Control { .. })));
    assert_eq!(
        store.get_deployment(deployment).await.unwrap().status,
        DeploymentStatus::Paused
    );
}

async fn what_the_data_does_not_allow_goes_back_to_the_model<
    S: ChatStore + ControlStore + ConversationStore,
>(
    store: &S,
) {
    let mine = db::test_support::seed(store).await.expect("seed");
    let theirs = db::test_support::seed(store).await.expect("seed");
    let user = mine.user.id;
    let mut unknown_key: Value = serde_json::from_str(SKILL).unwrap();
    unknown_key["risk"]["maxLevrage"] = json!(3);
    unknown_key["maxSteps"] = json!(0);
    let refusals = [
        (
            json!({"action": "resume_deployment", "deploymentId": mine.deployment.id}),
            "is active; resume_deployment needs a paused deployment",
        ),
        (
            json!({"action": "pause_deployment", "deploymentId": theirs.deployment.id}),
            "is not one of the user's deployments",
        ),
        (
            json!({"action": "pause_deployment", "deploymentId": mine.deployment.id,
                   "flatten": true}),
            "flatten: closing the positions goes with stop_deployment",
        ),
        (
            json!({"action": "stop_deployment"}),
            "deploymentId: stop_deployment needs",
        ),
        (
            json!({"action": "save_skill_version", "skillId": theirs.skill.id,
                   "skill": serde_json::from_str::<Value>(SKILL).unwrap()}),
            "is not one of the user's own skills",
        ),
        (
            json!({"action": "save_skill_version", "skillId": mine.skill.id,
                   "skill": unknown_key}),
            "skill.risk.maxLevrage",
        ),
        (
            json!({"action": "delete_deployment", "deploymentId": mine.deployment.id}),
            "action",
        ),
    ];
    let mut script: Vec<ModelResponse> = refusals
        .iter()
        .enumerate()
        .map(|(i, (args, _))| prepare(&format!("c{i}"), args.clone()))
        .collect();
    script.push(answer("I could not prepare any of those."));
    let model = ScriptedModel::new(script);
    let mut t = turn(user, 41, Vec::new(), "Do things.", now());
    t.max_steps = 10;
    let out = run(store, &model, t).await;
    assert!(out.run.error.is_none(), "{:?}", out.run.error);
    assert!(out.actions.is_empty(), "{:?}", out.actions);
    let calls: Vec<_> = out.run.steps.iter().flat_map(|s| &s.tool_calls).collect();
    assert_eq!(calls.len(), refusals.len());
    for (call, (args, needle)) in calls.iter().zip(&refusals) {
        match &call.outcome {
            ToolOutcome::Error { message, .. } => {
                assert!(
                    message.contains(needle),
                    "{args}: {needle:?} not in {message}"
                );
            }
            ToolOutcome::Ok { .. } => panic!("{args}: prepared"),
        }
    }
    // The draft's problems each come with their path.
    let ToolOutcome::Error { message, .. } = &calls[5].outcome else {
        unreachable!()
    };
    assert!(message.contains("skill.maxSteps"), "{message}");
    assert!(store.actions(user, 10).await.unwrap().is_empty());

    // Read-only refuses it; a turn that ends in error keeps nothing.
    let pause = json!({"action": "pause_deployment", "deploymentId": mine.deployment.id});
    let model = ScriptedModel::new(vec![prepare("c1", pause.clone()), answer("ok")]);
    let mut t = turn(user, 42, Vec::new(), "Pause it.", now());
    t.run_mode = RunMode::ReadOnly;
    let out = run(store, &model, t).await;
    assert!(out.actions.is_empty());
    let model = ScriptedModel::new(vec![prepare("c1", pause)]);
    let out = run(
        store,
        &model,
        turn(user, 43, Vec::new(), "Pause it.", now()),
    )
    .await;
    assert!(out.run.error.is_some());
    assert!(out.actions.is_empty());
    assert!(store.actions(user, 10).await.unwrap().is_empty());
    assert_eq!(
        store
            .get_deployment(mine.deployment.id)
            .await
            .unwrap()
            .status,
        DeploymentStatus::Active
    );
}

async fn a_skill_version_is_saved_only_when_confirmed<S: ChatStore>(store: &S) {
    let fx = db::test_support::seed(store).await.expect("seed");
    let user = fx.user.id;
    let mut draft: Value = serde_json::from_str(SKILL).unwrap();
    draft["risk"]["maxLeverage"] = json!(2);
    let model = ScriptedModel::new(vec![
        prepare(
            "c1",
            json!({"action": "save_skill_version", "skillId": fx.skill.id, "skill": draft}),
        ),
        answer("Prepared."),
    ]);
    // One model call: the turn runs out of steps and says what it prepared.
    let mut t = turn(user, 44, Vec::new(), "Lower the leverage to 2x.", now());
    t.max_steps = 1;
    let out = run(store, &model, t).await;
    assert!(out.out_of_steps);
    let [action] = out.actions.as_slice() else {
        panic!("one action: {:?}", out.actions)
    };
    assert_eq!(
        action.summary,
        "Save skill \"BTC breakout\" as a new version after v1 (model openai/gpt-5)"
    );
    assert!(
        out.answer.contains(
            "prepared \"Save skill \\\"BTC breakout\\\" as a new version after v1 (model \
             openai/gpt-5)\" (nothing changes until you confirm it)"
        ),
        "{}",
        out.answer
    );
    // The draft as the loader read it: defaults filled in.
    assert_eq!(action.arguments["skill"]["risk"]["maxLeverage"], json!(2.0));
    assert_eq!(action.arguments["skill"]["strategy"]["mode"], "rules");
    assert_eq!(
        store
            .latest_skill_version(fx.skill.id)
            .await
            .unwrap()
            .version,
        1
    );
    let done = store
        .confirm_action(user, action.id, now() + chrono::Duration::minutes(1))
        .await
        .unwrap();
    assert_eq!(
        done.result,
        Some(ActionResult::SkillVersion {
            skill_id: fx.skill.id,
            version: 2
        })
    );
    let v2 = store.get_skill_version(fx.skill.id, 2).await.unwrap();
    assert_eq!(v2.model, "openai/gpt-5");
    assert_eq!(v2.body["version"], 2);
    assert_eq!(v2.body["risk"], action.arguments["skill"]["risk"]);
}

#[tokio::test]
async fn sqlite_a_prepared_pause_waits_for_the_user() {
    let store = db::connect("sqlite::memory:").await.unwrap();
    a_prepared_pause_waits_for_the_user(&store).await;
}

#[tokio::test]
async fn postgres_a_prepared_pause_waits_for_the_user() {
    let tdb = TestDatabase::create("agent_chat_test_", 4).await;
    let store = db::connect(&tdb.url()).await.unwrap();
    a_prepared_pause_waits_for_the_user(&store).await;
}

#[tokio::test]
async fn sqlite_refused_actions_go_back_to_the_model() {
    let store = db::connect("sqlite::memory:").await.unwrap();
    what_the_data_does_not_allow_goes_back_to_the_model(&store).await;
}

#[tokio::test]
async fn postgres_refused_actions_go_back_to_the_model() {
    let tdb = TestDatabase::create("agent_chat_test_", 4).await;
    let store = db::connect(&tdb.url()).await.unwrap();
    what_the_data_does_not_allow_goes_back_to_the_model(&store).await;
}

#[tokio::test]
async fn sqlite_a_skill_version_is_saved_only_when_confirmed() {
    let store = db::connect("sqlite::memory:").await.unwrap();
    a_skill_version_is_saved_only_when_confirmed(&store).await;
}

#[tokio::test]
async fn postgres_a_skill_version_is_saved_only_when_confirmed() {
    let tdb = TestDatabase::create("agent_chat_test_", 4).await;
    let store = db::connect(&tdb.url()).await.unwrap();
    a_skill_version_is_saved_only_when_confirmed(&store).await;
}
