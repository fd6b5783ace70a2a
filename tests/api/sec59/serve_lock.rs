//! Item 6: a link planted at `<db>.serve-lock` is refused, never followed:
//! its target is neither overwritten nor created.

use std::{os::unix::fs::symlink, time::Duration};

use super::*;

fn serve_refused(dir: &Path) -> String {
    let args = ["serve", "--listen", "127.0.0.1:0", "--config", "team.toml"];
    let output = run_for(dir, &args, Duration::from_secs(20))
        .expect("serve refuses to start, it does not run on a planted link");
    let error = stderr(&output);
    assert!(!output.status.success(), "{error}");
    assert!(error.contains("not a regular file"), "{error}");
    error
}

#[test]
fn a_link_at_the_serve_lock_is_refused_and_its_target_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("team.toml"), "[reload]\nwatch = false\n");
    write(&dir.path().join("docs/guide.md"), "# Guide\n");
    let lock = dir.path().join("teamgate.db.serve-lock");

    // A link to a file the server's user may write: left as it was.
    let victim = dir.path().join("victim.conf");
    write(&victim, "precious = true\n");
    symlink(&victim, &lock).unwrap();
    serve_refused(dir.path());
    assert_eq!(
        std::fs::read_to_string(&victim).unwrap(),
        "precious = true\n"
    );

    // A dangling link: its target is not created.
    std::fs::remove_file(&lock).unwrap();
    let planted = dir.path().join("planted");
    symlink(&planted, &lock).unwrap();
    serve_refused(dir.path());
    assert!(!planted.exists(), "serve created the link's target");

    // A FIFO: refused at once, no hang.
    std::fs::remove_file(&lock).unwrap();
    nix::unistd::mkfifo(&lock, nix::sys::stat::Mode::S_IRWXU).unwrap();
    serve_refused(dir.path());
}
