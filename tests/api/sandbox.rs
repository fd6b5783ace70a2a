//! `sandbox = { ... }` on command tools, run under the real bubblewrap:
//! the program sees its own PID namespace, no network but a loopback of
//! its own, read-only paths and the one writable path; `check-config` says
//! what this host enforces; and a forking sandboxed command does not
//! outlive teamgate killed by SIGKILL (unsandboxed it would: its processes
//! would be re-parented and run on).

use std::{path::Path, process::Command, time::Duration};

use serde_json::json;

use crate::{
    binary,
    command_tools::command,
    disconnect::running,
    helpers::{repo_path, spawn_app_with},
    sdk::{self, call},
};

/// Writes an executable script (run directly through its `#!` line).
fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_string_lossy().into_owned()
}

/// Whether bubblewrap can make namespaces here; the tests say SKIP if not.
fn bwrap_works() -> bool {
    let works = Command::new("bwrap")
        .args([
            "--ro-bind",
            "/",
            "/",
            "--unshare-pid",
            "--unshare-net",
            "true",
        ])
        .status()
        .is_ok_and(|s| s.success());
    if !works {
        eprintln!("SKIP: bubblewrap is missing or cannot make namespaces here");
    }
    works
}

#[tokio::test]
async fn a_sandboxed_command_sees_only_what_its_sandbox_allows() {
    if !bwrap_works() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let probe = script(
        dir.path(),
        "probe.sh",
        "echo \"pid=$$\"\n\
         if echo x > /etc/teamgate-sandbox-probe 2>/dev/null; then echo etc=written; else echo etc=refused; fi\n\
         echo x > \"$1/written\" && echo scratch=written\n\
         if [ -e \"$2\" ]; then echo home=seen; else echo home=hidden; fi\n\
         cat /proc/net/dev",
    );
    let (folder, scratch) = (dir.path().to_string_lossy(), scratch.to_string_lossy());
    // A file outside every bound path.
    let hidden = repo_path("Cargo.toml").to_string_lossy().into_owned();
    let app = spawn_app_with(|c| {
        c.tools.command = vec![command(json!({"name": "probe", "description": "looks around",
            "program": probe, "args": [scratch.clone(), hidden.clone()], "timeout": "20s",
            "sandbox": {"read_only": ["/usr", "/etc", folder.clone()], "write": [scratch.clone()]}}))];
    })
    .await;
    let (client, _) = sdk::connect(&app.url, None).await;
    let result = call(&client, "probe", json!({})).await;
    let out = result["structuredContent"]["stdout"].as_str().unwrap_or("");
    assert_eq!(result["isError"], false, "{result}");
    let pid: i32 = (out.lines().find_map(|l| l.strip_prefix("pid=")))
        .and_then(|p| p.parse().ok())
        .unwrap_or(i32::MAX);
    assert!(pid <= 3, "a PID namespace of its own: {out}");
    assert!(out.contains("etc=refused"), "{out}");
    assert!(out.contains("scratch=written"), "{out}");
    assert!(dir.path().join("scratch/written").exists());
    assert!(out.contains("home=hidden"), "{out}");
    // /proc/net/dev: two header lines, then one line per interface.
    let interfaces: Vec<&str> = (out.lines())
        .skip_while(|l| !l.contains("Inter-"))
        .skip(2)
        .filter_map(|l| l.split(':').next().map(str::trim))
        .collect();
    assert_eq!(interfaces, ["lo"], "no network but loopback: {out}");
    client.cancel().await.unwrap();
}

#[test]
fn check_config_says_what_this_host_enforces() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sandboxed.toml");
    std::fs::write(
        &config,
        "[[tools.command]]\nname = \"t\"\ndescription = \"d\"\nprogram = \"/bin/true\"\n\
         sandbox = { memory = \"512M\", cpu = 1.0, processes = 64 }\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_teamgate"))
        .args(["check-config", "--config"])
        .arg(&config)
        .current_dir(repo_path(""))
        .output()
        .expect("teamgate runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("sandbox: namespaces"), "{stderr}");
    // No cgroup v2 here (cgroup v1 hosts): cpu is not enforced, and said so.
    if !Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        assert!(
            stderr.contains("cpu: not enforced on this host (no writable cgroup v2"),
            "{stderr}"
        );
        let unenforced = "tools.command[0] (t): sandbox limits not enforced on this host: cpu";
        assert!(stderr.contains(unenforced), "{stderr}");
    }
    if bwrap_works() {
        // RLIMIT_NPROC in a user namespace (Linux 5.14+).
        assert!(
            stderr.contains("processes: enforced (RLIMIT_NPROC"),
            "{stderr}"
        );
    }
    if Command::new("bwrap").arg("--version").output().is_ok() {
        assert!(output.status.success(), "{stderr}");
    }
    // A size that does not read is a problem.
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("512M", "lots");
    std::fs::write(&config, text).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_teamgate"))
        .args(["check-config", "--config"])
        .arg(&config)
        .current_dir(repo_path(""))
        .output()
        .expect("teamgate runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("sandbox.memory"), "{stderr}");
}

#[tokio::test]
async fn a_sandboxed_command_does_not_outlive_teamgate_killed_by_sigkill() {
    if !bwrap_works() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Unique to this run, so other runs' processes are not counted.
    let seconds = format!("312.{}", std::process::id());
    let forker = script(
        dir.path(),
        "forker.sh",
        &format!("/bin/sleep {seconds} &\n/bin/sleep {seconds} &\nwait"),
    );
    let config = dir.path().join("sandboxed.toml");
    std::fs::write(
        &config,
        format!(
            "[[tools.command]]\nname = \"forker\"\ndescription = \"forks\"\n\
             program = \"{forker}\"\ntimeout = \"60s\"\n\
             sandbox = {{ read_only = [\"/usr\", \"{}\"] }}\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let served = binary::serve(&config, &[]);
    let token = served.token("alice", &[]);
    let (client, _) = sdk::connect_as(&served.url, Some(&token), None).await;
    let calling = tokio::spawn(async move { call(&client, "forker", json!({})).await });
    let sleeping = ["/bin/sleep", seconds.as_str()];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while running(&sleeping).len() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "the sandbox forked");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    served.signal(nix::sys::signal::Signal::SIGKILL);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !running(&sleeping).is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the sandbox's processes outlive teamgate: {:?}",
            running(&sleeping)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    calling.abort();
}

#[tokio::test]
async fn a_process_over_its_memory_limit_fails_with_a_clear_error() {
    if !bwrap_works() {
        return;
    }
    let app = spawn_app_with(|c| {
        c.tools.command = vec![command(
            json!({"name": "hog", "description": "takes 300 MB",
            "program": "/usr/bin/python3", "args": ["-c", "b = bytearray(300 * 1024 * 1024)"],
            "timeout": "20s", "sandbox": {"memory": "100M"}}),
        )];
    })
    .await;
    let (client, _) = sdk::connect(&app.url, None).await;
    let result = call(&client, "hog", json!({})).await;
    assert_eq!(result["isError"], true, "{result}");
    let stderr = result["structuredContent"]["stderr"].as_str().unwrap_or("");
    assert!(stderr.contains("MemoryError"), "{stderr}");
    assert!(
        stderr.contains("the sandbox allows each process 100M of memory"),
        "{stderr}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_command_forking_over_its_process_limit_fails_with_a_clear_error() {
    if !bwrap_works() {
        return;
    }
    // 50 sleepers under a limit of 8: a fork fails, and the shell with it.
    let app = spawn_app_with(|c| {
        c.tools.command = vec![command(json!({"name": "forker", "description": "forks 50",
            "program": "/bin/sh",
            "args": ["-c", "for i in $(seq 1 50); do sleep 5 & echo $i; done; wait"],
            "timeout": "20s", "sandbox": {"processes": 8}}))];
    })
    .await;
    let (client, _) = sdk::connect(&app.url, None).await;
    let started = std::time::Instant::now();
    let result = call(&client, "forker", json!({})).await;
    assert!(started.elapsed() < Duration::from_secs(15), "bounded");
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(result["structuredContent"]["timedOut"], false, "{result}");
    let stdout = result["structuredContent"]["stdout"].as_str().unwrap_or("");
    let forked = stdout.lines().count();
    assert!((1..8).contains(&forked), "at most 8 processes: {stdout}");
    let stderr = result["structuredContent"]["stderr"].as_str().unwrap_or("");
    assert!(
        stderr.contains("fork"),
        "the shell says it cannot fork: {stderr}"
    );
    assert!(
        stderr.contains("the sandbox allows 8 processes at once"),
        "{stderr}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_sandboxed_stdio_upstream_that_forks_does_not_outlive_teamgate_killed_by_sigkill() {
    let Some((node, script)) = crate::upstreams::everything() else {
        return;
    };
    if !bwrap_works() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // A server that leaves a child behind, then becomes the everything server.
    let seconds = format!("313.{}", std::process::id());
    let server = self::script(
        dir.path(),
        "server.sh",
        &format!("/bin/sleep {seconds} &\nexec {node} {script} stdio"),
    );
    let cache = repo_path(".cache").display().to_string();
    let config = dir.path().join("upstream.toml");
    std::fs::write(
        &config,
        format!(
            "[[upstreams]]\nname = \"everything\"\ncommand = \"{server}\"\n\
             sandbox = {{ read_only = [\"/usr\", \"/etc\", \"{cache}\", \"{}\"] }}\n",
            dir.path().display()
        ),
    )
    .unwrap();
    let served = binary::serve(&config, &[]);
    // It runs in its sandbox: connected, its tools listed.
    served.logged("upstream connected");
    let sleeping = ["/bin/sleep", seconds.as_str()];
    assert_eq!(running(&sleeping).len(), 1, "the server's child runs");
    served.signal(nix::sys::signal::Signal::SIGKILL);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !running(&sleeping).is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server's child outlives teamgate: {:?}",
            running(&sleeping)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
