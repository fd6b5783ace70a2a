//! `search_files`: ripgrep's walker (`ignore`, so `.gitignore` and hidden
//! files are honoured unless the source includes them, links not followed)
//! and searcher (`grep-searcher`, binary files skipped), bounded in matches,
//! files and line length. The caller's glob only narrows what the walker
//! shows (as an `ignore` override it would also let hidden and ignored files
//! back in), and each file is opened beneath the root's descriptor. Files
//! are searched in batches on all cores, their matches kept in walk order.

use std::{
    os::fd::OwnedFd,
    path::{Path, PathBuf},
};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::{Match, WalkBuilder, overrides::OverrideBuilder};
use rayon::prelude::*;
use serde_json::{Value, json};

use crate::{config::FilesSourceConfig, protocol::JsonObject, providers::ProviderError};

/// Most files looked at by one search.
const MAX_FILES: usize = 20_000;
/// Longest line quoted in a match.
const MAX_LINE: usize = 300;
/// Files searched at once (by all cores), in order: the matches held at a
/// time stay bounded by this many times the limit.
const BATCH: usize = 64;
/// Compiled-regex size cap, so a pathological pattern cannot eat memory.
const REGEX_SIZE: usize = 1 << 20;
/// Most lines of context asked for before and after each match.
pub(super) const MAX_CONTEXT: u64 = 5;

pub(super) struct Request {
    pattern: String,
    glob: Option<String>,
    limit: usize,
    context: usize,
}

impl Request {
    pub(super) fn from_arguments(
        arguments: &JsonObject,
        max: usize,
    ) -> Result<Self, ProviderError> {
        let pattern = arguments
            .get("pattern")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty() && p.len() <= 1000)
            .ok_or(ProviderError::Argument(
                "`pattern` must be 1 to 1000 characters",
            ))?;
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
            context: arguments
                .get("context")
                .and_then(Value::as_u64)
                .unwrap_or(0)
                .min(MAX_CONTEXT) as usize,
        })
    }
}

/// The walker over `root` with the source's rules: `.gitignore` and hidden
/// files skipped unless included, links not followed.
pub(super) fn walker(root: &Path, config: &FilesSourceConfig) -> WalkBuilder {
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
pub(super) fn visible(root: &Path, config: &FilesSourceConfig, relative: &Path) -> bool {
    let target: PathBuf = root.join(relative.components().collect::<PathBuf>());
    let on_the_way = target.clone();
    walker(root, config)
        .filter_entry(move |entry| on_the_way.starts_with(entry.path()))
        .build()
        .flatten()
        .any(|entry| entry.depth() > 0 && entry.path() == target)
}

pub(super) fn run(
    root: &Path,
    root_fd: &OwnedFd,
    config: &FilesSourceConfig,
    request: &Request,
) -> Result<Value, ProviderError> {
    let matcher = RegexMatcherBuilder::new()
        .case_smart(true)
        .size_limit(REGEX_SIZE)
        .dfa_size_limit(REGEX_SIZE)
        .build(&request.pattern)
        .map_err(ProviderError::Pattern)?;
    let mut walker = walker(root, config);
    walker.sort_by_file_name(|a, b| a.cmp(b));
    let glob = match &request.glob {
        Some(glob) => {
            let mut overrides = OverrideBuilder::new(root);
            overrides.add(glob).map_err(ProviderError::Glob)?;
            Some(overrides.build().map_err(ProviderError::Glob)?)
        }
        None => None,
    };
    let mut candidates = walker
        .build()
        .flatten()
        .take(MAX_FILES)
        .filter_map(|entry| {
            let inside = entry.path().strip_prefix(root).ok()?;
            let is_candidate = entry.file_type().is_some_and(|t| t.is_file())
                && inside
                    .extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| config.extensions.iter().any(|x| x == e))
                && glob
                    .as_ref()
                    .is_none_or(|g| !matches!(g.matched(inside, false), Match::Ignore(_)));
            is_candidate.then(|| inside.to_owned())
        });
    let mut matches = Vec::new();
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        batch.clear();
        batch.extend(candidates.by_ref().take(BATCH));
        if batch.is_empty() {
            return Ok(json!({"matches": matches, "truncated": false}));
        }
        // Each file's matches stop one past the room left, which is enough
        // to know whether the list is cut.
        let room = request.limit - matches.len();
        let found: Vec<Vec<Value>> = batch
            .par_iter()
            .map(|inside| search_file(root_fd, config, &matcher, request, inside, room + 1))
            .collect();
        for hit in found.into_iter().flatten() {
            if matches.len() == request.limit {
                return Ok(json!({"matches": matches, "truncated": true}));
            }
            matches.push(hit);
        }
    }
}

/// One file's matches, at most `limit`.
fn search_file(
    root_fd: &OwnedFd,
    config: &FilesSourceConfig,
    matcher: &RegexMatcher,
    request: &Request,
    inside: &Path,
    limit: usize,
) -> Vec<Value> {
    let mut matches = Vec::new();
    // The file the walker saw may have been swapped since: what is
    // searched is what opens beneath the root, its size from the descriptor.
    let Ok((file, size)) = super::beneath::open(root_fd, inside) else {
        return matches;
    };
    if size > config.max_file_bytes {
        return matches;
    }
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .before_context(request.context)
        .after_context(request.context)
        .build();
    let relative = inside.to_string_lossy().replace('\\', "/");
    let mut hits = Hits {
        path: &relative,
        matches: &mut matches,
        limit,
        context: request.context > 0,
        before: Vec::new(),
    };
    // An unreadable file is skipped, not fatal.
    let _ = searcher.search_file(matcher, &file, &mut hits);
    matches
}

/// Collects one file's matches, each with the context lines around it
/// when asked for.
struct Hits<'a> {
    path: &'a str,
    matches: &'a mut Vec<Value>,
    limit: usize,
    context: bool,
    /// Context lines seen since the last match: they precede the next.
    before: Vec<Value>,
}

fn quote(line: &[u8]) -> String {
    String::from_utf8_lossy(line)
        .trim_end()
        .chars()
        .take(MAX_LINE)
        .collect()
}

impl Sink for Hits<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        if self.matches.len() >= self.limit {
            return Ok(false);
        }
        let mut hit =
            json!({"path": self.path, "line": found.line_number(), "text": quote(found.bytes())});
        if self.context {
            hit["before"] = Value::Array(std::mem::take(&mut self.before));
            hit["after"] = json!([]);
        }
        self.matches.push(hit);
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, line: &SinkContext<'_>) -> Result<bool, Self::Error> {
        let quoted = json!({"line": line.line_number(), "text": quote(line.bytes())});
        match line.kind() {
            SinkContextKind::Before => self.before.push(quoted),
            SinkContextKind::After => {
                if let Some(Value::Array(after)) = self.matches.last_mut().map(|m| &mut m["after"])
                {
                    after.push(quoted);
                }
            }
            SinkContextKind::Other => {}
        }
        Ok(true)
    }
}
