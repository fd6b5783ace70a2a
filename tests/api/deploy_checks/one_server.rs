//! What `serve` says at start (issue 51, polish): one `serve` per SQLite
//! file (a second is refused, the admin commands keep working beside the
//! first, the lock goes with the process), a taken address named with the
//! setting that moves it, and a first-token hint that works as typed.

use super::*;

fn second_serve(served: &Logged, listen: &str) -> Output {
    let envs = Logged::envs(served.dir.path());
    let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let args = ["serve", "--listen", listen, "--config", "team.toml"];
    teamgate(served.dir.path(), &args, &envs)
}

#[test]
fn a_second_serve_on_the_same_sqlite_file_is_refused_and_admin_commands_still_work() {
    let mut served = Logged::start("[reload]\nwatch = false\n");
    let output = second_serve(&served, "127.0.0.1:0");
    let error = stderr(&output);
    assert!(!output.status.success(), "{error}");
    let pid = served.child.id().to_string();
    assert!(
        error.contains("another `teamgate serve`")
            && error.contains(&format!("pid {pid}"))
            && error.contains("teamgate.db"),
        "{error}"
    );
    // The admin commands are not servers: they share the file.
    assert!(!served.token("alice", &[]).is_empty());

    // The port the first one holds: the message names --listen.
    let port = served
        .url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    served.child.kill().unwrap();
    served.child.wait().unwrap();
    let holder = std::net::TcpListener::bind(&port).unwrap();
    let output = second_serve(&served, &port);
    let error = stderr(&output);
    assert!(!output.status.success(), "{error}");
    assert!(
        error.contains(&format!("cannot listen on {port}")) && error.contains("--listen"),
        "the lock was released with the process, and the address is named: {error}"
    );
    drop(holder);
}

#[test]
fn the_first_token_hint_is_a_command_that_works_as_typed() {
    let served = Logged::start("[reload]\nwatch = false\n");
    let line = served.wait_for("no personal token exists yet");
    let program = env!("CARGO_BIN_EXE_teamgate");
    let expected = format!("{program} token --config team.toml create --user <name>");
    assert!(line.contains(&expected), "{expected:?} in {line}");
    // Typed in the server's folder with its environment, it makes a token.
    let typed = expected.replace("<name>", "alice");
    let words: Vec<&str> = typed.split(' ').skip(1).collect();
    let envs = Logged::envs(served.dir.path());
    let envs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let output = teamgate(served.dir.path(), &words, &envs);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("tg_"));
}
