//! Paths under a files source's root (`providers/files/`): whatever path a
//! caller sends, what `read_file` opens is a regular file inside the root,
//! reached without a link and neither hidden nor ignored, and what
//! `list_files` opens is a folder inside it. The root holds files, folders,
//! and links out of it (relative, absolute, to folders, to the root's
//! parent), a loop, a dangling link and a FIFO.
#![no_main]

use std::{
    collections::HashSet,
    os::{fd::AsFd, unix::fs::MetadataExt},
    path::{Path, PathBuf},
    sync::OnceLock,
};

use libfuzzer_sys::fuzz_target;
use teamgate::providers::files::FilesSource;

struct Fixture {
    source: FilesSource,
    /// (device, inode) of what may be opened: visible files, and folders.
    files: HashSet<(u64, u64)>,
    folders: HashSet<(u64, u64)>,
}

fn id(meta: &std::fs::Metadata) -> (u64, u64) {
    (meta.dev(), meta.ino())
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let base = tempfile::tempdir().expect("a temporary folder").keep();
        let (root, outside) = (base.join("root"), base.join("outside"));
        for dir in ["root/dir/sub", "root/.git", "outside/dir"] {
            std::fs::create_dir_all(base.join(dir)).unwrap();
        }
        for file in [
            "outside/secret.md",
            "outside/dir/x.md",
            "root/a.md",
            "root/a.txt",
            "root/dir/b.md",
            "root/dir/sub/c.md",
            "root/.hidden.md",
            "root/.git/notes.md",
            "root/ignored.md",
            "root/dir/ignored.md",
        ] {
            std::fs::write(base.join(file), file).unwrap();
        }
        std::fs::write(root.join(".gitignore"), "ignored.md\n").unwrap();
        let link =
            |target: &Path, at: &str| std::os::unix::fs::symlink(target, root.join(at)).unwrap();
        link(Path::new("../outside/secret.md"), "out.md");
        link(&outside.join("secret.md"), "abs.md");
        link(Path::new("../../outside/secret.md"), "dir/up.md");
        link(Path::new("../outside"), "outdir");
        link(Path::new(".."), "dir/parent");
        link(Path::new("/"), "slash");
        link(Path::new("a.md"), "inner.md");
        link(Path::new("dir"), "dirlink");
        link(Path::new("loop.md"), "loop.md");
        link(Path::new("nowhere.md"), "dangling.md");
        nix::unistd::mkfifo(&root.join("fifo.md"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let source = teamgate::fuzzing::files_source(&root, &["md"]).expect("a files source");
        let mut files = HashSet::new();
        let mut folders = HashSet::new();
        walk(&root, &mut files, &mut folders);
        // Hidden and ignored files exist but are not offered.
        for hidden in [
            ".hidden.md",
            ".git/notes.md",
            "ignored.md",
            "dir/ignored.md",
            ".gitignore",
        ] {
            files.remove(&id(&std::fs::symlink_metadata(root.join(hidden)).unwrap()));
        }
        Fixture {
            source,
            files,
            folders,
        }
    })
}

/// Everything under `dir`, links not followed.
fn walk(dir: &PathBuf, files: &mut HashSet<(u64, u64)>, folders: &mut HashSet<(u64, u64)>) {
    folders.insert(id(&std::fs::symlink_metadata(dir).unwrap()));
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let meta = std::fs::symlink_metadata(entry.path()).unwrap();
        if meta.is_dir() {
            walk(&entry.path(), files, folders);
        } else if meta.is_file() {
            files.insert(id(&meta));
        }
    }
}

fuzz_target!(|path: &str| {
    let fixture = fixture();
    if let Ok(file) = teamgate::fuzzing::files_open(&fixture.source, path) {
        let meta = file.metadata().unwrap();
        assert!(meta.is_file(), "{path:?} opened something not a file");
        assert!(
            fixture.files.contains(&id(&meta)),
            "{path:?} opened a file not offered"
        );
    }
    if let Some(folder) = teamgate::fuzzing::files_open_dir(&fixture.source, path) {
        let stat = nix::sys::stat::fstat(folder.as_fd()).unwrap();
        let found = (stat.st_dev as u64, stat.st_ino as u64);
        assert!(
            fixture.folders.contains(&found),
            "{path:?} opened a folder outside the root"
        );
    }
});
