//! cgroup v2 limits for a sandbox, where the host delegates them: a cgroup
//! per sandboxed process under teamgate's own (`teamgate-<random>`), with
//! `cpu.max`, `pids.max` and `memory.max` written before the process starts
//! and the process put in it by a shell that then execs bwrap, so nothing it
//! forks starts outside. Removed when the process ends ([`Cgroup`]'s drop).
//!
//! Only used when [`detect`] finds a cgroup v2 hierarchy whose controllers
//! `cpu`, `pids` and `memory` are enabled for teamgate's cgroup's children
//! and where teamgate can make a child. Not exercised by the tests of this
//! repository (their host is cgroup v1); [`files`] is unit-tested.

use std::path::{Path, PathBuf};

use super::Unusable;
use crate::config::{SandboxConfig, SizeError};

const ROOT: &str = "/sys/fs/cgroup";
/// The controllers a sandbox's cgroup needs.
const CONTROLLERS: [&str; 3] = ["cpu", "pids", "memory"];
/// cpu.max's period, in microseconds (the kernel's default).
const PERIOD: u64 = 100_000;

/// The directory under which each sandbox gets its cgroup, or why there is
/// none: the controllers not delegated, or no child can be made.
pub(super) fn detect() -> Result<PathBuf, Unusable> {
    let root = Path::new(ROOT);
    let offered = std::fs::read_to_string(root.join("cgroup.controllers"))
        .map_err(|_| Unusable("no cgroup v2 hierarchy at /sys/fs/cgroup".to_owned()))?;
    lists_all(&offered, "/sys/fs/cgroup/cgroup.controllers")?;
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let path = (own.lines().find_map(|line| line.strip_prefix("0::"))).ok_or_else(|| {
        Unusable("teamgate's cgroup v2 path is not in /proc/self/cgroup".to_owned())
    })?;
    let dir = root.join(path.trim_start_matches('/'));
    let enabled = std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
    lists_all(
        &enabled,
        &format!("{}/cgroup.subtree_control", dir.display()),
    )?;
    let probe = dir.join(format!("teamgate-probe-{}", std::process::id()));
    std::fs::create_dir(&probe)
        .map_err(|e| Unusable(format!("cannot make a cgroup under {}: {e}", dir.display())))?;
    let _ = std::fs::remove_dir(&probe);
    Ok(dir)
}

fn lists_all(text: &str, file: &str) -> Result<(), Unusable> {
    let missing: Vec<&str> = (CONTROLLERS.iter().copied())
        .filter(|wanted| !text.split_whitespace().any(|c| c == *wanted))
        .collect();
    match missing.is_empty() {
        true => Ok(()),
        false => Err(Unusable(format!(
            "{file} does not list {}",
            missing.join(", ")
        ))),
    }
}

/// The files written in a sandbox's cgroup, and what: `cpu.max` for `cpu`
/// (CPUs: quota per 100 ms period), `pids.max` for `processes`, `memory.max`
/// for `memory` (the whole sandbox's, as well as each process's RLIMIT_AS).
pub(super) fn files(sandbox: &SandboxConfig) -> Result<Vec<(&'static str, String)>, SizeError> {
    let mut files = Vec::new();
    if let Some(cpu) = sandbox.cpu {
        // The kernel's least quota is 1 ms.
        let quota = ((cpu * PERIOD as f64).round() as u64).max(1_000);
        files.push(("cpu.max", format!("{quota} {PERIOD}")));
    }
    if let Some(processes) = sandbox.processes {
        files.push(("pids.max", processes.to_string()));
    }
    if let Some(bytes) = sandbox.memory_bytes()? {
        files.push(("memory.max", bytes.to_string()));
    }
    Ok(files)
}

/// A sandbox's cgroup; dropping it kills what is left in it and removes it.
#[derive(Debug)]
pub struct Cgroup {
    dir: PathBuf,
}

impl Cgroup {
    /// Makes `teamgate-<random>` under `parent` with `files` written.
    pub fn create(parent: &Path, files: &[(&str, String)]) -> std::io::Result<Cgroup> {
        let dir = parent.join(format!("teamgate-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir(&dir)?;
        let cgroup = Cgroup { dir };
        for (file, value) in files {
            std::fs::write(cgroup.dir.join(file), value)?;
        }
        Ok(cgroup)
    }

    /// The file a process writes its pid to, to join this cgroup.
    pub fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        if std::fs::remove_dir(&self.dir).is_ok() {
            return;
        }
        // Processes left: kill them (Linux 5.14+), and remove it once gone.
        let _ = std::fs::write(self.dir.join("cgroup.kill"), "1");
        let dir = self.dir.clone();
        std::thread::spawn(move || {
            for _ in 0..50 {
                if std::fs::remove_dir(&dir).is_ok() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            tracing::warn!(cgroup = %dir.display(), "a sandbox's cgroup could not be removed");
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sandbox(toml: &str) -> SandboxConfig {
        toml::from_str(toml).unwrap()
    }

    #[test]
    fn the_files_written_say_the_limits() {
        let all = sandbox("cpu = 1.5\nprocesses = 64\nmemory = \"512M\"");
        assert_eq!(
            files(&all).unwrap(),
            [
                ("cpu.max", "150000 100000".to_owned()),
                ("pids.max", "64".to_owned()),
                ("memory.max", (512u64 << 20).to_string()),
            ]
        );
        assert_eq!(
            files(&sandbox("cpu = 0.25")).unwrap(),
            [("cpu.max", "25000 100000".to_owned())]
        );
        // Below the kernel's least quota, the least.
        assert_eq!(
            files(&sandbox("cpu = 0.001")).unwrap(),
            [("cpu.max", "1000 100000".to_owned())]
        );
        assert!(files(&sandbox("")).unwrap().is_empty());
        assert!(files(&sandbox("memory = \"lots\"")).is_err());
    }

    #[test]
    fn a_controller_missing_is_named() {
        assert!(lists_all("cpuset cpu io memory pids", "f").is_ok());
        let missing = lists_all("cpuset io memory", "f").unwrap_err();
        assert_eq!(missing.to_string(), "f does not list cpu, pids");
    }
}
