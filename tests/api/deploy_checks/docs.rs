//! What a newcomer copies from the documentation works as copied (issue 51):
//! every `npx` command of an official MCP package pins its major version, and
//! docs/operations.md's nginx excerpt is the tested `deploy/nginx/teamgate.conf`, which
//! proxies every path (portal, authorization server, metadata), not `/mcp` alone.

use std::path::Path;

use crate::helpers::repo_path;

/// Text files a user copies commands from: README, docs/, deploy/, and the
/// portal's setup snippets (Rust source that renders them).
fn copied_from() -> Vec<(String, String)> {
    let mut files = vec![
        "README.md".to_owned(),
        "deploy/README.md".to_owned(),
        "src/portal/setup.rs".to_owned(),
    ];
    for dir in ["docs"] {
        for entry in std::fs::read_dir(repo_path(dir)).expect("docs/ exists") {
            let path = entry.expect("a docs entry").path();
            if path.extension().is_some_and(|ext| ext == "md") {
                let relative = path.strip_prefix(repo_path("")).expect("under the repo");
                files.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    files
        .into_iter()
        .filter(|file| Path::new(&repo_path(file)).exists())
        .map(|file| {
            let text = std::fs::read_to_string(repo_path(&file)).expect("readable");
            (file, text)
        })
        .collect()
}

#[test]
fn every_npx_command_of_an_mcp_package_pins_its_major_version() {
    let mut unpinned = Vec::new();
    let mut seen = 0;
    for (file, text) in copied_from() {
        for (number, line) in text.lines().enumerate() {
            let mut rest = line;
            while let Some(at) = rest.find("npx @modelcontextprotocol/") {
                let package = rest[at + 4..]
                    .split(|c: char| c.is_whitespace() || c == '`' || c == '"')
                    .next()
                    .unwrap_or_default();
                seen += 1;
                // "@scope/name@2": a second '@' names the version.
                if package.matches('@').count() < 2 {
                    unpinned.push(format!("{file}:{}: {package}", number + 1));
                }
                rest = &rest[at + 4..];
            }
        }
    }
    assert!(seen >= 4, "the Inspector commands were found ({seen})");
    assert!(
        unpinned.is_empty(),
        "npx picks an old major on old Node (Inspector 0.15 on Node 20): pin it in {unpinned:#?}"
    );
}

#[test]
fn the_nginx_excerpt_is_the_tested_configuration_and_proxies_every_path() {
    let page = std::fs::read_to_string(repo_path("docs/operations.md")).expect("operations page");
    let conf =
        std::fs::read_to_string(repo_path("deploy/nginx/teamgate.conf")).expect("nginx conf");
    let start = page.find("```nginx").expect("an nginx block");
    let block = &page[start + 8..];
    let block = &block[..block.find("```").expect("the block ends")];
    assert!(
        block.contains("location / {"),
        "the excerpt proxies every path:\n{block}"
    );
    assert!(!block.contains("location /mcp"), "not /mcp alone:\n{block}");
    let directives = |text: &str| -> Vec<String> {
        text.lines()
            .map(|line| line.split('#').next().unwrap_or_default().trim().to_owned())
            .filter(|line| !line.is_empty())
            .collect()
    };
    let tested = directives(&conf);
    for line in directives(block) {
        let one_line = line.starts_with("location ") && line.ends_with('}');
        let found = if one_line {
            // `location = /metrics { return 404; }` is two lines in the file.
            let (head, body) = line.split_once('{').expect("a block");
            tested
                .iter()
                .any(|t| t == &format!("{}{{", head.trim_end()) || t.starts_with(head.trim_end()))
                && tested
                    .iter()
                    .any(|t| t == body.trim_end_matches('}').trim())
        } else {
            tested.iter().any(|t| t == &line)
        };
        assert!(
            found,
            "the nginx line `{line}` of docs/operations.md is not in deploy/nginx/teamgate.conf"
        );
    }
}

/// `scripts/build-image.sh` with docker and no daemon says so, instead of
/// blaming docker.io (issue 63 item 6). Runs only where docker is
/// installed and its daemon does not answer, so it never starts a build.
#[test]
fn build_image_names_a_missing_docker_daemon() {
    let Ok(info) = std::process::Command::new("docker").arg("info").output() else {
        eprintln!("SKIP: docker is not installed");
        return;
    };
    if info.status.success() {
        eprintln!("SKIP: docker's daemon answers; the script would build");
        return;
    }
    let out = std::process::Command::new("bash")
        .arg(repo_path("scripts/build-image.sh"))
        .env("BUILDER", "docker")
        .output()
        .expect("the script runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("daemon does not answer"), "{stderr}");
    assert!(!stderr.contains("cannot be pulled"), "{stderr}");
}
