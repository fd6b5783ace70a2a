//! Item 5: configuration errors name file, line, column and key, never the
//! value of a secret key, in `check-config` and `serve` alike.

use std::time::Duration;

use teamgate::config::ConfigSources;

use super::*;

const SECRET: &str = "S3CR3T-9f8e7d6c5b4a";

/// The error `check-config` and `serve` print for `config`, asserting
/// both refuse it and say the same.
fn refused(config: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("team.toml"), config);
    let loaded = ConfigSources::files_only(vec![dir.path().join("team.toml")])
        .load()
        .expect_err("the configuration is refused")
        .to_string();
    for args in [
        &["check-config", "--config", "team.toml"][..],
        &["serve", "--listen", "127.0.0.1:0", "--config", "team.toml"][..],
    ] {
        let output = run_for(dir.path(), args, Duration::from_secs(20)).expect("refused at once");
        let error = stderr(&output);
        assert!(!output.status.success(), "{args:?}: {error}");
        for secret in [SECRET, "987654321"] {
            assert!(
                !error.contains(secret),
                "{args:?} printed {secret}: {error}"
            );
        }
    }
    for secret in [SECRET, "987654321"] {
        assert!(!loaded.contains(secret), "{secret} in {loaded}");
    }
    loaded
}

#[test]
fn a_toml_syntax_error_names_the_place_not_the_line() {
    let error = refused(&format!(
        "[portal]\nissuer = \"https://id.example.com\"\nclient_id = \"tg\"\n\
         client_secret = \"{SECRET}\n"
    ));
    assert!(
        error.contains("team.toml") && error.contains("line 4") && error.contains("column"),
        "{error}"
    );
}

#[test]
fn a_wrong_typed_secret_names_the_key_not_the_value() {
    let error = refused(
        "[portal]\nissuer = \"https://id.example.com\"\nclient_id = \"tg\"\n\
         client_secret = 987654321987\n",
    );
    assert!(error.contains("portal.client_secret"), "{error}");
    let error = refused("[telemetry.metrics]\ntoken = 987654321987\n");
    assert!(error.contains("telemetry.metrics.token"), "{error}");
    let error = refused("[telemetry.metrics]\ntoken = 987654321.5\n");
    assert!(error.contains("telemetry.metrics.token"), "{error}");
    // A secret where a list belongs is not printed either.
    let error = refused(&format!("[mcp]\nrequest_state_keys = \"{SECRET}\"\n"));
    assert!(error.contains("mcp.request_state_keys"), "{error}");
}

/// Item 10: the stand-ins of deploy/k8s/secret.example.yaml are refused
/// wherever a secret goes, naming the key.
#[test]
fn the_examples_placeholder_secrets_are_refused() {
    for (config, key) in [
        (
            "[mcp]\nrequest_state_keys = [\"CHANGE-ME-to-at-least-32-random-characters\"]\n",
            "mcp.request_state_keys[0]",
        ),
        (
            "[credentials]\nkeys = [\"<at least 32 random characters, not this hint>\"]\n",
            "credentials.keys[0]",
        ),
        (
            "[credentials]\nkeys = [\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"]\n",
            "credentials.keys[0]",
        ),
        (
            "[telemetry.metrics]\ntoken = \"change_me\"\n",
            "telemetry.metrics.token",
        ),
        (
            "[store]\nurl = \"postgres://teamgate:CHANGE-ME@127.0.0.1:1/teamgate\"\n",
            "store.url",
        ),
    ] {
        let error = refused(config);
        assert!(
            error.contains(key) && error.contains("placeholder"),
            "{config}: {error}"
        );
    }
    // A real key passes the same check.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("team.toml");
    write(
        &file,
        "[mcp]\nrequest_state_keys = [\"q7Vf2kLx9ZpR4tWm8YbN3cHj6DsE1aGu\"]\n",
    );
    ConfigSources::files_only(vec![file]).load().unwrap();
}
