//! A snapshot of one docs source: the documents found on disk and a tantivy
//! (BM25) index over their titles and bodies, built in RAM. A snapshot never
//! changes; a re-index builds a new one and the source swaps it in.

use std::{
    collections::BTreeMap,
    hash::{DefaultHasher, Hash, Hasher},
    path::{Path, PathBuf},
    sync::Arc,
};

use anyhow::Context;
use tantivy::{
    Index, IndexReader, TantivyDocument,
    collector::TopDocs,
    doc,
    query::QueryParser,
    schema::{
        Field, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions, Value,
    },
    snippet::SnippetGenerator,
};

use crate::config::DocsSourceConfig;

/// Memory budget of the one indexing thread (tantivy's minimum is 15 MB).
const WRITER_MEMORY: usize = 20_000_000;
/// Longest snippet returned with a hit.
const SNIPPET_CHARS: usize = 240;

pub struct Document {
    pub title: String,
    pub text: Arc<str>,
    pub size: u64,
    pub mime: &'static str,
    /// Content hash: a changed hash is a `resources/updated`.
    pub hash: u64,
}

pub struct Snapshot {
    /// Documents by path inside the source (`docs/guide.md`, `README.md`).
    pub documents: BTreeMap<String, Document>,
    index: Index,
    reader: IndexReader,
    fields: Fields,
}

#[derive(Clone, Copy)]
struct Fields {
    path: Field,
    title: Field,
    body: Field,
}

pub struct Hit {
    pub path: String,
    pub title: String,
    pub score: f32,
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
        let base = root.file_name().map(PathBuf::from).unwrap_or_default();
        let walker = ignore::WalkBuilder::new(root)
            .require_git(false)
            .follow_links(false)
            .sort_by_file_name(|a, b| a.cmp(b))
            .build();
        for entry in walker.flatten() {
            if entry.file_type().is_some_and(|t| t.is_file())
                && let Ok(inside) = entry.path().strip_prefix(root)
            {
                let name = base.join(inside).to_string_lossy().replace('\\', "/");
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
        let mut schema = Schema::builder();
        let text = TextOptions::default()
            .set_indexing_options(
                TextFieldIndexing::default()
                    .set_tokenizer("en_stem")
                    .set_index_option(IndexRecordOption::WithFreqsAndPositions),
            )
            .set_stored();
        let fields = Fields {
            path: schema.add_text_field("path", STRING | STORED),
            title: schema.add_text_field("title", text.clone()),
            body: schema.add_text_field("body", text),
        };
        let index = Index::create_in_ram(schema.build());
        let mut writer = index
            .writer_with_num_threads::<TantivyDocument>(1, WRITER_MEMORY)
            .context("creating the docs index writer")?;
        let mut documents = BTreeMap::new();
        for (path, file) in files {
            // A file that vanished or is not UTF-8 text is skipped, not fatal.
            let Ok(content) = std::fs::read_to_string(file) else {
                continue;
            };
            let title = title(path, &content);
            writer.add_document(doc!(
                fields.path => path.as_str(),
                fields.title => title.as_str(),
                fields.body => content.as_str(),
            ))?;
            let mut hasher = DefaultHasher::new();
            content.hash(&mut hasher);
            documents.insert(
                path.clone(),
                Document {
                    title,
                    size: content.len() as u64,
                    mime: mime(path),
                    hash: hasher.finish(),
                    text: content.into(),
                },
            );
        }
        writer.commit().context("committing the docs index")?;
        // The writer's arenas are freed here; hand them back at once.
        drop(writer);
        crate::memory::release_freed();
        let reader = index.reader().context("opening the docs index")?;
        reader.reload()?;
        Ok(Self {
            documents,
            index,
            reader,
            fields,
        })
    }

    /// Ranked hits for a free-text query (BM25; title matches count double).
    /// Query syntax errors are forgiven: the parsable part is searched.
    pub fn search(&self, query: &str, limit: usize) -> anyhow::Result<Vec<Hit>> {
        let searcher = self.reader.searcher();
        let mut parser =
            QueryParser::for_index(&self.index, vec![self.fields.title, self.fields.body]);
        parser.set_field_boost(self.fields.title, 2.0);
        let (query, _errors) = parser.parse_query_lenient(query);
        let top = searcher.search(&query, &TopDocs::with_limit(limit).order_by_score())?;
        let mut snippets = SnippetGenerator::create(&searcher, &*query, self.fields.body)?;
        snippets.set_max_num_chars(SNIPPET_CHARS);
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            let doc: TantivyDocument = searcher.doc(address)?;
            let text = |field| {
                doc.get_first(field)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned()
            };
            let body = text(self.fields.body);
            hits.push(Hit {
                path: text(self.fields.path),
                title: text(self.fields.title),
                score,
                snippet: snippets.snippet(&body).fragment().trim().to_owned(),
            });
        }
        Ok(hits)
    }
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
