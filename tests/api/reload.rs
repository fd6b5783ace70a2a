//! Hot reload: a new configuration swaps the capabilities atomically and
//! clients hear `list_changed`; an invalid one is refused and the old one
//! keeps serving. Triggered directly, by a file change, and by SIGHUP. Its
//! one line names what changed, and the settings only a restart applies.

use std::{sync::Arc, time::Duration};

use serde_json::json;
use teamgate::{
    Config,
    app::reload,
    config::{AuthMode, ConfigSources, DatabaseUrl, Secret},
    store::SystemClock,
};

use crate::{
    binary,
    command_tools::command,
    helpers::{repo_path, spawn_app, spawn_app_on, test_config},
    portal_idp::portal_config,
    sdk::{self, Heard, call, hear},
};

fn echo_tool(name: &str) -> teamgate::config::CommandToolConfig {
    command(json!({"name": name, "description": "echo", "program": "/bin/echo", "args": [name]}))
}

async fn tool_names(client: &sdk::Client) -> Vec<String> {
    let tools = client.list_all_tools().await.unwrap();
    tools.into_iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test]
async fn a_reload_adds_a_tool_and_a_broken_one_is_refused() {
    let app = spawn_app().await;
    let (client, mut heard) = sdk::connect(&app.url, None).await;
    assert!(!tool_names(&client).await.contains(&"added".to_owned()));

    let mut config = test_config();
    config.tools.command = vec![echo_tool("added")];
    app.reloader
        .reload(&config)
        .expect("a valid configuration reloads");
    hear(&mut heard, &Heard::ToolsChanged).await;
    assert!(tool_names(&client).await.contains(&"added".to_owned()));
    let result = call(&client, "added", json!({})).await;
    assert_eq!(result["structuredContent"]["stdout"], "added\n");

    // A configuration that cannot be built is refused whole.
    let mut broken = test_config();
    broken.tools.command = vec![echo_tool("other")];
    broken.tools.command[0].secret_env = vec!["TEAMGATE_TEST_UNSET_VARIABLE".into()];
    let error = app.reloader.reload(&broken).unwrap_err().to_string();
    assert!(error.contains("TEAMGATE_TEST_UNSET_VARIABLE"), "{error}");
    let names = tool_names(&client).await;
    assert!(names.contains(&"added".to_owned()) && !names.contains(&"other".to_owned()));
    client.cancel().await.unwrap();
}

/// Replaces `file` whole, as editors and config managers do (write, rename).
fn replace(file: &std::path::Path, text: &str) {
    let next = file.with_extension("next");
    std::fs::write(&next, text).unwrap();
    std::fs::rename(&next, file).unwrap();
}

#[tokio::test]
async fn a_changed_configuration_file_reloads_and_an_invalid_edit_is_refused() {
    let app = spawn_app().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("team.toml");
    let conformance = std::fs::read_to_string(repo_path("config/conformance.toml")).unwrap();
    replace(&file, &conformance);
    let sources = ConfigSources::files_only(vec![file.clone()]);
    let _watcher =
        reload::watch(app.reloader.clone(), sources, Duration::from_millis(100)).unwrap();
    let (client, mut heard) = sdk::connect(&app.url, None).await;
    let tools_before = tool_names(&client).await;

    // An edit that does not load changes nothing.
    replace(
        &file,
        &format!("{conformance}\n[server]\nlisten_port = 1\n"),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    replace(
        &file,
        &format!("{conformance}\n[[prompts]]\nname = \"added_prompt\"\ntemplate = \"Hello\"\n"),
    );
    hear(&mut heard, &Heard::PromptsChanged).await;
    let prompts = client.list_all_prompts().await.unwrap();
    assert!(prompts.iter().any(|p| p.name == "added_prompt"));
    assert_eq!(tool_names(&client).await, tools_before, "the tools stay");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn sighup_reloads_the_running_binary() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("team.toml");
    std::fs::write(&file, "[reload]\nwatch = false\ndebounce = \"50ms\"\n").unwrap();
    let served = binary::serve(&file, &[]);
    let token = served.token("alice", &[]);
    let (client, mut heard) = sdk::connect_as(&served.url, Some(&token), None).await;
    assert!(!tool_names(&client).await.contains(&"hup".to_owned()));
    std::fs::write(
        &file,
        "[reload]\nwatch = false\ndebounce = \"50ms\"\n[[tools.command]]\nname = \"hup\"\ndescription = \"echo\"\nprogram = \"/bin/echo\"\n",
    )
    .unwrap();
    served.signal(nix::sys::signal::Signal::SIGHUP);
    hear(&mut heard, &Heard::ToolsChanged).await;
    assert!(tool_names(&client).await.contains(&"hup".to_owned()));
    client.cancel().await.unwrap();
}

/// The configuration `spawn_app_on` started `app` with, plus `adjust`.
fn as_started(app: &crate::helpers::TestApp, adjust: impl Fn(&mut Config)) -> Config {
    let mut config = test_config();
    config.server.listen = app.addr;
    for docs in &mut config.sources.docs {
        docs.watch = false;
    }
    config.store.url = DatabaseUrl::new(app.store_url());
    config.auth.mode = AuthMode::None;
    adjust(&mut config);
    config
}

/// Issue 63 item 5: the reload line names the upstreams added and removed,
/// and portal settings, wired once at start, are said to wait for a restart
/// instead of "configuration reloaded" over a portal that kept the old ones.
#[tokio::test]
async fn the_reload_line_names_upstreams_and_the_settings_waiting_for_a_restart() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let portal = move |c: &mut Config| {
        c.server.public_url = format!("http://{addr}/mcp");
        c.portal = Some(portal_config("http://127.0.0.1:9"));
        c.credentials.keys = vec![Secret::new("reload-test-key-of-at-least-32-characters")];
    };
    let app = spawn_app_on(listener, portal, Arc::new(SystemClock)).await;
    let unchanged = app.reloader.reload(&as_started(&app, portal)).unwrap();
    assert_eq!(unchanged, "no tool, resource or prompt added or removed");

    let upstream = |c: &mut Config| {
        portal(c);
        c.upstreams =
            vec![serde_json::from_value(json!({"name": "extra", "command": "true"})).unwrap()];
    };
    let line = app.reloader.reload(&as_started(&app, upstream)).unwrap();
    assert!(line.starts_with("upstreams +extra; "), "{line}");
    assert!(!line.contains("restart"), "{line}");

    let issuer = |c: &mut Config| {
        portal(c);
        c.portal.as_mut().unwrap().issuer = "http://127.0.0.1:10".into();
    };
    let line = app.reloader.reload(&as_started(&app, issuer)).unwrap();
    assert!(line.starts_with("upstreams -extra; "), "{line}");
    assert!(
        line.ends_with("; portal settings changed: restart to apply"),
        "{line}"
    );
    // Still not applied on the next reload; a secret is compared by value.
    let secret = |c: &mut Config| {
        issuer(c);
        c.portal.as_mut().unwrap().client_secret = Secret::new("another-secret");
        c.server.max_body_bytes += 1;
    };
    let line = app.reloader.reload(&as_started(&app, secret)).unwrap();
    assert!(
        line.ends_with("; server, portal settings changed: restart to apply"),
        "{line}"
    );
    assert!(!line.contains("another-secret"), "{line}");
    let back = app.reloader.reload(&as_started(&app, portal)).unwrap();
    assert!(!back.contains("restart"), "{back}");
    // A slot: tools use it at once, the portal's Connections page after a restart.
    let slot = |c: &mut Config| {
        portal(c);
        let jira = json!({"name": "jira", "description": "your Jira API token"});
        c.credentials.slots = vec![serde_json::from_value(jira).unwrap()];
    };
    let line = app.reloader.reload(&as_started(&app, slot)).unwrap();
    assert!(
        line.ends_with("; credentials.slots settings changed: restart to apply"),
        "{line}"
    );
}
