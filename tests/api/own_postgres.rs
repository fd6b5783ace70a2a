//! A PostgreSQL of the test's own, made with Debian's `initdb` in a
//! temporary directory and started and stopped with `pg_ctl`, for tests
//! that take the database away (the machine's shared one stays up). Run as
//! the `postgres` user when the tests run as root (initdb refuses root).

use std::{
    path::{Path, PathBuf},
    process::Command,
};

pub(crate) struct OwnPostgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub port: u16,
}

/// The newest installed server's `bin/`, if any.
fn server_bin() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").exists() && bin.join("pg_ctl").exists())
        .collect();
    versions.sort();
    versions.pop()
}

fn as_owner(program: &Path) -> Command {
    if nix::unistd::Uid::effective().is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

fn run(mut command: Command, what: &str) {
    let output = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        output.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

impl OwnPostgres {
    /// A fresh cluster, started; `None` when no PostgreSQL server is installed
    /// (outside CI: `scripts/install-test-deps.sh` installs it).
    pub(crate) fn start() -> Option<Self> {
        let bin = server_bin()?;
        let dir = tempfile::tempdir().unwrap();
        if nix::unistd::Uid::effective().is_root() {
            let owner = nix::unistd::User::from_name("postgres").ok()??;
            nix::unistd::chown(dir.path(), Some(owner.uid), Some(owner.gid)).unwrap();
        }
        let data = dir.path().join("data");
        let mut initdb = as_owner(&bin.join("initdb"));
        initdb
            .args(["-A", "trust", "-U", "postgres", "-D"])
            .arg(&data);
        run(initdb, "initdb");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let own = Self { dir, bin, port };
        own.start_again();
        Some(own)
    }

    pub(crate) fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn pg_ctl(&self, args: &[&str]) -> Command {
        let mut command = as_owner(&self.bin.join("pg_ctl"));
        command
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(args);
        command
    }

    /// Starts the server (again), waiting until it takes connections.
    pub(crate) fn start_again(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("log");
        let mut start = self.pg_ctl(&["-w", "-o", &options, "-l"]);
        start.arg(&log).arg("start");
        run(start, "pg_ctl start");
    }

    /// Stops the server (fast: open connections are ended), waiting for it.
    pub(crate) fn stop(&self) {
        run(self.pg_ctl(&["-w", "-m", "fast", "stop"]), "pg_ctl stop");
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        let _ = self.pg_ctl(&["-w", "-m", "immediate", "stop"]).output();
    }
}
