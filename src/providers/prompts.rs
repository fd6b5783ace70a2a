//! Declared prompts: `[[prompts]]` in TOML and Markdown files whose front
//! matter (YAML `---` or TOML `+++`) holds the same keys and whose body is
//! the template. `{{arg}}` is replaced by the argument; completion offers an
//! argument's declared `values`, or the paths of a docs source.

use std::{collections::HashMap, path::Path, sync::Arc};

use anyhow::Context;
use async_trait::async_trait;
use gray_matter::{
    Matter,
    engine::{TOML, YAML},
};
use serde_json::json;

use super::{
    ProviderError,
    declared::template::{prompt_names, render},
    docs::DocsSource,
};
use crate::{
    config::PromptConfig,
    protocol::{GetPromptResponse, GetPromptResult, McpError, Prompt},
    providers::wire,
    registry::{CallContext, PromptProvider},
};

/// Largest prompt file read.
const MAX_PROMPT_FILE: u64 = 256 * 1024;
/// Most prompt files read from one folder.
const MAX_PROMPT_FILES: usize = 500;

pub struct DeclaredPrompts {
    prompts: Vec<PromptConfig>,
    /// Docs sources by name, for `complete_from = "docs:<name>"`.
    docs: HashMap<String, Arc<DocsSource>>,
}

impl DeclaredPrompts {
    pub fn new(prompts: Vec<PromptConfig>, docs: HashMap<String, Arc<DocsSource>>) -> Self {
        Self { prompts, docs }
    }

    pub fn is_empty(&self) -> bool {
        self.prompts.is_empty()
    }

    fn find(&self, name: &str) -> Option<&PromptConfig> {
        self.prompts.iter().find(|p| p.name == name)
    }
}

/// Reads every `*.md` prompt of `folder` (a missing folder has none).
pub fn load_folder(folder: &Path) -> anyhow::Result<Vec<PromptConfig>> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Ok(Vec::new());
    };
    let mut paths: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    paths.truncate(MAX_PROMPT_FILES);
    paths.iter().map(|path| load_file(path)).collect()
}

fn load_file(path: &Path) -> anyhow::Result<PromptConfig> {
    let context = || format!("prompt file {}", path.display());
    let size = std::fs::metadata(path).with_context(context)?.len();
    anyhow::ensure!(
        size <= MAX_PROMPT_FILE,
        "{}: larger than {MAX_PROMPT_FILE} bytes",
        context()
    );
    let text = std::fs::read_to_string(path).with_context(context)?;
    let parsed = if text.starts_with("+++") {
        let mut matter = Matter::<TOML>::new();
        matter.delimiter = "+++".into();
        matter.parse::<PromptConfig>(&text)
    } else {
        Matter::<YAML>::new().parse::<PromptConfig>(&text)
    }
    .with_context(|| format!("{}: front matter", context()))?;
    let mut prompt = parsed
        .data
        .with_context(|| format!("{}: needs front matter with at least `name`", context()))?;
    prompt.template = parsed.content.trim().to_owned();
    anyhow::ensure!(
        !prompt.template.is_empty(),
        "{}: the body is empty",
        context()
    );
    undeclared_placeholders(&prompt).map_err(|why| anyhow::anyhow!("{}: {why}", context()))?;
    Ok(prompt)
}

/// A `{{name}}` no argument declares would render as nothing: refused, so
/// a typo in a template or an argument name is found before a member is.
pub fn undeclared_placeholders(prompt: &PromptConfig) -> Result<(), ProviderError> {
    let mut unknown: Vec<&str> = prompt_names(&prompt.template)
        .into_iter()
        .filter(|name| !prompt.arguments.iter().any(|a| a.name == *name))
        .collect();
    unknown.dedup();
    if unknown.is_empty() {
        return Ok(());
    }
    let declared: Vec<&str> = prompt.arguments.iter().map(|a| a.name.as_str()).collect();
    Err(ProviderError::UndeclaredPlaceholders {
        placeholders: (unknown.iter())
            .map(|n| format!("{{{{{n}}}}}"))
            .collect::<Vec<_>>()
            .join(", "),
        prompt: prompt.name.clone(),
        declared: if declared.is_empty() {
            "none".to_owned()
        } else {
            declared.join(", ")
        },
    })
}

#[async_trait]
impl PromptProvider for DeclaredPrompts {
    fn prompts(&self) -> Vec<Prompt> {
        self.prompts
            .iter()
            .map(|p| {
                let arguments: Vec<_> = p
                    .arguments
                    .iter()
                    .map(|a| json!({"name": a.name, "description": a.description, "required": a.required}))
                    .collect();
                let mut prompt = json!({"name": p.name, "description": p.description, "arguments": arguments});
                if let Some(title) = &p.title {
                    prompt["title"] = title.clone().into();
                }
                wire(prompt)
            })
            .collect()
    }

    async fn get(
        &self,
        name: &str,
        arguments: HashMap<String, String>,
        _cx: &CallContext,
    ) -> Result<GetPromptResponse, McpError> {
        let prompt = self
            .find(name)
            .ok_or_else(|| McpError::invalid_params(format!("Unknown prompt: {name}"), None))?;
        let text = render(&prompt.template, true, |n| arguments.get(n).cloned());
        let result: GetPromptResult = wire(json!({
            "description": prompt.description,
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}]
        }));
        Ok(result.into())
    }

    async fn complete(&self, prompt: &str, argument: &str, prefix: &str) -> Vec<String> {
        let Some(argument) = self
            .find(prompt)
            .and_then(|p| p.arguments.iter().find(|a| a.name == argument))
        else {
            return Vec::new();
        };
        let candidates = match argument
            .complete_from
            .as_deref()
            .and_then(|from| from.strip_prefix("docs:"))
        {
            Some(source) => self
                .docs
                .get(source)
                .map(|docs| docs.paths())
                .unwrap_or_default(),
            None => argument.values.clone(),
        };
        candidates
            .into_iter()
            .filter(|v| v.starts_with(prefix))
            .collect()
    }

    fn required_scopes(&self, name: &str) -> Option<Vec<String>> {
        super::declared_scopes(&self.find(name)?.scopes)
    }

    fn completes_from(&self, prompt: &str, argument: &str) -> Option<String> {
        let argument = self
            .find(prompt)?
            .arguments
            .iter()
            .find(|a| a.name == argument)?;
        let source = argument.complete_from.as_deref()?.strip_prefix("docs:")?;
        Some(format!("docs://{source}/"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_yaml_and_toml_front_matter() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.md"),
            "---\nname: review\ndescription: Review a change\narguments:\n  - name: diff\n    required: true\n---\nReview this:\n{{diff}}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("b.md"),
            "+++\nname = \"standup\"\n+++\nWhat did the team do?\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("skip.txt"), "not a prompt").unwrap();
        let prompts = load_folder(dir.path()).unwrap();
        assert_eq!(prompts.len(), 2);
        assert_eq!(prompts[0].name, "review");
        assert!(prompts[0].arguments[0].required);
        assert_eq!(prompts[0].template, "Review this:\n{{diff}}");
        assert_eq!(prompts[1].name, "standup");
        std::fs::write(dir.path().join("c.md"), "no front matter").unwrap();
        assert!(load_folder(dir.path()).is_err());
    }
}
