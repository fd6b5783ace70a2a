//! Layered loading: built-in defaults < `config/default.toml` on disk < each
//! `--config FILE` in order < `TEAMGATE__SECTION__KEY` environment variables.
//!
//! figment keeps, for every value, the source it came from; its errors name
//! both the key and that source, which is what an operator needs to fix it.

use std::path::{Path, PathBuf};

use figment::{
    Figment, Metadata, Profile, Provider,
    error::{Actual, Kind},
    providers::{Env, Format, Toml},
    value::{Dict, Map},
};

use super::{Config, EMBEDDED_DEFAULT};

/// Prefix of environment overrides; `__` separates the key path.
const ENV_PREFIX: &str = "TEAMGATE__";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Keys unknown or mistyped, a file that is not TOML, or rules across
    /// keys broken: every problem found, in order. `rest` is the
    /// configuration read without the faulty keys, when it reads, so the
    /// checks `serve` makes later still run in the same round.
    #[error("invalid configuration: {}", .problems.join("; "))]
    Load {
        problems: Vec<String>,
        rest: Option<Box<Config>>,
    },
    /// A value parsed but breaks a rule that spans keys.
    #[error("invalid configuration: `{key}` {why}")]
    Invalid { key: String, why: String },
    #[error("configuration file {path} cannot be read: {source}")]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where configuration comes from, in increasing precedence.
#[derive(Debug, Clone, Default)]
pub struct ConfigSources {
    /// Files given with `--config`, later ones win.
    pub files: Vec<PathBuf>,
    /// Read `config/default.toml` from the working directory when present.
    pub read_default_file: bool,
    /// Apply `TEAMGATE__*` environment variables.
    pub read_env: bool,
}

impl ConfigSources {
    /// What `serve`, `stdio` and `check-config` use.
    pub fn standard(files: Vec<PathBuf>) -> Self {
        Self {
            files,
            read_default_file: true,
            read_env: true,
        }
    }

    /// Only the embedded defaults plus the given files: for tests that must
    /// not depend on the working directory or the environment.
    pub fn files_only(files: Vec<PathBuf>) -> Self {
        Self {
            files,
            read_default_file: false,
            read_env: false,
        }
    }

    /// What a load reads, in order, for messages that say which
    /// configuration a command saw ("no [[upstreams]] configured in ...").
    pub fn describe(&self) -> String {
        let mut read = vec!["the built-in defaults".to_owned()];
        if self.read_default_file && Path::new("config/default.toml").is_file() {
            read.push("config/default.toml (working directory)".to_owned());
        }
        read.extend(self.files.iter().map(|path| path.display().to_string()));
        if self.read_env {
            read.push("TEAMGATE__* environment variables".to_owned());
        }
        if self.files.is_empty() {
            read.push("no --config file or TEAMGATE_CONFIG (give the server's)".to_owned());
        }
        read.join(", ")
    }

    pub fn load(&self) -> Result<Config, ConfigError> {
        self.load_with(|figment| figment)
    }

    /// Loads with a last layer added by the caller (the CLI's `--listen`).
    pub fn load_with(&self, last: impl FnOnce(Figment) -> Figment) -> Result<Config, ConfigError> {
        let mut figment = Figment::from(Named {
            name: "built-in defaults",
            inner: Toml::string(EMBEDDED_DEFAULT),
        });
        let default_file = Path::new("config/default.toml");
        if self.read_default_file && default_file.is_file() {
            figment = figment.merge(Toml::file_exact(default_file));
        }
        for path in &self.files {
            // figment treats a missing file as empty; an operator who names a
            // file means it, so a missing one is an error.
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Unreadable {
                path: path.clone(),
                source,
            })?;
            syntax(path, &text)?;
            figment = figment.merge(Toml::file_exact(path));
        }
        if self.read_env {
            figment = figment.merge(Env::prefixed(ENV_PREFIX).split("__"));
        }
        let figment = last(figment);
        let mut config: Config = figment.extract().map_err(|errors| {
            let secrets = secret_values(&figment);
            let (errors, mut rest) = super::every_error::collect(&figment, errors);
            if let Some(rest) = &mut rest {
                super::paths::resolve(&figment, default_file, rest);
            }
            let mut messages: Vec<String> = errors.iter().map(|e| describe(e, &figment)).collect();
            // With those taken out, the rules across keys are checked too.
            let broken = rest.as_ref().map(Config::problems).unwrap_or_default();
            messages.extend(broken.iter().map(rule_broken));
            for message in &mut messages {
                for secret in &secrets {
                    *message = message.replace(secret, "<redacted>");
                }
            }
            ConfigError::Load {
                problems: messages,
                rest: rest.map(Box::new),
            }
        })?;
        super::paths::resolve(&figment, default_file, &mut config);
        let broken = config.problems();
        if !broken.is_empty() {
            return Err(ConfigError::Load {
                problems: broken.iter().map(rule_broken).collect(),
                rest: Some(Box::new(config)),
            });
        }
        Ok(config)
    }
}

/// A broken rule as one of several problems (without the common prefix).
fn rule_broken(problem: &ConfigError) -> String {
    problem.to_string().replace("invalid configuration: ", "")
}

/// A file that is not TOML, named with its line and column and the parser's
/// words alone: the parser's own message quotes the source line, and that
/// line may hold a secret (`client_secret = "…` with its quote missing).
fn syntax(path: &Path, text: &str) -> Result<(), ConfigError> {
    let Err(error) = toml::from_str::<toml::Table>(text) else {
        return Ok(());
    };
    let at = error.span().map_or(0, |span| span.start).min(text.len());
    let at = (0..=at)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    let why = error.message().trim_end_matches('.');
    Err(ConfigError::Load {
        problems: vec![format!(
            "file {} is not valid TOML at line {line}, column {column}: {why}",
            path.display()
        )],
        rest: None,
    })
}

/// "`<problem>` for key `server.listen` in <where>", where <where> names the
/// file or the exact environment variable to fix.
fn describe(error: &figment::Error, figment: &Figment) -> String {
    let key = dotted(&error.path).to_lowercase();
    // Errors after the first are found on a copy of the merged values: the
    // original figment still knows which file or variable each key (or the
    // nearest table holding it) came from.
    let metadata = (1..=error.path.len())
        .rev()
        .find_map(|n| figment.find_metadata(&error.path[..n].join(".")))
        .or(error.metadata.as_ref());
    let source = match metadata {
        Some(meta) if meta.name.contains("environment") => format!(
            "environment variable {ENV_PREFIX}{}",
            error.path.join("__").to_uppercase()
        ),
        Some(meta) => match &meta.source {
            Some(figment::Source::File(path)) => format!("file {}", path.display()),
            _ => meta.name.to_string(),
        },
        None => "the configuration".to_owned(),
    };
    if let Kind::MissingField(field) = &error.kind {
        let key = [key.as_str(), field].join(if key.is_empty() { "" } else { "." });
        return format!("key `{key}` is required but missing in {source}");
    }
    if let Kind::UnknownField(found, expected) = &error.kind {
        return super::suggest::unknown_key(&key, found, expected, &source);
    }
    let kind = without_values(&error.kind);
    if key.is_empty() {
        format!("{kind} in {source}")
    } else {
        format!("{kind} for key `{key}` in {source}")
    }
}

/// `tools.http[0].name`: the key style of every message.
fn dotted(path: &[String]) -> String {
    let mut key = String::new();
    for part in path {
        if part.parse::<usize>().is_ok() {
            key.push_str(&format!("[{part}]"));
        } else {
            if !key.is_empty() {
                key.push('.');
            }
            key.push_str(part);
        }
    }
    key
}

/// The problem in an operator's words, "expected a list, found a string",
/// without the text value found: a secret put where a list or a number
/// belongs would be printed otherwise. The key and the source say where to
/// look.
fn without_values(kind: &Kind) -> String {
    let found = |actual: &Actual| match actual {
        Actual::Str(_) | Actual::Char(_) => "a string".to_owned(),
        Actual::Bytes(_) => "bytes".to_owned(),
        // A number can be a secret too (`client_secret = 987654321`).
        Actual::Signed(n) if *n < 0 => "a negative number".to_owned(),
        Actual::Signed(_) | Actual::Unsigned(_) => "a whole number".to_owned(),
        Actual::Float(_) => "a number with a fraction".to_owned(),
        Actual::Bool(b) => b.to_string(),
        Actual::Seq => "a list".to_owned(),
        Actual::Map => "a table".to_owned(),
        Actual::Unit | Actual::Option => "nothing".to_owned(),
        Actual::Other(other) => other.clone(),
        other => other.to_string(),
    };
    match kind {
        Kind::InvalidType(actual, expected) | Kind::InvalidValue(actual, expected) => {
            format!("expected {}, found {}", in_words(expected), found(actual))
        }
        Kind::InvalidLength(length, expected) => {
            format!("expected {}, found {length} items", in_words(expected))
        }
        Kind::UnknownVariant(value, variants) => format!(
            "expected one of {}, found {value:?}",
            (variants.iter().map(|v| format!("{v:?}")))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Kind::Unsupported(actual) => format!("{} is not supported here", found(actual)),
        other => other.to_string(),
    }
}

/// Rust's and serde's type names in words an operator knows: `usize` is
/// "a whole number (0 or more)", a struct or a map is a table.
fn in_words(expected: &str) -> String {
    match expected {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a whole number (0 or more)",
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        "a boolean" | "bool" => "true or false",
        "a sequence" | "sequence" => "a list",
        "a map" | "map" => "a table",
        "a duration" => "a duration such as \"30s\", \"5m\" or \"1h 30m\"",
        "socket address" => "an address with a port, such as \"127.0.0.1:8080\"",
        other if other.starts_with("struct ") => "a table",
        other => other,
    }
    .to_owned()
}

/// Text values at the keys that hold secrets, as loaded (whatever their
/// type turned out to be), so no error message repeats them.
fn secret_values(figment: &Figment) -> Vec<String> {
    fn strings(value: &figment::value::Value, out: &mut Vec<String>) {
        match value {
            figment::value::Value::String(_, s) => out.push(s.clone()),
            figment::value::Value::Array(_, items) => items.iter().for_each(|v| strings(v, out)),
            figment::value::Value::Dict(_, dict) => dict.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    for key in [
        "mcp.request_state_keys",
        "telemetry.metrics.token",
        "credentials.keys",
        "portal.client_secret",
    ] {
        if let Ok(value) = figment.find_value(key) {
            strings(&value, &mut found);
        }
    }
    if let Ok(value) = figment.find_value("store.url") {
        let mut urls = Vec::new();
        strings(&value, &mut urls);
        found.extend(
            urls.into_iter()
                .flat_map(|u| super::DatabaseUrl::new(u).passwords()),
        );
    }
    // Very short values would blank out ordinary words of the message.
    found.retain(|s| s.len() >= 4);
    found.sort_by_key(|s| std::cmp::Reverse(s.len()));
    found
}

/// Gives a provider a human name in error messages.
struct Named<P> {
    name: &'static str,
    inner: P,
}

impl<P: Provider> Provider for Named<P> {
    fn metadata(&self) -> Metadata {
        Metadata::named(self.name)
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        self.inner.data()
    }
}
