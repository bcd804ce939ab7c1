//! The pages over plain HTTP against the real server on PostgreSQL: redirects to `/login`
//! without a token, the login form and its cookie (never a token in the URL), HTML escaping of user text, the
//! add / edit / promote / archive forms (post/redirect/get, audited, refused input re-rendered
//! with its message) and row-level security (another user's fact or deployment is a 404).

use chrono::{Duration, Utc};
use db::test_support::Fixture;
use db::{FactStore, NoteStore, PgStore, RegistryStore, TickStore};
use live_runner::serve::Auth;
use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use types::{FactChangeOp, FactConfidence, Uuid};

use crate::common::serve::{Server, no_model, server};

/// The real server on 127.0.0.1:0 over a fresh PostgreSQL database (the API tests' harness).
pub(crate) async fn page_server() -> Server {
    server(no_model()).await
}

/// A stored user and a valid token for them.
pub(crate) async fn new_user(s: &Server) -> (Uuid, String) {
    let user = db::test_support::sample_user();
    s.store.upsert_user(&user).await.expect("store user");
    let token = s
        .auth
        .mint(user.id, Duration::hours(1), Utc::now())
        .expect("mint");
    (user.id, token)
}

/// A client that does not follow redirects (the tests read them).
fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

fn cookie(token: &str) -> String {
    format!("token={token}")
}

pub(crate) fn location(r: &reqwest::Response) -> String {
    r.headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

async fn get_page(s: &Server, path: &str, token: &str) -> (StatusCode, String) {
    let r = http()
        .get(s.url(path))
        .header(COOKIE, cookie(token))
        .send()
        .await
        .expect("GET");
    let status = r.status();
    (status, r.text().await.expect("body"))
}

async fn post_form(
    s: &Server,
    path: &str,
    token: &str,
    form: &[(&str, &str)],
) -> reqwest::Response {
    http()
        .post(s.url(path))
        .header(COOKIE, cookie(token))
        .form(form)
        .send()
        .await
        .expect("POST")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_without_a_valid_token_redirect_to_login() {
    let s = page_server().await;
    let dep = Uuid::new_v4();
    for path in [
        "/profile/facts".to_owned(),
        "/profile/facts?archived=true".to_owned(),
        format!("/deployments/{dep}/memory"),
        "/chat".to_owned(),
        format!("/chat/{dep}"),
    ] {
        let r = http().get(s.url(&path)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::SEE_OTHER, "{path}");
        assert_eq!(location(&r), "/login", "{path}");
        let r = http()
            .get(s.url(&path))
            .header(COOKIE, "token=not-a-jwt")
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.status(),
            StatusCode::SEE_OTHER,
            "{path} with a bad cookie"
        );
        assert_eq!(location(&r), "/login");
    }
    // A form posted without the cookie (e.g. from another site: SameSite=Lax) changes nothing.
    let r = http()
        .post(s.url("/profile/facts"))
        .form(&[("fact", "I never trade alts.")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&r), "/login");
    // The API keeps answering 401 JSON.
    let r = http().get(s.url("/api/facts")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    // The login form itself needs no token.
    let r = http().get(s.url("/login")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let body = r.text().await.unwrap();
    assert!(
        body.contains(r#"<form method="post" action="/login">"#),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_form_sets_an_http_only_cookie_and_bad_tokens_are_refused() {
    let s = page_server().await;
    let (user, token) = new_user(&s).await;

    // The token pasted in the form (surrounding blanks trimmed) becomes the cookie.
    let r = http()
        .post(s.url("/login"))
        .form(&[("token", format!("  {token}\n").as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&r), "/profile/facts");
    let set = r.headers().get(SET_COOKIE).unwrap().to_str().unwrap();
    assert!(set.starts_with(&format!("token={token};")), "{set}");
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Lax") && set.contains("Path=/"));
    assert!(
        !set.contains("Secure"),
        "not without --secure-cookies: {set}"
    );

    // With the cookie, the facts page is the user's.
    let (status, body) = get_page(&s, "/profile/facts", &token).await;
    assert_eq!(status, StatusCode::OK);
    assert!(body.contains(&format!("signed in as {user}")), "{body}");
    assert!(body.contains("No active facts yet."));

    // A token signed with another secret and an expired one: the form again, with why.
    let other = Auth::new("another-secret-0123456789abcdef0123456789")
        .unwrap()
        .mint(user, Duration::hours(1), Utc::now())
        .unwrap();
    let r = http()
        .post(s.url("/login"))
        .form(&[("token", other.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers().get(SET_COOKIE).is_none());
    assert!(r.text().await.unwrap().contains("signature does not match"));
    let expired = s
        .auth
        .mint(user, Duration::hours(1), Utc::now() - Duration::hours(3))
        .unwrap();
    let r = http()
        .post(s.url("/login"))
        .form(&[("token", expired.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.text().await.unwrap().contains("the token has expired"));

    // Log out clears the cookie.
    let r = post_form(&s, "/logout", &token, &[]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&r), "/login");
    let set = r.headers().get(SET_COOKIE).unwrap().to_str().unwrap();
    assert!(
        set.starts_with("token=;") && set.contains("Max-Age=0"),
        "{set}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fact_text_is_escaped_and_every_change_is_audited() {
    let s = page_server().await;
    let (user, token) = new_user(&s).await;
    let evil = r#"<script>alert("x")</script> & <b>bold</b>"#;

    let r = post_form(
        &s,
        "/profile/facts",
        &token,
        &[
            ("fact", evil),
            ("topic", "<i>risk</i>"),
            ("confidence", "inferred"),
        ],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&r), "/profile/facts?done=added");
    let (status, body) = get_page(&s, "/profile/facts?done=added", &token).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        !body.contains("<script>alert"),
        "raw user text in the page: {body}"
    );
    assert!(!body.contains("<b>bold"));
    assert!(!body.contains("<i>risk"));
    assert!(
        body.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;&#x2f;script&gt; &amp; &lt;b&gt;bold&lt;&#x2f;b&gt;"),
        "{body}"
    );
    assert!(body.contains("&lt;i&gt;risk&lt;&#x2f;i&gt;"));
    assert!(body.contains("Fact added."));

    let facts = s.store.list_facts(user, false).await.unwrap();
    assert_eq!(facts.len(), 1);
    let fact = &facts[0];
    assert_eq!(fact.fact, evil);
    assert_eq!(fact.source, types::FactSource::Profile);
    assert_eq!(fact.confidence, FactConfidence::Inferred);

    // Edit, promote, archive: each a 303 back to the list, each in the audit trail as `profile`.
    let id = fact.id;
    let r = post_form(
        &s,
        &format!("/profile/facts/{id}/edit"),
        &token,
        &[("fact", "Never more than 3x leverage."), ("topic", "risk")],
    )
    .await;
    assert_eq!(
        (r.status(), location(&r)),
        (
            StatusCode::SEE_OTHER,
            "/profile/facts?done=edited".to_owned()
        )
    );
    let r = post_form(
        &s,
        &format!("/profile/facts/{id}/confidence"),
        &token,
        &[("confidence", "asserted")],
    )
    .await;
    assert_eq!(location(&r), "/profile/facts?done=promoted");
    let r = post_form(
        &s,
        &format!("/profile/facts/{id}/archive"),
        &token,
        &[("reason", "user_corrected")],
    )
    .await;
    assert_eq!(location(&r), "/profile/facts?archived=true&done=archived");

    let all = s.store.list_facts(user, true).await.unwrap();
    assert_eq!(all[0].fact, "Never more than 3x leverage.");
    assert_eq!(all[0].topic.as_deref(), Some("risk"));
    assert_eq!(all[0].confidence, FactConfidence::Asserted);
    assert_eq!(
        all[0].archived_reason,
        Some(types::ArchiveReason::UserCorrected)
    );
    let changes = s.store.fact_changes(id).await.unwrap();
    let ops: Vec<_> = changes.iter().map(|c| c.op).collect();
    assert_eq!(
        ops,
        [
            FactChangeOp::Insert,
            FactChangeOp::Update,
            FactChangeOp::Update,
            FactChangeOp::Archive
        ]
    );
    // Written as the caller under row-level security: the database saw their role and claims.
    for c in &changes {
        assert_eq!(c.actor.as_deref(), Some("profile"), "{c:?}");
        assert_eq!(c.db_role, "authenticated", "{c:?}");
        assert_eq!(c.jwt_sub, Some(user), "{c:?}");
    }

    // Active list hides it, the archived toggle shows it with its reason.
    let (_, body) = get_page(&s, "/profile/facts", &token).await;
    assert!(!body.contains("Never more than 3x leverage."));
    let (_, body) = get_page(&s, "/profile/facts?archived=true", &token).await;
    assert!(body.contains("Never more than 3x leverage."));
    assert!(body.contains("user_corrected"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_input_re_renders_the_form_with_its_message() {
    let s = page_server().await;
    let (user, token) = new_user(&s).await;

    let r = post_form(
        &s,
        "/profile/facts",
        &token,
        &[("fact", "abc"), ("topic", "goal")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body = r.text().await.unwrap();
    assert!(
        body.contains("fact: must be 4 to 500 characters (got 3)"),
        "{body}"
    );
    // The submitted values stay in the form.
    assert!(body.contains(r#"name="topic" value="goal""#), "{body}");

    let long = "x".repeat(501);
    let r = post_form(&s, "/profile/facts", &token, &[("fact", &long)]).await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.text().await.unwrap().contains("(got 501)"));
    let r = post_form(
        &s,
        "/profile/facts",
        &token,
        &[("fact", "four"), ("confidence", "sure")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        r.text()
            .await
            .unwrap()
            .contains("confidence: expected `asserted` or `inferred`")
    );
    // A body that is not a form at all is still a page, not a bare rejection.
    let r = http()
        .post(s.url("/profile/facts"))
        .header(COOKIE, cookie(&token))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.text().await.unwrap().contains("fact: must be 4 to 500"));
    assert!(s.store.list_facts(user, true).await.unwrap().is_empty());

    // Row forms: a bad id, a bad confidence, a bad reason.
    let r = post_form(
        &s,
        "/profile/facts/not-an-id/edit",
        &token,
        &[("fact", "four")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = post_form(
        &s,
        &format!("/profile/facts/{}/archive", Uuid::new_v4()),
        &token,
        &[("reason", "agent_forget")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.text().await.unwrap().contains("reason: expected"));

    // A valid token of a user this database has no account for: the page works (no facts),
    // and adding one is refused with why, not a 500.
    let stranger = s
        .auth
        .mint(Uuid::new_v4(), Duration::hours(1), Utc::now())
        .unwrap();
    let (status, _) = get_page(&s, "/profile/facts", &stranger).await;
    assert_eq!(status, StatusCode::OK);
    let r = post_form(
        &s,
        "/profile/facts",
        &stranger,
        &[("fact", "I trade BTC only.")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body = r.text().await.unwrap();
    assert!(
        body.contains("is the token&#x27;s user known to this database?"),
        "{body}"
    );
    assert!(
        body.contains("I trade BTC only."),
        "the form keeps the text"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_fact_and_deployment_are_not_found() {
    let s = page_server().await;
    let (_alice, alice_token) = new_user(&s).await;
    let fx = db::test_support::seed(&s.store).await.unwrap();
    let bob = fx.user.id;
    let fact = s
        .store
        .remember(
            &db::NewFact {
                id: Uuid::new_v4(),
                user_id: bob,
                skill_id: None,
                fact: "Bob's private fact".into(),
                source: types::FactSource::Chat,
                confidence: FactConfidence::Inferred,
                topic: None,
                actor: "test".into(),
            },
            Utc::now(),
        )
        .await
        .unwrap();

    // Alice sees none of it and cannot change it.
    let (_, body) = get_page(&s, "/profile/facts?archived=true", &alice_token).await;
    assert!(!body.contains("Bob&#x27;s private fact") && !body.contains("Bob's private fact"));
    for (path, form) in [
        (
            format!("/profile/facts/{}/edit", fact.id),
            vec![("fact", "hijacked!")],
        ),
        (
            format!("/profile/facts/{}/confidence", fact.id),
            vec![("confidence", "asserted")],
        ),
        (
            format!("/profile/facts/{}/archive", fact.id),
            vec![("reason", "user_deleted")],
        ),
    ] {
        let r = post_form(&s, &path, &alice_token, &form).await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{path}");
    }
    let bobs = s.store.list_facts(bob, true).await.unwrap();
    assert_eq!(bobs.len(), 1);
    assert_eq!(
        (
            bobs[0].id,
            bobs[0].fact.as_str(),
            bobs[0].confidence,
            bobs[0].archived_at
        ),
        (
            fact.id,
            "Bob's private fact",
            FactConfidence::Inferred,
            None
        )
    );

    let (status, body) = get_page(
        &s,
        &format!("/deployments/{}/memory", fx.deployment.id),
        &alice_token,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body.contains("Not found"), "{body}");
    let (status, _) = get_page(&s, "/deployments/not-a-uuid/memory", &alice_token).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// A deployment with three closed trades (a win, a loss, a scratch), one still open, two
/// lessons (the first superseded by the second) and a recorded tick whose prompt the page
/// shows. Returns the fixture (its user owns the deployment).
pub(crate) async fn seed_memory(store: &PgStore) -> Fixture {
    use db::test_support::{at, sample_closed_trade, sample_note, sample_open_trade, seed};
    use rust_decimal::Decimal;
    use types::{RegimeTag, Side};

    let fx = seed(store).await.expect("seed");
    let win = sample_closed_trade(&sample_open_trade(&fx, at(60)), at(60 + 25 * 60));
    let mut loss = sample_closed_trade(&sample_open_trade(&fx, at(30 * 60)), at(36 * 60));
    loss.id = Uuid::new_v4();
    loss.symbol = "ETH".into();
    loss.side = Side::Short;
    loss.entry_price = Decimal::new(341_250, 2);
    loss.exit_price = Some(Decimal::new(345_500, 2));
    loss.entry_size_usd = Decimal::new(170_625, 2);
    loss.exit_size_usd = Decimal::new(172_750, 2);
    loss.opened_qty = Decimal::new(5, 1);
    loss.realized_pnl_usd = Decimal::new(-2125, 2);
    loss.fees_usd = Decimal::new(154, 2);
    loss.entry_regime_tag = Some(RegimeTag::Ranging);
    loss.entry_reason = Some("fade the <b>range</b> top".into());
    loss.exit_reason = Some("stop hit".into());
    let mut scratch = sample_closed_trade(&sample_open_trade(&fx, at(40 * 60)), at(40 * 60 + 45));
    scratch.id = Uuid::new_v4();
    scratch.exit_price = Some(Decimal::new(65_200, 0));
    scratch.realized_pnl_usd = Decimal::ZERO;
    scratch.fees_usd = Decimal::ZERO;
    scratch.entry_regime_tag = Some(RegimeTag::TrendingDown);
    scratch.exit_reason = Some("thesis invalidated".into());
    let mut open = sample_open_trade(&fx, at(47 * 60));
    open.id = Uuid::new_v4();

    let tick_at = at(48 * 60);
    let mut snapshot = db::test_support::sample_snapshot(fx.deployment.id, tick_at);
    snapshot.system_prompt =
        "You are a disciplined crypto trading agent. Trade only BTC and ETH.\n\n\
        ## Leash: balanced\nYou may deviate from the rules when the thesis clearly holds.\n\n\
        ## Strategy\nBuy breakouts above the prior swing high.\n\n\
        Lessons from your recent trades on this skill (auto-generated; signal, not strategy):\n\
        - Breakouts in a range failed twice: wait for a close above the range.\n\n\
        Propose at most one order per tick with propose_order."
            .into();
    snapshot.context = "## Time\n2026-06-06T10:00:00Z\n\n## Portfolio\nEquity $10,012.34\n\n\
        ## Recent trades on this skill (closed)\n\
        BTC long  06-05T11:00 → 06-05T16:45  +$0.00  trending_down\n\
        ETH short 06-05T16:00 → 06-05T22:00  -$22.79  ranging\n\
        BTC long  06-04T11:00 → 06-05T12:00  +$6.81  trending_up\n\n## Your turn\nDecide."
        .into();
    store
        .record_tick(&db::TickRecord {
            trades: vec![win, loss, scratch, open],
            ..db::test_support::tick_record(snapshot)
        })
        .await
        .expect("record tick");
    store
        .insert_note(&sample_note(
            &fx,
            at(26 * 60),
            "- Breakouts that held the retest paid; take them.",
        ))
        .await
        .expect("first note");
    let mut second = sample_note(
        &fx,
        at(37 * 60),
        "- Breakouts in a range failed twice: wait for a close above the range.\n- Keep size at $650 until the win rate recovers.",
    );
    second.content.trades_considered = 2;
    store.insert_note(&second).await.expect("second note");
    fx
}

/// The memory page of [`seed_memory`]'s deployment as its owner sees it.
async fn seeded_memory_page() -> (Server, Fixture, String) {
    let s = page_server().await;
    let fx = seed_memory(&s.store).await;
    let token = s
        .auth
        .mint(fx.user.id, Duration::hours(1), Utc::now())
        .unwrap();
    let (status, body) = get_page(
        &s,
        &format!("/deployments/{}/memory", fx.deployment.id),
        &token,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    (s, fx, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_page_shows_trades_lessons_and_the_prompt_with_token_counts() {
    let (s, fx, body) = seeded_memory_page().await;
    // Trades: money in the text style, newest exit first, net = gross − fees.
    assert!(body.contains("Closed trades (3)"), "{body}");
    assert!(body.contains("$652.00"));
    assert!(body.contains("+$6.81"), "7.40 − 0.59013");
    assert!(body.contains("-$22.79"), "−21.25 − 1.54");
    // Prices in the prompt's price style (six significant digits, no dollar sign), sizes and
    // PnL as money, holding times in two units (`memory_page_cells_read_in_the_text_styles`).
    assert!(body.contains(">65,200<") && body.contains(">3,412.5<") && body.contains(">3,455<"));
    assert!(body.contains("1d 1h"), "25 hours of holding: {body}");
    assert!(body.contains("ranging") && body.contains("trending_up"));
    let eth = body.find("-$22.79").unwrap();
    let btc_win = body.find("+$6.81").unwrap();
    assert!(eth < btc_win, "newest exit first");
    // Reasons are escaped.
    assert!(body.contains("fade the &lt;b&gt;range&lt;&#x2f;b&gt; top"));
    assert!(!body.contains("<b>range"));
    // Lessons: the active note and the superseded one, with window and trades considered.
    assert!(
        body.contains(">active<") && body.contains(">superseded<"),
        "{body}"
    );
    assert!(body.contains("wait for a close above the range"));
    assert!(body.contains("Breakouts that held the retest paid"));
    // The prompt of the latest tick, with its exact o200k_base counts.
    let memory_system = "You are a disciplined crypto trading agent.";
    assert!(body.contains(memory_system));
    assert!(body.contains("## Recent trades on this skill (closed)"));
    assert!(body.contains("(o200k_base)"));
    let stored = s
        .store
        .list_snapshots(fx.deployment.id, 1)
        .await
        .unwrap()
        .remove(0);
    let system_tokens = live_runner::serve::api::count_tokens(&stored.system_prompt);
    let user_tokens = live_runner::serve::api::count_tokens(&stored.context);
    assert!(system_tokens > 20 && user_tokens > 20);
    assert!(body.contains(&format!(
        r#"<strong id="system-tokens">{system_tokens}</strong>"#
    )));
    assert!(body.contains(&format!(
        r#"<strong id="user-tokens">{user_tokens}</strong>"#
    )));
}

/// The cells of each row of the memory page's trade table, tags stripped.
fn trade_rows(body: &str) -> Vec<Vec<String>> {
    let table = &body[body.find("<table id=\"trades\">").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    let tbody = &table[table.find("<tbody>").unwrap()..];
    tbody
        .split("<tr>")
        .skip(1)
        .map(|row| {
            row.split("<td")
                .skip(1)
                .map(|cell| {
                    let text = &cell[cell.find('>').unwrap() + 1..];
                    text[..text.find("</td>").unwrap()].to_owned()
                })
                .collect()
        })
        .collect()
}

/// Each closed trade's row, cell for cell: times in UTC, size as money, prices in the price
/// style, net PnL as signed money, the holding time in two units.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_page_cells_read_in_the_text_styles() {
    let (_, _, body) = seeded_memory_page().await;
    let rows = trade_rows(&body);
    // symbol, side, entry, exit, size, entry price, exit price, net PnL, holding (the regime and
    // reasons follow).
    let want: [[&str; 9]; 3] = [
        [
            "BTC",
            "long",
            "2026-06-06 02:00",
            "2026-06-06 02:45",
            "$652.00",
            "65,200",
            "65,200",
            "$0.00",
            "45m",
        ],
        [
            "ETH",
            "short",
            "2026-06-05 16:00",
            "2026-06-05 22:00",
            "$1,706.25",
            "3,412.5",
            "3,455",
            "-$22.79",
            "6h 0m",
        ],
        [
            "BTC",
            "long",
            "2026-06-04 11:00",
            "2026-06-05 12:00",
            "$652.00",
            "65,200",
            "65,940",
            "+$6.81",
            "1d 1h",
        ],
    ];
    assert_eq!(rows.len(), want.len(), "{body}");
    for (row, want) in rows.iter().zip(want) {
        assert_eq!(&row[..9], want, "{row:?}");
    }
}
