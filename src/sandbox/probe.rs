//! Probing this host, once: can bwrap make namespaces, does RLIMIT_NPROC
//! bind in a user namespace, is there a delegated cgroup v2.

use std::process::Stdio;

use super::{Host, Unusable, cgroup, find};

impl Host {
    pub(super) fn probe() -> Host {
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
        let mut host = Host {
            nproc: Err(Unusable("bwrap cannot run here".to_owned())),
            bwrap,
            prlimit: find("prlimit"),
            setpriv: find("setpriv"),
            root: std::fs::metadata("/proc/self").is_ok_and(|m| {
                use std::os::unix::fs::MetadataExt;
                m.uid() == 0
            }),
            cgroup: cgroup::detect(),
        };
        host.nproc = host.probe_nproc();
        host
    }

    /// Whether a fork over RLIMIT_NPROC fails in a sandbox's user namespace:
    /// under a limit of 2 (its init and the shell) the shell's subshell must
    /// not start.
    fn probe_nproc(&self) -> Result<(), Unusable> {
        let (bwrap, sh) = match (&self.bwrap, find("sh")) {
            (Ok(bwrap), Some(sh)) => (bwrap.clone(), sh),
            (Err(why), _) => return Err(why.clone()),
            (_, None) => return Err(Unusable("no sh to probe with".to_owned())),
        };
        let prlimit = (self.prlimit.clone())
            .ok_or_else(|| Unusable("util-linux's prlimit not found".to_owned()))?;
        let mut words = self.leave_root()?;
        words.push(bwrap.to_string_lossy().into_owned());
        words.extend(
            ["--ro-bind", "/", "/", "--unshare-user", "--unshare-pid"]
                .iter()
                .chain(&["--die-with-parent", "--proc", "/proc", "--dev", "/dev"])
                .map(|w| (*w).to_owned()),
        );
        words.extend([
            "--".into(),
            prlimit.to_string_lossy().into_owned(),
            "--nproc=2:2".into(),
            "--".into(),
            sh.to_string_lossy().into_owned(),
            "-c".into(),
            "echo started; (exit 0) && echo forked".into(),
        ]);
        let out = std::process::Command::new(&words[0])
            .args(&words[1..])
            .env_clear()
            .stdin(Stdio::null())
            .output()
            .map_err(|e| Unusable(format!("{} does not run: {e}", words[0])))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        match (stdout.contains("started"), stdout.contains("forked")) {
            (true, false) => Ok(()),
            (true, true) => Err(Unusable(
                "RLIMIT_NPROC does not bind in a user namespace here (Linux before 5.14?)"
                    .to_owned(),
            )),
            (false, _) => Err(Unusable(format!(
                "bwrap cannot make a user namespace here: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))),
        }
    }
}
