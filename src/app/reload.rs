//! Hot reload triggers: SIGHUP, and a change of any configuration file.
//! Each trigger loads the configuration again and asks the app to swap its
//! capabilities; a configuration that does not load or build is refused
//! with a logged reason and the running one keeps serving. The reload's one
//! line says what changed and which changed settings wait for a restart.

use std::{
    collections::BTreeSet,
    ffi::{OsStr, OsString},
    path::{Path, PathBuf},
    sync::Arc,
};

use anyhow::Context;
use notify::RecursiveMode;
use serde_json::{Value, json};

use super::build_registry;
use crate::{
    config::{Config, ConfigSources, Secret},
    mcp::Shared,
    registry::Registry,
    upstream::Upstreams,
};

/// Swaps in capabilities built from a new configuration (see `App::reload`).
#[derive(Clone)]
pub struct Reloader {
    pub(super) shared: Arc<Shared>,
    pub(super) upstreams: Option<Arc<Upstreams>>,
    /// The configuration the server started with: what only a restart
    /// applies is compared with it, so a reload never pretends to apply it.
    pub(super) started: Arc<Config>,
}

impl Reloader {
    /// Returns the reload's line: what was added and removed (upstreams
    /// included), then the settings that changed but wait for a restart.
    pub fn reload(&self, config: &Config) -> anyhow::Result<String> {
        let running = (self.upstreams.iter().flat_map(|u| u.states())).map(|u| u.name);
        let before: BTreeSet<String> = running.collect();
        let registry = build_registry(config, &self.shared.bus, self.upstreams.as_deref())?;
        let mut line = summary(&self.shared.registry(), &registry);
        self.shared.replace_registry(registry);
        let after: BTreeSet<String> = config.upstreams.iter().map(|u| u.name.clone()).collect();
        let added = after.difference(&before).map(|n| format!("+{n}"));
        let removed = before.difference(&after).map(|n| format!("-{n}"));
        let upstreams: Vec<String> = added.chain(removed).collect();
        if !upstreams.is_empty() {
            line = format!("upstreams {}; {line}", upstreams.join(" "));
        }
        let waiting = restart_needed(&self.started, config);
        if !waiting.is_empty() {
            line.push_str(&format!(
                "; {} settings changed: {RESTART}",
                waiting.join(", ")
            ));
        }
        Ok(line)
    }
}

/// Ends a reload line whose settings changed but are not applied.
const RESTART: &str = "restart to apply";

/// The tables wired once at start, which a reload does not swap: the
/// listener, the store, sign-in, the portal and its authorization server,
/// limits, logs and telemetry, the audit writer, tasks, reload itself.
const AT_START: [&str; 12] = [
    "server",
    "store",
    "auth",
    "portal",
    "authorization_server",
    "limits",
    "rate_limit",
    "log",
    "telemetry",
    "audit",
    "tasks",
    "reload",
];

/// The tables (and `mcp`, `credentials.keys`, `credentials.slots`) whose settings in `new`
/// differ from those the server started with, which only a restart applies.
pub fn restart_needed(started: &Config, new: &Config) -> Vec<String> {
    let (before, after) = (at_start(started), at_start(new));
    let mut changed: Vec<String> = Vec::new();
    for ((table, old), (_, new)) in before.into_iter().zip(after) {
        if old != new && !changed.contains(&table) {
            changed.push(table);
        }
    }
    changed
}

/// Each setting only a restart applies, by its table; secrets by value,
/// as they print masked (the values are compared, never logged).
fn at_start(config: &Config) -> Vec<(String, Value)> {
    let whole = serde_json::to_value(config).unwrap_or_default();
    let table = |name: &str| whole.get(name).cloned().unwrap_or_default();
    let mut tables: Vec<(String, Value)> = (AT_START.iter())
        .map(|name| (name.to_string(), table(name)))
        .collect();
    // An endpoint's discovery and `always` are the registry's: they reload.
    let mut mcp = table("mcp");
    if let Some(mcp) = mcp.as_object_mut() {
        mcp.remove("discovery");
        mcp.remove("always");
    }
    tables.push(("mcp".into(), mcp));
    let values = |secrets: &[Secret]| json!(secrets.iter().map(Secret::expose).collect::<Vec<_>>());
    tables.push(("mcp".into(), values(&config.mcp.request_state_keys)));
    tables.push(("credentials.keys".into(), values(&config.credentials.keys)));
    // Tools use a reloaded slot at once, but the portal's Connections page
    // lists the slots it started with.
    let slots = json!(config.credentials.slots);
    tables.push(("credentials.slots".into(), slots));
    let portal = config.portal.as_ref().map(|p| p.client_secret.expose());
    tables.push(("portal".into(), json!(portal)));
    tables.push((
        "telemetry".into(),
        json!(config.telemetry.metrics.token.expose()),
    ));
    tables.push(("store".into(), json!(config.store.url.expose())));
    tables
}

/// Loads `sources` and reloads; logs and returns the outcome. Blocking:
/// reading files and indexing docs happen here.
pub fn reload_now(reloader: &Reloader, sources: &ConfigSources) -> anyhow::Result<()> {
    let outcome = sources
        .load()
        .map_err(anyhow::Error::from)
        .and_then(|config| reloader.reload(&config));
    match &outcome {
        Ok(changes) if changes.ends_with(RESTART) => {
            tracing::warn!(%changes, "configuration reloaded in part: {changes}");
        }
        Ok(changes) => tracing::info!(%changes, "configuration reloaded: {changes}"),
        Err(error) => {
            tracing::error!(reason = %format!("{error:#}"), "configuration reload refused; the previous configuration keeps serving");
        }
    }
    outcome.map(drop)
}

/// What a reload changed, in one line: `tools +a -b; prompts +c` (at most a
/// few names per kind), or that nothing did.
fn summary(old: &Registry, new: &Registry) -> String {
    fn names(registry: &Registry) -> [(&'static str, BTreeSet<String>); 3] {
        [
            (
                "tools",
                registry
                    .tools()
                    .iter()
                    .map(|t| t.name.to_string())
                    .collect(),
            ),
            (
                "resources",
                registry
                    .resources()
                    .into_iter()
                    .map(|r| r.uri.clone())
                    .collect(),
            ),
            (
                "prompts",
                registry.prompts().iter().map(|p| p.name.clone()).collect(),
            ),
        ]
    }
    const SHOWN: usize = 5;
    let mut parts = Vec::new();
    for ((kind, before), (_, after)) in names(old).into_iter().zip(names(new)) {
        let added = after.difference(&before).map(|n| format!("+{n}"));
        let removed = before.difference(&after).map(|n| format!("-{n}"));
        let changed: Vec<String> = added.chain(removed).collect();
        if changed.is_empty() {
            continue;
        }
        let mut part = format!("{kind} {}", changed[..changed.len().min(SHOWN)].join(" "));
        if changed.len() > SHOWN {
            part.push_str(&format!(" and {} more", changed.len() - SHOWN));
        }
        parts.push(part);
    }
    if parts.is_empty() {
        "no tool, resource or prompt added or removed".to_owned()
    } else {
        parts.join("; ")
    }
}

/// Runs [`reload_now`] on the blocking pool, so indexing a large docs
/// source does not hold up request handling; the outcome is logged there.
async fn reload_in_background(reloader: &Reloader, sources: &ConfigSources) {
    let (reloader, sources) = (reloader.clone(), sources.clone());
    let _ = tokio::task::spawn_blocking(move || reload_now(&reloader, &sources)).await;
}

/// Watches the configuration files; dropping it stops the watching.
pub struct ConfigWatcher {
    _watch: crate::fswatch::FsWatch,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ConfigWatcher {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The configuration files, by canonical path and by name.
struct OurFiles {
    files: Vec<PathBuf>,
    names: Vec<OsString>,
}

impl OurFiles {
    fn new(files: Vec<PathBuf>) -> Self {
        let names = files
            .iter()
            .filter_map(|f| f.file_name().map(OsStr::to_owned))
            .collect();
        Self { files, names }
    }

    /// Whether an event at `path` is one of ours. Other files' events are
    /// turned away by name before any system call: a folder holding the
    /// SQLite database or a log as well sees an event per write, and
    /// resolving each path was a third of the watcher thread's time
    /// (BENCHMARKS.md, twelfth session). A path that no longer
    /// resolves (the file removed, or its folder swapped away as Kubernetes
    /// does with a ConfigMap) is compared as it is.
    fn holds(&self, path: &Path) -> bool {
        if !path
            .file_name()
            .is_some_and(|name| self.names.iter().any(|n| n == name))
        {
            return false;
        }
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
        self.files.contains(&path)
    }
}

/// The files a reload reads: each `--config` file and, when read,
/// `config/default.toml` in the working directory.
fn watched_files(sources: &ConfigSources) -> Vec<PathBuf> {
    let mut files = sources.files.clone();
    let default = Path::new("config/default.toml");
    if sources.read_default_file && default.is_file() {
        files.push(default.to_owned());
    }
    files
}

/// Reloads whenever one of the configuration files changes. Folders are
/// watched (editors replace files), and events for other files are ignored.
pub fn watch(
    reloader: Reloader,
    sources: ConfigSources,
    debounce: std::time::Duration,
) -> anyhow::Result<ConfigWatcher> {
    let files: Vec<PathBuf> = watched_files(&sources)
        .iter()
        .filter_map(|f| std::fs::canonicalize(f).ok())
        .collect();
    let mut folders: Vec<PathBuf> = files
        .iter()
        .filter_map(|f| f.parent().map(Path::to_owned))
        .collect();
    folders.sort();
    folders.dedup();
    let targets: Vec<_> = folders
        .into_iter()
        .map(|folder| (folder, RecursiveMode::NonRecursive))
        .collect();
    // Folders are watched (editors replace files); other files in them are not ours.
    let ours = OurFiles::new(files);
    let (watch, mut rx) = crate::fswatch::watch(&targets, debounce, move |path| ours.holds(path))
        .context("starting the configuration watcher")?;
    let task = tokio::spawn(async move {
        while rx.recv().await.is_some() {
            reload_in_background(&reloader, &sources).await;
        }
    });
    Ok(ConfigWatcher {
        _watch: watch,
        task,
    })
}

/// Reloads on every SIGHUP until the process ends.
#[cfg(unix)]
pub fn on_sighup(reloader: Reloader, sources: ConfigSources) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut hangups = signal(SignalKind::hangup()).context("listening for SIGHUP")?;
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            tracing::info!("SIGHUP: reloading the configuration");
            reload_in_background(&reloader, &sources).await;
        }
    });
    Ok(())
}

#[cfg(not(unix))]
pub fn on_sighup(_reloader: Reloader, _sources: ConfigSources) -> anyhow::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::OurFiles;

    #[test]
    fn only_the_configuration_files_are_ours() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("team.toml");
        std::fs::write(&file, "").unwrap();
        let file = std::fs::canonicalize(&file).unwrap();
        let ours = OurFiles::new(vec![file.clone()]);
        assert!(ours.holds(&file));
        let beside = file.with_file_name("teamgate.db-wal");
        std::fs::write(&beside, "written").unwrap();
        assert!(!ours.holds(&beside), "a database beside it is not ours");
        assert!(!ours.holds(&file.with_file_name("team.next")));
        std::fs::remove_file(&file).unwrap();
        assert!(ours.holds(&file), "a removed file is still ours");
    }
}
