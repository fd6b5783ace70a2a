//! What a query's words mean in the words tools describe themselves with.
//!
//! People ask for a tool the way they would ask a colleague ("open a PR",
//! "DM Sam", "mkdir out", "take a screenshot"); tools describe themselves
//! in API words ("Create a new pull request", "Post a message", "Create a
//! directory"). Two tables map the first to the second at query time:
//! `SAME`, abbreviations, commands and jargon that mean exactly their
//! expansion (its words count as much as the query's own), and `RELATED`,
//! everyday words that lean toward API words (`SYNONYM` weight). A phrase
//! is matched on stemmed words, fillers skipped ("file a bug" is "file
//! bug", "catch me up" is "catch up"), the longest at each word first; the
//! query's own words inside a matched phrase of two or more words then
//! count for `IDIOM` only ("pull up" a profile is not about pull requests).
//! The tables are about the language, not about one catalogue of tools:
//! every entry should hold for any tool set.
//!
//! The shape of a word adds its kind too: `example.com` is a URL,
//! `notes.txt` a file, `a/b/c` a path, `#general` a channel, `42` a number.

use std::sync::LazyLock;

use tantivy::tokenizer::TextAnalyzer;

use super::{
    MAX_QUERY_CHARS, MAX_TERMS,
    text::{STOP_WORDS, analyzer, humps, stemmer, tokens},
};

/// Weight of the words a `RELATED` entry adds, against 1 for the query's own.
const SYNONYM: f32 = 0.6;
/// Weight of the query's own words inside a matched phrase of two or more.
const IDIOM: f32 = 0.4;
/// Words skipped when matching phrases: articles, pronouns, and what is
/// left of "what's" and "don't".
const FILLERS: &[&str] = &[
    "a", "an", "the", "some", "my", "our", "your", "this", "me", "us", "it", "them", "him", "her",
    "s", "t",
];

/// Phrases (alternatives) that mean exactly their expansion. A phrase's
/// meaning stands alone: where "file a bug" matches, "bug" alone does not.
#[rustfmt::skip]
const SAME: &[(&[&str], &str)] = &[
    // Abbreviations and jargon.
    (&["pr", "prs"], "pull request"),
    (&["mr", "mrs"], "merge request"),
    (&["dm", "dms"], "direct message send post"),
    (&["k8s", "kube", "kubectl"], "kubernetes"),
    (&["repo", "repos"], "repository"),
    (&["org"], "organization"),
    (&["ci", "build status"], "status checks"),
    (&["lgtm"], "approve review"),
    (&["bug", "ticket", "defect"], "issue"),
    (&["file bug", "report bug"], "create issue"),
    (&["env", "env vars", "envvars"], "environment variables"),
    (&["js"], "javascript"),
    (&["xhr", "ajax", "api calls", "http calls"], "network requests"),
    (&["db"], "database"),
    (&["llm"], "llm sampling model"),
    (&["timezone", "time zone"], "profile"),
    // Shell commands.
    (&["ls", "dir"], "list directory"),
    (&["rm", "rmdir"], "delete remove"),
    (&["mkdir"], "create directory"),
    (&["mv", "rename"], "move rename"),
    (&["cp"], "copy"),
    (&["cat"], "read file contents"),
    (&["grep", "find", "look up", "lookup"], "search"),
    (&["exec"], "execute command"),
    // Everyday names of things.
    (&["folder", "folders"], "directory"),
    (&["picture", "photo"], "image"),
    (&["screenshot", "screen shot", "screen capture", "capture screen"], "screenshot"),
    (&["go to", "visit"], "navigate url"),
    (&["go back", "back button"], "navigate back"),
    (&["popup", "pop up", "modal"], "dialog"),
    (&["dropdown", "drop down", "combobox"], "select option"),
    (&["dark mode", "light mode"], "emulate media color scheme"),
    (&["thumbs up", "upvote"], "reaction add"),
    (&["roll back", "rollback"], "rollout undo revision"),
    (&["catch up", "recap"], "recent messages history"),
    (&["say back", "repeat after", "parrot"], "echo"),
    (&["open"], "create new"),
];

/// Everyday words and what they lean toward.
#[rustfmt::skip]
const RELATED: &[(&[&str], &str)] = &[
    (&["project"], "repository"),
    (&["approve"], "approve review"),
    (&["checks pass"], "status checks"),
    (&["readme"], "file contents"),
    (&["database", "table"], "data source database"),
    (&["model", "ai"], "llm sampling model"),
    (&["demo"], "demonstrates"),
    (&["shell", "run inside", "run in"], "execute command"),
    (&["disk"], "file system"),
    (&["big", "how large", "size"], "size info"),
    (&["png", "jpg", "jpeg", "logo"], "image media"),
    (&["doc", "document"], "page"),
    (&["paragraph"], "block text"),
    (&["start", "new", "make", "cut"], "create new"),
    (&["open file"], "read file"),
    (&["open url", "open page", "open site", "browse"], "navigate url"),
    (&["show", "display", "view", "see", "pull up", "look at"], "get read list"),
    (&["which", "what in"], "list"),
    (&["locate", "where"], "search"),
    (&["get", "fetch", "load"], "get retrieve read"),
    (&["retrieve"], "get"),
    (&["export", "download", "dump"], "retrieve read"),
    (&["whole", "everything", "complete"], "entire all"),
    (&["change", "modify", "edit", "alter", "set"], "update edit"),
    (&["update"], "edit patch"),
    (&["save", "store"], "write create"),
    (&["remove", "erase", "drop", "discard"], "delete remove"),
    (&["close issue", "reopen"], "update issue state"),
    (&["reply", "answer", "respond"], "reply comment"),
    (&["send", "tell", "notify"], "post send message"),
    (&["said", "conversation"], "message"),
    (&["up to date", "sync", "rebase"], "update latest"),
    (&["filter"], "query"),
    (&["add up", "plus", "sum", "add"], "sum add"),
    (&["in one go", "at once", "in one commit"], "multiple single"),
    (&["write up", "draft", "compose"], "create new"),
    (&["compress", "zip"], "gzip compress"),
    (&["slow", "job"], "long running operation"),
    (&["kick off"], "start trigger long running operation"),
    (&["ask", "ask user", "prompt user"], "elicitation request user input"),
    (&["why", "stuck", "troubleshoot", "diagnose", "debug"], "describe status details"),
    // Memory.
    (&["remember", "memorize", "note that", "keep in mind"], "memory create entities add observations"),
    (&["recall", "remember about"], "memory search"),
    (&["forget"], "memory delete remove"),
    (&["note"], "observation"),
    // People and chat.
    (&["who", "people", "colleague", "member", "members", "teammate"], "user users"),
    (&["like", "react", "emoji"], "reaction add"),
    (&["history"], "recent messages history"),
    (&["details", "info", "information"], "detailed information"),
    // Kubernetes: its objects are its resources.
    (&["pod", "pods", "deployment", "namespace", "container", "node", "replicas"], "kubernetes resource"),
    (&["helm"], "kubernetes"),
    (&["cluster"], "kubernetes context"),
    (&["revert", "undo"], "rollout undo revision"),
    (&["drain", "cordon", "uncordon"], "node"),
    (&["localhost", "tunnel"], "local port forward"),
    (&["yaml", "manifest"], "manifest yaml"),
    // Browsers.
    (&["navigate"], "navigate url"),
    (&["hit", "press", "tap"], "press click"),
    (&["alert", "confirm"], "dialog"),
    (&["pick", "choose"], "select option"),
    (&["color scheme", "theme"], "emulate media color scheme"),
    (&["devtools", "console"], "console messages"),
    (&["fill out", "fill in"], "fill form type"),
    (&["enter", "input"], "type text"),
];

struct Phrase {
    stems: Vec<String>,
    expansion: &'static str,
    weight: f32,
}

static PHRASES: LazyLock<Vec<Phrase>> = LazyLock::new(|| {
    let mut stemmer = stemmer();
    let same = SAME.iter().map(|entry| (entry, 1.0));
    let related = RELATED.iter().map(|entry| (entry, SYNONYM));
    same.chain(related)
        .flat_map(|((keys, expansion), weight)| {
            keys.iter().map(move |key| (*key, *expansion, weight))
        })
        .map(|(key, expansion, weight)| Phrase {
            stems: tokens(&mut stemmer, key)
                .into_iter()
                .filter(|s| !FILLERS.contains(&s.as_str()))
                .collect(),
            expansion,
            weight,
        })
        .filter(|p| !p.stems.is_empty())
        .collect()
});

static ANALYZER: LazyLock<TextAnalyzer> = LazyLock::new(analyzer);
static STEMMER: LazyLock<TextAnalyzer> = LazyLock::new(stemmer);

/// One word of the query.
struct Word {
    stem: String,
    stop: bool,
    /// Inside a matched phrase of two or more words.
    idiom: bool,
}

/// The terms to search for `query`, analysed as the index is, each once
/// with its weight: the query's own words, then what they mean.
pub(super) fn terms(query: &str) -> Vec<(String, f32)> {
    let query = match query.char_indices().nth(MAX_QUERY_CHARS) {
        Some((end, _)) => &query[..end],
        None => query,
    };
    let (mut analyzer, mut stemmer) = (ANALYZER.clone(), STEMMER.clone());
    let mut seq: Vec<Word> = Vec::new();
    // The parts of camelCase words ("parseConfig"), beside the words.
    let mut parts: Vec<String> = Vec::new();
    for raw in query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        parts.extend(humps(raw));
        let lower = raw.to_lowercase();
        if FILLERS.contains(&lower.as_str()) {
            continue;
        }
        // A number is an argument ("PR 42"), not what a tool does.
        if lower.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if let Some(stem) = tokens(&mut stemmer, raw).pop() {
            let stop = STOP_WORDS.contains(&lower.as_str());
            seq.push(Word {
                stem,
                stop,
                idiom: false,
            });
        }
    }
    // Phrases left to right, the longest at each word first.
    // A word's shape says what it is: `notes.txt` is a file.
    let mut added: Vec<(&str, f32)> = shapes(query).into_iter().map(|s| (s, 1.0)).collect();
    added.extend(parts.iter().map(|p| (p.as_str(), SYNONYM)));
    let mut start = 0;
    while start < seq.len() {
        let at = |phrase: &&Phrase| {
            let n = phrase.stems.len();
            seq.len() - start >= n
                && phrase
                    .stems
                    .iter()
                    .zip(&seq[start..])
                    .all(|(p, w)| *p == w.stem)
        };
        let Some(n) = PHRASES.iter().filter(at).map(|p| p.stems.len()).max() else {
            start += 1;
            continue;
        };
        for phrase in PHRASES.iter().filter(at).filter(|p| p.stems.len() == n) {
            added.push((phrase.expansion, phrase.weight));
        }
        if n > 1 {
            seq[start..start + n]
                .iter_mut()
                .for_each(|w| w.idiom = true);
        }
        start += n;
    }
    let mut terms: Vec<(String, f32)> = Vec::new();
    let mut put = |term: String, weight: f32| {
        if let Some(found) = terms.iter_mut().find(|(t, _)| *t == term) {
            found.1 = found.1.max(weight);
        } else if terms.len() < MAX_TERMS {
            terms.push((term, weight));
        }
    };
    for word in seq.into_iter().filter(|w| !w.stop) {
        put(word.stem, if word.idiom { IDIOM } else { 1.0 });
    }
    for (text, weight) in added {
        for term in tokens(&mut analyzer, text) {
            put(term, weight);
        }
    }
    terms
}

/// What the shape of the query's words says: URLs, files, paths,
/// channels and numbers.
fn shapes(query: &str) -> Vec<&'static str> {
    const FILE_TYPES: &[&str] = &[
        "txt", "md", "yaml", "yml", "json", "toml", "csv", "log", "conf", "cfg", "ini", "png",
        "jpg", "jpeg", "gif", "svg", "pdf", "rs", "py", "js", "ts", "html", "css", "xml", "sh",
        "zip", "gz", "tar",
    ];
    const DOMAINS: &[&str] = &[
        "com", "org", "net", "io", "dev", "app", "ai", "co", "edu", "gov",
    ];
    let mut out = Vec::new();
    for chunk in query.split_whitespace() {
        let chunk = chunk
            .trim_matches(|c: char| !c.is_alphanumeric() && !"#./~_-".contains(c))
            .trim_end_matches(['.', ',']);
        let lower = chunk.to_lowercase();
        let suffix = lower.rsplit_once('.').map(|(_, s)| s);
        if lower.contains("://") || lower.starts_with("www.") {
            out.push("url");
        } else if suffix.is_some_and(|s| FILE_TYPES.contains(&s)) {
            out.push("file");
        } else if !lower.contains('/') && suffix.is_some_and(|s| DOMAINS.contains(&s)) {
            out.push("url");
        } else if lower.starts_with(['/', '~']) || lower.matches('/').count() >= 2 {
            out.push("path directory");
        }
        if let Some(rest) = lower.strip_prefix('#') {
            if rest.starts_with(|c: char| c.is_alphabetic()) {
                out.push("channel");
            } else if rest.starts_with(|c: char| c.is_ascii_digit()) {
                out.push("number");
            }
        } else if !lower.is_empty() && lower.chars().all(|c| c.is_ascii_digit()) {
            out.push("number");
        }
    }
    out
}
