//! `search_files`: ripgrep's walker (`ignore`, so `.gitignore` and hidden
//! files are honoured, links not followed) and searcher (`grep-searcher`,
//! binary files skipped), bounded in matches, files and line length.

use std::path::Path;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks::UTF8};
use ignore::{WalkBuilder, overrides::OverrideBuilder};
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

pub fn run(root: &Path, config: &FilesSourceConfig, request: &Request) -> Result<Value, String> {
    let matcher = RegexMatcherBuilder::new()
        .case_smart(true)
        .size_limit(REGEX_SIZE)
        .dfa_size_limit(REGEX_SIZE)
        .build(&request.pattern)
        .map_err(|e| format!("`pattern` is not a valid regular expression: {e}"))?;
    let mut walker = WalkBuilder::new(root);
    walker
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b));
    if let Some(glob) = &request.glob {
        let mut overrides = OverrideBuilder::new(root);
        overrides
            .add(glob)
            .map_err(|e| format!("`glob` is not a valid glob: {e}"))?;
        walker.overrides(
            overrides
                .build()
                .map_err(|e| format!("`glob` is not a valid glob: {e}"))?,
        );
    }
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .build();
    let mut matches = Vec::new();
    let mut truncated = false;
    for entry in walker.build().flatten().take(MAX_FILES) {
        let path = entry.path();
        let is_candidate = entry.file_type().is_some_and(|t| t.is_file())
            && path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| config.extensions.iter().any(|x| x == e))
            && entry
                .metadata()
                .is_ok_and(|m| m.len() <= config.max_file_bytes);
        if !is_candidate {
            continue;
        }
        let relative = path
            .strip_prefix(root)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/");
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
        let _ = searcher.search_path(&matcher, path, sink);
        if truncated {
            break;
        }
    }
    Ok(json!({"matches": matches, "truncated": truncated}))
}
