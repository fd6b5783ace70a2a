//! A snapshot of one docs source: the documents found on disk and a tantivy
//! (BM25) index over their sections (see `sections`), built in RAM. A
//! snapshot never changes; a re-index builds a new one and the source swaps
//! it in.

use std::{
    collections::{BTreeMap, HashMap},
    hash::{DefaultHasher, Hash, Hasher},
    path::{Path, PathBuf},
    sync::Arc,
};

use anyhow::Context;
use tantivy::{
    DocAddress, Index, IndexReader, ReloadPolicy, TantivyDocument, Term,
    collector::TopDocs,
    doc,
    query::QueryParser,
    schema::{
        FAST, Field, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
        Value,
    },
    snippet::SnippetGenerator,
};

use super::{
    sections::{self, Section},
    text::{SNIPPET_CHARS, analyzer, snippet, with_words, without_comments},
};
use crate::config::DocsSourceConfig;

/// Memory budget of the one indexing thread (tantivy's minimum is 15 MB).
const WRITER_MEMORY: usize = 20_000_000;
/// Sections of one document a result list shows before other documents'.
pub const PER_DOCUMENT: usize = 2;
/// Weights: a word in the section's own heading says most about it, one in
/// the document's title or the headings above it more than one in the body
/// (the heading's words are in the body too). Tuned on bench/docs: larger
/// boosts let short headings that share one word outrank the answer.
const HEADING_BOOST: f32 = 1.5;
const CONTEXT_BOOST: f32 = 1.2;
const TOKENIZER: &str = "docs";
/// Sections scored before grouping: enough that grouping still fills the
/// list, and that a document's relevance is seen across its sections.
const CANDIDATES: usize = 200;
/// How much a document's summed relevance adds to each of its sections.
const DOCUMENT_WEIGHT: f32 = 0.05;

pub struct Document {
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
    pub fn section(&self, anchor: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.anchor == anchor)
    }
}

pub struct Snapshot {
    /// Documents by path inside the source (`guide.md`, `ops/oncall.md`).
    pub documents: BTreeMap<String, Arc<Document>>,
    index: Index,
    reader: IndexReader,
    fields: Fields,
    /// The number the last indexed document got (the `doc` fast field).
    next: u64,
}

#[derive(Clone, Copy)]
struct Fields {
    path: Field,
    /// The document's title and the headings above the section.
    context: Field,
    /// The section's own heading.
    heading: Field,
    body: Field,
    /// The heading path as JSON, the anchor and the line range, for the hit.
    headings: Field,
    anchor: Field,
    start: Field,
    end: Field,
    /// The document's number, a fast field, to group candidates cheaply.
    doc: Field,
}

pub struct Hit {
    pub path: String,
    pub title: String,
    pub headings: Vec<String>,
    pub anchor: String,
    pub start: u64,
    pub end: u64,
    /// A part of a longer section: its link names the lines.
    pub part: bool,
    pub score: f32,
    /// Text around the matched words, which are marked `**like this**`.
    pub snippet: String,
}

/// Files the source offers, as (path inside the source, file): `.gitignore`
/// and hidden files honoured, symlinks not followed, capped in number and size.
pub fn scan(config: &DocsSourceConfig) -> Vec<(String, PathBuf)> {
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

impl Snapshot {
    pub fn build(files: &[(String, PathBuf)]) -> anyhow::Result<Self> {
        Self::index(files, None)
    }

    /// The next snapshot: only documents whose content changed since this
    /// one are re-indexed (into a copy of its index), gone ones deleted.
    pub fn update(&self, files: &[(String, PathBuf)]) -> anyhow::Result<Self> {
        Self::index(files, Some(self))
    }

    fn schema() -> (Index, Fields) {
        let mut schema = Schema::builder();
        let text = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(TOKENIZER)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        );
        let fields = Fields {
            path: schema.add_text_field("path", STRING | STORED),
            context: schema.add_text_field("context", text.clone()),
            heading: schema.add_text_field("heading", text.clone()),
            body: schema.add_text_field("body", text.set_stored()),
            headings: schema.add_text_field("headings", STORED),
            anchor: schema.add_text_field("anchor", STORED),
            start: schema.add_u64_field("start", STORED),
            end: schema.add_u64_field("end", STORED),
            doc: schema.add_u64_field("doc", FAST),
        };
        let index = Index::create_in_ram(schema.build());
        index.tokenizers().register(TOKENIZER, analyzer());
        (index, fields)
    }

    fn index(files: &[(String, PathBuf)], old: Option<&Self>) -> anyhow::Result<Self> {
        let (index, fields, mut next) = match old {
            Some(old) => (old.index.clone(), old.fields, old.next),
            None => {
                let (index, fields) = Self::schema();
                (index, fields, 0)
            }
        };
        let mut writer = index
            .writer_with_num_threads::<TantivyDocument>(1, WRITER_MEMORY)
            .context("creating the docs index writer")?;
        let mut documents = BTreeMap::new();
        for (path, file) in files {
            // A file that vanished or is not UTF-8 text is skipped, not fatal.
            let Ok(content) = std::fs::read_to_string(file) else {
                continue;
            };
            let mut hasher = DefaultHasher::new();
            content.hash(&mut hasher);
            let hash = hasher.finish();
            let before = old.and_then(|o| o.documents.get(path));
            if let Some(before) = before.filter(|b| b.hash == hash) {
                documents.insert(path.clone(), before.clone());
                continue;
            }
            if before.is_some() {
                writer.delete_term(Term::from_field_text(fields.path, path));
            }
            next += 1;
            let title = title(path, &content);
            let mime = mime(path);
            let lines: Vec<&str> = content.lines().collect();
            let whole = sections::whole(&content, mime == "text/markdown");
            for section in &sections::parts(&whole, &lines) {
                let (own, above) = section
                    .headings
                    .split_last()
                    .map_or(("", &[][..]), |(own, above)| (own.as_str(), above));
                let mut context = with_words(&title);
                for heading in above {
                    context.push('\n');
                    context.push_str(&with_words(heading));
                }
                let body = lines
                    .get(section.start - 1..section.end.min(lines.len()))
                    .unwrap_or_default()
                    .join("\n");
                writer.add_document(doc!(
                    fields.path => path.as_str(),
                    fields.context => context,
                    fields.heading => with_words(own),
                    fields.body => without_comments(&body),
                    fields.headings => serde_json::to_string(&section.headings)?,
                    fields.anchor => if section.part { format!("~{}", section.anchor) } else { section.anchor.clone() },
                    fields.start => section.start as u64,
                    fields.end => section.end as u64,
                    fields.doc => next,
                ))?;
            }
            documents.insert(
                path.clone(),
                Arc::new(Document {
                    title,
                    size: content.len() as u64,
                    mime,
                    hash,
                    sections: whole,
                    text: content.into(),
                }),
            );
        }
        let gone = old.iter().flat_map(|o| o.documents.keys());
        for path in gone.filter(|p| !documents.contains_key(*p)) {
            writer.delete_term(Term::from_field_text(fields.path, path));
        }
        writer.commit().context("committing the docs index")?;
        if old.is_some() {
            // Each update adds a small segment: let the merges it starts
            // finish, or segments pile up over a day of edits.
            writer
                .wait_merging_threads()
                .context("merging the docs index")?;
        } else {
            drop(writer);
        }
        // The writer's arenas are freed here; hand them back at once.
        crate::memory::release_freed();
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

    /// Ranked sections for a free-text query (BM25, headings weighing more
    /// than body), at most `PER_DOCUMENT` from one document while others
    /// match. Query syntax errors are forgiven: the parsable part is searched.
    pub fn search(&self, query: &str, limit: usize) -> anyhow::Result<Vec<Hit>> {
        let searcher = self.reader.searcher();
        let f = self.fields;
        let mut parser = QueryParser::for_index(&self.index, vec![f.heading, f.context, f.body]);
        parser.set_field_boost(f.heading, HEADING_BOOST);
        parser.set_field_boost(f.context, CONTEXT_BOOST);
        let (query, _errors) = parser.parse_query_lenient(query);
        let top = searcher.search(&query, &TopDocs::with_limit(CANDIDATES).order_by_score())?;
        // Each candidate's document, from a fast field (no stored fields read yet).
        let mut candidates = Vec::with_capacity(top.len());
        let mut relevance: HashMap<u64, f32> = HashMap::new();
        let mut columns = HashMap::new();
        for (score, address) in top {
            let column = match columns.entry(address.segment_ord) {
                std::collections::hash_map::Entry::Occupied(column) => column.into_mut(),
                std::collections::hash_map::Entry::Vacant(slot) => slot.insert(
                    searcher
                        .segment_reader(address.segment_ord)
                        .fast_fields()
                        .u64("doc")?,
                ),
            };
            let document = column.first(address.doc_id).unwrap_or(u64::MAX);
            *relevance.entry(document).or_default() += score;
            candidates.push((score, document, address));
        }
        // A section of a document that matches as a whole ranks above a
        // like-scored section of one that matches only there.
        let mut ranked: Vec<(f32, u64, DocAddress)> = candidates
            .into_iter()
            .map(|(score, document, address)| {
                (
                    score + DOCUMENT_WEIGHT * relevance[&document],
                    document,
                    address,
                )
            })
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut per_document: HashMap<u64, usize> = HashMap::new();
        let (mut chosen, mut spare) = (Vec::new(), Vec::new());
        for (score, document, address) in ranked {
            let seen = per_document.entry(document).or_default();
            *seen += 1;
            let list = if *seen > PER_DOCUMENT {
                &mut spare
            } else {
                &mut chosen
            };
            if list.len() < limit {
                list.push((score, address));
            }
        }
        // Only when few documents match do more sections of one fill the list.
        let room = limit.saturating_sub(chosen.len());
        chosen.extend(spare.into_iter().take(room));
        let chosen = chosen
            .into_iter()
            .map(|(score, address)| {
                let doc: TantivyDocument = searcher.doc(address)?;
                Ok((score, stored_str(&doc, f.path).to_owned(), doc))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let mut snippets = SnippetGenerator::create(&searcher, &*query, f.body)?;
        snippets.set_max_num_chars(SNIPPET_CHARS);
        let hits = chosen.into_iter().map(|(score, path, doc)| {
            let body = stored_str(&doc, f.body);
            let anchor = stored_str(&doc, f.anchor);
            let number = |field| doc.get_first(field).and_then(|v| v.as_u64()).unwrap_or(0);
            Hit {
                title: self
                    .documents
                    .get(&path)
                    .map(|d| d.title.clone())
                    .unwrap_or_default(),
                path,
                headings: serde_json::from_str(stored_str(&doc, f.headings)).unwrap_or_default(),
                part: anchor.starts_with('~'),
                anchor: anchor.trim_start_matches('~').to_owned(),
                start: number(f.start),
                end: number(f.end),
                score,
                snippet: snippet(&snippets, body),
            }
        });
        Ok(hits.collect())
    }
}

fn stored_str(doc: &TantivyDocument, field: Field) -> &str {
    doc.get_first(field)
        .and_then(|v| v.as_str())
        .unwrap_or_default()
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
