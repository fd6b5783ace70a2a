//! `approval = { group, timeout }`: a member of `group` other than the
//! caller approves each run on the portal. Asked after the arguments are
//! bound, checked and confirmed, so the approver reads exactly what runs;
//! a denial, a timeout or a cancel means the tool does not run.

use crate::{
    config::ToolDecl,
    protocol::{CallToolResponse, JsonObject, text_result},
    registry::{ApprovalAsk, CallContext, Verdict},
};

/// `None` when the call may run; otherwise the result that ends it unrun.
pub(super) async fn withheld(
    decl: &ToolDecl,
    arguments: &JsonObject,
    cx: &CallContext,
) -> Option<CallToolResponse> {
    let rule = decl.approval.as_ref()?;
    let (name, group) = (&decl.name, &rule.group);
    let Some(desk) = cx.approvals() else {
        let message = format!(
            "`{name}` runs only when a member of {group} approves it, and this server cannot \
             ask for approval (it keeps no store, as over stdio); the tool did not run."
        );
        return Some(text_result(message, true).into());
    };
    let ask = ApprovalAsk {
        tool: name,
        arguments,
        rule,
    };
    let message = match desk.decide(ask, cx).await {
        Ok(Verdict::Approved { .. }) => return None,
        Ok(Verdict::Denied { by, reason }) => {
            let reason = reason.map(|r| format!(": {r}")).unwrap_or_default();
            format!("{by} ({group}) denied this call of `{name}`{reason}. The tool did not run.")
        }
        Ok(Verdict::Expired) => format!(
            "No member of {group} approved this call of `{name}` within {}; the tool did not \
             run. Call it again to ask again.",
            humantime::format_duration(rule.timeout)
        ),
        Ok(Verdict::Withdrawn) => {
            format!("The call of `{name}` was cancelled while it waited for approval.")
        }
        Err(error) => error.to_string(),
    };
    Some(text_result(message, true).into())
}
