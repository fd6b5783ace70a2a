//! teamgate_info, the operator tables, reload summaries and client setups.

use super::*;

const WATCHLESS: &str = "[reload]\nwatch = false\n";

#[tokio::test]
async fn teamgate_info_counts_what_the_caller_may_use_and_shows_its_scopes() {
    let served = Logged::start(WATCHLESS);
    let everything = served.token("alice", &[]);
    let (client, _) = sdk::connect_as(&served.url, Some(&everything), None).await;
    let info = call(&client, "teamgate_info", json!({})).await["structuredContent"].clone();
    let tools = client.list_all_tools().await.unwrap().len();
    let resources = client.list_all_resources().await.unwrap().len();
    let prompts = client.list_all_prompts().await.unwrap().len();
    assert!(tools >= 2 && resources >= 1 && prompts >= 1, "{info}");
    assert_eq!(
        info["offered"],
        json!({"tools": tools, "resources": resources, "prompts": prompts})
    );
    assert_eq!(info["scopes"], json!(["*"]));
    client.cancel().await.unwrap();

    let narrow = served.token("bob", &["tools:teamgate_info"]);
    let (client, _) = sdk::connect_as(&served.url, Some(&narrow), None).await;
    let info = call(&client, "teamgate_info", json!({})).await["structuredContent"].clone();
    assert_eq!(
        info["offered"],
        json!({"tools": 1, "resources": 0, "prompts": 0})
    );
    assert_eq!(info["scopes"], json!(["tools:teamgate_info"]));
    assert_eq!(info["user"], "bob");
    client.cancel().await.unwrap();
}

#[test]
fn token_create_refuses_a_scope_that_names_nothing_declared() {
    let served = Logged::start(WATCHLESS);
    let output = served.admin(&[
        "token",
        "create",
        "--user",
        "carol",
        "--scope",
        "tools:teamgate_inf",
    ]);
    let error = stderr(&output);
    assert!(!output.status.success());
    assert!(
        error.contains("tools:teamgate_inf")
            && error.contains("tools:teamgate_info")
            && error.contains("--force"),
        "{error}"
    );
    let listed = served.admin(&["token", "list", "--json"]);
    let rows: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(rows, json!([]), "nothing was created");

    for scopes in [
        &["tools:*"][..],
        &["*"],
        &[
            "tools:teamgate_info",
            "resources:read",
            "prompts:teamgate_guide",
        ],
    ] {
        served.token("carol", scopes);
    }
    let forced = [
        "token",
        "create",
        "--user",
        "carol",
        "--scope",
        "tools:later",
        "--force",
    ];
    let output = served.admin(&forced);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("tools:later"),
        "a warning names it"
    );
}

#[test]
fn token_create_accepts_scopes_of_upstream_tools_it_cannot_list_offline() {
    let config = format!(
        "{WATCHLESS}[[upstreams]]\nname = \"gh\"\ncommand = \"/nonexistent/mcp\"\n\
         [upstreams.tools.create_issue]\nrename = \"file_issue\"\nscopes = [\"team:issues\"]\n"
    );
    let served = Logged::start(&config);
    for scopes in [
        &["tools:gh_search"][..],
        &["tools:file_issue"],
        &["team:issues"],
    ] {
        served.token("dave", scopes);
    }
    let output = served.admin(&[
        "token",
        "create",
        "--user",
        "dave",
        "--scope",
        "tools:hub_search",
    ]);
    assert!(!output.status.success(), "not under any upstream's prefix");
}

/// No cell of a table runs into the next column (at the header's offsets).
fn assert_table(text: &str, header: &[&str]) {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let starts: Vec<usize> = header.iter().map(|h| first.find(h).expect(h)).collect();
    assert_eq!(starts[0], 0, "{text}");
    for line in lines {
        for &start in &starts[1..] {
            let before: String = line.chars().take(start).collect();
            assert!(
                before.ends_with("  "),
                "the cell before column {start} runs into it in {line:?}:\n{text}"
            );
        }
    }
}

#[tokio::test]
async fn token_and_audit_tables_have_headers_and_cut_long_values() {
    let served = Logged::start(WATCHLESS);
    let long_user = format!("member-{}", "x".repeat(80));
    let token = served.token(&long_user, &[]);
    let label = format!("laptop\n{}", "y".repeat(200));
    let output = served.admin(&["token", "create", "--user", "dave", "--name", &label]);
    assert!(output.status.success(), "{}", stderr(&output));

    let listed = String::from_utf8(served.admin(&["token", "list"]).stdout).unwrap();
    assert_eq!(listed.lines().count(), 3, "{listed}");
    assert_table(
        &listed,
        &[
            "ID",
            "USER",
            "LABEL",
            "SCOPES",
            "EXPIRES",
            "LAST USED",
            "STATE",
        ],
    );
    assert!(
        listed.contains('…') && !listed.contains(&long_user),
        "{listed}"
    );

    let (client, _) = sdk::connect_as(&served.url, Some(&token), None).await;
    call(&client, "teamgate_info", json!({})).await;
    client.cancel().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let audit = loop {
        let audit = String::from_utf8(served.admin(&["audit", "tail"]).stdout).unwrap();
        if audit.contains("teamgate_info") || Instant::now() > deadline {
            break audit;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(audit.contains("teamgate_info"), "{audit}");
    assert_table(
        &audit,
        &[
            "TIME", "USER", "METHOD", "TARGET", "OUTCOME", "LATENCY", "TRACE",
        ],
    );
    assert!(
        audit.contains("member-xxx") && audit.contains('…'),
        "{audit}"
    );
}

#[test]
fn a_reload_logs_one_line_saying_what_changed() {
    let served = Logged::start(WATCHLESS);
    let tool =
        "[[tools.command]]\nname = \"hup\"\ndescription = \"echo\"\nprogram = \"/bin/echo\"\n";
    write(
        &served.dir.path().join("team.toml"),
        &format!("{WATCHLESS}{tool}"),
    );
    let pid = nix::unistd::Pid::from_raw(served.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
    let line = served.wait_for("configuration reloaded");
    assert!(line.contains("tools +hup"), "{line}");
    assert!(!line.contains("prompts"), "nothing else changed: {line}");
}

#[test]
fn the_client_setups_send_the_authorization_header() {
    let guide = std::fs::read_to_string(repo_path("docs/connecting-clients.md")).unwrap();
    let sections: Vec<&str> = guide.split("\n## ").skip(1).collect();
    let clients = [
        "Claude Code",
        "VS Code",
        "Cursor",
        "MCP Inspector",
        "TypeScript SDK",
        "Python SDK",
    ];
    for client in clients {
        let section = sections
            .iter()
            .find(|s| s.starts_with(client))
            .unwrap_or_else(|| panic!("docs/connecting-clients.md has a {client} section"));
        assert!(section.contains("Authorization"), "{client}: {section}");
    }
    let part = std::fs::read_to_string(repo_path("docs/clients.md")).unwrap();
    for client in clients {
        assert!(part.contains(client), "docs/clients.md names {client}");
    }
    assert!(part.contains("Node 22.19"), "{part}");
    assert!(
        part.contains("http_client=") && part.contains("Authorization"),
        "{part}"
    );
    // README's Quick start holds the Python script (tests/api/readme_python.rs runs it).
    let readme = std::fs::read_to_string(repo_path("README.md")).unwrap();
    assert!(
        readme.contains("http_client=http"),
        "README's Python script"
    );
}

/// `token create --toolset` limits a token to a declared toolset's endpoint
/// (scope `toolset:<name>`); an undeclared name is refused, naming those
/// declared (issue 60).
#[test]
fn token_create_limits_a_token_to_a_declared_toolset() {
    let config =
        format!("{WATCHLESS}\n[[toolsets]]\nname = \"oncall\"\ninclude = [\"teamgate_info\"]\n");
    let served = Logged::start(&config);
    let args = ["token", "create", "--user", "olga", "--toolset", "oncall"];
    let output = served.admin(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    let listed = served.admin(&["token", "list", "--json"]);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let scopes = &listed[0]["scopes"];
    assert!(
        scopes
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "toolset:oncall"),
        "{listed}"
    );
    let output = served.admin(&["token", "create", "--user", "olga", "--toolset", "nope"]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(
        error.contains("--toolset nope") && error.contains("oncall"),
        "{error}"
    );
}
