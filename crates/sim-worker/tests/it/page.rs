//! A page the binary wrote, in headless Chromium: Debian's `chromium` driven over WebDriver by
//! `chromedriver` (started on a free port) with `fantoccini`. Installed by `cargo xtask test`;
//! without them the test fails and says what to install, never skips.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const WAIT: Duration = Duration::from_secs(20);

/// Chromium showing local files; the driver ends with it.
pub(crate) struct Page {
    pub(crate) client: Client,
    driver: Child,
}

impl Page {
    /// Opens `file` in a new headless Chromium (1280 pixels wide, JavaScript off: the pages
    /// need none).
    pub(crate) async fn open(file: &Path) -> Self {
        for bin in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                Path::new(bin).exists(),
                "this test needs {bin}: run `cargo xtask browser` (or `cargo xtask test`), which \
                 installs Debian's chromium and chromium-driver"
            );
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {CHROMEDRIVER}: {e}"));
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".to_owned(),
            serde_json::json!({
                "binary": CHROMIUM,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1280,1800"],
                "prefs": { "profile.managed_default_content_settings.javascript": 2 },
            }),
        );
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + WAIT;
        // The driver takes a moment to listen: connect until it answers.
        let client = loop {
            match ClientBuilder::new(HttpConnector::new())
                .capabilities(caps.clone())
                .connect(&url)
                .await
            {
                Ok(c) => break c,
                Err(e) if Instant::now() > deadline => panic!("a Chromium session on {url}: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        };
        let page = Self { client, driver };
        page.go(file).await;
        page
    }

    /// Navigates to `file`.
    pub(crate) async fn go(&self, file: &Path) {
        let url = format!("file://{}", file.display());
        self.client
            .goto(&url)
            .await
            .unwrap_or_else(|e| panic!("opening {url}: {e}"));
    }

    /// The texts of the elements `css` matches.
    pub(crate) async fn texts(&self, css: &str) -> Vec<String> {
        let mut out = Vec::new();
        for e in self.client.find_all(Locator::Css(css)).await.unwrap() {
            out.push(e.text().await.unwrap());
        }
        out
    }

    /// How many elements `css` matches.
    pub(crate) async fn count(&self, css: &str) -> usize {
        self.client.find_all(Locator::Css(css)).await.unwrap().len()
    }

    /// A PNG of the window, saved to `path`.
    pub(crate) async fn screenshot(&self, path: &Path) {
        let png = self.client.screenshot().await.expect("a screenshot");
        assert!(png.starts_with(b"\x89PNG"));
        std::fs::write(path, png).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }

    pub(crate) async fn close(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Where a documentation picture goes: `docs/images/NAME` when `UPDATE_DOCS_IMAGES` is set
/// (regenerating the README's pictures on purpose, as the live runner's page tests do),
/// otherwise a temporary folder, so a test run never writes into the source tree.
pub(crate) fn docs_image(name: &str) -> PathBuf {
    if std::env::var_os("UPDATE_DOCS_IMAGES").is_some() {
        return Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/images")
            .join(name);
    }
    let dir = std::env::temp_dir().join("sim-worker-page-screenshots");
    std::fs::create_dir_all(&dir).expect("the screenshot folder");
    dir.join(name)
}
