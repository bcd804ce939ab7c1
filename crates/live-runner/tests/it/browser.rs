//! The pages in a real browser: headless Chromium driven over WebDriver (chromedriver started
//! here on a free port, `fantoccini` as the client) against the real server on PostgreSQL.
//!
//! Chromium and chromedriver are Debian's packages, which `cargo xtask test` installs when they
//! are missing; without them this test fails and says so — it is never skipped. The facts page
//! is driven end to end, a deployment is paused and resumed from its page (no tick while
//! paused) while a page on another port of the same host fails to change it, a held lesson is
//! accepted from the review queue, an alert channel is added, tested and deleted, on `/chat` a
//! conversation runs two turns (an answer with its tool call) and a pause the coach prepared is
//! confirmed (the deployment paused), and a backtest job is followed on `/backtests` to its
//! report.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use db::{FactStore, NewFact};
use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;
use types::{ArchiveReason, FactChangeOp, FactConfidence, FactSource, Uuid};

use crate::common::serve::Server;
use crate::pages::{new_user, page_server, seed_memory};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How long any explicit wait (driver up, element present, text shown) may take.
const WAIT: Duration = Duration::from_secs(20);

/// A chromedriver process and a headless Chromium session on it; both end on drop.
pub(crate) struct Browser {
    pub(crate) client: Client,
    driver: Child,
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local addr").port()
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session (window 1280×900, page
    /// JavaScript off).
    pub(crate) async fn start() -> Self {
        for bin in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                Path::new(bin).exists(),
                "the browser test needs {bin} (Debian's `chromium` and `chromium-driver`). Run \
                 `cargo xtask test`, which installs them, or `apt-get install -y chromium \
                 chromium-driver` as root"
            );
        }
        let port = free_port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {CHROMEDRIVER}: {e}"));
        let url = format!("http://127.0.0.1:{port}");
        wait_driver_ready(&url).await;
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".to_owned(),
            json!({
                "binary": CHROMIUM,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1280,900"],
                // The pages must work without JavaScript: the browser runs none of theirs
                // (WebDriver's own commands still work).
                "prefs": { "profile.managed_default_content_settings.javascript": 2 },
            }),
        );
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(caps)
            .connect(&url)
            .await
            .unwrap_or_else(|e| panic!("opening a Chromium session on {url}: {e}"));
        Self { client, driver }
    }

    /// Ends the session (closing Chromium) and the driver.
    pub(crate) async fn close(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }

    /// The element `css`, waiting for it to be present.
    pub(crate) async fn find(&self, css: &str) -> Element {
        self.client
            .wait()
            .at_most(WAIT)
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("waiting for `{css}`: {e}"))
    }

    /// The text of every cell matched by `css`.
    pub(crate) async fn texts(&self, css: &str) -> Vec<String> {
        let mut out = Vec::new();
        for e in self
            .client
            .find_all(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("finding `{css}`: {e}"))
        {
            out.push(
                e.text()
                    .await
                    .unwrap_or_else(|e| panic!("text of `{css}`: {e}")),
            );
        }
        out
    }

    /// Navigates to `url` and waits for the page's `css` element.
    pub(crate) async fn open(&self, url: &str, css: &str) -> Element {
        self.client
            .goto(url)
            .await
            .unwrap_or_else(|e| panic!("opening {url}: {e}"));
        self.find(css).await
    }

    /// Logs in as `token`'s user the way a person does: pastes it in the login form and submits
    /// it (a token never goes in a URL), then waits for the facts page's `css` element.
    pub(crate) async fn log_in(&self, s: &Server, token: &str, css: &str) -> Element {
        self.open(&s.url("/login"), "textarea#token")
            .await
            .send_keys(token)
            .await
            .unwrap_or_else(|e| panic!("typing the token: {e}"));
        self.find("form[action='/login'] button[type=submit]")
            .await
            .click()
            .await
            .unwrap_or_else(|e| panic!("submitting the login form: {e}"));
        self.find(css).await
    }

    /// Saves a PNG screenshot of the page to `path` (creating its folder).
    pub(crate) async fn screenshot(&self, path: &Path) {
        let png = self.client.screenshot().await.expect("screenshot");
        assert!(png.starts_with(b"\x89PNG"), "a screenshot is a PNG");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("screenshot folder");
        }
        std::fs::write(path, png).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Polls chromedriver's `/status` until it says ready (an explicit wait with a deadline).
async fn wait_driver_ready(url: &str) {
    let http = reqwest::Client::new();
    let deadline = Instant::now() + WAIT;
    loop {
        if let Ok(r) = http.get(format!("{url}/status")).send().await
            && let Ok(v) = r.json::<serde_json::Value>().await
            && v["value"]["ready"] == json!(true)
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "chromedriver at {url} was not ready within {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Where a screenshot goes: `docs/images/NAME` in the workspace when `UPDATE_DOCS_IMAGES` is
/// set (regenerating the documentation's pictures on purpose), otherwise a directory under the
/// system's temporary directory, so a test run never writes into the source tree.
pub(crate) fn docs_image(name: &str) -> PathBuf {
    let dir = if std::env::var_os("UPDATE_DOCS_IMAGES").is_some() {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/images")
    } else {
        let dir = std::env::temp_dir().join("live-runner-browser-screenshots");
        std::fs::create_dir_all(&dir).expect("creating the screenshot directory");
        dir
    };
    dir.join(name)
}

/// Waits for an element matching the XPath `xpath` (e.g. a message with its exact text: the
/// page after a form post, not the one before it).
async fn wait_xpath(b: &Browser, xpath: &str) -> Element {
    b.client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::XPath(xpath))
        .await
        .unwrap_or_else(|e| panic!("waiting for `{xpath}`: {e}"))
}

/// The cells of fact row `id`: text, topic, source, confidence.
async fn row(b: &Browser, id: Uuid) -> [String; 4] {
    let r = format!("tr#fact-{id}");
    let cell = |c: &str| format!("{r} td.{c}");
    [
        b.find(&cell("fact")).await.text().await.unwrap(),
        b.find(&cell("topic")).await.text().await.unwrap(),
        b.find(&cell("source")).await.text().await.unwrap(),
        b.find(&cell("confidence")).await.text().await.unwrap(),
    ]
}

async fn remember(
    s: &Server,
    user: Uuid,
    fact: &str,
    topic: &str,
    source: FactSource,
    confidence: FactConfidence,
) -> Uuid {
    let id = Uuid::new_v4();
    s.store
        .remember(
            &NewFact {
                id,
                user_id: user,
                skill_id: None,
                fact: fact.into(),
                source,
                confidence,
                topic: Some(topic.into()),
                actor: "chat-agent".into(),
            },
            db::test_support::at(60),
        )
        .await
        .expect("remember");
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn facts_page_add_edit_promote_archive_in_chromium() {
    let s = page_server().await;
    // The user owns a deployment with trades and lessons: its memory page is shown at the end.
    let fx = seed_memory(&s.store).await;
    let user = fx.user.id;
    let token = s
        .auth
        .mint(user, chrono::Duration::hours(1), chrono::Utc::now())
        .expect("mint");
    let symbols = remember(
        &s,
        user,
        "You trade BTC and ETH only, no alts.",
        "symbols",
        FactSource::Chat,
        FactConfidence::Asserted,
    )
    .await;
    let style = remember(
        &s,
        user,
        "Seems to favour mean-reversion entries after a flush.",
        "style",
        FactSource::Inferred,
        FactConfidence::Inferred,
    )
    .await;
    // Both were shown in a chat prompt an hour later (what bumps `last referenced`).
    let shown = s
        .store
        .top_facts(user, None, 10, Some(db::test_support::at(120)))
        .await
        .expect("top facts");
    assert_eq!(shown.len(), 2);
    let b = Browser::start().await;

    // Log in with the token `live-runner token` prints, pasted in the form: the cookie is set,
    // the facts are shown.
    b.log_in(&s, &token, "table#facts").await;
    // JavaScript is off: the layout's <noscript> marker is an element, not text.
    b.find("noscript #no-js").await;
    assert_eq!(
        b.client.current_url().await.unwrap().path(),
        "/profile/facts"
    );
    assert_eq!(
        row(&b, symbols).await,
        [
            "You trade BTC and ETH only, no alts.",
            "symbols",
            "chat",
            "asserted"
        ]
    );
    assert_eq!(
        b.find(&format!("tr#fact-{symbols} td.last-referenced"))
            .await
            .text()
            .await
            .unwrap(),
        "2026-06-04 12:00"
    );
    assert_eq!(
        row(&b, style).await,
        [
            "Seems to favour mean-reversion entries after a flush.",
            "style",
            "inferred",
            "inferred"
        ]
    );

    // Add.
    b.find("#new-fact")
        .await
        .send_keys("Never risk more than 1% of equity on one trade.")
        .await
        .unwrap();
    b.find("#new-topic").await.send_keys("risk").await.unwrap();
    b.find("#new-confidence")
        .await
        .select_by_value("inferred")
        .await
        .unwrap();
    b.find("#add-fact button[type=submit]")
        .await
        .click()
        .await
        .unwrap();
    wait_xpath(&b, "//p[@id='notice' and text()='Fact added.']").await;
    let added = s.store.list_facts(user, false).await.unwrap();
    let new = added
        .iter()
        .find(|f| f.source == FactSource::Profile)
        .expect("the added fact is stored")
        .id;
    assert_eq!(
        row(&b, new).await,
        [
            "Never risk more than 1% of equity on one trade.",
            "risk",
            "profile",
            "inferred"
        ]
    );
    assert_eq!(b.texts("table#facts tbody tr").await.len(), 3);

    // Edit its text and topic (the row's <details> form).
    b.find(&format!("tr#fact-{new} details.edit summary"))
        .await
        .click()
        .await
        .unwrap();
    let text = b
        .find(&format!("tr#fact-{new} details.edit textarea"))
        .await;
    text.clear().await.unwrap();
    text.send_keys("Never risk more than 0.5% of equity on one trade.")
        .await
        .unwrap();
    let topic = b
        .find(&format!("tr#fact-{new} details.edit input[name=topic]"))
        .await;
    topic.clear().await.unwrap();
    topic.send_keys("risk-cap").await.unwrap();
    b.find(&format!("tr#fact-{new} details.edit button[type=submit]"))
        .await
        .click()
        .await
        .unwrap();
    wait_xpath(&b, "//p[@id='notice' and text()='Fact saved.']").await;
    assert_eq!(
        row(&b, new).await,
        [
            "Never risk more than 0.5% of equity on one trade.",
            "risk-cap",
            "profile",
            "inferred"
        ]
    );

    // Promote it (inferred → asserted).
    let promote = b
        .find(&format!("tr#fact-{new} form.confidence button"))
        .await;
    assert_eq!(promote.text().await.unwrap(), "Promote to asserted");
    promote.click().await.unwrap();
    wait_xpath(
        &b,
        "//p[@id='notice' and text()='Fact promoted to asserted.']",
    )
    .await;
    assert_eq!(row(&b, new).await[3], "asserted");
    assert_eq!(
        b.find(&format!("tr#fact-{new} form.confidence button"))
            .await
            .text()
            .await
            .unwrap(),
        "Demote to inferred"
    );
    // Three facts of mixed confidence: the README's picture.
    b.screenshot(&docs_image("facts-page.png")).await;

    // Archive it as corrected: it lands in the archived view with its reason.
    b.find(&format!("tr#fact-{new} details.archive summary"))
        .await
        .click()
        .await
        .unwrap();
    b.find(&format!("tr#fact-{new} details.archive select"))
        .await
        .select_by_value("user_corrected")
        .await
        .unwrap();
    b.find(&format!(
        "tr#fact-{new} details.archive button[type=submit]"
    ))
    .await
    .click()
    .await
    .unwrap();
    wait_xpath(&b, "//p[@id='notice' and text()='Fact archived.']").await;
    assert!(
        b.find(&format!("tr#fact-{new} td.archived"))
            .await
            .text()
            .await
            .unwrap()
            .ends_with("· user_corrected")
    );
    // Toggle: hide archived (the row goes), show archived (it is back, with its reason).
    b.find("#toggle-archived").await.click().await.unwrap();
    wait_xpath(&b, "//a[@id='toggle-archived' and text()='Show archived']").await;
    assert_eq!(b.texts("table#facts tbody tr").await.len(), 2);
    assert!(b.texts(&format!("tr#fact-{new}")).await.is_empty());
    b.find("#toggle-archived").await.click().await.unwrap();
    wait_xpath(&b, "//a[@id='toggle-archived' and text()='Hide archived']").await;
    assert_eq!(b.texts("table#facts tbody tr").await.len(), 3);
    assert_eq!(
        row(&b, new).await[0],
        "Never risk more than 0.5% of equity on one trade."
    );
    assert!(
        b.find(&format!("tr#fact-{new} td.archived"))
            .await
            .text()
            .await
            .unwrap()
            .contains("user_corrected")
    );

    // The memory page of the user's deployment, by its link on the facts page: trades,
    // lessons, the prompt with counts.
    let link = b.find("#deployments a").await;
    assert_eq!(link.text().await.unwrap(), fx.deployment.id.to_string());
    link.click().await.unwrap();
    b.find("table#trades").await;
    assert_eq!(
        b.client.current_url().await.unwrap().path(),
        format!("/deployments/{}/memory", fx.deployment.id)
    );
    assert_eq!(b.texts("table#trades tbody tr").await.len(), 3);
    assert_eq!(b.texts("table#notes tbody tr").await.len(), 2);
    let pnl = b.texts("table#trades tbody td.pnl").await;
    assert_eq!(pnl, ["$0.00", "-$22.79", "+$6.81"]);
    assert!(
        !b.find("#system-tokens")
            .await
            .text()
            .await
            .unwrap()
            .is_empty()
    );
    // Tall enough for the trades, the lessons and the start of the prompt.
    b.client
        .set_window_size(1280, 1500)
        .await
        .expect("resize the window");
    b.find("#system-prompt").await;
    b.screenshot(&docs_image("memory-page.png")).await;
    b.close().await;

    // The store agrees, and the audit trail holds every step.
    let stored = s.store.list_facts(user, true).await.unwrap();
    let f = stored.iter().find(|f| f.id == new).unwrap();
    assert_eq!(f.confidence, FactConfidence::Asserted);
    assert_eq!(f.archived_reason, Some(ArchiveReason::UserCorrected));
    let ops: Vec<_> = s
        .store
        .fact_changes(new)
        .await
        .unwrap()
        .iter()
        .map(|c| c.op)
        .collect();
    assert_eq!(
        ops,
        [
            FactChangeOp::Insert,
            FactChangeOp::Update,
            FactChangeOp::Update,
            FactChangeOp::Archive
        ]
    );
}

/// A page of another origin — another port of this host — with one plain form that posts to
/// `action` on the server under test (what a CSRF attack is), served until the task is dropped.
async fn attacker_page(action: String) -> (String, tokio::task::JoinHandle<()>) {
    attacker_form(action, &[("reason", "planted")]).await
}

/// [`attacker_page`] with these hidden fields.
async fn attacker_form(
    action: String,
    fields: &[(&str, &str)],
) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let hidden: String = fields
        .iter()
        .map(|(name, value)| format!("<input type=\"hidden\" name=\"{name}\" value=\"{value}\">"))
        .collect();
    let html = format!(
        "<!doctype html><title>prize</title><form method=\"post\" action=\"{action}\">\
         {hidden}<button type=\"submit\" id=\"go\">Claim your prize</button></form>"
    );
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(move || {
            let html = html.clone();
            async move { axum::response::Html(html) }
        }),
    );
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_no_tick_while_paused_resume_in_chromium_and_no_control_from_another_port() {
    use db::{ControlStore, DeploymentStatus, RegistryStore, TickStore};

    let s = page_server().await;
    let hl = crate::common::hyperliquid_mock().await;
    let first = crate::common::t("2026-11-02T12:00:00Z");
    let hour = chrono::Duration::hours(1);
    let owner = Uuid::from_u128(0x0b_0a11ce);
    let skill = live_runner::admin::load_skill_file(&crate::common::fixture("btc-sma-cross.yaml"))
        .expect("skill");
    let store = db::Store::Postgres(s.store.clone());
    let id = live_runner::admin::deploy(
        &store,
        &skill,
        &live_runner::test_support::paper_deploy(owner),
        first - chrono::Duration::minutes(30),
    )
    .await
    .expect("deploy")
    .id;
    let tick = |now, name: &'static str| {
        let pg = &s.pg;
        let hl = &hl;
        async move {
            let r = crate::common::runner(pg, hl, now, name, 2, None).await;
            r.clone().run(std::future::pending()).await.expect("run");
            r.metrics().ticks("recorded")
        }
    };
    assert_eq!(tick(first + chrono::Duration::seconds(5), "bar1").await, 1);

    let token = s
        .auth
        .mint(owner, chrono::Duration::hours(1), chrono::Utc::now())
        .expect("mint");
    let b = Browser::start().await;
    b.log_in(&s, &token, "#add-fact").await;
    let page = s.url(&format!("/deployments/{id}/memory"));
    let badge = b.open(&page, "#status-badge").await;
    assert_eq!(badge.text().await.unwrap(), "active");

    // Pause with a reason, from the page.
    b.find("#pause-form input[name=reason]")
        .await
        .send_keys("CPI print at 14:30")
        .await
        .unwrap();
    b.find("#pause").await.click().await.unwrap();
    wait_xpath(
        &b,
        "//div[@id='control-notice'][contains(., 'Paused: no tick until you resume it.')]",
    )
    .await;
    assert_eq!(
        b.find("#status-badge").await.text().await.unwrap(),
        "paused"
    );
    assert_eq!(
        b.texts("#controls-trail tbody td").await[1..],
        [
            "pause".to_owned(),
            "active → paused".to_owned(),
            owner.to_string(),
            "CPI print at 14:30".to_owned()
        ]
    );

    // Bar 2 closes while paused: no tick.
    assert_eq!(
        tick(first + hour + chrono::Duration::seconds(5), "bar2").await,
        0
    );

    // A page on another port of the same host posts the resume form with the browser's cookie:
    // refused, nothing changes.
    let (evil, evil_task) = attacker_page(s.url(&format!("/deployments/{id}/resume"))).await;
    b.open(&evil, "#go").await.click().await.unwrap();
    wait_xpath(&b, "//*[contains(., 'from another origin is refused')]").await;
    evil_task.abort();
    assert_eq!(
        s.store.get_deployment(id).await.unwrap().status,
        DeploymentStatus::Paused
    );
    assert_eq!(s.store.deployment_controls(id, 10).await.unwrap().len(), 1);

    // Resume from the page: it ticks again at the next bar, from where it was.
    b.open(&page, "#resume").await.click().await.unwrap();
    wait_xpath(&b, "//div[@id='control-notice'][contains(., 'Resumed')]").await;
    assert_eq!(
        b.find("#status-badge").await.text().await.unwrap(),
        "active"
    );
    let third = first + hour * 2;
    assert_eq!(tick(third + chrono::Duration::seconds(5), "bar3").await, 1);
    assert_eq!(
        s.store
            .list_snapshots(id, 10)
            .await
            .unwrap()
            .iter()
            .map(|s| s.tick_at)
            .collect::<Vec<_>>(),
        vec![third, first]
    );
    b.close().await;
}

/// Logging in takes the token from the form's body only: the address `/login?token=…` logs no
/// one in, and a page on another port of the same host cannot log the browser in as someone
/// else (login CSRF). The pages' stylesheet applies under the Content-Security-Policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_by_form_only_and_never_from_another_port_in_chromium() {
    let s = page_server().await;
    let (victim, victim_token) = new_user(&s).await;
    let (attacker, attacker_token) = new_user(&s).await;
    let b = Browser::start().await;

    // A token in the address: refused, no cookie — the facts page still asks for a login.
    let error = b
        .open(&s.url(&format!("/login?token={victim_token}")), "#error")
        .await;
    assert!(
        error
            .text()
            .await
            .unwrap()
            .contains("a token in the address is refused"),
    );
    b.open(&s.url("/profile/facts"), "textarea#token").await;
    assert_eq!(b.client.current_url().await.unwrap().path(), "/login");

    // The form logs the victim in.
    b.log_in(&s, &victim_token, "#add-fact").await;
    let who = b.find("header .who").await.text().await.unwrap();
    assert_eq!(who, format!("signed in as {victim}"));
    // The stylesheet is served and applied (the policy allows no inline style).
    let background = b
        .find("header")
        .await
        .css_value("background-color")
        .await
        .unwrap();
    assert!(background.contains("29, 35, 48"), "{background}");

    // Another port posts a login form with the attacker's token: refused, the browser is still
    // the victim's.
    let (evil, evil_task) = attacker_form(s.url("/login"), &[("token", &attacker_token)]).await;
    b.open(&evil, "#go").await.click().await.unwrap();
    wait_xpath(&b, "//*[contains(., 'from another origin is refused')]").await;
    evil_task.abort();
    b.open(&s.url("/profile/facts"), "#add-fact").await;
    let who = b.find("header .who").await.text().await.unwrap();
    assert_eq!(who, format!("signed in as {victim}"));
    assert_ne!(victim, attacker);
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_lesson_accepted_in_chromium_leaves_the_queue_and_joins_the_note_in_force() {
    use db::{HeldStatus, NoteScope, NoteStore};

    let s = page_server().await;
    let fx = seed_memory(&s.store).await;
    let user = fx.user.id;
    // A later reflection held two bullets back, beside its note, with the defences' findings.
    let bullet = "- Breakouts after 14:00 UTC failed twice: skip them.";
    let mut note =
        db::test_support::sample_note(&fx, db::test_support::at(38 * 60), "- third lesson");
    note.content.held = vec![
        types::HeldLesson {
            text: bullet.into(),
            reasons: vec![
                "not grounded in the ledger: \"14:00\" is a time the ledger does not show".into(),
                "the judge did not clear it".into(),
            ],
        },
        types::HeldLesson {
            text: "- Double the size after two wins.".into(),
            reasons: vec!["speaks of raising risk or exposure (double the size)".into()],
        },
    ];
    s.store.insert_note(&note).await.expect("held note");
    let held = [
        db::held_lesson_id(note.id, 0),
        db::held_lesson_id(note.id, 1),
    ];
    let token = s
        .auth
        .mint(user, chrono::Duration::hours(1), chrono::Utc::now())
        .expect("mint");
    let b = Browser::start().await;
    b.log_in(&s, &token, "#add-fact").await;

    // The queue, from the navigation: both bullets with why each was held.
    b.find("#nav-lessons").await.click().await.unwrap();
    b.find("table#held").await;
    assert_eq!(b.client.current_url().await.unwrap().path(), "/lessons");
    assert_eq!(b.texts("table#held tbody tr").await.len(), 2);
    let row = |id: Uuid| format!("tr#held-{id}");
    assert_eq!(
        b.texts(&format!("{} td.lesson", row(held[0]))).await,
        [bullet]
    );
    assert_eq!(
        b.texts(&format!("{} td.reasons li", row(held[0]))).await,
        [
            "not grounded in the ledger: \"14:00\" is a time the ledger does not show",
            "the judge did not clear it"
        ]
    );
    b.screenshot(&docs_image("lessons-page.png")).await;

    // Accept the first with a reason.
    b.find(&format!("{} input[name=reason]", row(held[0])))
        .await
        .send_keys("matches what I saw on the chart")
        .await
        .unwrap();
    b.find(&format!("{} button.accept", row(held[0])))
        .await
        .click()
        .await
        .unwrap();
    wait_xpath(&b, "//p[@id='notice'][contains(., 'Accepted')]").await;
    assert_eq!(b.texts("table#held tbody tr").await.len(), 1);
    assert!(b.texts(&row(held[0])).await.is_empty(), "it left the queue");

    // The deployment's page: the note in force now ends with it; one lesson still waits.
    b.open(
        &s.url(&format!("/deployments/{}/memory", fx.deployment.id)),
        "table#notes",
    )
    .await;
    let first = b.texts("table#notes tbody tr:first-child td").await;
    assert_eq!(first[0], "active");
    assert!(
        first[4].ends_with(&format!("- third lesson\n{bullet}")),
        "{first:?}"
    );
    assert_eq!(
        b.find("#lessons-waiting").await.text().await.unwrap(),
        "1 held lesson waits for your review"
    );
    b.close().await;

    // The store agrees: the note in force carries it, and the review names the user and why.
    let scope = NoteScope::Deployment(fx.deployment.id);
    let active = s
        .store
        .active_note(scope, chrono::Utc::now())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(active.id, db::accepted_note_id(held[0]));
    assert!(active.content.lessons_text.ends_with(bullet));
    let reviewed = s
        .store
        .held_lessons(scope, Some(HeldStatus::Accepted), 10)
        .await
        .unwrap();
    assert_eq!(reviewed.len(), 1);
    assert_eq!(reviewed[0].reviewed_by, Some(user.to_string()));
    assert_eq!(
        reviewed[0].review_reason.as_deref(),
        Some("matches what I saw on the chart")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alert_channel_added_tested_and_deleted_in_chromium_never_shows_its_secret() {
    let s = page_server().await;
    let (_, token) = new_user(&s).await;
    let b = Browser::start().await;
    b.log_in(&s, &token, "#add-fact").await;
    b.find("#nav-alerts").await.click().await.unwrap();
    b.find("#no-channels").await;

    // A signed webhook, every event kind (checked by default).
    let secret = "hmac-key-never-shown-9f2c";
    let form = "form#add-channel";
    for (field, value) in [
        ("name", "desk webhook"),
        ("url", "http://127.0.0.1:9/hooks/private-path"),
        ("secret", secret),
    ] {
        b.find(&format!("{form} input[name={field}]"))
            .await
            .send_keys(value)
            .await
            .unwrap();
    }
    b.find(&format!("{form} select[name=kind] option[value=webhook]"))
        .await
        .click()
        .await
        .unwrap();
    b.find(&format!("{form} button[type=submit]"))
        .await
        .click()
        .await
        .unwrap();
    b.find("table#channels").await;
    let rows = b.texts("table#channels tbody tr").await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        b.texts("table#channels td.target").await,
        ["http://127.0.0.1:9"]
    );
    let html = b.client.source().await.unwrap();
    assert!(
        !html.contains(secret) && !html.contains("private-path"),
        "{html}"
    );

    // A test message is queued (a runner's alert worker sends it), then the channel goes.
    b.find("table#channels button.test")
        .await
        .click()
        .await
        .unwrap();
    b.find("#notice").await;
    assert_eq!(b.texts("table#deliveries tbody tr").await.len(), 1);
    b.find("table#channels button.delete")
        .await
        .click()
        .await
        .unwrap();
    b.find("#no-channels").await;
    let html = b.client.source().await.unwrap();
    assert!(!html.contains(secret), "{html}");
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_turn_and_an_action_confirmation_on_the_chat_page_in_chromium() {
    use agent_runtime::LanguageModel;
    use db::{DeploymentStatus, RegistryStore};
    use model::test_support::{tool_call, tool_turn};

    use crate::serve_actions::{Later, prepare_pause};
    use crate::serve_chat::say;

    let model = std::sync::Arc::new(Later::default());
    let s = crate::common::serve::server(model.clone() as std::sync::Arc<dyn LanguageModel>).await;
    let w = crate::common::serve::world(&s).await;
    let (a, dep) = (&w.a, w.a.deployment());
    let skill = a.fx.skill.name.clone();
    let read =
        "Your BTC breakout deployment is active.\nOne trade closed so far; one lesson in force.";
    let asked = "I prepared a pause of BTC breakout before the CPI print.\nNothing changes until you confirm it below.";
    model.script(vec![
        tool_turn(vec![tool_call("call_1", "get_my_deployments", "{}")]),
        say(read),
        prepare_pause(dep),
        say(asked),
    ]);
    let b = Browser::start().await;
    b.log_in(&s, &a.token, "#add-fact").await;

    // From the navigation: a new conversation about the deployment, typed and sent.
    b.find("#nav-chat").await.click().await.unwrap();
    b.find("#no-conversations").await;
    b.find("#new-deployment")
        .await
        .select_by_value(&dep.to_string())
        .await
        .unwrap();
    b.find("#new-message")
        .await
        .send_keys("How is my BTC bot doing?")
        .await
        .unwrap();
    b.find("#new-conversation button[type=submit]")
        .await
        .click()
        .await
        .unwrap();
    b.find("article#turn-0").await;
    let url = b.client.current_url().await.unwrap();
    assert!(url.path().starts_with("/chat/"), "{url}");
    assert_eq!(url.fragment(), Some("turn-0"));
    assert_eq!(
        b.texts("#turn-0 .user-message").await,
        ["How is my BTC bot doing?"]
    );
    // The answer keeps its line break.
    assert_eq!(b.texts("#turn-0 .answer").await, [read]);
    // The tool call, in brief: its name, then arguments and result when opened.
    assert_eq!(
        b.texts("#turn-0 code.tool-name").await,
        ["get_my_deployments"]
    );
    b.find("#turn-0 details.tool-call summary")
        .await
        .click()
        .await
        .unwrap();
    let result = b.find("#turn-0 details.tool-call pre.result").await;
    let result = result.text().await.unwrap();
    assert!(result.contains(&skill), "{result}");
    assert!(result.chars().count() <= 300 + "… [999999 more characters]".len());

    // The next message alone; the coach prepares a pause, nothing changes yet.
    b.find("#message")
        .await
        .send_keys("Pause it before the CPI print.")
        .await
        .unwrap();
    b.find("#send-message button[type=submit]")
        .await
        .click()
        .await
        .unwrap();
    b.find("article#turn-1").await;
    assert_eq!(b.texts("#turn-1 .answer").await, [asked]);
    assert_eq!(b.texts("#turn-1 code.tool-name").await, ["prepare_action"]);
    let pending = b
        .texts("#chat-actions tbody tr.status-pending td.summary")
        .await;
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert!(pending[0].starts_with(&format!("Pause deployment \"{skill}\" v1")));
    assert_eq!(
        s.store.get_deployment(dep).await.unwrap().status,
        DeploymentStatus::Active
    );
    // Both turns, a tool call opened, the pending pause with its buttons: the README's picture.
    b.find("#turn-0 details.tool-call summary")
        .await
        .click()
        .await
        .unwrap();
    b.client
        .set_window_size(1280, 1350)
        .await
        .expect("resize the window");
    b.screenshot(&docs_image("chat.png")).await;

    // Confirm: the notice, the action confirmed, the deployment paused.
    b.find("#chat-actions tr.status-pending button.confirm")
        .await
        .click()
        .await
        .unwrap();
    wait_xpath(
        &b,
        "//p[@id='notice' and text()='Confirmed: the deployment is paused; no tick until you resume it.']",
    )
    .await;
    assert_eq!(
        b.texts("#chat-actions tbody td.status .badge").await,
        ["confirmed"]
    );
    assert!(b.texts("#chat-actions button.confirm").await.is_empty());
    assert_eq!(
        s.store.get_deployment(dep).await.unwrap().status,
        DeploymentStatus::Paused
    );
    b.open(
        &s.url(&format!("/deployments/{dep}/memory")),
        "#status-badge",
    )
    .await;
    assert_eq!(
        b.find("#status-badge").await.text().await.unwrap(),
        "paused"
    );
    // The conversation is listed with its two turns.
    b.find("#nav-chat").await.click().await.unwrap();
    assert_eq!(b.texts("table#conversations td.turns").await, ["2"]);
    assert_eq!(
        b.texts("table#conversations td.title").await,
        ["How is my BTC bot doing?"]
    );
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backtest_runs_and_its_report_opens_in_chromium() {
    use db::JobQueue;
    let s = page_server().await;
    let (_, token) = new_user(&s).await;
    let eurusd = std::fs::read_to_string(crate::common::repo("examples/data/EURUSD.csv")).unwrap();
    let body = json!({
        "skill": std::fs::read_to_string(crate::common::repo("examples/skills/eurusd-sma-cross.yaml")).unwrap(),
        "bars": {"EURUSD": {"format": "csv", "data": eurusd.lines().take(201).collect::<Vec<_>>().join("\n")}},
        "label": "two hundred hours",
    });
    let (code, job) = s.post("/api/backtests", &token, &body).await;
    assert_eq!(code, reqwest::StatusCode::CREATED, "{job}");
    let id: Uuid = job["id"].as_str().unwrap().parse().unwrap();
    // A worker has run half of it.
    let (now, lease) = (chrono::Utc::now(), chrono::Duration::seconds(60));
    s.store.claim_jobs("worker", now, lease, 1).await.unwrap();
    assert!(
        s.store
            .begin_job_run(id, "worker", Uuid::new_v4(), 200)
            .await
            .unwrap()
    );
    let half = db::JobProgress {
        ticks_done: 100,
        ticks_total: Some(200),
        cost_usd: rust_decimal::Decimal::ZERO,
    };
    s.store
        .heartbeat_job(id, "worker", now, now + lease, half)
        .await
        .unwrap();

    let b = Browser::start().await;
    b.log_in(&s, &token, "#add-fact").await;
    b.find("#nav-backtests").await.click().await.unwrap();
    let row = format!("tr#backtest-{id}");
    b.find(&row).await;
    assert_eq!(
        b.texts(&format!("{row} .badge")).await,
        ["running"],
        "the status"
    );
    let bar = b.find(&format!("{row} progress")).await;
    assert_eq!(bar.attr("value").await.unwrap().as_deref(), Some("100"));
    assert_eq!(bar.attr("max").await.unwrap().as_deref(), Some("200"));
    assert!(b.texts(&format!("{row} td.progress")).await[0].starts_with("100 of 200 ticks"));

    // Done: its figures and its report, whose style sheet the page links.
    let result = db::JobResult {
        summary: json!({"ticks": 200, "trades": 4, "cost_usd": "0",
                        "pnl": {"net_usd": "12.5", "fees_usd": "3"},
                        "total_return_pct": "0.13", "max_drawdown_pct": "0.4",
                        "win_rate_pct": "50"}),
        report_html: Some(
            "<!DOCTYPE html><html><head><title>Backtest</title><style>h1{color:#0a7a3d}</style>\
             </head><body><h1 id=\"report-title\">Backtest · EURUSD</h1></body></html>"
                .into(),
        ),
        progress: db::JobProgress {
            ticks_done: 200,
            ..half
        },
    };
    assert!(
        s.store
            .finish_job(id, "worker", chrono::Utc::now(), &result)
            .await
            .unwrap()
    );
    b.client.refresh().await.unwrap();
    b.find(&format!("{row} a[href$='/report']"))
        .await
        .click()
        .await
        .unwrap();
    let title = b.find("#report-title").await;
    assert_eq!(title.text().await.unwrap(), "Backtest · EURUSD");
    assert_eq!(
        title.css_value("color").await.unwrap(),
        "rgba(10, 122, 61, 1)",
        "the report's style sheet applies under the pages' policy"
    );
    b.close().await;
}
