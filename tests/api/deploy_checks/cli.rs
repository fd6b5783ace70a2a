//! The CLI reads the configuration the way the server does (issue 51): `--config`
//! in any position, `TEAMGATE_CONFIG` when it is absent, and a "nothing
//! configured" message that says what it read.

use super::{stderr, teamgate, write};

const UPSTREAM: &str = "[[upstreams]]\nname = \"tickets\"\ncommand = \"true\"\n";

fn store_env(dir: &std::path::Path) -> String {
    format!("sqlite://{}", dir.join("teamgate.db").display())
}

#[test]
fn config_is_accepted_after_the_sub_subcommand_and_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("team.toml");
    write(&file, UPSTREAM);
    let store = store_env(dir.path());
    let envs = [("TEAMGATE__STORE__URL", store.as_str())];
    let path = file.to_str().unwrap();
    let output = teamgate(dir.path(), &["migrate", "--config", path], &envs);
    assert!(output.status.success(), "{}", stderr(&output));
    for args in [
        vec!["--config", path, "upstreams", "list"],
        vec!["upstreams", "--config", path, "list"],
        vec!["upstreams", "list", "--config", path],
        vec!["sessions", "list", "--config", path],
        vec!["token", "list", "--config", path],
    ] {
        let output = teamgate(dir.path(), &args, &envs);
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        if args[0] == "upstreams" {
            let printed = String::from_utf8_lossy(&output.stdout);
            assert!(printed.contains("tickets"), "{args:?}: {printed}");
        }
    }
    let envs = [
        ("TEAMGATE__STORE__URL", store.as_str()),
        ("TEAMGATE_CONFIG", path),
    ];
    let output = teamgate(dir.path(), &["upstreams", "list"], &envs);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("tickets"));
}

/// An operator command never creates a store of its own (issue 63 item 3):
/// run away from the server's configuration, it says which store it would
/// use and that it does not exist; on the server's store it says which one.
#[test]
fn admin_commands_name_their_store_and_never_create_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("team.toml");
    write(
        &file,
        "[store]\nurl = \"sqlite://server-data/teamgate.db\"\n",
    );
    let path = file.to_str().unwrap();
    for args in [
        vec!["token", "list"],
        vec!["--config", path, "token", "list"],
        vec!["audit", "tail"],
        vec!["sessions", "list"],
    ] {
        let output = teamgate(dir.path(), &args, &[]);
        let said = stderr(&output);
        assert!(!output.status.success(), "{args:?}: {said}");
        assert!(
            said.contains("does not exist") && said.contains("teamgate migrate"),
            "{args:?}: {said}"
        );
    }
    assert!(!dir.path().join("data").exists(), "no store was created");
    assert!(
        !dir.path().join("server-data").exists(),
        "no store was created"
    );
    let output = teamgate(dir.path(), &["migrate", "--config", path], &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let output = teamgate(dir.path(), &["--config", path, "token", "list"], &[]);
    let said = stderr(&output);
    assert!(output.status.success(), "{said}");
    let store = dir.path().join("server-data/teamgate.db");
    assert!(
        said.contains(&format!("store: {}", store.display())),
        "{said}"
    );
}

#[test]
fn no_upstreams_says_which_configuration_was_read() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("empty.toml");
    write(&file, "[mcp]\nserver_name = \"team\"\n");
    let store = store_env(dir.path());
    let envs = [("TEAMGATE__STORE__URL", store.as_str())];
    let output = teamgate(dir.path(), &["upstreams", "list"], &envs);
    let said = stderr(&output);
    assert!(said.contains("no [[upstreams]] configured"), "{said}");
    assert!(
        said.contains("no --config file or TEAMGATE_CONFIG"),
        "{said}"
    );
    let path = file.to_str().unwrap();
    let output = teamgate(dir.path(), &["upstreams", "list", "--config", path], &envs);
    let said = stderr(&output);
    assert!(
        said.contains(path) && !said.contains("no --config"),
        "{said}"
    );
}
