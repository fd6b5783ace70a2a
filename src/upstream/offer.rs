//! What an upstream offers besides tools (prompts, resources, templates, and
//! skills when it declares the Skills extension, SEP-2640), listed at
//! connect and on its `list_changed`. How a request for one of them is
//! forwarded is `request.rs`.

use std::{collections::HashMap, sync::Arc};

use rmcp::{
    RoleClient,
    model::{PaginatedRequestParams, Prompt, Resource, ResourceTemplate, Skill, SkillResources},
    service::{Peer, ServiceError},
};

/// Prompts, resources and templates listed per upstream at most, each (pages
/// are followed up to this).
const MAX_ITEMS: usize = 1000;

/// The upstream's prompts, resources and templates, under its own names.
#[derive(Default, Clone, PartialEq)]
pub(super) struct Offer {
    pub(super) prompts: Vec<Prompt>,
    pub(super) resources: Vec<Resource>,
    pub(super) templates: Vec<ResourceTemplate>,
    /// The upstream accepts `resources/subscribe`.
    pub(super) subscribe: bool,
    /// The upstream declares the Skills extension (`skills/get` is forwarded).
    pub(super) serves_skills: bool,
    /// Its `skills/list`, each entry with its manifest.
    pub(super) skills: Vec<Skill>,
}

impl Offer {
    /// What the upstream's capabilities announce, each list followed up to
    /// `MAX_ITEMS`. A list that fails is left empty (and logged): the rest
    /// of the upstream stays usable.
    pub(super) async fn list(peer: &Peer<RoleClient>, name: &str) -> Offer {
        let Some(info) = peer.peer_info() else {
            return Offer::default();
        };
        let caps = &info.capabilities;
        let mut offer = Offer {
            subscribe: caps
                .resources
                .as_ref()
                .is_some_and(|r| r.subscribe == Some(true)),
            ..Offer::default()
        };
        let warn = |what: &str, error: ServiceError| {
            tracing::warn!(upstream = %name, %error, "listing the upstream's {what} failed");
        };
        if caps.prompts.is_some() {
            let listed = pages(|p| async move {
                let page = peer.list_prompts(p).await?;
                Ok((page.prompts, page.next_cursor))
            });
            offer.prompts = listed.await.unwrap_or_else(|e| {
                warn("prompts", e);
                Vec::new()
            });
        }
        if caps.resources.is_some() {
            let listed = pages(|p| async move {
                let page = peer.list_resources(p).await?;
                Ok((page.resources, page.next_cursor))
            });
            offer.resources = listed.await.unwrap_or_else(|e| {
                warn("resources", e);
                Vec::new()
            });
            let listed = pages(|p| async move {
                let page = peer.list_resource_templates(p).await?;
                Ok((page.resource_templates, page.next_cursor))
            });
            offer.templates = listed.await.unwrap_or_else(|e| {
                warn("resource templates", e);
                Vec::new()
            });
        }
        if caps.supports_skills() {
            offer.serves_skills = true;
            let listed = pages(|p| async move {
                let page = peer.list_skills(p).await?;
                Ok((page.skills, page.next_cursor))
            });
            offer.skills = listed.await.unwrap_or_else(|e| {
                warn("skills", e);
                Vec::new()
            });
        }
        // teamgate's scheme for upstreams' namespaces is no upstream's own.
        let kept = |uri: &str| {
            let reserved = super::uris::reserved(uri);
            if reserved {
                let uri = super::names::shown(uri);
                tracing::warn!(upstream = %name, %uri, "the upstream listed a resource or template in teamgate's upstream:// scheme (other upstreams' namespaces); dropped");
            }
            !reserved
        };
        offer.resources.retain(|r| kept(&r.uri));
        offer.templates.retain(|t| kept(&t.uri_template));
        offer.skills.retain(|s| skill_files(s).all(&kept));
        offer
    }
}

impl Offer {
    pub(super) fn has_resources(&self) -> bool {
        !self.resources.is_empty() || !self.templates.is_empty() || self.serves_skills
    }

    /// The URIs of every skill's `SKILL.md` and files, under the upstream's names.
    pub(super) fn skill_files(&self) -> impl Iterator<Item = &str> {
        self.skills.iter().flat_map(skill_files)
    }
}

/// `skill`'s URI and those of its files.
fn skill_files(skill: &Skill) -> impl Iterator<Item = &str> {
    let files = match &skill.resources {
        SkillResources::Files(files) => files.as_slice(),
        _ => &[],
    };
    std::iter::once(skill.uri.as_str()).chain(files.iter().map(|f| f.uri.as_str()))
}

/// `skill` with its URI and its files' as `rename` gives them.
pub(super) fn renamed(mut skill: Skill, rename: impl Fn(&str) -> String) -> Skill {
    skill.uri = rename(&skill.uri);
    if let SkillResources::Files(files) = &mut skill.resources {
        for file in files {
            file.uri = rename(&file.uri);
        }
    }
    skill
}

/// Every item of a paginated list, following pages up to `MAX_ITEMS` (an
/// upstream repeating a cursor cannot keep teamgate listing).
async fn pages<T, F, Fut>(mut page: F) -> Result<Vec<T>, ServiceError>
where
    F: FnMut(Option<PaginatedRequestParams>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
{
    let mut items = Vec::new();
    let mut cursor = None;
    loop {
        let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let (listed, next) = page(params).await?;
        items.extend(listed);
        match next {
            Some(next) if items.len() < MAX_ITEMS => cursor = Some(next),
            _ => break,
        }
    }
    items.truncate(MAX_ITEMS);
    Ok(items)
}

/// Member subscriptions to an upstream's resources, by the upstream's URI:
/// the upstream is subscribed once per URI while any member is.
pub(super) type Subscribed = std::sync::Mutex<HashMap<String, usize>>;

/// The offer as shared by the link's readers.
pub(super) type Shared = Arc<Offer>;
