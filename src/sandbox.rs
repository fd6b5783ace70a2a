//! Sandboxed processes: a command tool's or a stdio upstream's program run
//! under bubblewrap (`bwrap`, Debian's `bubblewrap`) when its configuration
//! has a `sandbox` table: new PID, IPC and UTS namespaces, no network unless
//! `network = true`, only the listed paths visible (`read_only`, `write`),
//! a fresh `/proc`, `/dev` and `/tmp`, and `--die-with-parent`: when
//! teamgate dies, even by SIGKILL, the kernel kills the sandbox's first
//! process, and with it, as its PID namespace's init, every process in it.
//!
//! Limits: `memory` is each process's address space (RLIMIT_AS, set by
//! util-linux's `prlimit` inside the sandbox), enforceable on any Linux
//! host. `cpu` and `processes` need cgroup v2 limits, which this version
//! does not set: `check-config` and `serve` say so for every sandbox that
//! asks for them ([`Host::unenforced`]).

use std::{path::PathBuf, process::Stdio, sync::OnceLock};

use crate::config::SandboxConfig;

/// What this host offers a sandbox.
#[derive(Debug, Clone)]
pub struct Host {
    /// bwrap's path, when it is installed and can make namespaces here.
    pub bwrap: Result<PathBuf, Unusable>,
    /// util-linux's `prlimit`, for the memory limit.
    pub prlimit: Option<PathBuf>,
    /// A cgroup v2 hierarchy is mounted at /sys/fs/cgroup.
    pub cgroup_v2: bool,
}

/// Why bwrap cannot serve on this host.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct Unusable(String);

/// Why a sandboxed program cannot start.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("the sandbox needs bubblewrap: {0}")]
    NoBwrap(Unusable),
    #[error("the sandbox's memory limit needs util-linux's prlimit, not found")]
    NoPrlimit,
    #[error("sandbox.memory: {0}")]
    Memory(#[from] crate::config::SizeError),
}

/// Where the programs a sandbox needs are looked for (not PATH: teamgate's
/// own environment does not choose them).
const BIN_DIRS: [&str; 4] = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"];
/// Top-level links into `/usr` on a merged-/usr system, recreated in the
/// sandbox so programs and their loader are found under a bound `/usr`.
const USR_LINKS: [&str; 5] = ["/bin", "/sbin", "/lib", "/lib64", "/lib32"];

fn find(program: &str) -> Option<PathBuf> {
    BIN_DIRS
        .iter()
        .map(|dir| PathBuf::from(dir).join(program))
        .find(|path| path.is_file())
}

impl Host {
    /// This host, probed once: bwrap run with the namespaces a sandbox uses.
    pub fn get() -> &'static Host {
        static HOST: OnceLock<Host> = OnceLock::new();
        HOST.get_or_init(Host::probe)
    }

    fn probe() -> Host {
        let bwrap = match find("bwrap") {
            None => Err(Unusable(
                "bwrap is not installed (Debian: apt-get install bubblewrap)".to_owned(),
            )),
            Some(path) => {
                let ran = std::process::Command::new(&path)
                    .args(["--ro-bind", "/", "/", "--unshare-pid", "--unshare-net"])
                    .args([
                        "--die-with-parent",
                        "--proc",
                        "/proc",
                        "--dev",
                        "/dev",
                        "true",
                    ])
                    .env_clear()
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .output();
                match ran {
                    Ok(out) if out.status.success() => Ok(path),
                    Ok(out) => Err(Unusable(format!(
                        "{} cannot make namespaces here: {}",
                        path.display(),
                        String::from_utf8_lossy(&out.stderr).trim()
                    ))),
                    Err(e) => Err(Unusable(format!("{} does not run: {e}", path.display()))),
                }
            }
        };
        let cgroup_v2 = std::fs::read_to_string("/proc/self/mounts").is_ok_and(|mounts| {
            mounts.lines().any(|line| {
                let mut fields = line.split(' ');
                fields.next() == Some("cgroup2") && fields.next() == Some("/sys/fs/cgroup")
            })
        });
        Host {
            bwrap,
            prlimit: find("prlimit"),
            cgroup_v2,
        }
    }

    /// The keys of `sandbox` this host (or this version) does not enforce.
    pub fn unenforced(&self, sandbox: &SandboxConfig) -> Vec<&'static str> {
        let mut keys = Vec::new();
        if sandbox.memory.is_some() && self.prlimit.is_none() {
            keys.push("memory");
        }
        if sandbox.cpu.is_some() {
            keys.push("cpu");
        }
        if sandbox.processes.is_some() {
            keys.push("processes");
        }
        keys
    }

    /// What this host can enforce, in one line (`check-config`, `serve`).
    pub fn summary(&self) -> String {
        let namespaces = match &self.bwrap {
            Ok(path) => format!("namespaces yes ({})", path.display()),
            Err(why) => format!("namespaces no ({why})"),
        };
        let memory = match &self.prlimit {
            Some(_) => "memory yes (address space per process, RLIMIT_AS)",
            None => "memory no (util-linux's prlimit not found)",
        };
        let cgroups = match self.cgroup_v2 {
            true => "cgroup v2 mounted, but this version sets no cgroup limits",
            false => "no cgroup v2 at /sys/fs/cgroup",
        };
        format!("sandbox: {namespaces}; {memory}; cpu and processes no ({cgroups})")
    }
}

/// The program and argv that run `program args` in `sandbox`: bwrap's
/// options, then prlimit's when a memory limit applies, then the command.
pub fn wrap(
    sandbox: &SandboxConfig,
    program: &str,
    args: &[String],
    cwd: Option<&str>,
) -> Result<(PathBuf, Vec<String>), SandboxError> {
    let host = Host::get();
    let bwrap = host.bwrap.clone().map_err(SandboxError::NoBwrap)?;
    let mut argv: Vec<String> = [
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
    ]
    .map(str::to_owned)
    .to_vec();
    if !sandbox.network {
        argv.push("--unshare-net".into());
    }
    let listed = |path: &str| (sandbox.read_only.iter().chain(&sandbox.write)).any(|p| p == path);
    for path in &sandbox.read_only {
        argv.extend(["--ro-bind-try".into(), path.clone(), path.clone()]);
    }
    for path in &sandbox.write {
        argv.extend(["--bind".into(), path.clone(), path.clone()]);
    }
    for link in USR_LINKS.iter().filter(|link| !listed(link)) {
        if let Ok(target) = std::fs::read_link(link)
            && target.starts_with("usr/")
            && listed("/usr")
        {
            argv.extend([
                "--symlink".into(),
                target.to_string_lossy().into(),
                (*link).into(),
            ]);
        }
    }
    if let Some(cwd) = cwd {
        argv.extend(["--chdir".into(), cwd.to_owned()]);
    }
    argv.push("--".into());
    if let Some(bytes) = sandbox.memory_bytes()? {
        let prlimit = host.prlimit.clone().ok_or(SandboxError::NoPrlimit)?;
        argv.push(prlimit.to_string_lossy().into_owned());
        argv.push(format!("--as={bytes}"));
        argv.push("--".into());
    }
    argv.push(program.to_owned());
    argv.extend(args.iter().cloned());
    Ok((bwrap, argv))
}

/// Each sandbox `config` asks for, with the key that names it.
fn sandboxes(config: &crate::Config) -> Vec<(String, &SandboxConfig)> {
    let tools = (config.tools.command.iter().enumerate()).filter_map(|(i, tool)| {
        Some((
            format!("tools.command[{i}] ({})", tool.name),
            tool.sandbox.as_ref()?,
        ))
    });
    let upstreams = (config.upstreams.iter().enumerate()).filter_map(|(i, up)| {
        Some((
            format!("upstreams[{i}] ({})", up.name),
            up.sandbox.as_ref()?,
        ))
    });
    tools.chain(upstreams).collect()
}

/// What `check-config` and `serve` say of `config`'s sandboxes: problems
/// (bwrap missing or unable to make namespaces here, a memory size that does
/// not read) and notes (what this host enforces, and which asked-for limits
/// it does not). Nothing, and no probe, without a sandbox.
pub fn review(config: &crate::Config) -> (Vec<String>, Vec<String>) {
    let sandboxes = sandboxes(config);
    let (mut problems, mut notes) = (Vec::new(), Vec::new());
    if sandboxes.is_empty() {
        return (problems, notes);
    }
    let host = Host::get();
    notes.push(host.summary());
    for (key, sandbox) in sandboxes {
        if let Err(why) = &host.bwrap {
            problems.push(format!("{key}: sandbox: needs bubblewrap: {why}"));
        }
        if let Err(why) = sandbox.memory_bytes() {
            problems.push(format!("{key}: sandbox.memory: {why}"));
        }
        let unenforced = host.unenforced(sandbox);
        if !unenforced.is_empty() {
            notes.push(format!(
                "{key}: sandbox limits not enforced on this host: {}",
                unenforced.join(", ")
            ));
        }
    }
    (problems, notes)
}
