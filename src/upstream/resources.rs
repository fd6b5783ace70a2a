//! An upstream's resources and templates as the registry offers them: each
//! under the upstream's URI unless another provider (teamgate's own, or
//! another upstream) has the same URI or a template that can match a URI
//! this one does, else renamed (`uris.rs`); reads,
//! completions and subscriptions mapped back and forwarded. A member's
//! subscription subscribes the upstream once per URI, whoever asks; the
//! upstream's `resources/updated` reaches the change bus under the URI
//! members see. Its skills (SEP-2640) pass through likewise: the entries
//! of its `skills/list` with their files' URIs renamed as its resources
//! are, `skills/get` forwarded, the files read through it.

#![allow(deprecated)] // resources/subscribe is how 2025-era upstreams subscribe.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rmcp::model::{
    ArgumentInfo, ClientRequest, GetSkillRequest, GetSkillRequestParams, ReadResourceRequest,
    ReadResourceRequestParams, Reference, ResourceContents, ServerResult, Skill, SubscribeRequest,
    SubscribeRequestParams, UnsubscribeRequest, UnsubscribeRequestParams,
};

use super::{
    link::{Link, Status},
    members::{Members, Refused},
    offer::{self, Offer},
    prompts, request, uris,
};
use crate::{
    protocol::{McpError, ReadResourceResponse, Resource, ResourceTemplate},
    registry::{CallContext, ChangeEvent, ResourceProvider, apps, skills::unknown_skill},
};

/// Upstream URIs subscribed per upstream at most, whoever subscribed.
const MAX_SUBSCRIBED: usize = 1000;

/// Who else offers resources, for the URI rule: teamgate's own providers
/// (set per registry build) and every running upstream.
#[derive(Default)]
pub(super) struct Neighbours {
    pub(super) own: Mutex<Vec<Arc<dyn ResourceProvider>>>,
    pub(super) links: Mutex<Vec<Arc<Link>>>,
}

impl Neighbours {
    /// Whether a provider other than upstream `me` has `uri` (with
    /// `template`, a template that can match a URI `uri` does).
    fn taken(&self, me: &Link, uri: &str, template: bool) -> bool {
        if !template {
            return self.lists(me, uri);
        }
        let own = self.own.lock().expect("neighbours lock").clone();
        let overlaps = |t: &ResourceTemplate| uris::overlap(&t.uri_template, uri);
        own.iter().any(|p| p.templates().iter().any(overlaps))
            || (self.others(me).iter()).any(|offer| offer.templates.iter().any(overlaps))
    }

    /// Whether a provider other than upstream `me` lists `uri` or another
    /// spelling of it (teamgate's own providers, by owning it).
    fn lists(&self, me: &Link, uri: &str) -> bool {
        let normal = uris::normalised(uri);
        let own = self.own.lock().expect("neighbours lock").clone();
        if own.iter().any(|p| p.owns(uri) || p.owns(&normal)) {
            return true;
        }
        (self.others(me).iter()).any(|offer| {
            let listed = offer.resources.iter().map(|r| r.uri.as_str());
            (listed.chain(offer.skill_files())).any(|u| uris::normalised(u) == normal)
        })
    }

    /// Whether a template of an upstream other than `me` matches `uri` (or
    /// its normalised spelling).
    fn templated(&self, me: &Link, uri: &str) -> bool {
        let normal = uris::normalised(uri);
        (self.others(me).iter()).any(|offer| {
            (offer.templates.iter()).any(|t| {
                uris::matches(&t.uri_template, uri) || uris::matches(&t.uri_template, &normal)
            })
        })
    }

    /// What each upstream but `me` offers now.
    fn others(&self, me: &Link) -> Vec<Arc<Offer>> {
        let links = self.links.lock().expect("neighbours lock").clone();
        (links.iter())
            .filter(|link| !std::ptr::eq(link.as_ref(), me))
            .map(|link| up_offer(link))
            .collect()
    }
}

/// What `link` offers while it is up; nothing otherwise.
/// The URI members see for upstream `link`'s resource `uri` (not a
/// template): its own, or in its namespace when another provider has it.
pub(super) fn exposed_uri(neighbours: &Neighbours, link: &Link, uri: &str) -> String {
    if neighbours.taken(link, uri, false) {
        uris::rewrite(&link.config.name, uri, false)
    } else {
        uri.to_owned()
    }
}

fn up_offer(link: &Link) -> Arc<Offer> {
    let current = link.current.lock().expect("upstream state lock");
    match current.status {
        Status::Up => current.offer.clone(),
        _ => Arc::default(),
    }
}

pub(super) struct UpstreamResources {
    link: Arc<Link>,
    neighbours: Arc<Neighbours>,
    /// Each member's own connection, once members' reads go over theirs.
    members: Option<Arc<Members>>,
}

impl UpstreamResources {
    pub(super) fn new(
        link: Arc<Link>,
        neighbours: Arc<Neighbours>,
        members: Option<Arc<Members>>,
    ) -> Self {
        Self {
            link,
            neighbours,
            members,
        }
    }

    /// The URI members see for the upstream's `uri`.
    pub(super) fn exposed(&self, uri: &str, template: bool) -> String {
        if self.neighbours.taken(&self.link, uri, template) {
            uris::rewrite(&self.link.config.name, uri, template)
        } else {
            uri.to_owned()
        }
    }

    /// Whether one of the upstream's tools names `uri` as its UI (MCP
    /// Apps): a server may leave such a resource out of its list.
    fn named_by_a_tool(&self, uri: &str) -> bool {
        let tools = self
            .link
            .current
            .lock()
            .expect("upstream state lock")
            .tools
            .clone();
        let normal = uris::normalised(uri);
        (tools.iter()).any(|t| apps::ui_resource(t).is_some_and(|u| uris::normalised(u) == normal))
    }

    /// The upstream's own URI of `uri`, when this upstream serves it: a
    /// URI in its namespace, one it lists (spelt as RFC 3986 normalises
    /// it) that no other provider does, or one its template matches when
    /// no other provider lists it, no other upstream's template matches it
    /// (a tie is nobody's: the namespaces reach both), and it is not in
    /// the `upstream://` scheme (other upstreams' namespaces).
    fn original(&self, uri: &str) -> Option<String> {
        if let Some(original) = uris::original(&self.link.config.name, uri) {
            return Some(original);
        }
        let offer = up_offer(&self.link);
        let normal = uris::normalised(uri);
        let listed = (offer.resources.iter()).find(|r| uris::normalised(&r.uri) == normal);
        if let Some(listed) = listed {
            // Sent as the upstream spells it.
            return (!self.neighbours.lists(&self.link, uri)).then(|| listed.uri.clone());
        }
        if uri.starts_with("ui://") && self.named_by_a_tool(uri) {
            return (!self.neighbours.lists(&self.link, uri)).then(|| uri.to_owned());
        }
        // A skill's files, listed in its manifest only (SEP-2640).
        if let Some(file) = offer.skill_files().find(|u| uris::normalised(u) == normal) {
            return (!self.neighbours.lists(&self.link, uri)).then(|| file.to_owned());
        }
        let matching =
            |u: &str| (offer.templates.iter()).any(|t| uris::matches(&t.uri_template, u));
        let sent = [uri, normal.as_str()].into_iter().find(|u| matching(u))?;
        let theirs = uris::reserved(uri)
            || self.neighbours.lists(&self.link, uri)
            || self.neighbours.templated(&self.link, uri);
        (!theirs).then(|| sent.to_owned())
    }

    fn not_found(uri: &str) -> McpError {
        McpError::resource_not_found(
            "Resource not found",
            Some(serde_json::json!({ "uri": uri })),
        )
    }
}

#[async_trait]
impl ResourceProvider for UpstreamResources {
    fn resources(&self) -> Vec<Resource> {
        let offer = up_offer(&self.link);
        offer
            .resources
            .iter()
            .map(|resource| {
                let mut resource = resource.clone();
                resource.uri = self.exposed(&resource.uri, false);
                resource
            })
            .collect()
    }

    fn templates(&self) -> Vec<ResourceTemplate> {
        let offer = up_offer(&self.link);
        offer
            .templates
            .iter()
            .map(|template| {
                let mut template = template.clone();
                template.uri_template = self.exposed(&template.uri_template, true);
                template
            })
            .collect()
    }

    fn owns(&self, uri: &str) -> bool {
        self.original(uri).is_some()
    }

    fn origin(&self) -> Option<String> {
        Some(self.link.config.name.clone())
    }

    async fn read(&self, uri: &str, cx: &CallContext) -> Result<ReadResourceResponse, McpError> {
        let original = self.original(uri).ok_or_else(|| Self::not_found(uri))?;
        let params = ReadResourceRequestParams::new(original.clone());
        let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(params));
        let link = match Members::route(self.members.as_ref(), &self.link, uri, cx).await {
            Ok(link) => link,
            Err(Refused::Input(input)) => return Ok(ReadResourceResponse::InputRequired(input)),
            Err(Refused::Error(error)) => return Err(error),
        };
        let ServerResult::ReadResourceResult(mut result) =
            request::forward(&link, request, Some(cx)).await?
        else {
            return Err(request::unexpected(&self.link, "resources/read"));
        };
        // The contents name the URI the member asked for, not the upstream's.
        for contents in &mut result.contents {
            let named = match contents {
                ResourceContents::TextResourceContents { uri, .. }
                | ResourceContents::BlobResourceContents { uri, .. } => uri,
                _ => continue,
            };
            if *named == original {
                *named = uri.to_owned();
            }
        }
        Ok(ReadResourceResponse::Complete(link.scrubber.scrub(result)))
    }

    async fn complete(&self, template: &str, argument: &str, prefix: &str) -> Vec<String> {
        let offer = up_offer(&self.link);
        let original = match uris::original(&self.link.config.name, template) {
            Some(original) => original,
            None if !self.neighbours.taken(&self.link, template, true) => template.to_owned(),
            None => return Vec::new(),
        };
        if !offer.templates.iter().any(|t| t.uri_template == original) {
            return Vec::new();
        }
        let reference = Reference::for_resource(original);
        prompts::complete(&self.link, reference, ArgumentInfo::new(argument, prefix)).await
    }

    fn required_scopes(&self, _uri: &str) -> Option<Vec<String>> {
        let scopes = &self.link.config.scopes;
        (!scopes.is_empty()).then(|| scopes.clone())
    }

    fn offers(&self) -> bool {
        up_offer(&self.link).has_resources()
    }

    fn subscribable(&self) -> bool {
        up_offer(&self.link).subscribe
    }

    fn serves_skills(&self) -> bool {
        up_offer(&self.link).serves_skills
    }

    async fn skills(&self) -> Result<Vec<Skill>, McpError> {
        let offer = up_offer(&self.link);
        let rename = |uri: &str| self.exposed(uri, false);
        Ok((offer.skills.iter())
            .map(|s| offer::renamed(s.clone(), rename))
            .collect())
    }

    async fn skill(&self, uri: &str, cx: &CallContext) -> Result<Skill, McpError> {
        let original = self.original(uri).ok_or_else(|| unknown_skill(uri))?;
        let params = GetSkillRequestParams::new(original.clone());
        let request = ClientRequest::GetSkillRequest(GetSkillRequest::new(params));
        let link = match Members::route(self.members.as_ref(), &self.link, uri, cx).await {
            Ok(link) => link,
            Err(Refused::Input(_)) => {
                let why = format!(
                    "connect to the upstream server {} first",
                    self.link.config.name
                );
                return Err(McpError::invalid_request(why, None));
            }
            Err(Refused::Error(error)) => return Err(error),
        };
        let ServerResult::GetSkillResult(result) =
            request::forward(&link, request, Some(cx)).await?
        else {
            return Err(request::unexpected(&self.link, "skills/get"));
        };
        // Named as the member asked for it; its files as reads reach them.
        let rename = |u: &str| match u == original {
            true => uri.to_owned(),
            false => self.exposed(u, false),
        };
        Ok(offer::renamed(link.scrubber.scrub(result.skill), rename))
    }

    async fn subscribe(&self, uri: &str) -> Result<(), McpError> {
        let original = self.original(uri).ok_or_else(|| Self::not_found(uri))?;
        if !up_offer(&self.link).subscribe {
            return Ok(());
        }
        let first = {
            let mut subscribed = self.link.subscribed.lock().expect("subscriptions lock");
            if !subscribed.contains_key(&original) && subscribed.len() >= MAX_SUBSCRIBED {
                return Err(McpError::invalid_request(
                    format!(
                        "the upstream server {} has {MAX_SUBSCRIBED} subscribed resources already",
                        self.link.config.name
                    ),
                    None,
                ));
            }
            let count = subscribed.entry(original.clone()).or_default();
            *count += 1;
            *count == 1
        };
        if first {
            let params = SubscribeRequestParams::new(original.clone());
            let request = ClientRequest::SubscribeRequest(SubscribeRequest::new(params));
            if let Err(error) = request::forward(&self.link, request, None).await {
                self.release(&original);
                return Err(error);
            }
        }
        Ok(())
    }

    async fn unsubscribe(&self, uri: &str) {
        let Some(original) = self.original(uri) else {
            return;
        };
        if self.release(&original) {
            let params = UnsubscribeRequestParams::new(original);
            let request = ClientRequest::UnsubscribeRequest(UnsubscribeRequest::new(params));
            let _ = request::forward(&self.link, request, None).await;
        }
    }
}

impl UpstreamResources {
    /// One member fewer on `original`; whether it was the last.
    fn release(&self, original: &str) -> bool {
        let mut subscribed = self.link.subscribed.lock().expect("subscriptions lock");
        let Some(count) = subscribed.get_mut(original) else {
            return false;
        };
        *count -= 1;
        let last = *count == 0;
        if last {
            subscribed.remove(original);
        }
        last
    }

    /// The change bus's event for the upstream's `event`: URIs as members see them.
    pub(super) fn member_event(&self, event: ChangeEvent) -> ChangeEvent {
        match event {
            ChangeEvent::ResourceUpdated { uri } => ChangeEvent::ResourceUpdated {
                uri: self.exposed(&uri, false),
            },
            other => other,
        }
    }
}
