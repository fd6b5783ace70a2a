//! What `check-config` checks beyond [`Config::validate`]: the rule `serve`
//! applies to its store (request-state keys on PostgreSQL; admin commands do
//! not need them, so `validate` does not ask), and what must exist on disk.
//! Each problem starts with its key.

use std::path::Path;

use super::Config;

impl Config {
    /// Why `serve` refuses this store configuration, if it does: replicas on
    /// PostgreSQL must share the keys that seal MRTR `requestState`.
    pub fn state_keys_problem(&self) -> Option<String> {
        (self.mcp.request_state_keys.is_empty() && self.store.url.is_postgres()).then(|| {
            "mcp.request_state_keys: is empty but store.url is PostgreSQL: every replica must open \
             the requestState the others sealed, so they need the same key. Set for example \
             TEAMGATE__MCP__REQUEST_STATE_KEYS='[\"<at least 32 random characters>\"]' on every replica"
                .to_owned()
        })
    }

    /// Declared docs paths and prompt folders that do not exist (`serve`
    /// skips them with a warning), and command tools whose program or
    /// working directory is not there.
    pub fn missing_on_disk(&self) -> Vec<String> {
        let mut missing = Vec::new();
        let mut absent = |key: String, path: &str, what: &str| {
            missing.push(format!(
                "{key}: {what} {path:?} does not exist{}",
                relative_note(path)
            ));
        };
        // The built-in docs source serves a checkout's README and docs/ when
        // run from one; elsewhere it is empty by design, not misconfigured.
        let builtin = super::ConfigSources::files_only(Vec::new()).load().ok();
        let builtin = builtin.map(|c| c.sources.docs).unwrap_or_default();
        for (i, docs) in self.sources.docs.iter().enumerate() {
            if builtin
                .iter()
                .any(|b| b.name == docs.name && b.paths == docs.paths)
            {
                continue;
            }
            for (j, path) in docs.paths.iter().enumerate() {
                if !Path::new(path).exists() {
                    absent(format!("sources.docs[{i}].paths[{j}]"), path, "the path");
                }
            }
        }
        for (i, folder) in self.prompt_files.folders.iter().enumerate() {
            if !Path::new(folder).is_dir() {
                absent(format!("prompt_files.folders[{i}]"), folder, "the folder");
            }
        }
        for (i, tool) in self.tools.command.iter().enumerate() {
            if !program_found(&tool.program) {
                absent(
                    format!("tools.command[{i}].program"),
                    &tool.program,
                    "the program",
                );
            }
            if let Some(cwd) = tool.cwd.as_deref().filter(|c| !Path::new(c).is_dir()) {
                absent(format!("tools.command[{i}].cwd"), cwd, "the folder");
            }
        }
        missing
    }

    /// What is allowed but usually a mistake: said, not refused.
    pub fn hints(&self) -> Vec<String> {
        let mut hints = Vec::new();
        if let Some(portal) = &self.portal
            && portal.client_secret.expose().is_empty()
        {
            hints.push(
                "portal.client_secret is empty: most identity providers refuse a sign-in \
                 without the portal client's secret; set TEAMGATE__PORTAL__CLIENT_SECRET"
                    .to_owned(),
            );
        }
        hints
    }
}

/// A relative path was not in a `--config` file's folder: say where it was looked for.
fn relative_note(path: &str) -> String {
    if Path::new(path).is_absolute() {
        return String::new();
    }
    match std::env::current_dir() {
        Ok(dir) => format!(" (relative to {})", dir.display()),
        Err(_) => String::new(),
    }
}

/// Whether `program` names a file: a path as given, or a name on PATH.
fn program_found(program: &str) -> bool {
    if program.contains('/') {
        return Path::new(program).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}
