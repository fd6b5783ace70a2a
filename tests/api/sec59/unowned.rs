//! Item 8: a `resources/read` of a URI no provider owns, and a `tools/call`
//! of a name no provider has, leave an audit row: probing shows.

use serde_json::json;

use crate::helpers::{audit_until, spawn_app};

#[tokio::test]
async fn reading_an_unowned_uri_or_calling_an_unknown_tool_is_audited_as_refused() {
    let app = spawn_app().await;
    let probe = "secret://payroll/2026";
    let (status, replies) = app
        .modern_call(41, "resources/read", json!({"uri": probe}))
        .await;
    let reply = replies.last().expect("a reply");
    assert_eq!(reply["id"], 41, "{status} {reply}");
    assert!(reply["error"]["code"].is_i64(), "{reply}");
    let (_, replies) = app
        .modern_call(
            42,
            "tools/call",
            json!({"name": "no_such_tool", "arguments": {}}),
        )
        .await;
    assert!(replies.last().unwrap()["error"].is_object(), "{replies:?}");

    let records = audit_until(&app.store, None, |r| r.len() >= 2).await;
    let read = records
        .iter()
        .find(|r| r.method == "resources/read" && r.target == probe)
        .unwrap_or_else(|| panic!("no record of the read in {records:?}"));
    assert!(read.outcome.starts_with("error"), "{read:?}");
    let call = records
        .iter()
        .find(|r| r.method == "tools/call" && r.target == "no_such_tool")
        .unwrap_or_else(|| panic!("no record of the call in {records:?}"));
    assert!(call.outcome.starts_with("error"), "{call:?}");
}
