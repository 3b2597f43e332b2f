//! Debian's headless Chromium driven through `chromedriver` (WebDriver, `fantoccini`). Both come
//! from the `chromium` and `chromium-driver` packages that `scripts/setup-test-tools.sh`
//! installs; without them the test fails (it never skips). (Shared by two test binaries; each
//! uses part of it.)
#![allow(dead_code)]

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{json, Value};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The longest wait for the page to reach a state (a bound, never an assertion on time).
pub const WAIT: Duration = Duration::from_secs(60);

pub struct Browser {
    pub client: Client,
    driver: Child,
}

fn chromium() -> &'static str {
    for path in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if std::path::Path::new(path).exists() {
            return path;
        }
    }
    panic!("Chromium is not installed: run scripts/setup-test-tools.sh (apt-get install chromium chromium-driver)");
}

impl Browser {
    /// Starts `chromedriver` on a free loopback port and opens a headless Chromium session.
    pub async fn start() -> Browser {
        let binary = chromium();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect(
                "chromedriver is not installed: run scripts/setup-test-tools.sh \
                 (apt-get install chromium-driver)",
            );
        let mut browser = None;
        let capabilities = json!({
            "goog:chromeOptions": {
                "binary": binary,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1280,1700"],
            }
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        // chromedriver takes a moment to listen: at most 50 tries, 100 ms apart.
        for _ in 0..50 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let connected = ClientBuilder::new(HttpConnector::new())
                .capabilities(capabilities.clone())
                .connect(&format!("http://127.0.0.1:{port}"))
                .await;
            if let Ok(client) = connected {
                browser = Some(client);
                break;
            }
        }
        Browser {
            client: browser.expect("a Chromium session through chromedriver"),
            driver,
        }
    }

    /// Waits until the page's `body[data-state]` is `state` (the page sets it).
    pub async fn wait_for_state(&self, state: &str) {
        let selector = format!("body[data-state='{state}']");
        let found = self
            .client
            .wait()
            .at_most(WAIT)
            .for_element(Locator::Css(&selector))
            .await;
        if found.is_err() {
            let now = self.attr("body", "data-state").await;
            let notice = self.text("#notice").await;
            panic!("the page never reached state {state} (it is {now:?}; notice: {notice:?})");
        }
    }

    pub async fn text(&self, css: &str) -> String {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    pub async fn texts(&self, css: &str) -> Vec<String> {
        let mut out = Vec::new();
        for element in self.client.find_all(Locator::Css(css)).await.unwrap() {
            out.push(element.text().await.unwrap());
        }
        out
    }

    pub async fn attr(&self, css: &str, name: &str) -> Option<String> {
        let element = self.client.find(Locator::Css(css)).await.ok()?;
        element.attr(name).await.unwrap()
    }

    pub async fn attrs(&self, css: &str, name: &str) -> Vec<String> {
        let mut out = Vec::new();
        for element in self.client.find_all(Locator::Css(css)).await.unwrap() {
            out.push(element.attr(name).await.unwrap().unwrap_or_default());
        }
        out
    }

    /// Evaluates `script` (a function body that returns a value) in the page.
    pub async fn eval(&self, script: &str) -> Value {
        self.client.execute(script, Vec::new()).await.unwrap()
    }

    /// Saves a PNG of the page under `$PLAYGROUND_SCREENSHOTS/NAME` when that is set (the README's
    /// screenshots: `PLAYGROUND_SCREENSHOTS=docs/src cargo test --test integration playground_browser::`).
    pub async fn screenshot(&self, name: &str) {
        let Ok(dir) = std::env::var("PLAYGROUND_SCREENSHOTS") else {
            return;
        };
        let png = self.client.screenshot().await.unwrap();
        std::fs::write(std::path::Path::new(&dir).join(name), png).unwrap();
    }

    /// Ends the browser session (chromedriver is stopped on drop).
    pub async fn close(self) {
        let _ = self.client.clone().close().await;
    }
}

impl Drop for Browser {
    /// Stops chromedriver, also when a test fails before `close` (its Chromium goes with it).
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
