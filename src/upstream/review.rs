//! Each fresh tool list of an upstream reviewed against the pins
//! (`pins.rs`): new tools pinned, changed definitions withheld, and a tool
//! seen for the first time under a name another configured upstream has
//! withheld as a claim. Above the links, as it reads every configured one.

use std::collections::HashMap;

use rmcp::model::Tool;

use super::{
    link::Link,
    pins::{Pins, fingerprint},
};

impl Link {
    /// Checks a fresh tool list against the pins: pins new tools, withholds
    /// changed ones and claims of other upstreams' names (recording their
    /// definitions for the operator).
    pub(super) async fn review(&self, tools: &[Tool]) {
        let Some(pins) = &self.pins.pins else { return };
        let reviewed = self.check(pins.as_ref(), tools).await;
        let upstream = &self.pins.upstream;
        let withheld = match reviewed {
            Ok(withheld) => Some(withheld),
            Err(error) => {
                tracing::warn!(%upstream, error = %format!("{error:#}"), "cannot check the upstream's tools against their pins; withholding them until the database answers");
                None
            }
        };
        *self.pins.withheld.lock().expect("pins lock") = withheld;
    }

    async fn check(
        &self,
        pins: &dyn Pins,
        tools: &[Tool],
    ) -> anyhow::Result<HashMap<String, String>> {
        let upstream = self.pins.upstream.as_str();
        let pinned = pins.pinned(upstream).await?;
        let mut withheld = HashMap::new();
        let mut owners = None;
        for tool in tools {
            let name = tool.name.as_ref();
            let (hash, definition) = fingerprint(tool);
            let pin = match pinned.get(name) {
                Some(pin) => pin.clone(),
                None => match self.owner(pins, &mut owners, name).await? {
                    Some(owner) => {
                        pins.claim(upstream, name, &owner, (&hash, &definition))
                            .await?
                    }
                    None if self.pins.pin => pins.pin(upstream, name, &hash, &definition).await?,
                    None => continue,
                },
            };
            if !self.pins.pin && pin.claim.is_none() {
                continue;
            }
            if pin.hash == hash {
                if pin.pending.is_some() {
                    // Changed back to what was approved: nothing awaits any more.
                    pins.set_pending(upstream, name, None).await?;
                }
                continue;
            }
            if pin.pending.as_deref() != Some(hash.as_str()) {
                pins.set_pending(upstream, name, Some((&hash, &definition)))
                    .await?;
            }
            match &pin.claim {
                _ if pin.rejected.as_deref() == Some(hash.as_str()) => {
                    tracing::debug!(%upstream, tool = %name, "an upstream tool's changed definition was rejected; withheld")
                }
                Some(owner) => {
                    let approve = approve_command(upstream, name);
                    tracing::warn!(%upstream, tool = %name, %owner, "an upstream tool's exposed name is one another upstream had first; withheld until an operator runs `{approve}`")
                }
                None => {
                    let approve = approve_command(upstream, name);
                    tracing::warn!(%upstream, tool = %name, "an upstream tool's definition changed since it was pinned; withheld until an operator runs `{approve}`")
                }
            }
            withheld.insert(name.to_owned(), hash);
        }
        Ok(withheld)
    }

    /// The other configured upstream that has pinned (not merely claimed),
    /// or lists and offers, a tool exposed under the name this upstream's
    /// `tool` would have, compared regardless of case (listing covers an
    /// owner with `pin = false`). `owners` caches every such name once
    /// per review, read only when a tool is seen for the first time.
    async fn owner(
        &self,
        pins: &dyn Pins,
        owners: &mut Option<Vec<(String, String)>>,
        tool: &str,
    ) -> anyhow::Result<Option<String>> {
        let configured = self.configured.lock().expect("configured lock").clone();
        let Some((me, _)) = configured
            .iter()
            .find(|(c, _)| c.name == self.pins.upstream)
        else {
            return Ok(None);
        };
        if owners.is_none() {
            let mut names = Vec::new();
            for (other, link) in configured
                .iter()
                .filter(|(c, _)| c.name != self.pins.upstream)
            {
                let mut theirs: Vec<String> = (pins.pinned(&other.name).await?.into_iter())
                    .filter(|(_, pin)| pin.claim.is_none())
                    .map(|(name, _)| name)
                    .collect();
                if let Some(link) = link.upgrade() {
                    let listed = link
                        .current
                        .lock()
                        .expect("upstream state lock")
                        .tools
                        .clone();
                    let offered = listed.iter().filter(|t| !link.pins.withholds(&t.name));
                    theirs.extend(offered.map(|t| t.name.to_string()));
                }
                let exposed = theirs.iter().map(|name| other.exposed(name).to_lowercase());
                names.extend(exposed.map(|name| (name, other.name.clone())));
            }
            *owners = Some(names);
        }
        let exposed = me.exposed(tool).to_lowercase();
        let mut names = owners.iter().flatten();
        Ok(names
            .find(|(name, _)| *name == exposed)
            .map(|(_, owner)| owner.clone()))
    }
}

/// How an operator types the approval on this machine: the program as the
/// server was started and its `--config` files, set once by `serve`
/// (`cli::admin_command`); plain `teamgate upstreams approve` until then.
static APPROVE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Sets the command the pin warnings name (`… upstreams --config F approve`).
pub(crate) fn set_approve_command(command: String) {
    let _ = APPROVE.set(command);
}

fn approve_command(upstream: &str, tool: &str) -> String {
    let command = APPROVE
        .get()
        .map_or("teamgate upstreams approve", String::as_str);
    format!("{command} {upstream} {tool}")
}
