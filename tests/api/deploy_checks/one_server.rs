//! One `serve` per SQLite file, and a taken address named with the setting
//! that moves it (issue 51, polish): a second server on the same store is
//! refused at start, the admin commands keep working beside the first, and
//! the lock goes with the process.

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
