//! An upstream's prompts as the registry offers them: renamed with the
//! upstream's prefix (as its tools are), each `prompts/get` and argument
//! completion forwarded with teamgate's timeout and the member's
//! cancellation (`request.rs`).

use std::{collections::HashMap, sync::Arc};

use async_trait::async_trait;
use rmcp::model::{
    ArgumentInfo, ClientRequest, CompleteRequest, CompleteRequestParams, GetPromptRequest,
    GetPromptRequestParams, Reference, ServerResult,
};

use super::{
    link::{Link, Status},
    members::{Members, Refused},
    request,
};
use crate::{
    protocol::{GetPromptResponse, McpError, Prompt},
    registry::{CallContext, PromptProvider},
};

pub(super) struct UpstreamPrompts {
    link: Arc<Link>,
    /// Each member's own connection, once members' calls go over theirs.
    members: Option<Arc<Members>>,
}

impl UpstreamPrompts {
    pub(super) fn new(link: Arc<Link>, members: Option<Arc<Members>>) -> Self {
        Self { link, members }
    }

    /// The upstream's own name of the exposed prompt `name`, if it lists it.
    fn original<'a>(&self, name: &'a str) -> Option<&'a str> {
        let prefix = self.link.config.exposed("");
        let original = name.strip_prefix(prefix.as_str())?;
        let current = self.link.current.lock().expect("upstream state lock");
        let listed = current.status == Status::Up
            && current.offer.prompts.iter().any(|p| p.name == original);
        listed.then_some(original)
    }

    fn unknown(name: &str) -> McpError {
        McpError::invalid_params(format!("Unknown prompt: {name}"), None)
    }
}

#[async_trait]
impl PromptProvider for UpstreamPrompts {
    fn origin(&self) -> Option<String> {
        Some(self.link.config.name.clone())
    }

    fn prompts(&self) -> Vec<Prompt> {
        let current = self.link.current.lock().expect("upstream state lock");
        if current.status != Status::Up {
            return Vec::new();
        }
        current
            .offer
            .prompts
            .iter()
            .map(|prompt| {
                let mut prompt = prompt.clone();
                prompt.name = self.link.config.exposed(&prompt.name);
                prompt
            })
            .collect()
    }

    async fn get(
        &self,
        name: &str,
        arguments: HashMap<String, String>,
        cx: &CallContext,
    ) -> Result<GetPromptResponse, McpError> {
        let original = self.original(name).ok_or_else(|| Self::unknown(name))?;
        let arguments = arguments
            .into_iter()
            .map(|(k, v)| (k, serde_json::Value::String(v)))
            .collect();
        let params = GetPromptRequestParams::new(original).with_arguments(arguments);
        let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
        let link = match Members::route(self.members.as_ref(), &self.link, name, cx).await {
            Ok(link) => link,
            Err(Refused::Input(input)) => return Ok(GetPromptResponse::InputRequired(input)),
            Err(Refused::Error(error)) => return Err(error),
        };
        match request::forward(&link, request, Some(cx)).await? {
            ServerResult::GetPromptResult(result) => {
                Ok(GetPromptResponse::Complete(link.scrubber.scrub(result)))
            }
            _ => Err(request::unexpected(&self.link, "prompts/get")),
        }
    }

    async fn complete(&self, prompt: &str, argument: &str, prefix: &str) -> Vec<String> {
        let Some(original) = self.original(prompt) else {
            return Vec::new();
        };
        complete(
            &self.link,
            Reference::for_prompt(original),
            ArgumentInfo::new(argument, prefix),
        )
        .await
    }

    fn required_scopes(&self, _name: &str) -> Option<Vec<String>> {
        let scopes = &self.link.config.scopes;
        (!scopes.is_empty()).then(|| scopes.clone())
    }
}

/// The upstream's completion of `argument` of `reference`; none when it
/// fails (completion is a hint, never an error the member must handle).
pub(super) async fn complete(
    link: &Link,
    reference: Reference,
    argument: ArgumentInfo,
) -> Vec<String> {
    let params = CompleteRequestParams::new(reference, argument);
    let request = ClientRequest::CompleteRequest(CompleteRequest::new(params));
    match request::forward(link, request, None).await {
        Ok(ServerResult::CompleteResult(result)) => result.completion.values,
        Ok(_) => Vec::new(),
        Err(error) => {
            let name = &link.config.name;
            tracing::debug!(upstream = %name, %error, "the upstream's completion failed");
            Vec::new()
        }
    }
}
