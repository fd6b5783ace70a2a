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
pub const SNIPPET_CHARS: usize = 240;

/// English words, stemmed, without stop words: "a", "with", "the" in a
/// question otherwise pull in short headings that share nothing else.
pub fn analyzer() -> TextAnalyzer {
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
pub fn without_comments(text: &str) -> String {
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

/// Text plus the words of its camelCase names (`createHash` also as
/// `create Hash`), so a query for "hash" finds `crypto.createHash()`.
pub fn with_words(text: &str) -> String {
    let mut split = String::with_capacity(text.len() + 8);
    let mut previous = ' ';
    for c in text.chars() {
        if c.is_uppercase() && (previous.is_lowercase() || previous.is_ascii_digit()) {
            split.push(' ');
        }
        split.push(c);
        previous = c;
    }
    if split.len() == text.len() {
        return split;
    }
    format!("{text}\n{split}")
}

/// The body's best fragment with the matched words in bold; the section's
/// start when only its headings matched.
pub fn snippet(generator: &SnippetGenerator, body: &str) -> String {
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
            "crypto.createHash(algorithm)\ncrypto.create Hash(algorithm)"
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
