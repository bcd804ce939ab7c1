//! The chat server's page security through real HTTP on PostgreSQL, one test per probe: every
//! state change the cookie can authenticate refuses another origin (another port of this host
//! included) and changes nothing; a token in the login URL logs no one in and the login form
//! refuses another origin; every answer carries the security headers; a control character in
//! any text field is a 422 naming it with nothing stored; a token not valid yet (`nbf`) or
//! valid until the year 3000 is a 401; the cookie is `Secure` with `secure_cookies`.

use chrono::{DateTime, Duration, Utc};
use db::{ControlStore, FactStore, RegistryStore};
use live_runner::serve::headers::HEADERS;
use reqwest::header::{CACHE_CONTROL, CONTENT_TYPE, COOKIE, SET_COOKIE};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::common::serve::{Server, World, answer, no_model, server, server_with, world};

/// A client that does not follow redirects (the tests read them).
fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// An origin on another port of the server's host: the same site, not the same origin.
fn other_port(s: &Server) -> String {
    let port: u16 = s.base.rsplit(':').next().unwrap().parse().unwrap();
    format!("http://127.0.0.1:{}", if port == 1 { 2 } else { port - 1 })
}

/// What a request sends.
#[derive(Debug, Clone)]
enum Body {
    /// A page's form.
    Form(Vec<(&'static str, String)>),
    /// An API body.
    Json(Value),
}

/// A request: method, path, body.
type Call = (Method, String, Body);

/// Every route that changes state and accepts the `token` cookie: the pages' forms (login and
/// logout included) and the API's POST / PATCH routes, each with a body it would accept.
fn state_changes(w: &World) -> Vec<Call> {
    let (fact, dep) = (w.a.fact.id, w.a.deployment());
    let form = |pairs: &[(&'static str, &str)]| {
        Body::Form(pairs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect())
    };
    let mut calls = vec![
        (
            Method::POST,
            "/login".into(),
            form(&[("token", &w.b.token)]),
        ),
        (Method::POST, "/logout".into(), form(&[])),
        (
            Method::POST,
            "/profile/facts".into(),
            form(&[("fact", "Planted by another origin."), ("topic", "csrf")]),
        ),
        (
            Method::POST,
            format!("/profile/facts/{fact}/edit"),
            form(&[("fact", "Rewritten by another origin."), ("topic", "")]),
        ),
        (
            Method::POST,
            format!("/profile/facts/{fact}/confidence"),
            form(&[("confidence", "inferred")]),
        ),
        (
            Method::POST,
            format!("/profile/facts/{fact}/archive"),
            form(&[("reason", "user_deleted")]),
        ),
        (
            Method::POST,
            format!("/deployments/{dep}/pause"),
            form(&[("reason", "csrf")]),
        ),
        (
            Method::POST,
            format!("/deployments/{dep}/resume"),
            form(&[]),
        ),
        (
            Method::POST,
            format!("/deployments/{dep}/stop"),
            form(&[("flatten", "on")]),
        ),
        (
            Method::POST,
            "/api/chat".into(),
            Body::Json(json!({"messages": [{"role": "user", "content": "remember I love 50x"}]})),
        ),
        (
            Method::POST,
            "/api/facts".into(),
            Body::Json(json!({"fact": "Planted by another origin."})),
        ),
        (
            Method::PATCH,
            format!("/api/facts/{fact}"),
            Body::Json(json!({"fact": "Rewritten by another origin."})),
        ),
        (
            Method::POST,
            format!("/api/facts/{fact}/archive"),
            Body::Json(json!({"reason": "user_deleted"})),
        ),
        (
            Method::POST,
            format!("/api/deployments/{dep}/pause"),
            Body::Json(json!({})),
        ),
        (
            Method::POST,
            format!("/api/deployments/{dep}/resume"),
            Body::Json(json!({})),
        ),
        (
            Method::POST,
            format!("/api/deployments/{dep}/stop"),
            Body::Json(json!({"flatten": true})),
        ),
    ];
    // The review queue, the alert channels and the kept conversations, pages and API. Ids need
    // not exist: the guard refuses before a handler reads them.
    let any = Uuid::new_v4();
    let channel = json!({"name": "planted", "kind": "webhook", "url": "http://127.0.0.1:9/x",
                         "secret": "planted-secret", "events": ["halt"]});
    calls.extend([
        (Method::POST, format!("/lessons/{any}/accept"), form(&[])),
        (Method::POST, format!("/lessons/{any}/reject"), form(&[])),
        (
            Method::POST,
            "/alerts/channels".into(),
            form(&[
                ("name", "planted"),
                ("kind", "slack"),
                ("url", "http://127.0.0.1:9/x"),
                ("event", "halt"),
            ]),
        ),
        (
            Method::POST,
            format!("/alerts/channels/{any}/test"),
            form(&[]),
        ),
        (
            Method::POST,
            format!("/alerts/channels/{any}/delete"),
            form(&[]),
        ),
        (
            Method::POST,
            format!("/api/lessons/{any}/accept"),
            Body::Json(json!({})),
        ),
        (
            Method::POST,
            format!("/api/lessons/{any}/reject"),
            Body::Json(json!({})),
        ),
        (
            Method::POST,
            "/api/alerts/channels".into(),
            Body::Json(channel),
        ),
        (
            Method::POST,
            format!("/api/alerts/channels/{any}/test"),
            Body::Json(json!({})),
        ),
        (
            Method::DELETE,
            format!("/api/alerts/channels/{any}"),
            Body::Json(json!({})),
        ),
        (
            Method::DELETE,
            format!("/api/conversations/{any}"),
            Body::Json(json!({})),
        ),
        (
            Method::POST,
            "/api/backtests".into(),
            Body::Json(json!({
                "skill": std::fs::read_to_string(crate::common::repo(
                    "examples/skills/eurusd-sma-cross.yaml"
                ))
                .unwrap(),
                "bars": {"EURUSD": {"format": "csv", "data":
                    ",Open,High,Low,Close,Volume\n2017-04-19 09:00:00,1,1,1,1,1\n\
                     2017-04-19 10:00:00,1,1,1,1,1\n"}},
            })),
        ),
    ]);
    // The chat page: a turn started, A's conversation (see `probe_conversation`) continued or
    // deleted.
    let conversation = probe_conversation(w);
    calls.extend([
        (
            Method::POST,
            "/chat".into(),
            form(&[("message", "remember I love 50x"), ("mode", "coach")]),
        ),
        (
            Method::POST,
            format!("/chat/{conversation}/messages"),
            form(&[("message", "remember I love 50x")]),
        ),
        (
            Method::POST,
            format!("/chat/{conversation}/delete"),
            form(&[]),
        ),
    ]);
    // The actions the coach prepared: A's pending pause (where a test keeps it, see
    // `probe_action`), confirmed or discarded from another origin, by the API or the page.
    let action = probe_action(w);
    calls.extend([
        (
            Method::POST,
            format!("/chat/actions/{action}/confirm"),
            form(&[]),
        ),
        (
            Method::POST,
            format!("/chat/actions/{action}/discard"),
            form(&[]),
        ),
        (
            Method::POST,
            format!("/api/actions/{action}/confirm"),
            Body::Json(json!({})),
        ),
        (
            Method::POST,
            format!("/api/actions/{action}/discard"),
            Body::Json(json!({})),
        ),
    ]);
    calls
}

/// The id of user A's pending pause the cross-origin probe tries to confirm.
fn probe_action(w: &World) -> Uuid {
    Uuid::new_v5(&w.a.user(), b"cross-origin probe")
}

/// The id of user A's kept conversation the cross-origin probe tries to continue and delete.
fn probe_conversation(w: &World) -> Uuid {
    Uuid::new_v5(&w.a.user(), b"cross-origin probe conversation")
}

/// Sends `call` with the `token` cookie (no `Authorization`) and `headers`.
async fn send_cookie(
    s: &Server,
    (method, path, body): &Call,
    token: &str,
    headers: &[(&str, String)],
) -> reqwest::Response {
    let mut r = http()
        .request(method.clone(), s.url(path))
        .header(COOKIE, format!("token={token}"));
    r = match body {
        Body::Form(pairs) => r.form(pairs),
        Body::Json(v) => r.json(v),
    };
    for (k, v) in headers {
        r = r.header(*k, v.as_str());
    }
    r.send().await.expect("request")
}

/// What user A has that a state change could alter: their facts (text, topic, confidence,
/// archived), their audit trails, their deployment's status and controls, their chat turns.
async fn state_of(s: &Server, w: &World) -> String {
    let facts = s.store.list_facts(w.a.user(), true).await.unwrap();
    let mut changes = 0;
    for f in &facts {
        changes += s.store.fact_changes(f.id).await.unwrap().len();
    }
    let dep = s.store.get_deployment(w.a.deployment()).await.unwrap();
    let controls = s
        .store
        .deployment_controls(w.a.deployment(), 100)
        .await
        .unwrap()
        .len();
    let turns =
        s.pg.count(&format!(
            "SELECT count(*) FROM chat_turns WHERE user_id = '{}'",
            w.a.user()
        ))
        .await;
    let count = |table: &str| {
        format!(
            "SELECT count(*) FROM {table} WHERE user_id = '{}'",
            w.a.user()
        )
    };
    let (channels, conversations, backtests) = (
        s.pg.count(&count("alert_channels")).await,
        s.pg.count(&count("chat_conversations")).await,
        s.pg.count(&count("backtest_jobs")).await,
    );
    let pending_actions =
        s.pg.count(&format!(
            "SELECT count(*) FROM pending_actions WHERE user_id = '{}' AND status = 'pending'",
            w.a.user()
        ))
        .await;
    let facts: Vec<_> = facts
        .iter()
        .map(|f| (f.id, &f.fact, &f.topic, f.confidence, f.archived_at))
        .collect();
    format!(
        "{facts:?} changes={changes} status={:?} controls={controls} turns={turns} \
         channels={channels} conversations={conversations} pending_actions={pending_actions} \
         backtests={backtests}",
        dep.status
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_state_change_the_cookie_can_make_refuses_another_origin() {
    let s = server(no_model()).await;
    let w = world(&s).await;
    let other = other_port(&s);
    let pause = db::NewPendingAction {
        id: probe_action(&w),
        ..db::test_support::sample_pending_action(
            &w.a.fx,
            db::ActionKind::PauseDeployment,
            Utc::now(),
        )
    };
    db::ActionStore::create_pending_action(&s.store, &pause)
        .await
        .unwrap();
    db::ConversationStore::start_conversation(
        &s.store,
        &db::NewConversation {
            id: probe_conversation(&w),
            user_id: w.a.user(),
            mode: "coach".into(),
            deployment_id: None,
            title: "Kept".into(),
            at: Utc::now(),
        },
    )
    .await
    .unwrap();
    let before = state_of(&s, &w).await;
    assert!(before.contains("status=Active"), "{before}");
    assert!(before.contains("pending_actions=1"), "{before}");
    assert!(before.contains("conversations=1"), "{before}");

    let attacks: Vec<Vec<(&str, String)>> = vec![
        // A page on another port of this host: the same site, another origin.
        vec![
            ("origin", other.clone()),
            ("sec-fetch-site", "same-site".into()),
        ],
        vec![("origin", other.clone())],
        vec![("sec-fetch-site", "same-site".into())],
        // Another site.
        vec![
            ("origin", "http://evil.example".into()),
            ("sec-fetch-site", "cross-site".into()),
        ],
        vec![("sec-fetch-site", "cross-site".into())],
        vec![("origin", "null".into())],
        // A sandboxed frame or a data: URL of another site.
        vec![
            ("origin", "null".into()),
            ("sec-fetch-site", "cross-site".into()),
        ],
    ];
    for call in state_changes(&w) {
        for headers in &attacks {
            let r = send_cookie(&s, &call, &w.a.token, headers).await;
            let what = format!("{} {} {headers:?}", call.0, call.1);
            assert_eq!(r.status(), StatusCode::FORBIDDEN, "{what}");
            assert!(
                r.headers().get(SET_COOKIE).is_none(),
                "{what}: a cookie was set"
            );
            let (_, body) = answer(r).await;
            assert!(
                body["error"]
                    .as_str()
                    .unwrap()
                    .contains("from another origin is refused"),
                "{what}: {body}"
            );
        }
    }
    assert_eq!(state_of(&s, &w).await, before, "nothing changed");

    // The same requests from the server's own origin go through (the guard is what refused
    // them): one page change and one API change, as a browser sends them.
    let own = vec![
        ("origin", s.base.clone()),
        ("sec-fetch-site", "same-origin".into()),
    ];
    let calls = state_changes(&w);
    let pause_page = calls.iter().find(|c| c.1.ends_with("/pause")).unwrap();
    // As Chromium posts this server's own forms: its pages' `Referrer-Policy: no-referrer`
    // makes the Origin `null`, and `Sec-Fetch-Site` says same-origin.
    let chromium = vec![
        ("origin", "null".to_owned()),
        ("sec-fetch-site", "same-origin".to_owned()),
    ];
    let r = send_cookie(&s, pause_page, &w.a.token, &chromium).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let add_api = calls.iter().find(|c| c.1 == "/api/facts").unwrap();
    let r = send_cookie(&s, add_api, &w.a.token, &own).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let after = state_of(&s, &w).await;
    assert!(
        after.contains("status=Paused") && after.contains("Planted"),
        "{after}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_in_the_login_url_logs_no_one_in_and_login_refuses_another_origin() {
    let s = server(no_model()).await;
    let w = world(&s).await;
    let token = &w.a.token;

    // GET /login?token=… (the old login link): refused, nothing set, the token not echoed.
    let r = http()
        .get(s.url(&format!("/login?token={token}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r.headers().get(SET_COOKIE).is_none());
    let body = r.text().await.unwrap();
    assert!(body.contains("a token in the address is refused"), "{body}");
    assert!(!body.contains(token.as_str()), "the token is echoed");
    assert!(body.contains(r#"<form method="post" action="/login">"#));

    // Login CSRF: another origin posting the form is refused before the token is read.
    for headers in [
        vec![("origin", other_port(&s))],
        vec![("origin", "http://evil.example".to_owned())],
        vec![("sec-fetch-site", "cross-site".to_owned())],
        vec![("sec-fetch-site", "same-site".to_owned())],
    ] {
        let mut r = http().post(s.url("/login")).form(&[("token", token)]);
        for (k, v) in &headers {
            r = r.header(*k, v.as_str());
        }
        let r = r.send().await.unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{headers:?}");
        assert!(r.headers().get(SET_COOKIE).is_none(), "{headers:?}");
    }

    // The form from the server's own origin logs in.
    let r = http()
        .post(s.url("/login"))
        .header("origin", s.base.as_str())
        .header("sec-fetch-site", "same-origin")
        .form(&[("token", token)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let cookie = r.headers().get(SET_COOKIE).unwrap().to_str().unwrap();
    assert!(cookie.starts_with(&format!("token={token};")), "{cookie}");
}

/// Checks that `r` carries every security header, naming `what`.
fn assert_security_headers(r: &reqwest::Response, what: &str) {
    for (name, value) in HEADERS {
        assert_eq!(
            r.headers().get(name).and_then(|v| v.to_str().ok()),
            Some(value),
            "{what}: header {name}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_carries_the_security_headers() {
    let s = server(no_model()).await;
    let w = world(&s).await;
    let (fact, dep) = (w.a.fact.id, w.a.deployment());

    // The policy itself: no script, no inline style, no framing.
    let (_, csp) = HEADERS[0];
    assert!(csp.contains("default-src 'none'") && csp.contains("style-src 'self'"));
    assert!(csp.contains("frame-ancestors 'none'") && csp.contains("form-action 'self'"));
    assert!(!csp.contains("unsafe-inline") && !csp.contains("script-src"));

    // Every GET route, with and without a token (pages, redirects, 401, 404, the stylesheet).
    let gets = [
        "/".to_owned(),
        "/healthz".into(),
        "/static/pages.css".into(),
        "/login".into(),
        "/login?token=x".into(),
        "/profile/facts".into(),
        "/profile/facts?archived=true".into(),
        format!("/deployments/{dep}/memory"),
        format!("/deployments/{}/memory", w.b.deployment()),
        "/api/me".into(),
        "/api/facts".into(),
        "/api/facts?archived=true".into(),
        format!("/api/facts/{fact}/changes"),
        "/api/deployments".into(),
        format!("/api/deployments/{dep}/memory"),
        format!("/api/deployments/{dep}/controls"),
        "/api/actions".into(),
        "/api/actions/history".into(),
        "/chat".into(),
        "/chat?done=paused".into(),
        format!("/chat/{}", Uuid::new_v4()),
        "/chat/not-an-id".into(),
        "/api/backtests".into(),
        format!("/api/backtests/{}", uuid::Uuid::nil()),
        "/backtests".into(),
        format!("/backtests/{}/report", uuid::Uuid::nil()),
        format!("/backtests/{}/report.css", uuid::Uuid::nil()),
        "/api/nothing-here".into(),
        "/nothing-here".into(),
    ];
    let mut statuses = std::collections::BTreeSet::new();
    for path in &gets {
        for auth in [None, Some(&w.a.token)] {
            let mut r = http().get(s.url(path));
            if let Some(token) = auth {
                r = r
                    .header(COOKIE, format!("token={token}"))
                    .bearer_auth(token);
            }
            let r = r.send().await.unwrap();
            let what = format!("GET {path} (token: {})", auth.is_some());
            assert_security_headers(&r, &what);
            statuses.insert(r.status().as_u16());
            let cache = r.headers().get(CACHE_CONTROL).unwrap().to_str().unwrap();
            if path == "/static/pages.css" {
                assert_eq!(
                    r.headers().get(CONTENT_TYPE).unwrap(),
                    "text/css; charset=utf-8"
                );
                assert!(cache.starts_with("public"), "{cache}");
                assert!(r.text().await.unwrap().contains("header {"));
            } else {
                assert_eq!(cache, "no-store", "{what}");
            }
        }
    }
    // Every state change: answered (201, 200, 303, 409, 422, 403, 502), each with the headers.
    let own = vec![("origin", s.base.clone())];
    for call in state_changes(&w) {
        for headers in [own.clone(), vec![("origin", other_port(&s))]] {
            let r = send_cookie(&s, &call, &w.a.token, &headers).await;
            assert_security_headers(&r, &format!("{} {} {headers:?}", call.0, call.1));
            statuses.insert(r.status().as_u16());
        }
    }
    // The chat turn as server-sent events (the model fails: the stream says so).
    let r = http()
        .post(s.url("/api/chat"))
        .bearer_auth(&w.b.token)
        .header("accept", "text/event-stream")
        .json(&json!({"messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_security_headers(&r, "POST /api/chat (event stream)");
    // A bad body.
    let r = http()
        .post(s.url("/api/facts"))
        .bearer_auth(&w.b.token)
        .json(&json!({"fact": 1}))
        .send()
        .await
        .unwrap();
    assert_security_headers(&r, "POST /api/facts (bad body)");
    statuses.insert(r.status().as_u16());
    for status in [200, 201, 303, 400, 401, 403, 404, 422] {
        assert!(
            statuses.contains(&status),
            "no answer {status} among {statuses:?}"
        );
    }
}

/// A page form's path, its fields, and the field the refusal must name.
type FormProbe = (String, Vec<(&'static str, &'static str)>, &'static str);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_character_in_any_text_field_is_a_422_naming_it_and_nothing_is_stored() {
    let s = server(no_model()).await;
    let w = world(&s).await;
    let (fact, dep) = (w.a.fact.id, w.a.deployment());
    let before = state_of(&s, &w).await;

    // The API: every text field of every body, each named.
    let probes: Vec<(Method, String, Value, &str)> = vec![
        (
            Method::POST,
            "/api/facts".into(),
            json!({"fact": "I never\u{0} trade alts."}),
            "fact",
        ),
        (
            Method::POST,
            "/api/facts".into(),
            json!({"fact": "I never trade alts.", "topic": "ri\nsk"}),
            "topic",
        ),
        (
            Method::POST,
            "/api/facts".into(),
            json!({"fact": "I never trade alts.", "topic": "risk\u{0}"}),
            "topic",
        ),
        (
            Method::PATCH,
            format!("/api/facts/{fact}"),
            json!({"fact": "bell\u{7} in a fact"}),
            "fact",
        ),
        (
            Method::PATCH,
            format!("/api/facts/{fact}"),
            json!({"topic": "a\tb"}),
            "topic",
        ),
        (
            Method::POST,
            "/api/chat".into(),
            json!({"messages": [{"role": "user", "content": "hello"},
                {"role": "assistant", "content": "hi\u{1b}[31m"},
                {"role": "user", "content": "again"}]}),
            "messages[1].content",
        ),
        (
            Method::POST,
            format!("/api/deployments/{dep}/pause"),
            json!({"reason": "CPI\u{0}"}),
            "reason",
        ),
        (
            Method::POST,
            format!("/api/deployments/{dep}/stop"),
            json!({"reason": "two\nlines"}),
            "reason",
        ),
    ];
    for (method, path, body, field) in probes {
        let (status, answer) = s.send(method.clone(), &path, &w.a.token, &body).await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{method} {path}: {answer}"
        );
        assert_eq!(answer["field"], field, "{method} {path}: {answer}");
        assert!(
            answer["error"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{field}: a control character (U+")),
            "{answer}"
        );
    }

    // The pages: each form's text fields, the message on the page.
    let forms: Vec<FormProbe> = vec![
        (
            "/profile/facts".into(),
            vec![("fact", "I never\u{0} trade alts."), ("topic", "risk")],
            "fact",
        ),
        (
            "/profile/facts".into(),
            vec![("fact", "I never trade alts."), ("topic", "ri\u{0}sk")],
            "topic",
        ),
        (
            format!("/profile/facts/{fact}/edit"),
            vec![("fact", "Only \u{0}BTC."), ("topic", "")],
            "fact",
        ),
        (
            format!("/profile/facts/{fact}/confidence"),
            vec![("confidence", "inferred\u{0}")],
            "confidence",
        ),
        (
            format!("/profile/facts/{fact}/archive"),
            vec![("reason", "user_deleted\u{0}")],
            "reason",
        ),
        (
            format!("/deployments/{dep}/pause"),
            vec![("reason", "CPI\u{0}")],
            "reason",
        ),
        ("/login".into(), vec![("token", "ey\u{0}.x.y")], "token"),
        (
            "/chat".into(),
            vec![("message", "I never\u{0} trade alts."), ("mode", "coach")],
            "message",
        ),
    ];
    for (path, pairs, field) in forms {
        let r = http()
            .post(s.url(&path))
            .header(COOKIE, format!("token={}", w.a.token))
            .form(&pairs)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY, "{path}");
        let page = r.text().await.unwrap();
        assert!(
            page.contains(&format!("{field}: a control character (U+0000)")),
            "{path}: {page}"
        );
    }
    assert_eq!(state_of(&s, &w).await, before, "nothing stored");

    // Line breaks and tabs where text may span lines: a fact, a chat message.
    let (status, body) = s
        .post(
            "/api/facts",
            &w.a.token,
            &json!({"fact": "Two rules:\n- no alts\r\n\t- no leverage"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let r = http()
        .post(s.url("/profile/facts"))
        .header(COOKIE, format!("token={}", w.a.token))
        .form(&[("fact", "From the page:\r\n- one\r\n- two")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let texts: Vec<String> = s
        .store
        .list_facts(w.a.user(), false)
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.fact)
        .collect();
    assert!(
        texts.contains(&"Two rules:\n- no alts\r\n\t- no leverage".to_owned()),
        "{texts:?}"
    );
    assert!(
        texts.contains(&"From the page:\n- one\n- two".to_owned()),
        "{texts:?}"
    );
}

/// A token with these claims over user `sub`'s defaults (`role`, `exp` in an hour).
fn signed(s: &Server, sub: Uuid, extra: Value) -> String {
    let mut claims = json!({
        "sub": sub,
        "role": "authenticated",
        "exp": (Utc::now() + Duration::hours(1)).timestamp(),
    });
    for (k, v) in extra.as_object().unwrap() {
        claims[k] = v.clone();
    }
    s.auth.sign(&claims).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_not_valid_yet_or_valid_until_the_year_3000_is_refused() {
    let s = server(no_model()).await;
    let w = world(&s).await;
    let user = w.a.user();
    let now = Utc::now();
    let year_3000: DateTime<Utc> = "3000-01-01T00:00:00Z".parse().unwrap();

    let refused = [
        (
            json!({"nbf": (now + Duration::minutes(10)).timestamp()}),
            "not valid yet",
        ),
        (json!({"exp": year_3000.timestamp()}), "lives too long"),
        (
            json!({"exp": year_3000.timestamp(), "iat": now.timestamp()}),
            "lives too long",
        ),
        (
            json!({"exp": (now + Duration::days(31)).timestamp()}),
            "lives too long",
        ),
        (
            json!({"exp": year_3000.timestamp(), "iat": (year_3000 - Duration::hours(1)).timestamp()}),
            "issued in the future",
        ),
    ];
    for (claims, why) in &refused {
        let token = signed(&s, user, claims.clone());
        let (status, body) = s.get("/api/me", &token).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{claims}");
        assert!(
            body["error"].as_str().unwrap().contains(why),
            "{claims}: {body}"
        );
        // As the cookie, a page sends the browser to the login form; the form refuses it.
        let r = http()
            .get(s.url("/profile/facts"))
            .header(COOKIE, format!("token={token}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SEE_OTHER, "{claims}");
        let r = http()
            .post(s.url("/login"))
            .form(&[("token", token.as_str())])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{claims}");
        assert!(r.headers().get(SET_COOKIE).is_none());
    }
    // Valid already (nbf past, or within the leeway) and within 30 days: accepted.
    for claims in [
        json!({"nbf": (now - Duration::minutes(1)).timestamp()}),
        json!({"nbf": (now + Duration::seconds(2)).timestamp()}),
        json!({"exp": (now + Duration::days(29)).timestamp(), "iat": now.timestamp()}),
    ] {
        let (status, body) = s.get("/api/me", &signed(&s, user, claims.clone())).await;
        assert_eq!(status, StatusCode::OK, "{claims}: {body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_cookie_is_secure_when_the_server_is_served_over_tls() {
    let s = server_with(no_model(), |state| state.secure_cookies = true).await;
    let w = world(&s).await;
    let r = http()
        .post(s.url("/login"))
        .form(&[("token", w.a.token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let cookie = r.headers().get(SET_COOKIE).unwrap().to_str().unwrap();
    for attribute in ["; Secure", "; HttpOnly", "; SameSite=Lax", "; Path=/"] {
        assert!(cookie.contains(attribute), "{attribute} in {cookie}");
    }
    let r = http()
        .post(s.url("/logout"))
        .header(COOKIE, format!("token={}", w.a.token))
        .send()
        .await
        .unwrap();
    let cleared = r.headers().get(SET_COOKIE).unwrap().to_str().unwrap();
    assert!(cleared.starts_with("token=;"), "{cleared}");
    assert!(
        cleared.contains("; Secure") && cleared.contains("Max-Age=0"),
        "{cleared}"
    );
}
