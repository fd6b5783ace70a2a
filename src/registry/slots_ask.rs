//! A member whose credential slot is empty is sent to the portal page that
//! sets it, when their client can open a URL for them (issue 29): a
//! URL-mode elicitation on a 2025-11-25 session, after which the call waits
//! for the value and goes on; an MRTR `input_required` round on 2026-07-28,
//! whose retry goes on once the value is set. A client that can do neither
//! gets the run's tool error naming the page.

use std::time::Duration;

use serde_json::{Value, json};

use super::{
    CallContext,
    slots::{Slots, Template},
};
use crate::protocol::{Asked, CallToolResponse, InputRequests, InputRequiredResult, text_result};

/// Key of the question in `inputRequests` / `inputResponses`.
const KEY: &str = "credential";
/// How often the vault is read while the member sets a value.
const POLL: Duration = Duration::from_millis(500);
/// How long a 2026-07-28 retry that accepted waits for the value to land.
const RETRY_WAIT: Duration = Duration::from_secs(10);
/// How long a 2025-era session waits for the value: as long as a `confirm`.
const SESSION_WAIT: Duration = Duration::from_secs(300);

impl Slots {
    /// The first slot `templates` name that the caller has not set and that
    /// has no fallback.
    async fn first_empty(&self, templates: &[&Template], cx: &CallContext) -> Option<String> {
        let secrets = cx.member_secrets()?;
        for name in templates.iter().flat_map(|t| t.slots()) {
            if self.has_fallback(name) {
                continue;
            }
            // An unreadable value is the run's error to tell.
            if let Ok(None) = secrets.value(&cx.caller().user, name).await {
                return Some(name.to_owned());
            }
        }
        None
    }

    /// Whether `slot` is set for the caller now, waiting up to `wait`.
    async fn set_within(&self, slot: &str, cx: &CallContext, wait: Duration) -> bool {
        let Some(secrets) = cx.member_secrets() else {
            return false;
        };
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Ok(Some(_)) = secrets.value(&cx.caller().user, slot).await {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::select! {
                () = tokio::time::sleep(POLL) => {}
                () = cx.cancellation().cancelled() => return false,
            }
        }
    }

    /// What the call answers instead of running (`None`: run it).
    pub(crate) async fn withheld(
        &self,
        templates: &[&Template],
        tool: &str,
        cx: &CallContext,
    ) -> Option<CallToolResponse> {
        let slot = self.first_empty(templates, cx).await?;
        let message = format!(
            "`{tool}` needs your own `{slot}` credential. Open the page to set it; \
             the call goes on once it is set."
        );
        let page = self.page().to_owned();
        self.ask_to_set(&slot, (&message, &page), tool, cx).await
    }

    /// The member sent to `url` to set the vault's `slot` (a credential, or
    /// an OAuth token set their connection stores), when their client can
    /// open it; `None` when it cannot, or once the value is set.
    pub(crate) async fn ask_to_set(
        &self,
        slot: &str,
        (message, page): (&str, &str),
        tool: &str,
        cx: &CallContext,
    ) -> Option<CallToolResponse> {
        let can_open_urls = (cx.client_capabilities().elicitation).is_some_and(|e| e.url.is_some());
        if !can_open_urls {
            return None;
        }
        let slot = slot.to_owned();
        let id = slot.replace(':', "-");
        let requests: InputRequests = serde_json::from_value(json!({KEY: {
            "method": "elicitation/create",
            "params": {
                "mode": "url",
                "message": message,
                "url": page,
                "elicitationId": format!("teamgate-credential-{id}-{}", uuid::Uuid::new_v4()),
            },
        }}))
        .expect("an elicitation/create input request");
        let state = match cx.mrtr().seal(&slot) {
            Ok(state) => state,
            Err(_) => return None,
        };
        let issued = cx.mrtr().open::<String>().ok().flatten().as_ref() == Some(&slot);
        if cx.is_modern() && !issued {
            return Some(asking(requests, state));
        }
        let refused = |why: &str| {
            Some(
                text_result(
                    format!("`{tool}` did not run: {why}. Open {page}, then call again."),
                    true,
                )
                .into(),
            )
        };
        let wait = if cx.is_modern() {
            RETRY_WAIT
        } else {
            SESSION_WAIT
        };
        match cx.ask(requests.clone(), Some(state.clone())).await {
            Ok(Asked::Answered(answers)) if answers.get(KEY).is_some_and(accepted) => {
                if self.set_within(&slot, cx, wait).await {
                    None
                } else if cx.is_modern() {
                    Some(asking(requests, state))
                } else {
                    refused("the credential was not set in time")
                }
            }
            Ok(Asked::Answered(_)) => refused("you declined to open the page"),
            Ok(Asked::Pending(input_required)) => {
                Some(CallToolResponse::InputRequired(input_required))
            }
            Err(_) => refused("your client could not open the page"),
        }
    }
}

fn accepted(answer: &Value) -> bool {
    answer["action"] == "accept"
}

fn asking(requests: InputRequests, state: String) -> CallToolResponse {
    CallToolResponse::InputRequired(InputRequiredResult::new(Some(requests), Some(state)))
}
