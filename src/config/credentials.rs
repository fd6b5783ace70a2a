//! `[credentials]`: per-member secret slots (issue 29). A declared tool or
//! upstream names a slot as `${user:NAME}` where it would name an
//! environment variable as `${NAME}`; each member fills the slot with their
//! own value in the portal, so upstream they act as themselves instead of
//! one shared account. Values are sealed with `keys` in the store.

use serde::{Deserialize, Serialize};

use super::{Config, ConfigError, Secret};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialsConfig {
    /// Keys sealing the stored values (AES-256-GCM); the first seals, all
    /// open (rotation). Every replica needs the same list.
    pub keys: Vec<Secret>,
    /// The slots members fill (`[[credentials.slots]]`).
    pub slots: Vec<SlotConfig>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlotConfig {
    /// What `${user:NAME}` names: letters, digits, `_` and `-`.
    pub name: String,
    /// Shown to members in the portal: what value to put and where to get it.
    #[serde(default)]
    pub description: String,
    /// Tools that may use the slot; with `upstreams` both empty: any that names it.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Upstream servers (by `[[upstreams]]` name) that may use the slot.
    #[serde(default)]
    pub upstreams: Vec<String>,
    /// An environment variable holding a shared value used when the member
    /// has set none; empty: a member without a value gets a tool error.
    #[serde(default)]
    pub fallback_env: String,
}

impl SlotConfig {
    /// Whether the tool `tool` (or the upstream `upstream`) may use the slot.
    pub fn allows(&self, tool: Option<&str>, upstream: Option<&str>) -> bool {
        if self.tools.is_empty() && self.upstreams.is_empty() {
            return true;
        }
        tool.is_some_and(|t| self.tools.iter().any(|n| n == t))
            || upstream.is_some_and(|u| self.upstreams.iter().any(|n| n == u))
    }
}

impl CredentialsConfig {
    pub fn slot(&self, name: &str) -> Option<&SlotConfig> {
        self.slots.iter().find(|s| s.name == name)
    }
}

/// The slot names `${user:NAME}` references in `template`, in order.
pub fn member_slots(template: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        let Some(end) = rest[start..].find('}').map(|e| e + start) else {
            break;
        };
        if let Some(name) = rest[start + 2..end].strip_prefix("user:") {
            found.push(name);
        }
        rest = &rest[end + 1..];
    }
    found
}

fn invalid(key: String, why: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key,
        why: why.into(),
    }
}

impl Config {
    /// Slot declarations are well formed, and every `${user:NAME}` names a
    /// declared slot that the tool or upstream naming it may use.
    pub(super) fn validate_credentials(&self) -> Result<(), ConfigError> {
        let credentials = &self.credentials;
        for (i, key) in credentials.keys.iter().enumerate() {
            if key.expose().len() < 32 {
                return Err(invalid(
                    format!("credentials.keys[{i}]"),
                    "must be at least 32 characters of secret material",
                ));
            }
        }
        for (i, slot) in credentials.slots.iter().enumerate() {
            let good = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
            if slot.name.is_empty() || !slot.name.chars().all(good) {
                return Err(invalid(
                    format!("credentials.slots[{i}].name"),
                    "must be letters, digits, `_` or `-`",
                ));
            }
            if credentials.slots[..i].iter().any(|s| s.name == slot.name) {
                return Err(invalid(
                    format!("credentials.slots[{i}].name"),
                    format!("declares the slot {:?} twice", slot.name),
                ));
            }
        }
        let mut uses: Vec<(String, &str, Option<&str>, Option<&str>)> = Vec::new();
        for (i, tool) in self.tools.http.iter().enumerate() {
            for slot in member_slots(&tool.url) {
                uses.push((format!("tools.http[{i}].url"), slot, Some(&tool.name), None));
            }
            for (name, template) in &tool.headers {
                for slot in member_slots(template) {
                    let key = format!("tools.http[{i}].headers.{name}");
                    uses.push((key, slot, Some(&tool.name), None));
                }
            }
        }
        for (i, source) in self.sources.sql.iter().enumerate() {
            for slot in member_slots(source.url.expose()) {
                for (tool, _) in source.tool_names(i) {
                    uses.push((format!("sources.sql[{i}].url"), slot, Some(tool), None));
                }
            }
        }
        for (i, upstream) in self.upstreams.iter().enumerate() {
            for (name, template) in &upstream.headers {
                for slot in member_slots(template) {
                    let key = format!("upstreams[{i}].headers.{name}");
                    uses.push((key, slot, None, Some(&upstream.name)));
                }
            }
        }
        for (i, tool) in self.tools.command.iter().enumerate() {
            for (j, entry) in tool.secret_env.iter().enumerate() {
                for slot in member_slots(entry) {
                    let key = format!("tools.command[{i}].secret_env[{j}]");
                    if !entry.contains('=') {
                        return Err(invalid(key, "must be VAR=${user:NAME} to name a slot"));
                    }
                    uses.push((key, slot, Some(&tool.name), None));
                }
            }
        }
        for (key, slot, tool, upstream) in uses {
            let Some(declared) = credentials.slot(slot) else {
                return Err(invalid(
                    key,
                    format!(
                        "names ${{user:{slot}}}, but no [[credentials.slots]] declares {slot:?}"
                    ),
                ));
            };
            if !declared.allows(tool, upstream) {
                return Err(invalid(
                    key,
                    format!("names ${{user:{slot}}}, whose slot does not list this tool"),
                ));
            }
        }
        Ok(())
    }

    /// Why `serve` refuses the credentials configuration, if it does: slots
    /// need keys to seal their values.
    pub fn credential_keys_problem(&self) -> Option<String> {
        let sealed = !self.credentials.slots.is_empty() || self.has_oauth_upstreams();
        (sealed && self.credentials.keys.is_empty()).then(|| {
            "credentials.keys: is empty but [[credentials.slots]] or upstreams with auth = \"oauth\" \
             are declared: members' values \
             are sealed with these keys, the same on every replica. Set for example \
             TEAMGATE__CREDENTIALS__KEYS='[\"<at least 32 random characters>\"]'"
                .to_owned()
        })
    }

    /// Why `serve` refuses an upstream with `auth = "oauth"`, if it does:
    /// members connect their accounts on the portal's Connections page.
    pub fn oauth_upstreams_problem(&self) -> Option<String> {
        let portal = self.portal.as_ref().is_some_and(|p| p.enabled);
        let i = (self.upstreams.iter()).position(|u| u.auth == super::UpstreamAuth::Oauth)?;
        (!portal).then(|| {
            format!(
                "upstreams[{i}].auth: oauth needs [portal]: members connect their accounts \
                 on its Connections page"
            )
        })
    }

    /// Whether an upstream has `auth = "oauth"`: members' tokens are sealed too.
    pub fn has_oauth_upstreams(&self) -> bool {
        (self.upstreams.iter()).any(|u| u.auth == super::UpstreamAuth::Oauth)
    }
}

#[cfg(test)]
mod tests {
    use super::member_slots;

    #[test]
    fn member_slots_are_found_beside_environment_names() {
        assert_eq!(
            member_slots("Bearer ${user:github} ${ENV} ${user:x-y}"),
            ["github", "x-y"]
        );
        assert!(member_slots("Bearer ${TOKEN}").is_empty());
    }
}
