//! Custom scopes and the portal (issue 51 item 6): the examples' grants
//! cover the scopes the other examples give their tools, and the admin page
//! /portal/admin/grants shows, per group, which tools its grants reach and
//! which tools no group reaches, as the engine decides it.

use std::sync::Arc;

use reqwest::StatusCode;
use teamgate::{config::Config, registry::scope_covers, store::SystemClock};

use crate::{
    helpers::repo_path,
    portal_idp::{Browser, portal_app_with},
};

/// Every `scopes` list outside `[portal]` and OAuth settings: what a tool,
/// a source or an upstream requires of the caller.
fn required_scopes(value: &toml::Value, path: &str, out: &mut Vec<(String, String)>) {
    match value {
        toml::Value::Table(table) => {
            for (key, value) in table {
                if key == "portal" || key == "oauth" {
                    continue;
                }
                let at = format!("{path}.{key}");
                match (key.as_str(), value) {
                    ("scopes", toml::Value::Array(items)) => out.extend(
                        items
                            .iter()
                            .filter_map(|s| s.as_str())
                            .map(|s| (at.clone(), s.to_owned())),
                    ),
                    _ => required_scopes(value, &at, out),
                }
            }
        }
        toml::Value::Array(items) => items.iter().for_each(|v| required_scopes(v, path, out)),
        _ => {}
    }
}

#[test]
fn the_examples_portal_grants_cover_every_scope_the_other_examples_declare() {
    let portal: toml::Value =
        toml::from_str(&std::fs::read_to_string(repo_path("config/examples/portal.toml")).unwrap())
            .unwrap();
    let grants = portal["portal"]["grants"].as_array().unwrap();
    // Short of `*`: a group that grants everything would cover anything.
    let named: Vec<Vec<String>> = (grants.iter())
        .map(|g| g["scopes"].as_array().unwrap())
        .map(|s| s.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
        .filter(|scopes: &Vec<String>| !scopes.iter().any(|s| s == "*"))
        .collect();
    let mut declared = Vec::new();
    for entry in std::fs::read_dir(repo_path("config/examples")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let text = std::fs::read_to_string(&path).unwrap();
            let value: toml::Value = toml::from_str(&text).unwrap();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            required_scopes(&value, &name, &mut declared);
        }
    }
    assert!(
        declared.iter().any(|(_, s)| s == "team:say"),
        "{declared:?}"
    );
    for (at, scope) in &declared {
        assert!(
            named.iter().any(|granted| scope_covers(granted, scope)),
            "{at} requires {scope:?}, which no [[portal.grants]] of portal.toml grants short of \"*\""
        );
    }
}

#[tokio::test]
async fn portal_admin_grants_show_what_each_group_reaches_and_what_none_does() {
    let (app, _idp) = portal_app_with(Arc::new(SystemClock), |c: &mut Config| {
        let say = serde_json::json!({"name": "say", "description": "Says it back.",
            "program": "/bin/echo", "scopes": ["team:say"]});
        c.tools.command.push(serde_json::from_value(say).unwrap());
        // No `*` group here: the admins' grant names one tool.
        let grants = &mut c.portal.as_mut().unwrap().grants;
        let admins = grants.iter_mut().find(|g| g.group == "admins").unwrap();
        admins.scopes = vec!["tools:teamgate_info".into()];
    })
    .await;
    let bob = Browser::sign_in(&app, "bob").await;
    let page = format!("{}/portal/admin/grants", app.base());
    assert_eq!(bob.get(&page).await.status(), StatusCode::FORBIDDEN);

    let cat = Browser::sign_in(&app, "cat").await;
    let response = cat.get(&page).await;
    assert_eq!(response.status(), StatusCode::OK);
    let html = response.text().await.unwrap();
    let row = |group: &str| {
        let start = html
            .find(&format!("data-group=\"{group}\""))
            .unwrap_or_else(|| panic!("a row for {group}: {html}"));
        html[start..].split("</tr>").next().unwrap().to_owned()
    };
    // dev grants tools:*: every tool but the one that declares team:say.
    let dev = row("dev");
    assert!(dev.contains(">test_simple_text<"), "{dev}");
    assert!(!dev.contains(">say<"), "{dev}");
    // ops and admins name one tool each; guests none.
    let ops = row("ops");
    assert!(
        ops.contains("1 of") && ops.contains(">test_simple_text<"),
        "{ops}"
    );
    let admins = row("admins");
    assert!(
        admins.contains("1 of") && admins.contains(">teamgate_info<"),
        "{admins}"
    );
    assert!(row("guests").contains("0 of"));
    // say needs team:say, which no group grants: listed with what it needs.
    let unreached = html.split("id=\"unreached\"").nth(1).expect("the table");
    assert!(
        unreached.contains(">say<") && unreached.contains(">team:say<"),
        "{unreached}"
    );
    assert!(!unreached.contains(">test_simple_text<"), "{unreached}");
}
