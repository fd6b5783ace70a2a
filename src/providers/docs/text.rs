//! What the index makes of text: the analyzer, the extra words of camelCase
//! names, comments left out, and snippets with the matched words marked.

use tantivy::{
    snippet::{SnippetGenerator, collapse_overlapped_ranges},
    tokenizer::{
        Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter,
        TextAnalyzer,
    },
};

/// Longest snippet returned with a hit.
pub(super) const SNIPPET_CHARS: usize = 240;
/// A section's first paragraph is cut after the line that passes this.
const LEAD_CHARS: usize = 400;

/// English words, stemmed, without stop words: "a", "with", "the" in a
/// question otherwise pull in short headings that share nothing else.
pub(super) fn analyzer() -> TextAnalyzer {
    let mut builder = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .dynamic();
    if let Some(stop) = StopWordFilter::new(Language::English) {
        builder = builder.filter_dynamic(stop);
    }
    builder
        .filter_dynamic(Stemmer::new(Language::English))
        .build()
}

/// Markdown without its HTML comments (`<!-- YAML added: v10.0.0 -->` in
/// Node's docs): metadata no reader searches for, which only dilutes a
/// section's words.
pub(super) fn without_comments(text: &str) -> String {
    let mut kept = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("<!--") {
        kept.push_str(&rest[..open]);
        rest = rest[open..]
            .find("-->")
            .map_or("", |close| &rest[open + close + 3..]);
    }
    kept.push_str(rest);
    kept
}

/// A section's first paragraph of prose: what it is about, in words,
/// where its heading may be an API name (`fs.mkdir(path)`: "Asynchronously
/// creates a directory."). Headings, lists (a function's parameters),
/// tables, quotes, HTML and code are passed over.
pub(super) fn lead(section: &str) -> String {
    let mut lead = String::new();
    let (mut fence, mut block) = (false, false);
    for line in section.lines() {
        let line = line.trim();
        let fenced = line.starts_with("```") || line.starts_with("~~~");
        if fenced {
            fence = !fence;
        }
        if fenced || fence || line.is_empty() {
            if !lead.is_empty() {
                break;
            }
            block &= fence || !line.is_empty();
            continue;
        }
        // Lines after a list item, up to a blank line, belong to the list.
        if lead.is_empty() && (block || starts_block(line)) {
            block = true;
            continue;
        }
        lead.push_str(line);
        lead.push(' ');
        if lead.len() > LEAD_CHARS {
            break;
        }
    }
    lead.truncate(lead.trim_end().len());
    lead
}

/// A line that opens something other than prose.
fn starts_block(line: &str) -> bool {
    let numbered = line
        .split_once(['.', ')'])
        .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    numbered || line.starts_with(['#', '*', '-', '+', '|', '>', '<'])
}

/// Text plus the words of its camelCase names (`crypto.createHash` also
/// gives `create Hash`), so a query for "hash" finds `crypto.createHash()`.
/// Only the split words are added: the name itself is not counted twice.
pub(super) fn with_words(text: &str) -> String {
    let mut out = text.to_owned();
    for name in text.split(|c: char| !c.is_alphanumeric()) {
        let mut words = String::with_capacity(name.len() + 4);
        let mut previous = ' ';
        for c in name.chars() {
            if c.is_uppercase() && (previous.is_lowercase() || previous.is_ascii_digit()) {
                words.push(' ');
            }
            words.push(c);
            previous = c;
        }
        if words.len() > name.len() {
            out.push('\n');
            out.push_str(&words);
        }
    }
    out
}

/// A heading without its call signature's parameters (`fs.mkdir(path[,
/// options])` is `fs.mkdir`): they are listed in the body, and in the
/// heading they only make an API's own name weigh less. A parenthesis after
/// a space is prose and kept.
pub(super) fn without_signature(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    let mut previous = ' ';
    for c in text.chars() {
        if c == '(' && (depth > 0 || previous.is_alphanumeric()) {
            depth += 1;
        } else if c == ')' && depth > 0 {
            depth -= 1;
        } else if depth == 0 {
            out.push(c);
        }
        previous = c;
    }
    out
}

/// The body's best fragment with the matched words in bold; the section's
/// start when only its headings matched.
pub(super) fn snippet(generator: &SnippetGenerator, body: &str) -> String {
    let snippet = generator.snippet(body);
    if snippet.is_empty() {
        let start: String = body.chars().take(SNIPPET_CHARS).collect();
        return start.trim().to_owned();
    }
    let fragment = snippet.fragment();
    let mut marked = String::with_capacity(fragment.len() + 16);
    let mut from = 0;
    for range in collapse_overlapped_ranges(snippet.highlighted()) {
        marked.push_str(&fragment[from..range.start]);
        marked.push_str("**");
        marked.push_str(&fragment[range.clone()]);
        marked.push_str("**");
        from = range.end;
    }
    marked.push_str(&fragment[from..]);
    marked.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn camel_case_names_add_their_words() {
        assert_eq!(with_words("Class: `fs.Dir`"), "Class: `fs.Dir`");
        assert_eq!(
            with_words("crypto.createHash(algorithm)"),
            "crypto.createHash(algorithm)\ncreate Hash"
        );
    }

    #[test]
    fn the_lead_is_the_first_paragraph_of_prose() {
        let section = "### `fs.mkdir(path[, options], callback)`\n\n* `path` {string}\n* `options`\n  * `recursive`\n\n```js\nx()\n```\n\nAsynchronously creates\na directory.\n\nThe callback...";
        assert_eq!(lead(section), "Asynchronously creates a directory.");
        assert_eq!(lead("# T\n> Stability: 2\n\n1. step\n\nText."), "Text.");
        assert_eq!(lead("# Only a heading"), "");
    }

    #[test]
    fn signatures_leave_headings() {
        assert_eq!(
            without_signature("`fs.mkdir(path[, options], callback)`"),
            "`fs.mkdir`"
        );
        assert_eq!(without_signature("f(a(b), c) and g()"), "f and g");
        assert_eq!(
            without_signature("Deploying (staging)"),
            "Deploying (staging)"
        );
    }

    #[test]
    fn html_comments_are_left_out() {
        assert_eq!(
            without_comments("a <!-- YAML\nadded: v1 -->b<!-- open"),
            "a b"
        );
    }
}
