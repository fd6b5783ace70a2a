//! One document of a docs source as read from disk: its text, title,
//! content hash and sections, and the files' documents read into a map
//! that keeps each unchanged document from the previous read.

use std::{
    collections::BTreeMap,
    hash::{DefaultHasher, Hash, Hasher},
    path::PathBuf,
    sync::Arc,
};

use super::sections::{self, Section};

pub(super) struct Document {
    pub title: String,
    pub text: Arc<str>,
    pub size: u64,
    pub mime: &'static str,
    /// Content hash: a changed hash is a `resources/updated`.
    pub hash: u64,
    /// Whole sections (no parts), to read one by its anchor.
    pub sections: Vec<Section>,
}

impl Document {
    /// The section a `#anchor` names.
    pub(super) fn section(&self, anchor: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.anchor == anchor)
    }

    pub(super) fn new(path: &str, content: String, hash: u64) -> Self {
        let mime = mime(path);
        Self {
            title: title(path, &content),
            size: content.len() as u64,
            mime,
            hash,
            sections: sections::whole(&content, mime == "text/markdown"),
            text: content.into(),
        }
    }
}

pub(super) type Documents = BTreeMap<String, Arc<Document>>;

/// The files' documents, each previous one kept when its content is the
/// same. A file that vanished or is not UTF-8 text is skipped, not fatal.
pub(super) fn read(files: &[(String, PathBuf)], before: Option<&Documents>) -> Documents {
    let mut documents = BTreeMap::new();
    for (path, file) in files {
        let Ok(content) = std::fs::read_to_string(file) else {
            continue;
        };
        let hash = hash(&content);
        let kept = before.and_then(|b| b.get(path)).filter(|d| d.hash == hash);
        let document = kept
            .cloned()
            .unwrap_or_else(|| Arc::new(Document::new(path, content, hash)));
        documents.insert(path.clone(), document);
    }
    documents
}

fn mime(path: &str) -> &'static str {
    if path.ends_with(".md") || path.ends_with(".markdown") {
        "text/markdown"
    } else {
        "text/plain"
    }
}

/// The first Markdown heading, else the file name.
fn title(path: &str, text: &str) -> String {
    text.lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("# "))
        .map(|t| t.trim().to_owned())
        .unwrap_or_else(|| path.rsplit('/').next().unwrap_or(path).to_owned())
}

fn hash(content: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    content.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_come_from_the_first_heading() {
        assert_eq!(title("a/b.md", "intro\n# Deploying\n## x"), "Deploying");
        assert_eq!(title("a/notes.txt", "no heading"), "notes.txt");
    }
}
