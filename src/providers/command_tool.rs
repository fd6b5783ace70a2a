//! `[[tools.command]]`: one process per call, started without a shell in its
//! own process group, with a cleared environment plus the allowed variables.
//! Output is captured up to a budget (head and tail kept) and, when the
//! client asked for progress, streamed line by line as progress messages.
//! Cancellation, timeout, the end of the call and its future being dropped
//! (the client went away) kill every process it started (`tree.rs`).

use std::{collections::HashMap, process::Stdio, time::Duration};

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::{
    io::{AsyncRead, AsyncReadExt},
    process::Command,
    sync::mpsc,
};

use super::declared::{
    KindDefaults, Runner, structured_result,
    template::{as_text, names, render},
};
use crate::registry::{Slots, Template};
use crate::{
    config::CommandToolConfig,
    protocol::{CallToolResponse, CallToolResult, JsonObject},
    registry::{CallContext, StreamScrub},
};

mod capture;
mod tree;

use capture::Capture;

/// Longest line sent as one progress message.
const MAX_PROGRESS_LINE: usize = 500;
/// Lines waiting to become progress notifications; more are dropped.
const PROGRESS_QUEUE: usize = 64;
/// How long readers may take to drain the pipes after the group is killed.
const DRAIN: Duration = Duration::from_secs(2);

pub struct CommandRunner {
    name: String,
    program: String,
    args: Vec<String>,
    cwd: Option<String>,
    env: HashMap<String, String>,
    /// `VAR=${user:NAME}` entries of `secret_env`, filled per call.
    member_env: Vec<(String, Template)>,
    /// Whether `secret_env` passes configured secrets (for the audit record).
    shared_secret: bool,
    slots: Slots,
    timeout: Duration,
    max_bytes: usize,
    structured: bool,
    sandbox: Option<crate::config::SandboxConfig>,
}

impl CommandRunner {
    /// Builds the runner for `tools.command[index]`, adding the values of its
    /// `secret_env` to `secrets`; `slots` fills its `VAR=${user:NAME}` entries.
    pub fn new(
        index: usize,
        config: &CommandToolConfig,
        slots: &Slots,
        secrets: &mut Vec<String>,
    ) -> anyhow::Result<(Self, KindDefaults)> {
        let mut member_env = Vec::new();
        let held = secrets.len();
        let mut env = HashMap::new();
        for name in &config.env {
            if let Ok(value) = std::env::var(name) {
                env.insert(name.clone(), value);
            }
        }
        for (j, entry) in config.secret_env.iter().enumerate() {
            if let Some((name, template)) = entry.split_once('=') {
                let key = format!("tools.command[{index}].secret_env[{j}]");
                let template = Template::parse(template, &key, secrets)?;
                match template.fixed() {
                    Some(value) => {
                        env.insert(name.to_owned(), value.to_owned());
                    }
                    None => member_env.push((name.to_owned(), template)),
                }
                continue;
            }
            let name = entry;
            let key = format!("tools.command[{index}].secret_env[{j}]");
            let value = crate::config::env_value(&key, name)?;
            secrets.push(value.clone());
            env.insert(name.clone(), value);
        }
        let runner = Self {
            name: config.name.clone(),
            program: config.program.clone(),
            args: config.args.clone(),
            cwd: config.cwd.clone(),
            env,
            member_env,
            shared_secret: secrets.len() > held,
            slots: slots.clone(),
            timeout: config.timeout,
            max_bytes: config.max_output_bytes,
            structured: config.output_schema.is_some(),
            sandbox: config.sandbox.clone(),
        };
        let defaults = KindDefaults {
            open_world: false,
            output_schema: (!runner.structured).then(output_schema),
            // Commands are the slow tools (tests, builds, deploys).
            task: crate::config::TaskMode::Optional,
        };
        Ok((runner, defaults))
    }

    /// One argv item per template item; an item whose placeholders all name
    /// absent arguments is dropped (optional flags).
    fn argv(&self, arguments: &JsonObject) -> Vec<String> {
        self.args
            .iter()
            .filter(|item| {
                let used = names(item);
                used.is_empty() || used.iter().any(|n| arguments.contains_key(*n))
            })
            .map(|item| render(item, false, |n| arguments.get(n).map(as_text)))
            .collect()
    }
}

fn output_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "exitCode": {"type": ["integer", "null"]},
            "timedOut": {"type": "boolean"},
            "stdout": {"type": "string"},
            "stderr": {"type": "string"}
        },
        "required": ["exitCode", "timedOut", "stdout", "stderr"]
    })
}

/// Reads a pipe into a capture, sending complete lines (bounded) to `lines`.
/// Secrets are scrubbed from the stream first, so neither a line cut nor the
/// capture's head and tail can split one into halves that pass the scrubber.
async fn pump(
    mut pipe: impl AsyncRead + Unpin,
    mut capture: Capture,
    lines: mpsc::Sender<String>,
    mut scrub: StreamScrub,
) -> Capture {
    let mut buffer = [0u8; 8192];
    let mut line = Vec::new();
    let mut take = |clean: Vec<u8>, capture: &mut Capture| {
        capture.push(&clean);
        for byte in clean {
            if byte == b'\n' || line.len() >= MAX_PROGRESS_LINE {
                let _ = lines.try_send(String::from_utf8_lossy(&line).into_owned());
                line.clear();
            }
            if byte != b'\n' {
                line.push(byte);
            }
        }
    };
    while let Ok(n) = pipe.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        take(scrub.push(&buffer[..n]), &mut capture);
    }
    take(scrub.finish(), &mut capture);
    if !line.is_empty() {
        let _ = lines.try_send(String::from_utf8_lossy(&line).into_owned());
    }
    capture
}

enum Ending {
    Exited(Option<i32>),
    TimedOut,
    Cancelled,
}

#[async_trait]
impl Runner for CommandRunner {
    fn timeout(&self) -> Duration {
        self.timeout
    }

    fn per_caller(&self) -> bool {
        !self.member_env.is_empty()
    }

    async fn withheld(&self, cx: &CallContext) -> Option<CallToolResponse> {
        let templates: Vec<&Template> = self.member_env.iter().map(|(_, t)| t).collect();
        if templates.is_empty() {
            return None;
        }
        self.slots.withheld(&templates, &self.name, cx).await
    }

    async fn run(&self, arguments: &JsonObject, cx: &CallContext) -> CallToolResult {
        if self.shared_secret {
            cx.credential()
                .report(crate::registry::CredentialKind::Shared);
        }
        let mut member_env = Vec::new();
        let mut used = Vec::new();
        for (name, template) in &self.member_env {
            let filled = (self.slots)
                .render(template, (&self.name, cx), str::to_owned, &mut used)
                .await;
            match filled {
                Ok(value) => member_env.push((name, value)),
                Err(message) => return super::declared::text_result(message.to_string(), true),
            }
        }
        // A member's own values are scrubbed like the configured secrets.
        let scrubber = if used.is_empty() {
            cx.scrubber().clone()
        } else {
            cx.scrubber().with(used)
        };
        // In a sandbox, bwrap runs the program (`crate::sandbox`).
        // Its cgroup, if any, is removed when this call ends.
        let (program, argv, _cgroup) = match &self.sandbox {
            None => (self.program.clone().into(), self.argv(arguments), None),
            Some(sandbox) => {
                let (argv, cwd) = (self.argv(arguments), self.cwd.as_deref());
                match crate::sandbox::wrap(sandbox, &self.program, &argv, cwd) {
                    Ok(wrapped) => (wrapped.program, wrapped.args, wrapped.cgroup),
                    Err(e) => {
                        let message = format!("`{}` could not start: {e}", self.name);
                        return super::declared::text_result(message, true);
                    }
                }
            }
        };
        let mut command = Command::new::<std::path::PathBuf>(program);
        command
            .args(argv)
            .env_clear()
            .envs(&self.env)
            .envs(member_env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(cwd) = &self.cwd {
            command.current_dir(cwd);
        }
        let (mut child, mut tree) = match tree::spawn(&mut command) {
            Ok(spawned) => spawned,
            Err(e) => {
                return super::declared::text_result(
                    format!("`{}` could not start {}: {e}", self.name, self.program),
                    true,
                );
            }
        };
        let (tx, mut lines) = mpsc::channel(PROGRESS_QUEUE);
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let capture = || Capture::new(self.max_bytes);
        let scrub = || scrubber.stream();
        let out = tokio::spawn(pump(stdout, capture(), tx.clone(), scrub()));
        let err = tokio::spawn(pump(stderr, capture(), tx, scrub()));
        let deadline = tokio::time::sleep(self.timeout);
        tokio::pin!(deadline);
        let mut sent = 0u32;
        let ending = loop {
            tokio::select! {
                status = child.wait() => break Ending::Exited(status.ok().and_then(|s| s.code())),
                () = &mut deadline => break Ending::TimedOut,
                () = cx.cancellation().cancelled() => break Ending::Cancelled,
                Some(line) = lines.recv() => {
                    sent += 1;
                    // The context scrubs configured secrets from the message.
                    cx.progress(f64::from(sent), None, Some(&line)).await;
                }
            }
        };
        // Whatever ended the call, nothing it started may outlive it; the
        // walk through /proc runs off the async workers.
        if matches!(ending, Ending::Exited(_)) {
            tree.root_reaped();
        }
        let _ = tokio::task::spawn_blocking(move || drop(tree)).await;
        let _ = child.wait().await;
        let drain = |task: tokio::task::JoinHandle<Capture>| async move {
            match tokio::time::timeout(DRAIN, task).await {
                Ok(Ok(capture)) => capture.finish(),
                _ => String::new(),
            }
        };
        let (stdout, stderr) = (drain(out).await, drain(err).await);
        // Lines read after the exit won the race above still count as
        // progress (at most the queue's worth).
        if !matches!(ending, Ending::Cancelled) {
            while let Ok(line) = lines.try_recv() {
                sent += 1;
                cx.progress(f64::from(sent), None, Some(&line)).await;
            }
        }
        let (exit_code, timed_out) = match ending {
            Ending::Exited(code) => (code, false),
            Ending::TimedOut => (None, true),
            Ending::Cancelled => {
                return super::declared::text_result("cancelled; the process was killed", true);
            }
        };
        let failed = timed_out || exit_code != Some(0);
        if self.structured && !failed {
            return match serde_json::from_str::<Value>(&stdout) {
                Ok(value) => structured_result(value, false),
                Err(e) => super::declared::text_result(
                    format!("`{}` did not print JSON ({e}):\n{stdout}", self.name),
                    true,
                ),
            };
        }
        if self.structured {
            let message = if timed_out {
                format!(
                    "timed out after {:?}; the process group was killed\n{stdout}{stderr}",
                    self.timeout
                )
            } else {
                format!("exit code {exit_code:?}\n{stdout}{stderr}")
            };
            return super::declared::text_result(message, true);
        }
        let mut report = json!({
            "exitCode": exit_code,
            "timedOut": timed_out,
            "stdout": stdout,
            "stderr": stderr,
        });
        if timed_out {
            report["stderr"] = Value::from(format!(
                "{stderr}\n[teamgate: timed out after {:?}; the process group was killed]",
                self.timeout
            ));
        }
        // A process over its memory limit fails to allocate; say so.
        let limit = (self.sandbox.as_ref()).and_then(|sandbox| sandbox.memory.as_deref());
        if let Some(limit) = limit.filter(|_| failed && !timed_out) {
            report["stderr"] = Value::from(format!(
                "{stderr}\n[teamgate: the sandbox allows each process {limit} of memory \
                 (address space); an allocation over it fails]"
            ));
        }
        // A process over its process limit fails to fork; say so.
        let limit = (self.sandbox.as_ref()).and_then(|sandbox| sandbox.processes);
        if let Some(limit) = limit.filter(|_| failed && !timed_out) {
            let stderr = report["stderr"].as_str().unwrap_or_default();
            report["stderr"] = Value::from(format!(
                "{stderr}\n[teamgate: the sandbox allows {limit} processes at once; \
                 a fork over it fails]"
            ));
        }
        structured_result(report, failed)
    }
}
