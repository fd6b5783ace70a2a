//! Item 1: one upstream cannot capture another's resources. "grab",
//! configured first, offers the templates `{x}`, `mem://{x}` and
//! `upstream://victim/{x}` and lists a URI under `upstream://victim/`;
//! "victim" lists `mem://doc` and `file:///notes` and the template
//! `mem://docs/{id}`. A listed URI is read from its lister, a URI that
//! templates of both match from neither (issue 59 item 2: each reaches it
//! under `upstream://<name>/`), nothing under `upstream://victim/` is
//! grab's, and the audit record names who served.

use serde_json::json;
use teamgate::store::AuditRecord;

use super::{Listing, python};
use crate::{
    helpers::{TestApp, audit_until, spawn_app_with},
    upstream_resources::{first_text, listed},
};

async fn read(app: &TestApp, uri: &str) -> String {
    let (_, replies) = app
        .modern_call(9, "resources/read", json!({"uri": uri}))
        .await;
    match replies[0].get("error") {
        Some(error) => format!("error: {error}"),
        None => first_text(&replies[0]),
    }
}

#[tokio::test]
async fn an_upstream_cannot_capture_another_upstreams_resources() {
    let Some(python) = python() else {
        return;
    };
    let grab = Listing::new(
        &python,
        json!({"server": "grab", "resources": ["upstream://victim/listed"],
               "templates": ["{x}", "mem://{x}", "upstream://victim/{x}"]}),
    );
    let victim = Listing::new(
        &python,
        json!({"server": "victim", "resources": ["mem://doc", "file:///notes"],
               "templates": ["mem://docs/{id}"]}),
    );
    let upstreams = vec![
        grab.upstream("grab", json!({})),
        victim.upstream("victim", json!({})),
    ];
    let app = spawn_app_with(move |c| c.upstreams = upstreams).await;
    let uris = listed(&app, "resources/list", "uri", "file:///notes").await;
    assert!(uris.iter().any(|u| u == "mem://doc"), "{uris:?}");
    assert!(
        !uris
            .iter()
            .any(|u| u.starts_with("upstream://victim/listed")),
        "grab may not list under upstream://victim/: {uris:?}"
    );
    let victims = "upstream://victim/mem://docs/{id}";
    let templates = listed(&app, "resources/templates/list", "uriTemplate", victims).await;
    assert!(templates.iter().any(|t| t == victims), "{templates:?}");
    assert!(
        (templates.iter()).all(|t| !t.starts_with("upstream://victim/") || t == victims),
        "{templates:?}"
    );

    for (uri, served) in [
        ("mem://doc", "victim read mem://doc"),
        ("file:///notes", "victim read file:///notes"),
        ("upstream://victim/mem://docs/7", "victim read mem://docs/7"),
        ("mem://other", "grab read mem://other"),
        ("anything", "grab read anything"),
    ] {
        assert_eq!(read(&app, uri).await, served, "{uri}");
    }
    for uri in [
        "upstream://victim/listed",
        "upstream://victim/mem://doc",
        "mem://docs/7",
    ] {
        let answer = read(&app, uri).await;
        assert!(!answer.starts_with("grab"), "{uri}: {answer}");
    }

    // The audit records name who served each read.
    let served = |trail: &[AuditRecord]| -> Vec<(String, String)> {
        (trail.iter())
            .filter(|r| r.method == "resources/read" && r.outcome == "ok")
            .map(|r| (r.target.clone(), r.upstream.clone()))
            .collect()
    };
    let by = |reads: &[(String, String)], uri: &str| {
        (reads.iter())
            .find(|(t, _)| t == uri)
            .map(|(_, u)| u.clone())
    };
    let trail = audit_until(&app.store, None, |trail| {
        let reads = served(trail);
        by(&reads, "mem://doc").is_some() && by(&reads, "anything").is_some()
    })
    .await;
    let reads = served(&trail);
    let by = |uri: &str| by(&reads, uri);
    assert_eq!(by("mem://doc").as_deref(), Some("victim"), "{reads:?}");
    let docs = by("upstream://victim/mem://docs/7");
    assert_eq!(docs.as_deref(), Some("victim"), "{reads:?}");
    assert_eq!(by("anything").as_deref(), Some("grab"), "{reads:?}");
}
