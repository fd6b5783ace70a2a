//! `approval = { group, timeout }` on any tool (issue 65 part 2): where it
//! may be written, and what it needs. Approvers decide on the portal, so a
//! configuration that asks for approval without `[portal]` is refused
//! rather than leaving every such call to wait for nobody.

use std::time::Duration;

use super::{Config, ConfigError, ToolApproval};

/// The longest a call may wait for a decision.
const MAX_WAIT: Duration = Duration::from_secs(7 * 24 * 3600);

/// Every `approval` with the key naming it.
fn approvals(config: &Config) -> Vec<(String, &ToolApproval)> {
    let mut found = Vec::new();
    let tools = &config.tools;
    let http = (tools.http.iter().enumerate()).map(|(i, t)| (&t.approval, "tools.http", i));
    let command =
        (tools.command.iter().enumerate()).map(|(i, t)| (&t.approval, "tools.command", i));
    for (approval, key, i) in http.chain(command) {
        if let Some(a) = approval {
            found.push((format!("{key}[{i}].approval"), a));
        }
    }
    for (i, source) in config.sources.sql.iter().enumerate() {
        for (j, tool) in source.tools.iter().enumerate() {
            if let Some(a) = &tool.approval {
                found.push((format!("sources.sql[{i}].tools[{j}].approval"), a));
            }
        }
    }
    for (i, source) in config.sources.openapi.iter().enumerate() {
        for (op, tool) in &source.tools {
            if let Some(a) = &tool.approval {
                found.push((format!("sources.openapi[{i}].tools.{op}.approval"), a));
            }
        }
    }
    for upstream in &config.upstreams {
        for (tool, over) in &upstream.tools.overrides {
            if let Some(a) = &over.approval {
                let key = format!("upstreams.{}.tools.{tool}.approval", upstream.name);
                found.push((key, a));
            }
        }
    }
    found
}

pub(super) fn validate(config: &Config) -> Result<(), ConfigError> {
    let invalid = |key: String, why: &str| ConfigError::Invalid {
        key,
        why: why.into(),
    };
    let found = approvals(config);
    for (key, approval) in &found {
        if approval.group.trim().is_empty() {
            return Err(invalid(format!("{key}.group"), "names no group"));
        }
        if approval.timeout.is_zero() || approval.timeout > MAX_WAIT {
            return Err(invalid(
                format!("{key}.timeout"),
                "must be more than 0 and at most 7d",
            ));
        }
    }
    let portal = config.portal.as_ref().is_some_and(|p| p.enabled);
    match found.first() {
        Some((key, _)) if !portal => Err(invalid(
            key.clone(),
            "needs [portal]: approvers decide on its Approvals page",
        )),
        _ => Ok(()),
    }
}
