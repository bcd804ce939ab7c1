//! The dashboard pages over real HTTP on PostgreSQL, for a paper deployment ticked by the real
//! runner — its first tick's model an OpenAI-compatible client of a mock provider that keeps
//! every request, the others scripted: a long opened and closed, an order rejected by a rule, a
//! long left open, a tick with nothing proposed. The list and the deployment page show the
//! equity and PnL the test computes from the fills and the mock exchange's price; the timeline
//! filters by rule code; a tick page shows byte for byte the prompt the provider received;
//! another user's deployment is a 404.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use agent_runtime::{LanguageModel, ModelError, ScriptedModel};
use chrono::{DateTime, Duration, Utc};
use db::{LedgerStore, RegistryStore};
use live_runner::runner::ModelResolver;
use model::test_support::{answer, tool_call, tool_turn};
use providers::{MaxTokensField, OpenAiCompatConfig, OpenAiCompatible, TransportOptions};
use reqwest::StatusCode;
use rust_decimal::Decimal;
use serde_json::{Value, json};
use types::{FixedClock, OrderSide, Uuid, text};

use crate::common::serve::{Server, no_model, server_with_clock};
use crate::common::{self, hyperliquid_mock, t};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const OWNER: Uuid = Uuid::from_u128(0xda5_a11ce);

fn propose(args: &str) -> Vec<agent_runtime::ModelResponse> {
    vec![
        tool_turn(vec![tool_call("c1", "propose_order", args)]),
        answer("done"),
    ]
}

/// An OpenAI-compatible provider (wiremock, the chat-completions wire format) whose first
/// answer proposes `args` with `propose_order` and whose next says "done"; it keeps every
/// request it received.
async fn provider(args: &str) -> MockServer {
    let server = MockServer::start().await;
    let usage = json!({"prompt_tokens": 900, "completion_tokens": 20, "total_tokens": 920});
    let tool_call = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1_793_620_800,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null, "refusal": null,
            "tool_calls": [{"id": "call_1", "type": "function",
                            "function": {"name": "propose_order", "arguments": args}}]}}],
        "usage": usage,
    });
    let done = json!({
        "id": "chatcmpl-2", "object": "chat.completion", "created": 1_793_620_801,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "done", "refusal": null}}],
        "usage": usage,
    });
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(tool_call))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(done))
        .with_priority(2)
        .mount(&server)
        .await;
    server
}

/// The first tick's model is an OpenAI-compatible client of `provider`; then one scripted
/// model per tick, in order.
fn models(provider: &MockServer, scripts: Vec<Vec<agent_runtime::ModelResponse>>) -> ModelResolver {
    let client: Arc<dyn LanguageModel> = Arc::new(
        OpenAiCompatible::new(OpenAiCompatConfig {
            provider: "openai".into(),
            model: "gpt-4o-mini".into(),
            base_url: format!("{}/v1/", provider.uri()),
            api_key: "sk-test".into(),
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            transport: TransportOptions::default(),
        })
        .expect("client"),
    );
    let queue = Arc::new(Mutex::new(VecDeque::from(scripts)));
    let first = Mutex::new(Some(client));
    Arc::new(move |id: &str, skill: &skill_schema::Skill| {
        if id != skill.model {
            return agent_runtime::builtin_model(id, skill)
                .ok_or_else(|| ModelError::UnknownModel(id.to_owned()));
        }
        if let Some(client) = first.lock().unwrap().take() {
            return Ok(client);
        }
        let script = queue
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| vec![answer("nothing to do")]);
        Ok(Arc::new(ScriptedModel::new(script)) as Arc<dyn LanguageModel>)
    })
}

/// The system prompt and the first user message of the first request `provider` received, as
/// sent on the wire.
async fn first_prompt(provider: &MockServer) -> (String, String) {
    let requests = provider.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    let content = |i: usize, role: &str| {
        assert_eq!(body["messages"][i]["role"], role, "{body}");
        body["messages"][i]["content"].as_str().unwrap().to_owned()
    };
    (content(0, "system"), content(1, "user"))
}

async fn page(s: &Server, path: &str, token: &str) -> (StatusCode, String) {
    let r = s
        .http
        .get(s.url(path))
        .bearer_auth(token)
        .send()
        .await
        .expect("GET");
    (r.status(), r.text().await.expect("body"))
}

/// The text of the first element after `marker` whose opening tag contains `attr`, up to its
/// next tag.
fn text_after(html: &str, marker: &str, attr: &str) -> String {
    let from = html
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker} in {html}"));
    let rest = &html[from..];
    let at = rest
        .find(attr)
        .unwrap_or_else(|| panic!("no {attr} after {marker}"));
    let rest = &rest[at..];
    let open = rest.find('>').expect("tag end") + 1;
    let close = rest[open..].find('<').expect("next tag");
    rest[open..open + close].trim().to_owned()
}

/// Realized PnL and fees from the fills alone: average cost per symbol, realized on every
/// reducing quantity. Returns (realized gross, fees, open qty signed, average entry).
fn from_fills(fills: &[db::StoredFill]) -> (Decimal, Decimal, Decimal, Decimal) {
    let (mut realized, mut fees, mut qty, mut avg) =
        (Decimal::ZERO, Decimal::ZERO, Decimal::ZERO, Decimal::ZERO);
    for f in fills {
        let f = &f.fill;
        fees += f.fee_usd;
        let signed = match f.side {
            OrderSide::Buy => f.qty,
            OrderSide::Sell => -f.qty,
        };
        if qty.is_zero() || qty.is_sign_positive() == signed.is_sign_positive() {
            avg = (avg * qty.abs() + f.price * f.qty) / (qty.abs() + f.qty);
            qty += signed;
        } else {
            let closing = f.qty.min(qty.abs());
            let dir = if qty.is_sign_positive() {
                Decimal::ONE
            } else {
                -Decimal::ONE
            };
            realized += (f.price - avg) * closing * dir;
            qty += signed;
            assert!(
                qty.is_zero() || qty.is_sign_positive() == dir.is_sign_positive(),
                "no flips in this test"
            );
        }
    }
    (realized, fees, qty, avg)
}

/// The server (its clock in the ticks' day) and a paper deployment of [`OWNER`] ticked five
/// times: open (through the mock provider), rejected, close, open with stop and target, nothing.
async fn seeded() -> (Server, Uuid, MockServer, String) {
    let first = t("2026-11-02T12:00:00Z");
    let hour = Duration::hours(1);
    let s = server_with_clock(no_model(), Arc::new(FixedClock(first + hour * 8))).await;
    let hl = hyperliquid_mock().await;
    let skill =
        live_runner::admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).expect("skill");
    let store = db::Store::Postgres(s.store.clone());
    let id = live_runner::admin::deploy(
        &store,
        &skill,
        &live_runner::test_support::paper_deploy(OWNER),
        first - Duration::minutes(30),
    )
    .await
    .expect("deploy")
    .id;
    let provider = provider(
        r#"{"action":"open_long","symbol":"BTC","size_usd":1000,"leverage":1,"reason":"first long"}"#,
    )
    .await;
    let resolver = models(
        &provider,
        vec![
            propose(
                r#"{"action":"open_long","symbol":"BTC","size_usd":1000,"leverage":100,"reason":"too much leverage"}"#,
            ),
            propose(r#"{"action":"close","symbol":"BTC","reason":"take it"}"#),
            propose(
                r#"{"action":"open_long","symbol":"BTC","size_usd":500,"leverage":1,"stop":25000,"target":40000,"reason":"second long"}"#,
            ),
            vec![answer("nothing to do")],
        ],
    );
    for bar in 0..5 {
        let now: DateTime<Utc> = first + hour * bar + Duration::seconds(5);
        let r = common::runner(&s.pg, &hl, now, "dash", 1, Some(resolver.clone())).await;
        r.clone().run(std::future::pending()).await.expect("run");
        assert_eq!(r.metrics().ticks("recorded"), 1, "bar {bar}");
    }
    (s, id, provider, skill.name)
}

/// Independently of the pages and of the runner's arithmetic: the PnL from the fills, the open
/// long marked at the close of the last bar the fifth tick read (the mock's price at 16:00),
/// and the equity they make, checked against what the runner recorded. Returns the deployment,
/// fees, realized net, unrealized PnL and equity.
async fn independent(s: &Server, id: Uuid) -> (db::Deployment, Decimal, Decimal, Decimal, Decimal) {
    let d = s.store.get_deployment(id).await.unwrap();
    let fills = s.store.list_fills(id, None).await.unwrap();
    assert_eq!(fills.len(), 3, "open, close, open: {fills:?}");
    let (realized, fees, open_qty, entry) = from_fills(&fills);
    assert!(open_qty > Decimal::ZERO);
    let realized_net = realized - fees;
    let mark = Decimal::from(common::price_at(
        t("2026-11-02T16:00:00Z").timestamp_millis(),
    ));
    let unrealized = (mark - entry) * open_qty;
    let equity = d.initial_equity_usd + realized_net + unrealized;
    assert_eq!(
        text::money(equity),
        text::money(d.equity_usd),
        "the equity the runner recorded: initial {} + realized {realized} - fees {fees} + \
         ({mark} - {entry}) × {open_qty}",
        d.initial_equity_usd
    );
    (d, fees, realized_net, unrealized, equity)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_shows_equity_pnl_the_timeline_filter_and_the_exact_prompt() {
    let (s, id, provider, skill_name) = seeded().await;

    let (d, fees, realized_net, unrealized, equity) = independent(&s, id).await;
    let token = s
        .auth
        .mint(OWNER, Duration::hours(1), Utc::now())
        .expect("mint");

    // (a) the list and the deployment page.
    let (status, html) = page(&s, "/deployments", &token).await;
    assert_eq!(status, StatusCode::OK, "{html}");
    let row = format!("id=\"deployment-{id}\"");
    assert!(html.contains(&format!("href=\"/deployments/{id}\">{skill_name}</a>")));
    assert_eq!(
        text_after(&html, &row, "class=\"num equity\""),
        text::money(equity)
    );
    assert_eq!(
        text_after(&html, &row, "class=\"num realized"),
        text::signed_money(realized_net)
    );
    assert_eq!(
        text_after(&html, &row, "class=\"num unrealized"),
        text::signed_money(unrealized)
    );
    assert_eq!(text_after(&html, &row, "class=\"num open\""), "1");
    assert_eq!(text_after(&html, &row, "class=\"num ticks-today\""), "5");
    assert_eq!(
        text_after(&html, &row, "class=\"num rejections-today\""),
        "1"
    );
    assert_eq!(
        text_after(&html, &row, "class=\"num model-errors-today\""),
        "0"
    );

    let (status, html) = page(&s, &format!("/deployments/{id}"), &token).await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert_eq!(text_after(&html, "id=\"equity\"", ""), text::money(equity));
    assert_eq!(
        text_after(&html, "id=\"realized\"", ""),
        text::signed_money(realized_net)
    );
    assert_eq!(text_after(&html, "id=\"fees\"", ""), text::money(fees));
    assert_eq!(
        text_after(&html, "id=\"net-pnl\"", ""),
        text::signed_money(equity - d.initial_equity_usd)
    );
    assert!(html.contains("id=\"equity-chart\""), "{html}");
    assert!(html.contains("id=\"drawdown-chart\""));
    // The open long with the stop and target of the proposal that opened it.
    assert!(html.contains(&text::price(Decimal::from(25_000))), "{html}");
    assert!(html.contains(&text::price(Decimal::from(40_000))));

    // (b) the timeline filtered by the rejection's rule code shows that tick only.
    let ticks = tick::read_ticks(&s.store, &db::TickQuery::of(id))
        .await
        .unwrap();
    assert_eq!(ticks.len(), 5);
    let rejected: Vec<_> = ticks.iter().filter(|t| t.rule.is_some()).collect();
    assert_eq!(rejected.len(), 1, "{ticks:?}");
    let rule = rejected[0].rule.unwrap().as_str();
    let (status, html) = page(
        &s,
        &format!("/deployments/{id}/ticks?outcome=rejected&rule={rule}"),
        &token,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{html}");
    assert_eq!(html.matches("<tr id=\"tick-").count(), 1, "{html}");
    assert!(html.contains(&format!("id=\"tick-{}\"", rejected[0].tick_id)));
    let (_, all) = page(&s, &format!("/deployments/{id}/ticks"), &token).await;
    assert_eq!(all.matches("<tr id=\"tick-").count(), 5);
    // Newest first.
    let newest = all.find(&format!("tick-{}", ticks[4].tick_id)).unwrap();
    let oldest = all.find(&format!("tick-{}", ticks[0].tick_id)).unwrap();
    assert!(newest < oldest);
    let (_, no_ops) = page(
        &s,
        &format!("/deployments/{id}/ticks?outcome=no_op"),
        &token,
    )
    .await;
    assert_eq!(no_ops.matches("<tr id=\"tick-").count(), 1);
    let (status, _) = page(&s, &format!("/deployments/{id}/ticks?rule=R99"), &token).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    // (c) the first tick's page shows the exact prompt the provider received.
    let (system, user) = first_prompt(&provider).await;
    let (status, html) = page(
        &s,
        &format!("/deployments/{id}/ticks/{}", ticks[0].tick_id),
        &token,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{html}");
    let pre = |id: &str| {
        let from = html.find(&format!("<pre id=\"{id}\">")).unwrap() + id.len() + 11;
        let to = from + html[from..].find("</pre>").unwrap();
        unescape(&html[from..to])
    };
    assert_eq!(pre("system-prompt"), system);
    assert_eq!(pre("user-message"), user);
    assert_eq!(
        text_after(&html, "id=\"system-tokens\"", ""),
        live_runner::serve::api::count_tokens(&system).to_string()
    );
    assert!(
        html.contains("class=\"call-name\">propose_order<"),
        "{html}"
    );

    // (d) another user sees none of it.
    let (_, other) = crate::pages::new_user(&s).await;
    for path in [
        format!("/deployments/{id}"),
        format!("/deployments/{id}/ticks"),
        format!("/deployments/{id}/ticks/{}", ticks[0].tick_id),
    ] {
        let (status, _) = page(&s, &path, &other).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
    }
    let (status, html) = page(&s, "/deployments", &other).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!html.contains(&id.to_string()));
}

/// Undoes the templates' HTML escaping.
fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&#x2f;", "/")
        .replace("&amp;", "&")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_pages_in_chromium_filter_by_rule_and_show_the_prompt() {
    use crate::browser::{Browser, docs_image};

    let (s, id, provider, _) = seeded().await;
    let (.., equity) = independent(&s, id).await;
    let ticks = tick::read_ticks(&s.store, &db::TickQuery::of(id))
        .await
        .unwrap();
    let rejected = ticks
        .iter()
        .find(|t| t.rule.is_some())
        .expect("a rejection");
    let rule = rejected.rule.unwrap().as_str();
    let token = s
        .auth
        .mint(OWNER, Duration::hours(1), Utc::now())
        .expect("mint");
    let b = Browser::start().await;
    b.log_in(&s, &token, "#add-fact").await;
    b.open(&s.url("/deployments"), "#deployments").await;
    assert_eq!(
        b.find(&format!("#deployment-{id} td.equity"))
            .await
            .text()
            .await
            .unwrap(),
        text::money(equity)
    );
    b.find(&format!("#deployment-{id} td.skill a"))
        .await
        .click()
        .await
        .unwrap();
    b.find("#equity-chart").await;
    assert_eq!(
        b.find("#equity").await.text().await.unwrap(),
        text::money(equity)
    );
    b.screenshot(&docs_image("dashboard-page.png")).await;

    // The timeline's plain GET form, filtered by the rejection's rule code.
    b.find("#timeline-link").await.click().await.unwrap();
    b.find("#filter").await;
    b.find(&format!("#rule option[value='{rule}']"))
        .await
        .click()
        .await
        .unwrap();
    b.find("#apply").await.click().await.unwrap();
    // The filtered page is the one whose rule is selected by the server.
    b.find(&format!("#rule option[value='{rule}'][selected]"))
        .await;
    assert_eq!(b.texts("#ticks tbody tr").await.len(), 1);
    b.find(&format!("#tick-{} a", rejected.tick_id)).await;

    // The first tick's page: the prompt as the provider received it.
    let (system, _) = first_prompt(&provider).await;
    b.open(
        &s.url(&format!("/deployments/{id}/ticks/{}", ticks[0].tick_id)),
        "#system-prompt",
    )
    .await;
    let shown = b
        .find("#system-prompt")
        .await
        .prop("textContent")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(shown, system);
    b.screenshot(&docs_image("tick-page.png")).await;
    b.close().await;
}
