//! `ProviderError`: why a declared tool's call failed, in words for the
//! model (a tool result with `isError: true`), or why a declaration is
//! refused at build. A variant's text names paths, URLs and tools, never a
//! secret: an HTTP tool's URL and an upstream's answer are scrubbed before
//! they are put in one.

use std::time::Duration;

use crate::registry::RegistryError;

/// An error from below kept whole (sqlx is named only under `sql/`).
pub(crate) type Cause = Box<dyn std::error::Error + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// A `${user:NAME}` that cannot be filled.
    #[error(transparent)]
    Slot(#[from] RegistryError),
    #[error("`{tool}` needs the `{claim}` claim of your identity, and your token has none")]
    NoClaim { tool: String, claim: String },
    #[error(
        "the template uses {placeholders} but the prompt {prompt:?} declares no such argument \
         (declared: {declared})"
    )]
    UndeclaredPlaceholders {
        placeholders: String,
        prompt: String,
        declared: String,
    },

    // HTTP tools.
    #[error("an argument is `.` or `..`, which would climb the URL path; `{tool}` did not call it")]
    DotSegment { tool: String },
    /// `url` scrubbed: it may carry a member's value.
    #[error(
        "the arguments produce a URL outside the allowed base URLs ({url}); `{tool}` did not call it"
    )]
    OutsideBase { url: String, tool: String },
    #[error("the credential in header {0} is not a valid header value")]
    CredentialHeader(String),
    #[error("the upstream API did not answer within {0:?}")]
    Timeout(Duration),
    /// The cause only: reqwest's own text names the URL.
    #[error("the request to the upstream API failed: {0}")]
    Request(String),
    #[error("the upstream response is larger than {0} bytes; narrow the request")]
    ResponseTooLarge(usize),
    #[error("reading the response failed: {0}")]
    ResponseRead(Cause),
    /// `excerpt` scrubbed before it was cut.
    #[error("the upstream API answered {status}: {excerpt}")]
    Status {
        status: reqwest::StatusCode,
        excerpt: String,
    },
    #[error("the upstream API did not answer JSON ({0})")]
    NotJson(serde_json::Error),

    // Files sources.
    #[error("`{path}` is not a path inside `{source_name}`: use a relative path without `..`")]
    NotInside { path: String, source_name: String },
    #[error(
        "`{path}` is or passes through a link; links are not followed, so nothing outside `{source_name}` is reached: refused"
    )]
    Link { path: String, source_name: String },
    #[error("`{path}` does not exist in `{source_name}`")]
    Missing { path: String, source_name: String },
    #[error("`{0}` is not a file")]
    NotAFile(String),
    #[error("`{0}` is not a folder")]
    NotAFolder(String),
    #[error("`{path}` cannot be read: {error}")]
    Unreadable { path: String, error: std::io::Error },
    #[error(
        "`{path}` is hidden or ignored (.gitignore), and `{source_name}` does not offer such files"
    )]
    Hidden { path: String, source_name: String },
    #[error("`{path}` has an extension this source does not offer (allowed: {allowed})")]
    Extension { path: String, allowed: String },
    #[error("`{path}` is {size} bytes, over this source's limit of {max}")]
    FileTooLarge { path: String, size: u64, max: u64 },
    #[error("`{path}` has {total} lines; start_line {first} is past its end")]
    PastTheEnd {
        path: String,
        total: u64,
        first: u64,
    },
    #[error("`{path}` cannot be listed: {error}")]
    Unlistable { path: String, error: nix::Error },
    #[error("`pattern` is not a valid regular expression: {0}")]
    Pattern(grep_regex::Error),
    #[error("`glob` is not a valid glob: {0}")]
    Glob(ignore::Error),
    /// An argument missing or out of its range, in the schema's words.
    #[error("{0}")]
    Argument(&'static str),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The blocking task of a read, search or listing panicked.
    #[error("the {0} failed")]
    Panicked(&'static str),

    // SQL sources.
    #[error("the statement ran longer than statement_timeout ({0:?}) and was cancelled")]
    StatementTimeout(Duration),
    /// The database's message and SQLSTATE; never the URL.
    #[error("the database refused the statement: {message}{code}")]
    Refused { message: String, code: String },
    #[error("no database connection was free within acquire_timeout; try again")]
    NoConnection,
    /// Never the URL: it holds the member's values.
    #[error(
        "your credential values do not make a valid database URL; set them again on the Connections page"
    )]
    MemberUrl,
    #[error("a value could not be read: {0}")]
    Decode(Cause),
    #[error("the database could not be reached: {0}")]
    Unreachable(Cause),
}
