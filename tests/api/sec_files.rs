//! Attacks on `[[sources.files]]` (issue 30): a folder swapped for a link
//! while `read_file` runs, links to outside, and hidden or git-ignored files
//! reached by path or by an override glob.

use std::{
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use teamgate::config::FilesSourceConfig;

use crate::{
    helpers::spawn_app_with,
    sdk::{self, call, text},
};

fn source(root: &Path, extra: Value) -> FilesSourceConfig {
    let mut config = json!({"name": "repo", "root": root.to_string_lossy(), "extensions": ["md"]});
    config
        .as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    serde_json::from_value(config).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swapping_a_folder_for_a_link_never_reads_outside() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.md"), "OUTSIDE the root").unwrap();
    let root = tempfile::tempdir().unwrap();
    let r = root.path().to_owned();
    std::fs::create_dir(r.join("sub")).unwrap();
    std::fs::write(r.join("sub/x.md"), "inside the root").unwrap();
    std::os::unix::fs::symlink(outside.path(), r.join("swap")).unwrap();
    let app = spawn_app_with(|c| c.sources.files = vec![source(&r, json!({}))]).await;
    let (client, _) = sdk::connect(&app.url, None).await;

    // `sub` is a folder and a link to outside by turns, for 2 seconds.
    let done = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (done, r) = (done.clone(), r.clone());
        std::thread::spawn(move || {
            use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
            let deadline = Instant::now() + Duration::from_secs(2);
            let mut swaps = 0u64;
            while Instant::now() < deadline || swaps % 2 == 1 {
                let (a, b) = (r.join("sub"), r.join("swap"));
                renameat2(AT_FDCWD, &a, AT_FDCWD, &b, RenameFlags::RENAME_EXCHANGE).unwrap();
                swaps += 1;
            }
            done.store(true, Ordering::SeqCst);
            swaps
        })
    };
    let (mut calls, mut inside) = (0, 0);
    while !done.load(Ordering::SeqCst) {
        let reads = (0..4).map(|_| call(&client, "read_file", json!({"path": "sub/x.md"})));
        for read in futures::future::join_all(reads).await {
            calls += 1;
            assert!(
                !text(&read).contains("OUTSIDE"),
                "call {calls} read outside the root: {read}"
            );
            inside += usize::from(text(&read) == "inside the root");
        }
    }
    let swaps = swapper.join().unwrap();
    assert!(swaps > 1000, "the race ran: {swaps} swaps");
    assert!(
        inside > 0,
        "some of {calls} reads found the folder in place"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn links_are_refused_wherever_they_point() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    std::fs::create_dir(r.join("docs")).unwrap();
    std::fs::write(r.join("docs/a.md"), "alpha").unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", r.join("env.md")).unwrap();
    std::os::unix::fs::symlink("/proc/self", r.join("proc")).unwrap();
    std::os::unix::fs::symlink(r.join("docs/a.md"), r.join("alias.md")).unwrap();
    std::os::unix::fs::symlink(r.join("docs"), r.join("more")).unwrap();
    nix::unistd::mkfifo(&r.join("pipe.md"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let app = spawn_app_with(|c| c.sources.files = vec![source(r, json!({}))]).await;
    let (client, _) = sdk::connect(&app.url, None).await;

    let read = call(&client, "read_file", json!({"path": "docs/a.md"})).await;
    assert_eq!(text(&read), "alpha", "{read}");
    for path in ["env.md", "proc/environ.md", "alias.md", "more/a.md"] {
        let refused = call(&client, "read_file", json!({"path": path})).await;
        assert_eq!(refused["isError"], true, "{path}: {refused}");
        assert!(text(&refused).contains("link"), "{path}: {refused}");
    }
    // A FIFO is not a file and cannot hang the call.
    let fifo = tokio::time::timeout(
        Duration::from_secs(5),
        call(&client, "read_file", json!({"path": "pipe.md"})),
    )
    .await
    .expect("a FIFO answers at once");
    assert!(text(&fifo).contains("not a file"), "{fifo}");
    let found = call(&client, "search_files", json!({"pattern": "alpha|PATH"})).await;
    let matches = &found["structuredContent"]["matches"];
    assert_eq!(matches.as_array().map(Vec::len), Some(1), "{found}");
    assert_eq!(matches[0]["path"], "docs/a.md");
    client.cancel().await.unwrap();
}

fn paths(found: &Value) -> Vec<String> {
    let matches = found["structuredContent"]["matches"].as_array();
    let mut paths: Vec<String> = matches
        .unwrap_or_else(|| panic!("matches: {found}"))
        .iter()
        .map(|m| m["path"].as_str().unwrap().to_owned())
        .collect();
    paths.dedup();
    paths
}

const HIDDEN: [&str; 4] = [
    ".hidden.md",
    ".git/notes.md",
    "docs/.drafts/d.md",
    "secrets.md",
];
const GLOBS: [Option<&str>; 5] = [None, Some("**"), Some("**/.*"), Some(".*"), Some("*.md")];

fn search(glob: Option<&str>) -> Value {
    let mut arguments = json!({"pattern": "needle"});
    if let Some(glob) = glob {
        arguments["glob"] = glob.into();
    }
    arguments
}

/// A root with a hidden file, a hidden folder, `.git/`, a git-ignored file
/// and one plain file, each holding "needle".
fn hidden_tree(r: &Path) {
    std::fs::create_dir_all(r.join(".git")).unwrap();
    std::fs::create_dir_all(r.join("docs/.drafts")).unwrap();
    std::fs::write(r.join(".gitignore"), "secrets.md\n").unwrap();
    std::fs::write(r.join(".hidden.md"), "needle hidden").unwrap();
    std::fs::write(r.join(".git/notes.md"), "needle git").unwrap();
    std::fs::write(r.join("docs/.drafts/d.md"), "needle draft").unwrap();
    std::fs::write(r.join("secrets.md"), "needle ignored").unwrap();
    std::fs::write(r.join("open.md"), "needle open").unwrap();
}

#[tokio::test]
async fn hidden_and_ignored_files_are_neither_read_nor_found() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    hidden_tree(r);
    let app = spawn_app_with(|c| c.sources.files = vec![source(r, json!({}))]).await;
    let (client, _) = sdk::connect(&app.url, None).await;
    for path in HIDDEN {
        let refused = call(&client, "read_file", json!({"path": path})).await;
        assert_eq!(refused["isError"], true, "{path}: {refused}");
        assert!(text(&refused).contains("hidden or ignored"), "{refused}");
        assert!(!text(&refused).contains("needle"), "{refused}");
    }
    let read = call(&client, "read_file", json!({"path": "./open.md"})).await;
    assert_eq!(text(&read), "needle open");
    for glob in GLOBS {
        let found = call(&client, "search_files", search(glob)).await;
        // A glob naming only dot files finds nothing; the others the plain file.
        let expected: &[&str] = if glob.is_some_and(|g| g.contains('.') && !g.contains("md")) {
            &[]
        } else {
            &["open.md"]
        };
        assert_eq!(paths(&found), expected, "{glob:?}: {found}");
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_source_may_include_hidden_and_ignored_files() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    hidden_tree(r);
    let everything = json!({"include_hidden": true, "include_ignored": true});
    let app = spawn_app_with(|c| c.sources.files = vec![source(r, everything)]).await;
    let (client, _) = sdk::connect(&app.url, None).await;
    for path in HIDDEN {
        let read = call(&client, "read_file", json!({"path": path})).await;
        assert!(text(&read).starts_with("needle"), "{path}: {read}");
    }
    for glob in GLOBS {
        let all = paths(&call(&client, "search_files", search(glob)).await);
        let wanted = match glob {
            Some("**/.*" | ".*") => ".hidden.md",
            _ => "secrets.md",
        };
        assert!(all.iter().any(|p| p == wanted), "{glob:?}: {all:?}");
        if glob.is_none() {
            let every = [".git/notes.md", ".hidden.md", "docs/.drafts/d.md"];
            assert_eq!(all, [&every[..], &["open.md", "secrets.md"]].concat());
        }
    }
    client.cancel().await.unwrap();
}
