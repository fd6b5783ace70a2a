//! Ranked sections for a free-text query. Each query word scores by the
//! field where it says most about a section (its heading, its first
//! paragraph, the headings above it, its body: a dis-max, as in BM25F's
//! "best field"), so a section matching more of the words beats one that
//! repeats one word in every field. A section then gains from other matches
//! in its document, and results are grouped so one document cannot fill the
//! list.

use std::collections::{HashMap, hash_map::Entry};

use tantivy::{
    DocAddress, TantivyDocument, Term,
    collector::TopDocs,
    query::{BooleanQuery, BoostQuery, DisjunctionMaxQuery, Occur, Query, TermQuery},
    schema::{Field, IndexRecordOption, Value},
    snippet::SnippetGenerator,
};

use super::{
    index::Snapshot,
    store::Fields,
    text::{SNIPPET_CHARS, analyzer, snippet},
};

/// Sections of one document a result list shows before other documents'.
pub(super) const PER_DOCUMENT: usize = 2;
/// Sections scored before grouping: enough that grouping still fills the
/// list, and that a document's relevance is seen across its sections.
const CANDIDATES: usize = 200;
/// Most distinct query words searched (a query is at most 500 characters).
const MAX_WORDS: usize = 32;

/// How much each field says about a section, per matched word.
struct Weights {
    heading: f32,
    lead: f32,
    context: f32,
    /// Share of the other fields' scores kept beside the best one.
    tie: f32,
    /// How much a document's summed relevance adds to each of its sections.
    document: f32,
}

const WEIGHTS: Weights = Weights {
    heading: 1.5,
    lead: 1.2,
    context: 1.2,
    tie: 0.3,
    document: 0.05,
};

pub(super) struct Hit {
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

/// The query's words as the index analyses them, each once, in order.
fn words(query: &str) -> Vec<String> {
    let mut analyzer = analyzer();
    let mut stream = analyzer.token_stream(query);
    let mut words: Vec<String> = Vec::new();
    while let Some(token) = stream.next() {
        if words.len() == MAX_WORDS {
            break;
        }
        if !words.contains(&token.text) {
            words.push(token.text.clone());
        }
    }
    words
}

fn query(fields: Fields, words: &[String]) -> BooleanQuery {
    let w = &WEIGHTS;
    let weighted = [
        (fields.heading, w.heading),
        (fields.lead, w.lead),
        (fields.context, w.context),
        (fields.body, 1.0),
    ];
    let term = |field: Field, word: &str| Term::from_field_text(field, word);
    let clauses: Vec<(Occur, Box<dyn Query>)> = words
        .iter()
        .map(|word| {
            let per_field = weighted
                .iter()
                .map(|&(field, boost)| {
                    let one = TermQuery::new(term(field, word), IndexRecordOption::WithFreqs);
                    Box::new(BoostQuery::new(Box::new(one), boost)) as Box<dyn Query>
                })
                .collect();
            let best = DisjunctionMaxQuery::with_tie_breaker(per_field, w.tie);
            (Occur::Should, Box::new(best) as Box<dyn Query>)
        })
        .collect();
    BooleanQuery::new(clauses)
}

impl Snapshot {
    /// Ranked sections for a free-text query, at most `PER_DOCUMENT` from
    /// one document while others match. Words only, no query syntax: what
    /// an assistant sends is a question.
    pub(super) fn search(&self, text: &str, limit: usize) -> anyhow::Result<Vec<Hit>> {
        let words = words(text);
        if words.is_empty() {
            return Ok(Vec::new());
        }
        let searchable = self.searchable()?;
        let searcher = searchable.reader.searcher();
        let f = searchable.fields;
        let query = query(f, &words);
        let top = searcher.search(&query, &TopDocs::with_limit(CANDIDATES).order_by_score())?;
        // Each candidate's document, from a fast field (no stored fields read yet).
        let mut candidates = Vec::with_capacity(top.len());
        let mut relevance: HashMap<u64, f32> = HashMap::new();
        let mut columns = HashMap::new();
        for (score, address) in top {
            let column = match columns.entry(address.segment_ord) {
                Entry::Occupied(column) => column.into_mut(),
                Entry::Vacant(slot) => slot.insert(
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
                let prior = WEIGHTS.document * relevance[&document];
                (score + prior, document, address)
            })
            .collect();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
        let chosen = grouped(ranked, limit);
        let chosen = chosen
            .into_iter()
            .map(|(score, address)| Ok((score, searcher.doc::<TantivyDocument>(address)?)))
            .collect::<anyhow::Result<Vec<_>>>()?;
        // The snippet generator for the body only: its terms and their
        // frequencies, looked up once per search.
        let mut snippets = SnippetGenerator::create(&searcher, &query, f.body)?;
        snippets.set_max_num_chars(SNIPPET_CHARS);
        let hits = chosen.into_iter().map(|(score, doc)| {
            let path = stored_str(&doc, f.path).to_owned();
            let anchor = stored_str(&doc, f.anchor);
            let number = |field| doc.get_first(field).and_then(|v| v.as_u64()).unwrap_or(0);
            Hit {
                title: self
                    .documents
                    .get(&path)
                    .map(|d| d.title.clone())
                    .unwrap_or_default(),
                headings: serde_json::from_str(stored_str(&doc, f.headings)).unwrap_or_default(),
                part: anchor.starts_with('~'),
                anchor: anchor.trim_start_matches('~').to_owned(),
                start: number(f.start),
                end: number(f.end),
                score,
                snippet: snippet(&snippets, stored_str(&doc, f.text)),
                path,
            }
        });
        Ok(hits.collect())
    }
}

/// The best `limit` candidates, at most `PER_DOCUMENT` of one document
/// while others match; only when few documents match do more sections of
/// one fill the list.
fn grouped(ranked: Vec<(f32, u64, DocAddress)>, limit: usize) -> Vec<(f32, DocAddress)> {
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
    let room = limit.saturating_sub(chosen.len());
    chosen.extend(spare.into_iter().take(room));
    chosen
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
    fn query_words_are_analysed_once_each() {
        assert_eq!(
            words("Creating the directories, create a directory!"),
            ["creat", "directori"]
        );
        assert!(words("the a of").is_empty());
    }

    #[test]
    fn grouping_keeps_two_per_document_while_others_match() {
        let at = |doc| DocAddress::new(0, doc);
        let ranked = vec![
            (9.0, 1, at(0)),
            (8.0, 1, at(1)),
            (7.0, 1, at(2)),
            (6.0, 2, at(3)),
        ];
        let order: Vec<u32> = grouped(ranked.clone(), 3)
            .iter()
            .map(|(_, a)| a.doc_id)
            .collect();
        assert_eq!(order, [0, 1, 3]);
        let order: Vec<u32> = grouped(ranked, 10).iter().map(|(_, a)| a.doc_id).collect();
        assert_eq!(order, [0, 1, 3, 2]);
    }

    fn paths(hits: anyhow::Result<Vec<Hit>>) -> Vec<String> {
        hits.unwrap().into_iter().map(|h| h.path).collect()
    }

    #[test]
    fn an_index_in_ram_waits_for_the_first_search_and_then_follows_edits() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("guide.md");
        std::fs::write(&file, "# Guide\n\nDeploying the gateway.\n").unwrap();
        let files = vec![("guide.md".to_owned(), file.clone())];

        let first = Snapshot::open(&files, None).unwrap();
        assert!(first.built().is_none(), "no index before a search");
        // An edit before any search: the next snapshot waits too.
        std::fs::write(&file, "# Guide\n\nRotating the signing keys.\n").unwrap();
        let second = first.update(&files).unwrap();
        assert!(second.built().is_none());
        assert_eq!(paths(second.search("rotating keys", 5)), ["guide.md"]);
        assert!(second.built().is_some(), "the search built it");
        assert!(paths(second.search("deploying", 5)).is_empty());

        // Once built, an edit brings the same index up to date at once.
        std::fs::write(&file, "# Guide\n\nDeploying again.\n").unwrap();
        let third = second.update(&files).unwrap();
        assert!(third.built().is_some());
        assert_eq!(paths(third.search("deploying", 5)), ["guide.md"]);
        assert!(paths(third.search("rotating", 5)).is_empty());
    }

    #[test]
    fn an_index_on_disk_is_opened_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("guide.md");
        std::fs::write(&file, "# Guide\n\nDeploying the gateway.\n").unwrap();
        let folder = dir.path().join("index");
        let files = vec![("guide.md".to_owned(), file)];
        let snapshot = Snapshot::open(&files, Some(&folder)).unwrap();
        assert!(snapshot.built().is_some());
        assert!(folder.join("meta.json").is_file());
        assert_eq!(paths(snapshot.search("deploying", 5)), ["guide.md"]);
    }
}
