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
//! host. `processes` is RLIMIT_NPROC, set the same way in a user namespace
//! of the sandbox's own: since Linux 5.14 it counts the processes of one
//! uid in one user namespace, and binds even a process teamgate started as
//! root, since the sandbox runs as [`SANDBOX_UID`] then (util-linux's
//! `setpriv` before bwrap). `cpu` (and `pids.max`, `memory.max` as well)
//! are cgroup v2 limits, set only where the host delegates the controllers
//! (`cgroup.rs`). `check-config` and `serve` say what this host enforces
//! and which asked-for limits it does not ([`Host::unenforced`]).

mod cgroup;
mod probe;

use std::{path::PathBuf, sync::OnceLock};

pub use cgroup::Cgroup;

use crate::config::SandboxConfig;

/// The uid (and gid) outside its user namespace a sandbox with a
/// `processes` limit runs as when teamgate is root: `nobody`.
pub const SANDBOX_UID: u32 = 65534;

/// What this host offers a sandbox.
#[derive(Debug, Clone)]
pub struct Host {
    /// bwrap's path, when it is installed and can make namespaces here.
    pub bwrap: Result<PathBuf, Unusable>,
    /// util-linux's `prlimit`, for the memory and process limits.
    pub prlimit: Option<PathBuf>,
    /// util-linux's `setpriv`, to leave root before bwrap (`processes`).
    pub setpriv: Option<PathBuf>,
    /// teamgate runs as root (its effective uid is 0).
    pub root: bool,
    /// RLIMIT_NPROC binds in a sandbox's user namespace here, or why not.
    pub nproc: Result<(), Unusable>,
    /// The cgroup v2 directory under which each sandbox gets its cgroup,
    /// or why there is none.
    pub cgroup: Result<PathBuf, Unusable>,
}

/// A sandboxed program: what to run, and the cgroup to keep until it ends.
#[derive(Debug)]
pub struct Wrapped {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Removed (what is left in it killed) when dropped.
    pub cgroup: Option<Cgroup>,
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
    #[error("the sandbox's cgroup could not be made: {0}")]
    Cgroup(std::io::Error),
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

    /// The words that run bwrap as [`SANDBOX_UID`] when teamgate is root
    /// (RLIMIT_NPROC does not bind uid 0); none otherwise.
    fn leave_root(&self) -> Result<Vec<String>, Unusable> {
        if !self.root {
            return Ok(Vec::new());
        }
        let setpriv = (self.setpriv.as_ref())
            .ok_or_else(|| Unusable("util-linux's setpriv not found".to_owned()))?;
        Ok(vec![
            setpriv.to_string_lossy().into_owned(),
            format!("--reuid={SANDBOX_UID}"),
            format!("--regid={SANDBOX_UID}"),
            "--clear-groups".into(),
            "--".into(),
        ])
    }

    /// The keys of `sandbox` this host (or this version) does not enforce.
    pub fn unenforced(&self, sandbox: &SandboxConfig) -> Vec<&'static str> {
        let mut keys = Vec::new();
        if sandbox.memory.is_some() && self.prlimit.is_none() {
            keys.push("memory");
        }
        if sandbox.cpu.is_some() && self.cgroup.is_err() {
            keys.push("cpu");
        }
        if sandbox.processes.is_some() && self.nproc.is_err() && self.cgroup.is_err() {
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
        let uid = match self.root {
            true => format!(", run as uid {SANDBOX_UID}"),
            false => String::new(),
        };
        let processes = match (&self.nproc, &self.cgroup) {
            (Ok(()), _) => {
                format!("processes: enforced (RLIMIT_NPROC in a user namespace of its own{uid})")
            }
            (Err(_), Ok(_)) => "processes: enforced by cgroup v2 (pids.max)".to_owned(),
            (Err(why), Err(_)) => format!("processes: not enforced on this host ({why})"),
        };
        let cpu = match &self.cgroup {
            Ok(dir) => format!(
                "cpu: enforced by cgroup v2 (cgroups under {})",
                dir.display()
            ),
            Err(why) => format!(
                "cpu: not enforced on this host (no writable cgroup v2 with the cpu controller: {why})"
            ),
        };
        format!("sandbox: {namespaces}; {memory}; {processes}; {cpu}")
    }
}

/// What runs `program args` in `sandbox`: a shell that joins the sandbox's
/// cgroup where there is one, `setpriv` when a process limit needs teamgate
/// to leave root, bwrap and its options, then prlimit's when a memory or
/// process limit applies, then the command.
pub fn wrap(
    sandbox: &SandboxConfig,
    program: &str,
    args: &[String],
    cwd: Option<&str>,
) -> Result<Wrapped, SandboxError> {
    let host = Host::get();
    let bwrap = host.bwrap.clone().map_err(SandboxError::NoBwrap)?;
    let nproc = sandbox.processes.filter(|_| host.nproc.is_ok());
    let mut words = Vec::new();
    let mut cgroup = None;
    if let (Ok(parent), Some(sh)) = (&host.cgroup, find("sh")) {
        let files = cgroup::files(sandbox)?;
        if !files.is_empty() {
            let made = Cgroup::create(parent, &files).map_err(SandboxError::Cgroup)?;
            words.extend([
                sh.to_string_lossy().into_owned(),
                "-c".into(),
                "echo $$ > \"$0\" && exec \"$@\"".into(),
                made.procs().to_string_lossy().into_owned(),
            ]);
            cgroup = Some(made);
        }
    }
    if nproc.is_some() {
        words.extend(host.leave_root().map_err(SandboxError::NoBwrap)?);
    }
    words.push(bwrap.to_string_lossy().into_owned());
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
    if nproc.is_some() {
        // RLIMIT_NPROC counts per user namespace (Linux 5.14+).
        argv.push("--unshare-user".into());
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
    let memory = sandbox.memory_bytes()?;
    if memory.is_some() || nproc.is_some() {
        let prlimit = host.prlimit.clone().ok_or(SandboxError::NoPrlimit)?;
        argv.push(prlimit.to_string_lossy().into_owned());
        argv.extend(memory.map(|bytes| format!("--as={bytes}")));
        argv.extend(nproc.map(|n| format!("--nproc={n}:{n}")));
        argv.push("--".into());
    }
    argv.push(program.to_owned());
    argv.extend(args.iter().cloned());
    words.extend(argv);
    let program = PathBuf::from(words.remove(0));
    Ok(Wrapped {
        program,
        args: words,
        cgroup,
    })
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
        if let Some(cpu) = sandbox.cpu.filter(|cpu| !(*cpu > 0.0 && cpu.is_finite())) {
            problems.push(format!(
                "{key}: sandbox.cpu: {cpu} is not a positive number of CPUs"
            ));
        }
        if sandbox.processes == Some(0) {
            problems.push(format!(
                "{key}: sandbox.processes: 0 would not let it start"
            ));
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
