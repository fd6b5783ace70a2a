//! Item 10: a cell that starts with TAB or CR is defused like one that
//! starts with `=`, `+`, `-` or `@`: a spreadsheet strips the leading
//! whitespace and would run the rest as a formula.

use teamgate::store::{AuditRecord, record_id};

use crate::portal_idp::{Browser, portal_app_now};

fn record(user: &str, target: &str, at_ms: i64) -> AuditRecord {
    AuditRecord {
        id: record_id(at_ms),
        at_ms,
        user: user.into(),
        token_id: String::new(),
        issuer: String::new(),
        subject: String::new(),
        session_id: String::new(),
        protocol_version: String::new(),
        method: "tools/call".into(),
        target: target.into(),
        args_digest: String::new(),
        outcome: "ok".into(),
        latency_ms: 1,
        trace_id: String::new(),
        upstream: String::new(),
        credential: String::new(),
        endpoint: String::new(),
        address: "192.0.2.7".into(),
    }
}

#[tokio::test]
async fn csv_cells_starting_with_tab_or_cr_are_defused() {
    let (app, _idp) = portal_app_now().await;
    let now = app.store.now_ms();
    app.store
        .append_audit(&[
            record("\t=HYPERLINK(\"https://evil.example\")", "\r=1+1", now),
            record("eve", "=cmd|' /C calc'!A0", now + 1),
        ])
        .await
        .unwrap();
    let cat = Browser::sign_in(&app, "cat").await;
    let csv = cat
        .get(&format!("{}/portal/admin/audit.csv?since=1h", app.base()))
        .await
        .text()
        .await
        .unwrap();
    // Each hostile cell is quoted and starts with the apostrophe.
    for cell in [
        "\"'\t=HYPERLINK(\"\"https://evil.example\"\")\"",
        "\"'\r=1+1\"",
        "\"'=cmd|' /C calc'!A0\"",
    ] {
        assert!(csv.contains(cell), "{cell:?} in {csv:?}");
    }
    for raw in ["\"\t", "\"\r"] {
        assert!(!csv.contains(raw), "an undefused {raw:?} cell in {csv:?}");
    }
}
