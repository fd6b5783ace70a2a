//! Hot reload triggers: SIGHUP, and a change of any configuration file.
//! Each trigger loads the configuration again and asks the app to swap its
//! capabilities; a configuration that does not load or build is refused
//! with a logged reason and the running one keeps serving.

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
};

use anyhow::Context;
use notify::RecursiveMode;

use super::Reloader;
use crate::{config::ConfigSources, registry::Registry};

/// Loads `sources` and reloads; logs and returns the outcome. Blocking:
/// reading files and indexing docs happen here.
pub fn reload_now(reloader: &Reloader, sources: &ConfigSources) -> anyhow::Result<()> {
    let outcome = sources
        .load()
        .map_err(anyhow::Error::from)
        .and_then(|config| reloader.reload(&config));
    match &outcome {
        Ok(changes) => tracing::info!(%changes, "configuration reloaded: {changes}"),
        Err(error) => {
            tracing::error!(reason = %format!("{error:#}"), "configuration reload refused; the previous configuration keeps serving");
        }
    }
    outcome.map(drop)
}

/// What a reload changed, in one line: `tools +a -b; prompts +c` (at most a
/// few names per kind), or that nothing did.
pub fn summary(old: &Registry, new: &Registry) -> String {
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
    let (watch, mut rx) = crate::fswatch::watch(&targets, debounce, move |path| {
        let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
        files.contains(&path)
    })
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
