//! The headless browser of `portal_browser`: Debian's chromedriver on a free
//! loopback port driving Debian's chromium (`--headless=new`, a throwaway
//! profile), through WebDriver with fantoccini, plus the few steps every
//! page of the walkthrough needs: wait for an element, save a screenshot,
//! sign in at the provider's own login form, sign out.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use fantoccini::{Client, ClientBuilder, Locator, elements::Element};
use hyper_util::client::legacy::connect::HttpConnector;
use nix::{sys::signal, unistd::Pid};
use serde_json::{Value, json};

use crate::helpers::repo_path;

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How long a page may take to show what the next step waits for.
const PATIENCE: Duration = Duration::from_secs(15);

/// chromedriver in a process group of its own, with the chromium it starts:
/// the whole group is killed on drop, also when a step panics.
struct Driver {
    child: Child,
    _profile: tempfile::TempDir,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let group = Pid::from_raw(self.child.id() as i32);
        let _ = signal::killpg(group, signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// The browser, the portal's base URL and the screenshots taken so far.
pub(crate) struct Chrome {
    pub client: Client,
    pub base: String,
    shots: Vec<PathBuf>,
    dir: PathBuf,
    /// Names every screenshot of this run starts with.
    prefix: String,
    _driver: Driver,
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

impl Chrome {
    /// chromedriver and a headless chromium, screenshots named `NN-name.png`.
    pub(crate) async fn start(base: &str) -> Self {
        Self::start_with_prefix(base, "").await
    }

    /// Screenshots named `{prefix}NN-name.png`, for a test that owns the
    /// prefix: an earlier run's screenshots of that prefix are removed,
    /// other tests' stay.
    pub(crate) async fn start_with_prefix(base: &str, prefix: &str) -> Self {
        Self::start_with(base, prefix, true).await
    }

    /// As `start_with_prefix`; `clean: false` for a prefix several tests
    /// share, whose screenshots are overwritten by name. Fails (never skips)
    /// when Debian's chromium or chromium-driver is not installed.
    pub(crate) async fn start_with(base: &str, prefix: &str, clean: bool) -> Self {
        assert!(
            Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists(),
            "{CHROMIUM} and {CHROMEDRIVER} are missing: run scripts/install-test-deps.sh \
             (apt-get install chromium chromium-driver)"
        );
        let port = free_port();
        let profile = tempfile::tempdir().unwrap();
        let child = {
            use std::os::unix::process::CommandExt;
            Command::new(CHROMEDRIVER)
                .arg(format!("--port={port}"))
                .process_group(0)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("chromedriver starts")
        };
        let driver = Driver {
            child,
            _profile: profile,
        };
        let webdriver = format!("http://127.0.0.1:{port}");
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let status = teamgate::outbound::client()
                .get(format!("{webdriver}/status"))
                .send()
                .await;
            let ready = match status {
                Ok(response) => response.json::<Value>().await.ok(),
                Err(_) => None,
            };
            if ready.is_some_and(|s| s["value"]["ready"] == true) {
                break;
            }
            assert!(Instant::now() < until, "chromedriver not ready in 20 s");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile = driver._profile.path().display().to_string();
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                    format!("--user-data-dir={profile}"), "--window-size=1280,1000"],
            },
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&webdriver)
            .await
            .expect("a WebDriver session in headless chromium");
        let dir = repo_path("target/portal-screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        for entry in std::fs::read_dir(&dir).unwrap().flatten().filter(|_| clean) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let numbered = name.strip_prefix(prefix).is_some_and(|rest| {
                let b = rest.as_bytes();
                b.len() > 3 && b[..2].iter().all(u8::is_ascii_digit) && b[2] == b'-'
            });
            if numbered && name.ends_with(".png") {
                std::fs::remove_file(entry.path()).unwrap();
            }
        }
        Self {
            client,
            base: base.to_owned(),
            shots: Vec::new(),
            dir,
            prefix: prefix.to_owned(),
            _driver: driver,
        }
    }

    /// Saves the page as `target/portal-screenshots/{prefix}NN-name.png`.
    pub(crate) async fn shot(&mut self, name: &str) {
        let png = self.client.screenshot().await.expect("a screenshot");
        let path = self.dir.join(format!(
            "{}{:02}-{name}.png",
            self.prefix,
            self.shots.len() + 1
        ));
        std::fs::write(&path, png).unwrap();
        self.shots.push(path);
    }

    pub(crate) async fn goto(&self, path: &str) {
        let url = format!("{}{path}", self.base);
        self.client.goto(&url).await.expect("the page loads");
    }

    /// The element at `xpath` once it is there (at most 15 s); on timeout the
    /// failure shows the page.
    pub(crate) async fn wait(&self, xpath: &str) -> Element {
        match self
            .client
            .wait()
            .at_most(PATIENCE)
            .every(Duration::from_millis(50))
            .for_element(Locator::XPath(xpath))
            .await
        {
            Ok(element) => element,
            Err(error) => panic!("{xpath} did not appear ({error}): {}", self.page().await),
        }
    }

    /// Waits until nothing matches `xpath`.
    pub(crate) async fn wait_gone(&self, xpath: &str) {
        let until = Instant::now() + PATIENCE;
        while !self.all(xpath).await.is_empty() {
            assert!(
                Instant::now() < until,
                "{xpath} is still there: {}",
                self.page().await
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub(crate) async fn all(&self, xpath: &str) -> Vec<Element> {
        self.client.find_all(Locator::XPath(xpath)).await.unwrap()
    }

    /// The cells' texts of each table row at `rows`.
    pub(crate) async fn cells(&self, rows: &str) -> Vec<Vec<String>> {
        let mut table = Vec::new();
        for row in self.all(rows).await {
            let mut cells = Vec::new();
            for cell in row.find_all(Locator::XPath("td")).await.unwrap() {
                cells.push(cell.text().await.unwrap());
            }
            table.push(cells);
        }
        table
    }

    /// Reloads the page until the rows at `rows` satisfy `ready` (at most
    /// 15 s: the audit trail is written in batches); those rows.
    pub(crate) async fn reload_until(
        &self,
        rows: &str,
        ready: impl Fn(&[Vec<String>]) -> bool,
    ) -> Vec<Vec<String>> {
        let until = Instant::now() + PATIENCE;
        loop {
            let table = self.cells(rows).await;
            if ready(&table) {
                return table;
            }
            assert!(Instant::now() < until, "{table:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
            self.client.refresh().await.unwrap();
        }
    }

    /// The visible text of the first element at `xpath`.
    pub(crate) async fn text(&self, xpath: &str) -> String {
        self.wait(xpath).await.text().await.unwrap()
    }

    /// The URL and the HTML of the page, for failure messages.
    pub(crate) async fn page(&self) -> String {
        let url = self.client.current_url().await.map(|u| u.to_string());
        let html = self.client.source().await.unwrap_or_default();
        format!("{url:?}\n{html}")
    }

    /// Signs in as `user` from the portal's sign-in page through the
    /// provider's own login form; ends on the member's tokens page.
    pub(crate) async fn sign_in(&mut self, user: &str) {
        self.goto("/portal/").await;
        let link = self.wait("//main//a[normalize-space()='Sign in']").await;
        assert_eq!(self.text("//h1").await, "Sign in");
        self.shot(&format!("{user}-portal-sign-in")).await;
        link.click().await.unwrap();
        self.sign_in_at_provider(user, "/portal/").await;
        self.wait("//h1[.='Your tokens']").await;
    }

    /// At the provider's login form (after a sign-in link or a deep link):
    /// signs in as `user` and waits until teamgate's page `landing` shows.
    pub(crate) async fn sign_in_at_provider(&mut self, user: &str, landing: &str) {
        // The provider's login page: a fresh browser session has to sign in there.
        let login = self.wait("//form//input[@name='login']").await;
        let url = self.client.current_url().await.unwrap();
        assert!(
            !url.as_str().starts_with(&self.base),
            "the provider's page, not teamgate's: {url}"
        );
        login.send_keys(user).await.unwrap();
        let password = self.wait("//form//input[@name='password']").await;
        password.send_keys("any password").await.unwrap();
        self.shot(&format!("{user}-provider-login")).await;
        self.wait("//form//button[@type='submit']")
            .await
            .click()
            .await
            .unwrap();
        // Back at teamgate (a consent page, should the provider show one, is accepted).
        let until = Instant::now() + PATIENCE;
        loop {
            let url = self.client.current_url().await.unwrap();
            if url.as_str() == format!("{}{landing}", self.base) {
                break;
            }
            let consent = self
                .all("//form[input[@name='prompt' and @value='consent']]//button")
                .await;
            if let Some(button) = consent.first() {
                button.click().await.unwrap();
            }
            assert!(
                Instant::now() < until,
                "the sign-in did not come back: {}",
                self.page().await
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(
            self.text("//header/span").await,
            user,
            "signed in as {user}"
        );
    }

    /// Signs out with the header's button, then forgets every cookie (the
    /// provider's session too) so the next sign-in starts afresh.
    pub(crate) async fn sign_out(&mut self) {
        self.wait("//header//button[.='Sign out']")
            .await
            .click()
            .await
            .unwrap();
        self.wait("//h1[.='Sign in']").await;
        self.client.delete_all_cookies().await.unwrap();
    }

    /// Ends the browser; the screenshots taken, each checked to be a PNG.
    pub(crate) async fn close(self) -> Vec<PathBuf> {
        let Self {
            client,
            shots,
            _driver,
            ..
        } = self;
        client.close().await.expect("the browser closes");
        drop(_driver);
        for shot in &shots {
            let bytes = std::fs::read(shot).unwrap();
            assert!(
                bytes.len() > 1000 && bytes.starts_with(b"\x89PNG"),
                "{} is a PNG",
                shot.display()
            );
        }
        shots
    }
}
