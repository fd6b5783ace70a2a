//! Configuration: every shipped file loads through the code `serve` uses;
//! mistakes stop start-up naming the key and its source; secrets stay masked.

use std::process::Command;

use teamgate::config::{ConfigError, ConfigSources};

use crate::helpers::repo_path;

fn toml_files(dir: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![repo_path(dir)];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for path in entries.flatten().map(|e| e.path()) {
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "toml") {
                out.push(path);
            }
        }
    }
    out
}

#[test]
fn every_shipped_configuration_file_loads() {
    let files: Vec<_> = toml_files("config")
        .into_iter()
        .chain(toml_files("deploy"))
        .collect();
    assert!(
        files.len() >= 2,
        "config/default.toml and config/conformance.toml at least"
    );
    let examples: Vec<_> = files
        .iter()
        .filter(|f| f.starts_with(repo_path("config/examples")))
        .collect();
    for kind in [
        "http-tools",
        "command-tools",
        "docs-source",
        "files-source",
        "prompts",
        "upstreams",
        "portal",
        "credentials",
        "openapi",
        "sql",
    ] {
        assert!(
            examples.iter().any(|f| f.ends_with(format!("{kind}.toml"))),
            "config/examples/{kind}.toml exists"
        );
    }
    for file in files {
        ConfigSources::files_only(vec![file.clone()])
            .load()
            .unwrap_or_else(|e| panic!("{} does not load: {e}", file.display()));
    }
}

#[test]
fn the_embedded_defaults_are_config_default_toml() {
    let on_disk = std::fs::read_to_string(repo_path("config/default.toml")).unwrap();
    assert_eq!(on_disk, teamgate::config::EMBEDDED_DEFAULT);
    let config = ConfigSources::files_only(vec![]).load().unwrap();
    assert_eq!(config.server.listen.to_string(), "127.0.0.1:8080");
    assert!(
        !config.providers.conformance.enabled,
        "fixtures are never on by default"
    );
}

pub(crate) fn load_snippet(snippet: &str) -> Result<teamgate::Config, ConfigError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overlay.toml");
    std::fs::write(&path, snippet).unwrap();
    ConfigSources::files_only(vec![path]).load()
}

#[test]
fn unknown_keys_and_bad_values_name_the_key_and_the_file() {
    let error = load_snippet("[server]\nlisten_port = 80\n")
        .unwrap_err()
        .to_string();
    assert!(error.contains("listen_port"), "{error}");
    assert!(error.contains("overlay.toml"), "{error}");

    let error = load_snippet("[server]\nlisten = \"not an address\"\n")
        .unwrap_err()
        .to_string();
    assert!(error.contains("server.listen"), "{error}");
    assert!(error.contains("overlay.toml"), "{error}");

    let error = load_snippet("[mcp]\npath = \"mcp\"\n")
        .unwrap_err()
        .to_string();
    assert!(error.contains("mcp.path"), "{error}");

    let error = load_snippet("[mcp]\nrequest_state_keys = [\"short\"]\n")
        .unwrap_err()
        .to_string();
    assert!(error.contains("request_state_keys"), "{error}");
    assert!(
        !error.contains("short"),
        "the secret is not echoed: {error}"
    );

    // A mistyped HTTP method is refused, not sent as an extension method
    // (issue 63 item 4).
    let error = load_snippet(
        "[tools]\nhttp_allowlist = [\"https://api.example.com/\"]\n[[tools.http]]\nname = \"t\"\n\
         description = \"d\"\nurl = \"https://api.example.com/x\"\nmethod = \"GETT\"\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("tools.http[0].method") && error.contains("GET, POST"),
        "{error}"
    );
}

#[test]
fn declared_capabilities_are_checked_naming_the_key() {
    let error = load_snippet(
        "[[sources.docs]]\nname = \"a\"\npaths = [\"docs\"]\n[[sources.docs]]\nname = \"b\"\npaths = [\"docs\"]\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("sources.docs[1].tool") && error.contains("sources.docs[0].tool"),
        "{error}"
    );

    let error = load_snippet("[[tools.command]]\nname = \"x\"\ndescription = \"d\"\nprogram = \"/bin/echo\"\ncache_ttl = \"1s\"\n")
        .unwrap_err()
        .to_string();
    assert!(error.contains("tools.command[0].cache_ttl"), "{error}");

    let error = load_snippet("[[tools.command]]\nname = \"x\"\ndescription = \"d\"\nprogram = \"/bin/echo\"\nfrom_caller = { who = \"user\" }\n")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("tools.command[0].from_caller.who"),
        "{error}"
    );

    let error = load_snippet("[[tools.command]]\nname = \"x\"\ndescription = \"d\"\nprogram = \"/bin/echo\"\nshell = true\n")
        .unwrap_err()
        .to_string();
    assert!(error.contains("shell"), "unknown keys are refused: {error}");

    let error = load_snippet("[[prompts]]\nname = \"p\"\ntemplate = \"t\"\narguments = [{ name = \"a\", complete_from = \"docs:nope\" }]\n")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("prompts[0].arguments[0].complete_from"),
        "{error}"
    );
}

#[test]
fn later_files_win() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.toml");
    let b = dir.path().join("b.toml");
    std::fs::write(&a, "[server]\nlisten = \"127.0.0.1:1111\"\n").unwrap();
    std::fs::write(&b, "[server]\nlisten = \"127.0.0.1:2222\"\n").unwrap();
    let config = ConfigSources::files_only(vec![a, b]).load().unwrap();
    assert_eq!(config.server.listen.port(), 2222);
    let missing = ConfigSources::files_only(vec![dir.path().join("nope.toml")]).load();
    assert!(missing.unwrap_err().to_string().contains("nope.toml"));
}

fn check_config(envs: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_teamgate"));
    command.arg("check-config").current_dir(repo_path(""));
    for (k, v) in envs {
        command.env(k, v);
    }
    command.output().expect("teamgate runs")
}

#[test]
fn environment_overrides_apply_and_secrets_are_masked() {
    let secret = format!("state-key-{}", "k".repeat(30));
    let keys = format!("[\"{secret}\"]");
    let output = check_config(&[
        ("TEAMGATE__SERVER__LISTEN", "127.0.0.1:9000"),
        ("TEAMGATE__MCP__REQUEST_STATE_KEYS", &keys),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(printed.contains("127.0.0.1:9000"), "{printed}");
    assert!(printed.contains("<redacted>"), "{printed}");
    assert!(!printed.contains(&secret), "the key is never printed");

    let output = check_config(&[("TEAMGATE__SERVER__LISTN", "127.0.0.1:9000")]);
    assert!(!output.status.success());
    let error = String::from_utf8_lossy(&output.stderr);
    assert!(
        error.contains("listn") && error.contains("TEAMGATE__SERVER__LISTN"),
        "{error}"
    );
}

#[tokio::test]
async fn examples_that_need_no_secrets_build_a_server() {
    for kind in ["docs-source", "files-source", "prompts"] {
        let file = repo_path(&format!("config/examples/{kind}.toml"));
        let mut config = ConfigSources::files_only(vec![file]).load().unwrap();
        for docs in &mut config.sources.docs {
            docs.watch = false;
        }
        let (app, _store) = crate::helpers::build_app(config)
            .await
            .unwrap_or_else(|e| panic!("{kind}: {e:#}"));
        assert!(!app.registry().tools().is_empty(), "{kind}");
    }
    // The HTTP example names its secret; without it the build says which.
    let file = repo_path("config/examples/http-tools.toml");
    let config = ConfigSources::files_only(vec![file]).load().unwrap();
    let error = crate::helpers::build_app(config)
        .await
        .err()
        .expect("needs GITHUB_TOKEN");
    assert!(format!("{error:#}").contains("GITHUB_TOKEN"), "{error:#}");
}

/// Every leaf key of a TOML table, dotted, with its value as TOML writes it.
fn leaf_keys(prefix: &str, table: &toml::Table, out: &mut Vec<(String, String)>) {
    for (key, value) in table {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match value {
            toml::Value::Table(inner) => leaf_keys(&path, inner, out),
            other => out.push((path, other.to_string())),
        }
    }
}

#[test]
fn the_configuration_reference_lists_every_key_with_its_default() {
    let defaults: toml::Table = teamgate::config::EMBEDDED_DEFAULT.parse().unwrap();
    let mut keys = Vec::new();
    leaf_keys("", &defaults, &mut keys);
    assert!(keys.len() > 30, "{keys:?}");
    let page = std::fs::read_to_string(repo_path("docs/configuration.md")).unwrap();
    let reference = &page[page
        .find("## Configuration reference")
        .expect("a Configuration reference section")..];
    for (key, default) in keys {
        let row = format!("| `{key}` | ");
        let Some(at) = reference.find(&row) else {
            panic!("docs/configuration.md's reference does not list `{key}`");
        };
        // Long defaults are shortened in the table; the others must match the file.
        if default.chars().count() <= 40 {
            let cell = format!("{row}`{default}` |");
            assert!(
                reference[at..].starts_with(&cell),
                "docs/configuration.md gives another default for `{key}`: expected {cell}"
            );
        }
    }
}

#[test]
fn a_member_slot_must_be_declared_and_allowed() {
    let tool = |header: &str| {
        format!(
            "[tools]\nhttp_allowlist = [\"https://api.example.com/\"]\n[[tools.http]]\n\
             name = \"t\"\ndescription = \"d\"\nurl = \"https://api.example.com/x\"\n\
             headers = {{ Authorization = \"{header}\" }}\n"
        )
    };
    let error = load_snippet(&tool("Bearer ${user:gh}"))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("tools.http[0].headers.Authorization")
            && error.contains("[[credentials.slots]]"),
        "{error}"
    );
    let declared = "[[credentials.slots]]\nname = \"gh\"\ntools = [\"other\"]\n";
    let error = load_snippet(&(tool("Bearer ${user:gh}") + declared))
        .unwrap_err()
        .to_string();
    assert!(error.contains("does not list this tool"), "{error}");
    let allowed = "[[credentials.slots]]\nname = \"gh\"\n";
    let config = load_snippet(&(tool("Bearer ${user:gh}") + allowed)).unwrap();
    assert!(
        config.credential_keys_problem().is_some(),
        "slots need keys to serve"
    );
    let error = load_snippet("[credentials]\nkeys = [\"short-key-value\"]\n")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("credentials.keys[0]") && !error.contains("short-key-value"),
        "{error}"
    );
}

#[test]
fn upstream_oauth_configuration_rules() {
    let upstream = |extra: serde_json::Value| -> teamgate::config::UpstreamConfig {
        let mut base =
            serde_json::json!({"name": "py", "url": "http://127.0.0.1:9/mcp", "auth": "oauth"});
        for (k, v) in extra.as_object().unwrap() {
            base[k] = v.clone();
        }
        serde_json::from_value(base).unwrap()
    };
    let mut config = crate::helpers::test_config();
    config.tools.http_allowlist = vec!["http://127.0.0.1:9/".into()];
    config.upstreams = vec![upstream(serde_json::json!({}))];
    assert!(config.validate().is_ok());
    let problem = config.oauth_upstreams_problem().expect("needs the portal");
    assert!(problem.contains("upstreams[0].auth"), "{problem}");
    assert!(config.credential_keys_problem().is_some(), "needs keys");
    config.portal = Some(crate::portal_idp::portal_config("http://127.0.0.1:9"));
    assert!(config.oauth_upstreams_problem().is_none());
    let refused = [
        serde_json::json!({"headers": {"authorization": "Bearer x"}}),
        serde_json::json!({"url": "", "command": "true"}),
    ];
    for extra in refused {
        config.upstreams = vec![upstream(extra.clone())];
        assert!(config.validate().is_err(), "{extra}");
    }
    let mut plain = upstream(serde_json::json!({"oauth": {"scopes": ["mcp"]}}));
    plain.auth = teamgate::config::UpstreamAuth::None;
    config.upstreams = vec![plain.clone()];
    assert!(
        config.validate().is_err(),
        "oauth keys without auth = oauth"
    );
    // Unset, auth is "auto": a url upstream without an Authorization header
    // may want members' OAuth, and reads the oauth keys for it.
    let auto: teamgate::config::UpstreamConfig =
        serde_json::from_value(serde_json::json!({"name": "py", "url": "http://127.0.0.1:9/mcp"}))
            .unwrap();
    assert_eq!(auto.auth, teamgate::config::UpstreamAuth::Auto);
    assert!(auto.may_detect_oauth() && !plain.may_detect_oauth());
    plain.auth = teamgate::config::UpstreamAuth::Auto;
    config.upstreams = vec![plain.clone()];
    config.portal = None;
    let validated = config.validate();
    assert!(
        validated.is_ok(),
        "oauth keys with auth = auto: {validated:?}"
    );
    assert!(
        config.oauth_upstreams_problem().is_none(),
        "found at run time"
    );
    plain
        .headers
        .insert("Authorization".into(), "Bearer ${TOKEN}".into());
    assert!(!plain.may_detect_oauth(), "a shared credential was chosen");
    config.upstreams = vec![plain];
    assert!(config.validate().is_err(), "oauth keys that are never read");
}

#[test]
fn the_testing_loopback_cimd_switch_is_refused_off_loopback() {
    let portal = std::fs::read_to_string(repo_path("config/examples/portal.toml")).unwrap();
    let snippet = format!("{portal}\ncimd_testing_loopback = true\n");
    let last_table = portal
        .rfind("\n[")
        .map(|i| &portal[i + 1..])
        .unwrap_or_default();
    assert!(
        last_table.starts_with("[authorization_server]"),
        "the switch lands in [authorization_server]"
    );
    let error = load_snippet(&snippet).unwrap_err().to_string();
    assert!(
        error.contains("authorization_server.cimd_testing_loopback"),
        "{error}"
    );
    let local = snippet.replace("https://mcp.example.com/mcp", "http://127.0.0.1:8080/mcp");
    let config = load_snippet(&local).unwrap_or_else(|e| panic!("{e}"));
    assert!(config.authorization_server.unwrap().cimd_testing_loopback);
}
