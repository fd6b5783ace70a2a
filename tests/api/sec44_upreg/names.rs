//! Item 13: an upstream's tool names outside `[A-Za-z0-9_.-]{1,128}` are
//! dropped, each with a warning naming the upstream and the name cut short
//! and escaped; the well-named tools beside them are offered as usual.

use serde_json::json;

use super::{Listing, python, refused, until};
use crate::{credentials::Logs, helpers::spawn_app_with, sdk};

const HTML: &str = "<img src=x onerror=alert(1)>";

#[tokio::test]
async fn tool_names_outside_the_allowed_set_are_dropped_with_a_log_line() {
    let Some(python) = python() else {
        return;
    };
    let long = "a".repeat(3000);
    let listing = Listing::new(
        &python,
        json!({"server": "odd", "tools": [
            {"name": HTML}, {"name": long}, {"name": "two words"}, {"name": "naïve"},
            {"name": "ok.tool-1_X"}, {"name": "b".repeat(128)},
        ]}),
    );
    let logs = Logs::capture();
    let upstream = listing.upstream("odd", json!({}));
    let app = spawn_app_with(move |c| c.upstreams = vec![upstream]).await;
    let (client, _heard) = sdk::connect(&app.url, None).await;
    let listed = until(&client, "the well-named tool", |l| {
        l.iter().any(|n| n == "odd_ok.tool-1_X")
    })
    .await;
    let mut theirs: Vec<&String> = listed.iter().filter(|n| n.starts_with("odd_")).collect();
    theirs.sort();
    assert_eq!(
        theirs,
        [
            &format!("odd_{}", "b".repeat(128)),
            &"odd_ok.tool-1_X".to_owned()
        ],
        "only the well-named tools are offered: {listed:?}"
    );
    // What was logged of the listing, before the calls below name the tools.
    let text = logs.text();
    for name in [HTML, long.as_str(), "two words"] {
        let error = refused(&client, &format!("odd_{name}")).await;
        assert!(error.contains("Unknown tool"), "{error}");
    }
    assert_eq!(
        sdk::text(&sdk::call(&client, "odd_ok.tool-1_X", json!({})).await),
        "odd: ok.tool-1_X"
    );

    let line = |needle: &str| {
        text.lines()
            .find(|l| l.contains(needle) && l.contains("odd"))
            .unwrap_or_else(|| panic!("a log line names {needle:?} and the upstream:\n{text}"))
            .to_owned()
    };
    assert!(line(HTML).contains("WARN"), "{}", line(HTML));
    let cut = format!("{}…", "a".repeat(64));
    assert!(line(&cut).contains("WARN"));
    assert!(
        !text.contains(&"a".repeat(65)),
        "the long name is cut short"
    );
    assert!(line("na\\u{ef}ve").contains("WARN"), "non-ASCII is escaped");
    client.cancel().await.unwrap();
}
