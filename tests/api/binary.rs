//! The real `teamgate serve` binary as a child process: for what only a
//! process shows (environment secrets, SIGHUP, personal tokens made with the
//! CLI). Its environment is set on the child, never on the test process.
//! Authentication is on (the default): clients connect with `token()`.

use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    time::Duration,
};

use crate::helpers::repo_path;

pub(crate) struct Served {
    pub child: Child,
    pub url: String,
    config: std::path::PathBuf,
    pub(crate) store_url: String,
    /// Every line the process logged so far.
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// Every line the process wrote to stdout so far.
    out: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    /// The process's own SQLite store, removed when the test ends.
    _store: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    /// A personal token for `user` with `scopes` (none: the default "*"),
    /// made with `teamgate token create` on the same store.
    pub(crate) fn token(&self, user: &str, scopes: &[&str]) -> String {
        let mut command = Command::new(env!("CARGO_BIN_EXE_teamgate"));
        command
            .args(["token", "--config"])
            .arg(&self.config)
            .args(["create", "--user", user])
            .current_dir(repo_path(""))
            .env("TEAMGATE__STORE__URL", &self.store_url);
        for scope in scopes {
            command.args(["--scope", scope]);
        }
        let output = command.output().expect("teamgate token create runs");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8_lossy(&output.stdout);
        stdout.lines().last().expect("the token").trim().to_owned()
    }

    /// Waits (bounded) for a logged line containing `needle`.
    pub(crate) fn logged(&self, needle: &str) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(line) = self.log.lock().unwrap().iter().find(|l| l.contains(needle)) {
                return line.clone();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no log line with {needle:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Every line logged so far.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Every line written to stdout so far.
    pub(crate) fn stdout_lines(&self) -> Vec<String> {
        self.out.lock().unwrap().clone()
    }

    pub(crate) fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, signal).expect("signal delivered");
    }
}

/// Starts `teamgate serve --config <config>` on a free loopback port with
/// `envs` and returns once it logged the URL it serves.
pub(crate) fn serve(config: &Path, envs: &[(&str, &str)]) -> Served {
    let store = tempfile::tempdir().expect("temp dir");
    // A store named in `envs` (PostgreSQL) is the one the token command uses too.
    let store_url = (envs.iter())
        .find(|(key, _)| *key == "TEAMGATE__STORE__URL")
        .map(|(_, url)| (*url).to_owned())
        .unwrap_or_else(|| format!("sqlite://{}/teamgate.db", store.path().display()));
    let mut command = Command::new(env!("CARGO_BIN_EXE_teamgate"));
    command
        .env("TEAMGATE__STORE__URL", &store_url)
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(config)
        .current_dir(repo_path(""))
        .env("TEAMGATE__LOG__FORMAT", "json")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in envs {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("teamgate starts");
    let stderr = child.stderr.take().expect("stderr piped");
    let stdout = child.stdout.take().expect("stdout piped");
    let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let written = out.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            written.lock().unwrap().push(line);
        }
    });
    let (tx, rx) = std::sync::mpsc::channel();
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            kept.lock().unwrap().push(line.clone());
            if let Some(start) = line.find("http://127.0.0.1:") {
                let url: String = line[start..]
                    .chars()
                    .take_while(|c| !c.is_whitespace() && *c != '"')
                    .collect();
                let _ = tx.send(url);
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("teamgate logs its URL");
    Served {
        child,
        url,
        config: config.to_owned(),
        store_url,
        log,
        out,
        _store: store,
    }
}

/// Issue 63 item 6: with `log.format = "auto"` (the default) a terminal
/// gets readable lines and anything else JSON. `script` gives the server a
/// terminal; `timeout` ends it (a closed terminal would only reload it).
#[test]
fn logs_are_text_on_a_terminal_and_json_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("t.toml"), "[reload]\nwatch = false\n").unwrap();
    let store = format!("sqlite://{}/teamgate.db", dir.path().display());
    let serve = format!(
        "timeout 3 {} serve --listen 127.0.0.1:0 --config t.toml",
        env!("CARGO_BIN_EXE_teamgate")
    );
    let run = |program: &str, args: &[&str]| {
        let output = Command::new(program)
            .args(args)
            .current_dir(dir.path())
            .env("TEAMGATE__STORE__URL", &store)
            .env_remove("TEAMGATE__LOG__FORMAT")
            .env_remove("RUST_LOG")
            .output()
            .expect("runs");
        let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stderr));
        text.lines()
            .find(|l| l.contains("teamgate serving MCP"))
            .unwrap_or_else(|| panic!("no serving line in: {text}"))
            .to_owned()
    };
    let on_terminal = run("script", &["-qec", &serve, "/dev/null"]);
    assert!(!on_terminal.contains("{\""), "{on_terminal}");
    assert!(on_terminal.contains("INFO"), "{on_terminal}");
    let piped = run("sh", &["-c", &serve]);
    let line: serde_json::Value = serde_json::from_str(piped.trim()).expect("a JSON line");
    assert_eq!(line["level"], "INFO", "{piped}");
}
