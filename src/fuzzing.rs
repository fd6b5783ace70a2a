//! Entry points for the fuzz targets in `fuzz/` (`scripts/fuzz`), not an
//! API: each calls the code the server runs, with nothing of its own added,
//! so a target exercises exactly what a request or a configuration file
//! reaches. They live in the library so that a change of the code they call
//! breaks the ordinary build, not only the fuzz build nobody runs in CI.

use std::{fs::File, os::fd::OwnedFd, path::Path};

use axum::http::{HeaderMap, HeaderValue, header};
use serde_json::{Value, json};

use crate::{
    config::{ConfigSources, FilesSourceConfig, HttpToolConfig},
    http::EdgeConfig,
    protocol::Envelope,
    protocol::JsonObject,
    providers::{ProviderError, files::FilesSource, http_tool::HttpRunner},
};

/// What `teamgate check-config --config <path>` does, without the
/// environment or a `config/default.toml` in the working directory: the
/// printed configuration, or the error it prints.
// String: the target compares the printed error's text, as check-config prints it.
pub fn check_config(path: &Path) -> Result<String, String> {
    let config = ConfigSources::files_only(vec![path.to_owned()])
        .load()
        .map_err(|e| e.to_string())?;
    crate::app::edge_config(&config).map_err(|e| e.to_string())?;
    toml::to_string_pretty(&config).map_err(|e| format!("printing configuration: {e}"))
}

/// The guard's check of a POSTed body (`http/guard.rs`): the envelope, or
/// the refusal as it is answered (status and JSON-RPC body).
pub fn inspect(
    body: &[u8],
    content_type: Option<&[u8]>,
    max_depth: usize,
) -> Result<Envelope, (u16, Value)> {
    let mut headers = HeaderMap::new();
    if let Some(value) = content_type.and_then(|v| HeaderValue::from_bytes(v).ok()) {
        headers.insert(header::CONTENT_TYPE, value);
    }
    crate::http::body::inspect(body, &headers, max_depth).map_err(|(error, id)| {
        let response = error.into_response_with_id(id);
        let status = response.status().as_u16();
        let bytes =
            futures::executor::block_on(axum::body::to_bytes(response.into_body(), usize::MAX))
                .unwrap_or_default();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    })
}

/// The guard's nesting depth of a body.
pub fn json_depth(body: &[u8]) -> usize {
    crate::http::body::json_depth(body)
}

/// The edge's Host and Origin rules for a server at
/// `https://mcp.example.com/mcp` that also allows the host
/// `internal.example:8443` and the origin `https://app.example.com`, behind
/// proxies in 10.0.0.0/8 that set `X-Forwarded-For` (the default).
pub fn edge_config() -> EdgeConfig {
    EdgeConfig::new(
        "https://mcp.example.com/mcp",
        &["internal.example:8443".into()],
        &["https://app.example.com".into()],
        &["10.0.0.0/8".into()],
        crate::config::ForwardedHeader::XForwardedFor,
    )
    .expect("a valid edge configuration")
}

/// An HTTP tool with the URL template `url`, as `[[tools.http]]` declares it.
pub fn http_tool(url: &str, allowlist: &[String]) -> anyhow::Result<HttpRunner> {
    let config: HttpToolConfig =
        serde_json::from_value(json!({"name": "fuzzed", "description": "fuzzed", "url": url}))?;
    let client = crate::outbound::client();
    Ok(HttpRunner::new(
        "tools.http[0]",
        &config,
        client,
        (allowlist, &Default::default()),
        &mut Vec::new(),
    )?
    .0)
}

/// The URL an HTTP tool would request for `arguments`, or why it refuses.
pub fn http_tool_url(tool: &HttpRunner, arguments: &JsonObject) -> Result<String, ProviderError> {
    tool.url(arguments)
}

/// A files source over `root` offering `extensions`.
pub fn files_source(root: &Path, extensions: &[&str]) -> anyhow::Result<FilesSource> {
    let config: FilesSourceConfig = serde_json::from_value(json!({
        "name": "fuzzed",
        "root": root.to_str().unwrap_or_default(),
        "extensions": extensions,
    }))?;
    Ok(FilesSource::new(0, config)?.as_ref().clone())
}

/// The file `read_file` would read for `path`, opened.
pub fn files_open(source: &FilesSource, path: &str) -> Result<File, ProviderError> {
    source.open(path).map(|(file, _)| file)
}

/// The folder `path` names, opened beneath the root as `list_files` opens
/// it (before `list_files` checks that it is visible).
pub fn files_open_dir(source: &FilesSource, path: &str) -> Option<OwnedFd> {
    let plain = source.plain(path).ok()?;
    crate::providers::files::beneath::open_dir(&source.root_fd, plain).ok()
}
