//! `search_files`: ripgrep's walker (`ignore`, so `.gitignore` and hidden
//! files are honoured unless the source includes them, links not followed)
//! and searcher (`grep-searcher`, binary files skipped), bounded in matches,
//! files and line length. The caller's glob only narrows what the walker
//! shows (as an `ignore` override it would also let hidden and ignored files
//! back in), and each file is opened beneath the root's descriptor.

use std::{
    os::fd::OwnedFd,
    path::{Path, PathBuf},
};

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks::UTF8};
use ignore::{Match, WalkBuilder, overrides::OverrideBuilder};
use serde_json::{Value, json};

use crate::{config::FilesSourceConfig, mcp::JsonObject};

/// Most files looked at by one search.
const MAX_FILES: usize = 20_000;
/// Longest line quoted in a match.
const MAX_LINE: usize = 300;
/// Compiled-regex size cap, so a pathological pattern cannot eat memory.
const REGEX_SIZE: usize = 1 << 20;

pub struct Request {
    pattern: String,
    glob: Option<String>,
    limit: usize,
}

impl Request {
    pub fn from_arguments(arguments: &JsonObject, max: usize) -> Result<Self, String> {
        let pattern = arguments
            .get("pattern")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty() && p.len() <= 1000)
            .ok_or("`pattern` must be 1 to 1000 characters")?;
        let limit = arguments
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(max, |l| (l as usize).clamp(1, max));
        Ok(Self {
            pattern: pattern.to_owned(),
            glob: arguments
                .get("glob")
                .and_then(Value::as_str)
                .map(str::to_owned),
            limit,
        })
    }
}

/// The walker over `root` with the source's rules: `.gitignore` and hidden
/// files skipped unless included, links not followed.
fn walker(root: &Path, config: &FilesSourceConfig) -> WalkBuilder {
    let mut walker = WalkBuilder::new(root);
    walker
        .standard_filters(!config.include_ignored)
        .hidden(!config.include_hidden)
        .require_git(false)
        .follow_links(false);
    walker
}

/// Whether the walker shows `relative` (normal components only): it walks
/// only the folders on the way, so `read_file` obeys the same rules as
/// `search_files` at the cost of listing those folders.
pub fn visible(root: &Path, config: &FilesSourceConfig, relative: &Path) -> bool {
    let target: PathBuf = root.join(relative.components().collect::<PathBuf>());
    let on_the_way = target.clone();
    walker(root, config)
        .filter_entry(move |entry| on_the_way.starts_with(entry.path()))
        .build()
        .flatten()
        .any(|entry| entry.depth() > 0 && entry.path() == target)
}

pub fn run(
    root: &Path,
    root_fd: &OwnedFd,
    config: &FilesSourceConfig,
    request: &Request,
) -> Result<Value, String> {
    let matcher = RegexMatcherBuilder::new()
        .case_smart(true)
        .size_limit(REGEX_SIZE)
        .dfa_size_limit(REGEX_SIZE)
        .build(&request.pattern)
        .map_err(|e| format!("`pattern` is not a valid regular expression: {e}"))?;
    let mut walker = walker(root, config);
    walker.sort_by_file_name(|a, b| a.cmp(b));
    let glob = match &request.glob {
        Some(glob) => {
            let mut overrides = OverrideBuilder::new(root);
            overrides
                .add(glob)
                .map_err(|e| format!("`glob` is not a valid glob: {e}"))?;
            Some(
                overrides
                    .build()
                    .map_err(|e| format!("`glob` is not a valid glob: {e}"))?,
            )
        }
        None => None,
    };
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .build();
    let mut matches = Vec::new();
    let mut truncated = false;
    for entry in walker.build().flatten().take(MAX_FILES) {
        let path = entry.path();
        let Ok(inside) = path.strip_prefix(root) else {
            continue;
        };
        let is_candidate = entry.file_type().is_some_and(|t| t.is_file())
            && path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| config.extensions.iter().any(|x| x == e))
            && glob
                .as_ref()
                .is_none_or(|g| !matches!(g.matched(inside, false), Match::Ignore(_)));
        if !is_candidate {
            continue;
        }
        // The file the walker saw may have been swapped since: what is
        // searched is what opens beneath the root, its size from the descriptor.
        let Ok((file, size)) = super::beneath::open(root_fd, inside) else {
            continue;
        };
        if size > config.max_file_bytes {
            continue;
        }
        let relative = inside.to_string_lossy().replace('\\', "/");
        let sink = UTF8(|line_number, line| {
            if matches.len() >= request.limit {
                truncated = true;
                return Ok(false);
            }
            let text: String = line.trim_end().chars().take(MAX_LINE).collect();
            matches.push(json!({"path": relative, "line": line_number, "text": text}));
            Ok(true)
        });
        // An unreadable or non-UTF-8 file is skipped, not fatal.
        let _ = searcher.search_file(&matcher, &file, sink);
        if truncated {
            break;
        }
    }
    Ok(json!({"matches": matches, "truncated": truncated}))
}
