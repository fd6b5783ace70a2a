//! The upstream connections' pinned tool definitions, kept in the store.

use std::collections::HashMap;

use async_trait::async_trait;

use crate::{
    store::{PinRepo, PinRow, Store, dropped_tools_key},
    upstream::{Dropped, Pinned, Pins},
};

/// `upstream::Pins` over the database, shared by every replica and the CLI.
pub(crate) struct StorePins(pub(crate) Store);

fn pinned(row: PinRow) -> Pinned {
    Pinned {
        hash: row.hash,
        pending: row.pending.map(|p| p.hash),
        claim: row.claim,
        rejected: row.rejected,
    }
}

#[async_trait]
impl Pins for StorePins {
    async fn pinned(&self, upstream: &str) -> anyhow::Result<HashMap<String, Pinned>> {
        let rows = self.0.pins(Some(upstream)).await?;
        Ok(rows
            .into_iter()
            .map(|row| (row.tool.clone(), pinned(row)))
            .collect())
    }

    async fn pin(
        &self,
        upstream: &str,
        tool: &str,
        hash: &str,
        definition: &str,
    ) -> anyhow::Result<Pinned> {
        Ok(pinned(self.0.pin(upstream, tool, hash, definition).await?))
    }

    async fn claim(
        &self,
        upstream: &str,
        tool: &str,
        owner: &str,
        pending: (&str, &str),
    ) -> anyhow::Result<Pinned> {
        Ok(pinned(self.0.claim(upstream, tool, owner, pending).await?))
    }

    async fn set_pending(
        &self,
        upstream: &str,
        tool: &str,
        pending: Option<(&str, &str)>,
    ) -> anyhow::Result<()> {
        self.0.set_pending(upstream, tool, pending).await?;
        Ok(())
    }

    /// As `[{"tool": ..., "why": ...}]`, read by `teamgate upstreams list`.
    async fn dropped(&self, upstream: &str, dropped: &[Dropped]) -> anyhow::Result<()> {
        let value: Vec<serde_json::Value> = (dropped.iter())
            .map(|d| serde_json::json!({"tool": d.tool, "why": d.why.label()}))
            .collect();
        let value = serde_json::Value::from(value).to_string();
        let key = dropped_tools_key(upstream);
        self.0.set_setting(&key, &value).await?;
        Ok(())
    }
}
