//! A first hour with teamgate (issue 32): `check-config` refuses what `serve`
//! refuses, relative paths follow the configuration file, and the operator
//! commands, `teamgate_info` and reload say clearly what there is. Through
//! the real binary, as an operator runs it.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use teamgate::config::ConfigSources;

use crate::{
    helpers::repo_path,
    sdk::{self, call},
};

mod all_at_once;
mod cli;
mod docs;
mod one_server;
mod operations;
mod portal_hints;
mod stages;

fn teamgate(cwd: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_teamgate"));
    command.args(args).current_dir(cwd);
    for (key, value) in envs {
        command.env(key, value);
    }
    command.output().expect("teamgate runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const HTTP_TOOL_WITH_SECRET: &str = r#"
[tools]
http_allowlist = ["https://internal.example.com"]
[[tools.http]]
name = "lookup"
description = "Looks a thing up"
url = "https://internal.example.com/api"
headers = { Authorization = "Bearer ${TEAMGATE_TEST_INTERNAL_API_KEY}" }
"#;

#[test]
fn check_config_refuses_what_serve_refuses_naming_each_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("team.toml");
    // A PostgreSQL store nobody listens on: check-config must not connect.
    write(
        &file,
        &format!(
            "{HTTP_TOOL_WITH_SECRET}[store]\nurl = \"postgres://teamgate@127.0.0.1:1/teamgate\"\n"
        ),
    );
    let config = file.to_str().unwrap();
    let output = teamgate(dir.path(), &["check-config", "--config", config], &[]);
    let error = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{error}");
    assert!(
        error.contains("tools.http[0].headers.Authorization")
            && error.contains("TEAMGATE_TEST_INTERNAL_API_KEY is not set"),
        "{error}"
    );
    assert!(
        error.contains("mcp.request_state_keys") && error.contains("PostgreSQL"),
        "{error}"
    );

    // With both fixed it passes, still without reaching the database.
    let keys = format!("[\"state-key-{}\"]", "k".repeat(30));
    let fixed = [
        ("TEAMGATE_TEST_INTERNAL_API_KEY", "not-a-real-key"),
        ("TEAMGATE__MCP__REQUEST_STATE_KEYS", keys.as_str()),
    ];
    let output = teamgate(dir.path(), &["check-config", "--config", config], &fixed);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("configuration is valid"));
    assert!(!String::from_utf8_lossy(&output.stdout).contains("not-a-real-key"));

    // serve stops on the same missing secret (SQLite here, so it gets that far).
    write(&file, HTTP_TOOL_WITH_SECRET);
    let store = format!("sqlite://{}/teamgate.db", dir.path().display());
    let envs = [("TEAMGATE__STORE__URL", store.as_str())];
    let args = ["serve", "--listen", "127.0.0.1:0", "--config", config];
    let output = teamgate(dir.path(), &args, &envs);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("tools.http[0].headers.Authorization"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn relative_paths_follow_the_file_that_names_them_and_missing_ones_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("conf");
    write(&conf.join("handbook/oncall.md"), "# On call\n");
    write(&conf.join("repo/main.rs"), "fn main() {}\n");
    write(
        &conf.join("prompts/review.md"),
        "---\nname: review\narguments:\n  - name: diff\n---\nReview {{diff}}\n",
    );
    let file = conf.join("team.toml");
    let text = r#"
[[sources.docs]]
name = "team"
paths = ["handbook"]
watch = false
index_dir = "state/docs"
[[sources.files]]
name = "repo"
root = "repo"
extensions = ["rs"]
[prompt_files]
folders = ["prompts"]
"#;
    write(&file, text);
    let loaded = ConfigSources::files_only(vec![file.clone()])
        .load()
        .unwrap();
    assert_eq!(
        Path::new(&loaded.sources.docs[0].paths[0]),
        conf.join("handbook")
    );
    assert_eq!(
        loaded.sources.docs[0].index_dir.as_deref().map(Path::new),
        Some(conf.join("state/docs").as_path())
    );
    assert_eq!(Path::new(&loaded.sources.files[0].root), conf.join("repo"));
    assert_eq!(
        Path::new(&loaded.prompt_files.folders[0]),
        conf.join("prompts")
    );

    // Run from elsewhere: the paths still resolve next to the file.
    let elsewhere = tempfile::tempdir().unwrap();
    let args = ["check-config", "--config", file.to_str().unwrap()];
    let output = teamgate(elsewhere.path(), &args, &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        !conf.join("state").exists(),
        "check-config indexes in memory, never in a server's index_dir"
    );

    write(
        &file,
        &text.replace("[\"handbook\"]", "[\"handbook\", \"gone\"]"),
    );
    let output = teamgate(elsewhere.path(), &args, &[]);
    let error = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{error}");
    assert!(
        error.contains("sources.docs[0].paths[1]") && error.contains("gone"),
        "{error}"
    );
}

#[test]
fn undeclared_prompt_placeholders_and_array_output_schemas_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("team.toml");
    let args = ["check-config", "--config", file.to_str().unwrap()];
    write(
        &file,
        "[[prompts]]\nname = \"greet\"\ntemplate = \"Hello {{nmae}}\"\narguments = [{ name = \"name\" }]\n",
    );
    let error = stderr(&teamgate(dir.path(), &args, &[]));
    assert!(
        error.contains("prompts[0].template") && error.contains("{{nmae}}"),
        "{error}"
    );

    write(
        &dir.path().join("prompts/greet.md"),
        "---\nname: greet\n---\nHello {{who}}\n",
    );
    write(&file, "[prompt_files]\nfolders = [\"prompts\"]\n");
    let output = teamgate(dir.path(), &args, &[]);
    let error = stderr(&output);
    assert!(!output.status.success());
    assert!(
        error.contains("prompt_files.folders[0]")
            && error.contains("greet.md")
            && error.contains("{{who}}"),
        "{error}"
    );

    write(
        &file,
        "[[tools.command]]\nname = \"list\"\ndescription = \"d\"\nprogram = \"/bin/echo\"\noutput_schema = { type = \"array\" }\n",
    );
    let error = ConfigSources::files_only(vec![file])
        .load()
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("tools.command[0].output_schema") && error.contains("object"),
        "{error}"
    );
}

#[test]
fn teamgate_config_lists_the_files_when_no_config_flag_is_given() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join("base.toml"),
        "[mcp]\nserver_name = \"base\"\ninstructions = \"from base\"\n",
    );
    write(
        &dir.path().join("team.toml"),
        "[mcp]\nserver_name = \"team\"\n",
    );
    let files = format!("{0}/base.toml:{0}/team.toml", dir.path().display());
    let envs = [("TEAMGATE_CONFIG", files.as_str())];
    let output = teamgate(&repo_path(""), &["check-config"], &envs);
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        printed.contains("server_name = \"team\"") && printed.contains("from base"),
        "{printed}"
    );
    // --config wins over the variable.
    let base = dir.path().join("base.toml");
    let args = ["check-config", "--config", base.to_str().unwrap()];
    let output = teamgate(&repo_path(""), &args, &envs);
    assert!(String::from_utf8_lossy(&output.stdout).contains("server_name = \"base\""));
}

#[test]
fn unknown_keys_suggest_the_close_one_without_garbled_backticks() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("team.toml");
    write(&file, "[server]\nalowed_hosts = [\"mcp.example.com\"]\n");
    let error = ConfigSources::files_only(vec![file])
        .load()
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("unknown key `server.alowed_hosts`")
            && error.contains("did you mean `server.allowed_hosts`?"),
        "{error}"
    );
    assert!(
        !error.contains("``") && !error.contains("`one of"),
        "{error}"
    );
}

/// `teamgate serve` with its log in a file and its own SQLite store, for
/// what the log says and what the operator commands show afterwards.
struct Logged {
    child: Child,
    log: PathBuf,
    url: String,
    dir: tempfile::TempDir,
}

impl Drop for Logged {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Logged {
    fn start(config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        write(&dir.path().join("team.toml"), config);
        // The default docs source reads docs/ in the working directory.
        write(&dir.path().join("docs/guide.md"), "# Guide\n");
        let log = dir.path().join("serve.log");
        let mut command = Command::new(env!("CARGO_BIN_EXE_teamgate"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--config", "team.toml"])
            .current_dir(dir.path())
            .envs(Self::envs(dir.path()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
        let child = command.spawn().expect("teamgate starts");
        let mut served = Self {
            child,
            log,
            url: String::new(),
            dir,
        };
        let line = served.wait_for("http://127.0.0.1:");
        let start = line.find("http://127.0.0.1:").unwrap();
        served.url = line[start..]
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '"')
            .collect();
        served
    }

    fn envs(dir: &Path) -> Vec<(String, String)> {
        vec![
            (
                "TEAMGATE__STORE__URL".into(),
                format!("sqlite://{}/teamgate.db", dir.display()),
            ),
            ("TEAMGATE__LOG__FORMAT".into(), "json".into()),
        ]
    }

    /// The first log line containing `needle`, waiting up to 30 s.
    fn wait_for(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            if let Some(line) = log.lines().find(|l| l.contains(needle)) {
                return line.to_owned();
            }
            assert!(
                Instant::now() < deadline,
                "no {needle:?} in the log:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// An operator command on this server's store and configuration.
    fn admin(&self, args: &[&str]) -> Output {
        let envs = Self::envs(self.dir.path());
        let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        // `--config` belongs to the command group: `token --config F create`.
        let mut all = vec![args[0], "--config", "team.toml"];
        all.extend(&args[1..]);
        teamgate(self.dir.path(), &all, &envs)
    }

    fn token(&self, user: &str, scopes: &[&str]) -> String {
        let mut args = vec!["token", "create", "--user", user];
        for scope in scopes {
            args.extend(["--scope", scope]);
        }
        let output = self.admin(&args);
        assert!(output.status.success(), "{}", stderr(&output));
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        stdout.lines().last().unwrap().trim().to_owned()
    }
}
