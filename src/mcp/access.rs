//! Who may do what, decided on the typed request the engine acts on (never
//! on a second parse of the body): calls, reads, prompts, completions,
//! templates and subscriptions. Where a caller may not use something, it
//! is refused or left out exactly as if it did not exist, except for the
//! calls the authorization spec answers with 403 (`authorize`).

use std::sync::Arc;

use rmcp::model::{CompleteRequestParams, ErrorCode, Reference, ResourceTemplate};
use serde_json::json;

use super::{
    JsonObject, McpError, RequestContext, RoleServer, SubscriptionFilter,
    calls::{Audit, AuditSink, caller_of},
    refusal::ScopeRefusal,
};
use crate::{
    protocol::codes::{FORBIDDEN, RATE_LIMITED},
    registry::{Caller, Kind, Registry, resource_scopes},
};

/// Refuses `method` on `target` unless the caller holds every scope it
/// needs. Unknown targets need their default scopes, so a caller without
/// them gets the same refusal for what exists and what does not. The
/// refusal is audited and, over HTTP, answered 403 with a challenge.
pub(super) async fn authorize(
    sink: Option<&AuditSink>,
    context: &RequestContext<RoleServer>,
    registry: &Registry,
    (kind, method, target): (Kind, &str, &str),
    arguments: Option<&JsonObject>,
) -> Result<(), McpError> {
    let caller = caller_of(context);
    if !registry.on_endpoint(caller.endpoint(), kind, target) {
        // Not offered on this toolset's endpoint: as if it did not exist.
        let endpoint = caller.endpoint().unwrap_or_default();
        let reason = format!("{target} is not offered on the toolset endpoint {endpoint}");
        deny(sink, context, (method, target, arguments), &reason).await;
        return Err(match kind {
            Kind::Tool => McpError::invalid_params(format!("Unknown tool: {target}"), None),
            Kind::Prompt => McpError::invalid_params(format!("Unknown prompt: {target}"), None),
            Kind::Resource => {
                McpError::resource_not_found("Resource not found", Some(json!({ "uri": target })))
            }
        });
    }
    if caller.may_do_anything() {
        return Ok(());
    }
    let required = registry.required_scopes(kind, target);
    let refusal = context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| Some((parts, parts.extensions.get::<Arc<ScopeRefusal>>()?)));
    if caller.may(&required) {
        if let Some((_, refusal)) = refusal {
            refusal.allow();
        }
        return Ok(());
    }
    let reason = format!(
        "{} lacks the scope(s) {} needed for {method} {target}",
        caller.user,
        required.join(" ")
    );
    deny(sink, context, (method, target, arguments), &reason).await;
    if let Some((parts, refusal)) = refusal {
        refusal.refuse(parts, &required, reason.clone());
    }
    Err(McpError::new(
        ErrorCode(FORBIDDEN),
        format!("Forbidden: {reason}"),
        Some(json!({ "scopes": required })),
    ))
}

/// Refuses a call of `tool` past the caller's quota for it (after
/// `authorize`, so a tool the caller may not use spends nothing and is
/// refused as if unknown). Audited like every refused call.
pub(super) async fn within_quota(
    sink: Option<&AuditSink>,
    quota: Option<&super::ToolQuota>,
    context: &RequestContext<RoleServer>,
    tool: &str,
    arguments: Option<&JsonObject>,
) -> Result<(), McpError> {
    let caller = caller_of(context);
    let Some(Err(wait)) = quota.map(|quota| quota(&caller.user, tool)) else {
        return Ok(());
    };
    let seconds = wait.as_millis().div_ceil(1000).max(1);
    let reason = format!("{} is over its rate for the tool {tool}", caller.user);
    deny(sink, context, ("tools/call", tool, arguments), &reason).await;
    Err(McpError::new(
        ErrorCode(RATE_LIMITED),
        format!("Too many requests: {reason}; retry in {seconds} s"),
        Some(json!({ "retryAfterSeconds": seconds })),
    ))
}

/// Audits a refused call (`method` on `target`), when there is an audit trail.
async fn deny(
    sink: Option<&AuditSink>,
    context: &RequestContext<RoleServer>,
    (method, target, arguments): (&str, &str, Option<&JsonObject>),
    reason: &str,
) {
    if let Some(sink) = sink {
        let caller = caller_of(context);
        Audit::begin(sink, context, &caller, method, target, arguments)
            .deny(reason)
            .await;
    }
}

/// Whether `caller` may use `target` of `kind`.
pub(super) fn allowed(caller: &Caller, registry: &Registry, kind: Kind, target: &str) -> bool {
    registry.on_endpoint(caller.endpoint(), kind, target)
        && (caller.may_do_anything() || caller.may(&registry.required_scopes(kind, target)))
}

/// What of `items` the caller may use (lists show nothing else).
pub(super) fn visible<T: Clone>(
    caller: &Caller,
    kind: Kind,
    registry: &Registry,
    items: &[T],
    name: impl Fn(&T) -> &str,
) -> Vec<T> {
    if caller.may_do_anything() && caller.endpoint().is_none() {
        return items.to_vec();
    }
    items
        .iter()
        .filter(|item| allowed(caller, registry, kind, name(item)))
        .cloned()
        .collect()
}

/// The resource templates `caller` may read through.
pub(super) fn templates(caller: &Caller, registry: &Registry) -> Vec<ResourceTemplate> {
    if caller.may_do_anything() && caller.endpoint().is_none() {
        return registry.templates().to_vec();
    }
    registry
        .resource_providers()
        .iter()
        .flat_map(|provider| provider.templates().into_iter().map(move |t| (provider, t)))
        .filter(|(provider, t)| on_endpoint(caller, registry, provider.as_ref(), &t.uri_template))
        .filter(|(provider, t)| {
            caller.may_do_anything()
                || caller.may(&resource_scopes(provider.as_ref(), &t.uri_template))
        })
        .map(|(_, t)| t)
        .collect()
}

/// Whether a template (or anything else a resource provider has under
/// `uri`) is offered on the caller's endpoint: by its URI, its source or
/// its upstream.
fn on_endpoint(
    caller: &Caller,
    registry: &Registry,
    provider: &dyn crate::registry::ResourceProvider,
    uri: &str,
) -> bool {
    let Some(toolset) = caller.endpoint().map(|name| registry.toolset(name)) else {
        return true;
    };
    toolset.is_some_and(|t| t.permits_resource(uri, provider.origin().as_deref()))
}

/// The values `completion/complete` offers `caller`. A prompt the caller may
/// not get answers as an unknown one; a template it may not read, or a
/// source it may not read, offers nothing, as an unknown one does.
pub(super) async fn completions(
    caller: &Caller,
    registry: &Registry,
    request: &CompleteRequestParams,
) -> Result<Vec<String>, McpError> {
    let argument = &request.argument;
    Ok(match &request.r#ref {
        Reference::Prompt(prompt) => {
            let name = &prompt.name;
            let provider = registry
                .prompt(name)
                .filter(|_| allowed(caller, registry, Kind::Prompt, name))
                .ok_or_else(|| McpError::invalid_params(format!("Unknown prompt: {name}"), None))?;
            let source = provider.completes_from(name, &argument.name);
            if source.is_some_and(|uri| !allowed(caller, registry, Kind::Resource, &uri)) {
                return Ok(Vec::new());
            }
            provider
                .complete(name, &argument.name, &argument.value)
                .await
        }
        Reference::Resource(template) => {
            let mut values = Vec::new();
            for provider in registry.resource_providers().iter().filter(|p| {
                on_endpoint(caller, registry, p.as_ref(), &template.uri)
                    && (caller.may_do_anything()
                        || caller.may(&resource_scopes(p.as_ref(), &template.uri)))
            }) {
                let offered = provider.complete(&template.uri, &argument.name, &argument.value);
                values.extend(offered.await);
            }
            values
        }
        _ => Vec::new(),
    })
}

/// Whether `caller` may subscribe to `uri`: it exists and may be read.
pub(super) fn may_subscribe(caller: &Caller, registry: &Registry, uri: &str) -> bool {
    registry.resource_owner(uri).is_some() && allowed(caller, registry, Kind::Resource, uri)
}

/// What of a `subscriptions/listen` filter `caller` is granted: resource
/// subscriptions only to what it may read (others are dropped as unknown
/// ones are), none when the server has nothing to subscribe to.
pub(super) fn subscription_filter(
    caller: &Caller,
    registry: &Registry,
    requested: &SubscriptionFilter,
) -> SubscriptionFilter {
    let mut accepted = requested.clone();
    if !registry.subscribable() {
        accepted.resource_subscriptions = None;
    } else if let Some(uris) = accepted.resource_subscriptions.as_mut() {
        uris.retain(|uri| may_subscribe(caller, registry, uri));
    }
    accepted
}
