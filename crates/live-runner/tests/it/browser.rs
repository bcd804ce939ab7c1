//! The pages in a real browser: headless Chromium driven over WebDriver (chromedriver started
//! here on a free port, `fantoccini` as the client) against the real server on PostgreSQL.
//!
//! Chromium and chromedriver are Debian's packages, which `cargo xtask test` installs when they
//! are missing; without them this test fails and says so — it is never skipped.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::json;

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
    /// Starts chromedriver and a headless Chromium session (window 1280×900).
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

/// `docs/images/NAME` in the workspace.
pub(crate) fn docs_image(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/images")
        .join(name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_renders_a_page() {
    let b = Browser::start().await;
    b.open(
        "data:text/html,<table><tr><td class=c>a%20%26lt%3Bb%26gt%3B</td></tr></table>",
        "td.c",
    )
    .await;
    assert_eq!(b.texts("td.c").await, vec!["a <b>".to_owned()]);
    b.close().await;
}
