//! `skills/list` and `skills/get` (SEP-2640, `io.modelcontextprotocol/skills`):
//! the skills of every resource provider that serves them, each listed only
//! to a caller who may read its `SKILL.md` (what `resources/list` shows),
//! and one skill fetched under the scopes of reading it, refused and audited
//! as `resources/read` is. Its files are then read with `resources/read`.

use rmcp::model::{
    GetSkillRequestParams, GetSkillResult, ListSkillsResult, PaginatedRequestParams,
};

use super::{McpHandler, access, caller_of, cursor, ended, list_hints, outcome_slot, page};
use crate::{
    protocol::{McpError, RequestContext, RoleServer, is_modern},
    registry::{Kind, skills::unknown_skill},
};

impl McpHandler {
    pub(super) async fn list_skills_in(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, McpError> {
        let registry = self.shared.registry();
        let mut skills = Vec::new();
        for provider in (registry.resource_providers().iter()).filter(|p| p.serves_skills()) {
            let served = match provider.skills().await {
                Ok(served) => served,
                Err(error) => {
                    let origin = provider.origin().unwrap_or_default();
                    tracing::warn!(upstream = %origin, error = %error.message, "listing skills failed");
                    continue;
                }
            };
            // A skill is its provider's only where reads of it reach that provider.
            let own = |uri: &str| {
                (registry.resource_owner(uri))
                    .is_some_and(|owner| std::ptr::addr_eq(owner.as_ref(), provider.as_ref()))
            };
            skills.extend(served.into_iter().filter(|skill| own(&skill.uri)));
        }
        let caller = caller_of(&context);
        let skills = access::visible(&caller, Kind::Resource, &registry, &skills, |s| &s.uri);
        let slot = outcome_slot(&context);
        let (skills, next) = ended(slot.as_ref(), page(&skills, cursor(&request)))?;
        let mut result = ListSkillsResult::with_all_items(skills);
        result.next_cursor = next;
        (result.ttl_ms, result.cache_scope) = list_hints(&registry);
        Ok(self.finish(is_modern(&context), result))
    }

    pub(super) async fn get_skill_in(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, McpError> {
        let slot = outcome_slot(&context);
        ended(
            slot.as_ref(),
            Box::pin(self.get_skill_of(request, context)).await,
        )
    }

    async fn get_skill_of(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, McpError> {
        let registry = self.shared.registry();
        let uri = request.uri.as_str();
        let what = (Kind::Resource, "skills/get", uri);
        access::authorize(self.shared.audit.as_ref(), &context, &registry, what, None).await?;
        let Some(provider) = registry.resource_owner(uri).filter(|p| p.serves_skills()) else {
            let refused = Err(unknown_skill(uri));
            // A URI no provider serves a skill at is audited as refused: probing shows.
            if let Some(audit) = self.audit(&context, "skills/get", uri, None)? {
                (audit.unknown_target())
                    .finish::<GetSkillResult>(&refused)
                    .await;
            }
            return refused;
        };
        let modern = is_modern(&context);
        let audit = (self.audit(&context, "skills/get", uri, None)?)
            .map(|audit| audit.served_by(provider.origin()));
        let cx = self.call_context(context, "skills/get", uri, None, None);
        let result = provider.skill(uri, &cx).await.map(|skill| {
            let mut result = GetSkillResult::new(skill);
            (result.ttl_ms, result.cache_scope) = list_hints(&registry);
            result
        });
        if let Some(audit) = audit {
            audit.finish(&result).await;
        }
        Ok(self.finish(modern, result?))
    }
}
