//! `list_files`: one folder's entries (folders, and files with an allowed
//! extension) with kind and size, a page at a time, under the same rules as
//! reading: the folder is opened beneath the root, each entry is looked at
//! through that descriptor without following links, and only names the
//! search walker shows (not hidden, not ignored unless included) are listed.

use std::{collections::HashSet, os::fd::OwnedFd, path::Path};

use nix::{
    dir::Dir,
    fcntl::AtFlags,
    sys::stat::{SFlag, fstatat},
};
use serde_json::{Value, json};

use crate::{config::FilesSourceConfig, protocol::JsonObject, providers::ProviderError};

/// Entries in one page when the caller names no `limit`, and at most.
pub(super) const DEFAULT_LIMIT: u64 = 100;
pub(super) const MAX_LIMIT: u64 = 1000;

/// The folder `relative` was opened as `folder`: its entries, paginated.
pub(super) fn run(
    root: &Path,
    folder: OwnedFd,
    relative: &str,
    config: &FilesSourceConfig,
    arguments: &JsonObject,
) -> Result<Value, ProviderError> {
    let offset = arguments.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
    let limit = arguments
        .get("limit")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_LIMIT)
        .clamp(1, MAX_LIMIT) as usize;
    let inside: std::path::PathBuf = Path::new(relative).components().collect();
    let shown: HashSet<_> = super::search::walker(&root.join(&inside), config)
        .max_depth(Some(1))
        .build()
        .flatten()
        .filter(|e| e.depth() == 1)
        .map(|e| e.file_name().to_owned())
        .collect();
    // The names come from the opened folder, so a folder swapped for
    // another after the walk lists nothing of the other.
    let listing = Dir::from_fd(folder.try_clone()?).map_err(|error| ProviderError::Unlistable {
        path: relative.to_owned(),
        error,
    })?;
    let mut entries = Vec::new();
    for entry in listing.into_iter().flatten() {
        let Ok(name) = entry.file_name().to_str() else {
            continue;
        };
        if name == "." || name == ".." || !shown.contains(std::ffi::OsStr::new(name)) {
            continue;
        }
        let Ok(stat) = fstatat(&folder, name, AtFlags::AT_SYMLINK_NOFOLLOW) else {
            continue;
        };
        let kind = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
        let path = inside.join(name).to_string_lossy().into_owned();
        if kind == SFlag::S_IFDIR {
            entries.push(json!({"name": name, "path": path, "kind": "dir"}));
        } else if kind == SFlag::S_IFREG && super::extension_allowed(config, Path::new(name)) {
            let size = stat.st_size;
            entries.push(json!({"name": name, "path": path, "kind": "file", "size": size}));
        }
    }
    // Folders first, then by name: a stable order for paging.
    entries.sort_by(|a, b| {
        (a["kind"] != "dir", a["name"].as_str()).cmp(&(b["kind"] != "dir", b["name"].as_str()))
    });
    let total = entries.len();
    let page: Vec<Value> = entries.into_iter().skip(offset).take(limit).collect();
    let next = offset + page.len();
    Ok(json!({
        "path": inside.to_string_lossy(),
        "entries": page,
        "total": total,
        "nextOffset": (next < total).then_some(next),
    }))
}
