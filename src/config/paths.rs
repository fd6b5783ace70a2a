//! Relative paths in a `--config` file (`sources.docs[].paths` and `index_dir`,
//! `sources.files[].root`, `prompt_files.folders`) name places next to that
//! file, so a team's configuration works from any working directory. The
//! built-in defaults and `config/default.toml` (their copy on disk) keep the
//! working directory, where a checkout's README and docs/ are.

use std::path::{Component, Path, PathBuf};

use figment::{Figment, Source, value::Value};

use super::Config;

/// Rewrites each relative path of `config` against the folder of the file
/// that supplied it (figment tags every value with its provider).
pub(super) fn resolve(figment: &Figment, defaults_file: &Path, config: &mut Config) {
    let rebase = |value: &Value, path: &mut String| {
        let Some(Source::File(file)) = figment
            .get_metadata(value.tag())
            .and_then(|m| m.source.as_ref())
        else {
            return;
        };
        if file == defaults_file || Path::new(path.as_str()).is_absolute() {
            return;
        }
        if let Some(folder) = file.parent().filter(|f| !f.as_os_str().is_empty()) {
            *path = normalize(&folder.join(path.as_str()))
                .to_string_lossy()
                .into_owned();
        }
    };
    let items = |key: &str| match figment.find_value(key) {
        Ok(Value::Array(_, items)) => items,
        _ => Vec::new(),
    };
    let field = |item: &Value, name: &str| match item {
        Value::Dict(_, dict) => dict.get(name).cloned(),
        _ => None,
    };
    for (docs, item) in config.sources.docs.iter_mut().zip(items("sources.docs")) {
        if let Some(Value::Array(_, values)) = field(&item, "paths") {
            for (path, value) in docs.paths.iter_mut().zip(&values) {
                rebase(value, path);
            }
        }
        if let (Some(value), Some(dir)) = (field(&item, "index_dir"), docs.index_dir.as_mut()) {
            rebase(&value, dir);
        }
    }
    for (files, item) in config.sources.files.iter_mut().zip(items("sources.files")) {
        if let Some(value) = field(&item, "root") {
            rebase(&value, &mut files.root);
        }
    }
    for (openapi, item) in config
        .sources
        .openapi
        .iter_mut()
        .zip(items("sources.openapi"))
    {
        let is_url = openapi.spec_is_url();
        if let Some(value) = field(&item, "spec").filter(|_| !is_url) {
            rebase(&value, &mut openapi.spec);
        }
    }
    let folders = items("prompt_files.folders");
    for (folder, value) in config.prompt_files.folders.iter_mut().zip(&folders) {
        rebase(value, folder);
    }
}

/// Drops `.` and folds `dir/..` without touching the file system (the path
/// may not exist, and check-config reports that with the path as written).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_dots_lexically() {
        assert_eq!(normalize(Path::new("conf/../docs")), Path::new("docs"));
        assert_eq!(normalize(Path::new("a/b/../../..")), Path::new(".."));
        assert_eq!(normalize(Path::new("a/./b/.")), Path::new("a/b"));
        assert_eq!(normalize(Path::new("a/..")), Path::new("."));
        assert_eq!(normalize(Path::new("/etc/../x")), Path::new("/x"));
    }
}
