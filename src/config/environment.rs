//! The environment variables a configuration names: the form of `env` and
//! `secret_env` entries (a rule `serve` applies), and which of the variables
//! read when providers are built are not set (`check-config` and `serve`
//! list them all in one round, with the keys the build's own errors use).

use super::{Config, ConfigError};

/// Entries of `env` and `secret_env` that are not variable names: an upstream
/// passes teamgate's variables through under their own names, so
/// `secret_env = ["A=${B}"]` would otherwise be "variable A=${B} is not set".
pub(super) fn validate(config: &Config) -> Result<(), ConfigError> {
    // (key, entries, whether an entry may be VAR=<template>: command tools' secret_env)
    let mut lists: Vec<(String, &[String], bool)> = Vec::new();
    for (i, upstream) in config.upstreams.iter().enumerate() {
        lists.push((format!("upstreams[{i}].env"), &upstream.env, false));
        lists.push((
            format!("upstreams[{i}].secret_env"),
            &upstream.secret_env,
            false,
        ));
    }
    for (i, tool) in config.tools.command.iter().enumerate() {
        lists.push((format!("tools.command[{i}].env"), &tool.env, false));
        lists.push((
            format!("tools.command[{i}].secret_env"),
            &tool.secret_env,
            true,
        ));
    }
    for (key, entries, assigns) in lists {
        for (j, entry) in entries.iter().enumerate() {
            let name = match entry.split_once('=') {
                Some((name, _)) if assigns => name,
                _ => entry,
            };
            if is_name(name) {
                continue;
            }
            let field = key.rsplit('.').next().unwrap_or_default();
            let takes = match (assigns, field) {
                (true, _) => {
                    "NAME (teamgate's environment variable NAME, passed through and \
                              scrubbed from results) or VAR=${NAME} or VAR=${user:SLOT}"
                }
                (false, "secret_env") => {
                    "names of teamgate's environment variables, each \
                     passed through under its own name and scrubbed from results (VAR=... is \
                     only for command tools: to pass B's value as A, set A where teamgate runs)"
                }
                _ => {
                    "names of teamgate's environment variables, each passed through under \
                      its own name"
                }
            };
            return Err(ConfigError::Invalid {
                key: format!("{key}[{j}]"),
                why: format!("is {entry:?}, not a variable name: {field} takes {takes}"),
            });
        }
    }
    Ok(())
}

/// A portable environment variable name: letters, digits and `_`, not
/// starting with a digit.
fn is_name(name: &str) -> bool {
    name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.chars().next().is_some_and(|c| !c.is_ascii_digit())
}

/// The `${NAME}` of `template` that are teamgate's own variables (not a
/// member's `${user:NAME}`).
fn env_names(template: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        let Some(end) = rest[start..].find('}').map(|e| e + start) else {
            break;
        };
        let name = &rest[start + 2..end];
        if !name.starts_with("user:") {
            names.push(name);
        }
        rest = &rest[end + 1..];
    }
    names
}

impl Config {
    /// The environment variables read when the providers are built that are
    /// not set (a slot's `fallback_env`, `${NAME}` in a header or a command
    /// tool's `secret_env`, an upstream's `env` and `secret_env`): `serve` refuses to start with any.
    /// Values are read only to test they exist.
    pub fn unset_environment(&self) -> Vec<String> {
        let mut unset = Vec::new();
        let mut check = |key: String, name: &str| {
            if is_name(name) && std::env::var_os(name).is_none() {
                unset.push(super::env_value(&key, name).unwrap_err().to_string());
            }
        };
        for (i, slot) in self.credentials.slots.iter().enumerate() {
            if !slot.fallback_env.is_empty() {
                check(
                    format!("credentials.slots[{i}].fallback_env"),
                    &slot.fallback_env,
                );
            }
        }
        for (i, tool) in self.tools.http.iter().enumerate() {
            for (header, template) in &tool.headers {
                for name in env_names(template) {
                    check(format!("tools.http[{i}].headers.{header}"), name);
                }
            }
        }
        for (i, tool) in self.tools.command.iter().enumerate() {
            for (j, entry) in tool.secret_env.iter().enumerate() {
                let key = format!("tools.command[{i}].secret_env[{j}]");
                match entry.split_once('=') {
                    Some((_, template)) => env_names(template)
                        .into_iter()
                        .for_each(|name| check(key.clone(), name)),
                    None => check(key, entry),
                }
            }
        }
        for (i, upstream) in self.upstreams.iter().enumerate() {
            for (header, template) in &upstream.headers {
                for name in env_names(template) {
                    check(format!("upstreams[{i}].headers.{header}"), name);
                }
            }
            for (field, names) in [("env", &upstream.env), ("secret_env", &upstream.secret_env)] {
                for (j, name) in names.iter().enumerate() {
                    check(format!("upstreams[{i}].{field}[{j}]"), name);
                }
            }
        }
        unset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_templates() {
        assert!(is_name("API_TOKEN") && is_name("_x1"));
        assert!(!is_name("A=${B}") && !is_name("1A") && !is_name(""));
        assert_eq!(
            env_names("Bearer ${TOKEN} ${user:github} ${X}"),
            ["TOKEN", "X"]
        );
    }
}
