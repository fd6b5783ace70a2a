//! The resource a client asks a token for (RFC 8707): this server's MCP
//! endpoint, or a toolset's endpoint under it (issue 60). A token for a
//! toolset carries its `toolset:<name>` scope, so the engine holds it to
//! that endpoint, and only members of the toolset's groups get one.

use std::sync::Arc;

use crate::{
    portal::{Portal, PortalError, session::Member},
    registry::{TOOLSET_SCOPE, Toolset},
};

/// An authorization request this server cannot serve, as its page says it.
pub(super) fn refused(why: &str) -> PortalError {
    PortalError::BadRequest(format!(
        "the application's sign-in request cannot be served: {why}"
    ))
}

/// The toolset `resource` names (`None`: the main endpoint, or none asked),
/// or why it is no endpoint of this server.
pub(super) fn asked(
    portal: &Portal,
    issuer: &str,
    resource: &str,
) -> Result<Option<Arc<Toolset>>, PortalError> {
    if resource.is_empty() || crate::auth::same_resource(resource, issuer) {
        return Ok(None);
    }
    let name = resource
        .trim_end_matches('/')
        .rsplit_once('/')
        .map(|(_, name)| name)
        .unwrap_or_default();
    let toolset = (portal.registry)().toolset(name).cloned();
    match toolset {
        Some(toolset)
            if crate::auth::same_resource(
                resource,
                &crate::auth::toolset_resource(issuer, name),
            ) =>
        {
            Ok(Some(toolset))
        }
        _ => Err(refused(
            "the resource is not this server's MCP endpoint or one of its toolsets'",
        )),
    }
}

/// The scopes of a token for `toolset`: `scopes` and the toolset's own, or
/// why the member may not connect there.
pub(super) fn scoped(
    toolset: Option<&Arc<Toolset>>,
    member: &Member,
    mut scopes: Vec<String>,
) -> Result<Vec<String>, PortalError> {
    let Some(toolset) = toolset else {
        return Ok(scopes);
    };
    let groups = &member.session.groups;
    if !toolset.open_to(groups) {
        return Err(refused(&format!(
            "your groups ({}) are none of those that may connect to the toolset {} ({})",
            groups.join(", "),
            toolset.name,
            toolset.groups.join(", ")
        )));
    }
    scopes.push(format!("{TOOLSET_SCOPE}{}", toolset.name));
    Ok(scopes)
}
