//! The second outside attack (issue 59): each finding's regression test,
//! through the real binary or the real server as an attacker would reach it.

use std::{
    path::Path,
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

mod authorization_endpoint;
mod config_errors;
mod registrations;
mod scrub;
mod serve_lock;
mod unowned;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `teamgate ARGS` in `dir` with its own SQLite store there (unless
/// `dir/team.toml` names a store), ended after `limit` if it has not
/// exited by itself (`None` then).
fn run_for(dir: &Path, args: &[&str], limit: Duration) -> Option<Output> {
    let mut command = Command::new(env!("CARGO_BIN_EXE_teamgate"));
    let config = std::fs::read_to_string(dir.join("team.toml")).unwrap_or_default();
    if !config.contains("[store]") {
        let url = format!("sqlite://{}/teamgate.db", dir.display());
        command.env("TEAMGATE__STORE__URL", url);
    }
    let mut child = command
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("teamgate starts");
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}
