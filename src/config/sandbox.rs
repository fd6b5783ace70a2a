//! `sandbox = { ... }` on a command tool or a stdio upstream: what the
//! process may see and use (`crate::sandbox` runs it so).

use serde::{Deserialize, Serialize};

/// Why `memory` does not read as a size.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SizeError {
    #[error("`{0}` is not a size such as \"512M\"")]
    NotASize(String),
    #[error("`{0}` is under 1M, too little to start a program")]
    TooSmall(String),
    #[error("`{0}` is too large")]
    TooLarge(String),
}

/// A sandbox's namespaces and limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Keep the host's network; false (the default): only a loopback of its own.
    #[serde(default)]
    pub network: bool,
    /// Paths visible read-only, each at its own place (a missing one is
    /// skipped); `/bin`, `/lib`, `/lib64` and `/sbin` follow `/usr` where
    /// they are links into it (merged /usr).
    #[serde(default = "default_read_only")]
    pub read_only: Vec<String>,
    /// Paths visible and writable.
    #[serde(default)]
    pub write: Vec<String>,
    /// Address space per process, e.g. `"512M"` (K, M, G: powers of 1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// CPUs the sandbox may use (`cpu.max`; only where the host delegates
    /// cgroup v2 controllers to teamgate, `crate::sandbox`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<f64>,
    /// Processes at once at most (RLIMIT_NPROC in a user namespace of the
    /// sandbox's own; `pids.max` too where cgroup v2 is delegated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<u32>,
}

fn default_read_only() -> Vec<String> {
    ["/usr", "/etc"].map(str::to_owned).to_vec()
}

impl SandboxConfig {
    /// `memory` in bytes; `Err` says why it does not read as a size.
    pub fn memory_bytes(&self) -> Result<Option<u64>, SizeError> {
        let Some(text) = &self.memory else {
            return Ok(None);
        };
        let text = text.trim();
        let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
            Some(at) => text.split_at(at),
            None => (text, ""),
        };
        let shift = match unit.trim().to_ascii_uppercase().as_str() {
            "" | "B" => 0,
            "K" | "KB" | "KIB" => 10,
            "M" | "MB" | "MIB" => 20,
            "G" | "GB" | "GIB" => 30,
            _ => return Err(SizeError::NotASize(text.to_owned())),
        };
        let n: u64 = digits
            .parse()
            .map_err(|_| SizeError::NotASize(text.to_owned()))?;
        match n.checked_mul(1 << shift) {
            Some(bytes) if bytes >= 1 << 20 => Ok(Some(bytes)),
            Some(_) => Err(SizeError::TooSmall(text.to_owned())),
            None => Err(SizeError::TooLarge(text.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(memory: &str) -> SandboxConfig {
        SandboxConfig {
            network: false,
            read_only: default_read_only(),
            write: Vec::new(),
            memory: Some(memory.into()),
            cpu: None,
            processes: None,
        }
    }

    #[test]
    fn memory_reads_as_a_size() {
        assert_eq!(with("512M").memory_bytes(), Ok(Some(512 << 20)));
        assert_eq!(with("2G").memory_bytes(), Ok(Some(2 << 30)));
        assert_eq!(with("1048576").memory_bytes(), Ok(Some(1 << 20)));
        assert!(with("512X").memory_bytes().is_err());
        assert!(with("12K").memory_bytes().is_err());
        assert!(with("M").memory_bytes().is_err());
    }
}
