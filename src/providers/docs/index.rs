//! A snapshot of one docs source: the documents found on disk and a tantivy
//! (BM25) index over their sections (see `sections`), in RAM or on disk
//! (see `store`). A snapshot never changes; a re-index commits the changed
//! documents and opens a new one, which the source swaps in.

use std::{
    collections::BTreeMap,
    hash::{DefaultHasher, Hash, Hasher},
    path::{Path, PathBuf},
    sync::Arc,
};

use anyhow::Context;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term, doc};

use super::{
    sections::{self, Section},
    store::{self, FORMAT, Fields, Manifest},
    text::{lead, with_words, without_comments, without_signature},
};
use crate::config::DocsSourceConfig;

/// Memory budget of the one indexing thread (tantivy's minimum is 15 MB).
const WRITER_MEMORY: usize = 20_000_000;

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

    fn new(path: &str, content: String, hash: u64) -> Self {
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

pub(super) struct Snapshot {
    /// Documents by path inside the source (`guide.md`, `ops/oncall.md`).
    pub documents: BTreeMap<String, Arc<Document>>,
    index: Index,
    pub(super) reader: IndexReader,
    pub(super) fields: Fields,
    /// The number the last indexed document got (the `doc` fast field).
    next: u64,
}

/// Files the source offers, as (path inside the source, file): `.gitignore`
/// and hidden files honoured, symlinks not followed, capped in number and size.
pub(super) fn scan(config: &DocsSourceConfig) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    for root in &config.paths {
        let root = Path::new(root);
        let Ok(meta) = std::fs::metadata(root) else {
            continue;
        };
        if meta.is_file() {
            if let Some(name) = root.file_name().and_then(|n| n.to_str()) {
                found.push((name.to_owned(), root.to_owned()));
            }
            continue;
        }
        let walker = ignore::WalkBuilder::new(root)
            .require_git(false)
            .follow_links(false)
            .sort_by_file_name(|a, b| a.cmp(b))
            .build();
        for entry in walker.flatten() {
            if entry.file_type().is_some_and(|t| t.is_file())
                && let Ok(inside) = entry.path().strip_prefix(root)
            {
                // Paths are relative to the configured folder itself.
                let name = inside.to_string_lossy().replace('\\', "/");
                found.push((name, entry.into_path()));
            }
        }
    }
    found.retain(|(_, path)| {
        let ext_ok = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| config.extensions.iter().any(|x| x == e));
        ext_ok && std::fs::metadata(path).is_ok_and(|m| m.len() <= config.max_file_bytes)
    });
    found.sort();
    found.dedup_by(|a, b| a.0 == b.0);
    found.truncate(config.max_documents);
    found
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

/// What a new snapshot starts from: an index and what it already holds.
struct Base<'a> {
    index: Index,
    fields: Fields,
    manifest: Manifest,
    /// The previous snapshot's documents, reused when unchanged.
    documents: Option<&'a BTreeMap<String, Arc<Document>>>,
}

impl Snapshot {
    /// A source's first snapshot. With `folder`, the index kept there is
    /// reused and only files whose content changed since are re-indexed.
    pub(super) fn open(files: &[(String, PathBuf)], folder: Option<&Path>) -> anyhow::Result<Self> {
        let (index, fields, manifest) = store::open(folder)?;
        Self::index(
            files,
            Base {
                index,
                fields,
                manifest,
                documents: None,
            },
        )
    }

    /// The next snapshot: only documents whose content changed since this
    /// one are re-indexed (into the same index), gone ones deleted.
    pub(super) fn update(&self, files: &[(String, PathBuf)]) -> anyhow::Result<Self> {
        let hashes = self.documents.iter().map(|(p, d)| (p.clone(), d.hash));
        let manifest = Manifest {
            format: FORMAT,
            next: self.next,
            hashes: hashes.collect(),
        };
        Self::index(
            files,
            Base {
                index: self.index.clone(),
                fields: self.fields,
                manifest,
                documents: Some(&self.documents),
            },
        )
    }

    fn index(files: &[(String, PathBuf)], base: Base) -> anyhow::Result<Self> {
        let Base {
            index,
            fields,
            manifest,
            documents: before,
        } = base;
        let mut next = manifest.next;
        // Made only when something changed: its arenas are most of the memory.
        let mut writer: Option<IndexWriter> = None;
        let mut documents = BTreeMap::new();
        for (path, file) in files {
            // A file that vanished or is not UTF-8 text is skipped, not fatal.
            let Ok(content) = std::fs::read_to_string(file) else {
                continue;
            };
            let hash = hash(&content);
            let indexed = manifest.hashes.get(path);
            if indexed == Some(&hash) {
                let kept = before.and_then(|b| b.get(path)).filter(|d| d.hash == hash);
                let document = kept
                    .cloned()
                    .unwrap_or_else(|| Arc::new(Document::new(path, content, hash)));
                documents.insert(path.clone(), document);
                continue;
            }
            let writer = open_writer(&mut writer, &index)?;
            if indexed.is_some() {
                writer.delete_term(Term::from_field_text(fields.path, path));
            }
            next += 1;
            let document = Document::new(path, content, hash);
            add(writer, fields, path, next, &document)?;
            documents.insert(path.clone(), Arc::new(document));
        }
        for path in manifest.hashes.keys() {
            if !documents.contains_key(path) {
                let writer = open_writer(&mut writer, &index)?;
                writer.delete_term(Term::from_field_text(fields.path, path));
            }
        }
        if let Some(mut writer) = writer {
            let manifest = Manifest {
                format: FORMAT,
                next,
                hashes: documents.iter().map(|(p, d)| (p.clone(), d.hash)).collect(),
            };
            let mut commit = writer
                .prepare_commit()
                .context("committing the docs index")?;
            commit.set_payload(&serde_json::to_string(&manifest)?);
            commit.commit().context("committing the docs index")?;
            // Each commit adds a segment: let the merges it starts finish,
            // or segments pile up over a day of edits.
            writer
                .wait_merging_threads()
                .context("merging the docs index")?;
        }
        // Manual: a snapshot never sees the commits of the next one.
        let reader: IndexReader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .context("opening the docs index")?;
        reader.reload()?;
        Ok(Self {
            documents,
            index,
            reader,
            fields,
            next,
        })
    }
}

fn open_writer<'w>(
    slot: &'w mut Option<IndexWriter>,
    index: &Index,
) -> anyhow::Result<&'w mut IndexWriter> {
    if slot.is_none() {
        let writer = index
            .writer_with_num_threads::<TantivyDocument>(1, WRITER_MEMORY)
            .context("creating the docs index writer")?;
        *slot = Some(writer);
    }
    Ok(slot.as_mut().expect("just set"))
}

/// Indexes a document's sections (a long one as parts, each part with its
/// section's heading and first paragraph). camelCase names count as their
/// words in the body too: "read stream" finds the text on `createReadStream`.
fn add(
    writer: &IndexWriter,
    fields: Fields,
    path: &str,
    number: u64,
    document: &Document,
) -> anyhow::Result<()> {
    let lines: Vec<&str> = document.text.lines().collect();
    for section in &document.sections {
        let (own, above) = section
            .headings
            .split_last()
            .map_or(("", &[][..]), |(own, above)| (own.as_str(), above));
        let mut context = with_words(&document.title);
        for heading in above {
            context.push('\n');
            context.push_str(&with_words(heading));
        }
        let heading = with_words(&without_signature(own));
        let lead = lead(&without_comments(&section.text(&document.text)));
        for part in sections::parts(std::slice::from_ref(section), &lines) {
            let body = without_comments(
                &lines
                    .get(part.start - 1..part.end.min(lines.len()))
                    .unwrap_or_default()
                    .join("\n"),
            );
            let anchor = if part.part {
                format!("~{}", part.anchor)
            } else {
                part.anchor.clone()
            };
            writer.add_document(doc!(
                fields.path => path,
                fields.context => context.as_str(),
                fields.heading => heading.as_str(),
                fields.lead => lead.as_str(),
                fields.body => with_words(&body),
                fields.text => body,
                fields.headings => serde_json::to_string(&part.headings)?,
                fields.anchor => anchor,
                fields.start => part.start as u64,
                fields.end => part.end as u64,
                fields.doc => number,
            ))?;
        }
    }
    Ok(())
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
