//! Concrete capability providers, each behind the registry's traits.
//!
//! A provider never sees HTTP, sessions or JSON-RPC envelopes: it gets its
//! arguments and a `CallContext`, and returns MCP results.

pub mod builtin;
pub mod command_tool;
pub mod conformance;
pub mod declared;
pub mod docs;
pub mod files;
pub mod http_tool;
pub mod prompts;

use std::{collections::HashMap, path::Path, sync::Arc};

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

/// Registers every capability the configuration declares: HTTP and command
/// tools, docs and files sources, prompts. Secrets the declarations read
/// from the environment are handed to the registry for scrubbing.
pub fn declare(
    config: &Config,
    bus: &ChangeBus,
    mut builder: RegistryBuilder,
) -> anyhow::Result<RegistryBuilder> {
    let mut secrets = config.held_secrets();
    let mut tools = Vec::new();
    if !config.tools.http.is_empty() {
        let client = http_tool::client()?;
        for (i, tool) in config.tools.http.iter().enumerate() {
            let (runner, defaults) = http_tool::HttpRunner::new(
                i,
                tool,
                client.clone(),
                &config.tools.http_allowlist,
                &mut secrets,
            )?;
            tools.push(declared::DeclaredTool::new(
                tool.decl(),
                defaults,
                Box::new(runner),
            )?);
        }
    }
    for (i, tool) in config.tools.command.iter().enumerate() {
        let (runner, defaults) = command_tool::CommandRunner::new(i, tool, &mut secrets)?;
        tools.push(declared::DeclaredTool::new(
            tool.decl(),
            defaults,
            Box::new(runner),
        )?);
    }
    let declared = declared::DeclaredTools::new(tools, config.tools.cache_max_entries);
    if !declared.is_empty() {
        builder = builder.tools(declared);
    }
    let mut docs_sources = HashMap::new();
    for source in &config.sources.docs {
        let docs = docs::DocsSource::new(source.clone(), bus.clone())?;
        docs_sources.insert(docs.name().to_owned(), docs.clone());
        builder = builder.tools(docs.clone()).resources(docs);
    }
    if !config.sources.docs.is_empty() {
        builder = builder.subscribable();
    }
    for (i, source) in config.sources.files.iter().enumerate() {
        builder = builder.tools(files::FilesSource::new(i, source.clone())?);
    }
    let mut prompts = config.prompts.clone();
    for folder in &config.prompt_files.folders {
        prompts.extend(prompts::load_folder(Path::new(folder))?);
    }
    let prompts = prompts::DeclaredPrompts::new(prompts, docs_sources);
    if !prompts.is_empty() {
        builder = builder.prompts(Arc::new(prompts));
    }
    Ok(builder.secrets(secrets))
}
