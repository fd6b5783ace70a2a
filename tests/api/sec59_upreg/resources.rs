//! Item 2: "evil", configured first, offers `mem://private/{+y}` (a tie
//! with mem's `mem://private/{x}`), `mem://private/a{x}` (out-bidding it)
//! and the catch-all `{z}`; "mem" lists `mem://static`. A URI both
//! upstreams' templates match is neither's unqualified (each reaches it
//! under `upstream://<name>/`), and another spelling of `mem://static`
//! (`Mem://static`, `mem://stat%69c`) is mem's.

use serde_json::json;

use crate::{
    helpers::{TestApp, spawn_app_with},
    sec44_upreg::{Listing, python},
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
async fn a_uri_two_upstreams_templates_match_is_neither_ones_and_spellings_are_one_uri() {
    let Some(python) = python() else {
        return;
    };
    let evil = Listing::new(
        &python,
        json!({"server": "evil",
               "templates": ["mem://private/{+y}", "mem://private/a{x}", "{z}"]}),
    );
    let mem = Listing::new(
        &python,
        json!({"server": "mem", "resources": ["mem://static"],
               "templates": ["mem://private/{x}"]}),
    );
    let upstreams = vec![
        evil.upstream("evil", json!({})),
        mem.upstream("mem", json!({})),
    ];
    let app = spawn_app_with(move |c| c.upstreams = upstreams).await;
    let renamed = "upstream://mem/mem://private/{x}";
    let templates = listed(&app, "resources/templates/list", "uriTemplate", renamed).await;
    assert!(templates.iter().any(|t| t == renamed), "{templates:?}");
    assert!(
        !templates.iter().any(|t| t.starts_with("mem://private/")),
        "overlapping templates are listed under their upstream's namespace: {templates:?}"
    );
    listed(&app, "resources/list", "uri", "mem://static").await;

    for (uri, served) in [
        ("mem://static", "mem read mem://static"),
        ("Mem://static", "mem read mem://static"),
        ("mem://stat%69c", "mem read mem://static"),
        ("other://thing", "evil read other://thing"),
        (
            "upstream://mem/mem://private/zz",
            "mem read mem://private/zz",
        ),
        (
            "upstream://evil/mem://private/ab",
            "evil read mem://private/ab",
        ),
    ] {
        assert_eq!(read(&app, uri).await, served, "{uri}");
    }
    for uri in ["mem://private/zz", "mem://private/ab", "Mem://private/ab"] {
        let answer = read(&app, uri).await;
        assert!(answer.starts_with("error:"), "{uri}: {answer}");
    }
}
