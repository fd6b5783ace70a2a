//! `[[tools.http]]`: one HTTP request per call. The URL is rendered from the
//! arguments (percent-encoded, so an argument cannot change the host or climb
//! the path) and checked against the allowlist again before it is sent.
//! Headers come only from configuration: the MCP caller's own token never
//! travels upstream; a header or URL naming `${user:NAME}` gets the calling
//! member's own value of that credential slot (`slots.rs`). Bodies are read
//! up to a cap; redirects are not followed.

use std::time::Duration;

use anyhow::Context;
use async_trait::async_trait;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::ProviderError;
use super::declared::{
    KindDefaults, Runner, structured_result, template::as_text, template::names, template::render,
    text_result,
};
use crate::body::{CappedError, read_response};
use crate::registry::{Slots, Template};
use crate::{
    config::{HttpToolConfig, member_slots, rendered_url_allowed},
    protocol::{CallToolResponse, CallToolResult, JsonObject},
    registry::{CallContext, CredentialKind},
};

/// Everything but RFC 3986 unreserved characters is encoded, `/` included.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');
/// Most of an upstream error body quoted back to the model.
const ERROR_EXCERPT: usize = 2048;

pub struct HttpRunner {
    client: reqwest::Client,
    name: String,
    method: reqwest::Method,
    url: String,
    /// The URL template when it names a member's credential slot.
    member_url: Option<Template>,
    headers: HeaderMap,
    /// Headers naming a member's credential slot, filled per call.
    member_headers: Vec<(HeaderName, Template)>,
    /// Whether the fixed headers hold configured secrets (`${NAME}`).
    shared_secret: bool,
    slots: Slots,
    body: Option<Value>,
    /// Query parameters: name and value template.
    query: Vec<(String, String)>,
    timeout: Duration,
    max_bytes: usize,
    structured: bool,
    pointer: Option<String>,
    allowlist: Vec<String>,
}

/// One client for every HTTP tool: rustls, no redirects, no cookies.
pub fn client() -> anyhow::Result<reqwest::Client> {
    crate::outbound::builder()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("teamgate/", env!("CARGO_PKG_VERSION")))
        .build()
        .context("building the HTTP client for HTTP tools")
}

impl HttpRunner {
    /// Builds the runner for the tool configured at `at` (`tools.http[0]`),
    /// adding the header secrets to `secrets`; `slots` fills the headers
    /// naming `${user:NAME}`.
    pub fn new(
        at: &str,
        config: &HttpToolConfig,
        client: reqwest::Client,
        (allowlist, slots): (&[String], &Slots),
        secrets: &mut Vec<String>,
    ) -> anyhow::Result<(Self, KindDefaults)> {
        let mut headers = HeaderMap::new();
        let mut member_headers = Vec::new();
        let held = secrets.len();
        for (name, template) in &config.headers {
            let key = format!("{at}.headers.{name}");
            let template = Template::parse(template, &key, secrets)?;
            let name: HeaderName = name.parse().with_context(|| format!("{key}: bad name"))?;
            let Some(value) = template.fixed() else {
                member_headers.push((name, template));
                continue;
            };
            let mut value = HeaderValue::from_str(value)
                .map_err(|_| anyhow::anyhow!("{key}: the value is not a valid header value"))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        // Only a URL naming a slot is read as a template of values.
        let member_url = (!member_slots(&config.url).is_empty())
            .then(|| Template::parse(&config.url, &format!("{at}.url"), secrets))
            .transpose()?;
        let runner = Self {
            member_headers,
            shared_secret: secrets.len() > held,
            slots: slots.clone(),
            client,
            name: config.name.clone(),
            method: config.method.parse().context("method")?,
            url: config.url.clone(),
            member_url,
            headers,
            body: config.body.clone(),
            query: config.query.clone().into_iter().collect(),
            timeout: config.timeout,
            max_bytes: config.max_response_bytes,
            structured: config.output_schema.is_some(),
            pointer: config.result_pointer.clone(),
            allowlist: allowlist.to_vec(),
        };
        let defaults = KindDefaults {
            open_world: true,
            output_schema: None,
            task: crate::config::TaskMode::Forbidden,
        };
        Ok((runner, defaults))
    }

    /// The URL for these arguments, refused when an argument makes a `.`
    /// or `..` path segment: URL parsers drop or climb those (encoded or
    /// not), so `{project}/items/{id}` with `..` would reach another path.
    pub(crate) fn url(&self, arguments: &JsonObject) -> Result<String, ProviderError> {
        self.url_from(&self.url, arguments)
    }

    /// `url` for a template whose member values are in already.
    fn url_from(&self, template: &str, arguments: &JsonObject) -> Result<String, ProviderError> {
        let url = render(template, false, |name| {
            arguments
                .get(name)
                .map(|v| utf8_percent_encode(&as_text(v), COMPONENT).to_string())
        });
        if has_dot_segment(&url) {
            let tool = self.name.clone();
            return Err(ProviderError::DotSegment { tool });
        }
        Ok(url)
    }

    /// The query parameters of a call: each whose arguments are all given.
    fn query_pairs<'a>(&'a self, arguments: &JsonObject) -> Vec<(&'a str, String)> {
        let given = |template: &str| names(template).iter().all(|n| arguments.contains_key(*n));
        (self.query.iter())
            .filter(|(_, template)| given(template))
            .map(|(name, template)| {
                let value = render(template, false, |n| arguments.get(n).map(as_text));
                (name.as_str(), value)
            })
            .collect()
    }

    /// The headers of a call by `cx`'s member, and the member values in them.
    async fn headers(&self, cx: &CallContext) -> Result<(HeaderMap, Vec<String>), ProviderError> {
        if self.shared_secret {
            cx.credential().report(CredentialKind::Shared);
        }
        let mut headers = self.headers.clone();
        let mut used = Vec::new();
        for (name, template) in &self.member_headers {
            let value = (self.slots)
                .render(template, (&self.name, cx), str::to_owned, &mut used)
                .await?;
            let mut value = HeaderValue::from_str(&value)
                .map_err(|_| ProviderError::CredentialHeader(name.to_string()))?;
            value.set_sensitive(true);
            headers.insert(name.clone(), value);
        }
        Ok((headers, used))
    }

    /// The call's result, or its error as the tool result the model reads,
    /// scrubbed of the configured secrets and the member's values used.
    async fn send(&self, arguments: &JsonObject, cx: &CallContext) -> CallToolResult {
        let (headers, url, used) = match self.prepare(cx).await {
            Ok(prepared) => prepared,
            Err(error) => return text_result(error.to_string(), true),
        };
        // A member's own values are scrubbed like the configured secrets.
        let scrubber = if used.is_empty() {
            cx.scrubber().clone()
        } else {
            cx.scrubber().with(used)
        };
        match self.exchange((&url, arguments), headers, &scrubber).await {
            Ok(result) => scrubber.scrub(result),
            // The variants holding a value are scrubbed as they are made;
            // the whole text again here, as every tool result is.
            Err(error) => text_result(scrubber.text(&error.to_string()), true),
        }
    }

    /// The headers and URL template of a call by `cx`'s member, and the
    /// member values in them.
    async fn prepare(
        &self,
        cx: &CallContext,
    ) -> Result<(HeaderMap, String, Vec<String>), ProviderError> {
        let (headers, mut used) = self.headers(cx).await?;
        let url = match &self.member_url {
            // Percent-encoded like an argument: a value cannot change the host.
            Some(template) => {
                let encode = |v: &str| utf8_percent_encode(v, COMPONENT).to_string();
                (self.slots)
                    .render(template, (&self.name, cx), encode, &mut used)
                    .await?
            }
            None => self.url.clone(),
        };
        Ok((headers, url, used))
    }

    async fn exchange(
        &self,
        (template, arguments): (&str, &JsonObject),
        headers: HeaderMap,
        scrubber: &crate::registry::Scrubber,
    ) -> Result<CallToolResult, ProviderError> {
        let url = self.url_from(template, arguments)?;
        if !rendered_url_allowed(&url, &self.allowlist) {
            let (url, tool) = (scrubber.text(&url), self.name.clone());
            return Err(ProviderError::OutsideBase { url, tool });
        }
        let mut request = self
            .client
            .request(self.method.clone(), &url)
            .headers(headers)
            .timeout(self.timeout);
        if !self.query.is_empty() {
            request = request.query(&self.query_pairs(arguments));
        }
        if let Some(body) = &self.body {
            request = request.json(&super::declared::template::render_json(body, arguments));
        }
        let response = request.send().await.map_err(|e| {
            if e.is_timeout() {
                ProviderError::Timeout(self.timeout)
            } else {
                ProviderError::Request(without_url(&e))
            }
        })?;
        let status = response.status();
        let body = read_response(response, self.max_bytes)
            .await
            .map_err(|e| match e {
                CappedError::TooLarge(max) => ProviderError::ResponseTooLarge(max),
                CappedError::Read(e) => ProviderError::ResponseRead(e),
            })?;
        let text = String::from_utf8_lossy(&body);
        if !status.is_success() {
            // Scrubbed before the cut: a secret cut in half would pass.
            let excerpt: String = scrubber.text(&text).chars().take(ERROR_EXCERPT).collect();
            return Err(ProviderError::Status { status, excerpt });
        }
        if !self.structured {
            return Ok(text_result(text, false));
        }
        let json: Value = serde_json::from_slice(&body).map_err(ProviderError::NotJson)?;
        let value = match &self.pointer {
            Some(pointer) => json.pointer(pointer).cloned().unwrap_or(Value::Null),
            None => json,
        };
        Ok(structured_result(value, false))
    }
}

/// Whether the path of `url`, as rendered (before a parser normalises it),
/// has a `.` or `..` segment, plain or percent-encoded. Read as the WHATWG
/// URL parser reads it: leading and trailing controls and spaces are trimmed,
/// tabs and newlines anywhere are dropped, and `\` is a path separator of
/// http(s) URLs.
fn has_dot_segment(url: &str) -> bool {
    let url: String = url
        .trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .map(|c| if c == '\\' { '/' } else { c })
        .collect();
    let rest = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
    let path = rest.find('/').map_or("", |at| &rest[at..]);
    let path = path.split(['?', '#']).next().unwrap_or_default();
    path.split('/').any(|segment| {
        let plain = segment.to_ascii_lowercase().replace("%2e", ".");
        plain == "." || plain == ".."
    })
}

/// reqwest errors print the URL; the message keeps only the cause.
fn without_url(error: &reqwest::Error) -> String {
    use std::error::Error;
    let mut cause = error.source();
    let mut last = None;
    while let Some(c) = cause {
        last = Some(c.to_string());
        cause = c.source();
    }
    last.unwrap_or_else(|| "connection error".into())
}

#[async_trait]
impl Runner for HttpRunner {
    fn timeout(&self) -> Duration {
        self.timeout
    }

    fn per_caller(&self) -> bool {
        !self.member_headers.is_empty() || self.member_url.is_some()
    }

    async fn withheld(&self, cx: &CallContext) -> Option<CallToolResponse> {
        let headers = self.member_headers.iter().map(|(_, t)| t);
        let templates: Vec<&Template> = headers.chain(&self.member_url).collect();
        if templates.is_empty() {
            return None;
        }
        self.slots.withheld(&templates, &self.name, cx).await
    }

    async fn run(&self, arguments: &JsonObject, cx: &CallContext) -> CallToolResult {
        tokio::select! {
            result = self.send(arguments, cx) => result,
            () = cx.cancellation().cancelled() => text_result("cancelled", true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::has_dot_segment;

    #[test]
    fn dot_segments_are_found_as_the_url_parser_reads_them() {
        for url in [
            "https://api.example.com/v1/../x",
            "https://api.example.com/v1/%2E%2e/x",
            "https://api.example.com/v1/.",
            // Found by the url_template fuzz target: the parser drops the
            // newlines and then the `.` segment.
            "https://api.example.com/v1/\n\n.",
            "https://api.example.com/v1/.\t./x",
            "https://api.example.com/v1\\..\\x",
            "https://api.example.com/v1/\n..\0\0",
        ] {
            assert!(has_dot_segment(url), "{url:?}");
        }
        for url in [
            "https://api.example.com/v1/a.b/x?q=..",
            "https://api.example.com/v1/...",
            "https://api.example.com/v1/x#..",
        ] {
            assert!(!has_dot_segment(url), "{url:?}");
        }
    }
}
