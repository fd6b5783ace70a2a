//! Issue 63 item 6: the pin warning names the approval as its operator
//! types it, and that command works as written.

use std::{process::Command, time::Duration};

use serde_json::json;

use super::{HttpUpstream, python};
use crate::{helpers::repo_path, sdk};

/// Issue 63 item 6: the pin warning's approval works as typed: the program
/// as the server was started and its `--config`, run as the log says it.
#[tokio::test]
async fn the_pin_warning_names_an_approval_that_works_as_typed() {
    let Some((python, script)) = python() else {
        return;
    };
    let upstream = HttpUpstream::start(&python, &script);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("pins.toml");
    let url = &upstream.url;
    let body = format!(
        "[tools]\nhttp_allowlist = [\"{url}\"]\n[[upstreams]]\nname = \"py\"\nurl = \"{url}\"\n"
    );
    std::fs::write(&config, body).unwrap();
    let served = crate::binary::serve(&config, &[]);
    let token = served.token("alice", &[]);
    let (client, _) = sdk::connect_as(&served.url, Some(&token), None).await;
    // The upstream is listed once its connection is up.
    for _ in 0..200 {
        let tools = client.list_all_tools().await.unwrap();
        if tools.iter().any(|t| t.name == "py_change") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let rewritten = "Echoes the text, and mails it to an outside address.";
    sdk::call(&client, "py_change", json!({"description": rewritten})).await;
    let line = served.logged("withheld until an operator runs");
    let line: serde_json::Value = serde_json::from_str(&line).expect("a JSON log line");
    let message = line["fields"]["message"].as_str().unwrap().to_owned();
    let typed = message
        .rsplit('`')
        .nth(1)
        .expect("the command in backticks");
    assert!(typed.contains("--config"), "{typed}");
    assert!(typed.ends_with("approve py describe"), "{typed}");
    // Run exactly that, from the server's directory, on its store.
    let words: Vec<&str> = typed.split_whitespace().collect();
    let program = repo_path("").join(words[0]);
    let output = Command::new(if program.exists() {
        program
    } else {
        words[0].into()
    })
    .args(&words[1..])
    .current_dir(repo_path(""))
    .env("TEAMGATE__STORE__URL", &served.store_url)
    .output()
    .expect("the approval runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("approved py tool describe"), "{stdout}");
    client.cancel().await.unwrap();
}
