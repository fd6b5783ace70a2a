//! A permission-aware search over tool definitions (issue 60): the ranking
//! behind the `search_tools` meta-tool, so a client that cannot hold a
//! hundred tool definitions in its context finds the few it needs.
//!
//! Each tool is one tantivy document (in RAM) with four fields: its name
//! split into words (`github_create_pull_request`, `API-post-search` and
//! `getUserProfile` alike), its title, its description, and its input
//! schema's property names, descriptions and enum values. Text is English,
//! stemmed, without stop words. A query is never given to tantivy's query
//! parser: its words (and the words the synonym table adds for them, see
//! `synonyms`) become term queries, each scored by the field where it says
//! most about a tool (a dis-max, name > title > description > parameters)
//! and summed, so a tool matching more of the query's words ranks higher.
//!
//! Every match is scored and the caller's `permitted` filter applied before
//! the list is cut to `limit`: a caller gets as many results as it may see,
//! and nothing about the tools it may not.

mod synonyms;
mod text;

use tantivy::{
    Index, Searcher, TantivyDocument, Term,
    collector::TopDocs,
    query::{BooleanQuery, BoostQuery, DisjunctionMaxQuery, Occur, Query, TermQuery},
    schema::{FAST, Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions},
};

use self::text::{analyzer, capped, schema_words, words};
use crate::protocol::Tool;

/// Characters of a query looked at: a task, not a document.
const MAX_QUERY_CHARS: usize = 1_000;
/// Most distinct terms (the query's own and its synonyms') searched.
const MAX_TERMS: usize = 64;
/// Text kept of one tool's description, and of its parameters.
const MAX_FIELD_CHARS: usize = 8_000;
/// Memory of the one indexing thread (tantivy's minimum is 15 MB).
const WRITER_MEMORY: usize = 15_000_000;
const TOKENIZER: &str = "tools";

/// How much a matched word says about a tool, by where it matched.
struct Weights {
    name: f32,
    title: f32,
    description: f32,
    parameters: f32,
    /// Share of the other fields' scores kept beside the best one.
    tie: f32,
}

const WEIGHTS: Weights = Weights {
    name: 2.5,
    title: 2.0,
    description: 1.2,
    parameters: 0.5,
    tie: 0.3,
};

#[derive(Clone, Copy)]
struct Fields {
    name: Field,
    title: Field,
    description: Field,
    parameters: Field,
    /// The tool's position in `ToolIndex::names`.
    ord: Field,
}

/// The tools of one registry, searchable by what they do. Built once per
/// registry (it never changes); cheap to search from many requests at once.
pub struct ToolIndex {
    names: Vec<String>,
    /// `None` when tantivy failed to build the index (it never should, in
    /// RAM): every search is then empty.
    inner: Option<Inner>,
}

struct Inner {
    searcher: Searcher,
    fields: Fields,
    /// The tool (its index in `names`) of each document, by segment and doc id.
    ords: Vec<Vec<u32>>,
}

impl std::fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolIndex")
            .field("tools", &self.names.len())
            .finish_non_exhaustive()
    }
}

impl ToolIndex {
    /// Most results one search returns, whatever `limit` asks.
    pub const MAX_LIMIT: usize = 50;

    /// Indexes `tools` (named as listed to clients).
    pub fn build(tools: &[Tool]) -> ToolIndex {
        let names = tools.iter().map(|t| t.name.to_string()).collect();
        let inner = match build(tools) {
            Ok(inner) => Some(inner),
            Err(error) => {
                tracing::warn!(%error, "building the tool search index failed");
                None
            }
        };
        ToolIndex { names, inner }
    }

    /// How many tools are indexed.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Names of the tools that best match `query`, best first: at most
    /// `limit` (itself at most `MAX_LIMIT`), all of them tools `permitted`
    /// accepts. `permitted` (the caller's scopes, its endpoint) is asked of
    /// every match in rank order before the list is cut, so a caller gets
    /// `limit` names whenever that many permitted tools match. Words only,
    /// no query syntax; an empty query finds nothing; no query panics.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        permitted: impl Fn(&str) -> bool,
    ) -> Vec<String> {
        let limit = limit.min(Self::MAX_LIMIT);
        let Some(inner) = &self.inner else {
            return Vec::new();
        };
        if limit == 0 || self.names.is_empty() {
            return Vec::new();
        }
        let terms = synonyms::terms(query);
        if terms.is_empty() {
            return Vec::new();
        }
        let query = inner.query(&terms);
        // Every match is scored (a registry holds hundreds of tools, not
        // millions), so the filter never leaves the caller short.
        let collector = TopDocs::with_limit(self.names.len()).order_by_score();
        let scored = match inner.searcher.search(&query, &collector) {
            Ok(scored) => scored,
            Err(error) => {
                tracing::warn!(%error, "tool search failed");
                return Vec::new();
            }
        };
        let mut ranked: Vec<(f32, &str)> = scored
            .into_iter()
            .filter_map(|(score, address)| {
                let ord = inner
                    .ords
                    .get(address.segment_ord as usize)?
                    .get(address.doc_id as usize)?;
                Some((score, self.names.get(*ord as usize)?.as_str()))
            })
            .collect();
        // Ties by name, so the order never depends on the index's layout.
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
        ranked
            .into_iter()
            .filter(|(_, name)| permitted(name))
            .take(limit)
            .map(|(_, name)| name.to_owned())
            .collect()
    }
}

impl Inner {
    fn query(&self, terms: &[(String, f32)]) -> BooleanQuery {
        let f = self.fields;
        let w = &WEIGHTS;
        let weighted = [
            (f.name, w.name),
            (f.title, w.title),
            (f.description, w.description),
            (f.parameters, w.parameters),
        ];
        let clauses = terms
            .iter()
            .map(|(term, weight)| {
                let per_field = weighted
                    .iter()
                    .map(|&(field, boost)| {
                        let term = Term::from_field_text(field, term);
                        let one = TermQuery::new(term, IndexRecordOption::WithFreqs);
                        Box::new(BoostQuery::new(Box::new(one), boost)) as Box<dyn Query>
                    })
                    .collect();
                let best = DisjunctionMaxQuery::with_tie_breaker(per_field, w.tie);
                let clause = BoostQuery::new(Box::new(best), *weight);
                (Occur::Should, Box::new(clause) as Box<dyn Query>)
            })
            .collect();
        BooleanQuery::new(clauses)
    }
}

fn schema() -> (Schema, Fields) {
    let mut schema = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        name: schema.add_text_field("name", text.clone()),
        title: schema.add_text_field("title", text.clone()),
        description: schema.add_text_field("description", text.clone()),
        parameters: schema.add_text_field("parameters", text),
        ord: schema.add_u64_field("ord", FAST),
    };
    (schema.build(), fields)
}

fn build(tools: &[Tool]) -> tantivy::Result<Inner> {
    let (schema, fields) = schema();
    let index = Index::create_in_ram(schema);
    index.tokenizers().register(TOKENIZER, analyzer());
    let mut writer = index.writer_with_num_threads::<TantivyDocument>(1, WRITER_MEMORY)?;
    for (ord, tool) in tools.iter().enumerate() {
        let mut doc = TantivyDocument::new();
        doc.add_text(fields.name, words(&tool.name));
        let title = tool
            .title
            .as_deref()
            .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.as_deref()));
        if let Some(title) = title {
            doc.add_text(fields.title, words(title));
        }
        if let Some(description) = &tool.description {
            doc.add_text(fields.description, capped(description));
        }
        let mut parameters = String::new();
        schema_words(&tool.input_schema, 0, &mut parameters);
        doc.add_text(fields.parameters, capped(&parameters));
        doc.add_u64(fields.ord, ord as u64);
        writer.add_document(doc)?;
    }
    writer.commit()?;
    writer.wait_merging_threads()?;
    let reader = index
        .reader_builder()
        .reload_policy(tantivy::ReloadPolicy::Manual)
        .try_into()?;
    let searcher = reader.searcher();
    let mut ords = Vec::new();
    for segment in searcher.segment_readers() {
        let column = segment.fast_fields().u64("ord")?;
        let per_doc = (0..segment.max_doc())
            .map(|doc| column.first(doc).map_or(u32::MAX, |o| o as u32))
            .collect();
        ords.push(per_doc);
    }
    Ok(Inner {
        searcher,
        fields,
        ords,
    })
}

#[cfg(test)]
mod tests;
