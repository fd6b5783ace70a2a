//! Nothing a command call starts outlives the call. Its process group is not
//! enough: a descendant that calls `setsid()` leaves it. So, on Linux:
//!
//! - every process of the call carries the call's `TEAMGATE_CALL` variable,
//!   and the tree is also followed through parent links;
//! - teamgate is a child subreaper: a descendant orphaned by a double fork,
//!   or left running when the call's process exits, comes to teamgate
//!   rather than to init, recognisable by that variable;
//! - when the call ends (exit, timeout, cancellation, or its future dropped
//!   because the client went away), [`Tree`]'s drop walks `/proc` for every
//!   process in the tree, stops them (no more forks), kills them, and repeats
//!   until none is left; then teamgate reaps the ones that became its own.
//!
//! A process that leaves the session, clears its environment and is
//! orphaned is not recognised. (Making the call's own process a subreaper
//! would keep such orphans under it while it lives, but needs code between
//! fork and exec, which only `unsafe` can run; the crate forbids it.)

use std::{
    collections::{HashMap, HashSet},
    sync::Once,
    time::Duration,
};

use nix::{
    sys::{
        signal::{Signal, kill, killpg},
        wait::{WaitPidFlag, waitpid},
    },
    unistd::Pid,
};
use tokio::process::{Child, Command};

/// The variable that marks a call's processes.
const MARKER: &str = "TEAMGATE_CALL";
/// Sweeps per call end; each takes what the one before missed (a fork
/// between the walk and the stop).
const ROUNDS: usize = 8;
/// How long killed processes that became teamgate's children are waited for.
const REAP_FOR: Duration = Duration::from_secs(5);

/// The processes of one call, ended when dropped.
pub(super) struct Tree {
    root: u32,
    marker: String,
    /// The root was waited for: its id may belong to someone else now.
    root_reaped: bool,
}

/// Starts `command` as the root of a call's tree: in its own process group,
/// killed when its handle is dropped, and marked. teamgate is a subreaper,
/// so what the tree's processes leave behind is adopted by it, and found
/// by the mark, not lost to init.
pub(super) fn spawn(command: &mut Command) -> std::io::Result<(Child, Tree)> {
    static ADOPT: Once = Once::new();
    ADOPT.call_once(|| {
        if let Err(error) = become_subreaper() {
            tracing::warn!(%error, "cannot adopt orphaned command processes");
        }
    });
    let marker = hex::encode(rand::random::<[u8; 16]>());
    command
        .env(MARKER, &marker)
        .process_group(0)
        .kill_on_drop(true);
    let child = command.spawn()?;
    let root = child.id().unwrap_or_default();
    let tree = Tree {
        root,
        marker: format!("{MARKER}={marker}"),
        root_reaped: false,
    };
    Ok((child, tree))
}

/// Makes the calling process a child subreaper: orphans below it come to
/// it rather than to init. Linux only; elsewhere the process group is all.
fn become_subreaper() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    nix::sys::prctl::set_child_subreaper(true)?;
    Ok(())
}

impl Tree {
    /// The root exited and was waited for; what it left behind is still
    /// ended when the tree is dropped.
    pub(super) fn root_reaped(&mut self) {
        self.root_reaped = true;
    }

    fn root(&self) -> Option<Pid> {
        i32::try_from(self.root)
            .ok()
            .filter(|pid| *pid > 0)
            .map(Pid::from_raw)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let live_root = self.root().filter(|_| !self.root_reaped);
        if let Some(root) = live_root {
            let _ = kill(root, Signal::SIGSTOP);
        }
        let mut killed = HashSet::new();
        for _ in 0..ROUNDS {
            let members = self.members(live_root);
            if members.is_empty() {
                break;
            }
            for pid in &members {
                let _ = kill(*pid, Signal::SIGSTOP);
            }
            for pid in &members {
                let _ = kill(*pid, Signal::SIGKILL);
            }
            killed.extend(members);
        }
        if let Some(root) = self.root() {
            // The group as well, as before: its members need no marker.
            // ESRCH (already gone) is the normal case after a clean exit.
            let _ = killpg(root, Signal::SIGKILL);
        }
        if let Some(root) = live_root {
            let _ = kill(root, Signal::SIGKILL);
        }
        reap(killed);
    }
}

/// One process as `/proc/<pid>/stat` describes it.
struct Stat {
    pid: i32,
    parent: i32,
    zombie: bool,
}

fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
    let mut fields = text.get(text.rfind(')')? + 1..)?.split_whitespace();
    let state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    Some(Stat {
        pid,
        parent,
        zombie: state == "Z" || state == "X",
    })
}

fn processes() -> Vec<Stat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .collect()
}

impl Tree {
    /// Every live process of the call: the descendants of the live root,
    /// and teamgate's adopted orphans that carry the call's marker, with
    /// their descendants. The root itself is not among them.
    fn members(&self, live_root: Option<Pid>) -> Vec<Pid> {
        let me = std::process::id() as i32;
        let all = processes();
        let mut children: HashMap<i32, Vec<&Stat>> = HashMap::new();
        for p in &all {
            children.entry(p.parent).or_default().push(p);
        }
        let mut stack: Vec<i32> = live_root.map(Pid::as_raw).into_iter().collect();
        let mut members = Vec::new();
        for adopted in children.get(&me).into_iter().flatten() {
            if !adopted.zombie
                && Some(adopted.pid) != live_root.map(Pid::as_raw)
                && self.marks(adopted.pid)
            {
                members.push(Pid::from_raw(adopted.pid));
                stack.push(adopted.pid);
            }
        }
        while let Some(parent) = stack.pop() {
            for child in children.get(&parent).into_iter().flatten() {
                if !child.zombie && child.pid != me {
                    members.push(Pid::from_raw(child.pid));
                    stack.push(child.pid);
                }
            }
        }
        members
    }

    /// Whether `pid` was started with this call's marker.
    fn marks(&self, pid: i32) -> bool {
        std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
            environ
                .split(|b| *b == 0)
                .any(|entry| entry == self.marker.as_bytes())
        })
    }
}

/// Waits for the killed processes that are, or become, teamgate's children
/// (a killed process whose parent died too is re-parented to teamgate), so
/// none stays a zombie. Bounded; in the background when a runtime runs.
fn reap(killed: HashSet<Pid>) {
    if killed.is_empty() {
        return;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        let mut pending = killed;
        let deadline = tokio::time::Instant::now() + REAP_FOR;
        while !pending.is_empty() && tokio::time::Instant::now() < deadline {
            pending.retain(|pid| {
                match waitpid(*pid, Some(WaitPidFlag::WNOHANG)) {
                    // Ours and dead now: reaped.
                    Ok(status) if status.pid().is_some() => false,
                    // Ours, not dead yet; or not (yet) ours: keep while it exists.
                    _ => std::path::Path::new(&format!("/proc/{pid}")).exists(),
                }
            });
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
}
