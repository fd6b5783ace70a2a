//! `${user:NAME}` in a declared tool's headers (issue 29): the slot is
//! filled per call with the calling member's own value, or the slot's
//! shared fallback, or the call ends with a tool error naming the portal
//! page where the member sets it. The values used are scrubbed from the
//! result like every configured secret, and the kind used is reported for
//! the audit record.

use std::collections::HashMap;

use anyhow::Context;

use super::{CallContext, CredentialKind, RegistryError};
use crate::config::{Config, resolve_env};

/// Where a member sets their values, under the public URL's origin.
pub const CONNECTIONS_PATH: &str = "/portal/connections";

#[derive(Debug, Clone)]
enum Piece {
    /// Fixed text, environment values already in.
    Text(String),
    /// A slot's name.
    Slot(String),
}

/// A configured value with its `${NAME}` read from the environment and its
/// `${user:NAME}` kept for the call.
#[derive(Debug, Clone)]
pub(crate) struct Template(Vec<Piece>);

impl Template {
    /// Reads `${NAME}` (recording its value in `secrets`) around each `${user:NAME}`.
    pub(crate) fn parse(
        template: &str,
        key: &str,
        secrets: &mut Vec<String>,
    ) -> anyhow::Result<Self> {
        let mut pieces = Vec::new();
        let mut rest = template;
        while let Some(start) = rest.find("${user:") {
            let end = (rest[start..].find('}').map(|e| e + start))
                .with_context(|| format!("{key}: unclosed ${{"))?;
            pieces.push(Piece::Text(resolve_env(&rest[..start], key, secrets)?));
            pieces.push(Piece::Slot(rest[start + 7..end].to_owned()));
            rest = &rest[end + 1..];
        }
        pieces.push(Piece::Text(resolve_env(rest, key, secrets)?));
        Ok(Self(pieces))
    }

    /// The slots it names.
    pub(crate) fn slots(&self) -> impl Iterator<Item = &str> {
        self.0.iter().filter_map(|p| match p {
            Piece::Slot(name) => Some(name.as_str()),
            Piece::Text(_) => None,
        })
    }

    /// The whole value when it names no slot.
    pub(crate) fn fixed(&self) -> Option<&str> {
        match self.0.as_slice() {
            [Piece::Text(text)] => Some(text),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
struct Slot {
    description: String,
    fallback: Option<String>,
}

/// The declared slots as tools fill them.
#[derive(Debug, Clone, Default)]
pub struct Slots {
    slots: HashMap<String, Slot>,
    /// The Connections page's URL (a path when the public URL is not set).
    page: String,
}

impl Slots {
    /// Reads each slot's fallback from the environment, recording it in `secrets`.
    pub fn new(config: &Config, secrets: &mut Vec<String>) -> anyhow::Result<Self> {
        let mut slots = HashMap::new();
        for (i, slot) in config.credentials.slots.iter().enumerate() {
            let fallback = if slot.fallback_env.is_empty() {
                None
            } else {
                let value = std::env::var(&slot.fallback_env).map_err(|_| {
                    anyhow::anyhow!(
                        "credentials.slots[{i}].fallback_env: environment variable {} is not set",
                        slot.fallback_env
                    )
                })?;
                secrets.push(value.clone());
                Some(value)
            };
            let description = slot.description.clone();
            slots.insert(
                slot.name.clone(),
                Slot {
                    description,
                    fallback,
                },
            );
        }
        Ok(Self {
            slots,
            page: connections_url(&config.server.public_url),
        })
    }

    /// The Connections page's URL.
    pub(crate) fn page(&self) -> &str {
        &self.page
    }

    /// The portal page that starts the member's OAuth connection to `upstream`.
    pub(crate) fn oauth_start(&self, upstream: &str) -> String {
        let origin = self.page.strip_suffix(CONNECTIONS_PATH).unwrap_or_default();
        format!("{origin}{}", super::oauth::start_path(upstream))
    }

    pub(crate) fn has_fallback(&self, slot: &str) -> bool {
        self.slots.get(slot).is_some_and(|s| s.fallback.is_some())
    }

    /// `template` with every slot's fallback; `None` when a slot has none.
    pub(crate) fn with_fallbacks(&self, template: &Template) -> Option<String> {
        let mut out = String::new();
        for piece in &template.0 {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Slot(name) => out.push_str(self.slots.get(name)?.fallback.as_deref()?),
            }
        }
        Some(out)
    }

    /// `template` for the caller of `cx`, each value put in as `encode`
    /// writes it; the member values used, in both forms, are added to
    /// `used`. The error is the tool error's text.
    pub(crate) async fn render(
        &self,
        template: &Template,
        (tool, cx): (&str, &CallContext),
        encode: fn(&str) -> String,
        used: &mut Vec<String>,
    ) -> Result<String, RegistryError> {
        let mut out = String::new();
        for piece in &template.0 {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Slot(name) => {
                    let value = self.fill(name, tool, cx, used).await?;
                    let encoded = encode(&value);
                    if encoded != value {
                        used.push(encoded.clone());
                    }
                    out.push_str(&encoded);
                }
            }
        }
        Ok(out)
    }

    async fn fill(
        &self,
        name: &str,
        tool: &str,
        cx: &CallContext,
        used: &mut Vec<String>,
    ) -> Result<String, RegistryError> {
        let page = self.page.clone();
        // Validation refuses an undeclared slot; a missing one here is a bug.
        let Some(slot) = self.slots.get(name) else {
            return Err(RegistryError::SlotUndeclared {
                tool: tool.to_owned(),
                slot: name.to_owned(),
            });
        };
        let own = match cx.member_secrets() {
            Some(secrets) => (secrets.value(&cx.caller().user, name).await).map_err(|why| {
                RegistryError::SlotUnreadable {
                    tool: tool.to_owned(),
                    slot: name.to_owned(),
                    why,
                    page: page.clone(),
                }
            })?,
            None => None,
        };
        if let Some(value) = own {
            cx.credential().report(CredentialKind::Member);
            used.push(value.clone());
            return Ok(value);
        }
        if let Some(fallback) = &slot.fallback {
            cx.credential().report(CredentialKind::Fallback);
            return Ok(fallback.clone());
        }
        let about = match slot.description.as_str() {
            "" => String::new(),
            description => format!(" ({description})"),
        };
        Err(RegistryError::SlotEmpty {
            tool: tool.to_owned(),
            slot: name.to_owned(),
            about,
            page,
        })
    }
}

/// `<origin of public_url>/portal/connections`, or the path alone.
fn connections_url(public_url: &str) -> String {
    let origin = public_url.split_once("://").and_then(|(scheme, rest)| {
        let authority = rest.split('/').next().filter(|a| !a.is_empty())?;
        Some(format!("{scheme}://{authority}"))
    });
    format!("{}{CONNECTIONS_PATH}", origin.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_keep_member_slots_for_the_call() {
        let mut secrets = Vec::new();
        let t = Template::parse("Bearer ${user:github}", "k", &mut secrets).unwrap();
        assert!(t.fixed().is_none() && secrets.is_empty());
        let t = Template::parse("plain", "k", &mut secrets).unwrap();
        assert_eq!(t.fixed(), Some("plain"));
        assert!(Template::parse("${user:x", "k", &mut secrets).is_err());
        assert_eq!(
            connections_url("https://mcp.example.com/mcp"),
            "https://mcp.example.com/portal/connections"
        );
        assert_eq!(connections_url(""), "/portal/connections");
    }
}
