//! Issue 44's upstream items, each against a misbehaving upstream on the
//! official Python SDK's low-level server (tests/interop/upstream_listed.py),
//! which lists whatever a JSON file says: tool names outside the allowed set
//! (item 13), names that clash (item 3), a pinned tool renamed (item 15),
//! resources and templates that reach for another upstream's URIs (item 1).

mod clash;
mod names;
mod pins;
mod resources;

use std::{path::PathBuf, time::Duration};

use serde_json::{Value, json};
use teamgate::config::UpstreamConfig;

use crate::{helpers::repo_path, sdk};

/// The venv's python, installed by scripts/install-test-deps.sh.
pub(crate) fn python() -> Option<String> {
    let python = repo_path(".cache/venv/bin/python");
    if !python.exists() {
        assert!(std::env::var_os("CI").is_none(), "CI installs the venv");
        eprintln!("SKIP: .cache/venv is not installed (scripts/install-test-deps.sh)");
        return None;
    }
    Some(python.display().to_string())
}

/// What one upstream lists: a JSON file the server reads on every list.
pub(crate) struct Listing {
    _dir: tempfile::TempDir,
    pub(crate) file: PathBuf,
    pub(crate) python: String,
}

impl Listing {
    pub(crate) fn new(python: &str, listed: Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("listed.json");
        std::fs::write(&file, listed.to_string()).unwrap();
        Self {
            _dir: dir,
            file,
            python: python.to_owned(),
        }
    }

    /// Lists `listed` from now on (the server hears of it on `relist`).
    pub(crate) fn set(&self, listed: Value) {
        std::fs::write(&self.file, listed.to_string()).unwrap();
    }

    /// The `[[upstreams]]` entry `name` running this server over stdio.
    pub(crate) fn upstream(&self, name: &str, adjust: Value) -> UpstreamConfig {
        let script = repo_path("tests/interop/upstream_listed.py");
        let mut config = json!({
            "name": name,
            "command": self.python,
            "args": [script.display().to_string(), self.file.display().to_string()],
        });
        if let (Value::Object(config), Value::Object(adjust)) = (&mut config, adjust) {
            config.extend(adjust);
        }
        serde_json::from_value(config).expect("an upstream configuration")
    }
}

/// The tool names `tools/list` shows.
pub(crate) async fn names(client: &sdk::Client) -> Vec<String> {
    let listed = client.list_all_tools().await.expect("tools/list answers");
    listed.into_iter().map(|t| t.name.to_string()).collect()
}

/// Lists until `done` holds (bounded: 30 s), returning the last list.
pub(crate) async fn until(
    client: &sdk::Client,
    what: &str,
    done: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let listed = names(client).await;
        if done(&listed) {
            return listed;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} in time; listed {listed:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A tool call's error text (the call must fail as a JSON-RPC error).
pub(crate) async fn refused(client: &sdk::Client, name: &str) -> String {
    let params = rmcp::model::CallToolRequestParams::new(name.to_owned());
    let error = client.call_tool(params).await;
    error.expect_err("the call is refused").to_string()
}
