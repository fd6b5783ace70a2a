//! Operator commands that work on the database directly: tokens, sessions
//! and the audit trail. They run beside a live server (same store).

use std::{collections::BTreeSet, sync::Arc, time::Duration};

use clap::Subcommand;
use serde_json::json;

use crate::{
    auth::PersonalTokens,
    cli_table::Table,
    config::Config,
    registry::{ChangeBus, Kind, TOOLSET_SCOPE},
    store::{SessionRepo, Store, SystemClock},
};

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a personal token; it is printed once, alone on the last line.
    Create {
        /// The member the token acts for.
        #[arg(long)]
        user: String,
        /// What the token is for, e.g. "laptop".
        #[arg(long, default_value = "")]
        name: String,
        /// A granted scope (repeatable); default: auth.default_token_scopes.
        #[arg(long = "scope", value_name = "SCOPE")]
        scopes: Vec<String>,
        /// Limit the token to a toolset's endpoint (repeatable): it is
        /// refused at every other endpoint (scope `toolset:<name>`).
        #[arg(long = "toolset", value_name = "NAME")]
        toolsets: Vec<String>,
        /// Lifetime, e.g. "90d" or "12h"; default: no expiry.
        #[arg(long, value_parser = humantime::parse_duration)]
        expires_in: Option<Duration>,
        /// Grant scopes that name no tool, prompt or resource scope the
        /// configuration declares (e.g. for a tool added later).
        #[arg(long)]
        force: bool,
    },
    /// List tokens (never their secrets).
    List {
        #[arg(long)]
        user: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token; it stops working on every replica within a second.
    Revoke { id: String },
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List live sessions, oldest first.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Show at most this many.
        #[arg(long, default_value_t = 1000)]
        limit: i64,
    },
    /// End a session: within 5 s (the servers' presence check) every replica answers it 404.
    End {
        /// The session id (Mcp-Session-Id).
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Print the newest audit records, oldest first.
    Tail {
        #[arg(long)]
        user: Option<String>,
        /// How far back, e.g. "15m", "24h", "7d".
        #[arg(long, value_parser = humantime::parse_duration, default_value = "24h")]
        since: Duration,
        #[arg(long, default_value_t = 100)]
        limit: i64,
        #[arg(long)]
        json: bool,
    },
}

/// The server's store, for an operator command: which one is said on
/// stderr, and a SQLite file that does not exist is not created (issue 63):
/// a command run without the server's configuration would otherwise make
/// an empty database next to it, and a token made there is refused by the
/// server with 401.
pub(crate) async fn open(config: &Config) -> anyhow::Result<Store> {
    let url = &config.store.url;
    match crate::store::sqlite_path(url.expose()) {
        Some(file) => {
            let shown = std::path::absolute(&file).unwrap_or(file.clone());
            anyhow::ensure!(
                file.exists(),
                "the store {} does not exist: this is not the server's store. Give the server's \
                 configuration (--config FILE, TEAMGATE_CONFIG or TEAMGATE__STORE__URL), or create \
                 this store with `teamgate migrate`",
                shown.display()
            );
            eprintln!("store: {}", shown.display());
        }
        None => eprintln!("store: {}", url.masked()),
    }
    let store = Store::connect(url.expose(), Arc::new(SystemClock)).await?;
    store.migrate().await?;
    Ok(store)
}

fn time(ms: Option<i64>) -> String {
    match ms {
        Some(ms) => humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH + Duration::from_millis(ms as u64),
        )
        .to_string(),
        None => "-".into(),
    }
}

pub async fn tokens(command: TokenCommand, config: Config) -> anyhow::Result<()> {
    let store = open(&config).await?;
    let tokens = PersonalTokens::new(store.clone(), config.auth.token_cache_ttl);
    match command {
        TokenCommand::Create {
            user,
            name,
            scopes,
            toolsets,
            expires_in,
            force,
        } => {
            anyhow::ensure!(!user.trim().is_empty(), "--user must name a member");
            // `#` marks names qualified by an OAuth issuer (`<issuer>#<name>`).
            anyhow::ensure!(
                !user.contains('#'),
                "--user must not contain `#`: it is kept for OAuth users' names (<issuer>#<name>)"
            );
            let mut scopes = if scopes.is_empty() {
                config.auth.default_token_scopes.clone()
            } else {
                unknown_scopes(&config, &scopes, force)?;
                scopes
            };
            for toolset in toolsets {
                anyhow::ensure!(
                    config.toolsets.iter().any(|t| t.name == toolset),
                    "--toolset {toolset}: no [[toolsets]] entry has that name; declared: {}",
                    (config.toolsets.iter().map(|t| t.name.as_str()))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                scopes.push(format!("{TOOLSET_SCOPE}{toolset}"));
            }
            let created = tokens.create(&user, &name, scopes, expires_in).await?;
            println!(
                "Created token {} for {} (scopes: {}; expires: {}). It is shown once; store it now:",
                created.row.id,
                user,
                created.row.scopes.join(" "),
                time(created.row.expires_ms)
            );
            println!("{}", created.token);
        }
        TokenCommand::List { user, json } => {
            let rows = store.tokens(user.as_deref()).await?;
            if json {
                let rows: Vec<_> = rows
                    .iter()
                    .map(|t| json!({"id": t.id, "user": t.user_name, "label": t.label, "scopes": t.scopes,
                        "createdMs": t.created_ms, "expiresMs": t.expires_ms, "lastUsedMs": t.last_used_ms,
                        "revokedMs": t.revoked_ms}))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                let mut table = Table::new(&[
                    ("ID", 40),
                    ("USER", 24),
                    ("LABEL", 24),
                    ("SCOPES", 40),
                    ("EXPIRES", 20),
                    ("LAST USED", 20),
                    ("STATE", 8),
                ]);
                for t in &rows {
                    let state = if t.revoked_ms.is_some() {
                        "revoked"
                    } else {
                        "active"
                    };
                    table.row(vec![
                        t.id.clone(),
                        t.user_name.clone(),
                        t.label.clone(),
                        t.scopes.join(" "),
                        time(t.expires_ms),
                        time(t.last_used_ms),
                        state.into(),
                    ]);
                }
                print!("{}", table.render());
            }
        }
        TokenCommand::Revoke { id } => {
            anyhow::ensure!(tokens.revoke(&id).await?, "no active token {id}");
            println!("token {id} revoked");
        }
    }
    Ok(())
}

pub async fn sessions(command: SessionsCommand, config: Config) -> anyhow::Result<()> {
    let store = open(&config).await?;
    match command {
        SessionsCommand::List { json, limit } => {
            let rows = store.list(limit).await?;
            if json {
                let rows: Vec<_> = rows
                    .iter()
                    .map(|r| json!({"id": r.id, "owner": r.owner, "protocolVersion": r.protocol_version,
                        "client": {"name": r.client_name, "version": r.client_version},
                        "createdMs": r.created_ms, "lastSeenMs": r.last_seen_ms, "expiresMs": r.expires_ms}))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                let mut table = Table::new(&[
                    ("ID", 40),
                    ("OWNER", 24),
                    ("VERSION", 11),
                    ("CLIENT", 32),
                    ("IDLE", 10),
                ]);
                let now = store.now_ms();
                for r in &rows {
                    table.row(vec![
                        r.id.clone(),
                        r.owner.clone(),
                        r.protocol_version.clone(),
                        format!("{} {}", r.client_name, r.client_version),
                        format!("{}s", (now - r.last_seen_ms).max(0) / 1000),
                    ]);
                }
                print!("{}", table.render());
                eprintln!("{} session(s)", rows.len());
            }
        }
        SessionsCommand::End { id } => {
            anyhow::ensure!(store.delete(&id).await?, "no live session {id}");
            println!("session {id} ended");
        }
    }
    Ok(())
}

pub async fn audit(command: AuditCommand, config: Config) -> anyhow::Result<()> {
    let store = open(&config).await?;
    let AuditCommand::Tail {
        user,
        since,
        limit,
        json,
    } = command;
    let since_ms = store.now_ms() - since.as_millis() as i64;
    let records = store.audit_tail(user.as_deref(), since_ms, limit).await?;
    if json {
        for record in &records {
            println!("{}", serde_json::to_string(record)?);
        }
    } else {
        let mut table = Table::new(&[
            ("TIME", 20),
            ("USER", 24),
            ("METHOD", 20),
            ("TARGET", 40),
            ("UPSTREAM", 16),
            ("OUTCOME", 16),
            ("LATENCY", 10),
            ("TRACE", 32),
        ]);
        for r in &records {
            table.row(vec![
                time(Some(r.at_ms)),
                r.user.clone(),
                r.method.clone(),
                r.target.clone(),
                r.upstream.clone(),
                r.outcome.clone(),
                format!("{}ms", r.latency_ms),
                r.trace_id.clone(),
            ]);
        }
        print!("{}", table.render());
    }
    Ok(())
}

/// Refuses scopes that grant nothing this configuration offers (a typo such
/// as `tools:deplyo` would otherwise make a token that silently cannot call
/// the tool), unless `force`. Wildcards (`*`, `tools:*`) and every scope a
/// tool, prompt or resource requires are known.
fn unknown_scopes(config: &Config, scopes: &[String], force: bool) -> anyhow::Result<()> {
    let mut built = config.clone();
    for docs in &mut built.sources.docs {
        docs.watch = false;
    }
    let registry = match crate::app::build_registry(&built, &ChangeBus::default(), None) {
        Ok(registry) => registry,
        Err(error) => {
            eprintln!(
                "warning: scopes not checked: the configuration's capabilities do not build: {error:#}"
            );
            return Ok(());
        }
    };
    let mut known: BTreeSet<String> = config.auth.oauth.scopes_supported.iter().cloned().collect();
    known.insert("resources:read".into());
    (config.toolsets.iter()).for_each(|t| _ = known.insert(format!("{TOOLSET_SCOPE}{}", t.name)));
    let tools = registry
        .tools()
        .iter()
        .map(|t| (Kind::Tool, t.name.to_string()));
    let prompts = registry
        .prompts()
        .iter()
        .map(|p| (Kind::Prompt, p.name.clone()));
    let resources = registry
        .resources()
        .into_iter()
        .map(|r| (Kind::Resource, r.uri.clone()));
    for (kind, name) in tools.chain(prompts).chain(resources) {
        known.extend(registry.required_scopes(kind, &name));
    }
    // Upstream servers' tools are not known offline: their declared scopes
    // and renames are, and any name under their prefix may be theirs.
    let mut prefixes = Vec::new();
    for upstream in &config.upstreams {
        known.extend(upstream.scopes.iter().cloned());
        for (tool, over) in &upstream.tools.overrides {
            known.extend(over.scopes.iter().cloned());
            known.insert(format!("tools:{}", upstream.exposed(tool)));
        }
        let prefix = upstream.prefixed("");
        prefixes.extend([format!("tools:{prefix}"), format!("prompts:{prefix}")]);
    }
    let upstream_scope = |s: &str| prefixes.iter().any(|p| s.starts_with(p.as_str()));
    let unknown: Vec<&String> = scopes
        .iter()
        .filter(|s| {
            !(s.as_str() == "*" || s.ends_with(":*") || known.contains(*s) || upstream_scope(s))
        })
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let list = unknown
        .iter()
        .map(|s| format!("{s:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    if force {
        eprintln!("warning: {list} grant(s) nothing the configuration declares (--force given)");
        return Ok(());
    }
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    anyhow::bail!(
        "--scope {list}: no tool, prompt or resource of this configuration requires it; known scopes: *, tools:*, prompts:*, {}. Add --force to grant it anyway",
        known.join(", ")
    )
}
