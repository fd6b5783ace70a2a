//! `teamgate upstreams`: the configured upstream servers' pinned tool
//! definitions, read from the database, and the operator's approval of
//! changed ones. Like the other operator commands it works on the store
//! and the configuration, never on a running server's memory: a running
//! server (every replica) notices an approval within a couple of seconds.

use std::collections::BTreeSet;

use clap::Subcommand;
use serde_json::{Value, json};

use crate::{
    cli_table::Table,
    config::{Config, UpstreamConfig},
    store::{AuditRecord, PinRepo, PinRow, Store, dropped_tools_key},
};

#[derive(Debug, Subcommand)]
pub enum UpstreamsCommand {
    /// Each configured upstream: transport, auth (configured, and whether
    /// members' OAuth is in use: teamgate registered at the server or
    /// members connected), whether it pins, how many pinned tools are
    /// offered, the tools awaiting approval (what changed, or the exposed name
    /// they claim that another upstream had first), the tools a member
    /// confirms and why (configured, or annotated destructive), and the tools a
    /// running server does not offer (a name outside [A-Za-z0-9_.-]{1,128},
    /// listed twice, or taken by a tool listed before it).
    List {
        /// Print JSON, with each awaiting tool's pinned and new definitions.
        #[arg(long)]
        json: bool,
    },
    /// Approve changed tool definitions of upstream NAME: TOOL's (the
    /// upstream's own name, without the prefix), or every one awaiting.
    Approve { name: String, tool: Option<String> },
    /// Reject TOOL's changed definition (upstream NAME's own tool name): it
    /// stays withheld and is not proposed again; a different one is.
    Reject { name: String, tool: String },
}

pub async fn upstreams(command: UpstreamsCommand, config: Config) -> anyhow::Result<()> {
    let store = crate::cli_admin::open(&config).await?;
    match command {
        UpstreamsCommand::List { json } => list(&store, &config, json).await,
        UpstreamsCommand::Approve { name, tool } => {
            approve(&store, &config, &name, tool.as_deref()).await
        }
        UpstreamsCommand::Reject { name, tool } => reject(&store, &config, &name, &tool).await,
    }
}

/// How an upstream authenticates, as far as the store tells: its configured
/// `auth`, and whether members' OAuth is in use (teamgate's registration at
/// its authorization server or members' tokens kept in the vault: an
/// `auth = "auto"` upstream found to want OAuth). Values are never read.
struct Auth {
    configured: &'static str,
    in_use: bool,
    connected: usize,
}

impl Auth {
    async fn of(store: &Store, upstream: &UpstreamConfig) -> anyhow::Result<Self> {
        use crate::{
            config::UpstreamAuth,
            registry::oauth::{CLIENT_OWNER, token_slot},
            store::CredentialRepo,
        };
        let configured = match upstream.auth {
            UpstreamAuth::Auto if !upstream.may_detect_oauth() => "none",
            UpstreamAuth::Auto => "auto",
            UpstreamAuth::None => "none",
            UpstreamAuth::Oauth => "oauth",
        };
        let owners = match configured {
            "none" => Vec::new(),
            _ => (store.credential_owners(&token_slot(&upstream.name), 10_000)).await?,
        };
        let connected = owners.iter().filter(|o| *o != CLIENT_OWNER).count();
        Ok(Self {
            configured,
            in_use: !owners.is_empty(),
            connected,
        })
    }

    fn shown(&self) -> String {
        match (self.configured, self.in_use) {
            ("none", _) => "none".into(),
            ("oauth", _) => format!("oauth, {} connected", self.connected),
            (_, true) => format!("auto: oauth, {} connected", self.connected),
            (_, false) => "auto (no OAuth in use)".into(),
        }
    }
}

async fn list(store: &Store, config: &Config, json: bool) -> anyhow::Result<()> {
    let mut listed = Vec::new();
    for upstream in &config.upstreams {
        let pins = store.pins(Some(&upstream.name)).await?;
        let dropped = dropped(store, &upstream.name).await?;
        listed.push((upstream, pins, Auth::of(store, upstream).await?, dropped));
    }
    if json {
        let out: Vec<Value> = listed
            .iter()
            .map(|(upstream, pins, auth, dropped)| {
                let awaiting: Vec<Value> = awaiting(pins)
                    .map(|(row, pending)| {
                        json!({"tool": row.tool, "changed": changed_fields(&row.definition, &pending.definition),
                            "pinned": parse(&row.definition), "pending": parse(&pending.definition),
                            "changedMs": pending.changed_ms, "claims": claimed(upstream, row)})
                    })
                    .collect();
                json!({"name": upstream.name, "transport": transport(upstream), "auth": auth.configured,
                    "oauthInUse": auth.in_use, "membersConnected": auth.connected, "pin": upstream.pin,
                    "pinned": pinned(upstream, pins, dropped), "awaiting": awaiting, "dropped": dropped,
                    "rejected": pins.iter().filter(|r| r.is_rejected()).map(|r| &r.tool).collect::<Vec<_>>(),
                    "confirmed": confirmed(upstream, pins)})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let mut table = Table::new(&[
        ("NAME", 24),
        ("TRANSPORT", 48),
        ("AUTH", 28),
        ("PIN", 3),
        ("PINNED", 6),
        ("AWAITING APPROVAL", 80),
        ("NOT OFFERED", 80),
        ("CONFIRMED", 60),
    ]);
    for (upstream, pins, auth, dropped) in &listed {
        let waiting: Vec<String> = awaiting(pins)
            .map(|(row, pending)| match claimed(upstream, row) {
                Value::Null => {
                    let fields = changed_fields(&row.definition, &pending.definition);
                    format!("{} ({})", row.tool, fields.join(", "))
                }
                claim => format!(
                    "{} (claims the name {}, {}'s first)",
                    row.tool,
                    claim["name"].as_str().unwrap_or_default(),
                    claim["owner"].as_str().unwrap_or_default()
                ),
            })
            .collect();
        table.row(vec![
            upstream.name.clone(),
            transport(upstream),
            auth.shown(),
            if upstream.pin { "on" } else { "off" }.into(),
            pinned(upstream, pins, dropped).to_string(),
            if waiting.is_empty() {
                "-".into()
            } else {
                waiting.join("; ")
            },
            shown_dropped(dropped),
            shown_confirmed(&confirmed(upstream, pins)),
        ]);
    }
    print!("{}", table.render());
    Ok(())
}

async fn approve(
    store: &Store,
    config: &Config,
    name: &str,
    tool: Option<&str>,
) -> anyhow::Result<()> {
    let Some(upstream) = config.upstreams.iter().find(|u| u.name == name) else {
        let known: Vec<&str> = config.upstreams.iter().map(|u| u.name.as_str()).collect();
        anyhow::bail!(
            "no upstream named {name:?} is configured (configured: {})",
            if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            }
        );
    };
    let pins = store.pins(Some(name)).await?;
    if let Some(tool) = tool {
        let Some(row) = pins.iter().find(|row| row.tool == tool) else {
            let known: Vec<&str> = pins.iter().map(|row| row.tool.as_str()).collect();
            anyhow::bail!(
                "upstream {name} has no tool {tool:?} pinned (pinned: {}); name the upstream's own tool name, without the prefix",
                if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                }
            );
        };
        anyhow::ensure!(
            row.pending.is_some(),
            "tool {tool} of upstream {name} has no changed definition awaiting approval"
        );
    }
    let before: Vec<PinRow> = pins;
    let approved = store.approve(name, tool).await?;
    if approved.is_empty() {
        println!("nothing of upstream {name} awaits approval");
        return Ok(());
    }
    let user = operator();
    let mut records = Vec::new();
    for tool in &approved {
        let row = before.iter().find(|row| &row.tool == tool);
        let pending = row.and_then(|row| row.pending.as_ref());
        let fields = match (row, pending) {
            (Some(row), Some(pending)) => changed_fields(&row.definition, &pending.definition),
            _ => Vec::new(),
        };
        println!(
            "approved {name} tool {tool} as {} ({} changed)",
            upstream.exposed(tool),
            fields.join(", ")
        );
        let now = store.now_ms();
        // The approved definition's hash: which version was let through.
        let digest = pending.map(|p| p.hash.clone()).unwrap_or_default();
        let target = format!("{name}/{tool}");
        let action = ("upstreams/approve", target.as_str());
        records.push(AuditRecord::operator(now, &user, action, name, digest));
    }
    store.append_audit(&records).await?;
    if !upstream.pin {
        eprintln!(
            "note: upstream {name} has pin = false; its changed definitions pass through anyway (names claimed from another upstream do not)"
        );
    }
    eprintln!("running servers offer the approved definitions within a couple of seconds");
    Ok(())
}

async fn reject(store: &Store, config: &Config, name: &str, tool: &str) -> anyhow::Result<()> {
    anyhow::ensure!(
        config.upstreams.iter().any(|u| u.name == name),
        "no upstream named {name:?} is configured"
    );
    let pins = store.pins(Some(name)).await?;
    let pending = pins
        .iter()
        .find(|row| row.tool == tool)
        .and_then(|row| row.pending.clone());
    let Some(pending) = pending else {
        anyhow::bail!("tool {tool} of upstream {name} has no changed definition awaiting approval");
    };
    store.reject(name, tool).await?;
    let target = format!("{name}/{tool}");
    let action = ("upstreams/reject", target.as_str());
    let record = AuditRecord::operator(store.now_ms(), &operator(), action, name, pending.hash);
    store.append_audit(&[record]).await?;
    println!("rejected {name} tool {tool}'s changed definition; it stays withheld");
    Ok(())
}

/// Who ran the command, as far as the machine knows: the audit trail's user.
fn operator() -> String {
    match std::env::var("USER") {
        Ok(login) if !login.is_empty() => format!("cli:{login}"),
        _ => "cli".to_owned(),
    }
}

/// The tools of `upstream` a running server recorded as not offered:
/// `[{"tool": ..., "why": ...}]` (empty when none, or never recorded).
async fn dropped(store: &Store, upstream: &str) -> anyhow::Result<Vec<Value>> {
    let recorded = store.setting(&dropped_tools_key(upstream)).await?;
    let parsed = recorded.map(|text| parse(&text));
    Ok(match parsed {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    })
}

/// "tool (why); ..." or "-".
fn shown_dropped(dropped: &[Value]) -> String {
    if dropped.is_empty() {
        return "-".into();
    }
    let shown: Vec<String> = (dropped.iter())
        .map(|d| {
            let text = |key: &str| d[key].as_str().unwrap_or_default().to_owned();
            format!("{} ({})", text("tool"), text("why"))
        })
        .collect();
    shown.join("; ")
}

/// The tools of `pins` with a changed definition awaiting approval (not rejected).
fn awaiting(pins: &[PinRow]) -> impl Iterator<Item = (&PinRow, &crate::store::Pending)> {
    pins.iter()
        .filter(|row| row.awaiting())
        .filter_map(|row| row.pending.as_ref().map(|pending| (row, pending)))
}

/// `{"name": exposed name, "owner": upstream}` of a tool withheld for
/// claiming a name another upstream had first; null for any other pin.
fn claimed(upstream: &UpstreamConfig, row: &PinRow) -> Value {
    match &row.claim {
        Some(owner) => json!({"name": upstream.exposed(&row.tool), "owner": owner}),
        None => Value::Null,
    }
}

/// How many pinned definitions are offered now: a withheld claim has none
/// yet, a changed definition is withheld, and a tool outside the globs or
/// not offered by a running server (`dropped`) is pinned but not offered.
fn pinned(upstream: &UpstreamConfig, pins: &[PinRow], dropped: &[Value]) -> usize {
    let not_offered = |row: &PinRow| {
        (dropped.iter()).any(|d| d["tool"] == row.tool || d["tool"] == upstream.exposed(&row.tool))
    };
    (pins.iter())
        .filter(|row| row.claim.is_none() && row.pending.is_none())
        .filter(|row| crate::store::selects(upstream, &row.tool) && !not_offered(row))
        .count()
}

/// `[{"tool", "why"}]` of the tools members confirm (`store::confirmed`).
fn confirmed(upstream: &UpstreamConfig, pins: &[PinRow]) -> Vec<Value> {
    (crate::store::confirmed(upstream, pins).into_iter())
        .map(|(tool, why)| json!({"tool": tool, "why": why.label()}))
        .collect()
}

/// "tool (why), ..." or "-".
fn shown_confirmed(confirmed: &[Value]) -> String {
    if confirmed.is_empty() {
        return "-".into();
    }
    let shown: Vec<String> = (confirmed.iter())
        .map(|c| {
            let (tool, why) = (c["tool"].as_str(), c["why"].as_str());
            format!("{} ({})", tool.unwrap_or_default(), why.unwrap_or_default())
        })
        .collect();
    shown.join(", ")
}

/// How the upstream is reached; a URL without credentials or query.
fn transport(upstream: &UpstreamConfig) -> String {
    if upstream.url.is_empty() {
        return format!("stdio: {}", upstream.command);
    }
    match url::Url::parse(&upstream.url) {
        Ok(url) => {
            format!(
                "http: {}://{}{}",
                url.scheme(),
                url.host_str().unwrap_or_default(),
                url.port().map(|p| format!(":{p}")).unwrap_or_default()
            ) + url.path()
        }
        Err(_) => "http".into(),
    }
}

fn parse(definition: &str) -> Value {
    serde_json::from_str(definition).unwrap_or(Value::Null)
}

/// The top-level fields (description, inputSchema, ...) that differ.
fn changed_fields(pinned: &str, pending: &str) -> Vec<String> {
    let (pinned, pending) = (parse(pinned), parse(pending));
    let keys: BTreeSet<&String> = [&pinned, &pending]
        .iter()
        .filter_map(|v| v.as_object())
        .flat_map(|o| o.keys())
        .collect();
    keys.into_iter()
        .filter(|key| pinned.get(key.as_str()) != pending.get(key.as_str()))
        .cloned()
        .collect()
}
