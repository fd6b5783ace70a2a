//! Which endpoint a request is on (issue 60): the main one at `mcp.path`,
//! or a toolset's at `<mcp.path>/<name>`, and whether its caller may
//! connect there. The caller then carries the endpoint, and every list,
//! call and read it makes is filtered by the toolset (`access.rs`).

use std::sync::Arc;

use serde_json::Value;

use super::{EngineError, Shared};
use crate::{protocol::toolset_in_path, registry::Caller};

/// The endpoints' paths and who may connect to each.
pub struct Endpoints {
    mcp_path: String,
    /// The token claim listing an OAuth caller's IdP groups.
    groups_claim: String,
    /// Its registry (swapped on reload) holds the toolsets.
    shared: Arc<Shared>,
}

impl Endpoints {
    pub fn new(mcp_path: &str, groups_claim: &str, shared: Arc<Shared>) -> Self {
        Self {
            mcp_path: mcp_path.trim_end_matches('/').to_owned(),
            groups_claim: groups_claim.to_owned(),
            shared,
        }
    }

    /// `caller` on the endpoint of `path`, or why it may not connect there.
    pub fn admit(&self, path: &str, caller: Caller) -> Result<Caller, EngineError> {
        let limits: Vec<&str> = caller.toolset_limits().collect();
        let Some(name) = toolset_in_path(&self.mcp_path, path) else {
            if limits.is_empty() {
                return Ok(caller);
            }
            return Err(EngineError::NotAdmitted(format!(
                "this token is limited to the toolset endpoint(s) {}: connect to {}/<name>",
                limits.join(", "),
                self.mcp_path
            )));
        };
        let registry = self.shared.registry();
        let Some(toolset) = registry.toolset(name) else {
            return Err(EngineError::NoEndpoint(format!(
                "no toolset endpoint {path}: the server's toolsets are {}",
                names(registry.toolsets().map(|t| t.name.as_str()))
            )));
        };
        if !limits.is_empty() && !limits.contains(&name) {
            return Err(EngineError::NotAdmitted(format!(
                "this token is limited to the toolset endpoint(s) {}, not {name}",
                limits.join(", ")
            )));
        }
        let admitted = caller.may_do_anything()
            || limits.contains(&name)
            || toolset.open_to(&self.groups(&caller));
        if !admitted {
            return Err(EngineError::NotAdmitted(format!(
                "{} is in none of the groups that may connect to the toolset {name} ({}); a \
                 token with the scope toolset:{name} may",
                caller.user,
                toolset.groups.join(", ")
            )));
        }
        Ok(caller.at_endpoint(name))
    }

    /// The groups an OAuth caller's token lists (none for personal tokens).
    fn groups(&self, caller: &Caller) -> Vec<String> {
        let listed = match caller.claims.get(&self.groups_claim) {
            Some(Value::Array(groups)) => groups.as_slice(),
            _ => &[],
        };
        listed
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    }
}

fn names<'a>(all: impl Iterator<Item = &'a str>) -> String {
    let all: Vec<&str> = all.collect();
    if all.is_empty() {
        "none".to_owned()
    } else {
        all.join(", ")
    }
}
