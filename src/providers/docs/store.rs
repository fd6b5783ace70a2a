//! Where a source's tantivy index lives: in RAM, or on disk in
//! `<index_dir>/<source>/` so a restart re-indexes only the files that
//! changed. What was indexed (each document's content hash, the format) is
//! the payload of every tantivy commit, so the index and its manifest are
//! written together and never disagree after a crash.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use tantivy::{
    Index,
    schema::{
        FAST, Field, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
    },
};

use super::text::analyzer;

/// Bumped whenever what an index holds changes (schema, analyzer, how
/// sections are cut): an index of another format is rebuilt, not read.
pub(super) const FORMAT: u32 = 2;
pub(super) const TOKENIZER: &str = "docs";

#[derive(Clone, Copy)]
pub(super) struct Fields {
    pub path: Field,
    /// The document's title and the headings above the section.
    pub context: Field,
    /// The section's own heading.
    pub heading: Field,
    /// The section's first paragraph of prose: what it is about, in words.
    pub lead: Field,
    /// The section's text, camelCase names also as words (indexed only).
    pub body: Field,
    /// The section's text as written, for snippets (stored only).
    pub text: Field,
    /// The heading path as JSON, the anchor and the line range, for the hit.
    pub headings: Field,
    pub anchor: Field,
    pub start: Field,
    pub end: Field,
    /// The document's number, a fast field, to group candidates cheaply.
    pub doc: Field,
}

/// What the last commit indexed.
#[derive(Clone, Default, Serialize, Deserialize)]
pub(super) struct Manifest {
    pub format: u32,
    /// The number the last indexed document got (the `doc` fast field).
    pub next: u64,
    /// Content hash of each indexed document, by path.
    pub hashes: BTreeMap<String, u64>,
}

fn schema() -> (Schema, Fields) {
    let mut schema = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            // Frequencies for BM25; no positions: no phrase queries.
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        path: schema.add_text_field("path", STRING | STORED),
        context: schema.add_text_field("context", text.clone()),
        heading: schema.add_text_field("heading", text.clone()),
        // A word in a summary counts once, however often it is repeated.
        lead: schema.add_text_field(
            "lead",
            TextOptions::default().set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer(TOKENIZER)
                    .set_index_option(IndexRecordOption::Basic),
            ),
        ),
        body: schema.add_text_field("body", text),
        text: schema.add_text_field("text", STORED),
        headings: schema.add_text_field("headings", STORED),
        anchor: schema.add_text_field("anchor", STORED),
        start: schema.add_u64_field("start", STORED),
        end: schema.add_u64_field("end", STORED),
        doc: schema.add_u64_field("doc", FAST),
    };
    (schema.build(), fields)
}

/// The index of a source (`folder`: on disk, else in RAM) and what it holds.
/// An index on disk of another format or schema, or one that does not open,
/// is removed and started afresh: it is a cache of the files.
pub(super) fn open(folder: Option<&Path>) -> anyhow::Result<(Index, Fields, Manifest)> {
    let (schema, fields) = schema();
    let Some(folder) = folder else {
        let index = Index::create_in_ram(schema);
        index.tokenizers().register(TOKENIZER, analyzer());
        return Ok((index, fields, Manifest::default()));
    };
    if let Some((index, manifest)) = reopen(folder, &schema) {
        index.tokenizers().register(TOKENIZER, analyzer());
        return Ok((index, fields, manifest));
    }
    clear(folder)?;
    std::fs::create_dir_all(folder)
        .with_context(|| format!("creating the docs index folder {}", folder.display()))?;
    let index = Index::create_in_dir(folder, schema)
        .with_context(|| format!("creating the docs index in {}", folder.display()))?;
    index.tokenizers().register(TOKENIZER, analyzer());
    Ok((index, fields, Manifest::default()))
}

fn reopen(folder: &Path, schema: &Schema) -> Option<(Index, Manifest)> {
    let index = Index::open_in_dir(folder).ok()?;
    let payload = index.load_metas().ok()?.payload?;
    let manifest: Manifest = serde_json::from_str(&payload).ok()?;
    (manifest.format == FORMAT && index.schema() == *schema).then_some((index, manifest))
}

/// Removes a stale index. Only a folder that holds a tantivy index (its
/// `meta.json`) or nothing is touched, so a misconfigured `index_dir`
/// pointing at other data is refused rather than wiped.
fn clear(folder: &Path) -> anyhow::Result<()> {
    let Ok(mut entries) = std::fs::read_dir(folder) else {
        return Ok(());
    };
    if entries.next().is_none() {
        return Ok(());
    }
    anyhow::ensure!(
        folder.join("meta.json").is_file(),
        "{} is not empty and holds no docs index; point index_dir elsewhere",
        folder.display()
    );
    std::fs::remove_dir_all(folder)
        .with_context(|| format!("removing the stale docs index {}", folder.display()))
}

/// The source's own folder inside `index_dir`.
pub(super) fn folder(index_dir: Option<&str>, source: &str) -> Option<PathBuf> {
    index_dir.map(|dir| Path::new(dir).join(source))
}

#[cfg(test)]
mod tests {
    use tantivy::{TantivyDocument, doc};

    use super::*;

    fn commit(folder: &Path, format: u32) {
        let (index, fields, _) = open(Some(folder)).unwrap();
        let mut writer = index
            .writer_with_num_threads::<TantivyDocument>(1, 15_000_000)
            .unwrap();
        writer.add_document(doc!(fields.path => "a.md")).unwrap();
        let manifest = Manifest {
            format,
            next: 1,
            hashes: [("a.md".to_owned(), 7)].into(),
        };
        let mut prepared = writer.prepare_commit().unwrap();
        prepared.set_payload(&serde_json::to_string(&manifest).unwrap());
        prepared.commit().unwrap();
    }

    fn documents(index: &Index) -> u64 {
        index.reader().unwrap().searcher().num_docs()
    }

    #[test]
    fn an_index_of_this_format_is_reopened_another_is_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("source");
        commit(&folder, FORMAT);
        let (index, _, manifest) = open(Some(&folder)).unwrap();
        assert_eq!(manifest.hashes.get("a.md"), Some(&7));
        assert_eq!(documents(&index), 1);

        commit(&folder, FORMAT - 1);
        let (index, _, manifest) = open(Some(&folder)).unwrap();
        assert!(manifest.hashes.is_empty());
        assert_eq!(documents(&index), 0, "rebuilt from nothing");
    }

    #[test]
    fn a_broken_index_is_rebuilt_and_other_data_refused() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("source");
        std::fs::create_dir(&folder).unwrap();
        std::fs::write(folder.join("meta.json"), "{ not json").unwrap();
        let (index, _, manifest) = open(Some(&folder)).unwrap();
        assert!(manifest.hashes.is_empty());
        assert_eq!(documents(&index), 0);

        let other = dir.path().join("other");
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join("notes.txt"), "mine").unwrap();
        let error = open(Some(&other)).err().unwrap();
        assert!(error.to_string().contains("holds no docs index"), "{error}");
        assert!(other.join("notes.txt").exists());
    }
}
