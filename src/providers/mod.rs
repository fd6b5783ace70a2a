//! Concrete capability providers, each behind the registry's traits.
//!
//! A provider never sees HTTP, sessions or JSON-RPC envelopes: it gets its
//! arguments and a `CallContext`, and returns MCP results.

pub mod builtin;
pub mod command_tool;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod declared;
pub mod docs;
mod error;
pub mod files;
pub mod http_tool;
pub mod openapi;
pub mod prompts;
pub mod sql;

pub use error::ProviderError;

use std::{collections::HashMap, path::Path, sync::Arc};

use anyhow::Context;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{
    config::Config,
    registry::{ChangeBus, RegistryBuilder},
};

/// Builds an rmcp model value from its wire JSON. Used for fixed shapes known
/// at compile time, where a failure is a programming error caught by tests.
pub(crate) fn wire<T: DeserializeOwned>(value: Value) -> T {
    match serde_json::from_value(value) {
        Ok(v) => v,
        Err(e) => panic!("static MCP value does not match rmcp's model: {e}"),
    }
}

/// Scopes a declaration names, or `None` for the registry's defaults
/// (`tools:<name>`, `resources:read`, `prompts:<name>`).
pub(crate) fn declared_scopes(scopes: &[String]) -> Option<Vec<String>> {
    (!scopes.is_empty()).then(|| scopes.to_vec())
}

/// The built value, or `None` with the error's text added to `problems`.
fn keep<T>(problems: &mut Vec<String>, result: anyhow::Result<T>) -> Option<T> {
    result
        .map_err(|error| problems.push(format!("{error:#}")))
        .ok()
}

/// Registers every capability the configuration declares: HTTP and command
/// tools, docs and files sources, prompts. Secrets the declarations read
/// from the environment are handed to the registry for scrubbing. Every
/// declaration is built, and all that fail are reported together, each with
/// its key: `check-config` shows the same list `serve` would stop on.
pub fn declare(
    config: &Config,
    bus: &ChangeBus,
    mut builder: RegistryBuilder,
) -> anyhow::Result<RegistryBuilder> {
    let mut secrets = config.held_secrets();
    let mut problems = Vec::new();
    let mut tools = Vec::new();
    let slots = crate::registry::Slots::new(config, &mut secrets);
    let slots = keep(&mut problems, slots).unwrap_or_default();
    // One client for every HTTP tool, declared or from an OpenAPI document.
    let wanted = !config.tools.http.is_empty() || !config.sources.openapi.is_empty();
    let client = wanted.then(http_tool::client).transpose()?;
    if let Some(client) = &client {
        for (i, tool) in config.tools.http.iter().enumerate() {
            let runner = http_tool::HttpRunner::new(
                &format!("tools.http[{i}]"),
                tool,
                client.clone(),
                (&config.tools.http_allowlist, &slots),
                &mut secrets,
            );
            let built = runner.and_then(|(runner, defaults)| {
                declared::DeclaredTool::new(tool.decl(), defaults, Box::new(runner))
            });
            tools.extend(keep(&mut problems, built));
        }
    }
    for (i, source) in config.sources.openapi.iter().enumerate() {
        let at = format!("sources.openapi[{i}]");
        let found = openapi::tools(source, &config.tools.http_allowlist)
            .with_context(|| format!("{at} ({})", source.spec));
        let (Some((generated, base)), Some(client)) = (keep(&mut problems, found), &client) else {
            continue;
        };
        // The document's server joins the allowlist for its own tools only.
        let mut allowlist = config.tools.http_allowlist.clone();
        allowlist.push(format!("{base}/"));
        for tool in &generated {
            let at = format!("{at}.tools.{}", tool.name);
            let runner = http_tool::HttpRunner::new(
                &at,
                tool,
                client.clone(),
                (&allowlist, &slots),
                &mut secrets,
            );
            let built = runner.and_then(|(runner, defaults)| {
                declared::DeclaredTool::new(tool.decl(), defaults, Box::new(runner))
            });
            tools.extend(keep(&mut problems, built.with_context(|| at.clone())));
        }
    }
    for (i, tool) in config.tools.command.iter().enumerate() {
        let built = command_tool::CommandRunner::new(i, tool, &slots, &mut secrets).and_then(
            |(runner, defaults)| {
                declared::DeclaredTool::new(tool.decl(), defaults, Box::new(runner))
            },
        );
        tools.extend(keep(&mut problems, built));
    }
    for (i, source) in config.sources.sql.iter().enumerate() {
        let built = sql::declare(i, source, (&slots, &mut secrets));
        tools.extend(keep(&mut problems, built).into_iter().flatten());
    }
    let mut docs_sources = HashMap::new();
    let mut docs_providers = Vec::new();
    for source in &config.sources.docs {
        if let Some(docs) = keep(
            &mut problems,
            docs::DocsSource::new(source.clone(), bus.clone()),
        ) {
            docs_sources.insert(docs.name().to_owned(), docs.clone());
            docs_providers.push(docs);
        }
    }
    let mut files_providers = Vec::new();
    for (i, source) in config.sources.files.iter().enumerate() {
        files_providers.extend(keep(
            &mut problems,
            files::FilesSource::new(i, source.clone()),
        ));
    }
    let mut prompts = Vec::new();
    for (i, prompt) in config.prompts.iter().enumerate() {
        let checked = prompts::undeclared_placeholders(prompt)
            .map_err(|why| anyhow::anyhow!("prompts[{i}].template: {why}"));
        prompts.extend(keep(&mut problems, checked.map(|()| prompt.clone())));
    }
    for (i, folder) in config.prompt_files.folders.iter().enumerate() {
        let loaded = prompts::load_folder(Path::new(folder))
            .with_context(|| format!("prompt_files.folders[{i}]"));
        prompts.extend(keep(&mut problems, loaded).into_iter().flatten());
    }
    if !problems.is_empty() {
        anyhow::bail!(
            "{} declaration(s) cannot be built:\n  {}",
            problems.len(),
            problems.join("\n  ")
        );
    }
    for problem in config.missing_on_disk() {
        tracing::warn!(%problem, "declared path missing");
    }
    let declared = declared::DeclaredTools::new(tools, config.tools.cache_max_entries);
    if !declared.is_empty() {
        builder = builder.tools(declared);
    }
    for docs in docs_providers {
        builder = builder.tools(docs.clone()).resources(docs);
    }
    for source in config.sources.docs.iter().filter(|s| s.skills) {
        for skills in files::SkillsOf::of_docs(source) {
            builder = builder.resources(skills);
        }
    }
    if !config.sources.docs.is_empty() {
        builder = builder.subscribable();
    }
    for files in files_providers {
        if let Some(pages) = files::AppPagesOf::of(&files) {
            builder = builder.resources(pages);
        }
        if let Some(skills) = files::SkillsOf::of(&files) {
            builder = builder.resources(skills);
        }
        builder = builder.tools(files);
    }
    let prompts = prompts::DeclaredPrompts::new(prompts, docs_sources);
    if !prompts.is_empty() {
        builder = builder.prompts(Arc::new(prompts));
    }
    Ok(builder.secrets(secrets))
}
