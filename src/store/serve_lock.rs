//! One `teamgate serve` per SQLite file. SQLite lets a second process open
//! the file, and two servers on it would each run the background loops and
//! hold their own sessions, streams and limits; so `serve` takes an
//! exclusive lock on `<file>.serve-lock` for its lifetime (released by the
//! kernel when the process ends, however it ends). The admin commands
//! (`token`, `sessions`, ...) do not take it and keep working beside a server.

use std::{
    fs::File,
    io::{Read, Seek, Write},
    os::unix::fs::OpenOptionsExt,
    path::PathBuf,
};

use nix::fcntl::{Flock, FlockArg, OFlag};

/// Held while the server runs; dropping it releases the lock.
pub struct ServeLock {
    _lock: Option<Flock<File>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeLockError {
    #[error(
        "another `teamgate serve` (pid {pid}) already serves the SQLite store {}: one SQLite file \
         serves one server. Stop it, give this one its own store.url, or put the replicas on \
         PostgreSQL (docs/operations.md, Topologies)",
        file.display()
    )]
    Held { file: PathBuf, pid: String },
    #[error("cannot open the lock file {}: {source}", file.display())]
    Open {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "the lock file {} is not a regular file (a link, a folder or a device): remove it and \
         start again; serve writes only to a regular file of its own",
        file.display()
    )]
    NotAFile { file: PathBuf },
}

impl ServeLock {
    /// Takes the lock for `url` when it names a SQLite file; PostgreSQL is
    /// shared by design and takes none.
    pub fn take(url: &str) -> Result<Self, super::StoreError> {
        if !url.starts_with("sqlite:") {
            return Ok(Self { _lock: None });
        }
        let database = super::sqlite_file(url)?;
        let mut name = database.clone().into_os_string();
        name.push(".serve-lock");
        let file = PathBuf::from(name);
        if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
            let _ = std::fs::create_dir_all(parent);
        }
        // A link planted at the lock's path would have serve create or
        // overwrite its target: never follow one, and never block on a FIFO.
        let opened = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .custom_flags((OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK).bits())
            .open(&file)
            .map_err(|source| match source.raw_os_error() {
                Some(code) if code == nix::libc::ELOOP => {
                    ServeLockError::NotAFile { file: file.clone() }
                }
                _ => ServeLockError::Open {
                    file: file.clone(),
                    source,
                },
            })?;
        if !opened
            .metadata()
            .is_ok_and(|meta| meta.file_type().is_file())
        {
            return Err(ServeLockError::NotAFile { file }.into());
        }
        let mut lock = match Flock::lock(opened, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => lock,
            Err((mut held, _)) => {
                // Read through the handle opened above, not the path again.
                let mut pid = String::new();
                let _ = held.rewind().and_then(|_| held.read_to_string(&mut pid));
                let pid = pid.trim();
                let pid = if pid.is_empty() { "unknown" } else { pid };
                return Err(ServeLockError::Held {
                    file: database,
                    pid: pid.to_owned(),
                }
                .into());
            }
        };
        // The holder's pid, for the message a second server prints.
        let _ = lock.set_len(0);
        let _ = write!(lock, "{}", std::process::id());
        Ok(Self { _lock: Some(lock) })
    }
}
