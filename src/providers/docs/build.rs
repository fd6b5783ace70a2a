//! The tantivy (BM25) index over a snapshot's documents, in RAM or on disk
//! (see `store`): built, or brought up to date by committing only the
//! documents whose content changed. What it indexed (each document's
//! content hash) is kept beside it, so the next update knows what changed.

use std::path::Path;

use anyhow::Context;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term, doc};

use super::{
    document::{Document, Documents},
    sections,
    store::{self, FORMAT, Fields, Manifest},
    text::{lead, with_words, without_comments, without_signature},
};

/// Memory budget of the one indexing thread (tantivy's minimum is 15 MB).
const WRITER_MEMORY: usize = 20_000_000;

pub(super) struct Searchable {
    index: Index,
    pub(super) reader: IndexReader,
    pub(super) fields: Fields,
    /// What the last commit indexed: the number the last indexed document
    /// got (the `doc` fast field) and each document's content hash.
    manifest: Manifest,
}

impl Searchable {
    /// The index of `documents`: with `folder`, the one kept there, reused
    /// and re-indexed only where a document changed since; else in RAM.
    pub(super) fn open(documents: &Documents, folder: Option<&Path>) -> anyhow::Result<Self> {
        let (index, fields, manifest) = store::open(folder)?;
        Self::index(documents, index, fields, manifest)
    }

    /// The same index brought up to `documents`: only documents whose
    /// content changed are re-indexed, gone ones deleted.
    pub(super) fn update(&self, documents: &Documents) -> anyhow::Result<Self> {
        let manifest = self.manifest.clone();
        Self::index(documents, self.index.clone(), self.fields, manifest)
    }

    fn index(
        documents: &Documents,
        index: Index,
        fields: Fields,
        manifest: Manifest,
    ) -> anyhow::Result<Self> {
        let mut next = manifest.next;
        // Made only when something changed: its arenas are most of the memory.
        let mut writer: Option<IndexWriter> = None;
        for (path, document) in documents {
            let indexed = manifest.hashes.get(path);
            if indexed == Some(&document.hash) {
                continue;
            }
            let writer = open_writer(&mut writer, &index)?;
            if indexed.is_some() {
                writer.delete_term(Term::from_field_text(fields.path, path));
            }
            next += 1;
            add(writer, fields, path, next, document)?;
        }
        for path in manifest.hashes.keys() {
            if !documents.contains_key(path) {
                let writer = open_writer(&mut writer, &index)?;
                writer.delete_term(Term::from_field_text(fields.path, path));
            }
        }
        let manifest = Manifest {
            format: FORMAT,
            next,
            hashes: documents.iter().map(|(p, d)| (p.clone(), d.hash)).collect(),
        };
        if let Some(mut writer) = writer {
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
            index,
            reader,
            fields,
            manifest,
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
