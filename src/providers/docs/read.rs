//! `resources/read` of a docs URI: the whole document
//! (`docs://<source>/<path>`), one section (`...#<anchor>`) or a line range
//! (`...?lines=10-40`), so a client takes only what a search hit pointed at.

use serde_json::json;

use super::{
    Inner,
    document::{Document, Documents},
};
use crate::protocol::McpError;

/// What a URI inside the source asks for.
pub(super) struct Wanted<'a> {
    pub path: &'a str,
    pub anchor: Option<&'a str>,
    pub lines: Option<&'a str>,
}

/// Splits `<path>[?lines=a-b][#anchor]` (the part after `docs://<source>/`).
pub(super) fn parse(rest: &str) -> Wanted<'_> {
    let (rest, anchor) = match rest.split_once('#') {
        Some((rest, anchor)) => (rest, Some(anchor)),
        None => (rest, None),
    };
    let (path, query) = match rest.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (rest, None),
    };
    let lines = query.and_then(|q| q.split('&').find_map(|p| p.strip_prefix("lines=")));
    Wanted {
        path,
        anchor,
        lines,
    }
}

fn invalid(message: String, uri: &str) -> McpError {
    McpError::invalid_params(message, Some(json!({"uri": uri})))
}

/// `a-b` or `a` (1-based, inclusive) against a document of `count` lines;
/// an end past the last line is the last line.
fn line_range(lines: &str, count: usize) -> Option<(usize, usize)> {
    let (start, end) = match lines.split_once('-') {
        Some((start, end)) => (start.parse().ok()?, end.parse().ok()?),
        None => {
            let line = lines.parse().ok()?;
            (line, line)
        }
    };
    (1 <= start && start <= end && start <= count).then_some((start, end.min(count)))
}

/// The text a URI names inside `doc`.
pub(super) fn text_of(doc: &Document, wanted: &Wanted, uri: &str) -> Result<String, McpError> {
    if let Some(lines) = wanted.lines {
        let count = doc.text.lines().count();
        let Some((start, end)) = line_range(lines, count) else {
            return Err(invalid(
                format!(
                    "`lines` must be `start-end` with 1 <= start <= end, and start at most {count}"
                ),
                uri,
            ));
        };
        return Ok(super::sections::lines(&doc.text, start, end));
    }
    match wanted.anchor {
        None | Some("") => Ok(doc.text.to_string()),
        Some(anchor) => doc
            .section(anchor)
            .map(|s| s.text(&doc.text))
            .ok_or_else(|| invalid(format!("the document has no section `#{anchor}`"), uri)),
    }
}

impl Inner {
    /// A document by its path; also by the path with the configured folder's
    /// name in front, which URIs carried before they became relative to it.
    pub(super) fn document<'a>(
        &self,
        documents: &'a Documents,
        path: &str,
    ) -> Option<&'a Document> {
        let found = documents.get(path).or_else(|| {
            self.config.paths.iter().find_map(|root| {
                let name = std::path::Path::new(root).file_name()?.to_str()?;
                let inner = path.strip_prefix(name)?.strip_prefix('/')?;
                documents.get(inner)
            })
        });
        found.map(|d| &**d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_name_a_path_a_range_and_a_section() {
        let w = parse("ops/oncall.md?lines=3-9#paging");
        assert_eq!(
            (w.path, w.lines, w.anchor),
            ("ops/oncall.md", Some("3-9"), Some("paging"))
        );
        let w = parse("a.md");
        assert_eq!((w.path, w.lines, w.anchor), ("a.md", None, None));
        assert_eq!(line_range("3-9", 5), Some((3, 5)));
        assert_eq!(line_range("4", 5), Some((4, 4)));
        assert_eq!(line_range("6-9", 5), None);
        assert_eq!(line_range("0-2", 5), None);
        assert_eq!(line_range("3-2", 5), None);
        assert_eq!(line_range("x", 5), None);
    }
}
