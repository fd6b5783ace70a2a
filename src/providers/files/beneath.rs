//! Opening a file beneath the root's descriptor, never by a path checked
//! first and opened later: the kernel resolves the path relative to the root
//! and refuses any link on the way (`openat2` with `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS`), so swapping a folder for a link between a check
//! and the open cannot lead outside. Where `openat2` is missing (old kernels,
//! seccomp filters) each component is opened with `O_NOFOLLOW` instead.

use std::{
    fs::File,
    os::fd::OwnedFd,
    path::{Component, Path},
};

use nix::{errno::Errno, fcntl::OFlag, sys::stat::Mode};

/// Why a path could not be opened.
pub(crate) enum Refused {
    /// A link is on the way (or is the file): links are never followed.
    Link,
    Missing,
    NotAFile,
    Io(std::io::Error),
}

/// The root folder, held open for the source's lifetime.
pub(crate) fn open_root(root: &Path) -> std::io::Result<OwnedFd> {
    let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    nix::fcntl::open(root, flags, Mode::empty()).map_err(std::io::Error::from)
}

/// Opens the regular file `relative` (only normal components) beneath
/// `root` and returns it with its size, both taken from the descriptor.
pub(crate) fn open(root: &OwnedFd, relative: &Path) -> Result<(File, u64), Refused> {
    // Non-blocking, so a FIFO planted under the root cannot hang the call.
    let flags = OFlag::O_RDONLY
        | OFlag::O_NONBLOCK
        | OFlag::O_NOCTTY
        | OFlag::O_NOFOLLOW
        | OFlag::O_CLOEXEC;
    let file = File::from(open_beneath(root, relative, flags)?);
    let meta = file.metadata().map_err(Refused::Io)?;
    if !meta.is_file() {
        return Err(Refused::NotAFile);
    }
    Ok((file, meta.len()))
}

/// Opens the folder `relative` beneath `root` (the root itself when it
/// has no normal component), for listing.
pub(crate) fn open_dir(root: &OwnedFd, relative: &Path) -> Result<OwnedFd, Refused> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    open_beneath(root, relative, flags)
}

fn open_beneath(root: &OwnedFd, relative: &Path, flags: OFlag) -> Result<OwnedFd, Refused> {
    let mut parts: Vec<_> = relative
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part),
            _ => None,
        })
        .collect();
    if parts.is_empty() {
        parts.push(std::ffi::OsStr::new("."));
    }
    let mut result = Err(Errno::EAGAIN);
    // EAGAIN: a rename elsewhere raced the lookup, and the kernel asks to retry.
    for _ in 0..3 {
        result = match kernel_beneath(root, &parts, flags) {
            Some(result) => result,
            None => component_by_component(root, &parts, flags),
        };
        if !matches!(result, Err(Errno::EAGAIN)) {
            break;
        }
    }
    result.map_err(|errno| match errno {
        Errno::ELOOP | Errno::EXDEV => Refused::Link,
        Errno::ENOENT => Refused::Missing,
        // The last component is not a folder: what was asked for is there.
        Errno::ENOTDIR if flags.contains(OFlag::O_DIRECTORY) => Refused::NotAFile,
        Errno::ENOTDIR => Refused::Missing,
        other => Refused::Io(other.into()),
    })
}

/// `openat2`, or `None` when this kernel or sandbox does not offer it.
#[cfg(target_os = "linux")]
fn kernel_beneath(
    root: &OwnedFd,
    parts: &[&std::ffi::OsStr],
    flags: OFlag,
) -> Option<nix::Result<OwnedFd>> {
    use nix::fcntl::{OpenHow, ResolveFlag};
    let path: std::path::PathBuf = parts.iter().collect();
    let how = OpenHow::new().flags(flags).resolve(
        ResolveFlag::RESOLVE_BENEATH
            | ResolveFlag::RESOLVE_NO_SYMLINKS
            | ResolveFlag::RESOLVE_NO_MAGICLINKS,
    );
    match nix::fcntl::openat2(root, &path, how) {
        Err(Errno::ENOSYS | Errno::EPERM) => None,
        result => Some(result),
    }
}

#[cfg(not(target_os = "linux"))]
fn kernel_beneath(_: &OwnedFd, _: &[&std::ffi::OsStr], _: OFlag) -> Option<nix::Result<OwnedFd>> {
    None
}

/// Each folder opened from the previous one with `O_NOFOLLOW`: a link in
/// any position fails with `ELOOP` (or `ENOTDIR`), and `..` never occurs.
fn component_by_component(
    root: &OwnedFd,
    parts: &[&std::ffi::OsStr],
    flags: OFlag,
) -> nix::Result<OwnedFd> {
    let (last, folders) = parts.split_last().ok_or(Errno::ENOENT)?;
    let folder_flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut folder: Option<OwnedFd> = None;
    for part in folders {
        let at = folder.as_ref().unwrap_or(root);
        folder = Some(nix::fcntl::openat(at, *part, folder_flags, Mode::empty())?);
    }
    nix::fcntl::openat(folder.as_ref().unwrap_or(root), *last, flags, Mode::empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ways_refuse_links_and_open_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("a/f.md"), "inside").unwrap();
        std::os::unix::fs::symlink(dir.path().join("a"), dir.path().join("l")).unwrap();
        std::os::unix::fs::symlink("f.md", dir.path().join("a/g.md")).unwrap();
        let root = open_root(dir.path()).unwrap();
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        for (path, ok) in [("a/f.md", true), ("l/f.md", false), ("a/g.md", false)] {
            let parts: Vec<_> = Path::new(path).iter().collect();
            assert_eq!(
                component_by_component(&root, &parts, flags).is_ok(),
                ok,
                "{path}"
            );
            if let Some(result) = kernel_beneath(&root, &parts, flags) {
                assert_eq!(result.is_ok(), ok, "{path}");
            }
            assert_eq!(open(&root, Path::new(path)).is_ok(), ok, "{path}");
        }
        assert!(matches!(
            open(&root, Path::new("a")),
            Err(Refused::NotAFile)
        ));
    }
}
