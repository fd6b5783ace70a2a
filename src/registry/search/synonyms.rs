//! What a query's words mean in the words tools describe themselves with.
//!
//! People ask for a tool the way they would ask a colleague ("open a PR",
//! "DM Sam", "mkdir out", "take a screenshot"); tools describe themselves
//! in API words ("Create a new pull request", "Post a message", "Create a
//! directory"). The table below maps the first to the second at query time:
//! abbreviations, command names, jargon and everyday verbs. A phrase is
//! matched on stemmed words, articles skipped ("file a bug" is "file bug"),
//! and adds its words beside the query's own at `SYNONYM` weight; the words
//! of a matched phrase of two or more words then count for `IDIOM` only
//! ("pull up" a profile is not about pull requests). The table is about
//! the language, not about one catalogue of tools: every entry should hold
//! for any tool set.
//!
//! The shape of a word adds its kind too: `example.com` is a URL,
//! `notes.txt` a file, `a/b/c` a path, `#general` a channel, `42` a number.

use std::sync::LazyLock;

use tantivy::tokenizer::TextAnalyzer;

use super::{MAX_QUERY_CHARS, MAX_TERMS, STOP_WORDS, analyzer, stemmer, tokens, words};

/// Weight of the words a synonym adds, against 1 for the query's own.
const SYNONYM: f32 = 0.6;
/// Weight of the query's own words inside a matched phrase of two or more.
const IDIOM: f32 = 0.4;
/// Words skipped when matching phrases.
/// (`s` and `t` are what is left of "what's" and "don't".)
const ARTICLES: &[&str] = &[
    "a", "an", "the", "some", "my", "our", "your", "this", "s", "t",
];

/// Phrases (alternatives) and what they mean.
const SYNONYMS: &[(&[&str], &str)] = &[
    // Abbreviations and jargon.
    (&["pr", "prs"], "pull request"),
    (&["mr", "mrs"], "merge request"),
    (&["dm", "dms"], "direct message send post"),
    (&["k8s", "kube", "kubectl"], "kubernetes"),
    (&["repo", "repos"], "repository"),
    (&["project"], "repository"),
    (&["org"], "organization"),
    (&["ci", "build status", "checks pass"], "status checks"),
    (&["lgtm", "approve"], "approve review"),
    (&["bug", "ticket", "defect"], "issue"),
    (&["readme"], "file contents"),
    (&["env", "env vars", "envvars"], "environment variables"),
    (&["js"], "javascript"),
    (
        &["xhr", "ajax", "api calls", "http calls"],
        "network requests",
    ),
    (&["db"], "database"),
    (&["database", "table"], "data source database"),
    (&["llm", "model", "ai"], "llm sampling model"),
    (&["demo"], "demonstrates"),
    (&["timezone", "time zone"], "profile"),
    // Shell commands.
    (&["ls", "dir"], "list directory"),
    (&["rm", "rmdir"], "delete remove"),
    (&["mkdir"], "create directory"),
    (&["mv", "rename"], "move rename"),
    (&["cp"], "copy"),
    (&["cat"], "read file contents"),
    (&["grep"], "search"),
    (&["exec", "run inside", "shell"], "execute command"),
    // Files and folders.
    (&["folder", "folders"], "directory"),
    (&["disk"], "file system"),
    (&["big", "how large", "size"], "size info"),
    (
        &["picture", "photo", "png", "jpg", "jpeg", "logo"],
        "image media",
    ),
    (&["doc", "document"], "page"),
    (&["paragraph"], "block text"),
    // Everyday verbs and the API verbs they mean.
    (
        &["open", "start", "new", "make", "cut", "file bug"],
        "create new",
    ),
    (&["open file", "open url", "open page"], "read navigate"),
    (
        &["show", "display", "view", "see", "pull up", "look at"],
        "get read",
    ),
    (&["which", "what in"], "list"),
    (
        &["find", "look up", "lookup", "locate", "where"],
        "search find",
    ),
    (&["get", "fetch", "load"], "get retrieve read"),
    (&["retrieve"], "get"),
    (&["export", "download", "dump"], "retrieve read"),
    (&["whole", "everything", "complete"], "entire all"),
    (&["change", "modify", "edit", "alter", "set"], "update edit"),
    (&["update"], "edit patch"),
    (&["save", "store"], "write create"),
    (
        &["remove", "erase", "drop", "forget", "discard"],
        "delete remove",
    ),
    (&["close", "reopen"], "update state"),
    (&["reply", "answer", "respond"], "reply comment"),
    (&["send", "tell", "notify", "say"], "post send message"),
    (&["said", "conversation"], "message"),
    (&["up to date", "sync", "rebase"], "update latest"),
    (&["filter"], "query"),
    (&["add up", "plus", "sum", "add"], "sum add"),
    (&["say back", "repeat", "parrot"], "echo"),
    (&["compress", "zip"], "gzip compress"),
    (&["slow", "kick off", "job"], "long running operation"),
    (
        &["ask", "prompt me", "ask me", "ask user"],
        "elicitation request user input",
    ),
    // Memory.
    (
        &["remember", "memorize", "note that", "keep in mind"],
        "memory create entities add observations",
    ),
    (&["recall", "know about", "remember about"], "memory search"),
    (&["forget"], "memory"),
    (&["note"], "observation"),
    // People and chat.
    (
        &[
            "who",
            "people",
            "colleague",
            "member",
            "members",
            "teammate",
        ],
        "user users",
    ),
    (
        &["thumbs up", "like", "react", "emoji", "upvote"],
        "reaction add",
    ),
    (&["catch up", "recap", "history"], "recent messages history"),
    (&["details", "info", "information"], "detailed information"),
    // Kubernetes.
    (
        &[
            "pod",
            "pods",
            "deployment",
            "namespace",
            "container",
            "node",
            "helm",
            "replicas",
        ],
        "kubernetes",
    ),
    (&["cluster"], "kubernetes context"),
    (
        &["roll back", "rollback", "revert", "undo"],
        "rollout undo revision",
    ),
    (&["drain", "cordon", "uncordon"], "node"),
    (&["localhost", "tunnel"], "local port forward"),
    (&["yaml", "manifest"], "manifest yaml"),
    // Browsers.
    (
        &[
            "screenshot",
            "screen shot",
            "screen capture",
            "capture screen",
        ],
        "screenshot",
    ),
    (&["go to", "visit", "browse", "navigate"], "navigate url"),
    (&["go back", "back button"], "navigate back"),
    (&["hit", "press", "tap"], "press click"),
    (&["popup", "pop up", "alert", "confirm", "modal"], "dialog"),
    (
        &["dropdown", "drop down", "combobox", "pick", "choose"],
        "select option",
    ),
    (
        &["dark mode", "light mode", "color scheme", "theme"],
        "emulate media color scheme",
    ),
    (&["devtools", "console"], "console messages"),
    (&["fill out", "fill in"], "fill form type"),
    (&["enter", "input"], "type text"),
];

struct Phrase {
    stems: Vec<String>,
    expansion: &'static str,
}

static PHRASES: LazyLock<Vec<Phrase>> = LazyLock::new(|| {
    let mut stemmer = stemmer();
    SYNONYMS
        .iter()
        .flat_map(|(keys, expansion)| keys.iter().map(move |key| (*key, *expansion)))
        .map(|(key, expansion)| Phrase {
            stems: tokens(&mut stemmer, key)
                .into_iter()
                .filter(|s| !ARTICLES.contains(&s.as_str()))
                .collect(),
            expansion,
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
    for raw in words(query).split_whitespace() {
        let lower = raw.to_lowercase();
        if ARTICLES.contains(&lower.as_str()) {
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
    let mut added: Vec<&str> = shapes(query);
    for start in 0..seq.len() {
        for phrase in PHRASES.iter() {
            let n = phrase.stems.len();
            let matched = seq.len() - start >= n
                && phrase
                    .stems
                    .iter()
                    .zip(&seq[start..])
                    .all(|(p, w)| *p == w.stem);
            if matched {
                added.push(phrase.expansion);
                if n > 1 {
                    seq[start..start + n]
                        .iter_mut()
                        .for_each(|w| w.idiom = true);
                }
            }
        }
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
    for text in added {
        for term in tokens(&mut analyzer, text) {
            put(term, SYNONYM);
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
