//! `check-config` reports every problem `serve` would, in one run (issue 51
//! item 4): several unknown or mistyped keys at once, each with its file,
//! and an upstream's `${NAME}` header, `env` or `secret_env` that is unset;
//! all of them together in one round, `serve` as `check-config` (issue 63
//! item 4), each key written one way (`upstreams[0].env[0]`).

use super::{stderr, teamgate, write};

#[test]
fn every_unknown_and_mistyped_key_is_reported_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("team.toml");
    write(
        &file,
        "[server]\nlistn = \"127.0.0.1:9000\"\nmax_body_bytes = \"big\"\n\
         [mcp]\nsrever_name = \"team\"\n\
         [[tools.http]]\nname = \"lookup\"\ndescription = \"d\"\nurl = \"https://x.example.com\"\nmethd = \"GET\"\n",
    );
    let args = ["check-config", "--config", file.to_str().unwrap()];
    let output = teamgate(dir.path(), &args, &[]);
    let error = stderr(&output);
    assert!(!output.status.success(), "{error}");
    for said in [
        "unknown key `server.listn`",
        "did you mean `server.listen`?",
        "expected a whole number (0 or more), found a string for key `server.max_body_bytes`",
        "unknown key `mcp.srever_name`",
        "unknown key `tools.http[0].methd`",
    ] {
        assert!(error.contains(said), "{said:?} missing from: {error}");
    }
    // Each names the file it is in, not an internal copy.
    assert_eq!(
        error.matches(&*file.to_string_lossy()).count(),
        4,
        "{error}"
    );
}

#[test]
fn an_upstreams_unset_environment_is_a_problem_as_serve_says() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("team.toml");
    write(
        &file,
        "[tools]\nhttp_allowlist = [\"https://mcp.internal.example.com/\"]\n\
         [[upstreams]]\nname = \"internal\"\nurl = \"https://mcp.internal.example.com/mcp\"\n\
         headers = { Authorization = \"Bearer ${TEAMGATE_TEST_UNSET_MCP_TOKEN}\" }\n\
         [[upstreams]]\nname = \"tickets\"\ncommand = \"true\"\n\
         env = [\"TEAMGATE_TEST_UNSET_HOME\"]\nsecret_env = [\"TEAMGATE_TEST_UNSET_KEY\"]\n",
    );
    let args = ["check-config", "--config", file.to_str().unwrap()];
    let output = teamgate(dir.path(), &args, &[]);
    let error = stderr(&output);
    assert!(!output.status.success(), "{error}");
    for said in [
        "upstreams[0].headers.Authorization: environment variable TEAMGATE_TEST_UNSET_MCP_TOKEN is not set",
        "upstreams[1].env[0]: environment variable TEAMGATE_TEST_UNSET_HOME is not set",
        "upstreams[1].secret_env[0]: environment variable TEAMGATE_TEST_UNSET_KEY is not set",
    ] {
        assert!(error.contains(said), "{said:?} missing from: {error}");
    }

    let set = [
        ("TEAMGATE_TEST_UNSET_MCP_TOKEN", "tok-not-printed"),
        ("TEAMGATE_TEST_UNSET_HOME", "/tmp"),
        ("TEAMGATE_TEST_UNSET_KEY", "key-not-printed"),
    ];
    let output = teamgate(dir.path(), &args, &set);
    assert!(output.status.success(), "{}", stderr(&output));
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        stderr(&output)
    );
    assert!(!printed.contains("not-printed"), "{printed}");
}

/// Unknown and mistyped keys, a `secret_env` entry that is not a variable
/// name and variables that are not set, in one file: `check-config` and
/// `serve` list every one in the same run, in plain words.
#[test]
fn every_kind_of_problem_is_listed_in_one_round_by_check_config_and_serve() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("team.toml");
    write(
        &file,
        "[server]\nmax_json_depth = -2\n\
         [[tools.http]]\nname = \"lookup\"\ndescription = \"d\"\nurl = \"https://x.example.com/a\"\n\
         headers = { Authorization = \"Bearer ${TEAMGATE_TEST_UNSET_TOKEN}\" }\n\
         [tools]\nhttp_allowlist = [\"https://x.example.com/\"]\n\
         [[upstreams]]\nname = \"internal\"\ncommand = \"true\"\npromt = \"x\"\n\
         env = [\"TEAMGATE_TEST_UNSET_HOME\"]\n\
         [[upstreams]]\nname = \"tickets\"\ncommand = \"true\"\nsecret_env = [\"A=${B}\"]\n",
    );
    let said = [
        "unknown key `upstreams[0].promt`",
        "expected a whole number (0 or more), found a negative number for key `server.max_json_depth`",
        "`upstreams[1].secret_env[0]` is \"A=${B}\", not a variable name: secret_env takes names \
         of teamgate's environment variables",
        "problem: upstreams[0].env[0]: environment variable TEAMGATE_TEST_UNSET_HOME is not set",
        "problem: tools.http[0].headers.Authorization: environment variable \
         TEAMGATE_TEST_UNSET_TOKEN is not set",
    ];
    let config = file.to_str().unwrap();
    for args in [
        &["check-config", "--config", config][..],
        &["serve", "--listen", "127.0.0.1:0", "--config", config],
    ] {
        let output = teamgate(dir.path(), args, &[]);
        let error = stderr(&output);
        assert!(!output.status.success(), "{args:?}: {error}");
        for said in said {
            assert!(
                error.contains(said),
                "{args:?}: {said:?} missing from: {error}"
            );
        }
        assert!(
            error.contains("the configuration has 5 problem(s)"),
            "{args:?}: {error}"
        );
        // One key style, and no serde or Rust type words.
        for never in [
            "upstreams[internal]",
            "signed int",
            "invalid type",
            "u64",
            "sequence",
        ] {
            assert!(!error.contains(never), "{args:?}: {never:?} in {error}");
        }
    }
}

/// Rules across keys (each key alone is well-typed) are listed together
/// too: a mistyped HTTP method, a shell as a command tool's program, a
/// relative `mcp.path`, a tiny audit buffer and an OTLP endpoint without a
/// scheme, each named by its key, in one run of `check-config` and `serve`.
#[test]
fn every_broken_rule_across_keys_is_listed_in_one_round() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("team.toml");
    write(
        &file,
        "[mcp]\npath = \"mcp\"\n[audit]\nbuffer = 1\n\
         [telemetry]\notlp_endpoint = \"collector:4318\"\n\
         [tools]\nhttp_allowlist = [\"https://x.example.com/\"]\n\
         [[tools.http]]\nname = \"lookup\"\ndescription = \"d\"\nurl = \"https://x.example.com/a\"\nmethod = \"GETT\"\n\
         [[tools.command]]\nname = \"run\"\ndescription = \"d\"\nprogram = \"bash\"\nargs = [\"-c\", \"ls\"]\n",
    );
    let said = [
        "`tools.http[0].method` must be one of GET",
        "`tools.command[0].program` must name a program that is not a shell",
        "`mcp.path` must be an absolute path",
        "`audit.buffer` must be at least 16",
        "`telemetry.otlp_endpoint` must be an http(s) URL",
    ];
    let config = file.to_str().unwrap();
    for args in [
        &["check-config", "--config", config][..],
        &["serve", "--listen", "127.0.0.1:0", "--config", config],
    ] {
        let output = teamgate(dir.path(), args, &[]);
        let error = stderr(&output);
        assert!(!output.status.success(), "{args:?}: {error}");
        for said in said {
            assert!(
                error.contains(said),
                "{args:?}: {said:?} missing from: {error}"
            );
        }
        assert!(
            error.contains("the configuration has 5 problem(s)"),
            "{args:?}: {error}"
        );
    }
}
