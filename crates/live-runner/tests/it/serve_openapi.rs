//! The API's OpenAPI document (`GET /api/openapi.json`): it is served without a token, it
//! validates against the official OpenAPI 3.1 schema (its Schema Objects against JSON Schema
//! 2020-12), and every route answers as it says — one test calls each documented operation for
//! a success and a typical error, through the conformance layer every test server has
//! ([`crate::common::openapi`]), and fails naming any operation or status left unanswered.
//!
//! `tests/fixtures/openapi/oas-3.1-schema-2022-10-07.json` is the OpenAPI Initiative's
//! published JSON Schema of OpenAPI 3.1 documents (`$id`
//! `https://spec.openapis.org/oas/3.1/schema/2022-10-07`), copied unchanged from the PyPI
//! package `openapi-spec-validator` 0.9.0
//! (`openapi_spec_validator/resources/schemas/v3.1/schema.json`); the schema is © the OpenAPI
//! Initiative under the Apache License 2.0, as is the package.

use std::collections::BTreeSet;
use std::sync::Arc;

use agent_runtime::{LanguageModel, ScriptedModel};
use reqwest::StatusCode;
use rust_decimal::Decimal;
use serde_json::{Value, json};

use crate::common::fixture;
use crate::common::openapi::{Hit, document, operations, template_of};
use crate::common::serve::{answer, no_model, server};
use crate::serve_chat::say;
use crate::serve_lessons::held_note;

fn oas_schema() -> Value {
    let path = fixture("openapi/oas-3.1-schema-2022-10-07.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).expect("the OAS 3.1 schema is JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_served_document_validates_against_the_openapi_3_1_schema() {
    let s = server(no_model()).await;
    // Public: no token.
    let r = s
        .http
        .get(s.url("/api/openapi.json"))
        .send()
        .await
        .expect("GET");
    assert_eq!(
        r.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    let (code, doc) = answer(r).await;
    assert_eq!(code, StatusCode::OK, "{doc}");
    assert_eq!(&doc, document());
    if let Ok(out) = std::env::var("OPENAPI_OUT") {
        std::fs::write(&out, serde_json::to_string_pretty(&doc).unwrap()).expect("OPENAPI_OUT");
    }
    assert_eq!(doc["openapi"], "3.1.0");

    let validator = jsonschema::draft202012::options()
        .should_validate_formats(true)
        .build(&oas_schema())
        .expect("the OAS 3.1 schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));

    // The OAS schema leaves Schema Objects to JSON Schema 2020-12: each must be one.
    let schemas = doc["components"]["schemas"].as_object().expect("schemas");
    for (name, schema) in schemas {
        if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
            panic!("components.schemas.{name} is not a JSON Schema 2020-12 schema: {e}");
        }
    }

    // A document that breaks the schema is refused (the check is not vacuous).
    let mut broken = doc.clone();
    broken["paths"]["/api/me"]["get"]["responses"]["200"] = json!({"content": {}});
    assert!(
        !validator.is_valid(&broken),
        "a response without description"
    );
}

/// Every `$ref` of `v`, as JSON paths to where it stands.
fn refs(v: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push((at.to_owned(), r.clone())),
                    _ => refs(v, &format!("{at}.{k}"), out),
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                refs(v, &format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn every_reference_resolves_and_every_operation_has_its_own_id() {
    let doc = document();
    let mut found = Vec::new();
    refs(doc, "$", &mut found);
    assert!(found.len() > 20, "{found:?}");
    for (at, target) in &found {
        let pointer = target
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("{at}: {target} is not a local reference"));
        assert!(
            doc.pointer(pointer).is_some(),
            "{at}: {target} resolves to nothing"
        );
    }
    let mut ids = BTreeSet::new();
    for (path, method) in operations(doc).into_keys() {
        let id = doc["paths"][&path][&method]["operationId"]
            .as_str()
            .unwrap_or_else(|| panic!("{method} {path} has no operationId"));
        assert!(ids.insert(id.to_owned()), "operationId {id} twice");
    }
}

#[test]
fn the_document_says_how_to_authenticate_and_that_amounts_are_strings() {
    let doc = document();
    let schemes = &doc["components"]["securitySchemes"];
    assert_eq!(schemes["bearer"]["type"], "http");
    assert_eq!(schemes["bearer"]["scheme"], "bearer");
    assert_eq!(schemes["cookie"]["type"], "apiKey");
    assert_eq!(schemes["cookie"]["in"], "cookie");
    assert_eq!(schemes["cookie"]["name"], "token");
    assert_eq!(doc["security"], json!([{"bearer": []}, {"cookie": []}]));
    // The document itself is public: an empty requirement.
    assert_eq!(
        doc["paths"]["/api/openapi.json"]["get"]["security"],
        json!([{}])
    );

    // Every error answers the one error body (a chat turn whose model failed answers the turn,
    // 502).
    for ((path, method), statuses) in operations(doc) {
        for status in statuses.iter().filter(|s| (400..=500).contains(*s)) {
            let schema = &doc["paths"][&path][&method]["responses"][status.to_string()]["content"]
                ["application/json"]["schema"];
            assert_eq!(
                schema["$ref"], "#/components/schemas/ErrorBody",
                "{method} {path} {status}"
            );
        }
        if path != "/api/openapi.json" {
            assert!(statuses.contains(&401), "{method} {path} lists no 401");
        }
    }

    // Decimals are strings, and what rust_decimal writes is what the schema accepts.
    let decimal = &doc["components"]["schemas"]["DecimalString"];
    assert_eq!(decimal["type"], "string");
    assert_eq!(
        doc["components"]["schemas"]["WireDeployment"]["properties"]["equityUsd"]["$ref"],
        "#/components/schemas/DecimalString"
    );
    let validator = jsonschema::validator_for(decimal).expect("schema");
    for d in [
        Decimal::new(-12_345, 2),
        Decimal::ZERO,
        Decimal::new(1, 28),
        Decimal::MAX,
    ] {
        let value = serde_json::to_value(d).unwrap();
        assert!(value.is_string(), "{value}");
        assert!(validator.is_valid(&value), "{value}");
    }
    assert!(!validator.is_valid(&json!(1.5)));

    // A body that may be left out is not required, and is the body when sent.
    let body = &doc["paths"]["/api/deployments/{id}/stop"]["post"]["requestBody"];
    assert_eq!(body.get("required"), None, "{body}");
    assert_eq!(
        body["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/ControlBody"
    );
    assert_eq!(
        doc["paths"]["/api/facts"]["post"]["requestBody"]["required"],
        true
    );

    // An answer's fields are always sent (`null` without a value) but for those serde leaves
    // out; a request body's optional fields stay optional.
    let schemas = &doc["components"]["schemas"];
    let required = |schema: &str| -> Vec<String> {
        serde_json::from_value(schemas[schema]["required"].clone()).unwrap_or_default()
    };
    assert!(required("WireDeployment").contains(&"nextTickAt".to_owned()));
    assert!(required("Memory").contains(&"prompt".to_owned()));
    assert!(!required("WireStep").contains(&"cut".to_owned()));
    assert_eq!(required("ErrorBody"), ["error"]);
    // A chat request sends `message` (a kept conversation) or `messages`: neither is required.
    assert!(required("ChatRequest").is_empty());

    // A domain enum's schema lists exactly what it serializes to.
    assert_eq!(
        doc["components"]["schemas"]["DeploymentStatus"]["enum"],
        json!(["active", "paused", "stopped"])
    );
}

#[test]
fn paths_match_their_templates_literal_segments_first() {
    let doc = document();
    let id = uuid::Uuid::new_v4();
    assert_eq!(
        template_of(doc, "/api/lessons/held").as_deref(),
        Some("/api/lessons/held")
    );
    assert_eq!(
        template_of(doc, &format!("/api/lessons/{id}/accept")).as_deref(),
        Some("/api/lessons/{id}/accept")
    );
    assert_eq!(
        template_of(doc, &format!("/api/facts/{id}")).as_deref(),
        Some("/api/facts/{id}")
    );
    assert_eq!(template_of(doc, "/api/nothing"), None);
}

/// Calls every documented operation for a success and a typical error, then checks that each
/// one answered a 2xx and (where it lists any) a 4xx — all of it through the conformance layer,
/// which fails the test on any answer the document does not describe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_a_success_and_an_error_as_documented() {
    // A JSON turn, a streamed turn; then the script is exhausted and a turn fails (502).
    let model = Arc::new(ScriptedModel::new(vec![say("Hello."), say("Streamed.")]));
    let s = server(model as Arc<dyn LanguageModel>).await;
    let w = crate::common::serve::world(&s).await;
    let (a, b) = (&w.a, &w.b);
    let t = &a.token;
    let (_, held) = held_note(&s.store, &a.fx, 100, &["- one", "- two"]).await;
    let other = uuid::Uuid::new_v4();

    let expect = |what: &str, got: (StatusCode, Value), want: StatusCode| {
        assert_eq!(got.0, want, "{what}: {}", got.1);
    };

    // The document itself.
    let r = s.http.get(s.url("/api/openapi.json")).send().await.unwrap();
    expect("openapi.json", answer(r).await, StatusCode::OK);

    // Me.
    expect("me", s.get("/api/me", t).await, StatusCode::OK);
    expect(
        "me without a token",
        s.get("/api/me", "not-a-token").await,
        StatusCode::UNAUTHORIZED,
    );

    // Chat: JSON, a stream, a failed model, a bad body, another user's deployment.
    let turn = json!({"messages": [{"role": "user", "content": "Hi"}]});
    expect("chat", s.post("/api/chat", t, &turn).await, StatusCode::OK);
    let r = s
        .http
        .post(s.url("/api/chat"))
        .bearer_auth(t)
        .header("accept", "text/event-stream")
        .json(&turn)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let text = r.text().await.unwrap();
    assert!(text.contains("event: answer"), "{text}");
    expect(
        "chat with the model failing",
        s.post("/api/chat", t, &turn).await,
        StatusCode::BAD_GATEWAY,
    );
    expect(
        "chat without messages",
        s.post("/api/chat", t, &json!({"messages": []})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    );
    expect(
        "chat about another user's deployment",
        s.post(
            "/api/chat",
            t,
            &json!({
                "messages": [{"role": "user", "content": "Hi"}],
                "deploymentId": b.deployment(),
            }),
        )
        .await,
        StatusCode::NOT_FOUND,
    );

    // Kept conversations: one of the caller's listed, read and deleted; another user's is a
    // 404.
    let kept = db::NewConversation {
        id: uuid::Uuid::new_v4(),
        user_id: a.user(),
        mode: "coach".into(),
        deployment_id: None,
        title: "Hi".into(),
        at: chrono::Utc::now(),
    };
    db::ConversationStore::start_conversation(&s.store, &kept)
        .await
        .unwrap();
    let path = format!("/api/conversations/{}", kept.id);
    expect(
        "conversations",
        s.get("/api/conversations", t).await,
        StatusCode::OK,
    );
    expect(
        "conversations without a token",
        s.get("/api/conversations", "not-a-token").await,
        StatusCode::UNAUTHORIZED,
    );
    expect("a conversation", s.get(&path, t).await, StatusCode::OK);
    expect(
        "another user's conversation",
        s.get(&path, &b.token).await,
        StatusCode::NOT_FOUND,
    );
    let delete = reqwest::Method::DELETE;
    expect(
        "deleting another user's conversation",
        s.send(delete.clone(), &path, &b.token, &json!({})).await,
        StatusCode::NOT_FOUND,
    );
    expect(
        "deleting a conversation",
        s.send(delete, &path, t, &json!({})).await,
        StatusCode::NO_CONTENT,
    );

    // Facts.
    expect(
        "facts",
        s.get("/api/facts?archived=true", t).await,
        StatusCode::OK,
    );
    expect(
        "facts with a bad query",
        s.get("/api/facts?archived=maybe", t).await,
        StatusCode::BAD_REQUEST,
    );
    let (code, fact) = s
        .post(
            "/api/facts",
            t,
            &json!({"fact": "Prefers swing trades.", "topic": "style"}),
        )
        .await;
    assert_eq!(code, StatusCode::CREATED, "{fact}");
    let fact_id = fact["id"].as_str().unwrap().to_owned();
    expect(
        "a fact too short",
        s.post("/api/facts", t, &json!({"fact": "x"})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    );
    let r = s
        .http
        .post(s.url("/api/facts"))
        .bearer_auth(t)
        .body("{}")
        .send()
        .await
        .unwrap();
    expect(
        "a fact not sent as JSON",
        answer(r).await,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
    );
    expect(
        "edit",
        s.patch(&format!("/api/facts/{fact_id}"), t, &json!({"topic": null}))
            .await,
        StatusCode::OK,
    );
    expect(
        "edit another user's fact",
        s.patch(
            &format!("/api/facts/{}", b.fact.id),
            t,
            &json!({"confidence": "inferred"}),
        )
        .await,
        StatusCode::NOT_FOUND,
    );
    expect(
        "changes",
        s.get(&format!("/api/facts/{fact_id}/changes"), t).await,
        StatusCode::OK,
    );
    expect(
        "changes of another user's fact",
        s.get(&format!("/api/facts/{}/changes", b.fact.id), t).await,
        StatusCode::NOT_FOUND,
    );
    expect(
        "archive",
        s.post(
            &format!("/api/facts/{fact_id}/archive"),
            t,
            &json!({"reason": "user_deleted"}),
        )
        .await,
        StatusCode::OK,
    );
    expect(
        "archive an unknown fact",
        s.post(
            &format!("/api/facts/{other}/archive"),
            t,
            &json!({"reason": "user_deleted"}),
        )
        .await,
        StatusCode::NOT_FOUND,
    );

    // The actions the coach prepared: listed, confirmed (a skill version: the deployment's
    // controls below stay as they are), discarded; another user's is a 404, a decided one a 409.
    let prepared = |kind| db::test_support::sample_pending_action(&a.fx, kind, chrono::Utc::now());
    let save = prepared(db::ActionKind::SaveSkillVersion);
    let pause = prepared(db::ActionKind::PauseDeployment);
    for action in [&save, &pause] {
        db::ActionStore::create_pending_action(&s.store, action)
            .await
            .unwrap();
    }
    expect("actions", s.get("/api/actions", t).await, StatusCode::OK);
    expect(
        "actions without a token",
        s.get("/api/actions", "not-a-token").await,
        StatusCode::UNAUTHORIZED,
    );
    expect(
        "confirm another user's action",
        s.post_empty(&format!("/api/actions/{}/confirm", save.id), &b.token)
            .await,
        StatusCode::NOT_FOUND,
    );
    expect(
        "confirm",
        s.post_empty(&format!("/api/actions/{}/confirm", save.id), t)
            .await,
        StatusCode::OK,
    );
    expect(
        "confirm again",
        s.post_empty(&format!("/api/actions/{}/confirm", save.id), t)
            .await,
        StatusCode::CONFLICT,
    );
    expect(
        "discard an unknown action",
        s.post_empty(&format!("/api/actions/{other}/discard"), t)
            .await,
        StatusCode::NOT_FOUND,
    );
    expect(
        "discard",
        s.post_empty(&format!("/api/actions/{}/discard", pause.id), t)
            .await,
        StatusCode::OK,
    );
    expect(
        "discard again",
        s.post_empty(&format!("/api/actions/{}/discard", pause.id), t)
            .await,
        StatusCode::CONFLICT,
    );
    expect(
        "history",
        s.get("/api/actions/history", t).await,
        StatusCode::OK,
    );
    expect(
        "history without a token",
        s.get("/api/actions/history", "").await,
        StatusCode::UNAUTHORIZED,
    );

    // Deployments, memory and controls.
    expect(
        "deployments",
        s.get("/api/deployments", t).await,
        StatusCode::OK,
    );
    expect(
        "deployments without a token",
        s.get("/api/deployments", "").await,
        StatusCode::UNAUTHORIZED,
    );
    let d = format!("/api/deployments/{}", a.deployment());
    expect(
        "memory",
        s.get(&format!("{d}/memory"), t).await,
        StatusCode::OK,
    );
    expect(
        "memory of another user's deployment",
        s.get(&format!("/api/deployments/{}/memory", b.deployment()), t)
            .await,
        StatusCode::NOT_FOUND,
    );
    expect(
        "resume an active deployment",
        s.post(&format!("{d}/resume"), t, &json!({})).await,
        StatusCode::CONFLICT,
    );
    expect(
        "pause",
        s.post(&format!("{d}/pause"), t, &json!({"reason": "lunch"}))
            .await,
        StatusCode::OK,
    );
    expect(
        "pause with flatten",
        s.post(&format!("{d}/pause"), t, &json!({"flatten": true}))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    );
    expect(
        "resume",
        s.post(&format!("{d}/resume"), t, &json!({})).await,
        StatusCode::OK,
    );
    expect(
        "controls",
        s.get(&format!("{d}/controls"), t).await,
        StatusCode::OK,
    );
    expect(
        "controls of a malformed id",
        s.get("/api/deployments/not-a-uuid/controls", t).await,
        StatusCode::BAD_REQUEST,
    );
    let r = s
        .http
        .post(s.url(&format!("{d}/stop")))
        .header("cookie", format!("token={t}"))
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    expect(
        "stop from another origin",
        answer(r).await,
        StatusCode::FORBIDDEN,
    );
    expect(
        "stop",
        s.post(&format!("{d}/stop"), t, &json!({"flatten": true}))
            .await,
        StatusCode::OK,
    );
    expect(
        "stop again",
        s.post(&format!("{d}/stop"), t, &json!({})).await,
        StatusCode::CONFLICT,
    );

    // The review queue.
    expect("held", s.get("/api/lessons/held", t).await, StatusCode::OK);
    expect(
        "held with a bad status",
        s.get("/api/lessons/held?status=open", t).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    );
    expect(
        "accept",
        s.post(&format!("/api/lessons/{}/accept", held[0]), t, &json!({}))
            .await,
        StatusCode::OK,
    );
    expect(
        "accept again",
        s.post(&format!("/api/lessons/{}/accept", held[0]), t, &json!({}))
            .await,
        StatusCode::CONFLICT,
    );
    expect(
        "reject",
        s.post(
            &format!("/api/lessons/{}/reject", held[1]),
            t,
            &json!({"reason": "names a level"}),
        )
        .await,
        StatusCode::OK,
    );
    expect(
        "reject an unknown lesson",
        s.post(&format!("/api/lessons/{other}/reject"), t, &json!({}))
            .await,
        StatusCode::NOT_FOUND,
    );

    // Alert channels: add one (and a bad one), list, test, the deliveries, delete (twice).
    let (status, channel) = s
        .post(
            "/api/alerts/channels",
            t,
            &json!({"name": "hook", "kind": "webhook", "url": "http://127.0.0.1:9/hook",
                    "secret": "s3cret-key", "events": ["order_executed", "halt"]}),
        )
        .await;
    expect(
        "add a channel",
        (status, channel.clone()),
        StatusCode::CREATED,
    );
    let channel = channel["id"].as_str().unwrap().to_owned();
    expect(
        "add a channel of no kind",
        s.post(
            "/api/alerts/channels",
            t,
            &json!({"name": "x", "kind": "pigeon", "events": ["halt"]}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    );
    expect(
        "channels",
        s.get("/api/alerts/channels", t).await,
        StatusCode::OK,
    );
    expect(
        "test a channel",
        s.post(
            &format!("/api/alerts/channels/{channel}/test"),
            t,
            &json!({}),
        )
        .await,
        StatusCode::ACCEPTED,
    );
    expect(
        "test another user's channel",
        s.post(&format!("/api/alerts/channels/{other}/test"), t, &json!({}))
            .await,
        StatusCode::NOT_FOUND,
    );
    expect(
        "deliveries",
        s.get("/api/alerts/deliveries", t).await,
        StatusCode::OK,
    );
    for path in ["/api/alerts/channels", "/api/alerts/deliveries"] {
        expect(
            "alerts without a token",
            s.get(path, "not-a-token").await,
            StatusCode::UNAUTHORIZED,
        );
    }
    for (what, want) in [
        ("delete a channel", StatusCode::NO_CONTENT),
        ("delete it again", StatusCode::NOT_FOUND),
    ] {
        let r = s
            .http
            .delete(s.url(&format!("/api/alerts/channels/{channel}")))
            .bearer_auth(t)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), want, "{what}");
    }

    // Backtests: submit (and a bad one), list, read (and another user's).
    let backtest = json!({
        "skill": std::fs::read_to_string(crate::common::repo(
            "examples/skills/eurusd-sma-cross.yaml"
        ))
        .unwrap(),
        "bars": {"EURUSD": {"format": "csv", "data":
            ",Open,High,Low,Close,Volume\n2017-04-19 09:00:00,1,1,1,1,1\n\
             2017-04-19 10:00:00,1,1,1,1,1\n"}},
    });
    let (status, job) = s.post("/api/backtests", t, &backtest).await;
    expect(
        "submit a backtest",
        (status, job.clone()),
        StatusCode::CREATED,
    );
    expect(
        "submit a backtest without bars",
        s.post(
            "/api/backtests",
            t,
            &json!({"skill": "name: x", "bars": {}}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    );
    expect(
        "backtests",
        s.get("/api/backtests", t).await,
        StatusCode::OK,
    );
    expect(
        "backtests without a token",
        s.get("/api/backtests", "not-a-token").await,
        StatusCode::UNAUTHORIZED,
    );
    let job = format!("/api/backtests/{}", job["id"].as_str().unwrap());
    expect("a backtest", s.get(&job, t).await, StatusCode::OK);
    expect(
        "another user's backtest",
        s.get(&job, &b.token).await,
        StatusCode::NOT_FOUND,
    );

    s.conformance.assert_clean();
    let hits = s.conformance.hits();
    let mut missing = Vec::new();
    for ((path, method), statuses) in operations(document()) {
        let answered: BTreeSet<u16> = hits
            .iter()
            .filter(|h: &&Hit| h.path == path && h.method == method)
            .map(|h| h.status)
            .collect();
        if !answered.iter().any(|s| (200..300).contains(s)) {
            missing.push(format!("{method} {path}: no success answered"));
        }
        if statuses.iter().any(|s| (400..500).contains(s))
            && !answered.iter().any(|s| (400..500).contains(s))
        {
            missing.push(format!("{method} {path}: no error answered"));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

/// The layer itself: an answer the document does not describe is a violation naming its route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_the_document_does_not_describe_is_named() {
    let s = server(no_model()).await;
    let w = crate::common::serve::world(&s).await;
    // `DELETE /api/me` is no operation of the document: axum's 405 is not an answer of a
    // route, and the server's JSON 404 for an unknown path is not either.
    let r = s
        .http
        .delete(s.url("/api/me"))
        .bearer_auth(&w.a.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    let (code, _) = s.get("/api/no-such-thing", &w.a.token).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    s.conformance.assert_clean();

    // What the layer reports, for a route and a status the document lacks.
    let conformance = crate::common::openapi::Conformance::default();
    conformance.check_json("GET", "/api/me", 418, r#"{"error":"teapot"}"#);
    conformance.check_json("GET", "/api/unlisted", 200, "{}");
    conformance.check_json("GET", "/api/me", 200, r#"{"userId":"not-a-uuid"}"#);
    let v = conformance.violations();
    assert_eq!(v.len(), 3, "{v:?}");
    assert!(
        v[0].contains("GET /api/me") && v[0].contains("418"),
        "{v:?}"
    );
    assert!(v[1].contains("GET /api/unlisted"), "{v:?}");
    assert!(v[2].contains("userId"), "{v:?}");
}
