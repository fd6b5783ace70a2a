//! What the index makes of text: the analyzer (the same for tools and
//! queries), names as words, and the words of an input schema.

use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer,
    StopWordFilter, TextAnalyzer,
};

use super::MAX_FIELD_CHARS;
use crate::protocol::JsonObject;

/// Words that say nothing about which tool is meant: Lucene's English stop
/// words, the fillers of a request ("can you show me"), and "tool", which
/// every tool is (`Echo Tool`).
pub(super) const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with", "i", "me", "my", "you", "your", "we", "our", "us",
    "its", "do", "does", "did", "can", "could", "would", "should", "please", "so", "tool", "tools",
];

/// English words, ASCII-folded, stemmed, without stop words; the same for
/// the index and the query.
pub(super) fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .filter(StopWordFilter::remove(
            STOP_WORDS.iter().map(|w| (*w).to_owned()),
        ))
        .filter(Stemmer::new(Language::English))
        .build()
}

/// The analyzer without stop words removed: what synonym phrases are
/// matched on ("note that", "go to").
pub(super) fn stemmer() -> TextAnalyzer {
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .filter(Stemmer::new(Language::English))
        .build()
}

/// `text`'s tokens through `analyzer`.
pub(super) fn tokens(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut stream = analyzer.token_stream(text);
    let mut out = Vec::new();
    while let Some(token) = stream.next() {
        out.push(token.text.clone());
    }
    out
}
/// At most `MAX_FIELD_CHARS` of `text`.
pub(super) fn capped(text: &str) -> &str {
    match text.char_indices().nth(MAX_FIELD_CHARS) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// A name as words: split on `_`, `-`, `.`, and each camelCase word also
/// as its parts (`getUserProfile` is also `get User Profile`): the name as
/// written and its words both find it.
pub(super) fn words(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    for word in name
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
        if let Some(parts) = humps(word) {
            out.push(' ');
            out.push_str(&parts);
        }
    }
    out
}

/// A camelCase word's parts (`HTTPServer` is `HTTP Server`), if it has any.
pub(super) fn humps(word: &str) -> Option<String> {
    let chars: Vec<char> = word.chars().collect();
    let mut out = String::with_capacity(word.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        let previous = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1).copied();
        let hump = c.is_uppercase()
            && previous.is_some_and(|p| {
                p.is_lowercase() || (p.is_uppercase() && next.is_some_and(char::is_lowercase))
            });
        if hump {
            out.push(' ');
        }
        out.push(c);
    }
    (out.len() > word.len()).then_some(out)
}

/// The words of an input schema: each property's name (as written and as
/// words), description and string enum values, nested properties included.
pub(super) fn schema_words(schema: &JsonObject, depth: usize, out: &mut String) {
    if depth > 4 || out.len() > MAX_FIELD_CHARS {
        return;
    }
    if let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) {
        for (name, property) in properties {
            out.push_str(name);
            out.push(' ');
            out.push_str(&words(name));
            out.push('\n');
            let Some(property) = property.as_object() else {
                continue;
            };
            if let Some(text) = property.get("description").and_then(|d| d.as_str()) {
                out.push_str(text);
                out.push('\n');
            }
            schema_words(property, depth + 1, out);
        }
    }
    if let Some(values) = schema.get("enum").and_then(|e| e.as_array()) {
        for value in values.iter().filter_map(|v| v.as_str()) {
            out.push_str(&words(value));
            out.push(' ');
        }
        out.push('\n');
    }
    if let Some(items) = schema.get("items").and_then(|i| i.as_object()) {
        schema_words(items, depth + 1, out);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for one in schema
            .get(key)
            .and_then(|v| v.as_array())
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_object())
        {
            schema_words(one, depth + 1, out);
        }
    }
}
