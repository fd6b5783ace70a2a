//! Rules over declared capabilities that serde cannot express: names, URL
//! allowlists, schemas, shells, caller bindings. Each failure names its key.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::{
    CommandToolConfig, Config, ConfigError, HttpToolConfig, SqlSourceConfig, ToolDecl,
    tasks::RetryKeys,
};

/// Programs that would turn an argv template back into a shell command line.
const SHELLS: [&str; 12] = [
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "csh", "tcsh", "busybox", "cmd", "pwsh",
];

fn invalid(key: String, why: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key,
        why: why.into(),
    }
}

/// Every rule of declared capabilities broken, each list item checked on
/// its own, so one run names every faulty tool.
pub(super) fn capabilities(config: &Config, problems: &mut Vec<ConfigError>) {
    let tools = &config.tools;
    let mut note = |checked: Result<(), ConfigError>| problems.extend(checked.err());
    for (i, base) in tools.http_allowlist.iter().enumerate() {
        note(allowlist_entry(i, base));
    }
    for (i, tool) in tools.http.iter().enumerate() {
        note(http_tool(i, tool, &tools.http_allowlist));
    }
    for (i, tool) in tools.command.iter().enumerate() {
        note(command_tool(i, tool));
    }
    for (i, source) in config.sources.sql.iter().enumerate() {
        note(sql_source(i, source));
    }
    note(sources_and_prompts(config));
    note(unique_tool_names(config));
}

fn allowlist_entry(i: usize, base: &str) -> Result<(), ConfigError> {
    let url = url::Url::parse(base)
        .map_err(|e| invalid(format!("tools.http_allowlist[{i}]"), e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(invalid(
            format!("tools.http_allowlist[{i}]"),
            "must be an http(s) URL with a host",
        ));
    }
    Ok(())
}

fn http_tool(i: usize, tool: &HttpToolConfig, allowlist: &[String]) -> Result<(), ConfigError> {
    let key = format!("tools.http[{i}]");
    declared(&key, &tool.decl())?;
    RetryKeys {
        retry: tool.task_retry,
        max: tool.task_retry_max,
        task: tool.task,
        approval: tool.approval.is_some(),
    }
    .check(&key)?;
    if !allowed(&tool.url, allowlist) {
        return Err(invalid(
            format!("{key}.url"),
            format!(
                "{:?} is not under any base URL of tools.http_allowlist",
                tool.url
            ),
        ));
    }
    if tool.result_pointer.is_some() && tool.output_schema.is_none() {
        return Err(invalid(
            format!("{key}.result_pointer"),
            "needs output_schema: it selects the structuredContent",
        ));
    }
    // Any token parses as an extension method; a typo (`GETT`) must not.
    const METHODS: [&str; 7] = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
    if !METHODS.contains(&tool.method.as_str()) {
        return Err(invalid(
            format!("{key}.method"),
            format!("must be one of {}", METHODS.join(", ")),
        ));
    }
    if tool.max_response_bytes == 0 || tool.timeout.is_zero() {
        return Err(invalid(
            key,
            "max_response_bytes and timeout must be greater than zero",
        ));
    }
    Ok(())
}

fn command_tool(i: usize, tool: &CommandToolConfig) -> Result<(), ConfigError> {
    let key = format!("tools.command[{i}]");
    declared(&key, &tool.decl())?;
    RetryKeys {
        retry: tool.task_retry,
        max: tool.task_retry_max,
        task: tool.task,
        approval: tool.approval.is_some(),
    }
    .check(&key)?;
    let base = std::path::Path::new(&tool.program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if tool.program.trim().is_empty() || SHELLS.contains(&base) {
        return Err(invalid(
            format!("{key}.program"),
            "must name a program that is not a shell; put each argument in `args`",
        ));
    }
    if tool.max_output_bytes < 64 || tool.timeout.is_zero() {
        return Err(invalid(
            key,
            "max_output_bytes must be at least 64 and timeout greater than zero",
        ));
    }
    Ok(())
}

fn sql_source(i: usize, source: &SqlSourceConfig) -> Result<(), ConfigError> {
    for (j, tool) in source.tools.iter().enumerate() {
        let key = format!("sources.sql[{i}].tools[{j}]");
        declared(&key, &tool.decl())?;
        RetryKeys {
            retry: tool.task_retry,
            max: tool.task_retry_max,
            task: tool.task,
            approval: tool.approval.is_some(),
        }
        .check(&key)?;
    }
    for (tool, key) in source.tool_names(i) {
        name(&key, tool)?;
    }
    super::sql::check(i, source)
}

/// Two declarations naming the same tool are refused here, naming both
/// keys, rather than as a duplicate when the registry is built.
fn unique_tool_names(config: &Config) -> Result<(), ConfigError> {
    let mut seen: HashMap<&str, String> = HashMap::new();
    let declared = (config.tools.http.iter().enumerate())
        .map(|(i, t)| (t.name.as_str(), format!("tools.http[{i}].name")))
        .chain(
            (config.tools.command.iter().enumerate())
                .map(|(i, t)| (t.name.as_str(), format!("tools.command[{i}].name"))),
        )
        .chain(
            (config.sources.docs.iter().enumerate())
                .map(|(i, d)| (d.tool.as_str(), format!("sources.docs[{i}].tool"))),
        )
        .chain(config.sources.files.iter().enumerate().flat_map(|(i, f)| {
            [
                (
                    f.read_tool.as_str(),
                    format!("sources.files[{i}].read_tool"),
                ),
                (
                    f.search_tool.as_str(),
                    format!("sources.files[{i}].search_tool"),
                ),
            ]
        }))
        .chain((config.sources.sql.iter().enumerate()).flat_map(|(i, s)| s.tool_names(i)));
    for (name, key) in declared {
        if let Some(first) = seen.insert(name, key.clone()) {
            return Err(invalid(
                key,
                format!(
                    "names the tool {name:?}, already declared by `{first}`; tool names must be unique"
                ),
            ));
        }
    }
    Ok(())
}

fn sources_and_prompts(config: &Config) -> Result<(), ConfigError> {
    let mut docs_names = HashSet::new();
    for (i, docs) in config.sources.docs.iter().enumerate() {
        let key = format!("sources.docs[{i}]");
        name(&format!("{key}.name"), &docs.name)?;
        name(&format!("{key}.tool"), &docs.tool)?;
        if !docs_names.insert(docs.name.as_str()) {
            return Err(invalid(
                format!("{key}.name"),
                "is used by two docs sources",
            ));
        }
        if docs.paths.is_empty() || docs.max_documents == 0 {
            return Err(invalid(
                key,
                "needs at least one path and max_documents > 0",
            ));
        }
    }
    for (i, files) in config.sources.files.iter().enumerate() {
        let key = format!("sources.files[{i}]");
        name(&format!("{key}.read_tool"), &files.read_tool)?;
        name(&format!("{key}.search_tool"), &files.search_tool)?;
        if files.root.trim().is_empty() || files.extensions.is_empty() {
            return Err(invalid(key, "needs a root and at least one extension"));
        }
    }
    for (i, prompt) in config.prompts.iter().enumerate() {
        let key = format!("prompts[{i}]");
        name(&format!("{key}.name"), &prompt.name)?;
        if prompt.template.trim().is_empty() {
            return Err(invalid(format!("{key}.template"), "must not be empty"));
        }
        for (j, argument) in prompt.arguments.iter().enumerate() {
            if let Some(from) = &argument.complete_from
                && !from
                    .strip_prefix("docs:")
                    .is_some_and(|source| docs_names.contains(source))
            {
                return Err(invalid(
                    format!("{key}.arguments[{j}].complete_from"),
                    format!("{from:?} must be \"docs:<name of a [[sources.docs]]>\""),
                ));
            }
        }
    }
    Ok(())
}

/// Rules every declared tool follows.
fn declared(key: &str, tool: &ToolDecl) -> Result<(), ConfigError> {
    name(&format!("{key}.name"), &tool.name)?;
    if tool.input_schema.get("type") != Some(&Value::from("object")) {
        return Err(invalid(
            format!("{key}.input_schema"),
            "must have type = \"object\" at the root",
        ));
    }
    jsonschema::validator_for(&Value::Object(tool.input_schema.clone()))
        .map_err(|e| invalid(format!("{key}.input_schema"), e.to_string()))?;
    if let Some(output) = &tool.output_schema {
        // MCP's structuredContent is a JSON object, so its schema must be one.
        if output.get("type") != Some(&Value::from("object")) {
            return Err(invalid(
                format!("{key}.output_schema"),
                "must have type = \"object\" at the root: MCP's structuredContent is an object",
            ));
        }
        jsonschema::validator_for(&Value::Object(output.clone()))
            .map_err(|e| invalid(format!("{key}.output_schema"), e.to_string()))?;
    }
    let properties = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_else(Map::new);
    for (argument, source) in &tool.from_caller {
        if !caller_source(source) {
            return Err(invalid(
                format!("{key}.from_caller.{argument}"),
                "must be \"user\" or \"claim:<claim name>\"",
            ));
        }
        if !properties.contains_key(argument) {
            return Err(invalid(
                format!("{key}.from_caller.{argument}"),
                "names no property of input_schema",
            ));
        }
    }
    if tool.cache_ttl.is_some() && tool.read_only != Some(true) {
        return Err(invalid(
            format!("{key}.cache_ttl"),
            "is only allowed on tools declared read_only = true",
        ));
    }
    Ok(())
}

/// What `from_caller` may name: `user`, or `claim:<name>`.
pub(super) fn caller_source(source: &str) -> bool {
    source == "user" || source.strip_prefix("claim:").is_some_and(|c| !c.is_empty())
}

/// MCP tool and prompt names: 1-128 characters of `[A-Za-z0-9_.-]`.
pub(super) fn name(key: &str, name: &str) -> Result<(), ConfigError> {
    let ok = (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if ok {
        Ok(())
    } else {
        Err(invalid(
            key.to_owned(),
            format!("{name:?} must be 1-128 characters of A-Z a-z 0-9 _ - ."),
        ))
    }
}

/// Whether `url` (a template or a rendered URL) lies under one of `bases`:
/// same scheme, host and port, and a path inside the base's path.
pub fn allowed(url: &str, bases: &[String]) -> bool {
    // Only the literal part of a template can be judged; a placeholder may
    // not decide the origin, so the prefix must already contain it.
    let literal = url.split('{').next().unwrap_or_default();
    rendered_allowed(literal, bases)
}

/// Whether a rendered URL (no placeholders: a `{` in it is text) is under
/// one of `bases`, as the request will parse it. Judging it by its prefix up
/// to a `{`, as a template is, parsed another URL: one whose end the parser
/// trims (`/v1/..\0{x` is inside `/v1`, its prefix `/v1/..\0` is not).
pub fn rendered_allowed(url: &str, bases: &[String]) -> bool {
    let Ok(candidate) = url::Url::parse(url) else {
        return false;
    };
    bases.iter().any(|base| {
        let Ok(base) = url::Url::parse(base) else {
            return false;
        };
        let base_path = base.path().trim_end_matches('/');
        candidate.scheme() == base.scheme()
            && candidate.host_str() == base.host_str()
            && candidate.port_or_known_default() == base.port_or_known_default()
            && candidate.username().is_empty()
            && (candidate.path() == base_path
                || candidate.path().starts_with(&format!("{base_path}/"))
                || (base_path.is_empty()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_must_stay_under_an_allowed_base() {
        let bases = vec!["https://api.example.com/v1".to_owned()];
        assert!(allowed(
            "https://api.example.com/v1/issues?state={state}",
            &bases
        ));
        assert!(allowed("https://api.example.com/v1", &bases));
        assert!(!allowed("https://api.example.com/v10/x", &bases));
        assert!(!allowed("https://api.example.com.evil.net/v1", &bases));
        assert!(!allowed("https://{host}/v1", &bases));
        assert!(!allowed("http://api.example.com/v1/x", &bases));
        assert!(!allowed("https://user@api.example.com/v1/x", &bases));
        assert!(!allowed("https://api.example.com:8443/v1/x", &bases));
    }

    #[test]
    fn a_rendered_url_is_judged_whole() {
        // Found by the url_template fuzz target: the prefix before the `{`
        // ends in `..` and NULs, which the parser trims to a `..` segment.
        let bases = vec!["https://api.example.com/v1".to_owned()];
        let rendered = "https://api.example.com/v1/\n..\0\0{\nA\0";
        assert!(rendered_allowed(rendered, &bases));
        assert!(!rendered_allowed("https://api.example.com/v1/..", &bases));
        assert!(!rendered_allowed(
            "https://api.example.com/v1/x/../../v2",
            &bases
        ));
    }

    #[test]
    fn names_follow_the_mcp_rule() {
        assert!(name("k", "search_docs.v2-beta").is_ok());
        assert!(name("k", "").is_err());
        assert!(name("k", "has space").is_err());
        assert!(name("k", &"x".repeat(129)).is_err());
    }
}
