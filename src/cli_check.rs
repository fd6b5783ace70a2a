//! Every problem of a configuration in one round, for `check-config` and for
//! `serve`'s refusal alike: the keys serde refuses and the rules across keys
//! (`config::load`), then what `serve` would refuse once it builds (the store
//! rules, unset environment variables, the edge rules), checked on the
//! configuration read without the faulty keys. An operator fixes a file in
//! one pass instead of one problem per run.

use crate::config::{Config, ConfigError};

/// A configuration as read, and what is wrong with it.
pub(crate) struct Read {
    /// The configuration, without its faulty keys when `whole` is false.
    pub config: Config,
    /// Whether it loaded with no unknown, mistyped or inconsistent key.
    pub whole: bool,
    pub problems: Vec<String>,
}

/// What `serve` refuses before it builds anything, every one of them; an
/// error only when nothing could be read (a missing file, a file not TOML).
pub(crate) fn read(loaded: Result<Config, ConfigError>) -> anyhow::Result<Read> {
    let (config, whole, mut problems) = match loaded {
        Ok(config) => (config, true, Vec::new()),
        Err(ConfigError::Load {
            problems,
            rest: Some(rest),
        }) => (*rest, false, problems),
        Err(error) => return Err(error.into()),
    };
    problems.extend(config.state_keys_problem());
    problems.extend(config.credential_keys_problem());
    problems.extend(config.oauth_upstreams_problem());
    problems.extend(config.unset_environment());
    problems.extend(crate::sandbox::review(&config).0);
    if let Err(error) = crate::app::edge_config(&config) {
        problems.push(format!("{error:#}"));
    }
    Ok(Read {
        config,
        whole,
        problems,
    })
}

impl Read {
    /// `check-config`'s further checks: what must exist on disk, and every
    /// provider built (secrets read, docs read, roots opened, templates
    /// checked) when the rules across keys hold, which the build assumes.
    pub(crate) fn build(&mut self) {
        let missing = self.config.missing_on_disk();
        self.problems.extend(missing);
        if self.config.validate().is_err() {
            return;
        }
        // Each docs source is read once here, its index left in memory (and
        // so unbuilt): a watcher would outlive the check, and a running
        // server may be writing its index_dir.
        let mut built = self.config.clone();
        for docs in &mut built.sources.docs {
            docs.watch = false;
            docs.index_dir = None;
        }
        let bus = crate::registry::ChangeBus::default();
        if let Err(error) = crate::app::build_registry(&built, &bus, None) {
            let error = format!("{error:#}");
            // The build stops at its first problem, often one listed already.
            if !self.problems.iter().any(|p| error.contains(p.as_str())) {
                self.problems.push(error);
            }
        }
    }

    /// Each problem on a line of its own, then the error that ends the
    /// command; nothing when there is none.
    pub(crate) fn refuse(&self) -> anyhow::Result<()> {
        if self.problems.is_empty() {
            return Ok(());
        }
        for problem in &self.problems {
            eprintln!("problem: {problem}");
        }
        anyhow::bail!(
            "the configuration has {} problem(s), listed above",
            self.problems.len()
        )
    }
}
